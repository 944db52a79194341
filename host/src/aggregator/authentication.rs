//! kube's cluster-authentication-trust controller: the ConfigMap
//! `kube-system/extension-apiserver-authentication`, from which extension API servers learn which
//! client certificates to trust (`client-ca-file`) and how to trust the front proxy's headers
//! (`requestheader-*`). Written at start-up and every minute, merged with what is there (the
//! union of the CA bundles and of each list), so hosts sharing a store each add their own.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::service::{Service, Subresource, WriteOptions};

pub const NAMESPACE: &str = "kube-system";
pub const NAME: &str = "extension-apiserver-authentication";
const EVERY: Duration = Duration::from_secs(60);

/// What this host contributes.
#[derive(Debug, Clone)]
pub struct Trust {
    /// PEM of the CAs client certificates are verified with (none: no client certificates).
    pub client_ca: Option<String>,
    /// PEM of the front-proxy CAs.
    pub requestheader_ca: String,
    /// The front proxies' common names.
    pub allowed_names: Vec<String>,
}

/// The PEM certificates of a bundle, each as its own normalized PEM block.
fn certificates(pem: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in pem.lines() {
        let line = line.trim();
        if line == "-----BEGIN CERTIFICATE-----" {
            current = Some(format!("{line}\n"));
        } else if let Some(c) = current.as_mut() {
            c.push_str(line);
            c.push('\n');
            if line == "-----END CERTIFICATE-----" {
                if let Some(done) = current.take() {
                    out.push(done);
                }
            }
        }
    }
    out
}

/// The union of two CA bundles, the existing one's certificates first.
fn union_bundle(existing: Option<&str>, mine: &str) -> String {
    let mut all = certificates(existing.unwrap_or(""));
    for c in certificates(mine) {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    all.concat()
}

/// The union of two JSON string lists (as stored: a JSON array in a string).
fn union_list(existing: Option<&str>, mine: &[&str]) -> String {
    let mut all: Vec<String> = existing
        .and_then(|s| serde_json::from_str::<Vec<String>>(s).ok())
        .unwrap_or_default();
    for m in mine {
        if !all.iter().any(|a| a == m) {
            all.push((*m).to_owned());
        }
    }
    serde_json::to_string(&all).unwrap_or_else(|_| "[]".into())
}

/// The ConfigMap's data: `existing` merged with this host's `trust`.
pub fn merged(existing: &Map<String, Value>, trust: &Trust) -> Map<String, Value> {
    let get = |k: &str| existing.get(k).and_then(Value::as_str);
    let mut data = existing.clone();
    if let Some(ca) = &trust.client_ca {
        data.insert(
            "client-ca-file".into(),
            json!(union_bundle(get("client-ca-file"), ca)),
        );
    }
    let names: Vec<&str> = trust.allowed_names.iter().map(String::as_str).collect();
    let lists: [(&str, &[&str]); 5] = [
        ("requestheader-username-headers", &["X-Remote-User"]),
        ("requestheader-uid-headers", &["X-Remote-Uid"]),
        ("requestheader-group-headers", &["X-Remote-Group"]),
        ("requestheader-extra-headers-prefix", &["X-Remote-Extra-"]),
        ("requestheader-allowed-names", &names),
    ];
    for (k, mine) in lists {
        data.insert(k.into(), json!(union_list(get(k), mine)));
    }
    data.insert(
        "requestheader-client-ca-file".into(),
        json!(union_bundle(
            get("requestheader-client-ca-file"),
            &trust.requestheader_ca
        )),
    );
    data
}

/// Write the ConfigMap if it lacks anything of `trust`.
pub async fn publish(service: &Service, trust: &Trust) -> Result<(), crate::model::ApiError> {
    let Some(ri) = service.registry.lookup("", "v1", "configmaps") else {
        return Ok(());
    };
    match service.get(&ri, NAMESPACE, NAME) {
        Ok(current) => {
            let v = current.value();
            let existing = v
                .get("data")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let data = merged(&existing, trust);
            if data == existing {
                return Ok(());
            }
            let mut updated = v.clone();
            updated["data"] = Value::Object(data);
            service
                .update(
                    &ri,
                    NAMESPACE,
                    NAME,
                    updated,
                    Subresource::Main,
                    &WriteOptions::default(),
                )
                .await
                .map(|_| ())
        }
        Err(e) if e.code == 404 => {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
                "data": merged(&Map::new(), trust)});
            match service
                .create(&ri, NAMESPACE, cm, &WriteOptions::default())
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Publish now and every minute until shutdown.
pub async fn keep(
    service: Arc<Service>,
    trust: Trust,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        if let Err(e) = publish(&service, &trust).await {
            tracing::warn!(error = %e, "publishing {NAMESPACE}/{NAME}");
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    const B: &str = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";

    #[test]
    fn a_second_host_adds_its_cas_and_keeps_the_first_ones() {
        let first = merged(
            &Map::new(),
            &Trust {
                client_ca: Some(A.into()),
                requestheader_ca: A.into(),
                allowed_names: vec!["front-proxy-client".into()],
            },
        );
        assert_eq!(
            first["requestheader-allowed-names"],
            "[\"front-proxy-client\"]"
        );
        assert_eq!(
            first["requestheader-username-headers"],
            "[\"X-Remote-User\"]"
        );
        assert_eq!(
            first["requestheader-extra-headers-prefix"],
            "[\"X-Remote-Extra-\"]"
        );
        let second = merged(
            &first,
            &Trust {
                client_ca: Some(A.into()),
                requestheader_ca: B.into(),
                allowed_names: vec!["front-proxy-client".into()],
            },
        );
        assert_eq!(second["client-ca-file"], A);
        assert_eq!(second["requestheader-client-ca-file"], format!("{A}{B}"));
        assert_eq!(
            second["requestheader-allowed-names"],
            "[\"front-proxy-client\"]"
        );
        // Nothing new: nothing to write.
        assert_eq!(
            merged(
                &second,
                &Trust {
                    client_ca: Some(A.into()),
                    requestheader_ca: B.into(),
                    allowed_names: vec!["front-proxy-client".into()],
                }
            ),
            second
        );
    }
}
