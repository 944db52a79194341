//! `--store etcd`: several hosts on one real etcd cluster serve one cluster.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::etcd::EtcdCluster;
use turtles_tests::{configmap, poll, rv, uuid_like, Server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn host(etcd: &EtcdCluster, prefix: &str) -> Server {
    host_with(etcd, prefix, &[])
}

fn host_with(etcd: &EtcdCluster, prefix: &str, extra: &[&str]) -> Server {
    let endpoints = etcd.endpoints();
    let mut args = vec![
        "--store",
        "etcd",
        "--etcd-endpoints",
        &endpoints,
        "--etcd-prefix",
        prefix,
    ];
    args.extend_from_slice(extra);
    Server::start_with(&args).unwrap()
}

/// The `address:port` pairs the `kubernetes` Endpoints name.
fn apiserver_endpoints(h: &turtles_tests::Http) -> std::collections::BTreeSet<String> {
    let e = h
        .get("/api/v1/namespaces/default/endpoints/kubernetes")
        .json();
    let mut out = std::collections::BTreeSet::new();
    for s in e["subsets"].as_array().into_iter().flatten() {
        for p in s["ports"].as_array().into_iter().flatten() {
            for a in s["addresses"].as_array().into_iter().flatten() {
                out.insert(format!("{}:{}", a["ip"].as_str().unwrap_or(""), p["port"]));
            }
        }
    }
    out
}

/// `address:port` of a host.
fn authority(s: &Server) -> String {
    s.url.trim_start_matches("https://").to_owned()
}

/// The names of the `kubernetes` Service's EndpointSlices.
fn apiserver_slices(h: &turtles_tests::Http) -> std::collections::BTreeSet<String> {
    let l = h
        .get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes")
        .json();
    l["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn hosts_on_one_etcd_see_each_others_writes_crds_and_survive_a_member_and_a_host_dying() {
    let mut etcd = EtcdCluster::start(3).unwrap();
    let prefix = format!("/turtles-{}/", uuid_like());
    // 14 cluster IPs (the `kubernetes` Service takes one) and 8 node ports for the whole cluster.
    let ranges = [
        "--service-cluster-ip-range",
        "10.0.0.0/28",
        "--service-node-port-range",
        "30000-30007",
    ];
    let mut a = host_with(&etcd, &prefix, &ranges);
    let b = host_with(&etcd, &prefix, &ranges);
    let c = host_with(&etcd, &prefix, &ranges);
    let (ha, hb, hc) = (a.http(), b.http(), c.http());

    // The `kubernetes` endpoints name every host (each keeps a lease and writes them from all
    // live leases, as kube-apiservers do); these hosts listen on one address with different
    // ports, so each port has its own subset and EndpointSlice.
    let all: std::collections::BTreeSet<String> = [&a, &b, &c].map(authority).into();
    poll(
        "every host in the endpoints",
        Duration::from_secs(30),
        || (apiserver_endpoints(&hc) == all).then_some(()),
    )
    .unwrap();
    assert_eq!(
        apiserver_slices(&ha).len(),
        3,
        "{:?}",
        apiserver_slices(&ha)
    );

    // One identity for the cluster: every host serves with a certificate of the same CA and
    // takes the same admin token, so a's kubeconfig works against b; a service-account token
    // issued through a is accepted by c.
    assert_eq!(a.ca_pem, b.ca_pem);
    assert_eq!(a.token, c.token);
    let ns = a.kubectl_ok(&[
        "--server",
        &b.url,
        "get",
        "namespace",
        "default",
        "-o",
        "name",
    ]);
    assert_eq!(ns.trim(), "namespace/default");
    poll(
        "the default service account",
        Duration::from_secs(30),
        || {
            (ha.get("/api/v1/namespaces/default/serviceaccounts/default")
                .status
                == 200)
                .then_some(())
        },
    )
    .unwrap();
    let sa_token = a.kubectl_ok(&["create", "token", "default"]);
    let review = c.http_with_token(Some(sa_token.trim())).post_json(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    );
    assert_eq!(review.status, 201, "{}", review.text());
    assert_eq!(
        review.json()["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );
    // An RBAC change through b is in force on c: the account may not list Secrets until a Role
    // and a RoleBinding created through b allow it.
    let sa = c.http_with_token(Some(sa_token.trim()));
    let secrets = "/api/v1/namespaces/default/secrets";
    assert_eq!(sa.get(secrets).status, 403);
    b.kubectl_ok(&[
        "create",
        "role",
        "read-secrets",
        "--verb=list",
        "--resource=secrets",
    ]);
    b.kubectl_ok(&[
        "create",
        "rolebinding",
        "read-secrets",
        "--role=read-secrets",
        "--serviceaccount=default:default",
    ]);
    poll(
        "c lets the account list Secrets",
        Duration::from_secs(30),
        || (sa.get(secrets).status == 200).then_some(()),
    )
    .unwrap();

    // A watch on b sees a write through a.
    let start = rv(&hb.get(CMS).json());
    let mut watch = hb.watch(&format!("{CMS}?watch=true&resourceVersion={start}"));
    let created = ha.post_json(CMS, &configmap("one", &[], &[("k", "1")]));
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let ev = watch.next_event().expect("an event");
    assert_eq!(ev["type"], "ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "one");
    assert_eq!(
        rv(&ev["object"]),
        rv(&created),
        "one revision for the cluster"
    );

    // A consistent read through b right after a write through a sees it, no polling; and the
    // other way round with kubectl.
    let got = hb.get(&format!("{CMS}/one"));
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["data"]["k"], "1");
    b.kubectl_ok(&["label", "configmap", "one", "by=b"]);
    let seen = a.kubectl_json(&["get", "configmap", "one", "-o", "json"]);
    assert_eq!(seen["metadata"]["labels"]["by"], "b");
    c.kubectl_ok(&["annotate", "configmap", "one", "by=c"]);
    let seen = a.kubectl_json(&["get", "configmap", "one", "-o", "json"]);
    assert_eq!(seen["metadata"]["annotations"]["by"], "c");
    // A namespace created through a is usable through c at once (c looks it up in etcd when
    // its own view does not have it yet).
    for n in 0..5 {
        let ns = format!("fresh-{n}");
        let r = ha.post_json(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let r = hc.post_json(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("x", &[], &[]),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // Optimistic concurrency across hosts: a's stale revision conflicts on b.
    let mut stale = created.clone();
    stale["data"]["k"] = json!("stale");
    let r = hb.put_json(&format!("{CMS}/one"), &stale);
    assert_eq!(r.status, 409, "{}", r.text());

    // A CRD applied through a is served by b; a custom object created through b is read by a.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "properties": {"spec": {"type": "object",
                                       "properties": {"size": {"type": "integer"}}}}}}}]}
    });
    a.kubectl_stdin(&["apply", "-f", "-"], &crd.to_string());
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    // Each host serves the kind once its own CRD controller has seen the CRD (as each
    // kube-apiserver does).
    poll("b and c serve widgets", Duration::from_secs(30), || {
        (hb.get(widgets).status == 200 && hc.get(widgets).status == 200).then_some(())
    })
    .unwrap();
    let w = hb.post_json(
        widgets,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3}}),
    );
    assert_eq!(w.status, 201, "{}", w.text());
    // The schema is in force on b: a string where an integer belongs is refused.
    let bad = hb.post_json(
        widgets,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "bad"}, "spec": {"size": "big"}}),
    );
    assert_eq!(bad.status, 422, "{}", bad.text());
    for h in [&ha, &hc] {
        let r = h.get(&format!("{widgets}/w"));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["spec"]["size"], 3);
    }

    // Services created through all three hosts at once never share a cluster IP or a node
    // port, though each host allocates from its own memory: each value is claimed in etcd
    // (an IPAddress per address, as kube does), and a host that finds one claimed draws again.
    let created: Vec<Value> = std::thread::scope(|scope| {
        let workers: Vec<_> = [&ha, &hb, &hc]
            .into_iter()
            .enumerate()
            .map(|(h, http)| {
                scope.spawn(move || {
                    (0..4)
                        .map(|i| {
                            let name = format!("svc-{h}-{i}");
                            let ty = if i % 2 == 0 { "NodePort" } else { "ClusterIP" };
                            let r = http.post_json(
                                "/api/v1/namespaces/default/services",
                                &json!({"apiVersion": "v1", "kind": "Service",
                                        "metadata": {"name": name},
                                        "spec": {"type": ty, "ports": [{"port": 80}]}}),
                            );
                            assert_eq!(r.status, 201, "{}", r.text());
                            r.json()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert_eq!(created.len(), 12);
    let ips: std::collections::BTreeSet<&str> = created
        .iter()
        .map(|s| s["spec"]["clusterIP"].as_str().unwrap())
        .collect();
    assert_eq!(ips.len(), 12, "{ips:?}");
    assert!(
        !ips.contains("10.0.0.1"),
        "the kubernetes Service's address"
    );
    let ports: std::collections::BTreeSet<i64> = created
        .iter()
        .filter_map(|s| s["spec"]["ports"][0]["nodePort"].as_i64())
        .collect();
    assert_eq!(ports.len(), 6, "{ports:?}");
    // The addresses are kube's IPAddress objects, whichever host is asked.
    let first = &created[0];
    let parent = c.kubectl_ok(&[
        "get",
        "ipaddress",
        first["spec"]["clusterIP"].as_str().unwrap(),
        "-o",
        "jsonpath={.spec.parentRef.name}",
    ]);
    assert_eq!(parent, first["metadata"]["name"].as_str().unwrap());
    // One address left: one more Service gets it, and then every host says the range is full.
    let last = hb.post_json(
        "/api/v1/namespaces/default/services",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc-last"},
                "spec": {"ports": [{"port": 80}]}}),
    );
    assert_eq!(last.status, 201, "{}", last.text());
    assert!(!ips.contains(last.json()["spec"]["clusterIP"].as_str().unwrap()));
    for h in [&ha, &hb, &hc] {
        let r = h.post_json(
            "/api/v1/namespaces/default/services",
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc-full"},
                    "spec": {"ports": [{"port": 80}]}}),
        );
        assert_eq!(r.status, 500, "{}", r.text());
        assert!(r.text().contains("range is full"), "{}", r.text());
    }

    // One etcd member dies: both hosts keep serving writes and reads (the client moves to the
    // others; a request that was on the dead member may fail once).
    etcd.kill9(0).unwrap();
    for (i, h) in [&ha, &hb].into_iter().enumerate() {
        poll(
            "a write after the member died",
            Duration::from_secs(30),
            || {
                let r = h.post_json(CMS, &configmap(&format!("after-{i}"), &[], &[]));
                (r.status == 201 || r.status == 409).then_some(())
            },
        )
        .unwrap();
    }
    for n in 0..20 {
        let r = ha.post_json(CMS, &configmap(&format!("steady-{n}"), &[], &[]));
        assert_eq!(
            r.status,
            201,
            "write {n} with two of three members: {}",
            r.text()
        );
    }

    // kill -9 of a host loses no acknowledged write: every one is in etcd, and b has it.
    let mut acked = Vec::new();
    for n in 0..50 {
        let r = ha.post_json(CMS, &configmap(&format!("acked-{n}"), &[], &[]));
        assert_eq!(r.status, 201, "{}", r.text());
        acked.push(format!("acked-{n}"));
    }
    a.kill9().unwrap();
    let list = hb.get(CMS).json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    for n in &acked {
        assert!(names.contains(&n.as_str()), "{n} lost: {names:?}");
    }
    // The watch opened on b at the start is still going and saw every write, in revision order.
    let mut last = rv(&ev["object"]);
    let mut seen = 1;
    while seen < 1 + 2 + 2 + 20 + 50 {
        let e = watch.next_event().expect("the watch goes on");
        if e["type"] == "BOOKMARK" {
            continue;
        }
        let r = rv(&e["object"]);
        assert!(r > last, "revisions ascend: {r} after {last}");
        last = r;
        seen += 1;
    }
    // A restarted host loads the cluster from etcd.
    a.restart().unwrap();
    let again = a.http().get(&format!("{CMS}/acked-49"));
    assert_eq!(again.status, 200, "{}", again.text());
    // The killed host's lease ran out (15 s unrenewed, then the next renewal of another host
    // removes it), and the restarted one (another port) is in.
    let now: std::collections::BTreeSet<String> = [&a, &b, &c].map(authority).into();
    assert_ne!(now, all);
    poll(
        "the dead host out of the endpoints",
        Duration::from_secs(60),
        || (apiserver_endpoints(&hb) == now && apiserver_slices(&hb).len() == 3).then_some(()),
    )
    .unwrap();
}

#[test]
fn a_watch_resumes_on_another_host_from_its_last_resource_version() {
    let etcd = EtcdCluster::start(1).unwrap();
    let prefix = format!("/turtles-{}/", uuid_like());
    let a = host(&etcd, &prefix);
    let b = host(&etcd, &prefix);
    let (ha, hb) = (a.http(), b.http());
    let start = rv(&ha.get(CMS).json());
    let mut on_a = ha.watch(&format!("{CMS}?watch=true&resourceVersion={start}"));
    for n in 0..5 {
        assert_eq!(
            ha.post_json(CMS, &configmap(&format!("c{n}"), &[], &[]))
                .status,
            201
        );
    }
    let mut last = start;
    for _ in 0..3 {
        let e = on_a.next_event().unwrap();
        last = rv(&e["object"]);
    }
    drop(on_a);
    // More writes, through both hosts, while no watch runs.
    for n in 5..8 {
        let h = if n % 2 == 0 { &ha } else { &hb };
        assert_eq!(
            h.post_json(CMS, &configmap(&format!("c{n}"), &[], &[]))
                .status,
            201
        );
    }
    // Resumed on b from the last revision seen on a: exactly c3..c7, no gap, no repeat.
    let mut on_b = hb.watch(&format!("{CMS}?watch=true&resourceVersion={last}"));
    let mut names = Vec::new();
    while names.len() < 5 {
        let e = on_b.next_event().unwrap();
        let obj: &Value = &e["object"];
        assert_eq!(e["type"], "ADDED");
        names.push(obj["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(names, ["c3", "c4", "c5", "c6", "c7"]);
}

const LEASE: &str =
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/turtles-controllers";

fn holder(s: &Server) -> Option<String> {
    let r = s.http().get(LEASE);
    if r.status != 200 {
        return None;
    }
    r.json()["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
}

fn reconciles(s: &Server, controller: &str) -> u64 {
    let metrics = s.http().get("/metrics").text();
    let prefix = format!("turtles_controller_reconciles_total{{controller=\"{controller}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn greeting(s: &Server, cm: &str) -> Option<String> {
    s.http().get(&format!("{CMS}/{cm}")).json()["metadata"]["annotations"]["turtles.dev/greeting"]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn one_host_runs_the_controllers_and_another_takes_over_within_the_lease_when_it_dies() {
    let etcd = EtcdCluster::start(1).unwrap();
    let prefix = format!("/turtles-{}/", uuid_like());
    let endpoints = etcd.endpoints();
    let args = [
        "--store",
        "etcd",
        "--etcd-endpoints",
        &endpoints,
        "--etcd-prefix",
        &prefix,
        "--leader-elect-lease-duration",
        "4s",
        "--leader-elect-renew-deadline",
        "3s",
        "--leader-elect-retry-period",
        "500ms",
    ];
    let mut a = Server::start_with_controllers(&args).unwrap();
    let first = poll("a to take the Lease", Duration::from_secs(30), || {
        holder(&a)
    })
    .unwrap();
    let b = Server::start_with_controllers(&args).unwrap();
    // The same controller in both folders, as a deployment of identical hosts has it.
    for s in [&a, &b] {
        s.drop_controller("labeler", &turtles_tests::guest("labeler"))
            .unwrap();
    }
    // And one only the holder's folder has: it runs there, and nowhere once the holder is gone.
    a.drop_controller("noop", &turtles_tests::guest("noop"))
        .unwrap();
    const NOOP: &str = "/apis/turtles.dev/v1/controllers/noop";
    poll(
        "the holder's noop Controller",
        Duration::from_secs(60),
        || (b.http().get(NOOP).status == 200).then_some(()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", a.log()));
    let greet = |name: &str| configmap(name, &[("turtles.dev/greet", "true")], &[("k", "v")]);
    assert_eq!(b.http().post_json(CMS, &greet("first")).status, 201);
    poll("first greeted", Duration::from_secs(60), || {
        (greeting(&b, "first").as_deref() == Some("hello, first")).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", a.log()));
    // Only the holder reconciled; the standby kept its keys queued and wrote no status.
    assert!(reconciles(&a, "labeler") >= 1);
    assert_eq!(reconciles(&b, "labeler"), 0, "the standby reconciled");
    assert_eq!(holder(&b).as_deref(), Some(first.as_str()));
    let c = b
        .http()
        .get("/apis/turtles.dev/v1/controllers/labeler")
        .json();
    assert_eq!(c["status"]["holderIdentity"], first.as_str(), "{c}");

    // The holder dies: the other host takes the Lease once it has seen it unrenewed for the
    // lease duration, and its own labeler carries on.
    a.kill9().unwrap();
    let died = std::time::Instant::now();
    let second = poll("b to take the Lease", Duration::from_secs(30), || {
        holder(&b).filter(|h| *h != first)
    })
    .unwrap();
    // The lease duration after the last renewal it saw, plus at most a retry period and a round
    // (CI runs this on a debug build beside other tests: a generous allowance for the round).
    let took = died.elapsed();
    assert!(
        took < Duration::from_secs(4 + 1 + 5),
        "taken over after {took:?}, lease duration 4 s"
    );
    let lease = b.http().get(LEASE).json();
    assert_eq!(lease["spec"]["leaseTransitions"], 1, "{lease}");
    assert_eq!(lease["spec"]["holderIdentity"], second.as_str());
    assert_eq!(b.http().post_json(CMS, &greet("second")).status, 201);
    poll("second greeted by b", Duration::from_secs(30), || {
        (greeting(&b, "second").as_deref() == Some("hello, second")).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", b.log()));
    assert!(reconciles(&b, "labeler") >= 1);
    // The new leader's folder has no noop: its Controller object goes with it.
    poll(
        "noop's Controller removed by b",
        Duration::from_secs(30),
        || (b.http().get(NOOP).status == 404).then_some(()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", b.log()));
}

/// The host whose log says it took the Lease as `identity`.
fn holder_index(hosts: &[Server], identity: &str) -> Option<usize> {
    hosts.iter().position(|h| h.log().contains(identity))
}

#[test]
fn a_rollout_completes_when_the_host_running_the_controllers_dies_mid_way() {
    let etcd = EtcdCluster::start(3).unwrap();
    let prefix = format!("/turtles-{}/", uuid_like());
    let endpoints = etcd.endpoints();
    let args = [
        "--store",
        "etcd",
        "--etcd-endpoints",
        &endpoints,
        "--etcd-prefix",
        &prefix,
        "--leader-elect-lease-duration",
        "4s",
        "--leader-elect-renew-deadline",
        "3s",
        "--leader-elect-retry-period",
        "500ms",
    ];
    let mut hosts: Vec<Server> = (0..3)
        .map(|_| Server::start_with_controllers(&args).unwrap())
        .collect();
    for h in &hosts {
        for name in ["deployment", "replicaset", "node"] {
            h.drop_controller(name, &turtles_tests::guest(name))
                .unwrap();
        }
    }
    // Loaded everywhere (the holder reports them Running; a Python or JavaScript compile can
    // take minutes on a cold cache).
    hosts[0]
        .wait_controllers_running(
            &["deployment", "replicaset", "node"],
            Duration::from_secs(600),
        )
        .unwrap();
    let first = holder(&hosts[0]).expect("a holder");
    let leader = holder_index(&hosts, &first).expect("the holder is one of the hosts");
    let other = (leader + 1) % 3;
    hosts[other].kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=100",
    ]);
    // Mid-way: some Pods exist, not all are running.
    poll("the rollout under way", Duration::from_secs(120), || {
        let pods = hosts[other].kubectl_json(&["get", "pods", "-l", "app=web"]);
        let n = pods["items"].as_array()?.len();
        (n >= 10).then_some(())
    })
    .unwrap();
    let status = hosts[other].kubectl_json(&["get", "deployment", "web", "-o", "json"]);
    assert_ne!(
        status["status"]["availableReplicas"], 100,
        "the rollout was over before the holder died: {status}"
    );
    hosts[leader].kill9().unwrap();
    let second = poll(
        "another host to take the Lease",
        Duration::from_secs(30),
        || holder(&hosts[other]).filter(|h| *h != first),
    )
    .unwrap();
    assert_ne!(holder_index(&hosts, &second), Some(leader));
    let out = hosts[other].kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=300s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    // Exactly the 100 Pods: the new holder did not repeat what the old one had done.
    let pods = hosts[other].kubectl_json(&["get", "pods", "-l", "app=web"]);
    let live = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .count();
    assert_eq!(live, 100);
}
