//! The CRD controller: keeps the registry in step with stored CRDs. It accepts names (or reports
//! the conflict), sets the NamesAccepted/Established conditions, serves accepted CRDs, and on
//! deletion removes every instance before letting the CRD go.
//!
//! The API layer calls [`CrdController::reconcile`] right after each write to a CRD (so a CRD is
//! served by the time its create returns); a background task does the same for every CRD event
//! and for instance deletions while a CRD terminates, and everything is reconciled at start-up
//! before the server reports ready.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::{check_names, resources, CLEANUP_FINALIZER, GROUP, RESOURCE};
use crate::informer::{Event, Reflector, StoreSource, Watcher};
use crate::model::{meta, ApiError, ObjectKey, ResourceInfo};
use crate::patch::PatchType;
use crate::service::{DeleteOptions, ListOptions, Service, Subresource, WriteOptions};

pub struct CrdController {
    service: Arc<Service>,
    lock: tokio::sync::Mutex<()>,
    /// CRDs whose instances we are waiting on (a watch task runs for each).
    cleanup_watches: Mutex<HashSet<String>>,
    /// CRD names to reconcile again (instance deletions while a CRD terminates).
    requeue: tokio::sync::mpsc::UnboundedSender<String>,
    requeued: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<String>>>,
}

fn condition(kind: &str, status: bool, reason: &str, message: &str, old: Option<&Value>) -> Value {
    let status_s = if status { "True" } else { "False" };
    let ltt = old
        .and_then(|conds| conds.as_array())
        .and_then(|a| {
            a.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        })
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(status_s))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(meta::now_rfc3339()));
    json!({"type": kind, "status": status_s, "lastTransitionTime": ltt, "reason": reason, "message": message})
}

impl CrdController {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        let (requeue, requeued) = tokio::sync::mpsc::unbounded_channel();
        Arc::new(Self {
            service,
            lock: tokio::sync::Mutex::new(()),
            cleanup_watches: Mutex::new(HashSet::new()),
            requeue,
            requeued: Mutex::new(Some(requeued)),
        })
    }

    fn crd_ri(&self) -> Result<Arc<ResourceInfo>, ApiError> {
        self.service
            .registry
            .lookup(GROUP, "v1", RESOURCE)
            .ok_or_else(|| ApiError::internal("CustomResourceDefinitions are not registered"))
    }

    fn storage_key() -> String {
        format!("{RESOURCE}.{GROUP}")
    }

    /// Reconcile every stored CRD (start-up), then follow CRD changes in the background.
    pub async fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Result<(), ApiError> {
        let snap = self
            .service
            .store
            .list(&Self::storage_key(), None)
            .map_err(|e| ApiError::internal(format!("listing CRDs: {e}")))?;
        for obj in snap.items.values() {
            self.reconcile_logged(meta::name(obj.head())).await;
        }
        let this = self.clone();
        tokio::spawn(async move { this.follow(snap, shutdown).await });
        Ok(())
    }

    async fn reconcile_logged(self: &Arc<Self>, name: &str) {
        if let Err(e) = self.reconcile(name).await {
            tracing::warn!(crd = %name, error = %e, "reconciling CRD failed");
        }
    }

    /// Follow CRD changes from the start-up list ([`crate::informer`]: resume after a lag,
    /// relist after a 410; a CRD deleted while the watch was cut is forgotten at the relist's
    /// `InitDone` and reconciled, which unserves it), and the requeued names.
    async fn follow(
        self: Arc<Self>,
        listed: crate::store::Snapshot,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let Some(mut requeued) = self.requeued.lock().ok().and_then(|mut r| r.take()) else {
            return;
        };
        let mut reflector = Reflector::new();
        reflector.seed(listed.items.values().cloned());
        let mut watcher = Watcher::resume(
            StoreSource {
                store: self.service.store.clone(),
                resource: Self::storage_key(),
                namespace: None,
            },
            None,
            listed.rv,
        );
        loop {
            tokio::select! {
                ev = watcher.next() => {
                    let Some(ev) = ev else {
                        tracing::error!("the CRD controller's watch ended; stopping");
                        return;
                    };
                    for change in reflector.apply(ev) {
                        self.reconcile_logged(meta::name(change.object().value())).await;
                    }
                }
                Some(name) = requeued.recv() => self.reconcile_logged(&name).await,
                _ = shutdown.changed() => return,
            }
        }
    }

    /// Bring one CRD's registration and status in line with its stored spec.
    pub async fn reconcile(self: &Arc<Self>, name: &str) -> Result<(), ApiError> {
        let _guard = self.lock.lock().await;
        let ri = self.crd_ri()?;
        let Some(obj) = self
            .service
            .store
            .get(&ObjectKey::new(&Self::storage_key(), "", name))
        else {
            self.service.registry.remove_custom(name);
            return Ok(());
        };
        let mut crd = obj.value().clone();
        if meta::meta_str(&crd, "deletionTimestamp").is_some() {
            return self.cleanup(&ri, name, crd).await;
        }
        let mut finalizers = meta::finalizers(&crd);
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_owned());
            let patch = json!({"metadata": {"finalizers": finalizers}}).to_string();
            // Continue from what the patch wrote: the status update below is conditional on
            // its resourceVersion.
            crd = self
                .service
                .patch(
                    &ri,
                    "",
                    name,
                    PatchType::Merge,
                    patch.as_bytes(),
                    Subresource::Main,
                    &WriteOptions::default(),
                )
                .await?
                .object
                .value()
                .clone();
        }
        let all = self
            .service
            .store
            .list(&Self::storage_key(), None)
            .map_err(|e| ApiError::internal(format!("listing CRDs: {e}")))?;
        let others: Vec<&Value> = all
            .items
            .values()
            .filter(|o| meta::name(o.head()) != name)
            .map(|o| o.value())
            .collect();
        let verdict = check_names(&crd, &others);
        let old_conditions = crd.pointer("/status/conditions");
        let mut status = crd.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut conditions = Vec::new();
        match &verdict {
            Ok(()) => {
                conditions.push(condition(
                    "NamesAccepted",
                    true,
                    "NoConflicts",
                    "no conflicts found",
                    old_conditions,
                ));
                conditions.push(condition(
                    "Established",
                    true,
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                    old_conditions,
                ));
                status["acceptedNames"] = crd
                    .pointer("/spec/names")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
            }
            Err(conflict) => {
                conditions.push(condition(
                    "NamesAccepted",
                    false,
                    conflict.reason,
                    &conflict.message,
                    old_conditions,
                ));
                conditions.push(condition(
                    "Established",
                    false,
                    "NotAccepted",
                    "not all names are accepted",
                    old_conditions,
                ));
                if status.get("acceptedNames").is_none() {
                    status["acceptedNames"] = json!({"plural": "", "kind": ""});
                }
            }
        }
        // kube's API approval controller: the policy condition of a protected group's CRD.
        if super::is_protected_group(
            crd.pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or(""),
        ) {
            let (state, reason) = super::approval_state(&crd);
            let (ok, why) = match state {
                super::ApprovalState::Approved => (true, "ApprovedAnnotation"),
                super::ApprovalState::Bypassed => (false, "UnapprovedAnnotation"),
                super::ApprovalState::Missing => (false, "MissingAnnotation"),
                super::ApprovalState::Invalid => (false, "InvalidAnnotation"),
            };
            conditions.push(condition(
                "KubernetesAPIApprovalPolicyConformant",
                ok,
                why,
                &reason,
                old_conditions,
            ));
        }
        status["conditions"] = Value::Array(conditions);
        let storage = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .find(|v| v.get("storage") == Some(&Value::Bool(true)))
            })
            .and_then(|v| v.get("name").cloned());
        let mut stored: Vec<Value> = status
            .get("storedVersions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(sv) = storage {
            if !stored.contains(&sv) {
                stored.push(sv);
            }
        }
        status["storedVersions"] = Value::Array(stored);
        if crd.get("status") != Some(&status) {
            let mut new = crd.clone();
            new["status"] = status;
            self.service
                .update(
                    &ri,
                    "",
                    name,
                    new,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await?;
        }
        match verdict {
            Ok(()) => {
                let current = self
                    .service
                    .store
                    .get(&ObjectKey::new(&Self::storage_key(), "", name))
                    .map(|o| o.value().clone())
                    .unwrap_or(crd);
                self.service.registry.set_custom(name, resources(&current));
            }
            Err(_) => self.service.registry.remove_custom(name),
        }
        Ok(())
    }

    /// A CRD being deleted: Terminating, delete every instance, then release the finalizer.
    async fn cleanup(
        self: &Arc<Self>,
        ri: &ResourceInfo,
        name: &str,
        crd: Value,
    ) -> Result<(), ApiError> {
        let old_conditions = crd.pointer("/status/conditions");
        let terminating = condition(
            "Terminating",
            true,
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            old_conditions,
        );
        let mut conds: Vec<Value> = old_conditions
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.get("type").and_then(Value::as_str) != Some("Terminating"))
            .collect();
        conds.push(terminating);
        if crd.pointer("/status/conditions") != Some(&Value::Array(conds.clone())) {
            let mut new = crd.clone();
            new["status"]["conditions"] = Value::Array(conds);
            self.service
                .update(
                    ri,
                    "",
                    name,
                    new,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await?;
        }
        let served = resources(&crd);
        // Instances stay reachable (to read them and drop their finalizers) until the CRD goes.
        if crd
            .pointer("/status/acceptedNames/plural")
            .and_then(Value::as_str)
            .is_some_and(|p| !p.is_empty())
        {
            self.service.registry.set_custom(name, served.clone());
        }
        let Some(cri) = served.first().cloned() else {
            return self.release(ri, name).await;
        };
        let page = self
            .service
            .list(&cri, None, &ListOptions::default())
            .await?;
        for obj in &page.items {
            let ns = meta::namespace(obj.head()).to_owned();
            let n = meta::name(obj.head()).to_owned();
            match self
                .service
                .delete(&cri, &ns, &n, &DeleteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let left = self
            .service
            .list(&cri, None, &ListOptions::default())
            .await?;
        if left.items.is_empty() {
            return self.release(ri, name).await;
        }
        // Instances held by finalizers: come back whenever one goes.
        let first = self
            .cleanup_watches
            .lock()
            .map(|mut w| w.insert(name.to_owned()))
            .unwrap_or(false);
        if first {
            let this = self.clone();
            let crd_name = name.to_owned();
            let resource = cri.group_resource();
            let from = left.rv;
            tokio::spawn(async move {
                let mut instances = Watcher::resume(
                    StoreSource {
                        store: this.service.store.clone(),
                        resource,
                        namespace: None,
                    },
                    None,
                    from,
                );
                loop {
                    // Wake up now and then to notice that the CRD went some other way.
                    let ev =
                        tokio::time::timeout(std::time::Duration::from_secs(5), instances.next())
                            .await;
                    // An instance went (or a relist after a 410 may say fewer are left).
                    let deleted = match ev {
                        Ok(Some(Event::Delete(_) | Event::InitDone)) => true,
                        Ok(Some(_)) | Err(_) => false,
                        Ok(None) => break,
                    };
                    let crd_gone = this
                        .service
                        .store
                        .get(&ObjectKey::new(&Self::storage_key(), "", &crd_name))
                        .is_none();
                    if crd_gone {
                        break;
                    }
                    if deleted && this.requeue.send(crd_name.clone()).is_err() {
                        break;
                    }
                }
                if let Ok(mut w) = this.cleanup_watches.lock() {
                    w.remove(&crd_name);
                }
            });
        }
        Ok(())
    }

    async fn release(&self, ri: &ResourceInfo, name: &str) -> Result<(), ApiError> {
        let key = ObjectKey::new(&Self::storage_key(), "", name);
        if let Some(obj) = self.service.store.get(&key) {
            let remaining: Vec<String> = meta::finalizers(obj.head())
                .into_iter()
                .filter(|f| f != CLEANUP_FINALIZER)
                .collect();
            let patch = json!({"metadata": {"finalizers": if remaining.is_empty() { Value::Null } else { json!(remaining) }}}).to_string();
            match self
                .service
                .patch(
                    ri,
                    "",
                    name,
                    PatchType::Merge,
                    patch.as_bytes(),
                    Subresource::Main,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        if self.service.store.get(&key).is_none() {
            self.service.registry.remove_custom(name);
        }
        Ok(())
    }
}
