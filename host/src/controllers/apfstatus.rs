//! The part of kube-apiserver's API Priority and Fairness controller (its config consumer,
//! `k8s.io/apiserver/pkg/util/flowcontrol/apf_controller.go`) that shows in the API: each
//! FlowSchema's `Dangling` condition, which says whether the PriorityLevelConfiguration it
//! references exists (`status: "False"`, reason `Found`, or `status: "True"`, reason
//! `NotFound`, with kube's messages). As in kube, the condition is written (a server-side apply
//! of `/status` as `api-priority-and-fairness-config-consumer-v1`, forced, with
//! `lastTransitionTime` now) only when its status, reason or message differ from what it should
//! be. turtles does not enforce APF: nothing else of that controller runs (no request is
//! classified, queued or rejected by these objects). kube also writes no more than five
//! conditions of one FlowSchema a minute (two servers of different versions would otherwise
//! fight); with one writer here that bound is not kept.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Follower, Observed, Reconciled};
use crate::builtin::flowcontrol_bootstrap::{
    API_VERSION, FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS, VERSION,
};
use crate::model::{meta, ApiError, ObjectKey, ResourceInfo};
use crate::patch::PatchType;
use crate::service::{Service, Subresource, WriteOptions};

pub const IDENTITY: super::Identity = super::Identity {
    name: "priority-and-fairness-config-consumer",
    description: "Writes each FlowSchema's Dangling condition: whether the PriorityLevelConfiguration it references exists (API Priority and Fairness is not enforced).",
    workers: 1,
};
/// kube's `ConfigConsumerAsFieldManager`.
pub const FIELD_MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";
/// kube's `FlowSchemaConditionDangling`.
pub const DANGLING: &str = "Dangling";

/// The `Dangling` condition's status, reason and message for a FlowSchema that references
/// `level`, which exists or not (kube's `presyncFlowSchemaStatus`).
pub fn dangling(level: &str, exists: bool) -> (&'static str, &'static str, String) {
    let quoted = crate::auth::rbac::go_quote(level);
    if exists {
        (
            "False",
            "Found",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {quoted} and it exists"),
        )
    } else {
        (
            "True",
            "NotFound",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {quoted} but there is no such object"),
        )
    }
}

/// The level a FlowSchema references.
fn level_of(fs: &Value) -> &str {
    fs.pointer("/spec/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub struct ApfStatusController {
    base: super::Base<String>,
}

impl ApfStatusController {
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

    /// The served kinds: FlowSchemas and PriorityLevelConfigurations.
    fn kinds(&self) -> Option<(Arc<ResourceInfo>, Arc<ResourceInfo>)> {
        let registry = &self.base.service.registry;
        Some((
            registry.lookup(GROUP, VERSION, FLOW_SCHEMAS)?,
            registry.lookup(GROUP, VERSION, PRIORITY_LEVELS)?,
        ))
    }

    /// The apply configuration that corrects FlowSchema `name`'s condition, or `None` when it
    /// is right (or the FlowSchema is gone).
    fn correction(
        &self,
        schemas: &ResourceInfo,
        levels: &ResourceInfo,
        name: &str,
    ) -> Option<Value> {
        let store = &self.base.service.store;
        let fs = store.get(&ObjectKey::new(&schemas.group_resource(), "", name))?;
        let fs = fs.parse();
        let level = level_of(&fs);
        let exists = !level.is_empty()
            && store
                .get(&ObjectKey::new(&levels.group_resource(), "", level))
                .is_some();
        let (status, reason, message) = dangling(level, exists);
        let current = fs
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == DANGLING));
        let holds = |field: &str, want: &str| {
            current
                .and_then(|c| c.get(field))
                .and_then(Value::as_str)
                .unwrap_or("")
                == want
        };
        if holds("status", status) && holds("reason", reason) && holds("message", &message) {
            return None;
        }
        // kube's `toFlowSchemaApplyConfiguration`: the condition alone, applied to `/status`.
        Some(json!({"kind": "FlowSchema", "apiVersion": API_VERSION,
            "metadata": {"name": name},
            "status": {"conditions": [{"type": DANGLING, "status": status,
                "lastTransitionTime": meta::now_rfc3339(), "reason": reason,
                "message": message}]}}))
    }

    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some((schemas, levels)) = self.kinds() else {
            return Ok(None);
        };
        let Some(applied) = self.correction(&schemas, &levels, name) else {
            return Ok(None);
        };
        let body = serde_json::to_vec(&applied).map_err(|e| ApiError::internal(e.to_string()))?;
        let opts = WriteOptions {
            manager: Some(FIELD_MANAGER.to_owned()),
            force: true,
            ..WriteOptions::default()
        };
        match svc
            .patch(
                &schemas,
                "",
                name,
                PatchType::Apply,
                &body,
                Subresource::Status,
                &opts,
            )
            .await
        {
            Ok(_) => Ok(None),
            // Deleted meanwhile: its deletion is on its way.
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl super::Reconcile<String> for ApfStatusController {
    fn reconcile_key(&self, name: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(name)
    }
}

impl Follower for ApfStatusController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if ri.group != GROUP {
            return;
        }
        match (ri.resource.as_str(), how) {
            (FLOW_SCHEMAS, Observed::Deleted) => {}
            (FLOW_SCHEMAS, _) => self.base.queue.add(meta::name(obj.head()).to_owned()),
            // A level that appears or goes: the FlowSchemas that reference it. (Listed levels
            // need nothing: every FlowSchema is listed too, and looked at once all are in.)
            (PRIORITY_LEVELS, Observed::Added | Observed::Deleted) => {
                let level = meta::name(obj.head());
                let Some((schemas, _)) = self.kinds() else {
                    return;
                };
                let Ok(schemas) = self
                    .base
                    .service
                    .store
                    .list(&schemas.group_resource(), None)
                else {
                    return;
                };
                for fs in schemas.items.values() {
                    if level_of(&fs.parse()) == level {
                        self.base.queue.add(meta::name(fs.head()).to_owned());
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::DeleteOptions;

    /// A FlowSchema's condition written as kube's controller writes it, and written again only
    /// when its level appears or goes; a FlowSchema that is gone is nothing to do.
    #[tokio::test]
    async fn flow_schemas_say_whether_their_level_exists() {
        let (store, dir) = crate::store::sled_store::temp_store("apf-dangling");
        let svc = Arc::new(Service::new(
            store,
            Arc::new(crate::model::Registry::with_builtins()),
        ));
        svc.bootstrap().await.unwrap();
        crate::builtin::flowcontrol_bootstrap::ensure(&svc)
            .await
            .unwrap();
        let ctl = ApfStatusController::new(svc.clone());
        let (schemas, levels) = ctl.kinds().unwrap();
        let condition = |name: &str| {
            let fs = svc.get(&schemas, "", name).unwrap().value().clone();
            let conditions = fs["status"]["conditions"].as_array().cloned().unwrap();
            assert_eq!(conditions.len(), 1, "{fs}");
            let mut c = conditions[0].clone();
            assert!(
                c["lastTransitionTime"]
                    .as_str()
                    .is_some_and(|t| t.ends_with('Z')),
                "{c}"
            );
            if let Some(o) = c.as_object_mut() {
                o.remove("lastTransitionTime");
            }
            (c, fs)
        };

        ctl.reconcile("global-default").await.unwrap();
        let (c, fs) = condition("global-default");
        assert_eq!(
            c,
            json!({"type": "Dangling", "status": "False", "reason": "Found",
                "message": "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists"})
        );
        let consumer = fs["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["manager"] == FIELD_MANAGER)
            .cloned()
            .unwrap();
        assert_eq!(consumer["operation"], "Apply");
        assert_eq!(consumer["subresource"], "status");

        let before = svc.store.revision();
        ctl.reconcile("global-default").await.unwrap();
        assert_eq!(
            svc.store.revision(),
            before,
            "nothing to change, nothing written"
        );

        svc.delete(&levels, "", "global-default", &DeleteOptions::default())
            .await
            .unwrap();
        ctl.reconcile("global-default").await.unwrap();
        let (c, _) = condition("global-default");
        assert_eq!(
            c,
            json!({"type": "Dangling", "status": "True", "reason": "NotFound",
                "message": "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" but there is no such object"})
        );
        ctl.reconcile("no-such-schema").await.unwrap();
        drop(ctl);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }
}
