//! `registry-policy`: a validating admission policy. Every container, init container and ephemeral
//! container image of a Pod, or of the Pod template of a Deployment, ReplicaSet, StatefulSet,
//! DaemonSet, Job or CronJob, must come from an allowed registry and name a version: a tag other
//! than `latest`, or a digest (`@sha256:...`, tag or not).
//!
//! The allowed registries are the key `allowedRegistries` of the ConfigMap
//! `turtles-system/registry-policy`, comma separated (`registry.k8s.io,ghcr.io/acme`); without it,
//! only `registry.k8s.io`, with a warning. An image comes from a registry when its full name
//! starts with `REGISTRY/`: Docker Hub short names are `docker.io/library/NAME`
//! (`nginx` -> `docker.io/library/nginx`), so `docker.io` allows them all and
//! `docker.io/library` only the official images.
//!
//! On an update, a container whose name and image the stored object has already is not checked
//! again (ratcheting, as kube validates updates): an object admitted before the allowed list
//! changed can still be labelled, scaled or have its finalizers removed; changing or adding an
//! image is checked.

use std::collections::HashSet;

use turtles_controller::admission::{
    cache, log, LogLevel, Operation, Permission, Policy, Registration, Request, Rule, Verdict,
};
use turtles_controller::{Gvr, Value};

/// Where the allowed registries are configured.
pub const CONFIG_NAMESPACE: &str = "turtles-system";
/// The ConfigMap's name.
pub const CONFIG_NAME: &str = "registry-policy";
/// Its key: registries, comma separated.
pub const CONFIG_KEY: &str = "allowedRegistries";
/// The allowed registry when the ConfigMap (or its key) is missing.
pub const DEFAULT_REGISTRY: &str = "registry.k8s.io";

pub struct RegistryPolicy;

impl Policy for RegistryPolicy {
    fn register() -> Registration {
        let ops = [Operation::Create, Operation::Update];
        // `pods/ephemeralcontainers`: ephemeral containers are only ever added through it.
        Registration::validating(Rule::core(&["pods", "pods/ephemeralcontainers"]).operations(&ops))
            .rule(
                Rule::group(
                    "apps",
                    "v1",
                    &["deployments", "replicasets", "statefulsets", "daemonsets"],
                )
                .operations(&ops),
            )
            .rule(Rule::group("batch", "v1", &["jobs", "cronjobs"]).operations(&ops))
            .permission(Permission::core(&["configmaps"], &["get", "list"]))
    }

    fn validate(request: &Request) -> Verdict {
        let Some(object) = &request.object else {
            return Verdict::allow();
        };
        let (allowed, defaulted) = match allowed_registries() {
            Some(list) => (list, false),
            None => (vec![DEFAULT_REGISTRY.to_string()], true),
        };
        let pointer = pod_spec_pointer(&request.resource.resource);
        let old_spec = request
            .old_object
            .as_ref()
            .filter(|_| request.is_update())
            .and_then(|old| old.pointer(pointer));
        let offenses = match object.pointer(pointer) {
            Some(spec) => check_pod_spec(spec, old_spec, &allowed),
            None => Vec::new(),
        };
        let mut verdict = if offenses.is_empty() {
            Verdict::allow()
        } else {
            let message = aggregate(&offenses);
            log::log(
                LogLevel::Info,
                "denied",
                &[
                    ("resource", request.resource.resource.as_str()),
                    ("namespace", request.namespace.as_str()),
                    ("name", request.name.as_str()),
                    ("reason", message.as_str()),
                ],
            );
            Verdict::deny(message)
        };
        if defaulted {
            verdict = verdict.warn(format!(
                "registry-policy: no ConfigMap {CONFIG_NAMESPACE}/{CONFIG_NAME} with key \
                 {CONFIG_KEY}: only the default registry {DEFAULT_REGISTRY} is allowed"
            ));
        }
        verdict
    }
}

turtles_controller::export_policy!(RegistryPolicy);

/// The configured registries, `None` when the ConfigMap, its key or any entry is missing.
fn allowed_registries() -> Option<Vec<String>> {
    let cm = cache::get(Gvr::CONFIGMAPS, CONFIG_NAMESPACE, CONFIG_NAME)?;
    let list = parse_registries(cm.pointer(&format!("/data/{CONFIG_KEY}"))?.as_str()?);
    (!list.is_empty()).then_some(list)
}

/// `"registry.k8s.io, ghcr.io/acme/"` -> `["registry.k8s.io", "ghcr.io/acme"]`.
pub fn parse_registries(s: &str) -> Vec<String> {
    s.split(',')
        .map(|r| r.trim().trim_end_matches('/'))
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where the Pod spec is in an object of this resource.
pub fn pod_spec_pointer(resource: &str) -> &'static str {
    match resource {
        "pods" => "/spec",
        "cronjobs" => "/spec/jobTemplate/spec/template/spec",
        _ => "/spec/template/spec",
    }
}

/// An image reference, split the way container runtimes resolve it.
#[derive(Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// The registry host (with its port), `docker.io` for Docker Hub names.
    pub registry: String,
    /// The full name without tag and digest: `docker.io/library/nginx`.
    pub name: String,
    /// The tag, if any.
    pub tag: Option<String>,
    /// The digest (`sha256:...`), if any.
    pub digest: Option<String>,
}

/// Parses an image reference (`nginx`, `nginx:1.27`, `ghcr.io/acme/app@sha256:...`,
/// `localhost:5000/app:v1`).
pub fn parse_image(image: &str) -> ImageRef {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d.to_string())),
        None => (image, None),
    };
    // A tag is after the last ':' that follows the last '/' (a ':' before it is a registry port).
    let last_slash = rest.rfind('/');
    let (path, tag) = match rest.rfind(':') {
        Some(i) if last_slash.is_none_or(|s| i > s) => {
            (&rest[..i], Some(rest[i + 1..].to_string()))
        }
        _ => (rest, None),
    };
    let (registry, repo) = match path.split_once('/') {
        Some((first, repo))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first, repo)
        }
        _ => ("docker.io", path),
    };
    let registry = if registry == "index.docker.io" {
        "docker.io"
    } else {
        registry
    };
    let name = if registry == "docker.io" && !repo.contains('/') {
        format!("docker.io/library/{repo}")
    } else {
        format!("{registry}/{repo}")
    };
    ImageRef {
        registry: registry.to_string(),
        name,
        tag,
        digest,
    }
}

/// What is wrong with `image` (empty: nothing).
pub fn image_problems(image: &str, allowed: &[String]) -> Vec<String> {
    let r = parse_image(image);
    let mut problems = Vec::new();
    if !allowed.iter().any(|a| r.name.starts_with(&format!("{a}/"))) {
        problems.push(format!(
            "registry {:?} is not allowed (allowed: {})",
            r.registry,
            allowed.join(", ")
        ));
    }
    if r.digest.is_none() {
        match r.tag.as_deref() {
            None => problems.push("the image has no tag (\"latest\" is implied)".to_string()),
            Some("latest") => problems.push("the tag \"latest\" is not allowed".to_string()),
            Some(_) => {}
        }
    }
    problems
}

/// The containers of a Pod spec: (what it is, container name, image).
fn containers(spec: &Value) -> impl Iterator<Item = (&'static str, &str, &str)> {
    [
        ("containers", "container"),
        ("initContainers", "init container"),
        ("ephemeralContainers", "ephemeral container"),
    ]
    .into_iter()
    .flat_map(move |(field, what)| {
        spec.get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(move |c| {
                let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
                (what, s("name"), s("image"))
            })
    })
}

/// One message per offending container of `spec`, kube style. Containers whose name and image
/// are in `old_spec` (the stored object on an update) are not checked; nor are empty images
/// (kube's validation refuses those).
pub fn check_pod_spec(spec: &Value, old_spec: Option<&Value>, allowed: &[String]) -> Vec<String> {
    let old: HashSet<(&str, &str)> = old_spec
        .map(|o| containers(o).map(|(_, n, i)| (n, i)).collect())
        .unwrap_or_default();
    containers(spec)
        .filter(|(_, name, image)| !image.is_empty() && !old.contains(&(*name, *image)))
        .filter_map(|(what, name, image)| {
            let problems = image_problems(image, allowed);
            (!problems.is_empty())
                .then(|| format!("{what} {name:?} image {image:?}: {}", problems.join("; ")))
        })
        .collect()
}

/// One error as it is, several as kube aggregates them: `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turtles_controller::json;

    fn allowed(list: &str) -> Vec<String> {
        parse_registries(list)
    }

    #[test]
    fn images_parse_as_runtimes_resolve_them() {
        let r = parse_image("nginx");
        assert_eq!(
            (r.registry.as_str(), r.name.as_str(), r.tag, r.digest),
            ("docker.io", "docker.io/library/nginx", None, None)
        );
        let r = parse_image("bitnami/redis:7.2");
        assert_eq!(r.name, "docker.io/bitnami/redis");
        assert_eq!(r.tag.as_deref(), Some("7.2"));
        let r = parse_image("localhost:5000/app");
        assert_eq!(
            (r.registry.as_str(), r.name.as_str(), r.tag),
            ("localhost:5000", "localhost:5000/app", None)
        );
        let r = parse_image("registry.k8s.io/pause:3.10@sha256:abc");
        assert_eq!(r.name, "registry.k8s.io/pause");
        assert_eq!(r.tag.as_deref(), Some("3.10"));
        assert_eq!(r.digest.as_deref(), Some("sha256:abc"));
        assert_eq!(
            parse_image("index.docker.io/nginx:1").name,
            "docker.io/library/nginx"
        );
        assert_eq!(
            parse_image("docker.io/nginx:1").name,
            "docker.io/library/nginx"
        );
        assert_eq!(parse_image("ghcr.io/acme/tools/x:v1").registry, "ghcr.io");
    }

    #[test]
    fn registries_tags_and_digests() {
        let k8s = allowed("registry.k8s.io");
        assert!(image_problems("registry.k8s.io/pause:3.10", &k8s).is_empty());
        assert!(image_problems("registry.k8s.io/pause@sha256:abc", &k8s).is_empty());
        assert!(image_problems("registry.k8s.io/pause:latest@sha256:abc", &k8s).is_empty());
        assert_eq!(
            image_problems("nginx:latest", &k8s),
            vec![
                "registry \"docker.io\" is not allowed (allowed: registry.k8s.io)",
                "the tag \"latest\" is not allowed"
            ]
        );
        assert_eq!(
            image_problems("registry.k8s.io/pause", &k8s),
            vec!["the image has no tag (\"latest\" is implied)"]
        );
        // A registry is a prefix of whole path segments.
        assert!(!image_problems("registry.k8s.io.evil.com/pause:1", &k8s).is_empty());
        let acme = allowed(" registry.k8s.io , ghcr.io/acme/,,");
        assert_eq!(acme, vec!["registry.k8s.io", "ghcr.io/acme"]);
        assert!(image_problems("ghcr.io/acme/app:v1", &acme).is_empty());
        assert!(!image_problems("ghcr.io/acmeco/app:v1", &acme).is_empty());
        assert!(!image_problems("ghcr.io/other/app:v1", &acme).is_empty());
        let hub = allowed("docker.io/library");
        assert!(image_problems("nginx:1.27", &hub).is_empty());
        assert!(!image_problems("bitnami/redis:7", &hub).is_empty());
        assert!(image_problems("bitnami/redis:7", &allowed("docker.io")).is_empty());
    }

    #[test]
    fn a_pod_spec_lists_every_offending_container() {
        let spec = json!({
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [
                {"name": "web", "image": "nginx:latest"},
                {"name": "ok", "image": "registry.k8s.io/pause:3.10"},
            ],
            "ephemeralContainers": [{"name": "debug", "image": "registry.k8s.io/debug:latest"}],
        });
        let offenses = check_pod_spec(&spec, None, &allowed("registry.k8s.io"));
        assert_eq!(
            offenses,
            vec![
                "container \"web\" image \"nginx:latest\": registry \"docker.io\" is not allowed \
                 (allowed: registry.k8s.io); the tag \"latest\" is not allowed",
                "init container \"init\" image \"busybox\": registry \"docker.io\" is not allowed \
                 (allowed: registry.k8s.io); the image has no tag (\"latest\" is implied)",
                "ephemeral container \"debug\" image \"registry.k8s.io/debug:latest\": the tag \
                 \"latest\" is not allowed",
            ]
        );
        assert!(aggregate(&offenses).starts_with("[container \"web\""));
        assert_eq!(aggregate(&offenses[..1]), offenses[0]);
        // On an update, what was stored already is not checked again; a changed image is.
        let old = json!({"containers": [{"name": "web", "image": "nginx:latest"}],
                         "initContainers": [{"name": "init", "image": "busybox:old"}]});
        let offenses = check_pod_spec(&spec, Some(&old), &allowed("registry.k8s.io"));
        assert_eq!(offenses.len(), 2);
        assert!(offenses[0].starts_with("init container \"init\""));
    }

    #[test]
    fn pod_specs_are_found_per_resource() {
        let cronjob =
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}});
        assert!(cronjob.pointer(pod_spec_pointer("cronjobs")).is_some());
        let deploy = json!({"spec": {"template": {"spec": {"containers": []}}}});
        for r in [
            "deployments",
            "replicasets",
            "statefulsets",
            "daemonsets",
            "jobs",
        ] {
            assert!(deploy.pointer(pod_spec_pointer(r)).is_some());
        }
        assert_eq!(pod_spec_pointer("pods"), "/spec");
    }
}
