//! The HorizontalPodAutoscaler controller (`horizontal-pod-autoscaler`, Rust) end to end with
//! kubectl: a target below `minReplicas` is scaled up at once; without a metrics API the HPA
//! reports kube's `FailedGetResourceMetric` (as a kube cluster without metrics-server does);
//! with `metrics.k8s.io` served (here by a CRD of PodMetrics) it scales on CPU utilization with
//! kube's replica calculator; a missing target is `FailedGetScale`.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

const LOAD_DEADLINE: Duration = Duration::from_secs(600);
/// Two sync periods of 15 s and then some.
const DEADLINE: Duration = Duration::from_secs(90);

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
"#;

const POD_METRICS_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pods.metrics.k8s.io
  annotations: {api-approved.kubernetes.io: "unapproved, a stand-in for metrics-server in a test"}
spec:
  group: metrics.k8s.io
  scope: Namespaced
  names: {plural: pods, singular: podmetrics, kind: PodMetrics, listKind: PodMetricsList}
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          timestamp: {type: string}
          window: {type: string}
          containers:
            type: array
            items:
              type: object
              properties:
                name: {type: string}
                usage: {type: object, additionalProperties: {type: string}}
"#;

fn condition(hpa: &Value, ty: &str) -> Value {
    hpa["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == ty))
        .cloned()
        .unwrap_or(Value::Null)
}

fn replicas(s: &Server) -> i64 {
    s.kubectl_json(&["get", "deployment", "web"])["spec"]["replicas"]
        .as_i64()
        .unwrap_or(-1)
}

fn events(s: &Server, reason: &str) -> Vec<String> {
    let list = s.kubectl_json(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.kind=HorizontalPodAutoscaler,reason={reason}"),
    ]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn an_hpa_scales_its_target_within_bounds_and_on_cpu_metrics() {
    let s = Server::start_with_controllers(&[]).unwrap();
    for name in ["node", "horizontal-pod-autoscaler"] {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    s.wait_controllers_running(&["node", "horizontal-pod-autoscaler"], LOAD_DEADLINE)
        .unwrap();
    s.kubectl_apply(DEPLOYMENT);

    // Below minReplicas: scaled at once, metrics or not.
    s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--min=2",
        "--max=5",
        "--cpu-percent=50",
    ]);
    poll("web scaled to minReplicas", DEADLINE, || {
        (replicas(&s) == 2).then_some(())
    })
    .unwrap();
    assert_eq!(
        events(&s, "SuccessfulRescale"),
        ["New size: 2; reason: Current number of replicas below Spec.MinReplicas"]
    );

    // No metrics API: kube's conditions and events, as without metrics-server.
    let unable = "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";
    let hpa = poll("ScalingActive False", DEADLINE, || {
        let hpa = s.kubectl_json(&["get", "hpa", "web"]);
        (condition(&hpa, "ScalingActive")["status"] == "False").then_some(hpa)
    })
    .unwrap();
    let active = condition(&hpa, "ScalingActive");
    assert_eq!(active["reason"], "FailedGetResourceMetric");
    assert_eq!(
        active["message"],
        format!("the HPA was unable to compute the replica count: {unable}")
    );
    assert_eq!(
        condition(&hpa, "AbleToScale")["reason"],
        "SucceededGetScale"
    );
    assert_eq!(hpa["status"]["currentReplicas"], 2);
    assert_eq!(hpa["status"]["desiredReplicas"], 2);
    assert!(hpa["status"]["lastScaleTime"].is_string(), "{hpa}");
    // The Events follow the status write.
    let computed = format!(
        "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: {unable}"
    );
    poll("the metric Events", DEADLINE, || {
        (events(&s, "FailedGetResourceMetric") == [unable]
            && events(&s, "FailedComputeMetricsReplicas") == [computed.clone()])
        .then_some(())
    })
    .unwrap();
    let table = s.kubectl_ok(&["get", "hpa", "web"]);
    assert!(table.contains("cpu: <unknown>/50%"), "{table}");
    assert_eq!(replicas(&s), 2);

    // metrics.k8s.io served (a CRD of PodMetrics standing in for metrics-server): two ready
    // Pods at 70% of their 100m against a 50% target -> ceil(2 * 1.4) = 3 (below the scale-up
    // cap of max(2 * 2, 4) and maxReplicas 5).
    s.kubectl_apply(POD_METRICS_CRD);
    poll("PodMetrics served", DEADLINE, || {
        (s.http()
            .get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods")
            .status
            == 200)
            .then_some(())
    })
    .unwrap();
    for name in ["web-a", "web-b"] {
        s.kubectl_apply(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: web}}}}\nspec:\n  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m}}}}}}]\n"
        ));
    }
    for name in ["web-a", "web-b"] {
        let pod = poll(&format!("{name} Ready"), DEADLINE, || {
            let pod = s.kubectl_json(&["get", "pod", name]);
            (condition(&pod, "Ready")["status"] == "True").then_some(pod)
        })
        .unwrap();
        // A sample taken a window after the Pod became Ready (kube ignores earlier CPU samples
        // of a Pod in its first 5 minutes).
        let ready_at = condition(&pod, "Ready")["lastTransitionTime"]
            .as_str()
            .unwrap()
            .to_owned();
        let sampled = chrono::DateTime::parse_from_rfc3339(&ready_at).unwrap()
            + chrono::Duration::seconds(31);
        let metrics = json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "timestamp": sampled.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "window": "30s",
            "containers": [{"name": "c", "usage": {"cpu": "70m", "memory": "10Mi"}}]});
        let r = s.http().post_json(
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
            &metrics,
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    poll("web scaled to 3 on CPU", DEADLINE, || {
        (replicas(&s) == 3).then_some(())
    })
    .unwrap();
    assert!(
        events(&s, "SuccessfulRescale").contains(
            &"New size: 3; reason: cpu resource utilization (percentage of request) above target"
                .to_owned()
        ),
        "{:?}",
        events(&s, "SuccessfulRescale")
    );
    let hpa = poll("the metric in the status", DEADLINE, || {
        let hpa = s.kubectl_json(&["get", "hpa", "web"]);
        (hpa["status"]["desiredReplicas"] == 3).then_some(hpa)
    })
    .unwrap();
    assert_eq!(
        hpa["status"]["currentMetrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": 70, "averageValue": "70m"}}}])
    );
    let active = condition(&hpa, "ScalingActive");
    assert_eq!(
        (active["status"].clone(), active["message"].clone()),
        (
            json!("True"),
            json!("the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)")
        )
    );
    let table = s.kubectl_ok(&["get", "hpa", "web"]);
    assert!(table.contains("cpu: 70%/50%"), "{table}");
    // autoscaling/v1 shows the same through the conversion.
    let v1 = s.kubectl_json(&["get", "horizontalpodautoscalers.v1.autoscaling", "web"]);
    assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70, "{v1}");

    // A second HPA over the same Pods: both stop, with kube's AmbiguousSelector.
    s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--name=web2",
        "--min=1",
        "--max=5",
        "--cpu-percent=50",
    ]);
    let ambiguous =
        "pods by selector app=web are controlled by multiple HPAs: [default/web default/web2]";
    for name in ["web2", "web"] {
        let hpa = poll(&format!("{name} AmbiguousSelector"), DEADLINE, || {
            let hpa = s.kubectl_json(&["get", "hpa", name]);
            (condition(&hpa, "ScalingActive")["reason"] == "AmbiguousSelector").then_some(hpa)
        })
        .unwrap();
        assert_eq!(condition(&hpa, "ScalingActive")["message"], ambiguous);
    }
    assert_eq!(replicas(&s), 3);
    s.kubectl_ok(&["delete", "hpa", "web2"]);
    poll("web valid again", DEADLINE, || {
        let hpa = s.kubectl_json(&["get", "hpa", "web"]);
        (condition(&hpa, "ScalingActive")["reason"] == "ValidMetricFound").then_some(())
    })
    .unwrap();

    // The target gone: FailedGetScale with kube's message.
    s.kubectl_ok(&["delete", "deployment", "web"]);
    let hpa = poll("AbleToScale False", DEADLINE, || {
        let hpa = s.kubectl_json(&["get", "hpa", "web"]);
        (condition(&hpa, "AbleToScale")["status"] == "False").then_some(hpa)
    })
    .unwrap();
    assert_eq!(
        condition(&hpa, "AbleToScale")["message"],
        "the HPA controller was unable to get the target's current scale: deployments/scale.apps \"web\" not found"
    );
}
