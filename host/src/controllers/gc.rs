//! The garbage collector: follows `metadata.ownerReferences` across every kind, built-in and
//! custom, as kube's does.
//!
//! * An object whose owners are all gone (never existed, deleted, or replaced by an object with
//!   another uid) is deleted (background cascade). One with some owners still present only loses
//!   the references to the missing ones.
//! * An owner deleted with `propagationPolicy: Orphan` carries the `orphan` finalizer: its
//!   dependents lose their reference to it, then the finalizer goes (and so does the owner).
//! * An owner deleted with `propagationPolicy: Foreground` carries `foregroundDeletion`: its
//!   dependents are deleted (their own finalizers respected); once none with
//!   `blockOwnerDeletion: true` remains, the finalizer goes.
//!
//! The dependents of each owner uid are indexed in memory from the informers' events (rebuilt
//! from the store's lists at start-up); every decision re-reads the objects from the store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use super::{stored_resource, terminating, uid, ControllerError, Follower, Observed, Reconciled};
use crate::model::meta::{self, Meta};
use crate::model::{ObjectKey, ResourceInfo};
use crate::runtime::queue::WorkQueue;
use crate::service::{
    DeleteOptions, Deleted, Propagation, Service, Subresource, FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
};

pub const IDENTITY: super::Identity = super::Identity {
    name: "garbage-collector",
    description:
        "Deletes objects whose owners are gone; carries out foreground and orphan deletion.",
    // Concurrent reconciles: each dependent of a background cascade is its own key.
    workers: 32,
};
/// Concurrent writes within one reconcile (an owner's dependents).
const FAN_OUT: usize = 32;
/// A foreground owner still waiting is looked at again after this long even without events.
const RECHECK: Duration = Duration::from_secs(5);

/// One object: its storage kind (`group_resource`), namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ref {
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl Ref {
    fn of(ri: &ResourceInfo, obj: &impl Meta) -> Self {
        Self {
            resource: ri.group_resource(),
            namespace: meta::namespace(obj).to_owned(),
            name: meta::name(obj).to_owned(),
        }
    }

    fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.resource, &self.namespace, &self.name)
    }
}

/// Work for the collector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Work {
    /// Check this object's owners.
    Dependent(Ref),
    /// This object is being deleted with the orphan or foreground policy.
    Owner(Ref),
}

impl crate::runtime::driver::KeyText for Work {
    fn text(&self) -> String {
        format!("{self:?}")
    }
}

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

fn owner_refs(obj: &impl Meta) -> Vec<OwnerRef> {
    obj.owner_references()
        .into_iter()
        .map(|r| OwnerRef {
            api_version: r.api_version.to_owned(),
            kind: r.kind.to_owned(),
            name: r.name.to_owned(),
            uid: r.uid.to_owned(),
            block: r.block_owner_deletion,
        })
        .collect()
}

fn has_finalizer(obj: &impl Meta, f: &str) -> bool {
    obj.finalizer_names().contains(&f)
}

/// What became of one owner reference.
enum OwnerState {
    /// The owner exists with that uid.
    Solid,
    /// The owner exists and is being deleted in the foreground.
    Waiting,
    /// No such owner (never existed, deleted, or a different uid).
    Dangling,
}

pub struct GarbageCollector {
    service: Arc<Service>,
    queue: Arc<WorkQueue<Work>>,
    stats: Arc<crate::runtime::driver::Stats>,
    /// owner uid -> objects that reference it.
    dependents: Mutex<HashMap<String, HashSet<Ref>>>,
}

impl GarbageCollector {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            service,
            queue: WorkQueue::new(),
            stats: Arc::default(),
            dependents: Mutex::new(HashMap::new()),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        let this = self.clone();
        super::spawn(
            self.service.clone(),
            &IDENTITY,
            self.queue.clone(),
            self.stats.clone(),
            shutdown,
            move |w| {
                let this = this.clone();
                async move { this.reconcile(w).await }
            },
        )
    }

    fn index(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashSet<Ref>>> {
        self.dependents.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn dependents_of(&self, owner_uid: &str) -> Vec<Ref> {
        self.index()
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn has_dependents(&self, owner_uid: &str) -> bool {
        self.index().get(owner_uid).is_some_and(|s| !s.is_empty())
    }

    /// The stored object an owner reference of an object in `namespace` names, if its kind is
    /// served (namespaced owners live in the dependent's namespace).
    fn resolve(
        &self,
        r: &OwnerRef,
        namespace: &str,
    ) -> Result<(Arc<ResourceInfo>, Ref), ControllerError> {
        let (group, version) = match r.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", r.api_version.as_str()),
        };
        let ri = self
            .service
            .registry
            .lookup_kind(group, version, &r.kind)
            .ok_or_else(|| ControllerError::UnknownKind(format!("{} {}", r.api_version, r.kind)))?;
        let ns = if ri.namespaced() { namespace } else { "" };
        let at = Ref {
            resource: ri.group_resource(),
            namespace: ns.to_owned(),
            name: r.name.clone(),
        };
        Ok((ri, at))
    }

    fn owner_state(
        &self,
        r: &OwnerRef,
        dependent: &impl Meta,
    ) -> Result<OwnerState, ControllerError> {
        let ns = meta::namespace(dependent);
        let (ri, at) = self.resolve(r, ns)?;
        // A cluster-scoped dependent cannot have a namespaced owner: kube treats it as absent.
        if ri.namespaced() && ns.is_empty() {
            return Ok(OwnerState::Dangling);
        }
        Ok(match self.service.store.get(&at.key()) {
            Some(o) if uid(o.head()) == r.uid => {
                if terminating(o.head()) && has_finalizer(o.head(), FOREGROUND_FINALIZER) {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                }
            }
            _ => OwnerState::Dangling,
        })
    }

    async fn reconcile(self: Arc<Self>, work: Work) -> Reconciled {
        match work {
            Work::Dependent(r) => self.check_dependent(&r).await,
            Work::Owner(r) => self.process_owner(&r).await,
        }
    }

    /// Delete the object if all its owners are gone; drop references to the missing ones if
    /// some remain.
    async fn check_dependent(&self, r: &Ref) -> Reconciled {
        let Some(obj) = self.service.store.get(&r.key()) else {
            return Ok(None);
        };
        let refs = owner_refs(obj.head());
        if refs.is_empty() {
            return Ok(None);
        }
        let (mut solid, mut gone, mut waiting) = (0, HashSet::new(), 0);
        for o in &refs {
            match self.owner_state(o, obj.head())? {
                OwnerState::Solid => solid += 1,
                OwnerState::Waiting => {
                    waiting += 1;
                    gone.insert(o.uid.clone());
                }
                OwnerState::Dangling => {
                    gone.insert(o.uid.clone());
                }
            }
        }
        if gone.is_empty() {
            return Ok(None);
        }
        let Some(ri) = stored_resource(&self.service, &r.resource) else {
            return Ok(None);
        };
        if solid > 0 {
            self.remove_owner_refs(&ri, r, &gone).await?;
            return Ok(None);
        }
        if terminating(obj.head()) {
            return Ok(None); // already on its way; its own finalizers decide
        }
        let propagation = if waiting > 0 && self.has_dependents(uid(obj.head())) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        self.delete(&ri, r, uid(obj.head()), propagation).await?;
        Ok(None)
    }

    async fn delete(
        &self,
        ri: &ResourceInfo,
        r: &Ref,
        uid: &str,
        propagation: Propagation,
    ) -> Result<Option<Deleted>, ControllerError> {
        // As kube's collector, a client of the API: its deletes pass admission.
        let opts = DeleteOptions {
            precondition_uid: Some(uid.to_owned()),
            propagation: Some(propagation),
            user: Some(super::service_account_user("generic-garbage-collector")),
            ..Default::default()
        };
        match self.service.delete(ri, &r.namespace, &r.name, &opts).await {
            Ok(d) => {
                tracing::debug!(resource = %r.resource, namespace = %r.namespace, name = %r.name, "garbage collected");
                Ok(Some(d))
            }
            // Gone already, or replaced by a new object of the same name.
            Err(e) if e.code == 404 || e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Remove the owner references with these uids from an object.
    async fn remove_owner_refs(
        &self,
        ri: &ResourceInfo,
        r: &Ref,
        uids: &HashSet<String>,
    ) -> Result<(), ControllerError> {
        let Some(obj) = self.service.store.get(&r.key()) else {
            return Ok(());
        };
        let v = obj.parse();
        let Some(list) = v
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
        else {
            return Ok(());
        };
        let left: Vec<&Value> = list
            .iter()
            .filter(|o| {
                !o.get("uid")
                    .and_then(Value::as_str)
                    .is_some_and(|u| uids.contains(u))
            })
            .collect();
        if left.len() == list.len() {
            return Ok(());
        }
        let refs = if left.is_empty() {
            Value::Null
        } else {
            json!(left)
        };
        self.patch_metadata(ri, r, &obj, json!({"ownerReferences": refs}))
            .await
    }

    /// Whether one of the dependents of `owner_uid` is itself terminating in the foreground.
    fn waits_on_dependents(&self, owner_uid: &str) -> bool {
        self.dependents_of(owner_uid).iter().any(|d| {
            self.service.store.get(&d.key()).is_some_and(|o| {
                terminating(o.head()) && has_finalizer(o.head(), FOREGROUND_FINALIZER)
            })
        })
    }

    /// Set `blockOwnerDeletion: false` on every ownerReference of the object `r` names (kube's
    /// `unblockOwnerReferences`).
    async fn unblock_owner_refs(&self, ri: &ResourceInfo, r: &Ref) -> Result<(), ControllerError> {
        let Some(obj) = self.service.store.get(&r.key()) else {
            return Ok(());
        };
        let v = obj.parse();
        let Some(list) = v
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
        else {
            return Ok(());
        };
        if !list
            .iter()
            .any(|o| o.get("blockOwnerDeletion") == Some(&Value::Bool(true)))
        {
            return Ok(());
        }
        let refs: Vec<Value> = list
            .iter()
            .map(|o| {
                let mut o = o.clone();
                if let Some(m) = o.as_object_mut() {
                    if m.contains_key("blockOwnerDeletion") {
                        m.insert("blockOwnerDeletion".into(), Value::Bool(false));
                    }
                }
                o
            })
            .collect();
        self.patch_metadata(ri, r, &obj, json!({ "ownerReferences": refs }))
            .await
    }

    /// Change an object's metadata by a merge patch conditional on the revision it was read at
    /// (a concurrent change is a retried conflict). A patch, not the whole object written back:
    /// an object stored in an older version of its CRD (or one a webhook converts) is changed
    /// in whatever version it is served in.
    async fn patch_metadata(
        &self,
        ri: &ResourceInfo,
        r: &Ref,
        read: &crate::store::StoredObject,
        mut metadata: Value,
    ) -> Result<(), ControllerError> {
        metadata["resourceVersion"] = json!(read.rv.to_string());
        let body = json!({"metadata": metadata}).to_string();
        match self
            .service
            .patch(
                ri,
                &r.namespace,
                &r.name,
                crate::patch::PatchType::Merge,
                body.as_bytes(),
                Subresource::Main,
                &crate::service::WriteOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Remove one finalizer from an object (which goes if it was the last).
    async fn remove_finalizer(
        &self,
        ri: &ResourceInfo,
        r: &Ref,
        finalizer: &str,
    ) -> Result<(), ControllerError> {
        let Some(obj) = self.service.store.get(&r.key()) else {
            return Ok(());
        };
        let left: Vec<String> = meta::finalizers(&*obj.parse())
            .into_iter()
            .filter(|f| f != finalizer)
            .collect();
        self.patch_metadata(ri, r, &obj, json!({"finalizers": left}))
            .await
    }

    /// An owner being deleted with the orphan or foreground policy.
    async fn process_owner(&self, r: &Ref) -> Reconciled {
        let Some(obj) = self.service.store.get(&r.key()) else {
            return Ok(None);
        };
        if !terminating(obj.head()) {
            return Ok(None);
        }
        let Some(ri) = stored_resource(&self.service, &r.resource) else {
            return Ok(None);
        };
        let owner_uid = uid(obj.head()).to_owned();
        // The dependents that really reference this owner now: by uid, and by a reference that
        // names it from where the dependent is (kind, name, and the dependent's own namespace).
        // A reference from another namespace names nothing (kube treats its owner as absent),
        // so a tenant cannot hold up, or orphan, another namespace's object by its uid.
        let deps: Vec<(Ref, Arc<crate::store::StoredObject>)> = self
            .dependents_of(&owner_uid)
            .into_iter()
            .filter_map(|d| {
                let o = self.service.store.get(&d.key())?;
                let ns = meta::namespace(o.head());
                owner_refs(o.head())
                    .iter()
                    .any(|x| {
                        // A reference whose kind is not served (any more) still counts by its
                        // uid, as in kube.
                        x.uid == owner_uid && self.resolve(x, ns).map_or(true, |(_, at)| at == *r)
                    })
                    .then_some((d, o))
            })
            .collect();
        if has_finalizer(obj.head(), ORPHAN_FINALIZER) {
            let uids: HashSet<String> = [owner_uid.clone()].into();
            let results: Vec<Result<(), ControllerError>> =
                futures::stream::iter(deps.into_iter().map(|(d, _)| {
                    let uids = &uids;
                    async move {
                        let Some(dri) = stored_resource(&self.service, &d.resource) else {
                            return Ok(());
                        };
                        self.remove_owner_refs(&dri, &d, uids).await
                    }
                }))
                .buffer_unordered(FAN_OUT)
                .collect()
                .await;
            results.into_iter().collect::<Result<Vec<()>, _>>()?;
            self.remove_finalizer(&ri, r, ORPHAN_FINALIZER).await?;
            return Ok(None);
        }
        if !has_finalizer(obj.head(), FOREGROUND_FINALIZER) {
            return Ok(None);
        }
        let owner_uid = owner_uid.as_str();
        let results: Vec<Result<bool, ControllerError>> =
            futures::stream::iter(deps.into_iter().map(|(d, o)| async move {
                let block = owner_refs(o.head())
                    .iter()
                    .any(|x| x.uid == owner_uid && x.block);
                if terminating(o.head()) {
                    return Ok(block);
                }
                let Some(dri) = stored_resource(&self.service, &d.resource) else {
                    return Ok(false);
                };
                let dep_uid = uid(o.head());
                let propagation = if self.has_dependents(dep_uid) {
                    Propagation::Foreground
                } else {
                    Propagation::Background
                };
                // kube's cycle guard: a dependent one of whose own dependents is already
                // waiting on its dependents (an ownerReference cycle, A owns B owns A) gets
                // its ownerReferences made non-blocking before its foreground deletion, or each
                // would wait on the other for ever.
                let mut block = block;
                if propagation == Propagation::Foreground && self.waits_on_dependents(dep_uid) {
                    self.unblock_owner_refs(&dri, &d).await?;
                    block = false;
                }
                Ok(match self.delete(&dri, &d, dep_uid, propagation).await? {
                    Some(Deleted::Pending(_)) => block,
                    _ => false,
                })
            }))
            .buffer_unordered(FAN_OUT)
            .collect()
            .await;
        let mut blocking = 0;
        for r in results {
            if r? {
                blocking += 1;
            }
        }
        if blocking > 0 {
            return Ok(Some(RECHECK));
        }
        self.remove_finalizer(&ri, r, FOREGROUND_FINALIZER).await?;
        Ok(None)
    }

    /// Queue the owner named by `r` if it is waiting on its dependents.
    fn wake_waiting_owner(&self, o: &OwnerRef, namespace: &str) {
        let Ok((_, at)) = self.resolve(o, namespace) else {
            return;
        };
        if let Some(owner) = self.service.store.get(&at.key()) {
            if uid(owner.head()) == o.uid
                && terminating(owner.head())
                && has_finalizer(owner.head(), FOREGROUND_FINALIZER)
            {
                self.queue.add(Work::Owner(at));
            }
        }
    }
}

impl Follower for GarbageCollector {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        let v = obj.head();
        let me = Ref::of(ri, v);
        let now = owner_refs(v);
        let before = prev.map(|p| owner_refs(p.head())).unwrap_or_default();
        let ns = meta::namespace(v);
        if how == Observed::Deleted {
            {
                let mut idx = self.index();
                for o in now.iter().chain(before.iter()) {
                    if let Some(set) = idx.get_mut(&o.uid) {
                        set.remove(&me);
                        if set.is_empty() {
                            idx.remove(&o.uid);
                        }
                    }
                }
            }
            // Its dependents lost an owner.
            for d in self.dependents_of(uid(v)) {
                self.queue.add(Work::Dependent(d));
            }
            // An owner waiting in the foreground may be done now.
            for o in &now {
                self.wake_waiting_owner(o, ns);
            }
            return;
        }
        if now != before || how == Observed::Listed {
            let mut idx = self.index();
            for o in &before {
                if !now.iter().any(|n| n.uid == o.uid) {
                    if let Some(set) = idx.get_mut(&o.uid) {
                        set.remove(&me);
                        if set.is_empty() {
                            idx.remove(&o.uid);
                        }
                    }
                }
            }
            for o in &now {
                idx.entry(o.uid.clone()).or_default().insert(me.clone());
            }
        }
        if !now.is_empty() && (how != Observed::Modified || now != before) {
            self.queue.add(Work::Dependent(me.clone()));
        }
        if terminating(v)
            && (has_finalizer(v, ORPHAN_FINALIZER) || has_finalizer(v, FOREGROUND_FINALIZER))
        {
            self.queue.add(Work::Owner(me));
        }
        // A dependent that started terminating or changed blockOwnerDeletion: wake its owner.
        if how == Observed::Modified && !now.is_empty() {
            let started = terminating(v) && !prev.is_some_and(|p| terminating(p.head()));
            if started || now != before {
                for o in &now {
                    self.wake_waiting_owner(o, ns);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{Event, Reflector};
    use crate::store::StoredObject;

    fn dependent(name: &str, owner_uid: &str) -> Arc<StoredObject> {
        Arc::new(
            StoredObject::new(
                1,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": "default", "uid": format!("u-{name}"),
                                    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                         "name": "owner", "uid": owner_uid}]}}),
            )
            .unwrap(),
        )
    }

    /// The owner index follows the reflector: a dependent deleted between two lists (a relist
    /// after a 410) leaves the index at the relist's `InitDone`.
    #[tokio::test]
    async fn a_relist_forgets_dependents_deleted_in_between() {
        let (store, dir) = crate::store::sled_store::temp_store("gc-relist");
        let registry = Arc::new(crate::model::Registry::with_builtins());
        let service = Arc::new(Service::new(store, registry.clone()));
        let gc = GarbageCollector::new(service);
        let followers: Vec<Arc<dyn Follower>> = vec![gc.clone()];
        let cms = registry.lookup("", "v1", "configmaps").unwrap();
        let mut reflector = Reflector::new();
        let mut feed = |events: Vec<Event>| {
            for e in events {
                for c in reflector.apply(e) {
                    super::super::deliver(&cms, &followers, &c);
                }
            }
        };
        feed(vec![
            Event::Init,
            Event::InitApply(dependent("a", "owner-uid")),
            Event::InitApply(dependent("b", "owner-uid")),
            Event::InitDone,
        ]);
        let mut deps: Vec<String> = gc
            .dependents_of("owner-uid")
            .into_iter()
            .map(|r| r.name)
            .collect();
        deps.sort();
        assert_eq!(deps, ["a", "b"]);
        // b was deleted while the watch was cut; the relist has only a.
        feed(vec![
            Event::Init,
            Event::InitApply(dependent("a", "owner-uid")),
            Event::InitDone,
        ]);
        let deps: Vec<String> = gc
            .dependents_of("owner-uid")
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(deps, ["a"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
