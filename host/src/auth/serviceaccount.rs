//! Service account tokens, as kube-apiserver issues them for TokenRequest
//! (`POST .../serviceaccounts/NAME/token`) and accepts them: ES256 JWTs signed with a key kept in
//! `DATA/pki/sa.key`, with kube's claims (`iss`, `sub` = `system:serviceaccount:NS:NAME`, `aud`,
//! `exp`, `iat`, `nbf`, `jti`, and `kubernetes.io` with the namespace and the service account's
//! name and uid). A token authenticates as the service account (groups
//! `system:serviceaccounts`, `system:serviceaccounts:NS`) while it is within its validity, has
//! the API server's audience and the account it names still exists with that uid — and, for a
//! token bound to a Pod, Secret or Node (`boundObjectRef`), while that object does too.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{json, Value};

use super::rbac::UserInfo;
use crate::model::ObjectKey;
use crate::store::Store;

/// kube's issuer and API audience on a kubeadm cluster.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The validity of a token whose request names none (kube's default), and the least allowed.
pub const DEFAULT_EXPIRATION: i64 = 3600;
pub const MIN_EXPIRATION: i64 = 600;
/// The issuer of legacy (Secret) tokens (kube's `serviceaccount.LegacyIssuer`).
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The date a legacy token was last used, on its Secret (kube's `LastUsedLabelKey`).
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// A legacy token whose Secret has this label does not authenticate (kube's
/// `InvalidSinceLabelKey`).
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";
/// Prefix of the `extra` keys of a service account's user (kube's `authentication.kubernetes.io/`).
const EXTRA_PREFIX: &str = "authentication.kubernetes.io/";

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("service account key {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("service account key {0}: not a P-256 PKCS#8 key")]
    Key(PathBuf),
}

pub struct TokenIssuer {
    key: EcdsaKeyPair,
    kid: String,
    store: Arc<dyn Store>,
    legacy_used: std::sync::OnceLock<LegacyUse>,
}

/// Told of a legacy token's use (the Secret's namespace and name).
type LegacyUse = Box<dyn Fn(&str, &str) + Send + Sync>;

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("kid", &self.kid)
            .finish()
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

impl TokenIssuer {
    /// The key in `pki_dir/sa.key`, made on first use (mode 0600).
    pub fn load_or_create(pki_dir: &Path, store: Arc<dyn Store>) -> Result<Self, KeyError> {
        let path = pki_dir.join("sa.key");
        let io = |source| KeyError::Io {
            path: path.clone(),
            source,
        };
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let der = match std::fs::read(&path) {
            Ok(der) => der,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let doc = EcdsaKeyPair::generate_pkcs8(alg, &rng)
                    .map_err(|_| KeyError::Key(path.clone()))?;
                std::fs::create_dir_all(pki_dir).map_err(io)?;
                super::write_private(&path, doc.as_ref()).map_err(io)?;
                doc.as_ref().to_vec()
            }
            Err(e) => return Err(io(e)),
        };
        let key = EcdsaKeyPair::from_pkcs8(alg, &der, &rng).map_err(|_| KeyError::Key(path))?;
        let kid = {
            use sha2::Digest;
            B64.encode(sha2::Sha256::digest(key.public_key().as_ref()))
        };
        Ok(Self {
            key,
            kid,
            store,
            legacy_used: Default::default(),
        })
    }

    /// `/.well-known/openid-configuration`, as kube serves it (with our signing algorithm).
    pub fn openid_configuration(&self) -> Value {
        json!({
            "issuer": ISSUER,
            "jwks_uri": format!("{ISSUER}/openid/v1/jwks"),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    }

    /// `/openid/v1/jwks`: the public key as a JWK set (the uncompressed P-256 point's x and y).
    pub fn jwks(&self) -> Value {
        let point = self.key.public_key().as_ref();
        let (x, y) = point
            .get(1..)
            .unwrap_or_default()
            .split_at(point.len().saturating_sub(1) / 2);
        json!({"keys": [{"use": "sig", "kty": "EC", "kid": self.kid, "crv": "P-256",
                         "alg": "ES256", "x": B64.encode(x), "y": B64.encode(y)}]})
    }

    /// A signed token for the service account `ns/name` (uid `uid`), valid for `seconds`,
    /// bound to the objects in `bound` (kube's TokenRequest `boundObjectRef`). Returns it and its
    /// expiry (seconds since the epoch).
    pub fn issue(
        &self,
        ns: &str,
        name: &str,
        uid: &str,
        audiences: &[String],
        seconds: i64,
        bound: &Bound,
    ) -> Option<(String, i64)> {
        let iat = now();
        let exp = iat.checked_add(seconds)?;
        // kube's private claims, in its field order: namespace, serviceaccount, then the
        // objects the token is bound to.
        let mut k8s = json!({"namespace": ns, "serviceaccount": {"name": name, "uid": uid}});
        for (claim, r) in [
            ("pod", &bound.pod),
            ("secret", &bound.secret),
            ("node", &bound.node),
        ] {
            if let Some(r) = r {
                k8s[claim] = json!({"name": r.name, "uid": r.uid});
            }
        }
        let claims = json!({
            "aud": audiences,
            "exp": exp,
            "iat": iat,
            "iss": ISSUER,
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": k8s,
            "nbf": iat,
            "sub": format!("system:serviceaccount:{ns}:{name}"),
        });
        Some((self.sign(&claims)?, exp))
    }

    /// A legacy token for the Secret `secret` of the service account `ns/name` (uid `uid`), as
    /// kube's token controller puts into `kubernetes.io/service-account-token` Secrets: no
    /// audience and no expiry, issuer `kubernetes/serviceaccount`, kube's `LegacyClaims`.
    pub fn issue_legacy(&self, ns: &str, name: &str, uid: &str, secret: &str) -> Option<String> {
        let claims = json!({
            "iss": LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": ns,
            "kubernetes.io/serviceaccount/secret.name": secret,
            "kubernetes.io/serviceaccount/service-account.name": name,
            "kubernetes.io/serviceaccount/service-account.uid": uid,
            "sub": format!("system:serviceaccount:{ns}:{name}"),
        });
        self.sign(&claims)
    }

    fn sign(&self, claims: &Value) -> Option<String> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let signing_input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let sig = self
            .key
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .ok()?;
        Some(format!("{signing_input}.{}", B64.encode(sig.as_ref())))
    }

    /// Be told of each use of a legacy token's Secret (`namespace`, `name`) whose
    /// `kubernetes.io/legacy-token-last-used` label is not today's (the token controller stamps it).
    pub fn on_legacy_use(&self, f: impl Fn(&str, &str) + Send + Sync + 'static) {
        let _ = self.legacy_used.set(Box::new(f));
    }

    /// The service account a token of ours names, if it is valid now for the API server's
    /// audience.
    pub fn verify(&self, token: &str) -> Option<UserInfo> {
        self.verify_for(token, &[ISSUER]).map(|(user, _)| user)
    }

    /// The service account a token of ours names, if it is valid now for one of `audiences`
    /// (kube's authenticator with audiences in the context, as a TokenReview asks), and the
    /// audiences it is valid for: the token's `aud` that were asked for; a legacy token (no
    /// `aud`) counts as holding the API server's audience, kube's implicit audiences.
    pub fn verify_for<A: AsRef<str>>(
        &self,
        token: &str,
        audiences: &[A],
    ) -> Option<(UserInfo, Vec<String>)> {
        let mut parts = token.split('.');
        let (h, c, s) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let header: Value = serde_json::from_slice(&B64.decode(h).ok()?).ok()?;
        if header["alg"] != "ES256" || header["kid"] != self.kid.as_str() {
            return None;
        }
        let sig = B64.decode(s).ok()?;
        signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            self.key.public_key().as_ref(),
        )
        .verify(format!("{h}.{c}").as_bytes(), &sig)
        .ok()?;
        let claims: Value = serde_json::from_slice(&B64.decode(c).ok()?).ok()?;
        if claims["iss"] == LEGACY_ISSUER {
            if !audiences.iter().any(|a| a.as_ref() == ISSUER) {
                return None;
            }
            return self
                .verify_legacy(token, &claims)
                .map(|u| (u, vec![ISSUER.to_owned()]));
        }
        let t = now();
        let within = claims["nbf"].as_i64().is_some_and(|n| n <= t + 60)
            && claims["exp"].as_i64().is_some_and(|e| t < e);
        // kube's `Audiences.Intersect`: the asked-for audiences the token holds, in the order
        // asked.
        let held: Vec<&str> = claims["aud"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let granted: Vec<String> = audiences
            .iter()
            .map(AsRef::as_ref)
            .filter(|a| held.contains(a))
            .map(str::to_owned)
            .collect();
        if !within || claims["iss"] != ISSUER || granted.is_empty() {
            return None;
        }
        let k = &claims["kubernetes.io"];
        let ns = k["namespace"].as_str()?;
        let name = k["serviceaccount"]["name"].as_str()?;
        let uid = k["serviceaccount"]["uid"].as_str()?;
        if !self.alive(&ObjectKey::new("serviceaccounts", ns, name), uid) {
            return None;
        }
        // A bound token dies with the object it is bound to (kube's claims validator: gone,
        // recreated with another uid, or deleting for longer than the leeway).
        let mut extra = std::collections::BTreeMap::new();
        for (claim, resource, namespace) in [
            ("pod", "pods", ns),
            ("secret", "secrets", ns),
            ("node", "nodes", ""),
        ] {
            let Some(r) = k.get(claim).filter(|r| !r.is_null()) else {
                continue;
            };
            let (Some(n), Some(u)) = (r["name"].as_str(), r["uid"].as_str()) else {
                return None;
            };
            if !self.alive(&ObjectKey::new(resource, namespace, n), u) {
                return None;
            }
            // kube's `ServiceAccountInfo.UserInfo`: the Pod and Node a token is bound to.
            if claim != "secret" {
                extra.insert(format!("{EXTRA_PREFIX}{claim}-name"), vec![n.to_owned()]);
                extra.insert(format!("{EXTRA_PREFIX}{claim}-uid"), vec![u.to_owned()]);
            }
        }
        if let Some(jti) = claims["jti"].as_str() {
            extra.insert(super::CREDENTIAL_ID.to_owned(), vec![format!("JTI={jti}")]);
        }
        let mut user = service_account_user(ns, name, uid);
        user.extra = extra;
        Some((user, granted))
    }

    /// kube's `legacyValidator.Validate`: the claims are complete and agree with each other, the
    /// Secret exists, is not being deleted, still holds exactly this token and is not labelled
    /// invalid; the service account exists with the uid the token names and is not being deleted.
    fn verify_legacy(&self, token: &str, claims: &Value) -> Option<UserInfo> {
        let claim = |k: &str| {
            claims[format!("kubernetes.io/serviceaccount/{k}")]
                .as_str()
                .filter(|v| !v.is_empty())
        };
        let (ns, secret_name) = (claim("namespace")?, claim("secret.name")?);
        let (name, uid) = (
            claim("service-account.name")?,
            claim("service-account.uid")?,
        );
        if claims["sub"].as_str()? != format!("system:serviceaccount:{ns}:{name}") {
            return None;
        }
        let secret = self
            .store
            .get(&ObjectKey::new("secrets", ns, secret_name))?;
        let meta_str = |obj: &crate::store::Head, k: &str| {
            crate::model::meta::meta_str(obj, k).map(str::to_owned)
        };
        if meta_str(secret.head(), "deletionTimestamp").is_some() {
            return None;
        }
        let whole = secret.parse();
        let stored = whole["data"]["token"]
            .as_str()
            .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())?;
        if !constant_time_eq(&stored, token.as_bytes()) {
            return None;
        }
        let sa = self
            .store
            .get(&ObjectKey::new("serviceaccounts", ns, name))?;
        if meta_str(sa.head(), "deletionTimestamp").is_some()
            || meta_str(sa.head(), "uid").as_deref() != Some(uid)
        {
            return None;
        }
        let labels = &whole["metadata"]["labels"];
        let today = chrono::Utc::now().date_naive();
        let last_used = labels[LAST_USED_LABEL].as_str().unwrap_or("");
        let fresh = [today, today + chrono::Days::new(1)]
            .iter()
            .any(|d| d.format("%Y-%m-%d").to_string() == last_used);
        if !fresh {
            if let Some(f) = self.legacy_used.get() {
                f(ns, secret_name);
            }
        }
        if labels
            .get(INVALID_SINCE_LABEL)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
        {
            return None;
        }
        Some(service_account_user(ns, name, uid))
    }
}

/// The user a service account authenticates as (kube's `ServiceAccountInfo.UserInfo`).
fn service_account_user(ns: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        name: format!("system:serviceaccount:{ns}:{name}"),
        uid: uid.to_owned(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
            super::AUTHENTICATED.into(),
        ],
        extra: Default::default(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

impl TokenIssuer {
    /// Whether the object exists with this uid and has not been deleting for longer than
    /// kube's leeway (a minute).
    fn alive(&self, key: &ObjectKey, uid: &str) -> bool {
        let Some(obj) = self.store.get(key) else {
            return false;
        };
        if crate::model::meta::meta_str(obj.head(), "uid") != Some(uid) {
            return false;
        }
        let deleting_since = crate::model::meta::meta_str(obj.head(), "deletionTimestamp")
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp());
        deleting_since.is_none_or(|t| t >= now() - LEEWAY)
    }
}

/// kube's leeway (go-jose's `DefaultLeeway`) for objects being deleted.
const LEEWAY: i64 = 60;

/// One object a token is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundRef {
    pub name: String,
    pub uid: String,
}

/// What a token is bound to (TokenRequest `boundObjectRef`): a Pod (and then also the Node it
/// runs on, as kube 1.32+ records it), a Secret, or a Node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bound {
    pub pod: Option<BoundRef>,
    pub secret: Option<BoundRef>,
    pub node: Option<BoundRef>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Precondition, WriteOp};

    async fn issuer_with_account(label: &str) -> (TokenIssuer, PathBuf) {
        let (store, dir) = crate::store::sled_store::temp_store(label);
        store
            .write(WriteOp::Put {
                key: ObjectKey::new("serviceaccounts", "ns", "sa"),
                value: json!({"apiVersion": "v1", "kind": "ServiceAccount",
                              "metadata": {"name": "sa", "namespace": "ns", "uid": "u1"}}),
                precondition: Precondition::MustNotExist,
            })
            .await
            .unwrap();
        let issuer = TokenIssuer::load_or_create(&dir.join("pki"), store).unwrap();
        (issuer, dir)
    }

    #[tokio::test]
    async fn tokens_verify_only_while_valid_and_unaltered() {
        let (issuer, dir) = issuer_with_account("sa-tokens").await;
        let aud = vec![ISSUER.to_owned()];
        let (token, _) = issuer
            .issue("ns", "sa", "u1", &aud, 600, &Bound::default())
            .unwrap();
        let user = issuer.verify(&token).unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        // Expired, another audience, another uid, a forged signature: refused.
        let (expired, _) = issuer
            .issue("ns", "sa", "u1", &aud, -1, &Bound::default())
            .unwrap();
        assert!(issuer.verify(&expired).is_none());
        let (other, _) = issuer
            .issue(
                "ns",
                "sa",
                "u1",
                &["vault".to_owned()],
                600,
                &Bound::default(),
            )
            .unwrap();
        assert!(issuer.verify(&other).is_none());
        let (stale, _) = issuer
            .issue("ns", "sa", "u0", &aud, 600, &Bound::default())
            .unwrap();
        assert!(issuer.verify(&stale).is_none());
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged_claims = B64.encode(
            String::from_utf8(B64.decode(parts[1]).unwrap())
                .unwrap()
                .replace("\"sa\"", "\"admin\""),
        );
        parts[1] = &forged_claims;
        assert!(issuer.verify(&parts.join(".")).is_none());
        // An outside verifier with only the JWKS checks the signature.
        let jwks = issuer.jwks();
        let jwk = &jwks["keys"][0];
        assert_eq!(jwk["kid"], issuer.kid.as_str());
        let mut point = vec![4u8];
        for c in ["x", "y"] {
            point.extend(B64.decode(jwk[c].as_str().unwrap()).unwrap());
        }
        let (signed, sig) = token.rsplit_once('.').unwrap();
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &point)
            .verify(signed.as_bytes(), &B64.decode(sig).unwrap())
            .unwrap();
        assert_eq!(
            issuer.openid_configuration()["jwks_uri"],
            format!("{ISSUER}/openid/v1/jwks")
        );
        // The key is kept: a second load verifies the first one's tokens.
        let again = TokenIssuer::load_or_create(&dir.join("pki"), issuer.store.clone()).unwrap();
        assert!(again.verify(&token).is_some());
        let _ = std::fs::remove_dir_all(dir);
    }
}
