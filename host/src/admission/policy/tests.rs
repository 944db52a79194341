use serde_json::json;

use crate::auth::rbac::UserInfo;
use crate::service::{Service, WriteOptions};

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

/// Stored through the API; what kube's validation refuses (a Deny+Warn binding, an expression
/// that does not compile, ...) is written to the store as is, as objects stored before that
/// validation existed are: the evaluator must cope with them.
async fn put(svc: &Service, resource: &str, group: &str, obj: serde_json::Value) {
    let ri = svc.registry.lookup(group, "v1", resource).unwrap();
    match svc
        .create(&ri, "", obj.clone(), &WriteOptions::default())
        .await
    {
        Ok(_) => {}
        Err(e) if e.code == 422 => {
            let mut obj = obj;
            obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
            obj["metadata"]["creationTimestamp"] = json!("2026-12-01T00:00:00Z");
            obj["metadata"]["generation"] = json!(1);
            let name = obj["metadata"]["name"].as_str().unwrap().to_owned();
            let op = crate::store::WriteOp::Put {
                key: crate::model::ObjectKey::new(&ri.group_resource(), "", &name),
                value: obj,
                precondition: crate::store::Precondition::MustNotExist,
            };
            svc.store.write(op).await.unwrap();
        }
        Err(e) => panic!("{e}"),
    }
}

/// A policy and its binding.
async fn install(svc: &Service, policy: serde_json::Value, binding: serde_json::Value) {
    let group = "admissionregistration.k8s.io";
    put(svc, "validatingadmissionpolicies", group, policy).await;
    put(svc, "validatingadmissionpolicybindings", group, binding).await;
}

fn policy(name: &str, spec: serde_json::Value) -> serde_json::Value {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]});
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str, policy: &str, actions: &[&str]) -> serde_json::Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": name}, "spec": {"policyName": policy, "validationActions": actions}})
}

#[tokio::test]
async fn denials_errors_and_failure_policy() {
    let (svc, dir) = service("vap-unit").await;
    put(
        &svc,
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
        policy(
            "p",
            json!({"validations": [
                {"expression": "object.data.size() < 2"},
                {"expression": "!has(object.data.x) || object.data.x != 'boom' || 1/0 == 1"}
            ]}),
        ),
    )
    .await;
    put(
        &svc,
        "validatingadmissionpolicybindings",
        "admissionregistration.k8s.io",
        binding("b", "p", &["Deny", "Warn"]),
    )
    .await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    // Host writes (no user) are not subject to admission.
    svc.create(
        &cms,
        "default",
        json!({"metadata": {"name": "host"}, "data": {"a": "1", "b": "2"}}),
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    let err = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "two"}, "data": {"a": "1", "b": "2"}}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.data.size() < 2"
    );
    // A runtime error under failurePolicy Fail (the default) denies with the error.
    let err = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "boom"}, "data": {"x": "boom"}}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    assert!(
        err.message.contains(
            "denied request: expression '!has(object.data.x) || object.data.x != 'boom' || 1/0 == 1' resulted in error: division by zero"
        ),
        "{}",
        err.message
    );
    svc.create(
        &cms,
        "default",
        json!({"metadata": {"name": "one"}, "data": {"a": "1"}}),
        &as_user("u"),
    )
    .await
    .unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn ignore_failure_policy_and_bad_expressions() {
    let (svc, dir) = service("vap-unit-ignore").await;
    put(
        &svc,
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
        policy(
            "ignored",
            json!({"failurePolicy": "Ignore", "validations": [
                {"expression": "object.nope.deeper == 1"},
                {"expression": "this is not ( CEL"}
            ]}),
        ),
    )
    .await;
    put(
        &svc,
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
        policy(
            "broken",
            json!({"validations": [{"expression": "undefinedFunction(object)"}]}),
        ),
    )
    .await;
    put(
        &svc,
        "validatingadmissionpolicybindings",
        "admissionregistration.k8s.io",
        binding("ignored", "ignored", &["Deny"]),
    )
    .await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    let w = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "a"}}),
            &as_user("u"),
        )
        .await
        .unwrap();
    assert!(w.warnings.is_empty());
    put(
        &svc,
        "validatingadmissionpolicybindings",
        "admissionregistration.k8s.io",
        binding("broken", "broken", &["Warn"]),
    )
    .await;
    let w = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "b"}}),
            &as_user("u"),
        )
        .await
        .unwrap();
    assert_eq!(w.warnings.len(), 1, "{:?}", w.warnings);
    assert!(
        w.warnings[0].starts_with(
            "Validation failed for ValidatingAdmissionPolicy 'broken' with binding 'broken': compilation failed: "
        ),
        "{:?}",
        w.warnings
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn costly_expressions_are_not_run() {
    let (svc, dir) = service("vap-unit-cost").await;
    put(
        &svc,
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
        policy(
            "cost",
            json!({"validations": [{"expression":
                "object.data.all(a, object.data.all(b, object.data.all(c, object.data.all(d, a != 'x'))))"}]}),
        ),
    )
    .await;
    put(
        &svc,
        "validatingadmissionpolicybindings",
        "admissionregistration.k8s.io",
        binding("cost", "cost", &["Deny"]),
    )
    .await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    let data: serde_json::Map<String, serde_json::Value> =
        (0..100).map(|i| (format!("k{i}"), json!("v"))).collect();
    let start = std::time::Instant::now();
    let err = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "big"}, "data": data}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    assert!(
        err.message.contains("cost limit exceeded"),
        "{}",
        err.message
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn deep_expressions_run_on_a_big_stack() {
    let (svc, dir) = service("vap-unit-deep").await;
    // 40 additions: deeper than what runs on the caller's stack.
    let deep = format!("{}1 == 0", "1+".repeat(40));
    put(
        &svc,
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
        policy(
            "deep",
            json!({"validations": [{"expression": deep, "message": "deep"}]}),
        ),
    )
    .await;
    put(
        &svc,
        "validatingadmissionpolicybindings",
        "admissionregistration.k8s.io",
        binding("deep", "deep", &["Deny"]),
    )
    .await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    let err = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "d"}}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    assert!(
        err.message.ends_with("denied request: deep"),
        "{}",
        err.message
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn audit_annotations() {
    let (svc, dir) = service("vap-unit-audit").await;
    put(
        &svc,
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
        policy(
            "audited",
            json!({"validations": [{"expression": "true"}], "auditAnnotations": [
                {"key": "who", "valueExpression": "'created by ' + request.userInfo.username"},
                {"key": "nothing", "valueExpression": "null"},
                {"key": "blank", "valueExpression": "'  '"},
                {"key": "bad", "valueExpression": "has(object.data.bad) ? 1 : null"},
                {"key": "boom", "valueExpression": "has(object.data.boom) ? object.data.missing : null"}
            ]}),
        ),
    )
    .await;
    put(
        &svc,
        "validatingadmissionpolicybindings",
        "admissionregistration.k8s.io",
        binding("b", "audited", &["Audit"]),
    )
    .await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    // Strings and nulls are published or left out; the request goes on.
    svc.create(
        &cms,
        "default",
        // (Not `{}`: an empty map is no field at all, as kube's decoded object has none.)
        json!({"metadata": {"name": "fine"}, "data": {"k": "v"}}),
        &as_user("u"),
    )
    .await
    .unwrap();
    // A result of another type denies, whatever the binding's actions (kube's dispatcher).
    let err = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "typed"}, "data": {"bad": "1"}}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, 422, "{}", err.message);
    assert_eq!(
        err.message,
        "configmaps \"typed\" is forbidden: ValidatingAdmissionPolicy 'audited' with binding 'b' denied request: valueExpression 'has(object.data.bad) ? 1 : null' resulted in unsupported return type: int. Return type must be either string or null."
    );
    // An evaluation error denies under failurePolicy Fail.
    let err = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"name": "error"}, "data": {"boom": "1"}}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    assert!(
        err.message.contains("no such key: missing"),
        "{}",
        err.message
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// kube's CEL `authorizer`: checks as the request's user (or a named service account) against
/// the same RBAC as any request, `authorizer.requestResource` is the request's own resource.
#[tokio::test]
async fn the_authorizer_checks_as_the_requests_user() {
    let (svc, dir) = service("vap-authz").await;
    // A role and its binding to one subject.
    let grant = |scope: &str, name: &str, rules: serde_json::Value, subject: serde_json::Value| {
        let kind = if scope.is_empty() {
            "ClusterRole"
        } else {
            "Role"
        };
        let plural = |k: &str| format!("{}s", k.to_lowercase());
        let role = json!({"metadata": {"name": name}, "rules": rules});
        let binding = json!({"metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": [subject]});
        let (svc, scope) = (&svc, scope.to_owned());
        async move {
            for (resource, obj) in [
                (plural(kind), role),
                (plural(&format!("{kind}Binding")), binding),
            ] {
                let ri = svc
                    .registry
                    .lookup("rbac.authorization.k8s.io", "v1", &resource)
                    .unwrap();
                svc.create(&ri, &scope, obj, &WriteOptions::default())
                    .await
                    .unwrap();
            }
        }
    };
    let user =
        |name: &str| json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name});
    // alice may read the secret "mine" and patch configmaps in default; the service account
    // default/builder may create deployments anywhere; bob may do nothing; every
    // authenticated user may get /healthz.
    grant(
        "default",
        "alice",
        json!([{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["mine"], "verbs": ["get"]},
               {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}]),
        user("alice"),
    )
    .await;
    grant(
        "",
        "deployer",
        json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create"]}]),
        json!({"kind": "ServiceAccount", "namespace": "default", "name": "builder"}),
    )
    .await;
    grant(
        "",
        "health",
        json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
        json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}),
    )
    .await;
    install(
        &svc,
        policy(
            "p",
            json!({
                "variables": [{"name": "builderMayDeploy", "expression":
                    "authorizer.serviceAccount('default', 'builder').group('apps').resource('deployments').namespace('x').check('create').allowed()"}],
                "validations": [
                {"expression": "!has(object.data.secret) || authorizer.group('').resource('secrets').namespace(object.metadata.namespace).name(object.data.secret).check('get').allowed()",
                 "messageExpression": "'may not name secret ' + object.data.secret"},
                {"expression": "authorizer.requestResource.check('patch').allowed()",
                 "message": "must be allowed to patch what it creates"},
                {"expression": "variables.builderMayDeploy && !authorizer.serviceAccount('default', 'other').group('apps').resource('deployments').check('create').allowed()"},
                {"expression": "authorizer.requestResource.subresource('status').check('patch').allowed() == false"},
                {"expression": "authorizer.requestResource.check('patch').errored() == false && authorizer.requestResource.check('patch').error() == ''"},
                {"expression": "!has(object.data.path) || authorizer.path(object.data.path).check('get').allowed()"},
                {"expression": "!has(object.data.static) || authorizer.requestResource.check('get').reason() != ''",
                 "messageExpression": "authorizer.path('/').check('get').reason()", "message": "static"}
            ]}),
        ),
        binding("b", "p", &["Deny"]),
    )
    .await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    let create = |user: &str, name: &str, data: serde_json::Value| {
        let (svc, cms) = (&svc, cms.clone());
        let (user, name) = (user.to_owned(), name.to_owned());
        async move {
            svc.create(
                &cms,
                "default",
                json!({"metadata": {"name": name}, "data": data}),
                &as_user(&user),
            )
            .await
        }
    };
    create("alice", "a1", json!({"secret": "mine"}))
        .await
        .unwrap();
    let err = create("alice", "a2", json!({"secret": "theirs"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "configmaps \"a2\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: may not name secret theirs"
    );
    let err = create("bob", "b1", json!({"k": "v"})).await.unwrap_err();
    assert!(
        err.message
            .ends_with("denied request: must be allowed to patch what it creates"),
        "{}",
        err.message
    );
    // An empty path is kube's error, under failurePolicy Fail a denial.
    let err = create("alice", "a3", json!({"path": " "}))
        .await
        .unwrap_err();
    assert!(
        err.message
            .ends_with("resulted in error: path must not be empty"),
        "{}",
        err.message
    );
    // Every authenticated user may get /healthz; nobody /secret.
    create("alice", "a4", json!({"path": "/healthz"}))
        .await
        .unwrap();
    let err = create("alice", "a5", json!({"path": "/secret"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("failed expression"), "{}", err.message);
    // A messageExpression has no `authorizer` (kube compiles it without): the static message.
    let err = create("alice", "a6", json!({"static": "1"}))
        .await
        .unwrap_err();
    assert!(
        err.message.ends_with("denied request: static"),
        "{}",
        err.message
    );
    // A check costs kube's 350,000: three in one expression exceed the per-call limit.
    install(
        &svc,
        policy(
            "three",
            json!({"validations": [{"expression":
                "[1, 2, 3].all(i, authorizer.group('').resource('pods').check('get').allowed())"}]}),
        ),
        binding("b3", "three", &["Deny"]),
    )
    .await;
    let err = create("alice", "a7", json!({"secret": "mine"}))
        .await
        .unwrap_err();
    assert!(
        err.message
            .ends_with("operation cancelled: actual cost limit exceeded"),
        "{}",
        err.message
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// kube's `BeforeCreate` generates the name before validating admission: a policy sees it in
/// the object and in `request.name`, and its denial names it.
#[tokio::test]
async fn validating_admission_sees_the_generated_name() {
    let (svc, dir) = service("vap-genname").await;
    install(
        &svc,
        policy(
            "p",
            json!({"validations": [
                {"expression": "object.metadata.name.startsWith(object.metadata.generateName) && object.metadata.name.size() == object.metadata.generateName.size() + 5 && request.name == object.metadata.name"},
                {"expression": "!has(object.data.deny)", "messageExpression": "'no: ' + request.name"}
            ]}),
        ),
        binding("b", "p", &["Deny"]),
    )
    .await;
    let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
    let made = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"generateName": "gen-"}, "data": {"a": "1"}}),
            &as_user("u"),
        )
        .await
        .unwrap();
    assert!(made.object.value()["metadata"]["name"]
        .as_str()
        .unwrap()
        .starts_with("gen-"));
    let err = svc
        .create(
            &cms,
            "default",
            json!({"metadata": {"generateName": "gen-"}, "data": {"deny": "1"}}),
            &as_user("u"),
        )
        .await
        .unwrap_err();
    let name = err.details.as_ref().unwrap().name.clone();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    assert_eq!(
        err.message,
        format!("configmaps \"{name}\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no: {name}")
    );
    let _ = std::fs::remove_dir_all(dir);
}
