use serde_json::{json, Value};

use crate::auth::rbac::UserInfo;
use crate::service::{Service, WriteOptions};

const GROUP: &str = "admissionregistration.k8s.io";

async fn service(label: &str) -> (Service, std::path::PathBuf) {
    let (store, dir) = crate::store::sled_store::temp_store(label);
    let registry = std::sync::Arc::new(crate::model::Registry::with_builtins());
    let svc = Service::new(store, registry);
    svc.bootstrap().await.unwrap();
    (svc, dir)
}

fn as_user(name: &str) -> WriteOptions {
    WriteOptions {
        user: Some(UserInfo {
            name: name.into(),
            uid: String::new(),
            groups: vec!["system:authenticated".into()],
            extra: Default::default(),
        }),
        ..Default::default()
    }
}

async fn put(svc: &Service, resource: &str, group: &str, obj: Value) {
    let ri = svc.registry.lookup(group, "v1", resource).unwrap();
    svc.create(&ri, "", obj, &WriteOptions::default())
        .await
        .unwrap();
}

/// A policy on configmaps (or `resource` in `group`) with its binding `<name>-b`.
async fn policy_on(svc: &Service, name: &str, group: &str, resource: &str, spec: Value) {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": [resource]}]});
    put(
        svc,
        "mutatingadmissionpolicies",
        GROUP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
               "metadata": {"name": name}, "spec": spec}),
    )
    .await;
    put(
        svc,
        "mutatingadmissionpolicybindings",
        GROUP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
               "metadata": {"name": format!("{name}-b")}, "spec": {"policyName": name}}),
    )
    .await;
}

async fn policy(svc: &Service, name: &str, spec: Value) {
    policy_on(svc, name, "", "configmaps", spec).await;
}

fn apply(expr: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expr}})
}

fn patch(expr: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expr}})
}

async fn create_cm(svc: &Service, obj: Value) -> Result<Value, crate::model::ApiError> {
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    svc.create(&cms, "default", obj, &as_user("u"))
        .await
        .map(|w| w.object.value().clone())
}

#[tokio::test]
async fn apply_configuration_and_json_patch_mutate_in_order() {
    let (svc, dir) = service("map-unit-mutate").await;
    policy(
        &svc,
        "a-label",
        json!({"matchConditions": [{"name": "not-skipped", "expression": "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"}],
               "mutations": [
            apply("Object{metadata: Object.metadata{labels: {'team': 'blue'}}}"),
            patch("[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/team'), value: object.metadata.labels.team}]"),
            // A failed test leaves the object as it is, without an error.
            patch("[JSONPatch{op: 'test', path: '/data/x', value: 'nope'}, JSONPatch{op: 'add', path: '/data/y', value: 'added'}]"),
        ]}),
    )
    .await;
    let cm = create_cm(
        &svc,
        json!({"metadata": {"name": "c", "labels": {"app": "web"}}, "data": {"x": "1"}}),
    )
    .await
    .unwrap();
    assert_eq!(
        cm["metadata"]["labels"],
        json!({"app": "web", "team": "blue"})
    );
    assert_eq!(cm["metadata"]["annotations"]["example.com/team"], "blue");
    assert_eq!(cm["data"], json!({"x": "1"}));
    // matchConditions false: the policy does not apply.
    let cm = create_cm(
        &svc,
        json!({"metadata": {"name": "skipped", "labels": {"skip": "1"}}}),
    )
    .await
    .unwrap();
    assert_eq!(cm["metadata"]["labels"], json!({"skip": "1"}));
    assert!(cm["metadata"].get("annotations").is_none());
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn errors_follow_the_failure_policy() {
    let (svc, dir) = service("map-unit-errors").await;
    policy(
        &svc,
        "boom",
        json!({"failurePolicy": "Fail", "mutations": [apply("Object{data: {'v': string(1/0)}}")]}),
    )
    .await;
    let err = create_cm(&svc, json!({"metadata": {"name": "c"}}))
        .await
        .unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, "Invalid");
    assert!(
        err.message.starts_with(
            "policy 'boom' with binding 'boom-b' denied request: expression 'Object{data: {'v': string(1/0)}}' resulted in error: "
        ),
        "{}",
        err.message
    );
    // The same under Ignore: the object is admitted unchanged.
    let (svc2, dir2) = service("map-unit-ignore").await;
    policy(
        &svc2,
        "boom",
        json!({"failurePolicy": "Ignore", "mutations": [apply("Object{data: {'v': string(1/0)}}")]}),
    )
    .await;
    let cm = create_cm(
        &svc2,
        json!({"metadata": {"name": "c"}, "data": {"a": "b"}}),
    )
    .await
    .unwrap();
    assert_eq!(cm["data"], json!({"a": "b"}));
    std::fs::remove_dir_all(dir).ok();
    std::fs::remove_dir_all(dir2).ok();
}

#[tokio::test]
async fn atomic_fields_and_mismatched_types_are_refused() {
    let (svc, dir) = service("map-unit-atomic").await;
    policy_on(
        &svc,
        "selector",
        "apps",
        "deployments",
        json!({"mutations": [apply("Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {'a': 'b'}}}}")]}),
    )
    .await;
    // A mismatched type is refused when the policy is written (kube's compiler types it).
    let maps = svc
        .registry
        .lookup(GROUP, "v1", "mutatingadmissionpolicies")
        .unwrap();
    let err = svc
        .create(
            &maps,
            "",
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
                   "metadata": {"name": "wrong-type"}, "spec": {
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "mutations": [apply("Object{metadata: Object.spec{labels: {'a': 'b'}}}")]}}),
            &WriteOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(
            "type mismatch: unexpected type name \"Object.spec\", expected \"Object.metadata\""
        ),
        "{}",
        err.message
    );
    let deploys = svc.registry.lookup("apps", "v1", "deployments").unwrap();
    let err = svc
        .create(
            &deploys,
            "default",
            json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
                "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "policy 'selector' with binding 'selector-b' denied request: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn if_needed_policies_are_reinvoked_after_a_later_change() {
    let (svc, dir) = service("map-unit-reinvoke").await;
    // `a-copy` runs first and copies label `src` (set by `b-source`, after it) to `copy`.
    let copy = "has(object.metadata.labels) && 'src' in object.metadata.labels ? Object{metadata: Object.metadata{labels: {'copy': object.metadata.labels['src']}}} : Object{}";
    policy(
        &svc,
        "a-copy",
        json!({"reinvocationPolicy": "IfNeeded", "mutations": [apply(copy)]}),
    )
    .await;
    policy(
        &svc,
        "b-source",
        json!({"mutations": [apply("Object{metadata: Object.metadata{labels: {'src': 'v'}}}")]}),
    )
    .await;
    let cm = create_cm(&svc, json!({"metadata": {"name": "c"}}))
        .await
        .unwrap();
    assert_eq!(cm["metadata"]["labels"], json!({"src": "v", "copy": "v"}));
    // Never: not reinvoked.
    let (svc2, dir2) = service("map-unit-never").await;
    policy(
        &svc2,
        "a-copy",
        json!({"reinvocationPolicy": "Never", "mutations": [apply(copy)]}),
    )
    .await;
    policy(
        &svc2,
        "b-source",
        json!({"mutations": [apply("Object{metadata: Object.metadata{labels: {'src': 'v'}}}")]}),
    )
    .await;
    let cm = create_cm(&svc2, json!({"metadata": {"name": "c"}}))
        .await
        .unwrap();
    assert_eq!(cm["metadata"]["labels"], json!({"src": "v"}));
    std::fs::remove_dir_all(dir).ok();
    std::fs::remove_dir_all(dir2).ok();
}

#[tokio::test]
async fn params_come_from_the_binding() {
    let (svc, dir) = service("map-unit-params").await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    svc.create(
        &cms,
        "default",
        json!({"metadata": {"name": "defaults"}, "data": {"team": "red"}}),
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    put(
        &svc,
        "mutatingadmissionpolicies",
        GROUP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
               "metadata": {"name": "team"}, "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "matchConditions": [{"name": "not-params", "expression": "object.metadata.name != 'defaults'"}],
                "variables": [{"name": "team", "expression": "params.data.team"}],
                "mutations": [apply("Object{metadata: Object.metadata{labels: {'team': variables.team}}}")]}}),
    )
    .await;
    put(
        &svc,
        "mutatingadmissionpolicybindings",
        GROUP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
               "metadata": {"name": "team-b"}, "spec": {"policyName": "team",
                "paramRef": {"name": "defaults", "parameterNotFoundAction": "Deny"}}}),
    )
    .await;
    let cm = create_cm(&svc, json!({"metadata": {"name": "c"}}))
        .await
        .unwrap();
    assert_eq!(cm["metadata"]["labels"], json!({"team": "red"}));
    std::fs::remove_dir_all(dir).ok();
}

/// kube's `BeforeCreate` runs after mutating admission: a mutation cannot set the system fields,
/// a name it sets is kept over `generateName`, and a Namespace keeps the finalizers it added.
#[tokio::test]
async fn system_fields_are_set_after_mutation() {
    let (svc, dir) = service("map-unit-system").await;
    policy(
        &svc,
        "tamper",
        json!({"mutations": [patch(
            "[JSONPatch{op: 'add', path: '/metadata/uid', value: 'tampered'}, JSONPatch{op: 'add', path: '/metadata/name', value: 'chosen'}]"
        )]}),
    )
    .await;
    let cm = create_cm(&svc, json!({"metadata": {"generateName": "gen-"}}))
        .await
        .unwrap();
    assert_eq!(cm["metadata"]["name"], "chosen", "{cm}");
    assert_ne!(cm["metadata"]["uid"], "tampered", "{cm}");
    assert_eq!(cm["metadata"]["uid"].as_str().unwrap().len(), 36, "{cm}");
    policy_on(
        &svc,
        "ns-finalizer",
        "",
        "namespaces",
        json!({"mutations": [patch(
            "[JSONPatch{op: 'add', path: '/spec', value: {'finalizers': ['example.com/keep']}}]"
        )]}),
    )
    .await;
    let namespaces = svc.registry.lookup("", "v1", "namespaces").unwrap();
    let ns = svc
        .create(
            &namespaces,
            "",
            json!({"metadata": {"name": "fin"}}),
            &as_user("u"),
        )
        .await
        .unwrap();
    assert_eq!(
        ns.object.value()["spec"]["finalizers"],
        json!(["example.com/keep", "kubernetes"])
    );
    std::fs::remove_dir_all(dir).ok();
}

/// kube's `SetDefaults_Namespace` and the namespace strategy's `Canonicalize`: every Namespace
/// carries `kubernetes.io/metadata.name: <name>`, whatever the client or a mutation sent, set
/// after admission, on generated names too, and kept on update.
#[tokio::test]
async fn namespaces_carry_their_name_as_a_label() {
    let (svc, dir) = service("map-unit-nslabel").await;
    let label = |v: &Value| v["metadata"]["labels"]["kubernetes.io/metadata.name"].clone();
    let default = svc
        .store
        .get(&crate::model::ObjectKey::new("namespaces", "", "default"))
        .unwrap();
    assert_eq!(label(default.value()), "default", "{}", default.value());
    policy_on(
        &svc,
        "relabel",
        "",
        "namespaces",
        json!({"mutations": [patch(
            "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'kubernetes.io/metadata.name': 'forged', 'team': 'a'}}]"
        )]}),
    )
    .await;
    let namespaces = svc.registry.lookup("", "v1", "namespaces").unwrap();
    let ns = svc
        .create(
            &namespaces,
            "",
            json!({"metadata": {"name": "named", "labels": {"kubernetes.io/metadata.name": "other"}}}),
            &as_user("u"),
        )
        .await
        .unwrap();
    assert_eq!(
        ns.object.value()["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "named", "team": "a"})
    );
    let generated = svc
        .create(
            &namespaces,
            "",
            json!({"metadata": {"generateName": "gen-"}}),
            &as_user("u"),
        )
        .await
        .unwrap();
    let name = generated.object.value()["metadata"]["name"].clone();
    assert!(name.as_str().unwrap().starts_with("gen-"), "{name}");
    assert_eq!(label(generated.object.value()), name);
    let updated = svc
        .update(
            &namespaces,
            "",
            "named",
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "named", "labels": {"kubernetes.io/metadata.name": "x"}}}),
            crate::service::Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(label(updated.object.value()), "named");
    std::fs::remove_dir_all(dir).ok();
}
