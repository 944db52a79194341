//! Server-side apply and managed fields with real clients: kubectl's `apply --server-side`
//! (conflicts, `--force-conflicts`, removal of dropped fields, list-map merges), a CRD with
//! `x-kubernetes-list-type: map`, client-side ↔ server-side apply migration, and byte-level
//! `managedFields` of raw requests. One server for the whole file.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{poll, Server};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn apply_ok(s: &Server, args: &[&str], yaml: &str) -> String {
    let out = s.kubectl_stdin(args, yaml);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}",
        stderr(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn deployment(replicas: u32, labels: &str, extra_port: bool) -> String {
    let port = if extra_port {
        "\n        - containerPort: 443"
    } else {
        ""
    };
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels:{labels}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80{port}
"#
    )
}

/// `(manager, operation)` of each managedFields entry, in order.
fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_owned(),
                        e["operation"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn pair(m: &str, op: &str) -> (String, String) {
    (m.to_owned(), op.to_owned())
}

/// The issue's scenario with the real kubectl, and the managed fields it leaves.
fn kubectl_deployment(s: &Server) {
    let ssa = ["apply", "--server-side", "-f", "-"];
    let out = apply_ok(
        s,
        &ssa,
        &deployment(1, "\n    team: a\n    tier: web", false),
    );
    assert!(
        out.contains("deployment.apps/web serverside-applied"),
        "{out}"
    );
    let d = s.kubectl_json(&["get", "deploy", "web", "--show-managed-fields"]);
    assert_eq!(managers(&d), [pair("kubectl", "Apply")], "{d}");
    let fields = &d["metadata"]["managedFields"][0]["fieldsV1"];
    // What kube records for this manifest: every field the manifest sets, list items by key
    // (containers by name, ports by containerPort and protocol, defaulted to TCP).
    assert_eq!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"][r#"k:{"name":"nginx"}"#]
            ["f:ports"],
        json!({r#"k:{"containerPort":80,"protocol":"TCP"}"#: {".": {}, "f:containerPort": {}}}),
        "{fields}"
    );
    // kubectl hides them unless asked.
    let plain = s.kubectl_json(&["get", "deploy", "web"]);
    assert!(plain["metadata"].get("managedFields").is_none());

    // A second manager changes replicas.
    s.kubectl_ok(&[
        "patch",
        "deploy",
        "web",
        "--field-manager=scaler",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    let d = s.kubectl_json(&["get", "deploy", "web", "--show-managed-fields"]);
    assert_eq!(
        managers(&d),
        [pair("kubectl", "Apply"), pair("scaler", "Update")],
        "{d}"
    );

    // Applying another replicas count conflicts, with kube's message.
    let out = s.kubectl_stdin(&ssa, &deployment(2, "\n    team: a\n    tier: web", false));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            r#"Apply failed with 1 conflict: conflict with "scaler" using apps/v1: .spec.replicas"#
        ),
        "{err}"
    );
    assert_eq!(
        s.kubectl_json(&["get", "deploy", "web"])["spec"]["replicas"],
        3
    );

    // --force-conflicts takes it: the scaler's entry, left with nothing, goes.
    let forced = ["apply", "--server-side", "--force-conflicts", "-f", "-"];
    apply_ok(
        s,
        &forced,
        &deployment(2, "\n    team: a\n    tier: web", false),
    );
    let d = s.kubectl_json(&["get", "deploy", "web", "--show-managed-fields"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(managers(&d), [pair("kubectl", "Apply")], "{d}");

    // Another manager adds a container and a port to nginx (list-map items).
    let sidecar = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  template:
    spec:
      containers:
      - name: nginx
        ports:
        - containerPort: 9090
      - name: proxy
        image: envoy:1
"#;
    apply_ok(
        s,
        &["apply", "--server-side", "--field-manager=mesh", "-f", "-"],
        sidecar,
    );
    // The first manager drops a label and the replicas: they go, the mesh's entries stay.
    let mut dropped = deployment(2, "\n    team: a", false);
    dropped = dropped.replace("  replicas: 2\n", "");
    apply_ok(s, &ssa, &dropped);
    let d = s.kubectl_json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["labels"], json!({"team": "a"}), "{d}");
    // replicas is defaulted again once nobody sets it.
    assert_eq!(d["spec"]["replicas"], 1, "{d}");
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["nginx", "proxy"], "{d}");
    let ports: Vec<i64> = containers[0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["containerPort"].as_i64())
        .collect();
    assert_eq!(ports, [80, 9090], "{d}");
    // Dry run changes nothing.
    apply_ok(
        s,
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        &deployment(5, "\n    team: a", true),
    );
    assert_eq!(
        s.kubectl_json(&["get", "deploy", "web"])["spec"]["replicas"],
        1
    );
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: routes.mesh.example.com
spec:
  group: mesh.example.com
  scope: Namespaced
  names: {plural: routes, singular: route, kind: Route}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              hosts:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              backends:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    weight: {type: integer}
          status:
            type: object
            properties:
              ready: {type: boolean}
"#;

fn crd_list_map(s: &Server) {
    apply_ok(s, &["apply", "--server-side", "-f", "-"], CRD);
    s.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=30s",
        "crd/routes.mesh.example.com",
    ]);
    let route = |backends: &str, hosts: &str| {
        format!(
            "apiVersion: mesh.example.com/v1\nkind: Route\nmetadata:\n  name: r\n  namespace: default\nspec:\n  hosts: [{hosts}]\n  backends:\n{backends}"
        )
    };
    // The CRD may take a moment to be served to kubectl's discovery.
    poll("routes served", Duration::from_secs(20), || {
        s.kubectl_stdin(
            &[
                "apply",
                "--server-side",
                "--field-manager=team-a",
                "-f",
                "-",
            ],
            &route("  - {name: a, weight: 1}\n", "a.example.com"),
        )
        .status
        .success()
        .then_some(())
    })
    .unwrap();
    apply_ok(
        s,
        &[
            "apply",
            "--server-side",
            "--field-manager=team-b",
            "-f",
            "-",
        ],
        &route("  - {name: b, weight: 2}\n", "b.example.com"),
    );
    let r = s.kubectl_json(&["get", "route", "r", "--show-managed-fields"]);
    assert_eq!(
        r["spec"]["backends"],
        json!([{"name": "a", "weight": 1}, {"name": "b", "weight": 2}]),
        "{r}"
    );
    assert_eq!(
        r["spec"]["hosts"],
        json!(["a.example.com", "b.example.com"])
    );
    // team-b owns its item and its host (a set list: items by value).
    let b = r["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "team-b")
        .unwrap();
    assert_eq!(
        b["fieldsV1"],
        json!({"f:spec": {"f:backends": {r#"k:{"name":"b"}"#: {".": {}, "f:name": {}, "f:weight": {}}},
                          "f:hosts": {r#"v:"b.example.com""#: {}}}}),
        "{b}"
    );
    // team-a changing b's weight conflicts.
    let out = s.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=team-a",
            "-f",
            "-",
        ],
        &route(
            "  - {name: a, weight: 1}\n  - {name: b, weight: 5}\n",
            "a.example.com",
        ),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            r#"Apply failed with 1 conflict: conflict with "team-b": .spec.backends[name="b"].weight"#
        ),
        "{}",
        stderr(&out)
    );
    // Status through the status subresource, by its own manager; spec in it is ignored.
    let http = s.http();
    let r = http.request(
        "PATCH",
        "/apis/mesh.example.com/v1/namespaces/default/routes/r/status?fieldManager=ctrl&force=true",
        Some("application/apply-patch+yaml"),
        Some(
            json!({"apiVersion": "mesh.example.com/v1", "kind": "Route",
                   "metadata": {"name": "r"}, "status": {"ready": true},
                   "spec": {"hosts": ["x"]}})
            .to_string()
            .into_bytes(),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let obj = r.json();
    assert_eq!(obj["status"]["ready"], true);
    assert_eq!(
        obj["spec"]["hosts"],
        json!(["a.example.com", "b.example.com"])
    );
    let ctrl = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "ctrl")
        .cloned()
        .unwrap();
    assert_eq!(ctrl["subresource"], "status");
    assert_eq!(ctrl["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
    // team-b leaves: its backend and host go, team-a's stay.
    apply_ok(
        s,
        &["apply", "--server-side", "--field-manager=team-b", "-f", "-"],
        "apiVersion: mesh.example.com/v1\nkind: Route\nmetadata:\n  name: r\n  namespace: default\n",
    );
    let r = s.kubectl_json(&["get", "route", "r"]);
    assert_eq!(r["spec"]["backends"], json!([{"name": "a", "weight": 1}]));
    assert_eq!(r["spec"]["hosts"], json!(["a.example.com"]));
}

/// `kubectl apply` (client-side) → `kubectl apply --server-side` → `kubectl apply` again.
fn client_side_migration(s: &Server) {
    let cm = |data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\n  namespace: default\ndata:\n{data}")
    };
    apply_ok(s, &["apply", "-f", "-"], &cm("  a: \"1\"\n  b: \"2\"\n"));
    let c = s.kubectl_json(&["get", "cm", "csa", "--show-managed-fields"]);
    assert_eq!(
        managers(&c),
        [pair("kubectl-client-side-apply", "Update")],
        "{c}"
    );
    // Server-side now, changing b: no conflict with the client-side applier's fields.
    apply_ok(
        s,
        &["apply", "--server-side", "-f", "-"],
        &cm("  a: \"1\"\n  b: \"3\"\n"),
    );
    let c = s.kubectl_json(&["get", "cm", "csa", "--show-managed-fields"]);
    assert_eq!(c["data"], json!({"a": "1", "b": "3"}), "{c}");
    assert!(managers(&c).contains(&pair("kubectl", "Apply")), "{c}");
    // The last-applied annotation follows the server-side apply...
    let last: Value = serde_json::from_str(
        c["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["data"], json!({"a": "1", "b": "3"}), "{last}");
    // ...so client-side apply works again after, dropping b.
    apply_ok(s, &["apply", "-f", "-"], &cm("  a: \"4\"\n"));
    let c = s.kubectl_json(&["get", "cm", "csa"]);
    assert_eq!(c["data"], json!({"a": "4"}), "{c}");
}

/// What admission and the kind's strategy add to a created object is owned by no manager (kube
/// records managed fields before both): a PersistentVolumeClaim's default StorageClass, a Pod's
/// service account, token volume, tolerations and priority, a Job's generated selector and
/// labels, a DaemonSet's template generation. So moving these from `kubectl apply` to
/// `kubectl apply --server-side` works, twice: had the client-side applier owned them, the
/// server-side applier would inherit them and the next apply, which leaves them out, would try
/// to remove them (immutable: refused every time).
fn client_side_migration_of_admitted_fields(s: &Server) {
    s.kubectl_apply(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\n  annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\nprovisioner: example.com/fast\n",
    );
    let manifest = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: mig-claim, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: mig-pod, namespace: default}
spec:
  containers: [{name: c, image: nginx}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: mig-job, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: perl}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: mig-ds, namespace: default}
spec:
  selector: {matchLabels: {app: mig}}
  template:
    metadata: {labels: {app: mig}}
    spec:
      containers: [{name: c, image: nginx}]
"#;
    apply_ok(s, &["apply", "-f", "-"], manifest);
    // Nobody owns what admission and the strategies added.
    let owned = |kind: &str, name: &str| -> String {
        let o = s.kubectl_json(&["get", kind, name, "--show-managed-fields"]);
        o["metadata"]["managedFields"].to_string()
    };
    let claim = owned("pvc", "mig-claim");
    assert!(!claim.contains("f:storageClassName"), "{claim}");
    let pod = owned("pod", "mig-pod");
    for f in [
        "f:serviceAccountName",
        "f:volumes",
        "f:tolerations",
        "f:priority",
        "f:volumeMounts",
    ] {
        assert!(!pod.contains(f), "{f}: {pod}");
    }
    // ...while the decoder's defaults are the client's, as in kube.
    assert!(pod.contains("f:terminationMessagePath"), "{pod}");
    let job = owned("job", "mig-job");
    assert!(!job.contains("f:selector"), "{job}");
    assert!(!job.contains("controller-uid"), "{job}");
    let ds = owned("ds", "mig-ds");
    assert!(
        !ds.contains("deprecated.daemonset.template.generation"),
        "{ds}"
    );
    // The stored objects have them all the same.
    let c = s.kubectl_json(&["get", "pvc", "mig-claim"]);
    assert_eq!(c["spec"]["storageClassName"], "fast", "{c}");
    let p = s.kubectl_json(&["get", "pod", "mig-pod"]);
    assert_eq!(p["spec"]["serviceAccountName"], "default", "{p}");
    // Server-side from now on: the migration, then an ordinary re-apply.
    for round in 0..2 {
        let out = s.kubectl_stdin(&["apply", "--server-side", "-f", "-"], manifest);
        assert!(
            out.status.success() && !stderr(&out).contains("failed"),
            "server-side apply {round}: {}",
            stderr(&out)
        );
    }
    let c = s.kubectl_json(&["get", "pvc", "mig-claim"]);
    assert_eq!(c["spec"]["storageClassName"], "fast", "{c}");
    let j = s.kubectl_json(&["get", "job", "mig-job"]);
    assert!(
        j["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"].is_string(),
        "{j}"
    );
    s.kubectl_ok(&["delete", "storageclass", "fast"]);
}

/// A Secret's write-only `stringData`, which kube folds into `data` on every write and never
/// stores: `kubectl apply` then `kubectl apply --server-side` of a manifest with `password` in
/// `stringData` and `user` in `data` keeps both keys (kubectl moves the client-side applier's
/// fields, `data.password` among them, to its own entry, which prunes it; `stringData` puts it
/// back); a value rotated through `stringData` by a server-side apply or a patch changes
/// `data`; a value that is not a string is refused.
fn secret_string_data(s: &Server) {
    let manifest = |password: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\n  namespace: default\ntype: Opaque\nstringData:\n  password: {password}\ndata:\n  user: YWRtaW4=\n"
        )
    };
    // base64 of `admin`, `hunter2`, `hunter3`.
    let both = |password: &str| json!({"user": "YWRtaW4=", "password": password});
    apply_ok(s, &["apply", "-f", "-"], &manifest("hunter2"));
    let sec = s.kubectl_json(&["get", "secret", "db-creds"]);
    assert_eq!(sec["data"], both("aHVudGVyMg=="), "{sec}");
    assert!(sec.get("stringData").is_none(), "{sec}");

    let out = apply_ok(
        s,
        &["apply", "--server-side", "-f", "-"],
        &manifest("hunter2"),
    );
    assert!(out.contains("secret/db-creds serverside-applied"), "{out}");
    let sec = s.kubectl_json(&["get", "secret", "db-creds", "--show-managed-fields"]);
    assert_eq!(sec["data"], both("aHVudGVyMg=="), "{sec}");
    assert!(sec.get("stringData").is_none(), "{sec}");
    // kube's field manager records the applied configuration, `stringData` included.
    let kubectl = sec["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|e| e["manager"] == "kubectl" && e["operation"] == "Apply")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        kubectl["fieldsV1"]["f:stringData"],
        json!({"f:password": {}}),
        "{sec}"
    );

    apply_ok(
        s,
        &["apply", "--server-side", "-f", "-"],
        &manifest("hunter3"),
    );
    let sec = s.kubectl_json(&["get", "secret", "db-creds"]);
    assert_eq!(sec["data"], both("aHVudGVyMw=="), "{sec}");
    assert!(sec.get("stringData").is_none(), "{sec}");

    // kubectl patch (strategic merge) and a merge patch adding stringData.
    s.kubectl_ok(&[
        "patch",
        "secret",
        "db-creds",
        "-p",
        r#"{"stringData":{"c":"d"}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "secret",
        "db-creds",
        "--type=merge",
        "-p",
        r#"{"stringData":{"e":"f"}}"#,
    ]);
    let sec = s.kubectl_json(&["get", "secret", "db-creds"]);
    assert_eq!(sec["data"]["c"], "ZA==", "{sec}");
    assert_eq!(sec["data"]["e"], "Zg==", "{sec}");
    assert_eq!(sec["data"]["password"], "aHVudGVyMw==", "{sec}");
    assert!(sec.get("stringData").is_none(), "{sec}");

    // A value that is not a string: kube's decoding error, nothing stored.
    let http = s.http();
    let secrets = "/api/v1/namespaces/default/secrets";
    let r = http.post_json(
        secrets,
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s-int"},
            "stringData": {"a": 1}}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal number into Go struct field Secret.stringData of type string"
    );
    assert_eq!(http.get(&format!("{secrets}/s-int")).status, 404);
    let r = http.patch(
        &format!("{secrets}/db-creds"),
        "application/merge-patch+json",
        &json!({"stringData": {"a": 1}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(
        r.json()["message"].as_str().is_some_and(|m| m.ends_with(
            "\": json: cannot unmarshal number into Go struct field Secret.stringData of type string"
        )),
        "{}",
        r.text()
    );
}

/// Raw requests, compared byte for byte with what kube-apiserver 1.34 answers for the same
/// requests. The expected values follow kube's field manager: an Update entry holds the fields
/// the write added or changed, a map or list item that appeared carries `.` (structured-merge-
/// diff's `Compare` marks a non-leaf as added when it was absent); an Apply entry holds the
/// applied configuration's fields (`ToFieldSet`), without server-owned metadata (`stripmeta`:
/// apiVersion, kind, metadata.name...); entries are ordered Apply first, then by time
/// (`sortEncodedManagedFields`); fields of an entry in `ManagedFieldsEntry`'s order.
fn byte_level(s: &Server) {
    let http = s.http();
    let base = "/api/v1/namespaces/default/configmaps";
    let r = http.request(
        "POST",
        &format!("{base}?fieldManager=creator"),
        Some("application/json"),
        Some(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "bytes", "labels": {"test-label": "test"}},
                   "data": {"key": "some value"}})
            .to_string()
            .into_bytes(),
        ),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let obj = r.json();
    let mf = &obj["metadata"]["managedFields"];
    let time = mf[0]["time"].as_str().unwrap().to_owned();
    assert_eq!(time.len(), "2026-12-01T22:10:00Z".len(), "{time}");
    assert_eq!(
        mf.to_string(),
        format!(
            concat!(
                r#"[{{"manager":"creator","operation":"Update","apiVersion":"v1","time":"{}","#,
                r#""fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{".":{{}},"f:key":{{}}}},"#,
                r#""f:metadata":{{"f:labels":{{".":{{}},"f:test-label":{{}}}}}}}}}}]"#
            ),
            time
        )
    );
    // kube's documented Apply entry for this configuration (server-side apply docs, "Field
    // management"): `f:data: {f:key: {}}`, `f:metadata: {f:labels: {f:test-label: {}}}`.
    let r = http.request(
        "PATCH",
        &format!("{base}/bytes?fieldManager=kubectl"),
        Some("application/apply-patch+yaml"),
        Some(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "bytes", "labels": {"test-label": "test"}},
                   "data": {"key": "some value"}})
            .to_string()
            .into_bytes(),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let mf = r.json()["metadata"]["managedFields"].clone();
    let apply_time = mf[0]["time"].as_str().unwrap().to_owned();
    assert_eq!(
        mf.to_string(),
        format!(
            concat!(
                r#"[{{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"{}","#,
                r#""fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{"f:key":{{}}}},"#,
                r#""f:metadata":{{"f:labels":{{"f:test-label":{{}}}}}}}}}},"#,
                r#"{{"manager":"creator","operation":"Update","apiVersion":"v1","time":"{}","#,
                r#""fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{".":{{}},"f:key":{{}}}},"#,
                r#""f:metadata":{{"f:labels":{{".":{{}},"f:test-label":{{}}}}}}}}}}]"#
            ),
            apply_time, time
        )
    );
    // Apply without fieldManager: kube's 422.
    let r = http.request(
        "PATCH",
        &format!("{base}/bytes"),
        Some("application/apply-patch+yaml"),
        Some(b"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}".to_vec()),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    // Writing `[]` resets them.
    let r = http.patch(
        &format!("{base}/bytes"),
        "application/merge-patch+json",
        &json!({"metadata": {"managedFields": []}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.json()["metadata"].get("managedFields").is_none(),
        "{}",
        r.text()
    );
    // An update without fieldManager is attributed to the user agent's first word.
    let r = http.patch(
        &format!("{base}/bytes"),
        "application/merge-patch+json",
        &json!({"data": {"other": "x"}}),
    );
    let obj = r.json();
    assert_eq!(
        obj["metadata"]["managedFields"].as_array().unwrap().len(),
        1
    );
    assert_eq!(obj["metadata"]["managedFields"][0]["operation"], "Update");
    assert_eq!(
        obj["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {"f:other": {}}})
    );
    // Create on apply.
    let r = http.request(
        "PATCH",
        &format!("{base}/fresh?fieldManager=m1"),
        Some("application/apply-patch+yaml"),
        Some(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "fresh"}, "data": {"a": "b"}})
            .to_string()
            .into_bytes(),
        ),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["data"]["a"], "b");
}

/// Apply bodies in YAML (what the content type names; kubectl and the clients send JSON, which is
/// YAML too), and apply on the `scale` subresource: a Scale applied by another manager conflicts
/// with the owner of the object's replicas, takes them with `force`, and is recorded as a
/// `scale` entry, as kube's ScaleHandler records it.
fn yaml_and_scale(s: &Server) {
    let http = s.http();
    let deploy = "/apis/apps/v1/namespaces/default/deployments/scaled";
    const APPLY: Option<&str> = Some("application/apply-patch+yaml");
    let yaml = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: scaled
spec:
  replicas: 2
  selector: {matchLabels: {app: scaled}}
  template:
    metadata: {labels: {app: scaled}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
";
    let r = http.request(
        "PATCH",
        &format!("{deploy}?fieldManager=deployer"),
        APPLY,
        Some(yaml.as_bytes().to_vec()),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let d = r.json();
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(managers(&d), [pair("deployer", "Apply")]);
    assert_eq!(
        d["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );
    // Not YAML: kube's 400.
    let r = http.request(
        "PATCH",
        &format!("{deploy}?fieldManager=deployer"),
        APPLY,
        Some(b"spec: [unclosed".to_vec()),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("error decoding YAML: error converting YAML to JSON: yaml: "),
        "{}",
        r.text()
    );

    let scale = |replicas: u32| {
        format!("apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: scaled\nspec:\n  replicas: {replicas}\n")
    };
    // Another manager applies 5 replicas through the Scale: the deployer owns them.
    let r = http.request(
        "PATCH",
        &format!("{deploy}/scale?fieldManager=hpa"),
        APPLY,
        Some(scale(5).into_bytes()),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    let msg = r.json()["message"].as_str().unwrap().to_owned();
    assert_eq!(
        msg,
        "Apply failed with 1 conflict: conflict with \"deployer\": .spec.replicas",
    );
    // The Scale's own version is checked.
    let r = http.request(
        "PATCH",
        &format!("{deploy}/scale?fieldManager=hpa"),
        APPLY,
        Some(scale(5).replace("autoscaling/v1", "apps/v1").into_bytes()),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "Incorrect version specified in apply patch. Specified patch version: apps/v1, expected: autoscaling/v1"
    );
    // The Scale is checked against its own schema: an undeclared field is kube's 500.
    let r = http.request(
        "PATCH",
        &format!("{deploy}/scale?fieldManager=hpa&force=true"),
        APPLY,
        Some(format!("{}  bogus: 1\n", scale(5)).into_bytes()),
    );
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "failed to create typed patch object (/scaled; autoscaling/v1, Kind=Scale): \
         .spec.bogus: field not declared in schema"
    );
    assert_eq!(http.get(deploy).json()["spec"]["replicas"], 2);
    // With force it takes them: the answer is the Scale, the object has 5 replicas, owned by
    // hpa's `scale` entry and no longer by the deployer.
    let r = http.request(
        "PATCH",
        &format!("{deploy}/scale?fieldManager=hpa&force=true"),
        APPLY,
        Some(scale(5).into_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let sc = r.json();
    assert_eq!(
        (sc["kind"].as_str(), sc["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(5))
    );
    let d = http.get(deploy).json();
    assert_eq!(d["spec"]["replicas"], 5);
    let entries = d["metadata"]["managedFields"].as_array().unwrap().clone();
    let hpa = entries
        .iter()
        .find(|e| e["manager"] == "hpa")
        .unwrap_or_else(|| panic!("no hpa entry: {d}"));
    assert_eq!(hpa["operation"], "Apply");
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(
        hpa["fieldsV1"]["f:spec"],
        json!({"f:replicas": {}}),
        "{hpa}"
    );
    let deployer = entries.iter().find(|e| e["manager"] == "deployer").unwrap();
    assert!(
        deployer["fieldsV1"]["f:spec"].get("f:replicas").is_none(),
        "{deployer}"
    );
    assert!(deployer["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"].is_object());
    // kubectl scale (an update through the Scale) is recorded as a `scale` Update entry.
    s.kubectl_ok(&["scale", "deployment", "scaled", "--replicas=1"]);
    let d = http.get(deploy).json();
    assert_eq!(d["spec"]["replicas"], 1);
    assert!(
        d["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["operation"] == "Update" && e["subresource"] == "scale"),
        "{}",
        d["metadata"]["managedFields"]
    );
    // To zero: the Scale's `replicas: 0` is an `omitempty` int32 kube's decoder leaves unset,
    // which is zero; the Deployment's is a pointer, kept at 0.
    s.kubectl_ok(&["scale", "deployment", "scaled", "--replicas=0"]);
    let d = http.get(deploy).json();
    assert_eq!(d["spec"]["replicas"], 0, "{d}");
    let scale = http.get(&format!("{deploy}/scale")).json();
    assert_eq!(scale["spec"].get("replicas"), None, "{scale}");
    // The Scale of a Deployment that is not there: kube's 404 names the subresource, on a
    // write as on a read.
    let missing = "/apis/apps/v1/namespaces/default/deployments/nope/scale";
    let put = http.put_json(
        missing,
        &serde_json::json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "nope", "namespace": "default"}, "spec": {"replicas": 2}}),
    );
    let patch = http.patch(
        missing,
        "application/merge-patch+json",
        &serde_json::json!({"spec": {"replicas": 2}}),
    );
    for r in [put, patch, http.get(missing)] {
        assert_eq!(r.status, 404, "{}", r.text());
        assert_eq!(
            r.json()["message"],
            "deployments/scale.apps \"nope\" not found",
            "{}",
            r.text()
        );
    }
}

/// An applied configuration is checked against the kind's schema before anything else of the
/// apply, as kube's field manager converts it to a typed value (`ObjectToTyped`): a field the
/// schema does not declare is kube's 500 under every `fieldValidation`, and nothing is written.
/// A custom resource's schema declares what its structural schema does, anything below
/// `x-kubernetes-preserve-unknown-fields`.
fn undeclared_fields(s: &Server) {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa-unknown}\ndata: {a: \"1\"}\nbogus: 1\n";
    for validate in ["--validate=strict", "--validate=warn", "--validate=false"] {
        let out = s.kubectl_stdin(&["apply", "--server-side", validate, "-f", "-"], cm);
        assert!(!out.status.success(), "{validate}");
        assert!(
            stderr(&out).contains(
                "failed to create typed patch object (default/ssa-unknown; /v1, Kind=ConfigMap): \
                 .bogus: field not declared in schema"
            ),
            "{validate}: {}",
            stderr(&out)
        );
    }
    let http = s.http();
    let path = "/api/v1/namespaces/default/configmaps/ssa-unknown";
    assert_eq!(http.get(path).status, 404);
    // Raw, with fieldValidation=Ignore: the Status is kube's, a 500 without a reason.
    let r = http.request(
        "PATCH",
        &format!("{path}?fieldManager=m&fieldValidation=Ignore"),
        Some("application/apply-patch+yaml"),
        Some(cm.as_bytes().to_vec()),
    );
    assert_eq!(r.status, 500, "{}", r.text());
    let status = r.json();
    assert_eq!(
        status["message"],
        "failed to create typed patch object (/ssa-unknown; /v1, Kind=ConfigMap): \
         .bogus: field not declared in schema",
        "{status}"
    );
    assert!(status.get("reason").is_none(), "{status}");
    assert_eq!(http.get(path).status, 404);

    // A custom resource: unknown below `extra` (preserved) is kept, elsewhere refused.
    let route = |name: &str, spec: &str| {
        format!(
            "apiVersion: mesh.example.com/v1\nkind: Route\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n{spec}"
        )
    };
    apply_ok(
        s,
        &["apply", "--server-side", "-f", "-"],
        &route("free", "  extra: {anything: {deep: [1, 2]}}\n"),
    );
    let r = s.kubectl_json(&["get", "route", "free"]);
    assert_eq!(
        r["spec"]["extra"],
        json!({"anything": {"deep": [1, 2]}}),
        "{r}"
    );
    let out = s.kubectl_stdin(
        &["apply", "--server-side", "--validate=false", "-f", "-"],
        &route("strict", "  hosts: [a]\n  bogus: 1\n"),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "failed to create typed patch object (default/strict; mesh.example.com/v1, Kind=Route): \
             .spec.bogus: field not declared in schema"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!s.kubectl(&["get", "route", "strict"]).status.success());
}

#[test]
fn server_side_apply_with_real_clients() {
    let s = Server::start().unwrap();
    kubectl_deployment(&s);
    crd_list_map(&s);
    undeclared_fields(&s);
    client_side_migration(&s);
    client_side_migration_of_admitted_fields(&s);
    secret_string_data(&s);
    byte_level(&s);
    yaml_and_scale(&s);
}
