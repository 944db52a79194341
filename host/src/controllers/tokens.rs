//! The token controller, as kube-controller-manager's `serviceaccount-token-controller`:
//! a Secret of type `kubernetes.io/service-account-token` that names a ServiceAccount
//! (annotation `kubernetes.io/service-account.name`) gets a legacy token for it, the cluster's
//! CA (`ca.crt`) and its namespace, and the account's uid as an annotation; a token Secret whose
//! account does not exist (or has another uid than the Secret names) is deleted, as are the
//! token Secrets of an account when it goes. It also stamps `kubernetes.io/legacy-token-last-used`
//! on a Secret whose token authenticates (kube-apiserver does that in the authenticator; here
//! the authenticator hands it to this controller, so no write happens on the request path).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use super::{terminating, uid, Follower, Observed, Reconciled};
use crate::auth::serviceaccount::{TokenIssuer, LAST_USED_LABEL};
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::patch::PatchType;
use crate::service::{DeleteOptions, Service, Subresource, WriteOptions};

pub const IDENTITY: super::Identity = super::Identity {
    name: "serviceaccount-token-controller",
    description: "Puts a token, the cluster CA and the namespace into kubernetes.io/service-account-token Secrets; deletes those of ServiceAccounts that are gone.",
    workers: 2,
};
/// The type of a Secret holding a legacy service account token.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming a token Secret's ServiceAccount, and the one with its uid.
pub const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
pub const SA_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
const SECRETS: &str = "secrets";
const SERVICEACCOUNTS: &str = "serviceaccounts";

pub struct TokenController {
    base: super::Base<(String, String)>,
    issuer: Arc<TokenIssuer>,
    /// The cluster's CA bundle (PEM), if the host serves TLS.
    root_ca: Option<Arc<str>>,
    /// Secrets whose token was used since their last-used label was stamped.
    used: Mutex<HashSet<(String, String)>>,
}

impl TokenController {
    pub fn new(
        service: Arc<Service>,
        issuer: Arc<TokenIssuer>,
        root_ca: Option<Arc<str>>,
    ) -> Arc<Self> {
        let this = Arc::new(Self {
            base: super::Base::new(service),
            issuer: issuer.clone(),
            root_ca,
            used: Mutex::default(),
        });
        let weak = Arc::downgrade(&this);
        issuer.on_legacy_use(move |ns, name| {
            if let Some(this) = weak.upgrade() {
                let key = (ns.to_owned(), name.to_owned());
                if let Ok(mut used) = this.used.lock() {
                    used.insert(key.clone());
                }
                this.base.queue.add(key);
            }
        });
        this
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    fn resource(&self, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.base.service.registry.lookup("", "v1", resource)
    }

    async fn reconcile(&self, ns: &str, name: &str) -> Reconciled {
        let Some(ri) = self.resource(SECRETS) else {
            return Ok(None);
        };
        let store = &self.base.service.store;
        let Some(secret) = store.get(&ObjectKey::new(SECRETS, ns, name)) else {
            return Ok(None);
        };
        let secret = &*secret.parse();
        if secret["type"] != TOKEN_SECRET_TYPE || terminating(secret) {
            return Ok(None);
        }
        let annotations = &secret["metadata"]["annotations"];
        let sa_name = annotations[SA_NAME_ANNOTATION].as_str().unwrap_or("");
        let want_uid = annotations[SA_UID_ANNOTATION].as_str().unwrap_or("");
        if sa_name.is_empty() {
            // Validation requires the annotation; one stored before that is left alone.
            return Ok(None);
        }
        let sa = store
            .get(&ObjectKey::new(SERVICEACCOUNTS, ns, sa_name))
            .filter(|sa| want_uid.is_empty() || uid(sa.head()) == want_uid);
        let Some(sa) = sa else {
            // kube's syncSecret: no such account (or another one by that name) -> delete the
            // token, guarded by the Secret's uid.
            let opts = DeleteOptions {
                precondition_uid: Some(uid(secret).to_owned()),
                ..Default::default()
            };
            return match self.base.service.delete(&ri, ns, name, &opts).await {
                Ok(_) => Ok(None),
                Err(e) if e.code == 404 || e.code == 409 => Ok(None),
                Err(e) => Err(e.into()),
            };
        };
        if let Some(updated) = self.populated(secret, &sa.parse()) {
            super::write_back(
                &self.base.service,
                &ri,
                ns,
                name,
                updated,
                Subresource::Main,
            )
            .await?;
        }
        let used = self
            .used
            .lock()
            .map(|mut u| u.remove(&(ns.to_owned(), name.to_owned())))
            .unwrap_or(false);
        if used {
            self.stamp_last_used(&ri, ns, name, uid(secret)).await?;
        }
        Ok(None)
    }

    /// kube's `generateTokenIfNeeded`: the Secret with what it lacks (a token, the CA, the
    /// namespace) and the account's name and uid annotations, or `None` when it lacks nothing.
    fn populated(&self, secret: &Value, sa: &Value) -> Option<Value> {
        let data = &secret["data"];
        let decoded = |k: &str| data[k].as_str().and_then(|v| B64.decode(v).ok());
        let ns = meta::namespace(secret);
        let needs_token = decoded("token").is_none_or(|t| t.is_empty());
        let needs_ca = self
            .root_ca
            .as_deref()
            .is_some_and(|ca| decoded("ca.crt").as_deref() != Some(ca.as_bytes()));
        let needs_namespace = decoded("namespace").as_deref() != Some(ns.as_bytes());
        if !needs_token && !needs_ca && !needs_namespace {
            return None;
        }
        let mut out = secret.clone();
        let (sa_name, sa_uid) = (meta::name(sa), uid(sa));
        if !out["data"].is_object() {
            out["data"] = json!({});
        }
        if let Some(ca) = self.root_ca.as_deref() {
            out["data"]["ca.crt"] = json!(B64.encode(ca));
        }
        out["data"]["namespace"] = json!(B64.encode(ns));
        if needs_token {
            let token = self
                .issuer
                .issue_legacy(ns, sa_name, sa_uid, meta::name(secret))?;
            out["data"]["token"] = json!(B64.encode(token));
        }
        if !out["metadata"]["annotations"].is_object() {
            out["metadata"]["annotations"] = json!({});
        }
        out["metadata"]["annotations"][SA_NAME_ANNOTATION] = json!(sa_name);
        out["metadata"]["annotations"][SA_UID_ANNOTATION] = json!(sa_uid);
        Some(out)
    }

    /// kube's `patchSecretWithLastUsedDate`: a merge patch of the label with today's date (UTC),
    /// guarded by the Secret's uid.
    async fn stamp_last_used(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        secret_uid: &str,
    ) -> Reconciled {
        let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
        let patch = json!({"metadata": {"uid": secret_uid, "labels": {LAST_USED_LABEL: today}}});
        match self
            .base
            .service
            .patch(
                ri,
                ns,
                name,
                PatchType::Merge,
                patch.to_string().as_bytes(),
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

    /// The token Secrets in `ns` that name the account `sa`.
    fn secrets_of(&self, ns: &str, sa: &str) -> Vec<String> {
        let Ok(snap) = self.base.service.store.list(SECRETS, None) else {
            return Vec::new();
        };
        snap.items
            .values()
            .filter(|o| meta::namespace(o.head()) == ns)
            .filter(|o| {
                let s = o.parse();
                s["type"] == TOKEN_SECRET_TYPE
                    && s["metadata"]["annotations"][SA_NAME_ANNOTATION] == sa
            })
            .map(|o| meta::name(o.head()).to_owned())
            .collect()
    }
}

impl super::Reconcile<(String, String)> for TokenController {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for TokenController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        let v = obj.head();
        if !ri.group.is_empty() {
            return;
        }
        let ns = meta::namespace(v);
        if ri.resource == SECRETS
            && how != Observed::Deleted
            && obj.parse()["type"] == TOKEN_SECRET_TYPE
        {
            self.base
                .queue
                .add((ns.to_owned(), meta::name(v).to_owned()));
        } else if ri.resource == SERVICEACCOUNTS && how == Observed::Deleted {
            // An account that goes takes its tokens along (kube's syncServiceAccount acts only
            // then). Not on every change: each scan reads every Secret, and a tenant may patch
            // an account in a loop.
            for secret in self.secrets_of(ns, meta::name(v)) {
                self.base.queue.add((ns.to_owned(), secret));
            }
        }
    }
}
