//! Services as kube-apiserver treats them: cluster IPs and node ports allocated in the write
//! path, requested values honoured or refused with kube's messages, released on delete or a
//! change of type, never doubled by concurrent creates, kept across a `kill -9`; the
//! `kubernetes` Service and its endpoints.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{json, Value};
use turtles_tests::{Http, Server};

const SVCS: &str = "/api/v1/namespaces/default/services";

fn in_default_range(ip: &str) -> bool {
    let ip: Ipv4Addr = ip.parse().unwrap();
    let o = ip.octets();
    o[0] == 10 && (96..112).contains(&o[1]) && ip != Ipv4Addr::new(10, 96, 0, 0)
}

fn svc(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

/// POST a Service; it must be created. Returns it.
fn create(http: &Http, name: &str, spec: Value) -> Value {
    let r = http.post_json(SVCS, &svc(name, spec));
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// POST a Service; it must be refused as invalid on `field` with a message containing `message`.
fn refused(http: &Http, name: &str, spec: Value, field: &str, message: &str) {
    let r = http.post_json(SVCS, &svc(name, spec));
    assert_eq!(r.status, 422, "{}", r.text());
    let status = r.json();
    assert_eq!(status["details"]["causes"][0]["field"], field, "{status}");
    let text = status["message"].as_str().unwrap_or("");
    assert!(text.contains(message), "{status}");
}

#[test]
fn cluster_ips_node_ports_and_the_kubernetes_service() {
    let s = Server::start().unwrap();
    let http = s.http();
    // The kubernetes Service: the first address of the range, 443 -> the server's port.
    let k = s.kubectl_json(&["get", "service", "kubernetes", "-n", "default"]);
    assert_eq!(k["spec"]["clusterIP"], "10.96.0.1", "{k}");
    assert_eq!(k["spec"]["ports"][0]["name"], "https");
    assert_eq!(k["spec"]["ports"][0]["port"], 443);
    let port = http
        .base
        .rsplit(':')
        .next()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    assert_eq!(k["spec"]["ports"][0]["targetPort"], port);
    let ep = s.kubectl_json(&["get", "endpoints", "kubernetes", "-n", "default"]);
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1", "{ep}");
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], port);
    let slice = s.kubectl_json(&["get", "endpointslice", "kubernetes", "-n", "default"]);
    assert_eq!(
        slice["endpoints"][0]["addresses"][0], "127.0.0.1",
        "{slice}"
    );
    assert_eq!(slice["ports"][0]["port"], port);

    // kubectl create service: an allocated IP and kube's single-stack fields.
    s.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let web = s.kubectl_json(&["get", "service", "web"]);
    let ip = web["spec"]["clusterIP"].as_str().unwrap().to_owned();
    assert!(in_default_range(&ip) && ip != "10.96.0.1", "{web}");
    assert_eq!(web["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(web["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(web["spec"]["ipFamilyPolicy"], "SingleStack");

    // A requested IP: honoured if free, refused if taken or outside the range.
    let fixed = create(
        &http,
        "fixed",
        json!({"clusterIP": "10.96.100.100", "ports": [{"port": 80}]}),
    );
    assert_eq!(fixed["spec"]["clusterIPs"], json!(["10.96.100.100"]));
    let out = s.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Service\nmetadata: {name: taken}\nspec:\n  clusterIP: 10.96.100.100\n  ports: [{port: 80}]\n",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Service \"taken\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.100.100\"]: failed to allocate IP 10.96.100.100: provided IP is already allocated"),
        "{err}"
    );
    refused(
        &http,
        "far",
        json!({"clusterIP": "192.168.0.1", "ports": [{"port": 80}]}),
        "spec.clusterIPs",
        "the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12",
    );
    // A dry run reserves nothing.
    let r = http.post_json(
        &format!("{SVCS}?dryRun=All"),
        &svc(
            "dry",
            json!({"clusterIP": "10.96.100.101", "ports": [{"port": 80}]}),
        ),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    create(
        &http,
        "wet",
        json!({"clusterIP": "10.96.100.101", "ports": [{"port": 80}]}),
    );
    // Deleting frees the IP.
    s.kubectl_ok(&["delete", "service", "fixed"]);
    create(
        &http,
        "again",
        json!({"clusterIP": "10.96.100.100", "ports": [{"port": 80}]}),
    );
    // clusterIP is immutable; an apply that leaves it out keeps it.
    let r = http.patch(
        &format!("{SVCS}/web"),
        "application/merge-patch+json",
        &json!({"spec": {"clusterIP": "10.96.100.102", "clusterIPs": ["10.96.100.102"]}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains("may not change once set"), "{}", r.text());
    let mut put = s.kubectl_json(&["get", "service", "web"]);
    let spec = put["spec"].as_object_mut().unwrap();
    spec.remove("clusterIP");
    spec.remove("clusterIPs");
    let r = http.put_json(&format!("{SVCS}/web"), &put);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"]["clusterIP"], ip);

    // Headless and ExternalName get no IP.
    s.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "headless",
        "--clusterip=None",
    ]);
    let h = s.kubectl_json(&["get", "service", "headless"]);
    assert_eq!(h["spec"]["clusterIPs"], json!(["None"]), "{h}");
    s.kubectl_ok(&[
        "create",
        "service",
        "externalname",
        "ext",
        "--external-name=example.com",
    ]);
    let x = s.kubectl_json(&["get", "service", "ext"]);
    assert!(x["spec"].get("clusterIP").is_none(), "{x}");

    // Node ports: allocated in range, requested honoured, a taken one refused.
    s.kubectl_ok(&["create", "service", "nodeport", "np", "--tcp=80:8080"]);
    let np = s.kubectl_json(&["get", "service", "np"]);
    let p = np["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&p), "{np}");
    s.kubectl_ok(&[
        "create",
        "service",
        "nodeport",
        "np2",
        "--tcp=80:8080",
        "--node-port=30080",
    ]);
    let np2 = s.kubectl_json(&["get", "service", "np2"]);
    assert_eq!(np2["spec"]["ports"][0]["nodePort"], 30080);
    let taken = json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]});
    refused(
        &http,
        "np3",
        taken.clone(),
        "spec.ports[0].nodePort",
        "provided port is already allocated",
    );
    refused(
        &http,
        "np4",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
        "spec.ports[0].nodePort",
        "provided port is not in the valid range. The range of valid ports is 30000-32767",
    );
    // kubectl expose of a Deployment as a NodePort Service.
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    s.kubectl_ok(&[
        "expose",
        "deployment",
        "web",
        "--port=80",
        "--type=NodePort",
        "--name=web-np",
    ]);
    let exposed = s.kubectl_json(&["get", "service", "web-np"]);
    let p = exposed["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&p), "{exposed}");
    assert!(in_default_range(
        exposed["spec"]["clusterIP"].as_str().unwrap()
    ));
    // Changing np2 to ClusterIP gives its node port back.
    let r = http.patch(
        &format!("{SVCS}/np2"),
        "application/merge-patch+json",
        &json!({"spec": {"type": "ClusterIP"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.json()["spec"]["ports"][0].get("nodePort").is_none(),
        "{}",
        r.text()
    );
    create(&http, "np3", taken);

    // A LoadBalancer that keeps traffic local gets a health check node port, kept across
    // updates and given back when the policy changes.
    s.kubectl_ok(&["create", "service", "loadbalancer", "lb", "--tcp=80:8080"]);
    let local = |policy: &str| {
        let r = http.patch(
            &format!("{SVCS}/lb"),
            "application/merge-patch+json",
            &json!({"spec": {"externalTrafficPolicy": policy}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()["spec"].clone()
    };
    let spec = local("Local");
    let hc = spec["healthCheckNodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&hc), "{spec}");
    assert_ne!(Some(hc), spec["ports"][0]["nodePort"].as_u64());
    let r = http.post_json(
        SVCS,
        &svc(
            "lb2",
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                            "healthCheckNodePort": hc, "ports": [{"port": 80}]}),
        ),
    );
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text().contains("provided port is already allocated"),
        "{}",
        r.text()
    );
    assert!(local("Cluster").get("healthCheckNodePort").is_none());
    let lb2 = create(
        &http,
        "lb2",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
               "healthCheckNodePort": hc, "ports": [{"port": 80}]}),
    );
    assert_eq!(lb2["spec"]["healthCheckNodePort"].as_u64(), Some(hc));
}

#[test]
fn concurrent_creates_get_distinct_ips_that_survive_kill9() {
    let mut s = Server::start().unwrap();
    let base = s.http();
    let ips: Vec<(String, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let http = &base;
                scope.spawn(move || {
                    (0..125)
                        .map(|i| {
                            let name = format!("s-{t}-{i}");
                            let r = http.post_json(
                                SVCS,
                                &svc(&name, json!({"type": "NodePort", "ports": [{"port": 80}]})),
                            );
                            assert_eq!(r.status, 201, "{}", r.text());
                            let v = r.json();
                            (
                                v["spec"]["clusterIP"].as_str().unwrap().to_owned(),
                                v["spec"]["ports"][0]["nodePort"].to_string(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let distinct_ips: BTreeSet<_> = ips.iter().map(|(ip, _)| ip.clone()).collect();
    let distinct_ports: BTreeSet<_> = ips.iter().map(|(_, p)| p.clone()).collect();
    assert_eq!(distinct_ips.len(), 1000);
    assert_eq!(distinct_ports.len(), 1000);
    s.kill9().unwrap();
    s.restart().unwrap();
    let http = s.http();
    let list = http.get(SVCS).json();
    let after: BTreeSet<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["name"] != "kubernetes")
        .map(|i| i["spec"]["clusterIP"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(after, distinct_ips);
    // Every held IP is still held after the restart.
    let ip = distinct_ips.iter().next().unwrap();
    refused(
        &http,
        "late",
        json!({"clusterIP": ip, "ports": [{"port": 80}]}),
        "spec.clusterIPs",
        "provided IP is already allocated",
    );
    let port: u64 = ips[0].1.parse().unwrap();
    refused(
        &http,
        "late",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": port}]}),
        "spec.ports[0].nodePort",
        "provided port is already allocated",
    );
}

/// An update that removes a terminating Service's last finalizer deletes it, and takes no new
/// values on its way out (kube decides the delete before allocating): a change to NodePort in
/// that same update leaves the port free for the next Service.
#[test]
fn a_service_deleted_by_its_last_finalizer_keeps_no_new_values() {
    let s = Server::start().unwrap();
    let http = s.http();
    let r = http.post_json(
        SVCS,
        &json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "leaving", "finalizers": ["example.com/hold"]},
                "spec": {"ports": [{"port": 80}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    s.kubectl_ok(&["delete", "service", "leaving", "--wait=false"]);
    let r = http.patch(
        &format!("{SVCS}/leaving"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null},
                "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30555}]}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(http.get(&format!("{SVCS}/leaving")).status, 404);
    let next = create(
        &http,
        "next",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30555}]}),
    );
    assert_eq!(next["spec"]["ports"][0]["nodePort"], 30555);
}

/// A Service's and an Ingress's `status.loadBalancer` is always there, as kube's Go structs
/// always write it (the Python client's `svc.status.load_balancer` raised without it), also
/// after a status write that leaves it out.
#[test]
fn services_and_ingresses_always_have_a_load_balancer_status() {
    let s = Server::start().unwrap();
    let http = s.http();
    let created = create(&http, "lb", json!({"ports": [{"port": 80}]}));
    assert_eq!(created["status"], json!({"loadBalancer": {}}));
    let path = "/api/v1/namespaces/default/services/lb";
    assert_eq!(http.get(path).json()["status"], json!({"loadBalancer": {}}));
    let mut body = http.get(path).json();
    body["status"] = json!({});
    let r = http.put_json(&format!("{path}/status"), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(http.get(path).json()["status"], json!({"loadBalancer": {}}));
    let r = http.post_json(
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
            "spec": {"defaultBackend": {"service": {"name": "lb", "port": {"number": 80}}}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], json!({"loadBalancer": {}}));
}
