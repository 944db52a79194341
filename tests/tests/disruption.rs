//! PodDisruptionBudgets end to end, with the real binary and the real kubectl: the disruption
//! controller keeps each budget's status from the Pods it selects, `pods/eviction` deletes a
//! Pod only when its budget allows, and `kubectl drain` evicts through it (it looks for
//! `pods/eviction` in discovery, and deletes without asking any budget when it is not there).

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{assert_status, poll, Server};

const NS: &str = "default";

/// A Pod on `node`, labelled `app`, controlled by `owner` (kind, name, uid) when given, and
/// then Running and Ready (or Running and not Ready). No kubelet runs here: the Pods have no
/// grace period, so that an eviction removes them at once (a graceful one would wait for it).
fn pod(
    s: &Server,
    name: &str,
    node: &str,
    app: &str,
    owner: Option<(&str, &str, &str)>,
    ready: bool,
) {
    let http = s.http();
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "nginx"}]}});
    if let Some((kind, owner, uid)) = owner {
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": kind,
            "name": owner, "uid": uid, "controller": true}]);
    }
    let r = http.post_json(&format!("/api/v1/namespaces/{NS}/pods"), &p);
    assert_eq!(r.status, 201, "{}", r.text());
    let status = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
    let r = http.patch(
        &format!("/api/v1/namespaces/{NS}/pods/{name}/status"),
        "application/merge-patch+json",
        &status,
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

fn replica_set(s: &Server, name: &str, replicas: i64) -> String {
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let r = s
        .http()
        .post_json(&format!("/apis/apps/v1/namespaces/{NS}/replicasets"), &rs);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["metadata"]["uid"].as_str().unwrap().to_owned()
}

fn budget(s: &Server, name: &str, app: &str, spec: Value) {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": app}});
    let b = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name}, "spec": spec});
    let r = s.http().post_json(
        &format!("/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"),
        &b,
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

fn get_budget(s: &Server, name: &str) -> Value {
    s.http()
        .get(&format!(
            "/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/{name}"
        ))
        .json()
}

/// Wait until the budget's status is the controller's for its current generation and `want`
/// (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed) holds.
fn wait_status(s: &Server, name: &str, want: (i64, i64, i64, i64)) -> Value {
    poll(
        &format!("{name}'s status {want:?}"),
        Duration::from_secs(10),
        || {
            let b = get_budget(s, name);
            let st = &b["status"];
            let got = (
                st["expectedPods"].as_i64().unwrap_or(-1),
                st["desiredHealthy"].as_i64().unwrap_or(-1),
                st["currentHealthy"].as_i64().unwrap_or(-1),
                st["disruptionsAllowed"].as_i64().unwrap_or(-1),
            );
            (st["observedGeneration"] == b["metadata"]["generation"] && got == want).then_some(b)
        },
    )
    .unwrap_or_else(|e| panic!("{e}: last {}", get_budget(s, name)["status"]))
}

fn condition(b: &Value) -> (String, String, String) {
    let c = b["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "DisruptionAllowed")
        .unwrap_or_else(|| panic!("no DisruptionAllowed condition: {b}"));
    let s = |f: &str| c[f].as_str().unwrap_or_default().to_owned();
    (s("status"), s("reason"), s("message"))
}

fn evict(s: &Server, pod: &str, extra: Value) -> turtles_tests::Reply {
    let mut e = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": NS}});
    if let Some(o) = extra.as_object() {
        for (k, v) in o {
            e[k] = v.clone();
        }
    }
    s.http()
        .post_json(&format!("/api/v1/namespaces/{NS}/pods/{pod}/eviction"), &e)
}

fn pod_names(s: &Server) -> Vec<String> {
    let list = s
        .http()
        .get(&format!("/api/v1/namespaces/{NS}/pods"))
        .json();
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn kubectl_drain_evicts_only_what_the_budget_allows() {
    let s = Server::start().unwrap();
    // kubectl drain evicts only when discovery offers the subresource, group and version
    // included (client-go's CheckEvictionSupport); otherwise it deletes.
    let core = s.http().get("/api/v1").json();
    let entry = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .cloned()
        .expect("pods/eviction in discovery");
    assert_eq!(
        (&entry["group"], &entry["version"], &entry["kind"]),
        (&json!("policy"), &json!("v1"), &json!("Eviction"))
    );
    assert_eq!(entry["verbs"], json!(["create"]));

    for n in ["n1", "n2"] {
        s.kubectl_stdin(
            &["apply", "-f", "-"],
            &format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {n}}}\n"),
        );
    }
    let uid = replica_set(&s, "web", 4);
    for (name, node) in [
        ("web-0", "n1"),
        ("web-1", "n1"),
        ("web-2", "n1"),
        ("web-3", "n2"),
    ] {
        pod(
            &s,
            name,
            node,
            "web",
            Some(("ReplicaSet", "web", &uid)),
            true,
        );
    }
    budget(&s, "web", "web", json!({"minAvailable": 3}));
    let b = wait_status(&s, "web", (4, 3, 4, 1));
    assert_eq!(
        condition(&b),
        ("True".into(), "SufficientPods".into(), String::new())
    );
    assert_eq!(
        s.kubectl_ok(&["get", "pdb", "web", "--no-headers"])
            .split_whitespace()
            .nth(3),
        Some("1"),
        "ALLOWED DISRUPTIONS"
    );

    // One disruption allowed: the drain evicts one of n1's three Pods and retries the others
    // until its timeout.
    let out = s.kubectl(&["drain", "n1", "--timeout=3s"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{text}"
    );
    let left = pod_names(&s);
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left.contains(&"web-3".to_owned()), "{left:?}");
    let node = s.kubectl_json(&["get", "node", "n1"]);
    assert_eq!(node["spec"]["unschedulable"], true, "cordoned");
    let b = wait_status(&s, "web", (3, 3, 3, 0));
    assert_eq!(
        condition(&b),
        ("False".into(), "InsufficientPods".into(), String::new())
    );

    // Another eviction: kube's 429, with the budget's numbers as the cause.
    let victim = left.iter().find(|n| *n != "web-3").unwrap().clone();
    let r = evict(&s, &victim, json!({}));
    let st = assert_status(&r, 429, "TooManyRequests");
    assert_eq!(
        st["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
                "message": "The disruption budget web needs 3 healthy pods and has 3 currently"}])
    );
    assert_eq!(pod_names(&s).len(), 3);

    // A percentage counts the replicas the Pods' controller wants (the ReplicaSet's 4):
    // 75% of 4 may be unavailable, rounded up, so one must stay healthy.
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"minAvailable":null,"maxUnavailable":"75%"}}"#,
    ]);
    let b = wait_status(&s, "web", (4, 1, 3, 2));
    assert_eq!(b["metadata"]["generation"], 2);
    let out = s.kubectl(&["drain", "n1", "--timeout=30s"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(pod_names(&s), ["web-3"]);
    wait_status(&s, "web", (4, 1, 1, 0));
}

#[test]
fn an_eviction_is_kubes_delete_that_asks_first() {
    let s = Server::start().unwrap();
    let http = s.http();
    let uid = replica_set(&s, "api", 2);
    pod(
        &s,
        "api-0",
        "n1",
        "api",
        Some(("ReplicaSet", "api", &uid)),
        true,
    );
    pod(
        &s,
        "api-1",
        "n1",
        "api",
        Some(("ReplicaSet", "api", &uid)),
        true,
    );
    // A finalizer keeps the evicted Pod visible.
    let r = http.patch(
        &format!("/api/v1/namespaces/{NS}/pods/api-0"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    budget(&s, "api", "api", json!({"maxUnavailable": 1}));
    wait_status(&s, "api", (2, 1, 2, 1));

    // What kube refuses before it looks at the Pod.
    let r = evict(
        &s,
        "api-0",
        json!({"metadata": {"name": "api-1", "namespace": NS}}),
    );
    assert_eq!(
        assert_status(&r, 400, "BadRequest")["message"],
        "name in URL does not match name in Eviction object"
    );
    let r = evict(&s, "api-0", json!({"kind": "Binding"}));
    assert_status(&r, 400, "BadRequest");
    let r = evict(&s, "missing", json!({}));
    assert_status(&r, 404, "NotFound");
    let r = http.get(&format!("/api/v1/namespaces/{NS}/pods/api-0/eviction"));
    assert_eq!(r.status, 405, "{}", r.text());

    // A dry run answers as the eviction would, and changes nothing.
    let before = get_budget(&s, "api");
    let r = http.post_json(
        &format!("/api/v1/namespaces/{NS}/pods/api-0/eviction?dryRun=All"),
        &json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "api-0"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let p = http
        .get(&format!("/api/v1/namespaces/{NS}/pods/api-0"))
        .json();
    assert!(p["metadata"]["deletionTimestamp"].is_null(), "{p}");
    assert_eq!(
        get_budget(&s, "api")["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );

    // The eviction: kube's Status, the Pod marked as the disruption's target and deleted (its
    // finalizer holds it), the allowance spent and the Pod recorded until it is gone.
    let r = evict(&s, "api-0", json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    let p = http
        .get(&format!("/api/v1/namespaces/{NS}/pods/api-0"))
        .json();
    assert!(p["metadata"]["deletionTimestamp"].is_string(), "{p}");
    let target = p["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "DisruptionTarget")
        .cloned()
        .unwrap_or_else(|| panic!("no DisruptionTarget: {p}"));
    assert_eq!(target["status"], "True");
    assert_eq!(target["reason"], "EvictionByEvictionAPI");
    assert_eq!(target["message"], "Eviction API: evicting");
    // The terminating Pod no longer counts as healthy, and leaves `disruptedPods` (the
    // controller may first see the eviction's record, then the deletion).
    poll(
        "api-0 out of disruptedPods",
        Duration::from_secs(10),
        || {
            let b = wait_status(&s, "api", (2, 1, 1, 0));
            b["status"]["disruptedPods"].is_null().then_some(())
        },
    )
    .unwrap();
    // A Pod already going is deleted again without asking the budget.
    let r = evict(&s, "api-0", json!({}));
    assert_eq!(r.status, 201, "{}", r.text());

    // A Pod that is not running yet does not need the budget either.
    let r = http.post_json(
        &format!("/api/v1/namespaces/{NS}/pods"),
        &json!({"metadata": {"name": "api-pending", "labels": {"app": "api"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // (A precondition is checked against the Pod before it is marked and deleted. Against a
    // Pod the budget covers it would come after the allowance is spent, as in kube.)
    let r = evict(
        &s,
        "api-pending",
        json!({"deleteOptions": {"preconditions": {"uid": "not-its-uid"}}}),
    );
    assert_status(&r, 409, "Conflict");
    let r = evict(&s, "api-pending", json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        http.get(&format!("/api/v1/namespaces/{NS}/pods/api-pending"))
            .status,
        404
    );

    // A Pod two budgets select cannot be evicted (kube's 500).
    budget(&s, "api-too", "api", json!({"minAvailable": 0}));
    let r = evict(&s, "api-1", json!({}));
    assert_eq!(r.status, 500, "{}", r.text());
    let st = r.json();
    assert_eq!(
        st["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    assert!(st.get("reason").is_none(), "{st}");
    assert_eq!(pod_names(&s), ["api-0", "api-1"]);
}

#[test]
fn unready_pods_and_budgets_that_cannot_be_computed() {
    let s = Server::start().unwrap();
    let uid = replica_set(&s, "db", 3);
    pod(
        &s,
        "db-0",
        "n1",
        "db",
        Some(("ReplicaSet", "db", &uid)),
        true,
    );
    pod(
        &s,
        "db-1",
        "n1",
        "db",
        Some(("ReplicaSet", "db", &uid)),
        true,
    );
    pod(
        &s,
        "db-2",
        "n1",
        "db",
        Some(("ReplicaSet", "db", &uid)),
        false,
    );
    // Two healthy of the two needed: no disruption allowed, but the unready Pod is not one of
    // the healthy, so it may go without spending anything (kube's IfHealthyBudget default).
    budget(&s, "db", "db", json!({"minAvailable": 2}));
    wait_status(&s, "db", (3, 2, 2, 0));
    let r = evict(&s, "db-0", json!({}));
    assert_status(&r, 429, "TooManyRequests");
    let r = evict(&s, "db-2", json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    wait_status(&s, "db", (2, 2, 2, 0));

    // With fewer healthy than needed the unready Pod stays, unless the budget says
    // unhealthyPodEvictionPolicy: AlwaysAllow.
    pod(
        &s,
        "db-3",
        "n1",
        "db",
        Some(("ReplicaSet", "db", &uid)),
        false,
    );
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "db",
        "--type=merge",
        "-p",
        r#"{"spec":{"minAvailable":3}}"#,
    ]);
    wait_status(&s, "db", (3, 3, 2, 0));
    let r = evict(&s, "db-3", json!({}));
    assert_status(&r, 429, "TooManyRequests");
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "db",
        "--type=merge",
        "-p",
        r#"{"spec":{"unhealthyPodEvictionPolicy":"AlwaysAllow"}}"#,
    ]);
    wait_status(&s, "db", (3, 3, 2, 0));
    let r = evict(&s, "db-3", json!({}));
    assert_eq!(r.status, 201, "{}", r.text());

    // A percentage counts the scale the Pods' controllers want, and follows it when it
    // changes (no Pod changes here: nothing runs the ReplicaSet).
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "db",
        "--type=merge",
        "-p",
        r#"{"spec":{"minAvailable":"10%"}}"#,
    ]);
    wait_status(&s, "db", (3, 1, 2, 1));
    s.kubectl_ok(&["scale", "rs", "db", "--replicas=20"]);
    wait_status(&s, "db", (20, 2, 2, 0));
    s.kubectl_ok(&["scale", "rs", "db", "--replicas=3"]);
    wait_status(&s, "db", (3, 1, 2, 1));

    // A Pod controlled by a kind without a scale makes the status unknowable: the budget
    // allows nothing and says why, keeping the numbers it had.
    let rev = s.http().post_json(
        &format!("/apis/apps/v1/namespaces/{NS}/controllerrevisions"),
        &json!({"metadata": {"name": "rev"}, "revision": 1, "data": {"x": 1}}),
    );
    assert_eq!(rev.status, 201, "{}", rev.text());
    let rev_uid = rev.json()["metadata"]["uid"].as_str().unwrap().to_owned();
    pod(
        &s,
        "stray",
        "n1",
        "db",
        Some(("ControllerRevision", "rev", &rev_uid)),
        true,
    );
    let b = poll("SyncFailed", Duration::from_secs(10), || {
        let b = get_budget(&s, "db");
        (condition(&b).1 == "SyncFailed").then_some(b)
    })
    .unwrap();
    assert_eq!(
        condition(&b),
        (
            "False".into(),
            "SyncFailed".into(),
            "controllerrevisions.apps does not implement the scale subresource".into()
        )
    );
    assert_eq!(b["status"]["disruptionsAllowed"], 0);
    let r = evict(&s, "db-0", json!({}));
    let st = assert_status(&r, 429, "TooManyRequests");
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "The disruption budget db needs 1 healthy pods and has 2 currently"
    );

    // Invalid budgets are refused with kube's messages.
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: bad}\n\
         spec: {minAvailable: 1, maxUnavailable: \"120%\", selector: {matchLabels: {app: x}}}\n",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("minAvailable and maxUnavailable cannot be both set")
            && err.contains(
                "spec.maxUnavailable: Invalid value: \"120%\": must not be greater than 100%"
            ),
        "{err}"
    );
}

#[test]
fn evicting_is_its_own_right() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["create", "namespace", "other"]);
    let (_, evictor) = s.mint("evictor", &[]).unwrap();
    let (_, deleter) = s.mint("deleter", &[]).unwrap();
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "role",
        "evict",
        "--verb=create",
        "--resource=pods/eviction",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "role",
        "delete",
        "--verb=create,delete,get",
        "--resource=pods",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "evict",
        "--role=evict",
        "--user=evictor",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "delete",
        "--role=delete",
        "--user=deleter",
    ]);
    for (ns, p) in [("team", "a"), ("team", "b"), ("other", "c")] {
        s.kubectl_stdin(
            &["-n", ns, "apply", "-f", "-"],
            &format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {p}}}\nspec: {{containers: [{{name: c, image: nginx}}]}}\n"),
        );
    }
    let eviction = |ns: &str, p: &str| {
        (
            format!("/api/v1/namespaces/{ns}/pods/{p}/eviction"),
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": p, "namespace": ns}}),
        )
    };
    // Deleting Pods is not evicting them.
    let (path, body) = eviction("team", "a");
    let r = s.http_with_token(Some(&deleter)).post_json(&path, &body);
    assert_status(&r, 403, "Forbidden");
    // `create pods/eviction` alone is enough, in its namespace only.
    let (path, body) = eviction("other", "c");
    let r = s.http_with_token(Some(&evictor)).post_json(&path, &body);
    assert_status(&r, 403, "Forbidden");
    let (path, body) = eviction("team", "b");
    let r = s.http_with_token(Some(&evictor)).post_json(&path, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let names = s.kubectl_ok(&["-n", "team", "get", "pods", "-o", "name"]);
    assert_eq!(names.trim(), "pod/a");
    assert_eq!(
        s.kubectl_ok(&["-n", "other", "get", "pods", "-o", "name"])
            .trim(),
        "pod/c"
    );
    // kube refuses a dryRun value it does not know before anything changes.
    let (path, mut body) = eviction("team", "a");
    body["deleteOptions"] = json!({"dryRun": ["Maybe"]});
    let r = s.http().post_json(&path, &body);
    assert_status(&r, 422, "Invalid");
    let names = s.kubectl_ok(&["-n", "team", "get", "pods", "-o", "name"]);
    assert_eq!(names.trim(), "pod/a");
}

#[test]
fn admission_sees_an_eviction_as_kube_shows_it() {
    let s = Server::start().unwrap();
    s.kubectl_stdin(
        &["apply", "-f", "-"],
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: keep-protected}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods/eviction"]
  validations:
  - expression: "request.kind.group == 'policy' && request.kind.kind == 'Eviction' && request.subResource == 'eviction' && object.metadata.name != 'protected'"
    message: protected Pods are not evicted
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: keep-protected}
spec:
  policyName: keep-protected
  validationActions: [Deny]
"#,
    );
    for p in ["protected", "plain"] {
        pod(&s, p, "n1", p, None, true);
    }
    // Policies are read from the store on every write: in force at once.
    let r = evict(&s, "protected", json!({}));
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(
        r.text().contains("protected Pods are not evicted"),
        "{}",
        r.text()
    );
    let r = evict(&s, "plain", json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(pod_names(&s), ["protected"]);
}
