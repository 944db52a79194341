//! The aggregation layer with the real binary and kubectl: local APIServices for the built-in
//! groups and CRDs, kube's discovery order, and an extension API server (`metrics.k8s.io`, as
//! metrics-server serves it) reached through its APIService: availability with kube's reasons,
//! `kubectl top`, the user handed on in `X-Remote-*` headers with the front-proxy certificate,
//! authorization before the proxy, a streamed watch, and a failing server.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{extension, poll, Server};

const DEADLINE: Duration = Duration::from_secs(60);

fn available(s: &Server, name: &str) -> Option<(String, String, String)> {
    let out = s.kubectl(&["get", "apiservice", name, "-o", "json"]);
    if !out.status.success() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    let c = v["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")?
        .clone();
    Some((
        c["status"].as_str()?.to_owned(),
        c["reason"].as_str()?.to_owned(),
        c["message"].as_str()?.to_owned(),
    ))
}

fn wait_reason(s: &Server, name: &str, reason: &str) -> (String, String, String) {
    poll(&format!("{name} {reason}"), DEADLINE, || {
        available(s, name).filter(|(_, r, _)| r == reason)
    })
    .unwrap()
}

fn group_names(list: &Value) -> Vec<String> {
    list["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| g["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn local_apiservices_follow_the_served_groups_and_crds() {
    let s = Server::start().unwrap();
    // Every built-in group version, kube's way: once at start, as `onstart`.
    let apps = poll("v1.apps", DEADLINE, || {
        let out = s.kubectl(&["get", "apiservice", "v1.apps", "-o", "json"]);
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).ok())
            .flatten()
    })
    .unwrap();
    assert_eq!(
        apps["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    assert_eq!(
        apps["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    let (status, _, message) = wait_reason(&s, "v1.apps", "Local");
    assert_eq!(
        (status.as_str(), message.as_str()),
        ("True", "Local APIServices are always available")
    );
    wait_reason(&s, "v1.", "Local");
    let table = s.kubectl_ok(&["get", "apiservices"]);
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>().get(..3)
                == Some(&["v2.autoscaling", "Local", "True"][..])),
        "{table}"
    );

    // kube's discovery order: its own group first, then by group priority.
    let groups = group_names(&s.http().get("/apis").json());
    assert_eq!(
        groups[..6],
        [
            "apiregistration.k8s.io",
            "apps",
            "events.k8s.io",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "autoscaling"
        ],
        "{groups:?}"
    );

    // A CRD's versions get APIServices kept continuously, the GA version preferred.
    s.kubectl_apply(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.agg.example.com}
spec:
  group: agg.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1beta1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
"#,
    );
    for name in ["v1.agg.example.com", "v1beta1.agg.example.com"] {
        let (status, reason, _) = wait_reason(&s, name, "Local");
        assert_eq!((status.as_str(), reason.as_str()), ("True", "Local"));
    }
    let crd_api = s.kubectl_json(&["get", "apiservice", "v1.agg.example.com"]);
    assert_eq!(
        crd_api["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    assert_eq!(crd_api["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(crd_api["spec"]["versionPriority"], 100);
    let group = s.http().get("/apis/agg.example.com").json();
    assert_eq!(group["preferredVersion"]["version"], "v1", "{group}");
    assert_eq!(group["versions"][1]["version"], "v1beta1", "{group}");

    // Deleted, it comes back; its spec edited, it is put back.
    let uid = crd_api["metadata"]["uid"].as_str().unwrap().to_owned();
    s.kubectl_ok(&["delete", "apiservice", "v1.agg.example.com"]);
    poll("v1.agg.example.com back", DEADLINE, || {
        let out = s.kubectl(&[
            "get",
            "apiservice",
            "v1.agg.example.com",
            "-o",
            "jsonpath={.metadata.uid}",
        ]);
        let now = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && !now.is_empty() && now != uid).then_some(())
    })
    .unwrap();
    s.kubectl_ok(&[
        "patch",
        "apiservice",
        "v1.agg.example.com",
        "--type=merge",
        "-p",
        r#"{"spec":{"versionPriority":7}}"#,
    ]);
    poll("the spec put back", DEADLINE, || {
        let v = s.kubectl_json(&["get", "apiservice", "v1.agg.example.com"]);
        (v["spec"]["versionPriority"] == 100).then_some(())
    })
    .unwrap();

    // The CRD gone, so are its APIServices.
    s.kubectl_ok(&["delete", "crd", "widgets.agg.example.com"]);
    poll("the CRD's APIServices gone", DEADLINE, || {
        let list = s.kubectl_json(&["get", "apiservices"]);
        let names = turtles_tests::item_names(&list);
        (!names.iter().any(|n| n.ends_with(".agg.example.com"))).then_some(())
    })
    .unwrap();
}

const APISERVICE: &str = "v1beta1.metrics.k8s.io";

#[test]
fn an_extension_server_is_reached_through_its_apiservice() {
    let s = Server::start().unwrap();
    // What an extension server reads to trust the front proxy.
    let trust = poll("extension-apiserver-authentication", DEADLINE, || {
        let out = s.kubectl(&[
            "get",
            "configmap",
            "-n",
            "kube-system",
            "extension-apiserver-authentication",
            "-o",
            "json",
        ]);
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).ok())
            .flatten()
    })
    .unwrap();
    let data = &trust["data"];
    assert_eq!(
        data["requestheader-allowed-names"],
        "[\"front-proxy-client\"]"
    );
    assert_eq!(
        data["requestheader-username-headers"],
        "[\"X-Remote-User\"]"
    );
    assert_eq!(data["requestheader-group-headers"], "[\"X-Remote-Group\"]");
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        "[\"X-Remote-Extra-\"]"
    );
    assert!(data["client-ca-file"]
        .as_str()
        .unwrap()
        .contains("BEGIN CERTIFICATE"));
    let front_proxy_ca = data["requestheader-client-ca-file"].as_str().unwrap();
    let ext = extension::start("metrics-server.kube-system.svc", front_proxy_ca).unwrap();

    // The APIService before its Service exists: kube's reason, and requests refused.
    s.kubectl_apply(&format!(
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {APISERVICE}}}\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  service: {{namespace: kube-system, name: metrics-server, port: {}}}\n  caBundle: {}\n  groupPriorityMinimum: 100\n  versionPriority: 100\n",
        ext.port, ext.ca_bundle
    ));
    let (status, _, message) = wait_reason(&s, APISERVICE, "ServiceNotFound");
    assert_eq!(status, "False");
    assert_eq!(
        message,
        "service/metrics-server in \"kube-system\" is not present"
    );
    let refused = s
        .http()
        .get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods");
    assert_eq!(
        (refused.status, refused.text()),
        (503, "service unavailable\n".to_owned())
    );
    let listed = group_names(&s.http().get("/apis").json());
    assert!(listed.contains(&"metrics.k8s.io".to_owned()), "{listed:?}");

    // A ClusterIP Service: its port, then its endpoints are checked.
    s.kubectl_apply(
        "apiVersion: v1\nkind: Service\nmetadata: {name: metrics-server, namespace: kube-system}\nspec:\n  ports: [{name: https, port: 443}]\n",
    );
    let (_, _, message) = wait_reason(&s, APISERVICE, "ServicePortError");
    assert_eq!(
        message,
        format!(
            "service/metrics-server in \"kube-system\" is not listening on port {}",
            ext.port
        )
    );
    s.kubectl_ok(&["delete", "service", "-n", "kube-system", "metrics-server"]);
    s.kubectl_apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: metrics-server, namespace: kube-system}}\nspec:\n  ports: [{{name: https, port: {}}}]\n",
        ext.port
    ));
    let (_, _, message) = wait_reason(&s, APISERVICE, "EndpointsNotFound");
    assert_eq!(
        message,
        "cannot find endpointslices for service/metrics-server in \"kube-system\""
    );
    s.kubectl_apply(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: metrics-server-1\n  namespace: kube-system\n  labels: {kubernetes.io/service-name: metrics-server}\naddressType: IPv4\nendpoints: [{addresses: [10.244.0.9], conditions: {ready: false}}]\nports: [{name: https, port: 4443, protocol: TCP}]\n",
    );
    let (_, _, message) = wait_reason(&s, APISERVICE, "MissingEndpoints");
    assert_eq!(
        message,
        "endpointslices for service/metrics-server in \"kube-system\" have no addresses with port name \"https\""
    );

    // The server runs on this machine: an ExternalName Service names it (EndpointSlices may
    // not hold loopback addresses).
    s.kubectl_ok(&["delete", "service", "-n", "kube-system", "metrics-server"]);
    s.kubectl_apply(
        "apiVersion: v1\nkind: Service\nmetadata: {name: metrics-server, namespace: kube-system}\nspec:\n  type: ExternalName\n  externalName: localhost\n",
    );
    let (status, _, message) = wait_reason(&s, APISERVICE, "Passed");
    assert_eq!(
        (status.as_str(), message.as_str()),
        ("True", "all checks passed")
    );
    // The probe came as kube's aggregator, with the front proxy's certificate.
    let probe = ext
        .requests()
        .into_iter()
        .find(|r| r.target == "/apis/metrics.k8s.io/v1beta1")
        .expect("the availability probe");
    assert_eq!(
        probe.header_values("x-remote-user"),
        ["system:kube-aggregator"]
    );
    assert_eq!(probe.header_values("x-remote-group"), ["system:masters"]);
    assert!(contains(&probe.client_cert, b"front-proxy-client"));

    // kubectl top, through discovery and the proxy.
    let top = poll("kubectl top pod", DEADLINE, || {
        let out = s.kubectl(&["top", "pod", "-n", "default"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).to_string())
    })
    .unwrap();
    let row: Vec<&str> = top
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row, ["busy", "5m", "10Mi"], "{top}");
    let resources = s.kubectl_ok(&["api-resources", "--api-group=metrics.k8s.io", "-o", "name"]);
    assert_eq!(
        resources.lines().collect::<Vec<_>>(),
        ["nodes.metrics.k8s.io", "pods.metrics.k8s.io"]
    );

    // kubectl explain, through the server's OpenAPI v3 document listed here.
    let explained = poll("kubectl explain podmetrics", DEADLINE, || {
        let out = s.kubectl(&["explain", "podmetrics"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).to_string())
    })
    .unwrap();
    assert!(explained.contains("KIND:       PodMetrics"), "{explained}");
    assert!(
        explained.contains("PodMetrics sets resource usage metrics of a pod."),
        "{explained}"
    );
    assert!(explained.contains("window"), "{explained}");

    // The user handed on, whatever the client claimed; its credential not.
    let before = ext.requests().len();
    let reply = s
        .http()
        .client
        .get(format!(
            "{}/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
            s.http().base
        ))
        .header("X-Remote-User", "root")
        .header("X-Remote-Uid", "0")
        .header("X-Remote-Group", "system:nodes")
        .header("X-Remote-Extra-Scopes", "all")
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    let seen = ext.requests()[before..]
        .iter()
        .find(|r| r.target.ends_with("/namespaces/default/pods"))
        .cloned()
        .expect("the proxied list");
    assert_eq!(seen.header_values("x-remote-user"), ["admin"]);
    assert_eq!(
        seen.header_values("x-remote-group"),
        ["system:masters", "system:authenticated"]
    );
    assert!(seen.header_values("authorization").is_empty());
    assert_eq!(seen.header_values("x-remote-uid"), ["admin"]);
    assert!(seen.header_values("x-remote-extra-scopes").is_empty());
    // Impersonation: the impersonated user is handed on.
    let out = s.kubectl(&[
        "--as=alice",
        "--as-group=system:masters",
        "get",
        "--raw",
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = ext
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.target.ends_with("/namespaces/default/pods"))
        .unwrap();
    assert_eq!(last.header_values("x-remote-user"), ["alice"]);
    assert_eq!(
        last.header_values("x-remote-group"),
        ["system:masters", "system:authenticated"]
    );
    assert!(last.header_values("impersonate-user").is_empty());

    // A path the server could read otherwise than it was authorized is refused (dot segments
    // too, which the HTTP client here resolves before sending: the unit tests have those).
    let odd = "/apis/metrics.k8s.io/v1beta1/namespaces//default/pods";
    let before = ext.requests().len();
    let reply = s
        .http()
        .client
        .get(format!("{}{odd}", s.http().base))
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 400, "{odd}");
    assert_eq!(ext.requests().len(), before, "{odd} reached the server");
    // The server gets the decoded path, written as Go writes it (kube's aggregator sends
    // `req.URL.Path`): `%3A` as `:`, an encoded `/` as the separator it was authorized as, a
    // space still encoded.
    for (sent, seen) in [
        (
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/system%3Anode",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/system:node",
        ),
        (
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a%2Fb",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a/b",
        ),
        (
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a%20b",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a%20b",
        ),
    ] {
        let before = ext.requests().len();
        let reply = s
            .http()
            .client
            .get(format!("{}{sent}", s.http().base))
            .send()
            .unwrap();
        assert_eq!(reply.status().as_u16(), 404, "{sent}");
        // (Discovery and availability probes may come in between.)
        let targets: Vec<String> = ext.requests()[before..]
            .iter()
            .filter(|r| r.target.contains("/pods/"))
            .map(|r| r.target.clone())
            .collect();
        assert_eq!(targets, [seen], "{sent}");
    }

    // Authorized here first: a user without RBAC never reaches the server.
    let (kubeconfig, _) = s.mint("tenant", &[]).unwrap();
    let before = ext.requests().len();
    let out = s.kubectl_with(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("forbidden"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(ext.requests()[before..]
        .iter()
        .all(|r| !r.target.contains("/namespaces/default/pods")));
    s.kubectl_ok(&[
        "create",
        "role",
        "metrics",
        "--verb=list",
        "--resource=pods.metrics.k8s.io",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "metrics",
        "--role=metrics",
        "--user=tenant",
    ]);
    let list = poll("the tenant's list", DEADLINE, || {
        let out = s.kubectl_with(
            &kubeconfig,
            &[
                "get",
                "--raw",
                "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
            ],
        );
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).ok())
            .flatten()
    })
    .unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "busy");
    let last = ext
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.target.ends_with("/namespaces/default/pods"))
        .unwrap();
    assert_eq!(last.header_values("x-remote-user"), ["tenant"]);
    // The tenant's RoleBinding is in `default`: another namespace is still refused here.
    let out = s.kubectl_with(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("forbidden"));

    // A watch streams: its first event arrives while the server holds the second.
    let mut watch = s
        .http()
        .watch("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?watch=true");
    let first = watch.next_event().expect("the first event");
    assert_eq!(first["object"]["metadata"]["name"], "first");
    ext.release.store(true, Ordering::SeqCst);
    let second = watch.next_event().expect("the second event");
    assert_eq!(second["object"]["metadata"]["name"], "second");

    // The server failing its discovery: kube's reason, requests refused, kubectl told.
    ext.fail_with.store(500, Ordering::SeqCst);
    let (status, _, message) = wait_reason(&s, APISERVICE, "FailedDiscoveryCheck");
    let url = format!("https://127.0.0.1:{}/apis/metrics.k8s.io/v1beta1", ext.port);
    assert_eq!(status, "False");
    assert_eq!(
        message,
        format!("failing or missing response from {url}: bad status from {url}: 500")
    );
    // Every host learns the condition from its informer: poll for what follows from it.
    poll("503 while unavailable", DEADLINE, || {
        let refused = s
            .http()
            .get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods");
        (refused.status == 503).then_some(refused.text())
    })
    .map(|text| assert_eq!(text, "service unavailable\n"))
    .unwrap();
    poll("Stale in aggregated discovery", DEADLINE, || {
        let reply = s.http().request_with_accept(
            "/apis",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        );
        let doc = reply.json();
        let group = doc["items"]
            .as_array()?
            .iter()
            .find(|g| g["metadata"]["name"] == "metrics.k8s.io")?
            .clone();
        (group["versions"][0] == json!({"version": "v1beta1", "freshness": "Stale"})).then_some(())
    })
    .unwrap();
    let stderr = poll("kubectl top refused", DEADLINE, || {
        let out = s.kubectl(&["top", "pod", "-n", "default"]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (!out.status.success() && err.contains("Metrics API not available")).then_some(err)
    })
    .unwrap();
    assert!(stderr.contains("Metrics API not available"));
    // Back again.
    ext.fail_with.store(0, Ordering::SeqCst);
    wait_reason(&s, APISERVICE, "Passed");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A second turtles host as the extension server of the first: the first's front proxy is
/// trusted by the second (`--requestheader-client-ca-file`), which serves a CRD's group.
#[test]
fn a_turtles_host_serves_a_group_behind_another_through_its_front_proxy() {
    use base64::Engine;
    let front = Server::start().unwrap();
    let proxy_ca = front.data_dir.join("pki").join("front-proxy-ca.crt");
    let proxy_ca = proxy_ca.to_str().unwrap().to_owned();
    let back = Server::start_with(&[
        "--requestheader-client-ca-file",
        &proxy_ca,
        "--requestheader-allowed-names",
        "front-proxy-client",
        "--tls-san",
        "back.default.svc",
    ])
    .unwrap();
    back.kubectl_apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.back.example.com}\nspec:\n  group: back.example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]\n",
    );
    let port = back.url.rsplit(':').next().unwrap().to_owned();
    let ca = base64::engine::general_purpose::STANDARD.encode(back.ca_pem.clone().unwrap());
    front.kubectl_apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: back}}\nspec: {{type: ExternalName, externalName: localhost}}\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: v1.back.example.com}}\nspec:\n  group: back.example.com\n  version: v1\n  service: {{namespace: default, name: back, port: {port}}}\n  caBundle: {ca}\n  groupPriorityMinimum: 1000\n  versionPriority: 100\n"
    ));
    let (status, _, message) = wait_reason(&front, "v1.back.example.com", "Passed");
    assert_eq!(
        (status.as_str(), message.as_str()),
        ("True", "all checks passed")
    );

    // Through the front host, with its discovery of the back host's kind.
    poll("a widget created through the front host", DEADLINE, || {
        let out = front.kubectl_stdin(
            &["create", "-f", "-"],
            "apiVersion: back.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nsize: 3\n",
        );
        out.status.success().then_some(())
    })
    .unwrap();
    let stored = back.kubectl_json(&["get", "widgets.back.example.com", "w1"]);
    assert_eq!(stored["size"], 3);
    let listed = front.kubectl_ok(&["get", "widgets.back.example.com", "-o", "name"]);
    assert_eq!(listed.trim(), "widget.back.example.com/w1");

    // Each host authorizes: the front lets the tenant through, the back does not know them.
    let (tenant, _) = front.mint("tenant", &[]).unwrap();
    front.kubectl_ok(&[
        "create",
        "role",
        "widgets",
        "--verb=get,list",
        "--resource=widgets.back.example.com",
    ]);
    front.kubectl_ok(&[
        "create",
        "rolebinding",
        "widgets",
        "--role=widgets",
        "--user=tenant",
    ]);
    let err = poll("the back host's refusal", DEADLINE, || {
        let out = front.kubectl_with(&tenant, &["get", "widgets.back.example.com"]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (!out.status.success() && err.contains("cannot list resource")).then_some(err)
    })
    .unwrap();
    assert!(
        err.contains(
            "User \"tenant\" cannot list resource \"widgets\" in API group \"back.example.com\""
        ),
        "{err}"
    );
    back.kubectl_ok(&[
        "create",
        "role",
        "widgets",
        "--verb=get,list",
        "--resource=widgets.back.example.com",
    ]);
    back.kubectl_ok(&[
        "create",
        "rolebinding",
        "widgets",
        "--role=widgets",
        "--user=tenant",
    ]);
    poll("the tenant's list through both hosts", DEADLINE, || {
        let out = front.kubectl_with(&tenant, &["get", "widgets.back.example.com", "-o", "name"]);
        out.status.success().then_some(())
    })
    .unwrap();

    // Headers alone name nobody: a client of the back host without the front proxy's
    // certificate stays who its token says.
    let (_, nobody) = back.mint("nobody", &[]).unwrap();
    let r = back
        .http_with_token(Some(&nobody))
        .client
        .get(format!(
            "{}/apis/back.example.com/v1/namespaces/default/widgets",
            back.url
        ))
        .header("X-Remote-User", "admin")
        .header("X-Remote-Group", "system:masters")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let st: Value = r.json().unwrap();
    assert!(
        st["message"]
            .as_str()
            .unwrap_or("")
            .contains("User \"nobody\""),
        "{st}"
    );
}
