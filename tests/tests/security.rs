//! TLS, tokens and RBAC end to end: the real binary, the real kubectl, a raw HTTPS client.

use serde_json::{json, Value};
use turtles_tests::{assert_status, Server};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn admin_kubeconfig_uses_verified_tls() {
    let s = Server::start().unwrap();
    assert!(s.url.starts_with("https://"), "{}", s.url);
    let kc = std::fs::read_to_string(&s.kubeconfig).unwrap();
    assert!(kc.contains("certificate-authority-data:"));
    assert!(!kc.contains("insecure-skip-tls-verify"));
    let ns = s.kubectl_ok(&["get", "ns", "-o", "name"]);
    assert!(ns.contains("namespace/default"), "{ns}");
    // A client that does not trust our CA cannot talk to the server at all.
    let untrusting = reqwest::blocking::Client::builder()
        .use_rustls_tls()
        .build()
        .unwrap();
    let err = untrusting
        .get(format!("{}/version", s.url))
        .send()
        .expect_err("TLS verification must fail without the CA");
    assert!(err.is_connect() || err.is_request(), "{err:?}");
    // Plain HTTP to the TLS port gets nothing useful either.
    let plain = reqwest::blocking::get(format!("{}/version", s.url.replace("https://", "http://")));
    assert!(plain.map(|r| !r.status().is_success()).unwrap_or(true));
}

#[test]
fn missing_or_bad_tokens_get_401_status() {
    let s = Server::start().unwrap();
    for token in [None, Some("not-a-real-token")] {
        let http = s.http_with_token(token);
        let r = http.get("/api/v1/namespaces");
        let st = assert_status(&r, 401, "Unauthorized");
        assert_eq!(st["message"], "Unauthorized");
        let r = http.post_json(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "sneaky"}}),
        );
        assert_status(&r, 401, "Unauthorized");
    }
    // Health and version stay open.
    let anon = s.http_with_token(None);
    for p in ["/healthz", "/livez", "/readyz", "/version"] {
        assert_eq!(anon.get(p).status, 200, "{p}");
    }
    // And nothing was written by the refused requests.
    assert_eq!(
        s.http()
            .get("/api/v1/namespaces/default/configmaps/sneaky")
            .status,
        404
    );
}

#[test]
fn view_in_one_namespace_is_exactly_that() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "foo"]);
    s.kubectl_ok(&["create", "namespace", "bar"]);
    s.kubectl_ok(&[
        "-n",
        "foo",
        "create",
        "configmap",
        "cm1",
        "--from-literal=a=b",
    ]);
    s.kubectl_ok(&[
        "-n",
        "foo",
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=p=q",
    ]);
    s.kubectl_ok(&[
        "-n",
        "bar",
        "create",
        "configmap",
        "cm2",
        "--from-literal=a=b",
    ]);
    let (alice, token) = s.mint("alice", &["devs"]).unwrap();

    // Before any binding: authenticated, but allowed nothing in foo.
    let out = s.kubectl_with(&alice, &["-n", "foo", "get", "configmaps"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Forbidden") || stderr(&out).contains("forbidden"),
        "{}",
        stderr(&out)
    );

    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "foo",
    ]);
    // The binding takes effect at once.
    let got = stdout(&s.kubectl_with(&alice, &["-n", "foo", "get", "configmaps", "-o", "name"]));
    assert!(got.contains("configmap/cm1"), "{got}");
    let one = s.kubectl_with(
        &alice,
        &[
            "-n",
            "foo",
            "get",
            "configmap",
            "cm1",
            "-o",
            "jsonpath={.data.a}",
        ],
    );
    assert_eq!(stdout(&one), "b", "{}", stderr(&one));

    // Refused: create in foo, list in bar, read secrets in foo.
    let http = s.http_with_token(Some(&token));
    let r = http.post_json(
        "/api/v1/namespaces/foo/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nope"}}),
    );
    let st = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        st["message"],
        "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"foo\""
    );
    let out = s.kubectl_with(
        &alice,
        &[
            "-n",
            "foo",
            "create",
            "configmap",
            "nope2",
            "--from-literal=x=y",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"foo\""),
        "{}",
        stderr(&out)
    );
    let r = http.get("/api/v1/namespaces/bar/configmaps");
    let st = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        st["message"],
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"bar\""
    );
    let r = http.get("/api/v1/namespaces/foo/secrets/s1");
    assert_status(&r, 403, "Forbidden");
    let out = s.kubectl_with(&alice, &["-n", "foo", "get", "secrets"]);
    assert!(!out.status.success());

    // Nothing was written by the refused requests.
    for name in ["nope", "nope2"] {
        assert_eq!(
            s.http()
                .get(&format!("/api/v1/namespaces/foo/configmaps/{name}"))
                .status,
            404
        );
    }

    // Removing the binding also takes effect at once.
    s.kubectl_ok(&["-n", "foo", "delete", "rolebinding", "alice-view"]);
    assert_status(
        &http.get("/api/v1/namespaces/foo/configmaps"),
        403,
        "Forbidden",
    );
}

#[test]
fn can_i_and_whoami_answer_for_the_user() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "foo"]);
    let (alice, _) = s.mint("alice", &["devs"]).unwrap();
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "foo",
    ]);
    let yes = s.kubectl_with(
        &alice,
        &["auth", "can-i", "list", "configmaps", "-n", "foo"],
    );
    assert_eq!(stdout(&yes).trim(), "yes", "{}", stderr(&yes));
    for args in [
        &["auth", "can-i", "create", "configmaps", "-n", "foo"][..],
        &["auth", "can-i", "get", "secrets", "-n", "foo"][..],
        &["auth", "can-i", "list", "configmaps", "-n", "bar"][..],
    ] {
        let no = s.kubectl_with(&alice, args);
        assert_eq!(stdout(&no).trim(), "no", "{args:?}: {}", stderr(&no));
        assert!(!no.status.success());
    }
    let list = s.kubectl_with(&alice, &["auth", "can-i", "--list", "-n", "foo"]);
    let text = stdout(&list);
    assert!(list.status.success(), "{}", stderr(&list));
    assert!(text.contains("configmaps"), "{text}");
    let who = s.kubectl_with(&alice, &["auth", "whoami", "-o", "json"]);
    assert!(who.status.success(), "{}", stderr(&who));
    let v: serde_json::Value = serde_json::from_slice(&who.stdout).unwrap();
    assert_eq!(v["status"]["userInfo"]["username"], "alice");
    let groups = v["status"]["userInfo"]["groups"].as_array().unwrap();
    assert!(groups.contains(&json!("devs")) && groups.contains(&json!("system:authenticated")));
    // The admin can do anything.
    assert_eq!(
        stdout(&s.kubectl(&["auth", "can-i", "delete", "secrets", "-A"])).trim(),
        "yes"
    );
    // Its rules are RBAC's, as kube's (the system:masters authorizer lists none): everything
    // through cluster-admin's binding, and what every authenticated user has.
    let list = s.kubectl(&["auth", "can-i", "--list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    let text = stdout(&list);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    for row in [
        &["*.*", "[]", "[]", "[*]"][..],
        &["[*]", "[]", "[*]"],
        &[
            "selfsubjectaccessreviews.authorization.k8s.io",
            "[]",
            "[]",
            "[create]",
        ],
        &[
            "selfsubjectreviews.authentication.k8s.io",
            "[]",
            "[]",
            "[create]",
        ],
        &["[/healthz]", "[]", "[get]"],
        &["[/apis/*]", "[]", "[get]"],
    ] {
        assert!(
            rows.iter().any(|r| r.as_slice() == row),
            "{row:?} in\n{text}"
        );
    }
    // The same authenticated-user rows as anyone's.
    let bob = s.kubectl(&["auth", "can-i", "--list", "--as=bob"]);
    let bob_text = stdout(&bob);
    assert!(bob.status.success(), "{}", stderr(&bob));
    let bob_rows: Vec<Vec<&str>> = bob_text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(!bob_rows.is_empty(), "{bob_text}");
    for row in &bob_rows {
        assert!(rows.contains(row), "{row:?} in\n{text}");
    }
    assert_eq!(rows.len(), bob_rows.len() + 2, "{text}");
}

#[test]
fn impersonation_is_for_those_allowed_to_impersonate() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "foo"]);
    s.kubectl_ok(&[
        "-n",
        "foo",
        "create",
        "configmap",
        "cm1",
        "--from-literal=a=b",
    ]);
    let (alice, alice_token) = s.mint("alice", &[]).unwrap();
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "foo",
    ]);
    // The admin acting as alice gets exactly alice's rights.
    let ok = s.kubectl(&[
        "--as",
        "alice",
        "-n",
        "foo",
        "get",
        "configmaps",
        "-o",
        "name",
    ]);
    assert!(stdout(&ok).contains("configmap/cm1"), "{}", stderr(&ok));
    let refused = s.kubectl(&["--as", "alice", "-n", "foo", "delete", "configmap", "cm1"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("User \"alice\" cannot delete"),
        "{}",
        stderr(&refused)
    );
    // alice may not act as the admin: kubectl fails (already at discovery), and the server's
    // answer is kube's 403.
    let out = s.kubectl_with(&alice, &["--as", "admin", "-n", "foo", "get", "configmaps"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Forbidden"), "{}", stderr(&out));
    let r = s
        .http_with_token(Some(&alice_token))
        .client
        .get(format!("{}/api/v1/namespaces/foo/configmaps", s.url))
        .header("Impersonate-User", "admin")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let st: serde_json::Value = r.json().unwrap();
    assert_eq!(
        st["message"],
        "users \"admin\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    assert_eq!(
        s.http().get("/api/v1/namespaces/foo/configmaps/cm1").status,
        200
    );
}

#[test]
fn revoked_tokens_stop_working_at_once() {
    let s = Server::start().unwrap();
    let (_, token) = s.mint("bob", &[]).unwrap();
    let http = s.http_with_token(Some(&token));
    // Authenticated (any authenticated user may ask who they are).
    let r = http.post_json(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"]["userInfo"]["username"], "bob");
    s.revoke("bob").unwrap();
    assert_status(&http.get("/api/v1/namespaces"), 401, "Unauthorized");
}

#[test]
fn bootstrap_roles_exist_and_view_excludes_secrets() {
    let s = Server::start().unwrap();
    let roles = s.kubectl_ok(&["get", "clusterroles", "-o", "name"]);
    for r in ["cluster-admin", "admin", "edit", "view"] {
        assert!(
            roles.contains(&format!("clusterrole.rbac.authorization.k8s.io/{r}\n")),
            "{r}: {roles}"
        );
    }
    let view = s.kubectl_json(&["get", "clusterrole", "view"]);
    let grants_secrets = view["rules"].as_array().unwrap().iter().any(|rule| {
        rule["resources"]
            .as_array()
            .is_some_and(|rs| rs.iter().any(|r| r == "secrets" || r == "*"))
    });
    assert!(!grants_secrets, "view must not read secrets: {view}");
    let bindings = s.kubectl_ok(&["get", "clusterrolebindings", "-o", "name"]);
    assert!(bindings.contains("cluster-admin"), "{bindings}");
}

/// Whether `kubectl` failed with `needle` in its error output.
fn refused_with(out: &std::process::Output, needle: &str) -> bool {
    !out.status.success() && stderr(out).contains(needle)
}

const NOT_HELD: &str = "is attempting to grant RBAC permissions not currently held:";

#[test]
fn a_namespace_admin_grants_only_what_it_holds() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "foo"]);
    let (me, token) = s.mint("me", &[]).unwrap();
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "me-admin",
        "--clusterrole=admin",
        "--user=me",
        "-n",
        "foo",
    ]);

    // cluster-admin is not theirs to give: kube's 403 and message, nothing stored.
    let out = s.kubectl_with(
        &me,
        &[
            "create",
            "rolebinding",
            "x",
            "--clusterrole=cluster-admin",
            "--user=me",
            "-n",
            "foo",
        ],
    );
    let err = stderr(&out);
    assert!(refused_with(&out, NOT_HELD), "{err}");
    assert!(
        err.contains(
            "rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"me\" (groups=["
        ) && err.contains("{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}")
            && err.contains("{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"),
        "{err}"
    );
    assert_eq!(
        s.http()
            .get("/apis/rbac.authorization.k8s.io/v1/namespaces/foo/rolebindings/x")
            .status,
        404
    );
    // The raw answer: 403 Forbidden, details naming the binding.
    let r = s.http_with_token(Some(&token)).post_json(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/foo/rolebindings",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "y"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "me"}]}),
    );
    let st = assert_status(&r, 403, "Forbidden");
    assert_eq!(st["details"]["name"], "y", "{st}");
    assert_eq!(st["details"]["kind"], "rolebindings", "{st}");

    // The check is on the user after impersonation: the admin acting as me is refused too.
    let out = s.kubectl(&[
        "--as",
        "me",
        "create",
        "rolebinding",
        "z",
        "--clusterrole=cluster-admin",
        "--user=me",
        "-n",
        "foo",
    ]);
    let err = stderr(&out);
    assert!(refused_with(&out, NOT_HELD), "{err}");
    assert!(
        err.contains("user \"me\" (groups=[\"system:authenticated\"])"),
        "{err}"
    );

    // edit and view it holds in foo: granted.
    for role in ["edit", "view"] {
        s.kubectl_ok(&[
            "--kubeconfig",
            me.to_str().unwrap(),
            "create",
            "rolebinding",
            &format!("bob-{role}"),
            &format!("--clusterrole={role}"),
            "--user=bob",
            "-n",
            "foo",
        ]);
    }
    // Not outside foo.
    let out = s.kubectl_with(
        &me,
        &[
            "create",
            "rolebinding",
            "v",
            "--clusterrole=view",
            "--user=bob",
            "-n",
            "default",
        ],
    );
    assert!(!out.status.success(), "{}", stdout(&out));

    // A Role within its rights is fine; `*` on secrets it does not hold is not.
    s.kubectl_ok(&[
        "--kubeconfig",
        me.to_str().unwrap(),
        "create",
        "role",
        "cm-reader",
        "--verb=get,list",
        "--resource=configmaps",
        "-n",
        "foo",
    ]);
    let out = s.kubectl_with(
        &me,
        &[
            "create",
            "role",
            "secrets-all",
            "--verb=*",
            "--resource=secrets",
            "-n",
            "foo",
        ],
    );
    let err = stderr(&out);
    assert!(refused_with(&out, NOT_HELD), "{err}");
    assert!(
        err.contains("{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"*\"]}"),
        "{err}"
    );
    // Widening an existing Role by a patch is checked on the result too.
    let out = s.kubectl_with(
        &me,
        &[
            "patch",
            "role",
            "cm-reader",
            "-n",
            "foo",
            "--type=json",
            "-p",
            r#"[{"op": "add", "path": "/rules/-", "value": {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}}]"#,
        ],
    );
    let err = stderr(&out);
    assert!(refused_with(&out, NOT_HELD), "{err}");
    assert!(err.contains("Resources:[\"nodes\"]"), "{err}");
    // And binding its own Role needs nothing more than holding it.
    s.kubectl_ok(&[
        "--kubeconfig",
        me.to_str().unwrap(),
        "create",
        "rolebinding",
        "bob-cm",
        "--role=cm-reader",
        "--user=bob",
        "-n",
        "foo",
    ]);
}

#[test]
fn role_ref_of_a_binding_cannot_change() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "rb",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "default",
    ]);
    // Even the cluster admin gets kube's 422.
    let out = s.kubectl(&[
        "patch",
        "rolebinding",
        "rb",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"roleRef": {"name": "edit"}}"#,
    ]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"),
        "{err}"
    );
    let path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin";
    let mut crb = s.http().get(path).json();
    crb["roleRef"]["name"] = json!("view");
    let st = assert_status(&s.http().put_json(path, &crb), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "roleRef", "{st}");
    assert_eq!(
        st["details"]["causes"][0]["reason"], "FieldValueInvalid",
        "{st}"
    );
    // Subjects may change.
    s.kubectl_ok(&[
        "patch",
        "rolebinding",
        "rb",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]}"#,
    ]);
}

#[test]
fn bind_and_escalate_are_the_explicit_ways_to_delegate() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "foo"]);
    let (binder, _) = s.mint("binder", &[]).unwrap();
    // binder may write RoleBindings in foo and bind the `admin` ClusterRole there, nothing else.
    s.kubectl_ok(&[
        "create",
        "role",
        "delegate",
        "--verb=create,get",
        "--resource=rolebindings.rbac.authorization.k8s.io",
        "-n",
        "foo",
    ]);
    s.kubectl_ok(&[
        "create",
        "role",
        "bind-admin",
        "--verb=bind",
        "--resource=clusterroles.rbac.authorization.k8s.io",
        "--resource-name=admin",
        "-n",
        "foo",
    ]);
    for role in ["delegate", "bind-admin"] {
        s.kubectl_ok(&[
            "create",
            "rolebinding",
            &format!("binder-{role}"),
            &format!("--role={role}"),
            "--user=binder",
            "-n",
            "foo",
        ]);
    }
    s.kubectl_ok(&[
        "--kubeconfig",
        binder.to_str().unwrap(),
        "create",
        "rolebinding",
        "carol-admin",
        "--clusterrole=admin",
        "--user=carol",
        "-n",
        "foo",
    ]);
    let out = s.kubectl_with(
        &binder,
        &[
            "create",
            "rolebinding",
            "carol-edit",
            "--clusterrole=edit",
            "--user=carol",
            "-n",
            "foo",
        ],
    );
    assert!(refused_with(&out, NOT_HELD), "{}", stderr(&out));

    // escalate on roles in foo lets a user write any Role there.
    let (esc, _) = s.mint("esc", &[]).unwrap();
    s.kubectl_ok(&[
        "create",
        "role",
        "role-writer",
        "--verb=create,escalate",
        "--resource=roles.rbac.authorization.k8s.io",
        "-n",
        "foo",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "esc-writer",
        "--role=role-writer",
        "--user=esc",
        "-n",
        "foo",
    ]);
    s.kubectl_ok(&[
        "--kubeconfig",
        esc.to_str().unwrap(),
        "create",
        "role",
        "secrets-all",
        "--verb=*",
        "--resource=secrets",
        "-n",
        "foo",
    ]);

    // The cluster admin (system:masters) may grant anything, aggregation included.
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "anyone-admin",
        "--clusterrole=cluster-admin",
        "--user=anyone",
    ]);
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: gathered\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels:\n      example.com/gather: \"true\"\nrules: []\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    s.kubectl_ok(&["get", "clusterrole", "gathered"]);
}

/// A continue token is the client's to forge: its key is relative to the list's prefix, as
/// kube's (`storage.DecodeContinue`), so a token naming another namespace's key goes on inside
/// this namespace, never through the ones in between; one whose key climbs out of the list, or
/// a token turtles wrote before it wrote kube's whose key is not in the list, is refused.
#[test]
fn a_forged_continue_token_does_not_cross_namespaces() {
    use base64::Engine;
    let s = Server::start().unwrap();
    let h = s.http();
    for (ns, name) in [("aaa", "secret-a"), ("mmm", "secret-m"), ("zzz", "mine")] {
        let r = h.post_json("/api/v1/namespaces", &json!({"metadata": {"name": ns}}));
        assert_eq!(r.status, 201, "{}", r.text());
        let cm = json!({"metadata": {"name": name}, "data": {"k": "v"}});
        let r = h.post_json(&format!("/api/v1/namespaces/{ns}/configmaps"), &cm);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let list = h.get("/api/v1/namespaces/zzz/configmaps").json();
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let token = |v: &str, start: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(json!({"v": v, "rv": rv, "start": start}).to_string())
    };
    let kube = token("meta.k8s.io/v1", "aaa/secret-a");
    for query in ["limit=10&", ""] {
        let page = h
            .get(&format!(
                "/api/v1/namespaces/zzz/configmaps?{query}continue={kube}"
            ))
            .json();
        // Only zzz's own: `mine` and the namespace's `kube-root-ca.crt`.
        assert_eq!(turtles_tests::item_names(&page), ["mine"], "{page}");
        assert!(page["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["metadata"]["namespace"] == "zzz"));
    }
    for (forged, message) in [
        (
            token("meta.k8s.io/v1", "../aaa/secret-a"),
            "invalid continue token: continue key is not valid: ../aaa/secret-a",
        ),
        (
            token("turtles/1", "aaa/"),
            "invalid continue token: continue key is not valid: server does not recognize this encoded version turtles/1",
        ),
    ] {
        let r = h.get(&format!(
            "/api/v1/namespaces/zzz/configmaps?limit=10&continue={forged}"
        ));
        let st = assert_status(&r, 400, "BadRequest");
        assert_eq!(st["message"], message);
    }
}

#[test]
fn impersonating_service_accounts_uids_and_extras_is_asked_as_kube_asks_it() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "foo"]);
    s.kubectl_ok(&["create", "namespace", "bar"]);
    // A service account gets its groups; the user is the account.
    let me = s.kubectl_json(&["--as=system:serviceaccount:foo:sa", "auth", "whoami"]);
    assert_eq!(
        me["status"]["userInfo"]["username"],
        "system:serviceaccount:foo:sa"
    );
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:foo",
            "system:authenticated"
        ])
    );
    // A uid and extras are handed on.
    let r = s
        .http()
        .client
        .post(format!(
            "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
            s.url
        ))
        .header("Impersonate-User", "bob")
        .header("Impersonate-Uid", "u-42")
        .header("Impersonate-Extra-Scopes", "read")
        .header("Impersonate-Extra-Scopes", "write")
        .header("Impersonate-Extra-Example.com%2fteam", "blue")
        .header("Content-Type", "application/json")
        .body(r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let review: Value = r.json().unwrap();
    let info = &review["status"]["userInfo"];
    assert_eq!(info["username"], "bob");
    assert_eq!(info["uid"], "u-42");
    assert_eq!(info["extra"]["scopes"], json!(["read", "write"]));
    assert_eq!(info["extra"]["example.com/team"], json!(["blue"]));
    // A uid without a user: refused; a group without one too.
    // kube's words: the requests as Go prints them.
    for (h, v, said) in [
        (
            "Impersonate-Uid",
            "u-42",
            "[{UID  u-42  authentication.k8s.io/v1  }]",
        ),
        ("Impersonate-Group", "dev", "[{Group  dev    }]"),
        (
            "Impersonate-Extra-Scopes",
            "read",
            "[{UserExtra  read  authentication.k8s.io/v1  scopes}]",
        ),
    ] {
        let r = s
            .http()
            .client
            .get(format!("{}/api/v1/namespaces", s.url))
            .header(h, v)
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{h}");
        let body: Value = r.json().unwrap();
        assert_eq!(
            body["message"],
            format!("requested {said} without impersonating a user")
        );
    }
    let whoami = |headers: &[(&str, &[u8])]| -> Value {
        let mut rb = s
            .http()
            .client
            .post(format!(
                "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                s.url
            ))
            .header("Content-Type", "application/json")
            .body(r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#);
        for (h, v) in headers {
            rb = rb.header(*h, reqwest::header::HeaderValue::from_bytes(v).unwrap());
        }
        let r = rb.send().unwrap();
        let code = r.status().as_u16();
        let body = r.json::<Value>().unwrap();
        if code != 201 {
            return json!({"code": code, "message": body["message"]});
        }
        body["status"]["userInfo"].clone()
    };
    // Groups given to a service account replace its own.
    let info = whoami(&[
        ("Impersonate-User", b"system:serviceaccount:foo:sa"),
        ("Impersonate-Group", b"dev"),
    ]);
    assert_eq!(info["groups"], json!(["dev", "system:authenticated"]));
    // The anonymous user is unauthenticated: not even allowed to ask who it is.
    let info = whoami(&[("Impersonate-User", b"system:anonymous")]);
    assert_eq!(info["code"], 403, "{info}");
    assert!(
        info["message"]
            .as_str()
            .unwrap_or("")
            .contains("User \"system:anonymous\""),
        "{info}"
    );
    // A name that is not ASCII is the name (UTF-8, as Go's clients send it), never ignored.
    let info = whoami(&[("Impersonate-User", "józef".as_bytes())]);
    assert_eq!(info["username"], "józef");

    // alice may impersonate the service accounts of foo (kube asks about `serviceaccounts` in
    // the account's namespace, not about `users`), and nothing else.
    let (_, alice) = s.mint("alice", &[]).unwrap();
    s.kubectl_ok(&[
        "-n",
        "foo",
        "create",
        "role",
        "sa-impersonator",
        "--verb=impersonate",
        "--resource=serviceaccounts",
    ]);
    s.kubectl_ok(&[
        "-n",
        "foo",
        "create",
        "rolebinding",
        "alice-impersonates",
        "--role=sa-impersonator",
        "--user=alice",
    ]);
    let ask = |who: &str, extra: Option<(&str, &str)>| {
        let mut rb = s
            .http_with_token(Some(&alice))
            .client
            .post(format!(
                "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                s.url
            ))
            .header("Impersonate-User", who)
            .header("Content-Type", "application/json")
            .body(r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#);
        if let Some((k, v)) = extra {
            rb = rb.header(k, v);
        }
        let r = rb.send().unwrap();
        (r.status().as_u16(), r.json::<Value>().unwrap())
    };
    let (code, review) = ask("system:serviceaccount:foo:builder", None);
    assert_eq!(code, 201, "{review}");
    assert_eq!(
        review["status"]["userInfo"]["username"],
        "system:serviceaccount:foo:builder"
    );
    let (code, st) = ask("system:serviceaccount:bar:builder", None);
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        "serviceaccounts \"builder\" is forbidden: User \"alice\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"bar\""
    );
    let (code, st) = ask(
        "system:serviceaccount:foo:builder",
        Some(("Impersonate-Extra-Scopes", "all")),
    );
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        "userextras.authentication.k8s.io \"all\" is forbidden: User \"alice\" cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    let (code, st) = ask(
        "system:serviceaccount:foo:builder",
        Some(("Impersonate-Uid", "u-1")),
    );
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        "uids.authentication.k8s.io \"u-1\" is forbidden: User \"alice\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
}
