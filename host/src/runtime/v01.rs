//! `turtles:controller@0.1.0` components: their types converted to and from 0.2.0's at the
//! boundary, and their host imports served by the 0.2.0 implementation. A 0.1.0 registration
//! has no initial keys and no service account; everything else means the same.

use super::bindings_v01::turtles::controller::{host, types as old};
use super::{wit, GuestState};

impl From<old::OwnerKind> for wit::OwnerKind {
    fn from(o: old::OwnerKind) -> Self {
        wit::OwnerKind {
            group: o.group,
            kind: o.kind,
        }
    }
}

impl From<old::KeyMapping> for wit::KeyMapping {
    fn from(m: old::KeyMapping) -> Self {
        match m {
            old::KeyMapping::SelfKey => wit::KeyMapping::SelfKey,
            old::KeyMapping::Owner(o) => wit::KeyMapping::Owner(o.into()),
        }
    }
}

impl From<old::Watch> for wit::Watch {
    fn from(w: old::Watch) -> Self {
        wit::Watch {
            group: w.group,
            version: w.version,
            resource: w.resource,
            namespace: w.namespace,
            label_selector: w.label_selector,
            mapping: w.mapping.into(),
        }
    }
}

impl From<old::Permission> for wit::Permission {
    fn from(p: old::Permission) -> Self {
        wit::Permission {
            api_groups: p.api_groups,
            resources: p.resources,
            verbs: p.verbs,
        }
    }
}

impl From<old::Registration> for wit::Registration {
    fn from(r: old::Registration) -> Self {
        wit::Registration {
            watches: r.watches.into_iter().map(Into::into).collect(),
            max_concurrent_reconciles: r.max_concurrent_reconciles,
            resync_seconds: r.resync_seconds,
            permissions: r.permissions.into_iter().map(Into::into).collect(),
            initial_keys: Vec::new(),
            service_account: None,
        }
    }
}

impl From<wit::ObjectKey> for old::ObjectKey {
    fn from(k: wit::ObjectKey) -> Self {
        old::ObjectKey {
            namespace: k.namespace,
            name: k.name,
        }
    }
}

impl From<old::Outcome> for wit::Outcome {
    fn from(o: old::Outcome) -> Self {
        match o {
            old::Outcome::Done => wit::Outcome::Done,
            old::Outcome::RequeueAfter(ms) => wit::Outcome::RequeueAfter(ms),
            old::Outcome::TransientError(m) => wit::Outcome::TransientError(m),
            old::Outcome::TerminalError(m) => wit::Outcome::TerminalError(m),
        }
    }
}

impl old::Host for GuestState {}

impl host::Host for GuestState {
    async fn api_call(&mut self, r: old::HttpRequest) -> old::HttpResponse {
        let ctx = self.ctx.clone();
        let call = super::call_api(
            &ctx,
            wit::HttpRequest {
                method: r.method,
                path: r.path,
                headers: r.headers,
                body: r.body,
            },
        );
        let resp = tokio::time::timeout(self.remaining(), call)
            .await
            .unwrap_or_else(|_| super::timed_out_call());
        old::HttpResponse {
            status: resp.status,
            headers: resp.headers,
            body: resp.body,
        }
    }

    fn cache_get(
        &mut self,
        group: String,
        version: String,
        resource: String,
        namespace: String,
        name: String,
    ) -> Option<Vec<u8>> {
        super::bindings::turtles::controller::host::Host::cache_get(
            self, group, version, resource, namespace, name,
        )
    }

    fn cache_list(
        &mut self,
        group: String,
        version: String,
        resource: String,
        namespace: Option<String>,
    ) -> Vec<u8> {
        super::bindings::turtles::controller::host::Host::cache_list(
            self, group, version, resource, namespace,
        )
    }

    fn log(&mut self, level: old::LogLevel, message: String, fields: Vec<(String, String)>) {
        let level = match level {
            old::LogLevel::Trace => wit::LogLevel::Trace,
            old::LogLevel::Debug => wit::LogLevel::Debug,
            old::LogLevel::Info => wit::LogLevel::Info,
            old::LogLevel::Warn => wit::LogLevel::Warn,
            old::LogLevel::Error => wit::LogLevel::Error,
        };
        super::bindings::turtles::controller::host::Host::log(self, level, message, fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 0.1.0 registration means the same in 0.2.0: no initial keys, its own identity.
    #[test]
    fn a_0_1_0_registration_reads_as_0_2_0_without_the_new_fields() {
        let old_reg = old::Registration {
            watches: vec![old::Watch {
                group: "apps".into(),
                version: "v1".into(),
                resource: "replicasets".into(),
                namespace: Some("ns".into()),
                label_selector: Some("a=b".into()),
                mapping: old::KeyMapping::Owner(old::OwnerKind {
                    group: "apps".into(),
                    kind: "Deployment".into(),
                }),
            }],
            max_concurrent_reconciles: 3,
            resync_seconds: Some(30),
            permissions: vec![old::Permission {
                api_groups: vec!["".into()],
                resources: vec!["pods".into()],
                verbs: vec!["get".into()],
            }],
        };
        let new: wit::Registration = old_reg.into();
        assert_eq!(new.watches[0].namespace.as_deref(), Some("ns"));
        assert_eq!(new.watches[0].label_selector.as_deref(), Some("a=b"));
        assert_eq!(
            new.watches[0].mapping,
            wit::KeyMapping::Owner(wit::OwnerKind {
                group: "apps".into(),
                kind: "Deployment".into()
            })
        );
        assert_eq!(new.max_concurrent_reconciles, 3);
        assert_eq!(new.resync_seconds, Some(30));
        assert_eq!(new.permissions[0].resources, vec!["pods".to_string()]);
        assert!(new.initial_keys.is_empty());
        assert_eq!(new.service_account, None);
        let outcome: wit::Outcome = old::Outcome::RequeueAfter(5).into();
        assert_eq!(outcome, wit::Outcome::RequeueAfter(5));
    }
}
