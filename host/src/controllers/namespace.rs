//! The namespace controller: empties a terminating namespace, then lets it go.
//!
//! `DELETE /api/v1/namespaces/NAME` only marks the namespace (deletionTimestamp, phase
//! Terminating). This controller deletes every namespaced object of every kind in it (custom
//! resources included), reports progress in kube's conditions, waits for the objects'
//! finalizers, then removes its own `kubernetes` finalizer from `spec.finalizers` and the
//! namespace itself once no finalizer remains.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use super::{terminating, uid, Follower, Observed, Reconciled};
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::service::{
    DeleteOptions, Propagation, Service, Subresource, NAMESPACES, NAMESPACE_FINALIZER,
};

pub const IDENTITY: super::Identity = super::Identity {
    name: "namespace-controller",
    description: "Deletes the contents of terminating namespaces, then the namespaces.",
    workers: 2,
};
/// Concurrent deletes while emptying one namespace.
const FAN_OUT: usize = 32;
/// A namespace still waiting on content is looked at again after this long even without events.
const RECHECK: Duration = Duration::from_secs(2);
/// kube's `namespaceDeletionGracePeriod`: how long after its deletion a namespace is left
/// alone before it is emptied, so that a client deleting a manifest that holds the namespace
/// and its contents (`kubectl delete -f`) finds the contents still there to delete.
const DELETION_GRACE: Duration = Duration::from_secs(5);

pub struct NamespaceController {
    base: super::Base<String>,
}

/// What is left in a namespace.
#[derive(Default)]
struct Remaining {
    /// group-resource -> objects.
    objects: BTreeMap<String, usize>,
    /// finalizer -> objects carrying it.
    finalizers: BTreeMap<String, usize>,
}

/// What is left of a terminating namespace's [`DELETION_GRACE`] (from its
/// `deletionTimestamp`, so a restart does not start it again); `None` once it is over.
fn grace_left(ns: &impl meta::Meta, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let since = meta::meta_str(ns, "deletionTimestamp")
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())?;
    let elapsed = now
        .signed_duration_since(since)
        .to_std()
        .unwrap_or_default();
    DELETION_GRACE.checked_sub(elapsed).filter(|d| !d.is_zero())
}

impl NamespaceController {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    fn namespace(&self, name: &str) -> Option<Arc<crate::store::StoredObject>> {
        self.base
            .service
            .store
            .get(&ObjectKey::new(NAMESPACES, "", name))
    }

    /// Every namespaced object in `ns`, by kind.
    fn contents(&self, ns: &str) -> Vec<(Arc<ResourceInfo>, Vec<Arc<crate::store::StoredObject>>)> {
        let prefix = format!("{ns}/");
        let mut out = Vec::new();
        for ri in self
            .base
            .service
            .registry
            .stored_resources()
            .into_iter()
            .filter(|r| r.namespaced())
        {
            let Ok(snap) = self.base.service.store.list(&ri.group_resource(), None) else {
                continue;
            };
            let items: Vec<_> = snap
                .items
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .map(|(_, o)| o.clone())
                .collect();
            if !items.is_empty() {
                out.push((ri, items));
            }
        }
        out
    }

    fn remaining(&self, ns: &str) -> Remaining {
        let mut r = Remaining::default();
        for (ri, items) in self.contents(ns) {
            let gr = if ri.group.is_empty() {
                ri.resource.clone()
            } else {
                format!("{}.{}", ri.resource, ri.group)
            };
            r.objects.insert(gr, items.len());
            for o in &items {
                for f in meta::finalizers(o.head()) {
                    *r.finalizers.entry(f).or_default() += 1;
                }
            }
        }
        r
    }

    async fn reconcile(&self, ns: &str) -> Reconciled {
        let Some(current) = self.namespace(ns) else {
            return Ok(None);
        };
        if !terminating(current.head()) {
            return Ok(None);
        }
        if let Some(wait) = grace_left(current.head(), chrono::Utc::now()) {
            return Ok(Some(wait));
        }
        // Delete what is not already on its way out.
        let doomed: Vec<(Arc<ResourceInfo>, String, String)> = self
            .contents(ns)
            .into_iter()
            .flat_map(|(ri, items)| {
                items
                    .into_iter()
                    .filter(|o| !terminating(o.head()))
                    .map(move |o| {
                        (
                            ri.clone(),
                            meta::name(o.head()).to_owned(),
                            uid(o.head()).to_owned(),
                        )
                    })
            })
            .collect();
        let failures: Vec<Option<String>> =
            futures::stream::iter(doomed.into_iter().map(|(ri, name, u)| {
                // As kube's namespace controller, a client of the API: its deletes pass
                // admission.
                let opts = DeleteOptions {
                    precondition_uid: Some(u),
                    propagation: Some(Propagation::Background),
                    user: Some(super::service_account_user("namespace-controller")),
                    ..Default::default()
                };
                async move {
                    match self.base.service.delete(&ri, ns, &name, &opts).await {
                        Ok(_) => None,
                        Err(e) if e.code == 404 || e.code == 409 => None,
                        Err(e) => Some(format!("{}/{name}: {}", ri.resource, e.message)),
                    }
                }
            }))
            .buffer_unordered(FAN_OUT)
            .collect()
            .await;
        let failures: Vec<String> = failures.into_iter().flatten().collect();
        let left = self.remaining(ns);
        self.write_conditions(ns, &left, &failures).await?;
        if !left.objects.is_empty() {
            return Ok(Some(RECHECK));
        }
        // Empty: drop our finalizer, then the namespace (once no other finalizer remains).
        self.finalize(ns).await?;
        if self.base.service.remove_namespace(ns).await? {
            tracing::info!(namespace = ns, "namespace deleted");
            return Ok(None);
        }
        // Someone else's finalizer: its removal is an event that brings us back.
        Ok(None)
    }

    async fn finalize(&self, ns: &str) -> Result<(), super::ControllerError> {
        let Some(current) = self.namespace(ns) else {
            return Ok(());
        };
        let Some(list) = current
            .value()
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
        else {
            return Ok(());
        };
        if !list.iter().any(|f| f == NAMESPACE_FINALIZER) {
            return Ok(());
        }
        let mut v = current.value().clone();
        let left: Vec<Value> = list
            .iter()
            .filter(|f| *f != NAMESPACE_FINALIZER)
            .cloned()
            .collect();
        v["spec"]["finalizers"] = json!(left);
        let Some(ri) = self.base.service.registry.lookup("", "v1", NAMESPACES) else {
            return Ok(());
        };
        // Through `finalize`, the one way to change them; the update deletes the namespace when
        // no finalizer remains.
        super::write_back(&self.base.service, &ri, "", ns, v, Subresource::Finalize).await
    }

    /// kube's namespace deletion conditions.
    async fn write_conditions(
        &self,
        ns: &str,
        left: &Remaining,
        failures: &[String],
    ) -> Result<(), super::ControllerError> {
        let Some(current) = self.namespace(ns) else {
            return Ok(());
        };
        let old = current.value().pointer("/status/conditions");
        let cond = |kind: &str, status: bool, reason: &str, message: String| {
            let status_s = if status { "True" } else { "False" };
            let ltt = old
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter().find(|c| {
                        c.get("type").and_then(Value::as_str) == Some(kind)
                            && c.get("status").and_then(Value::as_str) == Some(status_s)
                    })
                })
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(meta::now_rfc3339()));
            json!({"type": kind, "status": status_s, "lastTransitionTime": ltt,
                   "reason": reason, "message": message})
        };
        let content = if failures.is_empty() {
            cond(
                "NamespaceDeletionContentFailure",
                false,
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization".into(),
            )
        } else {
            cond(
                "NamespaceDeletionContentFailure",
                true,
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    failures.len(),
                    failures.join(", ")
                ),
            )
        };
        let remaining = if left.objects.is_empty() {
            cond(
                "NamespaceContentRemaining",
                false,
                "ContentRemoved",
                "All content successfully removed".into(),
            )
        } else {
            let parts: Vec<String> = left
                .objects
                .iter()
                .map(|(gr, n)| format!("{gr} has {n} resource instances"))
                .collect();
            cond(
                "NamespaceContentRemaining",
                true,
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", parts.join(", ")),
            )
        };
        let finalizers = if left.finalizers.is_empty() {
            cond(
                "NamespaceFinalizersRemaining",
                false,
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished".into(),
            )
        } else {
            let parts: Vec<String> = left
                .finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            cond(
                "NamespaceFinalizersRemaining",
                true,
                "SomeFinalizersRemain",
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    parts.join(", ")
                ),
            )
        };
        let status = json!({
            "phase": "Terminating",
            "conditions": [
                cond("NamespaceDeletionDiscoveryFailure", false, "ResourcesDiscovered",
                     "All resources successfully discovered".into()),
                cond("NamespaceDeletionGroupVersionParsingFailure", false, "ParsedGroupVersions",
                     "All legacy kube types successfully parsed".into()),
                content,
                remaining,
                finalizers,
            ],
        });
        if current.value().get("status") == Some(&status) {
            return Ok(());
        }
        let mut v = current.value().clone();
        v["status"] = status;
        let Some(ri) = self.base.service.registry.lookup("", "v1", NAMESPACES) else {
            return Ok(());
        };
        // A conflict: the next look (an event or the recheck) writes them again.
        match super::write_back(&self.base.service, &ri, "", ns, v, Subresource::Status).await {
            Err(super::ControllerError::Api(e)) if e.code == 409 => Ok(()),
            r => r,
        }
    }
}

impl super::Reconcile<String> for NamespaceController {
    fn reconcile_key(&self, ns: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(ns)
    }
}

impl Follower for NamespaceController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        let v = obj.head();
        if ri.group.is_empty() && ri.resource == NAMESPACES {
            if terminating(v) && how != Observed::Deleted {
                self.base.queue.add(meta::name(v).to_owned());
            }
            return;
        }
        // Content of a terminating namespace changed (a finalizer went, an object went).
        if ri.namespaced() && matches!(how, Observed::Modified | Observed::Deleted) {
            let ns = meta::namespace(v);
            if self.namespace(ns).is_some_and(|n| terminating(n.head())) {
                self.base.queue.add(ns.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_is_left_alone_for_five_seconds_after_its_deletion() {
        let at = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s)
                .unwrap()
                .with_timezone(&chrono::Utc)
        };
        let ns = json!({"metadata": {"name": "a", "deletionTimestamp": "2026-12-07T10:00:00Z"}});
        assert_eq!(
            grace_left(&ns, at("2026-12-07T10:00:00Z")),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            grace_left(&ns, at("2026-12-07T10:00:03.5Z")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(grace_left(&ns, at("2026-12-07T10:00:05Z")), None);
        assert_eq!(grace_left(&ns, at("2026-12-07T11:00:00Z")), None);
        // A clock behind the timestamp waits the whole period, no more.
        assert_eq!(
            grace_left(&ns, at("2026-12-07T09:59:00Z")),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            grace_left(
                &json!({"metadata": {"name": "a"}}),
                at("2026-12-07T10:00:00Z")
            ),
            None
        );
    }
}
