//! kube-aggregator's autoregister controller, fed as kube-apiserver feeds it: every built-in
//! group version this host serves has a local APIService, created (or its spec put back) once
//! at start-up and labelled `kube-aggregator.kubernetes.io/automanaged: onstart`; every version
//! a CRD serves has one kept continuously (`automanaged: "true"`: re-created when deleted, its
//! spec put back when edited, deleted when no CRD of the group serves the version any more).
//! Removing the label hands an APIService to the user.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use crate::controllers::{Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::service::{Service, Subresource, WriteOptions};

pub const IDENTITY: crate::controllers::Identity = crate::controllers::Identity {
    name: "apiservice-registration-controller",
    description: "Keeps a local APIService for every group version this host serves (built-in ones once at start-up, CRDs' continuously).",
    workers: 2,
};

pub const MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
const ON_START: &str = "onstart";
const ALWAYS: &str = "true";

/// What should exist under one name.
#[derive(Debug, Clone, PartialEq)]
struct Desired {
    spec: Value,
    /// Kept continuously (a CRD's) rather than once at start-up (a built-in's).
    always: bool,
}

#[derive(Default)]
struct State {
    desired: HashMap<String, Desired>,
    /// Names whose first reconcile succeeded (kube's `syncedSuccessfully`).
    synced: HashSet<String>,
    /// APIServices stored when the controller started (kube's `apiServicesAtStart`).
    at_start: HashSet<String>,
}

pub struct Registration {
    base: crate::controllers::Base<String>,
    state: Mutex<State>,
}

fn spec(group: &str, version: &str, p: super::Priority) -> Value {
    json!({"group": group, "version": version,
           "groupPriorityMinimum": p.group, "versionPriority": p.version})
}

impl Registration {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: crate::controllers::Base::new(service),
            state: Mutex::default(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Start the workers: the APIServices stored now are those "present at start"; every
    /// built-in group version is desired once, and CRDs' follow the registry.
    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        let svc = &self.base.service;
        let stored: HashSet<String> = svc
            .store
            .list(
                &format!(
                    "{RESOURCE}.{GROUP}",
                    RESOURCE = super::RESOURCE,
                    GROUP = super::GROUP
                ),
                None,
            )
            .map(|s| {
                s.items
                    .values()
                    .map(|o| meta::name(o.head()).to_owned())
                    .collect()
            })
            .unwrap_or_default();
        {
            let mut st = self.state();
            st.at_start = stored;
            for (group, version) in builtin_group_versions(&svc.registry) {
                if let Some(p) = super::builtin_priority(&group, &version) {
                    st.desired.insert(
                        super::name_of(&group, &version),
                        Desired {
                            spec: spec(&group, &version, p),
                            always: false,
                        },
                    );
                }
            }
        }
        self.crds_changed();
        let names: Vec<String> = self.state().desired.keys().cloned().collect();
        for n in names {
            self.base.queue.add(n);
        }
        for n in self.state().at_start.clone() {
            self.base.queue.add(n);
        }
        // CRDs come and go: their group versions follow the registry.
        let this = self.clone();
        let mut changes = svc.registry.changes();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    r = changes.changed() => if r.is_err() { return },
                    _ = stop.changed() => return,
                }
                this.crds_changed();
            }
        });
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    /// Recompute the CRDs' desired APIServices from the registry; queue what changed.
    fn crds_changed(&self) {
        let served = crd_group_versions(&self.base.service.registry);
        let mut changed = Vec::new();
        {
            let mut st = self.state();
            let wanted: HashMap<String, Desired> = served
                .iter()
                .map(|(g, v)| {
                    (
                        super::name_of(g, v),
                        Desired {
                            spec: spec(g, v, super::CRD_PRIORITY),
                            always: true,
                        },
                    )
                })
                .collect();
            let gone: Vec<String> = st
                .desired
                .iter()
                .filter(|(n, d)| d.always && !wanted.contains_key(*n))
                .map(|(n, _)| n.clone())
                .collect();
            for n in gone {
                st.desired.remove(&n);
                changed.push(n);
            }
            for (n, d) in wanted {
                // A built-in group version keeps its own (kube-apiserver's) APIService.
                if st.desired.get(&n).is_some_and(|b| !b.always) {
                    continue;
                }
                if st.desired.get(&n) != Some(&d) {
                    st.desired.insert(n.clone(), d);
                    changed.push(n);
                }
            }
        }
        for n in changed {
            self.base.queue.add(n);
        }
    }

    /// kube's `checkAPIService`, in its order.
    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup(super::GROUP, "v1", super::RESOURCE) else {
            return Ok(None);
        };
        let (desired, synced, at_start) = {
            let st = self.state();
            (
                st.desired.get(name).cloned(),
                st.synced.contains(name),
                st.at_start.contains(name),
            )
        };
        let result = self
            .check(&ri, name, desired.as_ref(), synced, at_start)
            .await;
        if result.is_ok() {
            self.state().synced.insert(name.to_owned());
        }
        result
    }

    async fn check(
        &self,
        ri: &ResourceInfo,
        name: &str,
        desired: Option<&Desired>,
        synced: bool,
        at_start: bool,
    ) -> Reconciled {
        let svc = &self.base.service;
        let current = match svc.get(ri, "", name) {
            Ok(c) => Some(c),
            Err(e) if e.code == 404 => None,
            Err(e) => return Err(e.into()),
        };
        // Built-ins are looked at once.
        if desired.is_some_and(|d| !d.always) && synced {
            return Ok(None);
        }
        let Some(current) = current else {
            let Some(d) = desired else { return Ok(None) };
            let label = if d.always { ALWAYS } else { ON_START };
            let obj = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": name, "labels": {MANAGED_LABEL: label}},
                "spec": d.spec});
            return match svc.create(ri, "", obj, &WriteOptions::default()).await {
                Ok(_) => Ok(None),
                Err(e) if e.code == 409 => Ok(None),
                Err(e) => Err(e.into()),
            };
        };
        let v = current.value();
        let managed = meta::Meta::label(v, MANAGED_LABEL);
        match managed {
            Some(ON_START) => {
                if !at_start || synced {
                    return Ok(None);
                }
            }
            Some(ALWAYS) => {}
            _ => return Ok(None),
        }
        let Some(d) = desired else {
            let uid = meta::meta_str(v, "uid").unwrap_or("").to_owned();
            let opts = crate::service::DeleteOptions {
                precondition_uid: Some(uid),
                ..Default::default()
            };
            return match svc.delete(ri, "", name, &opts).await {
                Ok(_) => Ok(None),
                Err(e) if e.code == 404 || e.code == 409 => Ok(None),
                Err(e) => Err(e.into()),
            };
        };
        if same_spec(v.get("spec"), &d.spec) {
            return Ok(None);
        }
        let mut updated = v.clone();
        if let Some(spec) = updated.get_mut("spec").and_then(Value::as_object_mut) {
            // kube copies the desired spec whole: a local APIService has no service, CA or TLS
            // setting.
            spec.clear();
            if let Some(want) = d.spec.as_object() {
                spec.extend(want.clone());
            }
        }
        match svc
            .update(
                ri,
                "",
                name,
                updated,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(None),
            Err(e) if e.code == 404 || e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// Whether a stored spec is the desired one (kube's `DeepEqual` of the specs, after defaults:
/// a stored local spec carries no other field).
fn same_spec(stored: Option<&Value>, want: &Value) -> bool {
    let Some(stored) = stored.and_then(Value::as_object) else {
        return false;
    };
    let Some(want) = want.as_object() else {
        return false;
    };
    stored
        .iter()
        .filter(|(_, v)| !v.is_null() && **v != json!(false) && **v != json!(""))
        .count()
        == want.len()
        && want.iter().all(|(k, v)| stored.get(k) == Some(v))
}

/// The built-in group versions served (the core group as `("", "v1")`).
fn builtin_group_versions(registry: &crate::model::Registry) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in registry.snapshot().iter().filter(|r| !r.is_custom()) {
        let gv = (r.group.clone(), r.version.clone());
        if !out.contains(&gv) {
            out.push(gv);
        }
    }
    out
}

/// The group versions CRDs serve.
fn crd_group_versions(registry: &crate::model::Registry) -> HashSet<(String, String)> {
    registry
        .snapshot()
        .iter()
        .filter(|r| r.is_custom())
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect()
}

impl crate::controllers::Reconcile<String> for Registration {
    fn reconcile_key(&self, name: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(name)
    }
}

impl Follower for Registration {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        // Listed too: after a relist, what changed while the watch was cut is looked at.
        let _ = how;
        if ri.group != super::GROUP || ri.resource != super::RESOURCE {
            return;
        }
        self.base.queue.add(meta::name(obj.head()).to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_spec_with_defaults_equals_the_desired_one() {
        let want = spec(
            "apps",
            "v1",
            super::super::Priority {
                group: 17800,
                version: 15,
            },
        );
        let stored = json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
                            "versionPriority": 15, "insecureSkipTLSVerify": false});
        assert!(same_spec(Some(&stored), &want));
        let edited = json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 1,
                            "versionPriority": 15});
        assert!(!same_spec(Some(&edited), &want));
        let with_service = json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
                                  "versionPriority": 15, "service": {"namespace": "a", "name": "b"}});
        assert!(!same_spec(Some(&with_service), &want));
    }
}
