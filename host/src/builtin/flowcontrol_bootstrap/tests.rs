use super::*;

async fn bootstrapped(name: &str) -> (Service, std::path::PathBuf) {
    let (store, dir) = crate::store::sled_store::temp_store(name);
    let svc = Service::new(store, Arc::new(crate::model::Registry::with_builtins()));
    svc.bootstrap().await.unwrap();
    (svc, dir)
}

fn kinds(svc: &Service) -> (Arc<ResourceInfo>, Arc<ResourceInfo>) {
    (
        svc.registry.lookup(GROUP, VERSION, FLOW_SCHEMAS).unwrap(),
        svc.registry
            .lookup(GROUP, VERSION, PRIORITY_LEVELS)
            .unwrap(),
    )
}

fn stored(svc: &Service, ri: &ResourceInfo, name: &str) -> Value {
    svc.get(ri, "", name).unwrap().value().clone()
}

fn bootstrap(name: &str, kind: Kind) -> Bootstrap {
    bootstrap_objects()
        .into_iter()
        .find(|b| b.kind == kind && b.name() == name)
        .unwrap()
}

/// kube 1.34's names, in the order its hook ensures them.
#[test]
fn the_bootstrap_set_is_kubes() {
    let objects = bootstrap_objects();
    let names: Vec<(&str, &str, &str)> = objects
        .iter()
        .map(|b| (b.strategy.name(), b.kind.name(), b.name()))
        .collect();
    let level = "PriorityLevelConfiguration";
    let schema = "FlowSchema";
    assert_eq!(
        names,
        [
            ("suggested", level, "system"),
            ("suggested", level, "node-high"),
            ("suggested", level, "leader-election"),
            ("suggested", level, "workload-high"),
            ("suggested", level, "workload-low"),
            ("suggested", level, "global-default"),
            ("suggested", schema, "system-nodes"),
            ("suggested", schema, "system-node-high"),
            ("suggested", schema, "probes"),
            ("suggested", schema, "system-leader-election"),
            ("suggested", schema, "kube-controller-manager"),
            ("suggested", schema, "kube-scheduler"),
            ("suggested", schema, "kube-system-service-accounts"),
            ("suggested", schema, "service-accounts"),
            ("suggested", schema, "global-default"),
            ("mandatory", level, "catch-all"),
            ("mandatory", level, "exempt"),
            ("mandatory", schema, "exempt"),
            ("mandatory", schema, "catch-all"),
        ]
    );
    // Each is valid as turtles validates the kind (mandatory objects: kube's fixed specs).
    for b in &objects {
        let causes =
            crate::builtin::validation::validate(GROUP, b.kind.resource(), &b.object, None);
        assert!(causes.is_empty(), "{}: {causes:?}", b.name());
        assert_eq!(
            b.object["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY],
            "true"
        );
    }
}

/// A few objects whole, as kube-apiserver 1.34 serves them (`kubectl get -o json`'s spec).
#[test]
fn specs_are_kubes_field_for_field() {
    let spec = |name: &str, kind: Kind| bootstrap(name, kind).object["spec"].clone();
    let everything = json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
            "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]});
    let with_subjects = |subjects: Value| {
        let mut r = everything.clone();
        r["subjects"] = subjects;
        r
    };
    assert_eq!(
        spec("exempt", Kind::FlowSchema),
        json!({"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1,
            "rules": [with_subjects(json!([{"kind": "Group", "group": {"name": "system:masters"}}]))]})
    );
    assert_eq!(
        spec("catch-all", Kind::FlowSchema),
        json!({"priorityLevelConfiguration": {"name": "catch-all"},
            "matchingPrecedence": 10000, "distinguisherMethod": {"type": "ByUser"},
            "rules": [with_subjects(json!([
                {"kind": "Group", "group": {"name": "system:unauthenticated"}},
                {"kind": "Group", "group": {"name": "system:authenticated"}}]))]})
    );
    assert_eq!(
        spec("probes", Kind::FlowSchema),
        json!({"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2,
            "rules": [{"subjects": [
                    {"kind": "Group", "group": {"name": "system:unauthenticated"}},
                    {"kind": "Group", "group": {"name": "system:authenticated"}}],
                "nonResourceRules": [{"verbs": ["get"],
                    "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}]})
    );
    assert_eq!(
        spec("system-leader-election", Kind::FlowSchema),
        json!({"priorityLevelConfiguration": {"name": "leader-election"},
            "matchingPrecedence": 100, "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [
                    {"kind": "User", "user": {"name": "system:kube-controller-manager"}},
                    {"kind": "User", "user": {"name": "system:kube-scheduler"}},
                    {"kind": "ServiceAccount",
                     "serviceAccount": {"namespace": "kube-system", "name": "*"}}],
                "resourceRules": [{"verbs": ["get", "create", "update"],
                    "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                    "namespaces": ["*"]}]}]})
    );
    assert_eq!(
        spec("system-node-high", Kind::FlowSchema),
        json!({"priorityLevelConfiguration": {"name": "node-high"},
            "matchingPrecedence": 400, "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:nodes"}}],
                "resourceRules": [
                    {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"],
                     "clusterScope": true, "namespaces": ["*"]},
                    {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"],
                     "resources": ["leases"], "namespaces": ["*"]}]}]})
    );
    assert_eq!(
        spec("kube-system-service-accounts", Kind::FlowSchema),
        json!({"priorityLevelConfiguration": {"name": "workload-high"},
            "matchingPrecedence": 900, "distinguisherMethod": {"type": "ByNamespace"},
            "rules": [with_subjects(json!([{"kind": "ServiceAccount",
                "serviceAccount": {"namespace": "kube-system", "name": "*"}}]))]})
    );
    assert_eq!(
        spec("exempt", Kind::PriorityLevelConfiguration),
        json!({"type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})
    );
    assert_eq!(
        spec("catch-all", Kind::PriorityLevelConfiguration),
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
            "limitResponse": {"type": "Reject"}, "lendablePercent": 0}})
    );
    let limited = |shares: u32, lendable: u32, queues: u32, hand: u32| {
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
            "limitResponse": {"type": "Queue", "queuing": {"queues": queues,
                "handSize": hand, "queueLengthLimit": 50}},
            "lendablePercent": lendable}})
    };
    for (name, shares, lendable, queues, hand) in [
        ("system", 30, 33, 64, 6),
        ("node-high", 40, 25, 64, 6),
        ("leader-election", 10, 0, 16, 4),
        ("workload-high", 40, 50, 128, 6),
        ("workload-low", 100, 90, 128, 6),
        ("global-default", 20, 50, 128, 6),
    ] {
        assert_eq!(
            spec(name, Kind::PriorityLevelConfiguration),
            limited(shares, lendable, queues, hand),
            "{name}"
        );
    }
    let precedence = |name: &str| spec(name, Kind::FlowSchema)["matchingPrecedence"].clone();
    for (name, p, level) in [
        ("system-nodes", 500, "system"),
        ("kube-controller-manager", 800, "workload-high"),
        ("kube-scheduler", 800, "workload-high"),
        ("service-accounts", 9000, "workload-low"),
        ("global-default", 9900, "global-default"),
    ] {
        assert_eq!(precedence(name), p, "{name}");
        assert_eq!(
            spec(name, Kind::FlowSchema)["priorityLevelConfiguration"]["name"],
            level
        );
    }
}

/// kube's `ReviseIfNeeded` and `shouldUpdateSpec`, annotation by annotation.
#[test]
fn what_is_revised() {
    let b = bootstrap("global-default", Kind::PriorityLevelConfiguration);
    let with = |annotation: Option<&str>, generation: i64, shares: i64| {
        let mut v = b.object.clone();
        v["metadata"] = json!({"name": "global-default", "generation": generation});
        if let Some(a) = annotation {
            v["metadata"]["annotations"] = json!({AUTOUPDATE_ANNOTATION_KEY: a});
        }
        v["spec"]["limited"]["nominalConcurrencyShares"] = json!(shares);
        v
    };
    let annotation = |v: &Value| v["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY].clone();
    let shares = |v: &Value| v["spec"]["limited"]["nominalConcurrencyShares"].clone();
    // Holding kube's spec with the annotation: nothing.
    assert_eq!(revise(&b, &with(Some("true"), 3, 20)), None);
    // Go's ParseBool: "T" is true, "0" is false.
    assert_eq!(revise(&b, &with(Some("T"), 3, 20)), None);
    assert_eq!(revise(&b, &with(Some("0"), 3, 99)), None);
    // Opted out: left alone, whatever the spec.
    assert_eq!(revise(&b, &with(Some("false"), 3, 99)), None);
    // Opted in: the spec is put back.
    let r = revise(&b, &with(Some("true"), 3, 99)).unwrap();
    assert_eq!(shares(&r), 20);
    assert_eq!(annotation(&r), "true");
    // No annotation (or one that is not a boolean): the generation decides, and the
    // annotation says what was decided.
    let r = revise(&b, &with(None, 1, 99)).unwrap();
    assert_eq!((shares(&r), annotation(&r)), (json!(20), json!("true")));
    let r = revise(&b, &with(Some("maybe"), 2, 99)).unwrap();
    assert_eq!((shares(&r), annotation(&r)), (json!(99), json!("false")));
    let r = revise(&b, &with(None, 1, 20)).unwrap();
    assert_eq!(annotation(&r), "true");
    // Defaults count as set: an absent `lendablePercent` is 0, absent queuing values are kube's.
    let l = bootstrap("leader-election", Kind::PriorityLevelConfiguration);
    let mut v = l.object.clone();
    v["metadata"]["generation"] = json!(1);
    if let Some(limited) = v["spec"]["limited"].as_object_mut() {
        limited.remove("lendablePercent");
    }
    assert_eq!(revise(&l, &v), None);

    // Mandatory: always kube's spec and `"true"`, but the exempt level's own shares.
    let e = bootstrap("exempt", Kind::PriorityLevelConfiguration);
    let mut v = e.object.clone();
    v["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY] = json!("false");
    v["spec"]["exempt"] = json!({"nominalConcurrencyShares": 10, "lendablePercent": 50});
    let r = revise(&e, &v).unwrap();
    assert_eq!(annotation(&r), "true");
    assert_eq!(r["spec"]["exempt"]["nominalConcurrencyShares"], 10);
    v["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY] = json!("true");
    assert_eq!(revise(&e, &v), None);
    // Without `spec.exempt` at all it is kube's again.
    v["spec"] = json!({"type": "Exempt"});
    let r = revise(&e, &v).unwrap();
    assert_eq!(r["spec"], e.object["spec"]);

    // Unwanted: not in the set, annotated true.
    let wanted = ["a"];
    let obj = |name: &str, a: Option<&str>| {
        let mut v = json!({"metadata": {"name": name}});
        if let Some(a) = a {
            v["metadata"]["annotations"] = json!({AUTOUPDATE_ANNOTATION_KEY: a});
        }
        v
    };
    assert!(unwanted(&obj("old", Some("true")), &wanted));
    assert!(unwanted(&obj("old", Some("1")), &wanted));
    assert!(!unwanted(&obj("a", Some("true")), &wanted));
    assert!(!unwanted(&obj("old", Some("false")), &wanted));
    assert!(!unwanted(&obj("old", Some("yes")), &wanted));
    assert!(!unwanted(&obj("old", None), &wanted));
}

/// On a new store every object is created with kube's spec, the annotation and kube's field
/// manager; a second pass writes nothing.
#[tokio::test]
async fn the_configuration_exists_after_start_with_kubes_specs() {
    let (svc, dir) = bootstrapped("apf-bootstrap").await;
    let (schemas, levels) = kinds(&svc);
    let done = ensure_at_start(&svc).await.unwrap();
    assert_eq!(
        done,
        Ensured {
            created: 19,
            ..Ensured::default()
        }
    );
    for b in bootstrap_objects() {
        let ri = match b.kind {
            Kind::FlowSchema => &schemas,
            Kind::PriorityLevelConfiguration => &levels,
        };
        let v = stored(&svc, ri, b.name());
        assert_eq!(v["apiVersion"], API_VERSION);
        assert_eq!(v["spec"], b.object["spec"], "{}", b.name());
        assert_eq!(
            v["metadata"]["annotations"],
            json!({AUTOUPDATE_ANNOTATION_KEY: "true"})
        );
        assert_eq!(v["metadata"]["generation"], 1);
        assert_eq!(v["metadata"]["managedFields"][0]["manager"], FIELD_MANAGER);
        assert_eq!(v["metadata"]["managedFields"][0]["operation"], "Update");
    }
    let count = |ri: &ResourceInfo| {
        svc.store
            .list(&ri.group_resource(), None)
            .unwrap()
            .items
            .len()
    };
    assert_eq!((count(&schemas), count(&levels)), (11, 8));

    let before = svc.store.revision();
    assert_eq!(ensure(&svc).await.unwrap(), Ensured::default());
    assert_eq!(
        svc.store.revision(),
        before,
        "nothing to do, nothing written"
    );
    drop(svc);
    let _ = std::fs::remove_dir_all(dir);
}

/// The next start after operators' changes: suggested objects opted out (annotation `"false"`,
/// or an edit without the annotation) keep their edit, one still opted in gets kube's spec
/// back; deleted mandatory objects are made again and a mandatory object's annotation is put
/// back to `"true"`, the exempt level's shares kept; objects an older version bootstrapped are
/// deleted if still annotated true; then nothing more is written.
#[tokio::test]
async fn the_configuration_is_ensured_at_every_start() {
    let (svc, dir) = bootstrapped("apf-ensure").await;
    let (schemas, levels) = kinds(&svc);
    ensure(&svc).await.unwrap();
    let opts = WriteOptions::default();
    let main = Subresource::Main;
    let key = AUTOUPDATE_ANNOTATION_KEY;

    // Suggested, opted out: `global-default` level with other shares.
    let mut v = stored(&svc, &levels, "global-default");
    v["metadata"]["annotations"][key] = json!("false");
    v["spec"]["limited"]["nominalConcurrencyShares"] = json!(99);
    svc.update(&levels, "", "global-default", v, main, &opts)
        .await
        .unwrap();
    // Suggested, edited with the annotation removed: `service-accounts` at another precedence.
    let mut v = stored(&svc, &schemas, "service-accounts");
    v["metadata"]["annotations"] = json!({});
    v["spec"]["matchingPrecedence"] = json!(8000);
    svc.update(&schemas, "", "service-accounts", v, main, &opts)
        .await
        .unwrap();
    // Suggested, edited but still opted in: `kube-scheduler`.
    let mut v = stored(&svc, &schemas, "kube-scheduler");
    v["spec"]["matchingPrecedence"] = json!(700);
    svc.update(&schemas, "", "kube-scheduler", v, main, &opts)
        .await
        .unwrap();
    // Mandatory: `catch-all` FlowSchema and `system` level (suggested) deleted, the exempt
    // level's shares raised and it opted out, `catch-all` level opted out.
    let delete = DeleteOptions::default();
    svc.delete(&schemas, "", "catch-all", &delete)
        .await
        .unwrap();
    svc.delete(&levels, "", "system", &delete).await.unwrap();
    let mut v = stored(&svc, &levels, "exempt");
    v["metadata"]["annotations"][key] = json!("false");
    v["spec"]["exempt"]["nominalConcurrencyShares"] = json!(10);
    svc.update(&levels, "", "exempt", v, main, &opts)
        .await
        .unwrap();
    let mut v = stored(&svc, &levels, "catch-all");
    v["metadata"]["annotations"][key] = json!("false");
    svc.update(&levels, "", "catch-all", v, main, &opts)
        .await
        .unwrap();
    // Left by an older kube (1.29 had it), one dropped from the set but opted out, an
    // operator's own, one with an annotation that is not a boolean, an old level.
    for (name, annotation) in [
        ("workload-leader-election", Some("true")),
        ("kept", Some("false")),
        ("mine", None),
        ("odd", Some("maybe")),
    ] {
        let mut fs = json!({"apiVersion": API_VERSION, "kind": "FlowSchema",
            "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": "leader-election"},
                "matchingPrecedence": 200}});
        if let Some(a) = annotation {
            fs["metadata"]["annotations"] = json!({key: a});
        }
        svc.create(&schemas, "", fs, &opts).await.unwrap();
    }
    svc.create(
        &levels,
        "",
        json!({"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "old-level", "annotations": {key: "True"}},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                "limitResponse": {"type": "Reject"}}}}),
        &opts,
    )
    .await
    .unwrap();

    let done = ensure(&svc).await.unwrap();
    assert_eq!(
        done,
        Ensured {
            created: 2,
            updated: 4,
            deleted: 2,
            raced: 0
        }
    );
    let level = stored(&svc, &levels, "global-default");
    assert_eq!(level["spec"]["limited"]["nominalConcurrencyShares"], 99);
    assert_eq!(level["metadata"]["annotations"][key], "false");
    let fs = stored(&svc, &schemas, "service-accounts");
    assert_eq!(fs["spec"]["matchingPrecedence"], 8000);
    assert_eq!(fs["metadata"]["annotations"][key], "false");
    let fs = stored(&svc, &schemas, "kube-scheduler");
    assert_eq!(fs["spec"]["matchingPrecedence"], 800);
    assert_eq!(fs["metadata"]["generation"], 3);
    let fs = stored(&svc, &schemas, "catch-all");
    assert_eq!(
        fs["spec"],
        bootstrap("catch-all", Kind::FlowSchema).object["spec"]
    );
    assert_eq!(
        stored(&svc, &levels, "system")["spec"],
        bootstrap("system", Kind::PriorityLevelConfiguration).object["spec"]
    );
    let exempt = stored(&svc, &levels, "exempt");
    assert_eq!(exempt["spec"]["exempt"]["nominalConcurrencyShares"], 10);
    assert_eq!(exempt["metadata"]["annotations"][key], "true");
    assert_eq!(
        stored(&svc, &levels, "catch-all")["metadata"]["annotations"][key],
        "true"
    );
    assert!(svc.get(&schemas, "", "workload-leader-election").is_err());
    assert!(svc.get(&levels, "", "old-level").is_err());
    for name in ["kept", "mine", "odd"] {
        assert!(svc.get(&schemas, "", name).is_ok(), "{name}");
    }

    let before = svc.store.revision();
    assert_eq!(ensure(&svc).await.unwrap(), Ensured::default());
    assert_eq!(svc.store.revision(), before, "ensured once, then left");
    drop(svc);
    let _ = std::fs::remove_dir_all(dir);
}

/// Which failures a start waits out.
#[test]
fn failures_that_may_pass() {
    let failed = |code: u16| EnsureError::Update {
        kind: "FlowSchema",
        strategy: "suggested",
        name: "x".into(),
        source: Box::new(ApiError {
            code,
            ..ApiError::internal("x")
        }),
    };
    assert!(failed(503).may_pass());
    assert!(failed(409).may_pass());
    assert!(!failed(422).may_pass());
    assert!(!EnsureError::Unserved(FLOW_SCHEMAS).may_pass());
}
