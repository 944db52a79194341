//! The whole built-in API with the real binary and the real kubectl: every served built-in kind
//! walked through create, get, list, watch, merge and strategic patches and delete; an ordinary
//! multi-document manifest applied and re-applied; `kubectl explain` of nested fields; bodies
//! decoded as kube decodes them (wrong types refused with kube's message, unknown fields refused,
//! warned about or dropped per `fieldValidation`).

use std::collections::BTreeMap;

use serde_json::{json, Value};
use turtles_tests::Server;

/// A served resource, from discovery.
#[derive(Debug, Clone)]
struct Served {
    group_version: String,
    resource: String,
    kind: String,
    namespaced: bool,
    verbs: Vec<String>,
}

impl Served {
    fn group(&self) -> &str {
        self.group_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or("")
    }

    /// `pods` or `deployments.apps`, as kubectl takes it.
    fn kubectl_name(&self) -> String {
        if self.group().is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group())
        }
    }

    fn collection(&self, ns: &str) -> String {
        let prefix = if self.group().is_empty() {
            format!("/api/{}", self.group_version)
        } else {
            format!("/apis/{}", self.group_version)
        };
        if self.namespaced {
            format!("{prefix}/namespaces/{ns}/{}", self.resource)
        } else {
            format!("{prefix}/{}", self.resource)
        }
    }
}

/// Every built-in resource discovery lists (custom resources and turtles' own kinds aside).
fn served(s: &Server) -> Vec<Served> {
    let http = s.http();
    let mut gvs = vec!["v1".to_owned()];
    for g in http.get("/apis").json()["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            gvs.push(v["groupVersion"].as_str().unwrap().to_owned());
        }
    }
    let mut out = Vec::new();
    for gv in gvs {
        if gv.starts_with("turtles.dev/") {
            continue;
        }
        let path = if gv == "v1" {
            "/api/v1".to_owned()
        } else {
            format!("/apis/{gv}")
        };
        for r in http.get(&path).json()["resources"].as_array().unwrap() {
            let name = r["name"].as_str().unwrap();
            if name.contains('/') {
                continue;
            }
            out.push(Served {
                group_version: gv.clone(),
                resource: name.to_owned(),
                kind: r["kind"].as_str().unwrap().to_owned(),
                namespaced: r["namespaced"] == true,
                verbs: r["verbs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect(),
            });
        }
    }
    out
}

fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}]})
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "ex"}}, "spec": pod_spec()})
}

/// The fields beyond metadata an example of `kind` has: what kube requires of it, or what makes
/// it an ordinary example.
fn example_fields(kind: &str) -> Value {
    let selector = json!({"matchLabels": {"app": "ex"}});
    match kind {
        "Pod" => json!({"spec": pod_spec()}),
        "Deployment" | "ReplicaSet" | "DaemonSet" => {
            json!({"spec": {"selector": selector, "template": template()}})
        }
        "StatefulSet" => {
            json!({"spec": {"serviceName": "ex", "selector": selector, "template": template()}})
        }
        "ReplicationController" => {
            json!({"spec": {"replicas": 1, "selector": {"app": "ex"}, "template": template()}})
        }
        "Job" => json!({"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}),
        "CronJob" => {
            json!({"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template":
            {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
        }
        "PodTemplate" => json!({"template": template()}),
        "Service" => json!({"spec": {"selector": {"app": "ex"}, "ports": [{"port": 80}]}}),
        "ConfigMap" => json!({"data": {"k": "v"}}),
        "Secret" => json!({"data": {"k": "dg=="}}),
        "PersistentVolumeClaim" => json!({"spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
        "PersistentVolume" => json!({"spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/ex"}}}),
        "HorizontalPodAutoscaler" => json!({"spec": {"maxReplicas": 3,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ex"}}}),
        "PodDisruptionBudget" => json!({"spec": {"minAvailable": 1, "selector": selector}}),
        "Ingress" => {
            json!({"spec": {"defaultBackend": {"service": {"name": "ex", "port": {"number": 80}}}}})
        }
        "NetworkPolicy" => json!({"spec": {"podSelector": {}}}),
        "StorageClass" => json!({"provisioner": "example.com/ex"}),
        "PriorityClass" => json!({"value": 10}),
        "RuntimeClass" => json!({"handler": "runc"}),
        "Lease" => json!({"spec": {"holderIdentity": "me"}}),
        "Role" | "ClusterRole" => {
            json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
        }
        "RoleBinding" => json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole", "name": "view"}}),
        "ClusterRoleBinding" => json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole", "name": "view"}}),
        "CustomResourceDefinition" => json!({"spec": {"group": "walk.example.com",
            "names": {"plural": "exes", "kind": "Ex"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema":
                {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        "CertificateSigningRequest" => json!({"spec": {"request": "dg==",
            "signerName": "example.com/ex", "usages": ["client auth"]}}),
        "Event" => {
            json!({"involvedObject": {"kind": "Pod", "name": "ex"}, "reason": "Ex", "message": "ex"})
        }
        _ => json!({}),
    }
}

fn example(r: &Served, name: &str) -> Value {
    let name = if r.kind == "CustomResourceDefinition" {
        "exes.walk.example.com"
    } else {
        name
    };
    let mut obj = json!({
        "apiVersion": r.group_version,
        "kind": r.kind,
        "metadata": {"name": name, "labels": {"walk": "yes"}},
    });
    if let Value::Object(fields) = example_fields(&r.kind) {
        for (k, v) in fields {
            obj[k] = v;
        }
    }
    obj
}

#[test]
fn every_builtin_kind_walks_through_create_get_list_watch_patch_delete() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "walk"]);
    let http = s.http();
    let all = served(&s);
    let storable: Vec<&Served> = all
        .iter()
        .filter(|r| r.verbs.iter().any(|v| v == "list"))
        .collect();
    assert!(storable.len() >= 55, "{} kinds served", storable.len());
    // The kinds the issue names are all there.
    for kind in [
        "Service",
        "Job",
        "CronJob",
        "StatefulSet",
        "DaemonSet",
        "ReplicationController",
        "PersistentVolumeClaim",
        "Ingress",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "EndpointSlice",
        "StorageClass",
        "PriorityClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "APIService",
        "FlowSchema",
        "CertificateSigningRequest",
        "RuntimeClass",
        "IngressClass",
    ] {
        assert!(
            storable.iter().any(|r| r.kind == kind),
            "{kind} is not served"
        );
    }
    let mut failures = Vec::new();
    for r in &storable {
        let name = format!("ex-{}", r.resource);
        let obj = example(r, &name);
        let name = obj["metadata"]["name"].as_str().unwrap().to_owned();
        let coll = r.collection("walk");
        let rv0 = http.get(&coll).json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("0")
            .to_owned();
        // create (JSON), as a typed client does.
        let created = http.post_json(&coll, &obj);
        if created.status != 201 {
            failures.push(format!(
                "{}: create {}: {}",
                r.kind,
                created.status,
                created.text()
            ));
            continue;
        }
        let ns_args: Vec<&str> = if r.namespaced {
            vec!["-n", "walk"]
        } else {
            vec![]
        };
        let kname = r.kubectl_name();
        // get with kubectl
        let got = s.kubectl_json(&[&ns_args[..], &["get", &kname, &name, "-o", "json"]].concat());
        assert_eq!(got["kind"], r.kind.as_str());
        assert_eq!(got["metadata"]["name"], name.as_str());
        // list with a label selector
        let listed = s.kubectl_json(
            &[
                &ns_args[..],
                &["get", &kname, "-l", "walk=yes", "-o", "json"],
            ]
            .concat(),
        );
        assert!(
            listed["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["metadata"]["name"] == name.as_str()),
            "{}: not listed",
            r.kind
        );
        // watch from before the create: the ADDED event
        let mut w = http.watch(&format!(
            "{coll}?watch=true&resourceVersion={rv0}&timeoutSeconds=5"
        ));
        let mut saw = false;
        while let Some(ev) = w.next_event() {
            if ev["type"] == "ADDED" && ev["object"]["metadata"]["name"] == name.as_str() {
                saw = true;
                break;
            }
        }
        assert!(saw, "{}: no ADDED event", r.kind);
        // merge and strategic merge patches
        s.kubectl_ok(
            &[
                &ns_args[..],
                &[
                    "patch",
                    &kname,
                    &name,
                    "--type",
                    "merge",
                    "-p",
                    r#"{"metadata":{"labels":{"merged":"yes"}}}"#,
                ],
            ]
            .concat(),
        );
        s.kubectl_ok(
            &[
                &ns_args[..],
                &[
                    "patch",
                    &kname,
                    &name,
                    "-p",
                    r#"{"metadata":{"annotations":{"strategic":"yes"}}}"#,
                ],
            ]
            .concat(),
        );
        let patched =
            s.kubectl_json(&[&ns_args[..], &["get", &kname, &name, "-o", "json"]].concat());
        assert_eq!(patched["metadata"]["labels"]["merged"], "yes", "{}", r.kind);
        assert_eq!(
            patched["metadata"]["annotations"]["strategic"], "yes",
            "{}",
            r.kind
        );
        // delete
        s.kubectl_ok(&[&ns_args[..], &["delete", &kname, &name, "--wait=false"]].concat());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_ordinary_manifest_applies_and_reapplies_unchanged() {
    let s = Server::start().unwrap();
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/app-manifest.yaml"),
    )
    .unwrap();
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &manifest);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(first.lines().count(), 16, "{first}");
    assert!(first.lines().all(|l| l.ends_with(" created")), "{first}");
    let versions = |s: &Server| -> BTreeMap<String, String> {
        let list = s.kubectl_json(&[
            "get",
            "deployments,services,jobs,cronjobs,statefulsets,daemonsets,ingresses,networkpolicies,\
             poddisruptionbudgets,horizontalpodautoscalers,persistentvolumeclaims,storageclasses,\
             priorityclasses,serviceaccounts,roles,rolebindings",
            "-o",
            "json",
        ]);
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            // The host's own: the `kubernetes` Service and `default` ServiceAccount.
            .filter(|i| i["metadata"]["name"] != "default" && i["metadata"]["name"] != "kubernetes")
            .map(|i| {
                (
                    format!("{}/{}", i["kind"], i["metadata"]["name"]),
                    i["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
            .collect()
    };
    let before = versions(&s);
    assert_eq!(before.len(), 16, "{before:?}");
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &manifest);
    assert!(out.status.success());
    let second = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in second.lines() {
        // kubectl always sends a PodDisruptionBudget's selector again (its patch strategy is
        // `replace`) and a StatefulSet's volumeClaimTemplates (an atomic list that kube's
        // defaults add to), so it prints "configured" against kube too; nothing changes on the
        // server (checked below).
        if line.starts_with("poddisruptionbudget") || line.starts_with("statefulset") {
            continue;
        }
        assert!(line.ends_with(" unchanged"), "{second}");
    }
    assert_eq!(versions(&s), before, "re-applying changed an object");
}

#[test]
fn kubectl_explain_walks_nested_fields_of_builtin_kinds() {
    let s = Server::start().unwrap();
    for (field, expect) in [
        ("pods.spec.containers.ports.containerPort", "<integer>"),
        ("deployments.spec.strategy.rollingUpdate", "maxSurge"),
        ("services.spec.ports", "targetPort"),
        ("cronjobs.spec.jobTemplate.spec.template.spec", "containers"),
        ("ingresses.spec.rules.http.paths", "pathType"),
        ("configmaps.data", "map[string]string"),
    ] {
        let out = s.kubectl_ok(&["explain", field]);
        assert!(out.contains(expect), "explain {field}:\n{out}");
    }
    // v2 is served as JSON too, with kube's definitions.
    let v2 = s.http().get("/openapi/v2").json();
    assert_eq!(v2["swagger"], "2.0");
    assert!(
        v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
            ["x-kubernetes-patch-merge-key"]
            .is_string()
    );
}

#[test]
fn bodies_are_decoded_as_kube_decodes_them() {
    let s = Server::start().unwrap();
    let http = s.http();
    let cms = "/api/v1/namespaces/default/configmaps";
    // A wrong type: 400 with Go's message, nothing stored.
    let r = http.post_json(
        cms,
        &json!({"metadata": {"name": "typed"}, "data": {"x": 5}}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );
    assert_eq!(http.get(&format!("{cms}/typed")).status, 404);
    let pods = "/api/v1/namespaces/default/pods";
    let r = http.post_json(
        pods,
        &json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x",
            "ports": [{"containerPort": "abc"}]}]}}),
    );
    assert_eq!(r.status, 400);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .ends_with("cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"));
    // Unknown fields: refused with Strict, warned about with Warn (the default), dropped.
    let body = json!({"metadata": {"name": "unknown"}, "bogus": 1, "data": {"k": "v"}});
    let r = http.post_json(&format!("{cms}?fieldValidation=Strict"), &body);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["message"],
        "strict decoding error: unknown field \"bogus\""
    );
    let r = http.post_json(cms, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let warning = r
        .headers
        .get("warning")
        .map(|v| v.to_str().unwrap().to_owned());
    assert!(
        warning
            .as_deref()
            .is_some_and(|w| w.contains("unknown field \\\"bogus\\\"")
                || w.contains("unknown field \"bogus\"")),
        "{warning:?}"
    );
    let stored = http.get(&format!("{cms}/unknown")).json();
    assert!(stored.get("bogus").is_none());
    // ConfigMaps keep no generation (kube sets it only where a spec is).
    assert!(stored["metadata"].get("generation").is_none(), "{stored}");
    // kubectl describe of the namespace still works.
    s.kubectl_ok(&["describe", "configmaps"]);
    // kubectl's own validation (Strict) catches a bad field of a built-in kind.
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: 80, bogus: 1}]\n",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bogus"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kube_defaults_strategies_and_answers() {
    let s = Server::start().unwrap();
    let http = s.http();
    // Service defaults.
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports: [{port: 80, targetPort: 8080}]\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svc = s.kubectl_json(&["get", "service", "web", "-o", "json"]);
    assert_eq!(svc["spec"]["type"], "ClusterIP", "{svc}");
    assert_eq!(svc["spec"]["sessionAffinity"], "None");
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    // A Job: kube's job defaults and a selector generated from the Job's uid.
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: pi, image: perl:5.34}]\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = s.kubectl_json(&["get", "job", "pi", "-o", "json"]);
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["job-name"],
        "pi"
    );
    assert_eq!(job["spec"]["backoffLimit"], 6);
    assert_eq!(job["spec"]["completions"], 1);
    assert_eq!(job["metadata"]["generation"], 1);
    // A Job's pods may not restart Always (the pod-spec default): kube's message.
    let r = http.post_json(
        "/apis/batch/v1/namespaces/default/jobs",
        &json!({"metadata": {"name": "bad"}, "spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains(
        "spec.template.spec.restartPolicy: Unsupported value: \\\"Always\\\": supported values: \\\"OnFailure\\\", \\\"Never\\\""
    ), "{}", r.text());
    // DELETE answers the Service itself, as kube does; a ConfigMap's a Status.
    let r = http.delete("/api/v1/namespaces/default/services/web");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "Service");
    http.post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "c"}}),
    );
    let r = http.delete("/api/v1/namespaces/default/configmaps/c");
    let text = r.text();
    assert!(text.ends_with("}\n"), "{text:?}");
    let status = r.json();
    let keys: Vec<&String> = status.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["kind", "apiVersion", "metadata", "status", "details"]
    );
    let detail_keys: Vec<&String> = status["details"].as_object().unwrap().keys().collect();
    assert_eq!(detail_keys, ["name", "kind", "uid"]);
    // Errors: kube's field order, and a trailing newline.
    let r = http.get("/api/v1/namespaces/default/configmaps/c");
    assert_eq!(r.status, 404);
    assert!(r.text().ends_with("}\n"));
    let keys: Vec<String> = r.json().as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "kind",
            "apiVersion",
            "metadata",
            "status",
            "message",
            "reason",
            "details",
            "code"
        ]
    );
}

#[test]
fn kubectl_create_generators_send_protobuf_for_every_kind() {
    let s = Server::start().unwrap();
    // Each of these sends an `application/vnd.kubernetes.protobuf` body.
    for args in [
        &["create", "service", "clusterip", "web", "--tcp=80:8080"][..],
        &["create", "service", "nodeport", "np", "--tcp=81:8081"],
        &[
            "create",
            "job",
            "pi",
            "--image=perl:5.34",
            "--",
            "perl",
            "-e",
            "print 1",
        ],
        &[
            "create",
            "cronjob",
            "nightly",
            "--image=busybox",
            "--schedule=0 3 * * *",
        ],
        &[
            "create",
            "ingress",
            "web",
            "--rule=web.example.com/*=web:80",
        ],
        &[
            "create",
            "poddisruptionbudget",
            "web",
            "--selector=app=web",
            "--min-available=1",
        ],
        &[
            "create",
            "priorityclass",
            "high",
            "--value=1000",
            "--description=high",
        ],
        &["create", "quota", "q", "--hard=pods=10,cpu=2"],
        &[
            "create",
            "deployment",
            "app",
            "--image=nginx:1.27",
            "--replicas=0",
        ],
    ] {
        s.kubectl_ok(args);
    }
    s.kubectl_ok(&[
        "expose",
        "deployment",
        "app",
        "--port=80",
        "--target-port=8080",
    ]);
    let svc = s.kubectl_json(&["get", "service", "web", "-o", "json"]);
    assert_eq!(svc["spec"]["ports"][0]["port"], 80, "{svc}");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(svc["spec"]["selector"]["app"], "web");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert!(svc["metadata"]["creationTimestamp"].is_string());
    let np = s.kubectl_json(&["get", "service", "np", "-o", "json"]);
    assert_eq!(np["spec"]["type"], "NodePort");
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    let job = s.kubectl_json(&["get", "job", "pi", "-o", "json"]);
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        json!(["perl", "-e", "print 1"])
    );
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let cj = s.kubectl_json(&["get", "cronjob", "nightly", "-o", "json"]);
    assert_eq!(cj["spec"]["schedule"], "0 3 * * *");
    let ing = s.kubectl_json(&["get", "ingress", "web", "-o", "json"]);
    assert_eq!(ing["spec"]["rules"][0]["host"], "web.example.com");
    assert_eq!(
        ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"]["number"],
        80
    );
    let pdb = s.kubectl_json(&["get", "pdb", "web", "-o", "json"]);
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    let pc = s.kubectl_json(&["get", "priorityclass", "high", "-o", "json"]);
    assert_eq!(pc["value"], 1000);
    let quota = s.kubectl_json(&["get", "quota", "q", "-o", "json"]);
    assert_eq!(quota["spec"]["hard"], json!({"cpu": "2", "pods": "10"}));
    // A pointer set to zero whose documentation names a default survives.
    let dep = s.kubectl_json(&["get", "deployment", "app", "-o", "json"]);
    assert_eq!(dep["spec"]["replicas"], 0);
    let exposed = s.kubectl_json(&["get", "service", "app", "-o", "json"]);
    assert_eq!(exposed["spec"]["ports"][0]["targetPort"], 8080);
    assert_eq!(exposed["spec"]["selector"]["app"], "app");
}
