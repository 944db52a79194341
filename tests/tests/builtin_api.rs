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

/// An example of `r` to create in namespace `walk`.
fn example(r: &Served, name: &str) -> Value {
    turtles_tests::example_object_in(&r.group_version, &r.kind, name, "walk")
}

#[test]
fn every_builtin_kind_walks_through_create_get_list_watch_patch_delete() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "walk"]);
    let http = s.http();
    let all = served(&s);
    // Stored kinds: listed and created (ComponentStatuses are listed, computed when read).
    let storable: Vec<&Served> = all
        .iter()
        .filter(|r| r.verbs.iter().any(|v| v == "list") && r.verbs.iter().any(|v| v == "create"))
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
            // The host's own: the `kubernetes` Service, `default` ServiceAccount and kube's
            // system PriorityClasses.
            .filter(|i| {
                let name = i["metadata"]["name"].as_str().unwrap_or("");
                name != "default" && name != "kubernetes" && !name.starts_with("system-")
            })
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
    // The disruption controller writes the budget's status once it has seen it; the versions
    // are compared after that.
    turtles_tests::poll(
        "the budget's status",
        std::time::Duration::from_secs(10),
        || {
            let pdbs = s.kubectl_json(&["get", "poddisruptionbudgets"]);
            pdbs["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["status"]["observedGeneration"] == p["metadata"]["generation"])
                .then_some(())
        },
    )
    .unwrap();
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
    // kube's enums: kubectl lists the values, and the description ends with their lines.
    let out = s.kubectl_ok(&["explain", "pods.spec.containers.imagePullPolicy"]);
    assert!(
        out.contains("ENUM:\n    Always\n    IfNotPresent\n    Never\n"),
        "{out}"
    );
    assert!(out.contains("Possible enum values:"), "{out}");
    // v2 is served as JSON too, with kube's definitions.
    let v2 = s.http().get("/openapi/v2").json();
    assert_eq!(v2["swagger"], "2.0");
    assert!(
        v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
            ["x-kubernetes-patch-merge-key"]
            .is_string()
    );
    assert_eq!(
        v2["definitions"]["io.k8s.api.core.v1.Container"]["properties"]["imagePullPolicy"]["enum"],
        json!(["Always", "IfNotPresent", "Never"])
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
    // A lone surrogate escape is U+FFFD, as Go's decoder reads it; a pair is its character.
    let r = http.request(
        "POST",
        cms,
        Some("application/json"),
        Some(br#"{"metadata":{"name":"lone"},"data":{"a":"\ud800x","b":"\ud83d\ude00"}}"#.to_vec()),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["data"],
        json!({"a": "\u{fffd}x", "b": "\u{1f600}"})
    );
    // A protobuf body that does not decode is a bad request (400), not a media type (415).
    let r = http.request(
        "POST",
        cms,
        Some("application/vnd.kubernetes.protobuf"),
        Some(b"k8s\0\x0a\xff".to_vec()),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["reason"], "BadRequest", "{}", r.text());
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
    // Quantities are stored in kube's canonical form (numbers too); a malformed one is 400.
    let r = http.post_json(
        pods,
        &json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"cpu": 0.5, "memory": "1024Mi"},
                          "limits": {"cpu": "1000m", "memory": "1.5Gi", "ephemeral-storage": "1e3"}}}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["spec"]["containers"][0]["resources"],
        // (A limit without a request is the request too: kube's Pod defaults.)
        json!({"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1e3"},
               "limits": {"cpu": "1", "memory": "1536Mi", "ephemeral-storage": "1e3"}})
    );
    let r = http.post_json(
        pods,
        &json!({"metadata": {"name": "bad-q"}, "spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"cpu": "lots"}}}]}}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    // Unknown fields: refused with Strict, warned about with Warn (the default), dropped.
    let body = json!({"metadata": {"name": "unknown"}, "bogus": 1, "data": {"k": "v"}});
    let r = http.post_json(&format!("{cms}?fieldValidation=Strict"), &body);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
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
    // A patch's result is refused as kube's patcher refuses it: a 422 naming the `patch`,
    // showing the patched object.
    let r = http.patch(
        &format!("{cms}/unknown?fieldValidation=Strict"),
        "application/merge-patch+json",
        &json!({"bogus": 2}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    let message = r.json()["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{\\\"apiVersion\\\""),
        "{message}"
    );
    assert!(
        message.ends_with("\": strict decoding error: unknown field \"bogus\""),
        "{message}"
    );
    assert_eq!(r.json()["details"]["causes"][0]["field"], "patch");
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
    // A gRPC probe's `service` defaults to "" (kubectl describe reads it without a nil check:
    // it panicked on a probe without one).
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: grpc}\nspec:\n  containers:\n  - name: c\n    image: etcd\n    livenessProbe: {grpc: {port: 2379}}\n    readinessProbe: {grpc: {port: 2379, service: ready}}\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pod = s.kubectl_json(&["get", "pod", "grpc", "-o", "json"]);
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        c["livenessProbe"]["grpc"],
        json!({"port": 2379, "service": ""}),
        "{c}"
    );
    assert_eq!(c["readinessProbe"]["grpc"]["service"], "ready", "{c}");
    let described = s.kubectl_ok(&["describe", "pod", "grpc"]);
    assert!(
        described.contains("grpc <pod>:2379  delay=0s"),
        "{described}"
    );
    // A template's empty metadata is `{}` (kube 1.34: ObjectMeta is a struct and its zero
    // creationTimestamp `omitzero`), whether the client sent it or not.
    s.kubectl_apply(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: hello}\nspec:\n  schedule: '*/5 * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers: [{name: c, image: busybox}]\n",
    );
    let cj = s.kubectl_json(&["get", "cronjob", "hello", "-o", "json"]);
    assert_eq!(cj["spec"]["jobTemplate"]["metadata"], json!({}), "{cj}");
    assert_eq!(
        cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"],
        json!({}),
        "{cj}"
    );
    // DefaultIngressClass: an Ingress without a class gets the default one, unless it names
    // one through the legacy annotation.
    s.kubectl_apply(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: nginx\n  annotations: {ingressclass.kubernetes.io/is-default-class: \"true\"}\nspec: {controller: k8s.io/ingress-nginx}\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: plain}\nspec: {defaultBackend: {service: {name: web, port: {number: 80}}}}\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: legacy\n  annotations: {kubernetes.io/ingress.class: traefik}\nspec: {defaultBackend: {service: {name: web, port: {number: 80}}}}\n",
    );
    let plain = s.kubectl_json(&["get", "ingress", "plain", "-o", "json"]);
    assert_eq!(plain["spec"]["ingressClassName"], "nginx", "{plain}");
    let legacy = s.kubectl_json(&["get", "ingress", "legacy", "-o", "json"]);
    assert!(legacy["spec"].get("ingressClassName").is_none(), "{legacy}");
    // The default ServiceCIDR, from --service-cluster-ip-range, Ready.
    let cidrs = s.kubectl_ok(&["get", "servicecidrs", "--no-headers"]);
    assert!(cidrs.starts_with("kubernetes   10.96.0.0/12 "), "{cidrs}");
    let cidr = s.kubectl_json(&["get", "servicecidr", "kubernetes"]);
    assert_eq!(cidr["status"]["conditions"][0]["type"], "Ready", "{cidr}");
    assert_eq!(cidr["status"]["conditions"][0]["status"], "True", "{cidr}");
    // kube's `api-extensions` category: CRDs, APIServices, webhook configurations and
    // admission policies with their bindings.
    let ext = s.kubectl_ok(&["api-resources", "--categories=api-extensions", "-o", "name"]);
    let mut ext: Vec<&str> = ext.lines().collect();
    ext.sort_unstable();
    assert_eq!(
        ext,
        [
            "apiservices.apiregistration.k8s.io",
            "customresourcedefinitions.apiextensions.k8s.io",
            "mutatingadmissionpolicies.admissionregistration.k8s.io",
            "mutatingadmissionpolicybindings.admissionregistration.k8s.io",
            "mutatingwebhookconfigurations.admissionregistration.k8s.io",
            "validatingadmissionpolicies.admissionregistration.k8s.io",
            "validatingadmissionpolicybindings.admissionregistration.k8s.io",
            "validatingwebhookconfigurations.admissionregistration.k8s.io",
        ]
    );
    // The metadata's errors come first, in the same answer as the spec's (kube's strategies
    // validate ObjectMeta first), not one 422 after another.
    let out = s.kubectl(&["run", "My_Pod", "--image=nginx"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let name = err.find("* metadata.name: Invalid value: \"My_Pod\"");
    let container = err.find("* spec.containers[0].name: Invalid value: \"My_Pod\"");
    assert!(
        matches!((name, container), (Some(n), Some(c)) if n < c),
        "{err}"
    );
    // A Job's pods may not restart Always (the pod-spec default): kube's message (since 1.27 a
    // Required naming the valid values, for "" and "Always" alike).
    let r = http.post_json(
        "/apis/batch/v1/namespaces/default/jobs",
        &json!({"metadata": {"name": "bad"}, "spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains(
        "spec.template.spec.restartPolicy: Required value: valid values: \\\"OnFailure\\\", \\\"Never\\\""
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

#[test]
fn events_k8s_io_serves_the_core_events_in_their_newer_shape() {
    let s = Server::start().unwrap();
    let http = s.http();
    let new_api = "/apis/events.k8s.io/v1/namespaces/default/events";
    let core_api = "/api/v1/namespaces/default/events";
    let rv0 = http.get(new_api).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    // Recorded through events.k8s.io (kube-rs's and client-go's newer recorders do this) ...
    let r = http.post_json(
        new_api,
        &json!({"metadata": {"name": "e1"}, "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            "note": "pulled", "reason": "Pulled", "type": "Normal", "action": "Pull",
            "reportingController": "example.com/kubelet", "reportingInstance": "n1",
            "eventTime": "2026-12-01T00:00:00.000000Z"}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["apiVersion"], "events.k8s.io/v1");
    assert_eq!(r.json()["note"], "pulled");
    // ... it is the core Event kubectl shows.
    let core = http.get(&format!("{core_api}/e1")).json();
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "pulled");
    assert_eq!(core["involvedObject"]["name"], "p");
    assert_eq!(core["reportingComponent"], "example.com/kubelet");
    assert!(core.get("note").is_none());
    // A core Event is listed and watched through events.k8s.io in that shape.
    http.post_json(
        core_api,
        &json!({"metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod", "name": "q"},
            "message": "old style", "reason": "Created", "count": 3}),
    );
    // The old style's fields kube's Go type always writes: an empty `source`, the reporting
    // component and instance as "".
    let core2 = http.get(&format!("{core_api}/e2")).json();
    assert_eq!(core2["source"], json!({}), "{core2}");
    assert_eq!(core2["reportingComponent"], "", "{core2}");
    assert_eq!(core2["reportingInstance"], "", "{core2}");
    let list = http.get(new_api).json();
    let e2 = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["metadata"]["name"] == "e2")
        .cloned()
        .unwrap();
    assert_eq!(e2["note"], "old style");
    assert_eq!(e2["deprecatedCount"], 3);
    assert_eq!(e2["regarding"]["name"], "q");
    let mut w = http.watch(&format!(
        "{new_api}?watch=true&resourceVersion={rv0}&timeoutSeconds=5"
    ));
    let first = w.expect_event("ADDED");
    assert_eq!(first["object"]["apiVersion"], "events.k8s.io/v1");
    assert_eq!(first["object"]["note"], "pulled");
    // A patch through the core API shows through the newer one; the newer API's Events are
    // immutable, as kube's validation has them.
    let r = http.patch(
        &format!("{core_api}/e2"),
        "application/merge-patch+json",
        &json!({"message": "patched"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(http.get(&format!("{new_api}/e2")).json()["note"], "patched");
    let r = http.patch(
        &format!("{new_api}/e1"),
        "application/merge-patch+json",
        &json!({"note": "changed"}),
    );
    let st = turtles_tests::assert_status(&r, 422, "Invalid");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("message: Invalid value: \"changed\": field is immutable"),
        "{st}"
    );
    assert_eq!(
        s.kubectl_ok(&["get", "events.v1.events.k8s.io", "-o", "name"])
            .lines()
            .count(),
        2
    );
}

#[test]
fn autoscaling_v1_and_v2_serve_the_same_hpas() {
    let s = Server::start().unwrap();
    let http = s.http();
    let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let r = http.post_json(
        v1,
        &json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 4,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "targetCPUUtilizationPercentage": 60}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["spec"]["targetCPUUtilizationPercentage"], 60);
    assert_eq!(r.json()["spec"]["minReplicas"], 1);
    let got = http.get(&format!("{v2}/web")).json();
    assert_eq!(got["apiVersion"], "autoscaling/v2");
    assert_eq!(
        got["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 60}}}])
    );
    // What v1 cannot say survives a round trip through it.
    let r = http.patch(
        &format!("{v2}/web"),
        "application/merge-patch+json",
        &json!({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let through_v1 = http.get(&format!("{v1}/web")).json();
    assert!(through_v1["spec"].get("behavior").is_none());
    let r = http.put_json(&format!("{v1}/web"), &{
        let mut o = through_v1.clone();
        o["spec"]["maxReplicas"] = json!(6);
        o
    });
    assert_eq!(r.status, 200, "{}", r.text());
    let after = http.get(&format!("{v2}/web")).json();
    assert_eq!(after["spec"]["maxReplicas"], 6);
    assert_eq!(
        after["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    assert!(after["metadata"]
        .get("annotations")
        .is_none_or(|a| a.as_object().is_some_and(|a| a.is_empty())));
    // kubectl reads the preferred version, v2.
    let hpa = s.kubectl_json(&["get", "hpa", "web", "-o", "json"]);
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
}

/// OpenAPI v3 gives IntOrString and Quantity their `oneOf` types, as kube's does (v2 keeps
/// `string`); `kubectl explain` names them.
#[test]
fn openapi_v3_has_int_or_string_and_quantity_as_one_of() {
    let s = Server::start().unwrap();
    let h = s.http();
    let idx = h.get("/openapi/v3").json();
    let url = idx["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let schemas = h.get(&url).json()["components"]["schemas"].clone();
    let ios = &schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(
        ios["oneOf"],
        json!([{"type": "integer"}, {"type": "string"}]),
        "{ios}"
    );
    assert_eq!(ios["format"], "int-or-string");
    assert_eq!(
        schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"],
        json!([{"type": "string"}, {"type": "number"}])
    );
    let v2 = h.get("/openapi/v2").json();
    assert_eq!(
        v2["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"],
        "string"
    );
    let out = s.kubectl_ok(&[
        "explain",
        "deployments.spec.strategy.rollingUpdate.maxSurge",
    ]);
    assert!(out.contains("<IntOrString>"), "{out}");
}
