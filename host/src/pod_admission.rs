//! Two of kube-apiserver's built-in admission plugins for Pods (`plugin/pkg/admission`):
//!
//! - **ServiceAccount**, on create: a Pod runs as `default` unless it names an account; the
//!   account must exist (`default` is looked for again for about a second, as the service
//!   account controller may not have made it yet); unless the Pod or its account opts out
//!   (`automountServiceAccountToken: false`), every container and init container mounts the
//!   projected `kube-api-access-XXXXX` volume (a bound token, the cluster CA, the namespace) at
//!   `/var/run/secrets/kubernetes.io/serviceaccount`; a Pod without `imagePullSecrets` gets its
//!   account's; an account annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the
//!   Secrets its Pods (and their ephemeral containers) may use; mirror Pods may not use accounts
//!   or secrets.
//! - **DefaultTolerationSeconds**, on create and update: a Pod that does not tolerate the
//!   `node.kubernetes.io/not-ready` and `unreachable` `NoExecute` taints tolerates them for 300 s.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::model::{meta, ApiError, ObjectKey, ResourceInfo};
use crate::service::Service;

/// Where the token volume is mounted (kube's `DefaultAPITokenMountPath`).
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The token volume's name prefix (kube's `ServiceAccountVolumeName`).
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The projected token's lifetime (kube's `WarnOnlyBoundTokenExpirationSeconds`).
const TOKEN_SECONDS: i64 = 3607;
const ENFORCE_MOUNTABLE: &str = "kubernetes.io/enforce-mountable-secrets";
const MIRROR: &str = "kubernetes.io/config.mirror";
const DEFAULT: &str = "default";
/// How often `default` is looked for (kube: 10 attempts, 100-200 ms apart).
const DEFAULT_ATTEMPTS: usize = 10;

fn spec(pod: &Value) -> Option<&Map<String, Value>> {
    pod.get("spec").and_then(Value::as_object)
}

fn list<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn is_mirror(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR))
}

/// The ServiceAccount plugin's `Admit` and `Validate` of a Pod's create.
pub async fn service_account(
    svc: &Service,
    ri: &ResourceInfo,
    ns: &str,
    pod: &mut Value,
) -> Result<(), ApiError> {
    if is_mirror(pod) {
        return mirror(ri, pod);
    }
    crate::model::workloads::default_service_account(pod);
    let name = spec(pod)
        .and_then(|s| s.get("serviceAccountName"))
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT)
        .to_owned();
    let sa = lookup(svc, ri, ns, &name, pod).await?;
    if automount(&sa, pod) {
        mount_token(pod);
    }
    let pull = list(&sa, "imagePullSecrets");
    if let Some(s) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        let none = s
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if none && !pull.is_empty() {
            let names: Vec<Value> = pull
                .iter()
                .map(|r| json!({"name": r.get("name").cloned().unwrap_or(json!(""))}))
                .collect();
            s.insert("imagePullSecrets".into(), Value::Array(names));
        }
    }
    if enforces_mountable(&sa) {
        limit_secrets(&sa, pod, false).map_err(|why| forbidden(ri, pod, why))?;
    }
    Ok(())
}

/// The ServiceAccount plugin's `Validate` of a Pod's create, after the mutating webhooks and
/// policies (which may have named another account or added Secrets): the account still exists
/// and still allows what the Pod uses; mirror Pods still use none.
pub async fn validate_create(
    svc: &Service,
    ri: &ResourceInfo,
    ns: &str,
    pod: &Value,
) -> Result<(), ApiError> {
    if is_mirror(pod) {
        return mirror(ri, pod);
    }
    validate_secrets(svc, ri, ns, pod, false).await
}

/// The ServiceAccount plugin's `Validate` of a write to `pods/NAME/ephemeralcontainers`.
pub async fn ephemeral_containers(
    svc: &Service,
    ri: &ResourceInfo,
    ns: &str,
    pod: &Value,
) -> Result<(), ApiError> {
    validate_secrets(svc, ri, ns, pod, true).await
}

/// What both validations check: the Pod names an account, the account exists, and an
/// enforcing account allows the Secrets the Pod (or, for `ephemeral`, its ephemeral
/// containers) use.
async fn validate_secrets(
    svc: &Service,
    ri: &ResourceInfo,
    ns: &str,
    pod: &Value,
    ephemeral: bool,
) -> Result<(), ApiError> {
    let name = spec(pod)
        .and_then(|s| s.get("serviceAccountName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        return Err(forbidden(
            ri,
            pod,
            format!(
                "no service account specified for pod {ns}/{}",
                meta::name(pod)
            ),
        ));
    }
    let sa = lookup(svc, ri, ns, name, pod).await?;
    if enforces_mountable(&sa) {
        limit_secrets(&sa, pod, ephemeral).map_err(|why| forbidden(ri, pod, why))?;
    }
    Ok(())
}

/// Mirror Pods (a kubelet's static Pods) may not use accounts, secrets or token projections.
fn mirror(ri: &ResourceInfo, pod: &Value) -> Result<(), ApiError> {
    let Some(s) = spec(pod) else {
        return Ok(());
    };
    let named = |k: &str| {
        s.get(k)
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
    };
    if named("serviceAccountName") || named("serviceAccount") {
        return Err(forbidden(
            ri,
            pod,
            "a mirror pod may not reference service accounts".into(),
        ));
    }
    if !secret_names(pod).is_empty() {
        return Err(forbidden(
            ri,
            pod,
            "a mirror pod may not reference secrets".into(),
        ));
    }
    let volumes = s
        .get("volumes")
        .and_then(Value::as_array)
        .map(Vec::as_slice);
    let projects_token = volumes.unwrap_or(&[]).iter().any(|v| {
        v.pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|src| src.get("serviceAccountToken").is_some())
    });
    if projects_token {
        return Err(forbidden(
            ri,
            pod,
            "a mirror pod may not use ServiceAccountToken volume projections".into(),
        ));
    }
    Ok(())
}

/// kube's `getServiceAccount`: `default` is looked for again a few times (the controller that
/// makes it may be a moment behind a new namespace), any other name once.
async fn lookup(
    svc: &Service,
    ri: &ResourceInfo,
    ns: &str,
    name: &str,
    pod: &Value,
) -> Result<Value, ApiError> {
    let key = ObjectKey::new("serviceaccounts", ns, name);
    let attempts = if name == DEFAULT { DEFAULT_ATTEMPTS } else { 1 };
    let pause = Duration::from_millis(100 + rand::random::<u64>() % 100);
    for i in 0..attempts {
        if i > 0 {
            tokio::time::sleep(pause).await;
        }
        if let Some(sa) = svc.store.get(&key) {
            return Ok(sa.parse().into_owned());
        }
        // Not in this host's view: on a store shared by several hosts it may have been
        // created through another a moment ago (kube looks it up live on a miss).
        if i == 0 {
            svc.store
                .sync()
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            if let Some(sa) = svc.store.get(&key) {
                return Ok(sa.parse().into_owned());
            }
        }
    }
    Err(forbidden(
        ri,
        pod,
        format!(
            "error looking up service account {ns}/{name}: serviceaccount \"{name}\" not found"
        ),
    ))
}

/// kube's `shouldAutomount`: the Pod's choice, else its account's, else yes.
fn automount(sa: &Value, pod: &Value) -> bool {
    spec(pod)
        .and_then(|s| s.get("automountServiceAccountToken"))
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// kube's `mountServiceAccountToken`: the token volume (an existing `kube-api-access-*` one, or
/// a new one) mounted read-only into every init container and container that has nothing at
/// the token path.
fn mount_token(pod: &mut Value) {
    let Some(s) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let existing = s
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_owned);
    let volume = existing
        .clone()
        .unwrap_or_else(|| format!("{VOLUME_PREFIX}{}", meta::random_suffix()));
    let mut needed = false;
    for field in ["initContainers", "containers"] {
        for c in s
            .get_mut(field)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = c.as_object_mut() else {
                continue;
            };
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            if mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH))
            {
                continue;
            }
            mounts.push(json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}));
            needed = true;
        }
    }
    if needed && existing.is_none() {
        let volumes = s.entry("volumes").or_insert_with(|| json!([]));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(token_volume(&volume));
        }
    }
}

/// kube's `TokenVolumeSource`, as kube stores it (defaults applied).
fn token_volume(name: &str) -> Value {
    json!({"name": name, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
    ], "defaultMode": 420}})
}

/// The account's `kubernetes.io/enforce-mountable-secrets` annotation, read as Go's
/// `strconv.ParseBool`.
fn enforces_mountable(sa: &Value) -> bool {
    matches!(
        sa.pointer("/metadata/annotations")
            .and_then(|a| a.get(ENFORCE_MOUNTABLE))
            .and_then(Value::as_str),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True")
    )
}

/// The Secrets a Pod's volumes, env and pull secrets name (a mirror Pod may use none).
fn secret_names(pod: &Value) -> Vec<String> {
    let Some(s) = pod.get("spec") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut add = |v: Option<&Value>| {
        if let Some(n) = v.and_then(Value::as_str).filter(|n| !n.is_empty()) {
            out.push(n.to_owned());
        }
    };
    for v in list(s, "volumes") {
        add(v.pointer("/secret/secretName"));
        for src in v
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(src.pointer("/secret/name"));
        }
        for p in [
            "cephfs",
            "cinder",
            "flexVolume",
            "rbd",
            "scaleIO",
            "iscsi",
            "storageos",
        ] {
            add(v.pointer(&format!("/{p}/secretRef/name")));
        }
        add(v.pointer("/csi/nodePublishSecretRef/name"));
        add(v.pointer("/azureFile/secretName"));
    }
    for field in ["initContainers", "containers", "ephemeralContainers"] {
        for c in list(s, field) {
            for e in list(c, "env") {
                add(e.pointer("/valueFrom/secretKeyRef/name"));
            }
            for e in list(c, "envFrom") {
                add(e.pointer("/secretRef/name"));
            }
        }
    }
    for r in list(s, "imagePullSecrets") {
        add(r.get("name"));
    }
    out
}

/// kube's `limitSecretReferences` (or, for `ephemeral`, `limitEphemeralContainerSecretReferences`):
/// every Secret the Pod uses must be one of its account's.
fn limit_secrets(sa: &Value, pod: &Value, ephemeral: bool) -> Result<(), String> {
    let sa_name = meta::name(sa);
    // Sets, as kube's: each of a Pod's references is one lookup.
    let mountable: HashSet<&str> = list(sa, "secrets")
        .iter()
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .collect();
    let Some(s) = pod.get("spec") else {
        return Ok(());
    };
    let refused = |what: String, secret: &str| {
        format!("{what} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret")
    };
    let containers: &[(&str, &str)] = if ephemeral {
        &[("ephemeralContainers", "ephemeral container")]
    } else {
        for v in list(s, "volumes") {
            if let Some(secret) = v.pointer("/secret/secretName").and_then(Value::as_str) {
                if !mountable.contains(&secret) {
                    return Err(format!("volume with secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"));
                }
            }
        }
        &[
            ("initContainers", "init container"),
            ("containers", "container"),
        ]
    };
    for (field, kind) in containers {
        for c in list(s, field) {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
            for e in list(c, "env") {
                if let Some(secret) = e
                    .pointer("/valueFrom/secretKeyRef/name")
                    .and_then(Value::as_str)
                {
                    if !mountable.contains(&secret) {
                        let env = e.get("name").and_then(Value::as_str).unwrap_or("");
                        return Err(refused(format!("{kind} {cname} with envVar {env}"), secret));
                    }
                }
            }
            for e in list(c, "envFrom") {
                if let Some(secret) = e.pointer("/secretRef/name").and_then(Value::as_str) {
                    if !mountable.contains(&secret) {
                        return Err(refused(format!("{kind} {cname} with envFrom"), secret));
                    }
                }
            }
        }
    }
    if ephemeral {
        return Ok(());
    }
    let pull: HashSet<&str> = list(sa, "imagePullSecrets")
        .iter()
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .collect();
    for (i, r) in list(s, "imagePullSecrets").iter().enumerate() {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        if !pull.contains(&name) {
            return Err(format!("imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {sa_name} does not reference that imagePullSecret"));
        }
    }
    Ok(())
}

/// DefaultTolerationSeconds: the `not-ready` and `unreachable` `NoExecute` taints tolerated for
/// 300 s by a Pod that does not tolerate them already (an empty key or effect matches).
pub fn default_tolerations(pod: &mut Value) {
    let Some(s) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    const NOT_READY: &str = "node.kubernetes.io/not-ready";
    const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
    let tolerations = s.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = tolerations.as_array_mut() else {
        return;
    };
    let tolerates = |key: &str| {
        list.iter().any(|t| {
            let k = t.get("key").and_then(Value::as_str).unwrap_or("");
            let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
        })
    };
    let missing: Vec<&str> = [NOT_READY, UNREACHABLE]
        .into_iter()
        .filter(|k| !tolerates(k))
        .collect();
    for key in missing {
        list.push(
            json!({"key": key, "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300}),
        );
    }
    if list.is_empty() {
        s.remove("tolerations");
    }
}

fn forbidden(ri: &ResourceInfo, pod: &Value, why: String) -> ApiError {
    crate::priority::forbidden(ri, pod, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn every_container_mounts_the_token_volume_once() {
        let mut p = pod(json!({
            "initContainers": [{"name": "i", "image": "x"}],
            "containers": [
                {"name": "a", "image": "x"},
                {"name": "b", "image": "x", "volumeMounts": [
                    {"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}],
            "volumes": [{"name": "own", "emptyDir": {}}]}));
        mount_token(&mut p);
        let vols = p["spec"]["volumes"].as_array().unwrap();
        assert_eq!(vols.len(), 2);
        let name = vols[1]["name"].as_str().unwrap();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(
            vols[1]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3607
        );
        let mount = json!([{"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}]);
        assert_eq!(p["spec"]["initContainers"][0]["volumeMounts"], mount);
        assert_eq!(p["spec"]["containers"][0]["volumeMounts"], mount);
        // Its own mount at the path wins.
        assert_eq!(
            p["spec"]["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        // Again (an existing kube-api-access volume): nothing new.
        let before = p.clone();
        mount_token(&mut p);
        assert_eq!(p, before);
    }

    #[test]
    fn the_pod_then_the_account_decide_about_the_token() {
        let sa_off = json!({"automountServiceAccountToken": false});
        assert!(!automount(&sa_off, &pod(json!({}))));
        assert!(automount(
            &sa_off,
            &pod(json!({"automountServiceAccountToken": true}))
        ));
        assert!(automount(&json!({}), &pod(json!({}))));
    }

    #[test]
    fn tolerations_are_added_unless_some_already_cover_the_taints() {
        let mut p = pod(json!({}));
        default_tolerations(&mut p);
        let t = p["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[0],
            json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 300})
        );
        // An empty key and effect tolerates everything.
        let mut p = pod(json!({"tolerations": [{"operator": "Exists"}]}));
        default_tolerations(&mut p);
        assert_eq!(p["spec"]["tolerations"].as_array().unwrap().len(), 1);
        // Only the missing one.
        let mut p = pod(
            json!({"tolerations": [{"key": "node.kubernetes.io/unreachable",
            "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]}),
        );
        default_tolerations(&mut p);
        let t = p["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0]["tolerationSeconds"], 10);
        assert_eq!(t[1]["key"], "node.kubernetes.io/not-ready");
    }

    #[test]
    fn an_enforcing_account_limits_the_secrets_its_pods_use() {
        let sa = json!({"metadata": {"name": "sa"}, "secrets": [{"name": "ok"}],
            "imagePullSecrets": [{"name": "pull"}]});
        let fine = pod(
            json!({"volumes": [{"name": "v", "secret": {"secretName": "ok"}}],
            "containers": [{"name": "c", "env": [{"name": "E",
                "valueFrom": {"secretKeyRef": {"name": "ok", "key": "k"}}}]}],
            "imagePullSecrets": [{"name": "pull"}]}),
        );
        assert_eq!(limit_secrets(&sa, &fine, false), Ok(()));
        let vol = pod(json!({"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}));
        assert_eq!(
            limit_secrets(&sa, &vol, false),
            Err("volume with secret.secretName=\"other\" is not allowed because service account sa does not reference that secret".into())
        );
        let env = pod(
            json!({"initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "x"}}]}]}),
        );
        assert_eq!(
            limit_secrets(&sa, &env, false),
            Err("init container i with envFrom referencing secret.secretName=\"x\" is not allowed because service account sa does not reference that secret".into())
        );
        let pull = pod(json!({"imagePullSecrets": [{"name": "pull"}, {"name": "nope"}]}));
        assert_eq!(
            limit_secrets(&sa, &pull, false),
            Err("imagePullSecrets[1].name=\"nope\" is not allowed because service account sa does not reference that imagePullSecret".into())
        );
        let eph = pod(
            json!({"volumes": [{"name": "v", "secret": {"secretName": "other"}}],
            "ephemeralContainers": [{"name": "d", "env": [{"name": "E",
                "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}}]}]}),
        );
        assert_eq!(
            limit_secrets(&sa, &eph, true),
            Err("ephemeral container d with envVar E referencing secret.secretName=\"x\" is not allowed because service account sa does not reference that secret".into())
        );
        assert!(enforces_mountable(
            &json!({"metadata": {"annotations": {ENFORCE_MOUNTABLE: "true"}}})
        ));
        assert!(!enforces_mountable(
            &json!({"metadata": {"annotations": {ENFORCE_MOUNTABLE: "yes"}}})
        ));
    }
}
