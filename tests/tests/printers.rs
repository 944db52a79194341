//! `kubectl get` of built-in kinds prints kube's columns (and `-o wide` the priority-1 ones),
//! with the real binary and the real kubectl.

use turtles_tests::Server;

const MANIFEST: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: hello}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: hello, image: busybox}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
"#;

/// The header's words and the first row of `kubectl get <args>`.
fn get(s: &Server, args: &[&str]) -> (Vec<String>, String) {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    let out = s.kubectl_ok(&full);
    let mut lines = out.lines();
    let header = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    (header, lines.next().unwrap_or_default().to_owned())
}

#[test]
fn kubectl_get_prints_kubes_columns_for_built_in_kinds() {
    let s = Server::start().expect("server starts");
    s.kubectl_apply(MANIFEST);

    let (header, row) = get(&s, &["services", "web"]);
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert!(row.starts_with("web "), "{row}");
    assert!(row.contains("NodePort") && row.contains("<none>"), "{row}");
    assert!(row.contains("80:30080/TCP"), "{row}");
    let (header, row) = get(&s, &["services", "web", "-o", "wide"]);
    assert_eq!(header.last().map(String::as_str), Some("SELECTOR"));
    assert!(row.trim_end().ends_with("app=web"), "{row}");

    let (header, row) = get(&s, &["cronjobs"]);
    assert_eq!(
        header,
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    );
    assert!(row.starts_with("hello "), "{row}");
    assert!(
        row.contains("*/5 * * * *") && row.contains("False"),
        "{row}"
    );
    let (header, row) = get(&s, &["cronjobs", "-o", "wide"]);
    assert_eq!(header[8..], ["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert!(row.contains("hello") && row.contains("busybox"), "{row}");

    let (header, row) = get(&s, &["storageclasses"]);
    assert_eq!(
        header,
        [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE"
        ]
    );
    assert!(row.starts_with("standard (default) "), "{row}");
    assert!(
        row.contains("WaitForFirstConsumer") && row.contains("Delete"),
        "{row}"
    );

    let (header, row) = get(&s, &["priorityclasses", "high"]);
    assert_eq!(
        header,
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    );
    assert!(row.starts_with("high ") && row.contains("1000"), "{row}");
    assert!(row.contains("PreemptLowerPriority"), "{row}");

    let (header, row) = get(&s, &["pdb", "web"]);
    assert_eq!(
        header,
        [
            "NAME",
            "MIN",
            "AVAILABLE",
            "MAX",
            "UNAVAILABLE",
            "ALLOWED",
            "DISRUPTIONS",
            "AGE"
        ]
    );
    assert!(row.starts_with("web ") && row.contains("N/A"), "{row}");

    let (header, row) = get(&s, &["roles", "reader"]);
    assert_eq!(header, ["NAME", "CREATED", "AT"]);
    assert!(
        row.starts_with("reader ") && row.trim_end().ends_with('Z'),
        "{row}"
    );
}

#[test]
fn field_selectors_take_each_kinds_field_labels() {
    let s = Server::start().expect("server starts");
    let manifest = r#"
apiVersion: v1
kind: Service
metadata: {name: headless}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: NodePort, selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: perl}]
"#;
    s.kubectl_apply(manifest);
    let names = |args: &[&str]| {
        let mut full = vec!["get", "-o", "name"];
        full.extend_from_slice(args);
        s.kubectl_ok(&full)
    };
    assert_eq!(
        names(&["services", "--field-selector", "spec.clusterIP=None"]).trim(),
        "service/headless"
    );
    assert_eq!(
        names(&["services", "--field-selector", "spec.type=NodePort"]).trim(),
        "service/web"
    );
    assert_eq!(
        names(&["jobs", "--field-selector", "status.successful=0"]).trim(),
        "job.batch/pi"
    );
    let out = s.kubectl(&["get", "jobs", "--field-selector", "status.succeeded=1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"field label "status.succeeded" not supported for batchv1.Job"#),
        "{err}"
    );
    let out = s.kubectl(&["get", "nodes", "--field-selector", "metadata.namespace=x"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("field label not supported: metadata.namespace"),
        "{err}"
    );
}

#[test]
fn custom_resources_select_on_their_selectable_fields() {
    let s = Server::start().expect("server starts");
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.color}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              size: {type: integer}
"#;
    s.kubectl_apply(crd);
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=30s",
    ]);
    let widgets = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: sky}
spec: {color: blue, size: 1}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: grass}
spec: {color: green, size: 2}
"#;
    s.kubectl_apply(widgets);
    let out = s.kubectl_ok(&[
        "get",
        "widgets",
        "--field-selector",
        "spec.color=blue",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "widget.example.com/sky");
    let out = s.kubectl(&["get", "widgets", "--field-selector", "spec.size=1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("field label not supported: spec.size"),
        "{err}"
    );
}
