//! kube's user-facing ClusterRoles (`admin`, `edit`, `view`) as kube bootstraps them, rule for
//! rule, and what a tenant bound to each in one namespace can do there with the real kubectl;
//! and LocalSubjectAccessReview, the namespace admin's access question.

use serde_json::{json, Value};
use turtles_tests::Server;

/// A rule as kube's bootstrap policy writes it (lists sorted, as `NewRule(..).RuleOrDie()`
/// leaves them).
fn r(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

/// kube's `system:aggregate-to-edit` (bootstrappolicy testdata `cluster-roles.yaml`, 1.34's
/// default feature gates: DynamicResourceAllocation on).
fn kube_edit() -> Vec<Value> {
    vec![
        r(
            READ,
            &[""],
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy",
            ],
        ),
        r(&["impersonate"], &[""], &["serviceaccounts"]),
        r(
            WRITE,
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
            ],
        ),
        r(&["create"], &[""], &["pods/eviction"]),
        r(
            WRITE,
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        r(&["create"], &[""], &["serviceaccounts/token"]),
        r(
            WRITE,
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        r(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        r(WRITE, &["batch"], &["cronjobs", "jobs"]),
        r(
            WRITE,
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ],
        ),
        r(WRITE, &["policy"], &["poddisruptionbudgets"]),
        r(
            WRITE,
            &["networking.k8s.io"],
            &["ingresses", "networkpolicies"],
        ),
        r(
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
            &["coordination.k8s.io"],
            &["leases"],
        ),
        r(
            WRITE,
            &["resource.k8s.io"],
            &["resourceclaims", "resourceclaimtemplates"],
        ),
    ]
}

/// kube's `system:aggregate-to-view`.
fn kube_view() -> Vec<Value> {
    vec![
        r(
            READ,
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        r(
            READ,
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
        ),
        r(READ, &[""], &["namespaces"]),
        r(READ, &["discovery.k8s.io"], &["endpointslices"]),
        r(
            READ,
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        r(
            READ,
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        r(
            READ,
            &["batch"],
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
        ),
        r(
            READ,
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ],
        ),
        r(
            READ,
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        r(
            READ,
            &["networking.k8s.io"],
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
        r(
            READ,
            &["resource.k8s.io"],
            &[
                "resourceclaims",
                "resourceclaims/status",
                "resourceclaimtemplates",
            ],
        ),
    ]
}

/// kube's `system:aggregate-to-admin`.
fn kube_admin() -> Vec<Value> {
    vec![
        r(
            &["create"],
            &["authorization.k8s.io"],
            &["localsubjectaccessreviews"],
        ),
        r(
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
            &["rbac.authorization.k8s.io"],
            &["rolebindings", "roles"],
        ),
    ]
}

/// The role's rules but turtles' own (its `turtles.dev` Controllers).
fn kube_rules(s: &Server, role: &str) -> Vec<Value> {
    let role = s.kubectl_json(&["get", "clusterrole", role]);
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["apiGroups"] != json!(["turtles.dev"]))
        .map(|r| {
            json!({"verbs": r["verbs"], "apiGroups": r["apiGroups"], "resources": r["resources"]})
        })
        .collect()
}

/// The roles kube bootstraps for the DNS pod and external volume provisioners, rule for rule
/// (bootstrappolicy testdata `cluster-roles.yaml`): deployments bind to them.
#[test]
fn provisioner_and_dns_roles_are_kubes() {
    let s = Server::start().unwrap();
    assert_eq!(
        kube_rules(&s, "system:persistent-volume-provisioner"),
        [
            r(
                &["create", "delete", "get", "list", "watch"],
                &[""],
                &["persistentvolumes"]
            ),
            r(
                &["get", "list", "update", "watch"],
                &[""],
                &["persistentvolumeclaims"]
            ),
            r(READ, &["storage.k8s.io"], &["storageclasses"]),
            r(&["watch"], &[""], &["events"]),
            r(
                &["create", "patch", "update"],
                &["", "events.k8s.io"],
                &["events"]
            ),
        ]
    );
    assert_eq!(
        kube_rules(&s, "system:kube-dns"),
        [r(&["list", "watch"], &[""], &["endpoints", "services"])]
    );
}

#[test]
fn the_aggregated_roles_are_kubes_rule_for_rule() {
    let s = Server::start().unwrap();
    assert_eq!(kube_rules(&s, "system:aggregate-to-edit"), kube_edit());
    assert_eq!(kube_rules(&s, "system:aggregate-to-view"), kube_view());
    assert_eq!(kube_rules(&s, "system:aggregate-to-admin"), kube_admin());
    // `edit` aggregates `view` and its own; `admin` aggregates `edit` and its own.
    let edit = kube_rules(&s, "edit");
    for rule in kube_edit().iter().chain(kube_view().iter()) {
        assert!(edit.contains(rule), "edit lacks {rule}");
    }
    let admin = kube_rules(&s, "admin");
    for rule in kube_admin().iter().chain(kube_edit().iter()) {
        assert!(admin.contains(rule), "admin lacks {rule}");
    }
}

#[test]
fn tenants_bound_in_one_namespace_can_do_what_kube_lets_them() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["create", "namespace", "other"]);
    let (ad, _) = s.mint("ad", &[]).unwrap();
    let (ed, _) = s.mint("ed", &[]).unwrap();
    let (vi, _) = s.mint("vi", &[]).unwrap();
    for (user, role) in [("ad", "admin"), ("ed", "edit"), ("vi", "view")] {
        s.kubectl_ok(&[
            "-n",
            "team",
            "create",
            "rolebinding",
            user,
            &format!("--clusterrole={role}"),
            &format!("--user={user}"),
        ]);
    }
    let can = |kc: &std::path::Path, ns: &str, verb: &str, what: &str| -> bool {
        let out = s.kubectl_with(kc, &["-n", ns, "auth", "can-i", verb, what]);
        String::from_utf8_lossy(&out.stdout).trim() == "yes"
    };
    for what in [
        "deployments.apps",
        "statefulsets.apps",
        "services",
        "jobs.batch",
        "cronjobs.batch",
        "poddisruptionbudgets.policy",
        "ingresses.networking.k8s.io",
        "horizontalpodautoscalers.autoscaling",
        "leases.coordination.k8s.io",
        "persistentvolumeclaims",
        "pods/eviction",
        "serviceaccounts/token",
    ] {
        assert!(can(&ed, "team", "create", what), "edit: create {what}");
        assert!(can(&ad, "team", "create", what), "admin: create {what}");
        assert!(!can(&vi, "team", "create", what), "view: create {what}");
        assert!(!can(&ed, "other", "create", what), "edit elsewhere: {what}");
    }
    assert!(can(&vi, "team", "list", "deployments.apps"));
    assert!(can(&vi, "team", "get", "poddisruptionbudgets.policy"));
    assert!(!can(&vi, "team", "get", "secrets"));
    assert!(can(&ed, "team", "get", "secrets"));
    assert!(!can(
        &ed,
        "team",
        "create",
        "roles.rbac.authorization.k8s.io"
    ));
    assert!(can(
        &ad,
        "team",
        "create",
        "roles.rbac.authorization.k8s.io"
    ));
    // And it is real: the editor applies an ordinary app.
    let out = s.kubectl_with(
        &ed,
        &[
            "-n",
            "team",
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.kubectl_with(
        &ed,
        &[
            "-n",
            "team",
            "create",
            "service",
            "clusterip",
            "web",
            "--tcp=80:80",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.kubectl_with(
        &ed,
        &[
            "-n",
            "team",
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=1",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_namespace_admin_asks_local_access_questions() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "team"]);
    let (_, ad_token) = s.mint("ad", &[]).unwrap();
    let (_, ed_token) = s.mint("ed", &[]).unwrap();
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "ad",
        "--clusterrole=admin",
        "--user=ad",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "ed",
        "--clusterrole=edit",
        "--user=ed",
    ]);
    let path = "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews";
    let review = |ns: &str, verb: &str, resource: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
               "spec": {"user": "ed", "resourceAttributes":
                   {"namespace": ns, "verb": verb, "group": "apps", "resource": resource}}})
    };
    let admin = s.http_with_token(Some(&ad_token));
    let r = admin.post_json(path, &review("team", "create", "deployments"));
    assert_eq!(r.status, 201, "{}", r.text());
    let body = r.json();
    assert_eq!(body["metadata"]["namespace"], "team");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    let r = admin.post_json(path, &review("team", "escalate", "deployments"));
    assert_eq!(r.json()["status"]["allowed"], false);
    // Only about its own namespace.
    let r = admin.post_json(path, &review("other", "create", "deployments"));
    let st = turtles_tests::assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace"
    );
    let mut no_one = review("team", "get", "deployments");
    no_one["spec"]["user"] = json!("");
    let r = admin.post_json(path, &no_one);
    turtles_tests::assert_status(&r, 422, "Invalid");
    // An editor may not ask.
    let r = s
        .http_with_token(Some(&ed_token))
        .post_json(path, &review("team", "create", "deployments"));
    turtles_tests::assert_status(&r, 403, "Forbidden");
}

/// kube's clusterrole-aggregation controller: a ClusterRole labelled to aggregate into `view`
/// shows in `view`'s rules (and so in `edit`'s and `admin`'s, which aggregate `view`); an
/// aggregated role's hand-written rules are replaced by what its selectors select.
#[test]
fn aggregated_roles_show_the_rules_they_aggregate() {
    let s = Server::start().unwrap();
    let widgets =
        json!({"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]});
    s.kubectl_stdin(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "widget-view",
                          "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
             "rules": [widgets.clone()]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "cr-agg"},
             "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]},
             "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "cr-part", "labels": {"agg": "yes"}},
             "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]},
        ]})
        .to_string(),
    );
    let rules = |role: &str| -> Vec<Value> {
        s.kubectl_json(&["get", "clusterrole", role])["rules"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    for role in ["view", "edit", "admin"] {
        turtles_tests::poll(
            &format!("{role} to aggregate widget-view"),
            std::time::Duration::from_secs(10),
            || rules(role).contains(&widgets).then_some(()),
        )
        .unwrap();
    }
    turtles_tests::poll("cr-agg's rules", std::time::Duration::from_secs(10), || {
        (rules("cr-agg")
            == vec![json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]})])
        .then_some(())
    })
    .unwrap();
    // Unlabelled, it leaves them again.
    s.kubectl_ok(&[
        "label",
        "clusterrole",
        "widget-view",
        "rbac.authorization.k8s.io/aggregate-to-view-",
    ]);
    turtles_tests::poll(
        "view to drop widget-view",
        std::time::Duration::from_secs(10),
        || (!rules("view").contains(&widgets)).then_some(()),
    )
    .unwrap();
}

/// kube-apiserver reconciles its bootstrap policy at every start (`rbac/bootstrap-roles`), and
/// so does turtles: a rule taken from a bootstrap ClusterRole and a subject taken from a
/// bootstrap binding are back after a restart on the same data directory, the user's own
/// additions kept; a role annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`
/// keeps its edit; a role nobody changed is not written again.
#[test]
fn the_bootstrap_policy_is_reconciled_at_every_start() {
    const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    const BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    const REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let mut s = Server::start().unwrap();
    let (_, token) = s.mint("bob", &[]).unwrap();
    let http = s.http();
    let get = |path: &str| -> Value {
        let r = http.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        r.json()
    };
    let put = |path: &str, body: &Value| {
        let r = http.put_json(path, body);
        assert_eq!(r.status, 200, "PUT {path}: {}", r.text());
    };

    // `system:basic-user` without its `selfsubjectreviews` rule: bob may not ask who he is.
    let basic = format!("{ROLES}/system:basic-user");
    let mut role = get(&basic);
    let rules = role["rules"].clone();
    assert!(
        rules
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"] == json!(["selfsubjectreviews"])),
        "{rules}"
    );
    let own = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]});
    role["rules"] = Value::Array(
        rules
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["resources"] != json!(["selfsubjectreviews"]))
            .cloned()
            .chain([own.clone()])
            .collect(),
    );
    put(&basic, &role);
    let bob = s.http_with_token(Some(&token));
    assert_eq!(bob.post_json(REVIEWS, &review).status, 403);

    // The `system:basic-user` binding's group replaced by a user.
    let binding = format!("{BINDINGS}/system:basic-user");
    let alice = json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"});
    let mut b = get(&binding);
    b["subjects"] = json!([alice]);
    put(&binding, &b);

    // `system:public-info-viewer` opted out of reconciliation, without `/version/`.
    let public = format!("{ROLES}/system:public-info-viewer");
    let mut role = get(&public);
    role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = json!("false");
    let edited = json!([{"verbs": ["get"],
        "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version"]}]);
    role["rules"] = edited.clone();
    put(&public, &role);

    let admin = format!("{ROLES}/cluster-admin");
    let admin_rv = turtles_tests::rv(&get(&admin));

    s.stop().unwrap();
    s.restart().unwrap();
    let http = s.http();
    let get = |path: &str| -> Value {
        let r = http.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        r.json()
    };

    // The policy's rule is back (one rule per verb and resource, as kube appends them; here the
    // one it was), the user's own kept.
    let restored = json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
        "resources": ["selfsubjectreviews"]});
    let role = turtles_tests::poll(
        "system:basic-user's selfsubjectreviews rule back",
        std::time::Duration::from_secs(30),
        || {
            let role = get(&basic);
            let back = role["rules"]
                .as_array()
                .is_some_and(|rules| rules.contains(&restored));
            back.then_some(role)
        },
    )
    .unwrap();
    assert!(role["rules"].as_array().unwrap().contains(&own), "{role}");
    let bob = s.http_with_token(Some(&token));
    let r = bob.post_json(REVIEWS, &review);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"]["userInfo"]["username"], "bob");

    let b = get(&binding);
    assert_eq!(
        b["subjects"],
        json!([alice, {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
            "name": "system:authenticated"}])
    );
    let role = get(&public);
    assert_eq!(role["rules"], edited);
    assert_eq!(
        role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "false"
    );
    assert_eq!(
        turtles_tests::rv(&get(&admin)),
        admin_rv,
        "cluster-admin, as the policy has it, is not written again"
    );
}

/// kube-apiserver creates API Priority and Fairness' bootstrap configuration at start (its
/// `priority-and-fairness-config-producer` hook), and so does turtles: `kubectl get flowschemas`
/// and `kubectl get prioritylevelconfigurations` list kube 1.34's objects, each FlowSchema's
/// level found (`MISSINGPL` `False`, from its `Dangling` condition); a deleted mandatory
/// FlowSchema is back after a restart, an opted-out suggested level keeps its edit; objects
/// written without what flowcontrol/v1 defaults are stored with kube's defaults.
#[test]
fn the_apf_bootstrap_configuration_exists() {
    use std::time::Duration;
    let mut s = Server::start().unwrap();
    let rows = |out: &str| -> Vec<Vec<String>> {
        out.lines()
            .skip(1)
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let header = |out: &str| {
        out.lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let schemas = turtles_tests::poll(
        "every FlowSchema listed with its level found",
        Duration::from_secs(30),
        || {
            let out = s.kubectl_ok(&["get", "flowschemas"]);
            let r = rows(&out);
            (r.len() == 11
                && r.iter()
                    .all(|row| row.last().map(String::as_str) == Some("False")))
            .then_some(out)
        },
    )
    .unwrap();
    assert_eq!(
        header(&schemas),
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    // Name, level, precedence, distinguisher (the age left out).
    let got: Vec<[String; 4]> = rows(&schemas)
        .into_iter()
        .map(|r| [r[0].clone(), r[1].clone(), r[2].clone(), r[3].clone()])
        .collect();
    let want = [
        ["catch-all", "catch-all", "10000", "ByUser"],
        ["exempt", "exempt", "1", "<none>"],
        ["global-default", "global-default", "9900", "ByUser"],
        [
            "kube-controller-manager",
            "workload-high",
            "800",
            "ByNamespace",
        ],
        ["kube-scheduler", "workload-high", "800", "ByNamespace"],
        [
            "kube-system-service-accounts",
            "workload-high",
            "900",
            "ByNamespace",
        ],
        ["probes", "exempt", "2", "<none>"],
        ["service-accounts", "workload-low", "9000", "ByUser"],
        ["system-leader-election", "leader-election", "100", "ByUser"],
        ["system-node-high", "node-high", "400", "ByUser"],
        ["system-nodes", "system", "500", "ByUser"],
    ];
    assert_eq!(got, want.map(|r| r.map(str::to_owned)), "{schemas}");

    let levels = s.kubectl_ok(&["get", "prioritylevelconfigurations"]);
    assert_eq!(
        header(&levels),
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    let got: Vec<Vec<String>> = rows(&levels)
        .into_iter()
        .map(|mut r| {
            r.pop();
            r
        })
        .collect();
    let want = [
        ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"],
        ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"],
        ["global-default", "Limited", "20", "128", "6", "50"],
        ["leader-election", "Limited", "10", "16", "4", "50"],
        ["node-high", "Limited", "40", "64", "6", "50"],
        ["system", "Limited", "30", "64", "6", "50"],
        ["workload-high", "Limited", "40", "128", "6", "50"],
        ["workload-low", "Limited", "100", "128", "6", "50"],
    ];
    assert_eq!(got, want.map(|r| r.map(str::to_owned).to_vec()), "{levels}");
    let fs = s.kubectl_json(&["get", "flowschema", "system-leader-election", "-o", "json"]);
    assert_eq!(
        fs["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    assert_eq!(
        fs["status"]["conditions"][0]["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"leader-election\" and it exists"
    );

    // The mandatory `catch-all` deleted; the suggested `workload-low` opted out and changed.
    s.kubectl_ok(&["delete", "flowschema", "catch-all"]);
    s.kubectl_ok(&[
        "annotate",
        "--overwrite",
        "prioritylevelconfiguration",
        "workload-low",
        "apf.kubernetes.io/autoupdate-spec=false",
    ]);
    s.kubectl_ok(&[
        "patch",
        "prioritylevelconfiguration",
        "workload-low",
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":7}}}"#,
    ]);
    s.stop().unwrap();
    s.restart().unwrap();
    let fs = s.kubectl_json(&["get", "flowschema", "catch-all", "-o", "json"]);
    assert_eq!(fs["spec"]["matchingPrecedence"], 10000);
    assert_eq!(fs["spec"]["distinguisherMethod"]["type"], "ByUser");
    let level = s.kubectl_json(&[
        "get",
        "prioritylevelconfiguration",
        "workload-low",
        "-o",
        "json",
    ]);
    assert_eq!(level["spec"]["limited"]["nominalConcurrencyShares"], 7);
    assert_eq!(
        level["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "false"
    );

    // Objects written without what flowcontrol/v1 defaults are stored with kube's defaults: a
    // FlowSchema's precedence 1000; a limited level's shares 30, lendablePercent 0, zero or
    // absent queuing parameters 64, 8, 50; an explicit zero of shares kept (v1's pointer).
    s.kubectl_apply(
        r#"
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenant-level}
spec:
  type: Limited
  limited:
    limitResponse: {type: Queue, queuing: {queues: 0}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenant-jail}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 0, limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenant}
spec:
  priorityLevelConfiguration: {name: tenant-level}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    nonResourceRules: [{verbs: [get], nonResourceURLs: [/healthz]}]
"#,
    );
    let fs = s.kubectl_json(&["get", "flowschema", "tenant"]);
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000, "{fs}");
    let level = s.kubectl_json(&["get", "prioritylevelconfiguration", "tenant-level"]);
    assert_eq!(
        level["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue",
                "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}),
        "{level}"
    );
    let jail = s.kubectl_json(&["get", "prioritylevelconfiguration", "tenant-jail"]);
    assert_eq!(
        jail["spec"]["limited"],
        json!({"nominalConcurrencyShares": 0, "lendablePercent": 0,
            "limitResponse": {"type": "Reject"}}),
        "{jail}"
    );
}
