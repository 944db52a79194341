//! The admission chain with the real binary and the real kubectl: ValidatingAdmissionPolicies
//! with params deny with their message and warn under `Warn`, on create, update and delete, in
//! dry runs too (without side effects); validating and mutating webhooks served by a real HTTPS
//! server in this process, with `failurePolicy` Ignore vs Fail when the webhook is down, a
//! request's `?timeout=` cutting a slow webhook's call short, and `service` references that do
//! not resolve;
//! MutatingAdmissionPolicies (ApplyConfiguration with params, JSONPatch, matchConditions,
//! failurePolicy, dry runs, reinvocation); the CEL `authorizer` checking as the requesting user.

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::webhook::start as start_webhook;
use turtles_tests::{poll, Server};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn apply(s: &Server, v: &Value) {
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &v.to_string());
    assert!(out.status.success(), "apply {v}: {}", stderr(&out));
}

/// A policy takes effect with the next request: wait until `probe` is refused.
fn until_denied(s: &Server, args: &[&str]) -> String {
    poll("the policy to apply", Duration::from_secs(10), || {
        let out = s.kubectl(args);
        (!out.status.success()).then(|| stderr(&out))
    })
    .expect("denied")
}

/// The status controller type-checks each policy against the kinds it matches (kube's
/// `status.typeChecking`, worded as cel-go words it).
fn type_checking(s: &Server) {
    let status = |name: &str| {
        poll(
            &format!("{name}'s type checking"),
            Duration::from_secs(10),
            || {
                let v = s.kubectl_json(&["get", "validatingadmissionpolicy", name, "-o", "json"]);
                v["status"]
                    .get("typeChecking")
                    .is_some()
                    .then(|| v["status"].clone())
            },
        )
        .expect("type checked")
    };
    let st = status("replica-limit");
    assert_eq!(st["observedGeneration"], 1, "{st}");
    assert_eq!(st["typeChecking"], json!({}), "{st}");
    apply(
        s,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "typo"},
            "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["deployments", "replicasets"]
                }]},
                "validations": [
                    {"expression": "object.spec.replicas >= 0"},
                    {"expression": "object.spec.replicaz > 1",
                     "messageExpression": "'too many: ' + string(object.spec.replica)"},
                    {"expression": "size(object.spec.replicas) > 0"}
                ]
            }
        }),
    );
    let st = status("typo");
    let warnings = st["typeChecking"]["expressionWarnings"]
        .as_array()
        .expect("warnings");
    assert_eq!(warnings.len(), 3, "{st}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[1].expression");
    assert_eq!(
        warnings[0]["warning"],
        "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^\n\napps/v1, Kind=ReplicaSet: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^\n"
    );
    assert_eq!(
        warnings[1]["fieldRef"],
        "spec.validations[1].messageExpression"
    );
    assert!(
        warnings[1]["warning"]
            .as_str()
            .unwrap()
            .contains("undefined field 'replica'"),
        "{st}"
    );
    // Overloads: `size` takes no int.
    assert_eq!(warnings[2]["fieldRef"], "spec.validations[2].expression");
    let size = "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'\n | size(object.spec.replicas) > 0\n | ....^\n";
    assert_eq!(
        warnings[2]["warning"],
        format!("apps/v1, Kind=Deployment: {size}\napps/v1, Kind=ReplicaSet: {size}")
    );
    s.kubectl_ok(&["delete", "validatingadmissionpolicy", "typo"]);
}

fn validating_policies(s: &Server) {
    for (ns, env) in [("prod", "prod"), ("dev", "dev"), ("qa", "qa")] {
        s.kubectl_ok(&["create", "namespace", ns]);
        s.kubectl_ok(&["label", "namespace", ns, &format!("env={env}")]);
    }
    s.kubectl_ok(&[
        "create",
        "configmap",
        "limits",
        "-n",
        "default",
        "--from-literal=maxReplicas=5",
    ]);
    apply(
        s,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "replica-limit"},
            "spec": {
                "failurePolicy": "Fail",
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]
                }]},
                "variables": [{"name": "limit", "expression": "int(params.data.maxReplicas)"}],
                "validations": [{
                    "expression": "object.spec.replicas <= variables.limit",
                    "messageExpression": "'replicas ' + string(object.spec.replicas) + ' over the limit of ' + params.data.maxReplicas"
                }, {
                    "expression": "!object.metadata.name.startsWith('forbidden-')",
                    "message": "names may not start with forbidden-",
                    "reason": "Forbidden"
                }]
            }
        }),
    );
    type_checking(s);
    let binding = |name: &str, env: &str, action: &str, param: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": "replica-limit",
                "validationActions": [action],
                "paramRef": {"name": param, "namespace": "default", "parameterNotFoundAction": "Deny"},
                "matchResources": {"namespaceSelector": {"matchLabels": {"env": env}}}
            }
        })
    };
    apply(s, &binding("replica-limit-prod", "prod", "Deny", "limits"));
    apply(s, &binding("replica-limit-dev", "dev", "Warn", "limits"));
    apply(s, &binding("replica-limit-qa", "qa", "Deny", "missing"));

    // Deny, with the message of messageExpression, in kube's words.
    let create6 = [
        "create",
        "deployment",
        "web",
        "-n",
        "prod",
        "--image=nginx",
        "--replicas=6",
    ];
    let err = until_denied(s, &create6);
    assert!(
        err.contains(
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-prod' denied request: replicas 6 over the limit of 5"
        ),
        "{err}"
    );
    // The Status: 422 Invalid (no reason given), the message as a cause.
    let http = s.http();
    let dep = |name: &str, replicas: i64| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": name},
               "spec": {"replicas": replicas,
                        "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    };
    let r = http.post_json("/apis/apps/v1/namespaces/prod/deployments", &dep("web", 7));
    assert_eq!(r.status, 422, "{}", r.text());
    let st = r.json();
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(st["details"]["kind"], "deployments");
    assert_eq!(st["details"]["group"], "apps");
    assert!(st["details"]["causes"][0]["message"]
        .as_str()
        .unwrap()
        .starts_with("ValidatingAdmissionPolicy 'replica-limit'"));
    // A validation's reason sets the code.
    let r = http.post_json(
        "/apis/apps/v1/namespaces/prod/deployments",
        &dep("forbidden-x", 1),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["reason"], "Forbidden");
    assert!(r.text().contains("names may not start with forbidden-"));

    // Within the limit: admitted. An update over it is denied, in a dry run too, with nothing
    // stored.
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "prod",
        "--image=nginx",
        "--replicas=2",
    ]);
    let out = s.kubectl(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "prod",
        "-p",
        r#"{"spec":{"replicas":9}}"#,
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("replicas 9 over the limit of 5"),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "prod",
        "--dry-run=server",
        "-p",
        r#"{"spec":{"replicas":8}}"#,
    ]);
    assert!(
        stderr(&out).contains("replicas 8 over the limit of 5"),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl(&[
        "create",
        "deployment",
        "dry",
        "-n",
        "prod",
        "--image=nginx",
        "--replicas=8",
        "--dry-run=server",
    ]);
    assert!(
        stderr(&out).contains("replicas 8 over the limit of 5"),
        "{}",
        stderr(&out)
    );
    // A dry run that passes admission stores nothing.
    s.kubectl_ok(&[
        "create",
        "deployment",
        "dry",
        "-n",
        "prod",
        "--image=nginx",
        "--replicas=3",
        "--dry-run=server",
    ]);
    assert!(!s
        .kubectl(&["get", "deployment", "dry", "-n", "prod"])
        .status
        .success());
    let web = s.kubectl_json(&["get", "deployment", "web", "-n", "prod"]);
    assert_eq!(web["spec"]["replicas"], 2);

    // Params are read per request: raising the limit admits.
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "limits",
        "-n",
        "default",
        "-p",
        r#"{"data":{"maxReplicas":"10"}}"#,
    ]);
    s.kubectl_ok(&["scale", "deployment", "web", "-n", "prod", "--replicas=1"]);
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "prod",
        "-p",
        r#"{"spec":{"replicas":9}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "limits",
        "-n",
        "default",
        "-p",
        r#"{"data":{"maxReplicas":"5"}}"#,
    ]);

    // Warn: admitted, with kube's warning.
    let out = s.kubectl(&[
        "create",
        "deployment",
        "web",
        "-n",
        "dev",
        "--image=nginx",
        "--replicas=6",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-dev': replicas 6 over the limit of 5"
        ),
        "{}",
        stderr(&out)
    );

    // A binding whose param is missing denies under parameterNotFoundAction: Deny.
    let out = s.kubectl(&[
        "create",
        "deployment",
        "web",
        "-n",
        "qa",
        "--image=nginx",
        "--replicas=1",
    ]);
    assert!(
        stderr(&out).contains(
            "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-qa' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        stderr(&out)
    );

    // Other namespaces and kinds are not matched.
    s.kubectl_ok(&[
        "create",
        "deployment",
        "big",
        "-n",
        "default",
        "--image=nginx",
        "--replicas=20",
    ]);

    // DELETE, with oldObject and a matchCondition; the request's user is visible.
    apply(
        s,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "protected"},
            "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["DELETE"], "resources": ["configmaps"]
                }]},
                "matchConditions": [{"name": "labelled",
                    "expression": "has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels"}],
                "validations": [{
                    "expression": "object == null && request.userInfo.username == 'nobody'",
                    "messageExpression": "'only nobody may delete ' + oldObject.metadata.name + ', not ' + request.userInfo.username"
                }]
            }
        }),
    );
    apply(
        s,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "protected"},
            "spec": {"policyName": "protected", "validationActions": ["Deny"]}
        }),
    );
    s.kubectl_ok(&["create", "configmap", "keep", "-n", "dev"]);
    s.kubectl_ok(&["label", "configmap", "keep", "-n", "dev", "protected=yes"]);
    s.kubectl_ok(&["create", "configmap", "free", "-n", "dev"]);
    let err = until_denied(
        s,
        &[
            "delete",
            "configmap",
            "keep",
            "-n",
            "dev",
            "--dry-run=server",
        ],
    );
    assert!(err.contains("only nobody may delete keep, not "), "{err}");
    s.kubectl_ok(&["delete", "configmap", "free", "-n", "dev"]);
    assert!(s
        .kubectl(&["get", "configmap", "keep", "-n", "dev"])
        .status
        .success());

    // Removing the binding lifts the policy.
    s.kubectl_ok(&["delete", "validatingadmissionpolicybinding", "protected"]);
    poll("the binding to go", Duration::from_secs(10), || {
        s.kubectl(&["delete", "configmap", "keep", "-n", "dev"])
            .status
            .success()
            .then_some(())
    })
    .expect("deleted");
}

/// `/validate`: ConfigMaps named `bad-*` are refused. `/mutate`: a `mutated=yes` label and a
/// warning.
fn handler(path: &str, req: &Value) -> Value {
    match path {
        "/validate" => {
            let name = req["name"].as_str().unwrap_or("");
            if name.starts_with("bad-") {
                json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden",
                       "message": format!("configmaps named bad-* are not allowed (dryRun={})", req["dryRun"])}})
            } else {
                json!({"allowed": true})
            }
        }
        "/mutate" => {
            use base64::Engine;
            let has_labels = req["object"]["metadata"]["labels"].is_object();
            let mut patch = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
            };
            // Fields a write cannot set: as in kube, what a webhook puts there does not stick
            // (and on a create it sees none yet).
            if req["operation"] == "CREATE" && req["object"]["metadata"]["uid"].is_null() {
                for (field, value) in [
                    ("uid", "tampered"),
                    ("creationTimestamp", "2001-01-01T00:00:00Z"),
                ] {
                    patch.as_array_mut().unwrap().push(
                        json!({"op": "add", "path": format!("/metadata/{field}"), "value": value}),
                    );
                }
            }
            json!({"allowed": true, "patchType": "JSONPatch",
                   "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()),
                   "warnings": [format!("mutated by the test webhook as {}", req["userInfo"]["username"].as_str().unwrap_or(""))]})
        }
        // Marks objects another webhook has already labelled: called again (reinvoked) after
        // that webhook only if it asked to be.
        "/reinvoke" => {
            use base64::Engine;
            if req["object"]["metadata"]["labels"]["mutated"] == "yes" {
                let patch =
                    json!([{"op": "add", "path": "/metadata/labels/saw-mutated", "value": "yes"}]);
                json!({"allowed": true, "patchType": "JSONPatch",
                       "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
            } else {
                json!({"allowed": true})
            }
        }
        // A webhook that does not answer in time: its thread sits on the call (the server's
        // side; the test never waits for it) until well past every deadline in play.
        "/hang" => {
            std::thread::sleep(Duration::from_secs(40));
            json!({"allowed": true})
        }
        "/deny-all" => json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden",
                              "message": "denied by the self-signed webhook"}}),
        // A denial with causes, as a validating webhook reports field errors.
        "/invalid" => json!({"allowed": false, "status": {"code": 422, "reason": "Invalid",
            "message": "bad thing", "details": {"causes": [{"field": "data.a", "message": "nope"}]}}}),
        // A reason of the webhook's own, no message, a code under 400.
        "/own-reason" => json!({"allowed": false, "status": {"code": 299,
            "reason": "PolicyViolation", "metadata": {"resourceVersion": "12"}}}),
        _ => json!({"allowed": true}),
    }
}

fn webhook_config(kind: &str, name: &str, hook: &str, url: &str, ca: &str, extra: Value) -> Value {
    let mut w = json!({
        "name": hook,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"env": "hooks"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": name}, "webhooks": [w]})
}

fn configmap_with(s: &Server, name: &str, labels: Value, extra: &[&str]) -> std::process::Output {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "hooks", "labels": labels}});
    let mut args = vec!["create", "-f", "-"];
    args.extend_from_slice(extra);
    s.kubectl_stdin(&args, &cm.to_string())
}

fn webhooks(s: &Server) {
    s.kubectl_ok(&["create", "namespace", "hooks"]);
    s.kubectl_ok(&["label", "namespace", "hooks", "env=hooks"]);
    let wh = start_webhook(handler).expect("webhook starts");
    apply(
        s,
        &webhook_config(
            "ValidatingWebhookConfiguration",
            "deny-bad",
            "deny.turtles.test",
            &format!("{}/validate", wh.url),
            &wh.ca_bundle,
            json!({}),
        ),
    );
    // Denied with the webhook's status, in kube's words.
    let err = until_denied(s, &["create", "configmap", "bad-one", "-n", "hooks"]);
    assert!(
        err.contains("admission webhook \"deny.turtles.test\" denied the request: configmaps named bad-* are not allowed (dryRun=false)"),
        "{err}"
    );
    let r = s.http().post_json(
        "/api/v1/namespaces/hooks/configmaps",
        &json!({"metadata": {"name": "bad-two"}}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["reason"], "Forbidden");
    // kube's client calls the webhook with the call's timeout (its timeoutSeconds) in the URL.
    assert!(
        wh.called_at("/validate?timeout=5s"),
        "{:?}",
        wh.targets.lock().map(|t| t.clone())
    );
    // A dry run reaches a webhook without side effects, flagged as one.
    let out = s.kubectl(&[
        "create",
        "configmap",
        "bad-three",
        "-n",
        "hooks",
        "--dry-run=server",
    ]);
    assert!(stderr(&out).contains("(dryRun=true)"), "{}", stderr(&out));
    // Other namespaces are not matched.
    s.kubectl_ok(&["create", "configmap", "bad-elsewhere", "-n", "default"]);

    // Mutating: the label is set, the warning shown; the validating webhook still runs after.
    apply(
        s,
        &webhook_config(
            "MutatingWebhookConfiguration",
            "add-label",
            "label.turtles.test",
            &format!("{}/mutate", wh.url),
            &wh.ca_bundle,
            json!({}),
        ),
    );
    let created = poll("the mutating webhook", Duration::from_secs(10), || {
        let name = format!("good-{}", wh.calls.load(Ordering::SeqCst));
        let out = configmap_with(s, &name, json!({"app": "x"}), &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let cm = s.kubectl_json(&["get", "configmap", &name, "-n", "hooks"]);
        (cm["metadata"]["labels"]["mutated"] == "yes").then_some((cm, stderr(&out)))
    })
    .expect("mutated");
    assert_eq!(created.0["metadata"]["labels"]["app"], "x");
    let meta = &created.0["metadata"];
    assert_eq!(meta["uid"].as_str().unwrap().len(), 36, "{meta}");
    assert!(
        !meta["creationTimestamp"]
            .as_str()
            .unwrap()
            .starts_with("2001"),
        "{meta}"
    );
    assert!(
        created
            .1
            .contains("Warning: mutated by the test webhook as admin"),
        "{}",
        created.1
    );
    let out = s.kubectl(&["create", "configmap", "bad-four", "-n", "hooks"]);
    assert!(
        stderr(&out).contains("denied the request"),
        "{}",
        stderr(&out)
    );
    // Reinvocation: "a-reinvoke" runs before "add-label" (name order) and again after it.
    apply(
        s,
        &webhook_config(
            "MutatingWebhookConfiguration",
            "a-reinvoke",
            "reinvoke.turtles.test",
            &format!("{}/reinvoke", wh.url),
            &wh.ca_bundle,
            json!({"reinvocationPolicy": "IfNeeded",
                   "objectSelector": {"matchLabels": {"app": "reinvoke"}}}),
        ),
    );
    let cm = poll("the reinvoked webhook", Duration::from_secs(10), || {
        let name = format!("re-{}", wh.calls.load(Ordering::SeqCst));
        let out = configmap_with(s, &name, json!({"app": "reinvoke"}), &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let cm = s.kubectl_json(&["get", "configmap", &name, "-n", "hooks"]);
        (cm["metadata"]["labels"]["saw-mutated"] == "yes").then_some(cm)
    })
    .expect("reinvoked");
    assert_eq!(cm["metadata"]["labels"]["mutated"], "yes");
    s.kubectl_ok(&["delete", "mutatingwebhookconfiguration", "a-reinvoke"]);

    // A webhook that is down: Ignore admits, Fail refuses with kube's internal error.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!(
        "https://127.0.0.1:{}/validate",
        closed.local_addr().unwrap().port()
    );
    drop(closed);
    for (policy, label) in [("Ignore", "ignore"), ("Fail", "fail")] {
        apply(
            s,
            &webhook_config(
                "ValidatingWebhookConfiguration",
                &format!("down-{label}"),
                &format!("down-{label}.turtles.test"),
                &down,
                &wh.ca_bundle,
                json!({"failurePolicy": policy,
                       "objectSelector": {"matchLabels": {"down": label}}}),
            ),
        );
    }
    let out = configmap_with(s, "ignored", json!({"down": "ignore"}), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = poll("the Fail webhook", Duration::from_secs(10), || {
        let out = configmap_with(s, "refused", json!({"down": "fail"}), &[]);
        (!out.status.success()).then(|| stderr(&out))
    })
    .expect("refused");
    assert!(
        err.contains("Internal error occurred: failed calling webhook \"down-fail.turtles.test\": failed to call webhook"),
        "{err}"
    );
    // The URL it names is the one called: with the timeout in its query.
    assert!(
        err.contains(&format!(
            "failed to call webhook: Post \"{down}?timeout=5s\": dial tcp "
        )),
        "{err}"
    );
    denial_statuses(s, &wh);
    deadlines(s, &wh);
    service_references(s);
    // v1 webhooks declare no side effects (kube's validation: `Unknown` and `Some` were
    // v1beta1's, whose webhooks turtles refuses dry runs to).
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &webhook_config(
            "ValidatingWebhookConfiguration",
            "side-effects",
            "side.turtles.test",
            &format!("{}/other", wh.url),
            &wh.ca_bundle,
            json!({"sideEffects": "Unknown"}),
        )
        .to_string(),
    );
    let err = stderr(&out);
    assert!(
        err.contains("webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\""),
        "{err}"
    );
    // A webhook that is down and matches everything under Fail cannot lock admins out: writes
    // of webhook configurations never go to webhooks.
    apply(
        s,
        &webhook_config(
            "ValidatingWebhookConfiguration",
            "lockout",
            "lockout.turtles.test",
            &down,
            &wh.ca_bundle,
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                              "resources": ["*/*"]}]}),
        ),
    );
    let err = until_denied(s, &["create", "configmap", "locked", "-n", "hooks"]);
    assert!(err.contains("lockout.turtles.test"), "{err}");
    s.kubectl_ok(&["delete", "validatingwebhookconfiguration", "lockout"]);
    // A webhook serving a self-signed certificate marked as a CA, which is its own caBundle (what
    // `openssl req -x509` makes): Go's TLS client, so kube, trusts it; and the same server is
    // not trusted under another CA.
    let own = turtles_tests::webhook::start_self_signed(handler).expect("webhook starts");
    for (name, ca, label) in [
        ("self-signed", &own.ca_bundle, "own"),
        ("self-signed-other-ca", &wh.ca_bundle, "other"),
    ] {
        apply(
            s,
            &webhook_config(
                "ValidatingWebhookConfiguration",
                name,
                &format!("{name}.turtles.test"),
                &format!("{}/deny-all", own.url),
                ca,
                json!({"objectSelector": {"matchLabels": {"self": label}}}),
            ),
        );
    }
    let err = poll("the self-signed webhook", Duration::from_secs(10), || {
        let out = configmap_with(s, "self-own", json!({"self": "own"}), &["--dry-run=server"]);
        (!out.status.success()).then(|| stderr(&out))
    })
    .expect("refused");
    assert!(
        err.contains("admission webhook \"self-signed.turtles.test\" denied the request: denied by the self-signed webhook"),
        "{err}"
    );
    let err = poll(
        "the webhook under another CA",
        Duration::from_secs(10),
        || {
            let out = configmap_with(
                s,
                "self-other",
                json!({"self": "other"}),
                &["--dry-run=server"],
            );
            (!out.status.success()).then(|| stderr(&out))
        },
    )
    .expect("refused");
    assert!(
        err.contains(
            "failed calling webhook \"self-signed-other-ca.turtles.test\": failed to call webhook"
        ),
        "{err}"
    );
    for cfg in ["self-signed", "self-signed-other-ca"] {
        s.kubectl_ok(&["delete", "validatingwebhookconfiguration", cfg]);
    }
    for cfg in ["down-fail", "down-ignore", "deny-bad"] {
        s.kubectl_ok(&["delete", "validatingwebhookconfiguration", cfg]);
    }
    s.kubectl_ok(&["delete", "mutatingwebhookconfiguration", "add-label"]);
}

/// A webhook's denial is its own `status` with the message prefixed (kube 1.34's
/// `webhookerrors.ToStatusErr`): causes, reason, metadata and code as the webhook gave them, a
/// code under 400 made 400.
fn denial_statuses(s: &Server, wh: &turtles_tests::webhook::Webhook) {
    for path in ["invalid", "own-reason"] {
        apply(
            s,
            &webhook_config(
                "ValidatingWebhookConfiguration",
                &format!("deny-{path}"),
                &format!("{path}.turtles.test"),
                &format!("{}/{path}", wh.url),
                &wh.ca_bundle,
                json!({"objectSelector": {"matchLabels": {"deny": path}}}),
            ),
        );
    }
    let denied = |label: &str| {
        poll(
            &format!("the {label} webhook"),
            Duration::from_secs(10),
            || {
                let r = s.http().post_json(
                    "/api/v1/namespaces/hooks/configmaps?dryRun=All",
                    &json!({"metadata": {"name": format!("d-{label}"), "labels": {"deny": label}}}),
                );
                (r.status != 201).then_some(r)
            },
        )
        .expect("denied")
    };
    let r = denied("invalid");
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "admission webhook \"invalid.turtles.test\" denied the request: bad thing",
            "reason": "Invalid",
            "details": {"causes": [{"message": "nope", "field": "data.a"}]},
            "code": 422})
    );
    let r = denied("own-reason");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {"resourceVersion": "12"},
            "status": "Failure",
            "message": "admission webhook \"own-reason.turtles.test\" denied the request: PolicyViolation",
            "reason": "PolicyViolation", "code": 400})
    );
    for path in ["invalid", "own-reason"] {
        s.kubectl_ok(&[
            "delete",
            "validatingwebhookconfiguration",
            &format!("deny-{path}"),
        ]);
    }
}

/// kube's timeout filter's answer once a request's deadline passes, byte for byte: the bare
/// `metav1.Status` (no kind or apiVersion), its content type sniffed by Go's server.
const DEADLINE_PASSED: &str = r#"{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}
"#;

/// A webhook's call lasts no longer than what is left of the request (kube calls it under the
/// request's context): `?timeout=` of the API request caps `timeoutSeconds`, the webhook is
/// told the smaller of the two in its own `?timeout=`, and a request whose deadline passes
/// during the call gets kube's 504, whatever the `failurePolicy`. A webhook's own timeout,
/// when it is the sooner, is a failed call as before.
fn deadlines(s: &Server, wh: &turtles_tests::webhook::Webhook) {
    let hang = format!("{}/hang", wh.url);
    for (kind, name, label, extra) in [
        (
            "ValidatingWebhookConfiguration",
            "hang-validate",
            "validate",
            json!({"timeoutSeconds": 10, "failurePolicy": "Ignore"}),
        ),
        (
            "MutatingWebhookConfiguration",
            "hang-mutate",
            "mutate",
            json!({"timeoutSeconds": 10, "failurePolicy": "Ignore"}),
        ),
        (
            "ValidatingWebhookConfiguration",
            "hang-short",
            "short",
            json!({"timeoutSeconds": 1, "failurePolicy": "Fail"}),
        ),
    ] {
        let mut extra = extra;
        extra["objectSelector"] = json!({"matchLabels": {"hang": label}});
        apply(
            s,
            &webhook_config(
                kind,
                name,
                &format!("{name}.turtles.test"),
                &hang,
                &wh.ca_bundle,
                extra,
            ),
        );
    }
    let create = |name: &str, label: &str, timeout: &str| {
        let started = std::time::Instant::now();
        let r = s.http().post_json(
            &format!("/api/v1/namespaces/hooks/configmaps?timeout={timeout}"),
            &json!({"metadata": {"name": name, "labels": {"hang": label}}}),
        );
        (r, started.elapsed())
    };
    // (the webhook, the request's timeout, the least it takes, the timeout the webhook is told:
    // what is left, rounded up to whole seconds)
    for (label, timeout, least, told) in [
        ("validate", "2s", 2_000, "2s"),
        ("mutate", "2900ms", 2_900, "3s"),
    ] {
        let mut attempt = 0;
        let (r, took, name) = poll(
            &format!("the {label} webhook's deadline"),
            Duration::from_secs(30),
            || {
                attempt += 1;
                let name = format!("hang-{label}-{attempt}");
                let (r, took) = create(&name, label, timeout);
                (r.status != 201).then_some((r, took, name))
            },
        )
        .expect("timed out");
        assert_eq!(r.status, 504, "{}", r.text());
        assert_eq!(r.text(), DEADLINE_PASSED);
        assert_eq!(
            r.headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("text/plain; charset=utf-8")
        );
        assert!(r.headers.get("retry-after").is_none(), "{:?}", r.headers);
        // The request's deadline ended the call, not the webhook's 10 s.
        assert!(
            took >= Duration::from_millis(least) && took < Duration::from_secs(8),
            "{label}: answered after {took:?}"
        );
        // Told the smaller timeout.
        assert!(
            wh.called_at(&format!("/hang?timeout={told}")),
            "{:?}",
            wh.targets.lock().map(|t| t.clone())
        );
        let got = s
            .http()
            .get(&format!("/api/v1/namespaces/hooks/configmaps/{name}"));
        assert_eq!(got.status, 404, "nothing was stored: {}", got.text());
    }
    // The webhook's own timeout is the sooner: a failed call under its policy, named with the
    // URL it was called at.
    let (r, took) = create("hang-short", "short", "20s");
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        format!(
            "Internal error occurred: failed calling webhook \"hang-short.turtles.test\": failed to call webhook: Post \"{hang}?timeout=1s\": context deadline exceeded"
        )
    );
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    // A `timeout` Go cannot read is kube's 400, before authentication.
    for http in [s.http(), s.http_with_token(None)] {
        let r = http.get("/api/v1/namespaces?timeout=soon");
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(
            r.json()["message"],
            "invalid timeout specified in the request URL - time: invalid duration \"soon\""
        );
    }
    for name in ["hang-validate", "hang-short"] {
        s.kubectl_ok(&["delete", "validatingwebhookconfiguration", name]);
    }
    s.kubectl_ok(&["delete", "mutatingwebhookconfiguration", "hang-mutate"]);
}

/// A `service` reference that cannot be resolved fails the call as kube's does: `Post` of the
/// URL kube's client makes of the reference, then its endpoint resolver's words.
fn service_references(s: &Server) {
    let mut cfg = webhook_config(
        "ValidatingWebhookConfiguration",
        "by-service",
        "by-service.turtles.test",
        "",
        "",
        json!({"objectSelector": {"matchLabels": {"by": "service"}}}),
    );
    cfg["webhooks"][0]["clientConfig"] = json!({
        "service": {"namespace": "hooks", "name": "checker", "port": 8443, "path": "/validate"}
    });
    apply(s, &cfg);
    let refused = |why: &str| {
        let want = format!(
            "Internal error occurred: failed calling webhook \"by-service.turtles.test\": failed to call webhook: Post \"https://checker.hooks.svc:8443/validate?timeout=5s\": {why}"
        );
        poll(
            &format!("the webhook's call to fail with {why}"),
            Duration::from_secs(10),
            || {
                let r = s.http().post_json(
                    "/api/v1/namespaces/hooks/configmaps?dryRun=All",
                    &json!({"metadata": {"name": "by-service", "labels": {"by": "service"}}}),
                );
                (r.status == 500 && r.json()["message"] == want.as_str()).then_some(())
            },
        )
        .unwrap_or_else(|e| panic!("{e}: wanted {want}"));
    };
    refused("service \"checker\" not found");
    s.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "checker",
        "-n",
        "hooks",
        "--tcp=8443:9443",
    ]);
    refused("no endpoints available for service \"checker\"");
    s.kubectl_ok(&["delete", "service", "checker", "-n", "hooks"]);
    s.kubectl_ok(&["delete", "validatingwebhookconfiguration", "by-service"]);
}

/// kube's CEL `authorizer`: a policy asks RBAC whether the requesting user (kubectl `--as`) may
/// read the secret a ConfigMap names.
fn authorizer_in_policies(s: &Server) {
    s.kubectl_ok(&["create", "namespace", "authz"]);
    s.kubectl_ok(&[
        "-n",
        "authz",
        "create",
        "role",
        "alice",
        "--verb=create",
        "--resource=configmaps",
    ]);
    s.kubectl_ok(&[
        "-n",
        "authz",
        "create",
        "role",
        "shared-secret",
        "--verb=get",
        "--resource=secrets",
        "--resource-name=shared",
    ]);
    for role in ["alice", "shared-secret"] {
        s.kubectl_ok(&[
            "-n",
            "authz",
            "create",
            "rolebinding",
            role,
            "--role",
            role,
            "--user=alice",
        ]);
    }
    // A policy on ConfigMap creates.
    let mut policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "secret-refs"},
        "spec": {"validations": [{
            "expression": "!has(object.data.secretRef) || authorizer.group('').resource('secrets').namespace(object.metadata.namespace).name(object.data.secretRef).check('get').allowed()",
            "message": "may only name secrets its creator can read"
        }]}
    });
    policy["spec"]["matchConstraints"] = json!({"resourceRules": [{"apiGroups": [""],
        "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]});
    apply(s, &policy);
    apply(
        s,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "secret-refs"},
            "spec": {
                "policyName": "secret-refs", "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "authz"}}}
            }
        }),
    );
    let err = until_denied(
        s,
        &[
            "--as",
            "alice",
            "-n",
            "authz",
            "create",
            "configmap",
            "theirs",
            "--from-literal=secretRef=other",
        ],
    );
    assert!(
        err.contains("configmaps \"theirs\" is forbidden: ValidatingAdmissionPolicy 'secret-refs' with binding 'secret-refs' denied request: may only name secrets its creator can read"),
        "{err}"
    );
    s.kubectl_ok(&[
        "--as",
        "alice",
        "-n",
        "authz",
        "create",
        "configmap",
        "mine",
        "--from-literal=secretRef=shared",
    ]);
    // The same object by a user who may create ConfigMaps but not read that secret.
    s.kubectl_ok(&[
        "-n",
        "authz",
        "create",
        "rolebinding",
        "bob",
        "--role",
        "alice",
        "--user=bob",
    ]);
    let out = s.kubectl(&[
        "--as",
        "bob",
        "-n",
        "authz",
        "create",
        "configmap",
        "bobs",
        "--from-literal=secretRef=shared",
    ]);
    assert!(
        stderr(&out).contains("denied request: may only name secrets its creator can read"),
        "{}",
        stderr(&out)
    );
    s.kubectl_ok(&["delete", "validatingadmissionpolicybinding", "secret-refs"]);
    s.kubectl_ok(&["delete", "validatingadmissionpolicy", "secret-refs"]);
}

#[test]
fn admission() {
    let s = Server::start().expect("server starts");
    authorizer_in_policies(&s);
    validating_policies(&s);
    webhooks(&s);
    mutating_policies(&s);
}

/// A MutatingAdmissionPolicy on `resource` (CREATE) with its binding `<name>` limited to the
/// namespaces labelled `env=maps`.
fn mutating_policy(
    s: &Server,
    name: &str,
    group: &str,
    resource: &str,
    spec: Value,
    binding: Value,
) {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": [resource]}]});
    apply(
        s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
                "metadata": {"name": name}, "spec": spec}),
    );
    let mut bspec = json!({"policyName": name,
        "matchResources": {"namespaceSelector": {"matchLabels": {"env": "maps"}}}});
    for (k, v) in binding.as_object().unwrap() {
        bspec[k] = v.clone();
    }
    apply(
        s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
                "metadata": {"name": name}, "spec": bspec}),
    );
}

fn mutation(patch_type: &str, expr: &str) -> Value {
    match patch_type {
        "ApplyConfiguration" => {
            json!({"patchType": patch_type, "applyConfiguration": {"expression": expr}})
        }
        _ => json!({"patchType": patch_type, "jsonPatch": {"expression": expr}}),
    }
}

/// Only objects with label `case=<c>` (the policies below each test one case).
fn only_case(c: &str) -> Value {
    json!([{"name": "case", "expression": format!(
        "has(object.metadata.labels) && 'case' in object.metadata.labels && object.metadata.labels['case'] == '{c}'")}])
}

fn configmap_in_maps(
    s: &Server,
    name: &str,
    labels: Value,
    extra: &[&str],
) -> std::process::Output {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "maps", "labels": labels}});
    let mut args = vec!["create", "-o", "json", "-f", "-"];
    args.extend_from_slice(extra);
    s.kubectl_stdin(&args, &cm.to_string())
}

fn stdout_json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(o)))
}

fn mutating_policies(s: &Server) {
    s.kubectl_ok(&["create", "namespace", "maps"]);
    s.kubectl_ok(&["label", "namespace", "maps", "env=maps"]);
    s.kubectl_ok(&[
        "create",
        "configmap",
        "team-defaults",
        "-n",
        "maps",
        "--from-literal=team=blue",
    ]);
    // ApplyConfiguration with params: the team label from the binding's ConfigMap; names
    // starting with `raw-` are left alone (matchConditions).
    mutating_policy(
        s,
        "team-label",
        "",
        "configmaps",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConditions": [{"name": "not-raw", "expression": "!object.metadata.name.startsWith('raw-') && object.metadata.name != 'team-defaults'"}],
            "variables": [{"name": "team", "expression": "params.data.team"}],
            "mutations": [mutation("ApplyConfiguration",
                "Object{metadata: Object.metadata{labels: {'team': variables.team}}}")]
        }),
        json!({"paramRef": {"name": "team-defaults", "parameterNotFoundAction": "Deny"}}),
    );
    let cm = poll("the policy to apply", Duration::from_secs(10), || {
        let out = configmap_in_maps(s, "labelled", json!({"app": "web"}), &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let cm = stdout_json(&out);
        let labelled = cm["metadata"]["labels"].get("team").is_some();
        s.kubectl_ok(&["delete", "configmap", "labelled", "-n", "maps"]);
        labelled.then_some(cm)
    })
    .expect("labelled");
    assert_eq!(
        cm["metadata"]["labels"],
        json!({"app": "web", "team": "blue"})
    );
    let got: Value = serde_json::from_str(&s.kubectl_ok(&[
        "get",
        "mutatingadmissionpolicy",
        "team-label",
        "-o",
        "json",
    ]))
    .expect("json");
    assert_eq!(got["spec"]["failurePolicy"], "Fail");
    let table = s.kubectl_ok(&["get", "mutatingadmissionpolicies"]);
    assert!(
        table.contains("MUTATIONS") && table.contains("v1/ConfigMap"),
        "{table}"
    );
    // matchConditions false: not mutated.
    let out = configmap_in_maps(s, "raw-one", json!({"app": "web"}), &[]);
    assert_eq!(
        stdout_json(&out)["metadata"]["labels"],
        json!({"app": "web"})
    );
    // --dry-run=server runs the policy and stores nothing.
    let out = configmap_in_maps(s, "dry", json!({}), &["--dry-run=server"]);
    assert_eq!(stdout_json(&out)["metadata"]["labels"]["team"], "blue");
    let out = s.kubectl(&["get", "configmap", "dry", "-n", "maps"]);
    assert!(stderr(&out).contains("NotFound"), "{}", stderr(&out));

    // JSONPatch: an annotation (a key escaped with jsonpatch.escapeKey) and a container's env.
    mutating_policy(
        s,
        "env-patch",
        "apps",
        "deployments",
        json!({"mutations": [mutation("JSONPatch", r#"[
            JSONPatch{op: "add", path: "/metadata/annotations", value: {}},
            JSONPatch{op: "add", path: "/metadata/annotations/" + jsonpatch.escapeKey("example.com/patched"), value: "yes"},
            JSONPatch{op: "add", path: "/spec/template/spec/containers/0/env", value: [
                Object.spec.template.spec.containers.env{name: "MODE", value: "maps"}]}
        ]"#)]}),
        json!({}),
    );
    let dep = poll(
        "the JSONPatch policy to apply",
        Duration::from_secs(10),
        || {
            let out = s.kubectl(&[
                "create",
                "deployment",
                "web",
                "-n",
                "maps",
                "--image=nginx",
                "-o",
                "json",
            ]);
            assert!(out.status.success(), "{}", stderr(&out));
            let d = stdout_json(&out);
            let patched = d["metadata"].get("annotations").is_some();
            s.kubectl_ok(&["delete", "deployment", "web", "-n", "maps"]);
            patched.then_some(d)
        },
    )
    .expect("patched");
    assert_eq!(dep["metadata"]["annotations"]["example.com/patched"], "yes");
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "MODE", "value": "maps"}])
    );

    // A failing expression: failurePolicy Fail denies, Ignore admits unchanged.
    for fp in ["Fail", "Ignore"] {
        mutating_policy(
            s,
            &format!("broken-{}", fp.to_lowercase()),
            "",
            "configmaps",
            json!({"failurePolicy": fp, "matchConditions": only_case(&fp.to_lowercase()),
                   "mutations": [mutation("ApplyConfiguration", "Object{data: {'x': string(1/0)}}")]}),
            json!({}),
        );
    }
    let err = poll(
        "the failing policy to apply",
        Duration::from_secs(10),
        || {
            let out = configmap_in_maps(s, "broken", json!({"case": "fail"}), &[]);
            if out.status.success() {
                s.kubectl_ok(&["delete", "configmap", "broken", "-n", "maps"]);
                return None;
            }
            Some(stderr(&out))
        },
    )
    .expect("denied");
    assert!(
        err.contains("policy 'broken-fail' with binding 'broken-fail' denied request: expression 'Object{data: {'x': string(1/0)}}' resulted in error"),
        "{err}"
    );
    let r = s.http().post_json(
        "/api/v1/namespaces/maps/configmaps",
        &json!({"metadata": {"name": "broken", "labels": {"case": "fail"}}}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["reason"], "Invalid");
    let out = configmap_in_maps(s, "ignored", json!({"case": "ignore"}), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout_json(&out).get("data").is_none());

    // reinvocationPolicy IfNeeded: `a-copy` runs before `b-source` and copies the label it
    // sets, so it needs the reinvocation.
    mutating_policy(
        s,
        "a-copy",
        "",
        "configmaps",
        json!({"reinvocationPolicy": "IfNeeded", "matchConditions": only_case("reinvoke"),
               "mutations": [mutation("ApplyConfiguration",
                "'src' in object.metadata.labels ? Object{metadata: Object.metadata{labels: {'copy': object.metadata.labels['src']}}} : Object{}")]}),
        json!({}),
    );
    mutating_policy(
        s,
        "b-source",
        "",
        "configmaps",
        json!({"matchConditions": only_case("reinvoke"),
               "mutations": [mutation("ApplyConfiguration", "Object{metadata: Object.metadata{labels: {'src': 'b'}}}")]}),
        json!({}),
    );
    let cm = poll("both policies to apply", Duration::from_secs(10), || {
        let out = configmap_in_maps(s, "reinvoked", json!({"case": "reinvoke"}), &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let cm = stdout_json(&out);
        s.kubectl_ok(&["delete", "configmap", "reinvoked", "-n", "maps"]);
        cm["metadata"]["labels"].get("src").is_some().then_some(cm)
    })
    .expect("mutated");
    assert_eq!(cm["metadata"]["labels"]["copy"], "b", "{cm}");

    for p in [
        "team-label",
        "env-patch",
        "broken-fail",
        "broken-ignore",
        "a-copy",
        "b-source",
    ] {
        s.kubectl_ok(&["delete", "mutatingadmissionpolicybinding", p]);
        s.kubectl_ok(&["delete", "mutatingadmissionpolicy", p]);
    }
}

/// Writes through subresources are admitted as kube admits them: `kubectl scale` as an UPDATE of
/// `deployments/scale` whose object is an autoscaling/v1 Scale, `kubectl create token` as a
/// CREATE of `serviceaccounts/token` whose object is a TokenRequest. A policy on them holds.
#[test]
fn scale_and_token_writes_are_admitted() {
    let s = Server::start().expect("server starts");
    let policy = |name: &str, group: &str, version: &str, resource: &str, op: &str, expr: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": [version],
                    "operations": [op], "resources": [resource]}]},
                "validations": [{"expression": expr, "message": format!("{name} refused it")}]}})
    };
    let binding = |name: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]}})
    };
    apply(
        &s,
        &policy(
            "scale-limit",
            "apps",
            "v1",
            "deployments/scale",
            "UPDATE",
            "object.kind == 'Scale' && object.spec.replicas <= 5",
        ),
    );
    apply(&s, &binding("scale-limit"));
    apply(
        &s,
        &policy(
            "token-limit",
            "",
            "v1",
            "serviceaccounts/token",
            "CREATE",
            "object.kind == 'TokenRequest' && object.spec.expirationSeconds <= 3600",
        ),
    );
    apply(&s, &binding("token-limit"));
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    let err = until_denied(&s, &["scale", "deployment/web", "--replicas=7"]);
    assert!(err.contains("scale-limit refused it"), "{err}");
    s.kubectl_ok(&["scale", "deployment/web", "--replicas=3"]);
    let web = s.kubectl_json(&["get", "deployment", "web"]);
    assert_eq!(web["spec"]["replicas"], 3);
    // Mutating admission sees the Scale too, and its replicas reach the Deployment (kube's
    // scaleUpdatedObjectInfo carries spec.replicas back).
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "scale-cap"},
            "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["UPDATE"], "resources": ["deployments/scale"]}]},
                "matchConditions": [{"name": "over", "expression": "object.kind == 'Scale' && object.spec.replicas > 4"}],
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                    "[JSONPatch{op: 'replace', path: '/spec/replicas', value: 4}]"}}]}}),
    );
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "scale-cap"},
            "spec": {"policyName": "scale-cap"}}),
    );
    poll("the cap to apply", Duration::from_secs(10), || {
        s.kubectl_ok(&["scale", "deployment/web", "--replicas=5"]);
        let web = s.kubectl_json(&["get", "deployment", "web"]);
        let r = web["spec"]["replicas"].clone();
        s.kubectl_ok(&["scale", "deployment/web", "--replicas=3"]);
        (r == 4).then_some(())
    })
    .expect("a scale to 5 is capped at 4");
    let err = until_denied(&s, &["create", "token", "default", "--duration=2h"]);
    assert!(err.contains("token-limit refused it"), "{err}");
    s.kubectl_ok(&["create", "token", "default", "--duration=30m"]);

    // Validating admission of an update sees the generation already bumped for a spec change
    // (kube's PrepareForUpdate runs first). The policy also refuses a probe label, to tell when
    // it is in force.
    let mut gen = policy(
        "gen-check",
        "apps",
        "v1",
        "deployments",
        "UPDATE",
        "object.spec.replicas == oldObject.spec.replicas || object.metadata.generation > oldObject.metadata.generation",
    );
    gen["spec"]["validations"].as_array_mut().unwrap().push(
        json!({"expression": "!has(object.metadata.labels) || !('probe' in object.metadata.labels)",
                     "message": "probe"}),
    );
    apply(&s, &gen);
    apply(&s, &binding("gen-check"));
    until_denied(&s, &["label", "deployment", "web", "probe=1"]);
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":2}}"#,
    ]);
}

/// The garbage collector and the namespace controller delete as kube's do, through the API as
/// their service accounts: validating admission sees their deletes (and can hold them).
#[test]
fn controller_deletes_are_admitted() {
    let s = Server::start().expect("server starts");
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "keep"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "!has(oldObject.metadata.labels) || !('probe' in oldObject.metadata.labels)",
                 "message": "probe"},
                {"expression": "!request.userInfo.username.startsWith('system:serviceaccount:kube-system:') || !has(oldObject.metadata.labels) || !('keep' in oldObject.metadata.labels)",
                 "message": "controllers keep it"}]}});
    apply(&s, &policy);
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "keep"},
            "spec": {"policyName": "keep", "validationActions": ["Deny"]}}),
    );
    s.kubectl_ok(&["create", "configmap", "probe"]);
    s.kubectl_ok(&["label", "configmap", "probe", "probe=1"]);
    until_denied(&s, &["delete", "configmap", "probe"]);

    // The collector: of two dependents of a deleted owner, the one the policy keeps stays.
    let owner = s
        .http()
        .post_json(
            "/api/v1/namespaces/default/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
        )
        .json();
    let owned = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner["metadata"]["uid"]}]);
    for (name, labels) in [("kept", json!({"keep": "1"})), ("gone", json!({}))] {
        let r = s.http().post_json(
            "/api/v1/namespaces/default/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": labels, "ownerReferences": owned}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    s.kubectl_ok(&["delete", "configmap", "owner"]);
    let path = |ns: &str, name: &str| format!("/api/v1/namespaces/{ns}/configmaps/{name}");
    poll(
        "the collector deletes gone",
        Duration::from_secs(20),
        || (s.http().get(&path("default", "gone")).status == 404).then_some(()),
    )
    .expect("gone is collected");
    assert_eq!(s.http().get(&path("default", "kept")).status, 200);

    // The namespace controller: the namespace stays, and its condition says why.
    s.kubectl_ok(&["create", "namespace", "doomed"]);
    s.kubectl_ok(&["create", "configmap", "kept", "-n", "doomed"]);
    s.kubectl_ok(&["label", "configmap", "kept", "keep=1", "-n", "doomed"]);
    s.kubectl_ok(&["create", "configmap", "other", "-n", "doomed"]);
    s.kubectl_ok(&["delete", "namespace", "doomed", "--wait=false"]);
    let message = poll("the content failure", Duration::from_secs(20), || {
        let ns = s.http().get("/api/v1/namespaces/doomed").json();
        ns["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "NamespaceDeletionContentFailure" && c["status"] == "True")
            .map(|c| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .expect("the namespace reports what it could not delete");
    assert!(
        message.contains("configmaps/kept") && message.contains("controllers keep it"),
        "{message}"
    );
    assert_eq!(s.http().get(&path("doomed", "other")).status, 404);
    assert_eq!(s.http().get(&path("doomed", "kept")).status, 200);

    // Without the policy, both finish.
    s.kubectl_ok(&["delete", "validatingadmissionpolicybinding", "keep"]);
    poll("kept collected", Duration::from_secs(30), || {
        (s.http().get(&path("default", "kept")).status == 404).then_some(())
    })
    .expect("the collector retries");
    poll("the namespace goes", Duration::from_secs(30), || {
        (s.http().get("/api/v1/namespaces/doomed").status == 404).then_some(())
    })
    .expect("the namespace controller retries");
}

/// `/equivalent`: refuses HPAs named `deny-*`, saying what it was sent; `/equivalent-mutate`
/// sets a CPU target (an autoscaling/v2 `spec.metrics`) on those named `mut-*`.
fn equivalent_handler(path: &str, req: &Value) -> Value {
    let name = req["name"].as_str().unwrap_or("");
    let gv = |v: &Value| {
        format!(
            "{}/{}",
            v["group"].as_str().unwrap_or(""),
            v["version"].as_str().unwrap_or("")
        )
    };
    match path {
        "/equivalent" if name.starts_with("deny-") => {
            let message = format!(
                "kind {} resource {} requestKind {} requestResource {} object {} metrics {}",
                gv(&req["kind"]),
                gv(&req["resource"]),
                gv(&req["requestKind"]),
                gv(&req["requestResource"]),
                req["object"]["apiVersion"].as_str().unwrap_or(""),
                req["object"]["spec"]["metrics"].is_array(),
            );
            json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": message}})
        }
        "/equivalent-mutate" if name.starts_with("mut-") => {
            use base64::Engine;
            let patch = json!([{"op": "add", "path": "/spec/metrics", "value": [{"type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 42}}}]}]);
            json!({"allowed": true, "patchType": "JSONPatch",
                   "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
        }
        _ => json!({"allowed": true}),
    }
}

/// kube's `matchPolicy: Equivalent` (the default of v1 webhooks and policies): a rule for one
/// version also matches the same objects written through another (HPAs at autoscaling/v1 and
/// v2, core and events.k8s.io Events, a CRD's versions); the webhook or policy sees the object
/// converted to the version it asked for, `requestKind` names what the client wrote, and a
/// mutation is converted back. `Exact` matches only the version named.
#[test]
fn equivalent_resources_are_matched() {
    let s = Server::start().expect("server starts");
    s.kubectl_ok(&["create", "namespace", "eq"]);
    let wh = start_webhook(equivalent_handler).expect("webhook starts");
    let hpa_v2_rule = json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"],
        "apiVersions": ["v2"], "resources": ["horizontalpodautoscalers"]}],
        "namespaceSelector": {}});
    for (kind, name, path) in [
        (
            "ValidatingWebhookConfiguration",
            "eq-validate",
            "/equivalent",
        ),
        (
            "MutatingWebhookConfiguration",
            "eq-mutate",
            "/equivalent-mutate",
        ),
    ] {
        apply(
            &s,
            &webhook_config(
                kind,
                name,
                &format!("{name}.turtles.test"),
                &format!("{}{path}", wh.url),
                &wh.ca_bundle,
                hpa_v2_rule.clone(),
            ),
        );
    }
    let hpa_v1 = |name: &str| {
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "eq"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 3}})
    };
    let http = s.http();
    let v1_path = "/apis/autoscaling/v1/namespaces/eq/horizontalpodautoscalers";
    // The v2 webhook sees a v1 write as v2: kind and resource v2, requestKind v1, object v2.
    let denied = poll(
        "the webhook to see v1 writes",
        Duration::from_secs(10),
        || {
            let mut hpa = hpa_v1("deny-one");
            hpa["spec"]["targetCPUUtilizationPercentage"] = json!(60);
            let r = http.post_json(v1_path, &hpa);
            (r.status == 403).then(|| r.json())
        },
    )
    .expect("denied");
    let message = denied["message"].as_str().unwrap_or("");
    assert!(
        message.contains(
            "kind autoscaling/v2 resource autoscaling/v2 requestKind autoscaling/v1 \
             requestResource autoscaling/v1 object autoscaling/v2 metrics true"
        ),
        "{denied}"
    );
    // The mutation is made to the v2 object and comes back as v1's CPU target.
    let r = http.post_json(v1_path, &hpa_v1("mut-one"));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["spec"]["targetCPUUtilizationPercentage"],
        42,
        "{}",
        r.text()
    );
    // `Exact`: only the version named.
    let mut exact = webhook_config(
        "ValidatingWebhookConfiguration",
        "eq-validate",
        "eq-validate.turtles.test",
        &format!("{}/equivalent", wh.url),
        &wh.ca_bundle,
        hpa_v2_rule,
    );
    exact["webhooks"][0]["matchPolicy"] = json!("Exact");
    apply(&s, &exact);
    poll("Exact to apply", Duration::from_secs(10), || {
        let r = http.post_json(v1_path, &hpa_v1(&format!("deny-{}", uuid_suffix())));
        (r.status == 201).then_some(())
    })
    .expect("Exact lets v1 writes through");
    let r = http.post_json(
        "/apis/autoscaling/v2/namespaces/eq/horizontalpodautoscalers",
        &json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "deny-v2", "namespace": "eq"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 3}}),
    );
    assert_eq!(r.status, 403, "{}", r.text());

    // A policy on events.k8s.io Events sees a core Event in that shape (`note`), and its denial
    // names the resource the client wrote.
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "no-secret-notes"},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": ["events.k8s.io"], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["events"]}]},
                "validations": [{"expression": "!has(object.note) || object.note != 'secret'",
                    "messageExpression": "'note seen by ' + request.kind.group + ', written to ' + request.requestResource.resource + ' of v1'"}]}}),
    );
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-secret-notes"},
            "spec": {"policyName": "no-secret-notes", "validationActions": ["Deny"]}}),
    );
    let event = |name: &str, message: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "eq"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "eq"},
            "reason": "Test", "message": message, "type": "Normal"})
    };
    let denied = poll(
        "the policy to see core Events",
        Duration::from_secs(10),
        || {
            let r = http.post_json("/api/v1/namespaces/eq/events", &event("e1", "secret"));
            (r.status == 422).then(|| r.json())
        },
    )
    .expect("denied");
    assert_eq!(
        denied["message"],
        "events \"e1\" is forbidden: ValidatingAdmissionPolicy 'no-secret-notes' with binding \
         'no-secret-notes' denied request: note seen by events.k8s.io, written to events of v1",
        "{denied}"
    );
    let r = http.post_json("/api/v1/namespaces/eq/events", &event("e2", "public"));
    assert_eq!(r.status, 201, "{}", r.text());

    // A CRD's versions are equivalent: a policy on v2 sees a v1 write as v2.
    s.kubectl_stdin(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.eq.test"},
            "spec": {"group": "eq.test", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                        {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                    {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema":
                        {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
        .to_string(),
    );
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "gadgets-v2"},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": ["eq.test"], "apiVersions": ["v2"],
                    "operations": ["CREATE"], "resources": ["gadgets"]}]},
                "validations": [{"expression": "false",
                    "messageExpression": "'seen as ' + object.apiVersion + ', written as ' + request.requestKind.version"}]}}),
    );
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "gadgets-v2"},
            "spec": {"policyName": "gadgets-v2", "validationActions": ["Deny"]}}),
    );
    let denied = poll(
        "the policy to see v1 gadgets",
        Duration::from_secs(20),
        || {
            let r = http.post_json(
                "/apis/eq.test/v1/namespaces/eq/gadgets",
                &json!({"apiVersion": "eq.test/v1", "kind": "Gadget",
                "metadata": {"name": "g1", "namespace": "eq"}}),
            );
            (r.status == 422).then(|| r.json())
        },
    )
    .expect("denied");
    assert!(
        denied["message"]
            .as_str()
            .unwrap_or("")
            .ends_with("denied request: seen as eq.test/v2, written as v1"),
        "{denied}"
    );
}

fn uuid_suffix() -> String {
    turtles_tests::uuid_like()[..8].to_owned()
}

/// A DELETE's admission request carries its options as the client sent them, as kube's does:
/// a policy can refuse an orphaning delete.
#[test]
fn delete_options_reach_admission() {
    let s = Server::start().expect("server starts");
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "no-orphans"},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["DELETE"], "resources": ["configmaps"]}]},
                "validations": [{
                    "expression": "!has(request.options.propagationPolicy) || request.options.propagationPolicy != 'Orphan'",
                    "messageExpression": "'no orphaning (grace ' + string(request.options.gracePeriodSeconds) + ', ' + request.options.kind + ')'",
                    "reason": "Forbidden"}]}}),
    );
    apply(
        &s,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-orphans"},
            "spec": {"policyName": "no-orphans", "validationActions": ["Deny"]}}),
    );
    s.kubectl_ok(&["create", "configmap", "kept"]);
    let err = until_denied(
        &s,
        &[
            "delete",
            "configmap",
            "kept",
            "--cascade=orphan",
            "--grace-period=7",
        ],
    );
    assert!(
        err.contains("no orphaning (grace 7, DeleteOptions)"),
        "{err}"
    );
    s.kubectl_ok(&["delete", "configmap", "kept"]);
}
