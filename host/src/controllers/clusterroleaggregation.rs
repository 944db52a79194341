//! kube-controller-manager's `clusterrole-aggregation` controller: the `rules` of every
//! ClusterRole with an `aggregationRule` are the union of the rules of the ClusterRoles its
//! `clusterRoleSelectors` select (selector by selector, the selected roles in name order, itself
//! left out, a rule already there not repeated), written into the role, so that
//! `kubectl get clusterrole view -o yaml`, `kubectl describe` and the tools that read roles see
//! what a role grants (the authorizer aggregates live as well, `auth::rbac`). Rules written by
//! hand into an aggregated role are replaced, as in kube. Any ClusterRole's change looks at every
//! aggregated one again.

use std::sync::Arc;

use serde_json::Value;

use super::{Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::service::{Service, Subresource};

pub const IDENTITY: super::Identity = super::Identity {
    name: "clusterrole-aggregation",
    description: "Writes the union of the selected ClusterRoles' rules into every ClusterRole with an aggregationRule.",
    workers: 1,
};
const GROUP: &str = "rbac.authorization.k8s.io";
const CLUSTER_ROLES: &str = "clusterroles";

/// Keys: the name of a ClusterRole with an `aggregationRule`.
pub struct ClusterRoleAggregation {
    base: super::Base<String>,
}

fn aggregated(role: &Value) -> bool {
    role.get("aggregationRule").is_some_and(Value::is_object)
}

impl ClusterRoleAggregation {
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

    fn roles(&self) -> Vec<Arc<crate::store::StoredObject>> {
        let key = format!("{CLUSTER_ROLES}.{GROUP}");
        match self.base.service.store.list(&key, None) {
            Ok(s) => s.items.values().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// kube's `syncClusterRole`.
    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup(GROUP, "v1", CLUSTER_ROLES) else {
            return Ok(None);
        };
        let Ok(current) = svc.get(&ri, "", name) else {
            return Ok(None);
        };
        let role = current.value();
        let Some(selectors) = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            return Ok(None);
        };
        let mut all: Vec<Arc<crate::store::StoredObject>> = self.roles();
        all.sort_by(|a, b| meta::name(a.head()).cmp(meta::name(b.head())));
        let mut rules: Vec<Value> = Vec::new();
        for selector in selectors {
            for other in &all {
                let o = other.value();
                if meta::name(other.head()) == name
                    || !crate::auth::rbac::selector_matches(selector, o.pointer("/metadata/labels"))
                {
                    continue;
                }
                for rule in o
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if !rules.contains(rule) {
                        rules.push(rule.clone());
                    }
                }
            }
        }
        let have = role
            .get("rules")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if have == rules.as_slice() {
            return Ok(None);
        }
        let mut updated = role.clone();
        if let Some(o) = updated.as_object_mut() {
            o.insert("rules".into(), Value::Array(rules));
        }
        super::write_back(svc, &ri, "", name, updated, Subresource::Main).await?;
        Ok(None)
    }
}

impl super::Reconcile<String> for ClusterRoleAggregation {
    fn reconcile_key(&self, name: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(name)
    }
}

impl Follower for ClusterRoleAggregation {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if ri.group != GROUP || ri.resource != CLUSTER_ROLES {
            return;
        }
        // At start each aggregated role is looked at once; after, any role's change may change
        // what any aggregated role selects.
        if how == Observed::Listed {
            if aggregated(obj.value()) {
                self.base.queue.add(meta::name(obj.head()).to_owned());
            }
            return;
        }
        for role in self.roles() {
            if aggregated(role.value()) {
                self.base.queue.add(meta::name(role.head()).to_owned());
            }
        }
    }
}
