use serde_json::json;

use super::*;

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    let own = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
    PolicyRule {
        verbs: own(verbs),
        api_groups: own(groups),
        resources: own(resources),
        ..PolicyRule::default()
    }
}

fn named(mut r: PolicyRule, names: &[&str]) -> PolicyRule {
    r.resource_names = names.iter().map(|s| (*s).to_owned()).collect();
    r
}

fn url(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
        non_resource_urls: urls.iter().map(|s| (*s).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

fn me() -> UserInfo {
    UserInfo {
        name: "me".into(),
        uid: String::new(),
        groups: vec!["devs".into(), "system:authenticated".into()],
        extra: Default::default(),
    }
}

#[test]
fn coverage_follows_kube() {
    let owner = vec![
        rule(&["get", "list"], &[""], &["pods", "configmaps"]),
        rule(&["*"], &["apps"], &["deployments"]),
        rule(&["get"], &[""], &["*/status"]),
        named(rule(&["update"], &[""], &["secrets"]), &["a", "b"]),
        url(&["get"], &["/healthz", "/api/*"]),
    ];
    // Covered: subsets, wildcards, */subresource, names within the owner's, URL prefixes.
    for servant in [
        rule(&["get"], &[""], &["pods"]),
        rule(&["list", "get"], &[""], &["configmaps", "pods"]),
        rule(&["delete", "patch"], &["apps"], &["deployments"]),
        rule(&["get"], &[""], &["pods/status", "nodes/status"]),
        named(rule(&["update"], &[""], &["secrets"]), &["b"]),
        url(&["get"], &["/healthz", "/api/v1", "/api/"]),
        // An empty rule grants nothing, so it is always covered.
        rule(&[], &[""], &["pods"]),
    ] {
        assert!(
            uncovered(&owner, std::slice::from_ref(&servant)).is_empty(),
            "{servant:?}"
        );
    }
    // Not covered: another verb, group, resource; all names when the owner has some; `*`.
    for servant in [
        rule(&["delete"], &[""], &["pods"]),
        rule(&["get"], &["batch"], &["pods"]),
        rule(&["get"], &[""], &["secrets"]),
        rule(&["update"], &[""], &["secrets"]),
        named(rule(&["update"], &[""], &["secrets"]), &["c"]),
        rule(&["get"], &[""], &["*"]),
        rule(&["*"], &[""], &["pods"]),
        rule(&["get"], &["*"], &["pods"]),
        url(&["get"], &["/apis"]),
        url(&["post"], &["/healthz"]),
    ] {
        assert!(
            !uncovered(&owner, std::slice::from_ref(&servant)).is_empty(),
            "{servant:?}"
        );
    }
    // A named owner rule does not cover an unnamed servant rule, and vice versa is fine.
    let owner = vec![named(rule(&["get"], &[""], &["pods"]), &["x"])];
    assert!(!uncovered(&owner, &[rule(&["get"], &[""], &["pods"])]).is_empty());
    let owner = vec![rule(&["get"], &[""], &["pods"])];
    assert!(uncovered(&owner, &[named(rule(&["get"], &[""], &["pods"]), &["x"])]).is_empty());
}

#[test]
fn breakdown_and_compaction() {
    let r = named(rule(&["get", "list"], &["", "apps"], &["pods"]), &["a"]);
    assert_eq!(breakdown_rule(&r).len(), 4);
    let missing = uncovered(
        &[],
        &[rule(&["get", "list", "watch"], &[""], &["secrets", "pods"])],
    );
    assert_eq!(missing.len(), 6);
    let compact = compact_rules(missing);
    let strings: Vec<String> = compact.iter().map(compact_string).collect();
    assert_eq!(
        strings,
        [
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}"#,
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}"#,
        ]
    );
    // Named and URL rules stay as they are.
    assert_eq!(
        compact_string(&named(rule(&["get"], &[""], &["secrets"]), &["s"])),
        r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["s"], Verbs:["get"]}"#
    );
    assert_eq!(
        compact_string(&url(&["*"], &["*"])),
        r#"{NonResourceURLs:["*"], Verbs:["*"]}"#
    );
}

#[test]
fn escalation_message_is_kubes() {
    let owner = vec![rule(&["get"], &[""], &["pods"])];
    assert_eq!(confirm_no_escalation(&me(), &owner, &[], &owner), Ok(()));
    let err = confirm_no_escalation(&me(), &owner, &[], &full_authority()).unwrap_err();
    assert_eq!(
        err,
        "user \"me\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n\
         {NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"
    );
    let errors = vec![ResolveError::ClusterRoleNotFound {
        name: "gone".into(),
    }];
    let err = confirm_no_escalation(&me(), &owner, &errors, &[rule(&["list"], &[""], &["pods"])])
        .unwrap_err();
    assert!(
        err.ends_with(
            "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\"]}; resolution errors: [clusterrole.rbac.authorization.k8s.io \"gone\" not found]"
        ),
        "{err}"
    );
}

#[test]
fn gc_only_updates_and_role_ref_changes() {
    let old = json!({"metadata": {"name": "b", "resourceVersion": "3"},
                     "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"}});
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["x"]);
    new["metadata"]["ownerReferences"] = json!([{"uid": "u"}]);
    assert!(only_gc_fields_change(&old, &new));
    new["metadata"]["labels"] = json!({"a": "b"});
    assert!(!only_gc_fields_change(&old, &new));

    let registry = crate::model::Registry::with_builtins();
    let ri = registry
        .lookup(RBAC_GROUP, "v1", "rolebindings")
        .expect("rolebindings served");
    assert!(role_ref_causes(&ri, &new, Some(&old)).is_empty());
    assert!(role_ref_causes(&ri, &new, None).is_empty());
    new["roleRef"]["name"] = json!("edit");
    let causes = role_ref_causes(&ri, &new, Some(&old));
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "roleRef");
    assert_eq!(
        causes[0].message,
        "Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"
    );
    let cm = registry.lookup("", "v1", "configmaps").expect("configmaps");
    assert!(role_ref_causes(&cm, &new, Some(&old)).is_empty());
}

// -- the guard over a real store ------------------------------------------------

struct Fixture {
    service: crate::service::Service,
    authz: Arc<Authorizer>,
    registry: Arc<crate::model::Registry>,
    dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Fixture {
    async fn new() -> Fixture {
        let dir = std::env::temp_dir().join(format!(
            "turtles-escalation-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let store: Arc<dyn crate::store::Store> = Arc::new(
            crate::store::sled_store::SledStore::open(crate::store::sled_store::StoreOptions {
                fsync: false,
                ..crate::store::sled_store::StoreOptions::in_dir(dir.clone())
            })
            .unwrap(),
        );
        let registry = Arc::new(crate::model::Registry::with_builtins());
        let service = crate::service::Service::new(store.clone(), registry.clone());
        service.bootstrap().await.unwrap();
        assert_eq!(
            service
                .reconcile_bootstrap_policy(rbac::bootstrap_objects())
                .await,
            0
        );
        Fixture {
            service,
            authz: Arc::new(Authorizer::new(store)),
            registry,
            dir,
        }
    }

    fn ri(&self, resource: &str) -> Arc<ResourceInfo> {
        self.registry.lookup(RBAC_GROUP, "v1", resource).unwrap()
    }

    /// Stored as the host (no guard).
    async fn put(&self, resource: &str, ns: &str, obj: Value) {
        let ri = self.ri(resource);
        self.service
            .create(&ri, ns, obj, &Default::default())
            .await
            .unwrap();
    }

    /// Created as `user`, through the guard.
    async fn create_as(
        &self,
        user: &UserInfo,
        resource: &str,
        ns: &str,
        obj: Value,
    ) -> Result<(), ApiError> {
        let ri = self.ri(resource);
        let opts = crate::service::WriteOptions {
            guard: guard(&self.authz, &ri, Some(user.clone())),
            ..Default::default()
        };
        self.service.create(&ri, ns, obj, &opts).await.map(|_| ())
    }

    async fn update_as(
        &self,
        user: &UserInfo,
        resource: &str,
        ns: &str,
        obj: Value,
    ) -> Result<(), ApiError> {
        let ri = self.ri(resource);
        let opts = crate::service::WriteOptions {
            guard: guard(&self.authz, &ri, Some(user.clone())),
            ..Default::default()
        };
        let name = meta::name(&obj).to_owned();
        self.service
            .update(
                &ri,
                ns,
                &name,
                obj,
                crate::service::Subresource::Main,
                &opts,
            )
            .await
            .map(|_| ())
    }
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        extra: Default::default(),
    }
}

fn rolebinding(ns: &str, name: &str, kind: &str, role: &str, subject: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role},
           "subjects": [{"kind": "User", "apiGroup": RBAC_GROUP, "name": subject}]})
}

fn clusterrolebinding(name: &str, role: &str, subject: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": name},
           "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
           "subjects": [{"kind": "User", "apiGroup": RBAC_GROUP, "name": subject}]})
}

fn role_json(kind: &str, ns: Option<&str>, name: &str, rules: Value) -> Value {
    let mut m = json!({"name": name});
    if let Some(ns) = ns {
        m["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": m, "rules": rules})
}

#[tokio::test]
async fn namespace_admin_grants_only_what_it_holds() {
    let f = Fixture::new().await;
    f.service
        .create(
            &f.registry.lookup("", "v1", "namespaces").unwrap(),
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo"}}),
            &Default::default(),
        )
        .await
        .unwrap();
    f.put(
        "rolebindings",
        "foo",
        rolebinding("foo", "me-admin", "ClusterRole", "admin", "me"),
    )
    .await;
    let me = user("me", &["system:authenticated"]);

    // cluster-admin: refused with kube's message.
    let e = f
        .create_as(
            &me,
            "rolebindings",
            "foo",
            rolebinding("foo", "x", "ClusterRole", "cluster-admin", "me"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 403, "{e:?}");
    assert_eq!(
        e.message,
        "rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"me\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n\
         {NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"
    );
    // edit and view: held, so allowed.
    for role in ["edit", "view"] {
        f.create_as(
            &me,
            "rolebindings",
            "foo",
            rolebinding("foo", role, "ClusterRole", role, "someone"),
        )
        .await
        .unwrap();
    }
    // Not in another namespace, nor cluster-wide.
    let e = f
        .create_as(
            &me,
            "rolebindings",
            "default",
            rolebinding("default", "v", "ClusterRole", "view", "someone"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    let e = f
        .create_as(
            &me,
            "clusterrolebindings",
            "",
            clusterrolebinding("v", "view", "someone"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    // A Role within its rights is fine; one with more is not.
    f.create_as(
        &me,
        "roles",
        "foo",
        role_json(
            "Role",
            Some("foo"),
            "cm-reader",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
        ),
    )
    .await
    .unwrap();
    let e = f
        .create_as(
            &me,
            "roles",
            "foo",
            role_json(
                "Role",
                Some("foo"),
                "all-secrets",
                json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert!(
        e.message.starts_with(
            "roles.rbac.authorization.k8s.io \"all-secrets\" is forbidden: user \"me\""
        ),
        "{}",
        e.message
    );
    assert!(
        e.message
            .ends_with(":\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"*\"]}"),
        "{}",
        e.message
    );
    // Binding a missing role: 404, as kube's resolver answers.
    let e = f
        .create_as(
            &me,
            "rolebindings",
            "foo",
            rolebinding("foo", "m", "Role", "missing", "someone"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 404);
    assert_eq!(
        e.message,
        "roles.rbac.authorization.k8s.io \"missing\" not found"
    );
}

#[tokio::test]
async fn bind_escalate_masters_and_aggregation() {
    let f = Fixture::new().await;
    let bob = user("bob", &["system:authenticated"]);
    // bob may create clusterrolebindings and bind exactly cluster-admin.
    f.put(
        "clusterroles",
        "",
        role_json(
            "ClusterRole",
            None,
            "binder",
            json!([
                {"apiGroups": [RBAC_GROUP], "resources": ["clusterrolebindings", "clusterroles"], "verbs": ["create", "update"]},
                {"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["cluster-admin"]},
            ]),
        ),
    )
    .await;
    f.put(
        "clusterrolebindings",
        "",
        clusterrolebinding("bob-binder", "binder", "bob"),
    )
    .await;
    f.create_as(
        &bob,
        "clusterrolebindings",
        "",
        clusterrolebinding("x", "cluster-admin", "carol"),
    )
    .await
    .unwrap();
    // ... but not another role he does not hold.
    let e = f
        .create_as(
            &bob,
            "clusterrolebindings",
            "",
            clusterrolebinding("y", "edit", "carol"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    // He cannot create a ClusterRole with more than he holds...
    let big = role_json(
        "ClusterRole",
        None,
        "big",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    );
    assert_eq!(
        f.create_as(&bob, "clusterroles", "", big.clone())
            .await
            .unwrap_err()
            .code,
        403
    );
    // ... until he may escalate.
    f.put(
        "clusterroles",
        "",
        role_json(
            "ClusterRole",
            None,
            "escalator",
            json!([{"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["escalate"]}]),
        ),
    )
    .await;
    f.put(
        "clusterrolebindings",
        "",
        clusterrolebinding("bob-escalator", "escalator", "bob"),
    )
    .await;
    f.create_as(&bob, "clusterroles", "", big).await.unwrap();

    // An aggregationRule needs cluster-admin, whatever the rules.
    // (carol is cluster-admin by now: bob bound her above.)
    let erin = user("erin", &["system:authenticated"]);
    f.put(
        "clusterrolebindings",
        "",
        clusterrolebinding("erin-binder", "binder", "erin"),
    )
    .await;
    let mut agg = role_json("ClusterRole", None, "agg", json!([]));
    agg["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]});
    let e = f
        .create_as(&erin, "clusterroles", "", agg.clone())
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
    );

    // Holding `*` through a binding (not system:masters) is enough.
    let carol = user("carol", &["system:authenticated"]);
    let mut agg2 = agg.clone();
    agg2["metadata"]["name"] = json!("agg2");
    f.create_as(&carol, "clusterroles", "", agg2).await.unwrap();

    // system:masters needs no binding at all, for anything.
    let root = user("root", &["system:masters", "system:authenticated"]);
    f.create_as(&root, "clusterroles", "", agg).await.unwrap();
    f.create_as(
        &root,
        "clusterrolebindings",
        "",
        clusterrolebinding("z", "cluster-admin", "nobody"),
    )
    .await
    .unwrap();

    // An update touching only finalizers is not checked; one changing roleRef is 422 for all.
    let ri = f.ri("clusterrolebindings");
    let stored = f.service.get(&ri, "", "x").unwrap().value().clone();
    let mut gc = stored.clone();
    gc["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let dave = user("dave", &["system:authenticated"]);
    // dave holds nothing: the GC-only update passes the escalation check (RBAC itself would
    // have stopped him at the door; this is the storage-level rule).
    f.update_as(&dave, "clusterrolebindings", "", gc)
        .await
        .unwrap();
    let mut changed = f.service.get(&ri, "", "x").unwrap().value().clone();
    changed["roleRef"]["name"] = json!("view");
    let e = f
        .update_as(&root, "clusterrolebindings", "", changed)
        .await
        .unwrap_err();
    assert_eq!(e.code, 422, "{e:?}");
    assert!(e.message.ends_with("roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"view\"}: cannot change roleRef"), "{}", e.message);
}

#[test]
fn bootstrap_roles_delegate_nothing_but_through_cluster_admin() {
    // As in kube: `admin` and `edit` may write Roles and RoleBindings (admin) but hold neither
    // `bind` nor `escalate`, so what they grant is limited to what they hold.
    for role in rbac::bootstrap_objects()
        .iter()
        .filter(|o| o["kind"] == "ClusterRole")
    {
        let name = meta::name(role);
        let rules = rbac::parse_rules(role);
        for verb in ["bind", "escalate"] {
            for resource in ["roles", "clusterroles"] {
                let attrs = Attributes::resource(verb, RBAC_GROUP, resource, "ns", "x");
                let grants = rules.iter().any(|r| rbac::rule_allows(&attrs, r));
                assert_eq!(grants, name == "cluster-admin", "{name} {verb} {resource}");
            }
        }
    }
    // The namespace admin may write roles and bindings, and holds what edit and view grant.
    let admin = rbac::bootstrap_objects()
        .into_iter()
        .find(|o| meta::name(o) == "admin")
        .expect("admin");
    let held = rbac::parse_rules(&admin);
    assert!(uncovered(
        &held,
        &[rule(
            &["create", "update", "patch"],
            &[RBAC_GROUP],
            &["roles", "rolebindings"]
        )]
    )
    .is_empty());
    for other in ["edit", "view"] {
        let role = rbac::bootstrap_objects()
            .into_iter()
            .find(|o| meta::name(o) == other)
            .expect("role");
        assert!(
            uncovered(&held, &rbac::parse_rules(&role)).is_empty(),
            "{other}"
        );
    }
    assert!(!uncovered(&held, &full_authority()).is_empty());
}

/// A rule whose lists multiply past [`MAX_BREAKDOWN`] single rules is refused without breaking
/// it down (kube builds them all: a 20 KB rule is 10⁹ of them); repeats count once.
#[test]
fn a_rule_too_broad_to_check_is_refused_without_breaking_it_down() {
    let owner = vec![rule(&["*"], &["*"], &["*"])];
    let user = UserInfo {
        name: "tenant".into(),
        groups: vec!["system:authenticated".into()],
        ..UserInfo::default()
    };
    let many = |p: &str, n: usize| -> Vec<String> { (0..n).map(|i| format!("{p}{i}")).collect() };
    let wide = PolicyRule {
        verbs: many("v", 1000),
        api_groups: many("g", 1000),
        resources: many("r", 1000),
        ..PolicyRule::default()
    };
    let err = confirm_no_escalation(&user, &owner, &[], &[wide]).unwrap_err();
    assert!(err.contains("cannot be checked"), "{err}");
    assert!(err.contains("1000000000 combinations"), "{err}");
    // The same verb, group and resource a thousand times is one rule, covered.
    let repeated = PolicyRule {
        verbs: vec!["get".into(); 1000],
        api_groups: vec!["".into(); 1000],
        resources: vec!["pods".into(); 1000],
        ..PolicyRule::default()
    };
    assert!(confirm_no_escalation(&user, &owner, &[], &[repeated]).is_ok());
}
