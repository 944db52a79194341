//! ServiceAccounts as kube-controller-manager keeps them: `default` in every namespace, created
//! when the namespace appears and again when it is deleted; and, next to them, the
//! `kube-root-ca.crt` ConfigMap kube's root CA publisher keeps in every namespace.

use std::time::Duration;

use turtles_tests::{poll, Server};

fn has_default(s: &Server, ns: &str) -> Option<String> {
    let out = s.kubectl(&["get", "serviceaccount", "default", "-n", ns, "-o", "name"]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A server whose `default` namespace has its `default` ServiceAccount.
fn server_with_default_account() -> Server {
    let s = Server::start().unwrap();
    poll("default SA", Duration::from_secs(5), || {
        has_default(&s, "default")
    })
    .unwrap();
    s
}

/// Whether `openssl` verifies the ES256 signature of `token` with the P-256 JWK `jwk`: the JWK
/// becomes a PEM public key, the JWS signature (r || s) a DER ECDSA signature.
fn openssl_verifies(s: &Server, token: &str, jwk: &serde_json::Value) -> bool {
    use base64::Engine;
    let b64url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let coord = |k: &str| b64url.decode(jwk[k].as_str().unwrap()).unwrap();
    // SubjectPublicKeyInfo of an uncompressed P-256 point.
    let mut spki = vec![
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ];
    spki.extend(coord("x"));
    spki.extend(coord("y"));
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(&spki)
    );
    let (signed, sig) = token.rsplit_once('.').unwrap();
    let sig = b64url.decode(sig).unwrap();
    let int = |b: &[u8]| {
        let b: Vec<u8> = b.iter().copied().skip_while(|&x| x == 0).collect();
        let mut v = if b.first().is_some_and(|&x| x & 0x80 != 0) {
            vec![0]
        } else {
            Vec::new()
        };
        v.extend(b);
        let mut out = vec![0x02, v.len() as u8];
        out.extend(v);
        out
    };
    let (r, s_) = (int(&sig[..32]), int(&sig[32..]));
    let mut der = vec![0x30, (r.len() + s_.len()) as u8];
    der.extend(r);
    der.extend(s_);
    let dir = s.data_dir.join("jwt-verify");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("key.pem"), pem).unwrap();
    std::fs::write(dir.join("sig.der"), der).unwrap();
    std::fs::write(dir.join("signed"), signed).unwrap();
    std::process::Command::new("openssl")
        .args([
            "dgst",
            "-sha256",
            "-verify",
            "key.pem",
            "-signature",
            "sig.der",
            "signed",
        ])
        .current_dir(&dir)
        .output()
        .unwrap()
        .status
        .success()
}

/// Part `i` of a JWT (0 the header, 1 the claims), decoded.
fn jwt_part(token: &str, i: usize) -> serde_json::Value {
    use base64::Engine;
    let part = token.split('.').nth(i).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn every_namespace_has_a_default_service_account() {
    let s = Server::start().unwrap();
    // The namespaces that exist from the start.
    for ns in ["default", "kube-system", "kube-public"] {
        poll(
            &format!("default SA in {ns}"),
            Duration::from_secs(5),
            || has_default(&s, ns),
        )
        .unwrap();
    }
    // A new namespace gets one within a second.
    s.kubectl_ok(&["create", "namespace", "team"]);
    let got = poll("default SA in team", Duration::from_secs(1), || {
        has_default(&s, "team")
    })
    .unwrap();
    assert_eq!(got, "serviceaccount/default");
    let uid = |s: &Server| {
        s.kubectl_json(&["get", "serviceaccount", "default", "-n", "team"])["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = uid(&s);
    // Deleted, it comes back (a new object).
    s.kubectl_ok(&["delete", "serviceaccount", "default", "-n", "team"]);
    poll("default SA re-created", Duration::from_secs(5), || {
        has_default(&s, "team").filter(|_| uid(&s) != first)
    })
    .unwrap();
    // A terminating namespace gets none back; the namespace goes.
    s.kubectl_ok(&["delete", "namespace", "team", "--wait=false"]);
    poll("team gone", Duration::from_secs(10), || {
        (!s.kubectl(&["get", "namespace", "team"]).status.success()).then_some(())
    })
    .unwrap();
}

/// `kube-root-ca.crt` in `ns`, once it holds `want` (its `ca.crt`) and kube's description.
fn root_ca(s: &Server, ns: &str, want: &str) -> serde_json::Value {
    poll(
        &format!("kube-root-ca.crt in {ns}"),
        Duration::from_secs(5),
        || {
            let out = s.kubectl(&[
                "get",
                "configmap",
                "kube-root-ca.crt",
                "-n",
                ns,
                "-o",
                "json",
            ]);
            let cm: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            let described = cm["metadata"]["annotations"]["kubernetes.io/description"]
                .as_str()
                .is_some_and(|d| {
                    d.starts_with(
                        "Contains a CA bundle that can be used to verify the kube-apiserver",
                    )
                });
            (cm["data"] == serde_json::json!({"ca.crt": want}) && described).then_some(cm)
        },
    )
    .unwrap()
}

#[test]
fn every_namespace_has_the_root_ca_config_map() {
    let s = Server::start().unwrap();
    let ca = s.ca_pem.clone().unwrap();
    for ns in ["default", "kube-system", "kube-public"] {
        root_ca(&s, ns, &ca);
    }
    s.kubectl_ok(&["create", "namespace", "team"]);
    let first = root_ca(&s, "team", &ca);
    // (`ca_pem` is the bundle this suite's clients verify the server with.)
    // Changed, it is put back (the same object); deleted, it comes back (a new one).
    s.kubectl_ok(&[
        "patch", "configmap", "kube-root-ca.crt", "-n", "team", "--type=merge",
        "-p", r#"{"data":{"ca.crt":"mine","extra":"x"},"metadata":{"annotations":{"kubernetes.io/description":""}}}"#,
    ]);
    let fixed = root_ca(&s, "team", &ca);
    assert_eq!(fixed["metadata"]["uid"], first["metadata"]["uid"]);
    s.kubectl_ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "team"]);
    let again = poll("re-created", Duration::from_secs(5), || {
        let cm = root_ca(&s, "team", &ca);
        (cm["metadata"]["uid"] != first["metadata"]["uid"]).then_some(cm)
    })
    .unwrap();
    assert_eq!(again["metadata"]["name"], "kube-root-ca.crt");
    // It goes with its namespace.
    s.kubectl_ok(&["delete", "namespace", "team", "--wait=false"]);
    poll("team gone", Duration::from_secs(10), || {
        (!s.kubectl(&["get", "namespace", "team"]).status.success()).then_some(())
    })
    .unwrap();
}

#[test]
fn kubectl_create_token_authenticates_as_the_service_account() {
    let s = server_with_default_account();
    let token = s
        .kubectl_ok(&["create", "token", "default"])
        .trim()
        .to_owned();
    assert_eq!(token.split('.').count(), 3, "{token}");
    // kube's claims.
    let claims = jwt_part(&token, 1);
    assert_eq!(claims["sub"], "system:serviceaccount:default:default");
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "default");
    let exp = claims["exp"].as_i64().unwrap();
    assert_eq!(exp - claims["iat"].as_i64().unwrap(), 3600);
    // Authenticated as the account, with only its RBAC.
    let as_sa = |args: &[&str]| s.kubectl(&[&["--token", &token][..], args].concat());
    let who = as_sa(&["auth", "whoami", "-o", "json"]);
    assert!(
        who.status.success(),
        "{}",
        String::from_utf8_lossy(&who.stderr)
    );
    let who: serde_json::Value = serde_json::from_slice(&who.stdout).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );
    let groups = who["status"]["userInfo"]["groups"].to_string();
    for g in [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ] {
        assert!(groups.contains(&format!("\"{g}\"")), "{groups}");
    }
    let out = as_sa(&["get", "configmaps"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("system:serviceaccount:default:default"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "sa-view",
        "--clusterrole=view",
        "--serviceaccount=default:default",
    ]);
    let out = as_sa(&["get", "configmaps"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The issuer's discovery documents, readable by service accounts (kube's bootstrap role).
    let http = s.http_with_token(Some(&token));
    let config = http.get("/.well-known/openid-configuration");
    assert_eq!(config.status, 200, "{}", config.text());
    assert_eq!(config.json()["issuer"], claims["iss"]);
    let jwks = http.get("/openid/v1/jwks");
    assert_eq!(jwks.status, 200, "{}", jwks.text());
    assert_eq!(
        jwks.headers["content-type"].to_str().unwrap(),
        "application/jwk-set+json"
    );
    let header = jwt_part(&token, 0);
    assert_eq!(jwks.json()["keys"][0]["kid"], header["kid"]);
    // An external verifier (openssl) checks the token's signature with the published key alone.
    assert!(openssl_verifies(&s, &token, &jwks.json()["keys"][0]));
    let mut forged = token.clone();
    forged.insert_str(token.find('.').unwrap() + 1, "eyJ4IjoxfQ");
    assert!(!openssl_verifies(&s, &forged, &jwks.json()["keys"][0]));
    // A TokenReview accepts it.
    let review = |token: &str| {
        let r = s.http().post_json(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                "spec": {"token": token}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["status"].clone()
    };
    let status = review(&token);
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:default"
    );
    assert_eq!(
        status["audiences"],
        serde_json::json!(["https://kubernetes.default.svc.cluster.local"])
    );
    // Audiences, as kube's TokenReview checks them: a token for `vault` is good for a review
    // that asks for `vault` (and says so), not for the API server itself nor for a review that
    // asks for the API's audience; the API's token is not good for `vault`; an audience-agnostic
    // token (the admin's) holds only the API server's audience.
    let review_for = |token: &str, audiences: serde_json::Value| {
        let r = s.http().post_json(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                "spec": {"token": token, "audiences": audiences}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["status"].clone()
    };
    let vault = s
        .kubectl_ok(&[
            "create",
            "token",
            "default",
            "--audience=vault",
            "--audience=other",
        ])
        .trim()
        .to_owned();
    let status = review_for(&vault, serde_json::json!(["nomad", "vault"]));
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["audiences"], serde_json::json!(["vault"]));
    assert_ne!(review(&vault)["authenticated"], true);
    let out = s.kubectl(&["--token", &vault, "get", "configmaps"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unauthorized"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(
        review_for(&token, serde_json::json!(["vault"]))["authenticated"],
        true
    );
    let admin = s.token.clone();
    assert_ne!(
        review_for(&admin, serde_json::json!(["vault"]))["authenticated"],
        true
    );
    let status = review_for(
        &admin,
        serde_json::json!(["vault", "https://kubernetes.default.svc.cluster.local"]),
    );
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["audiences"],
        serde_json::json!(["https://kubernetes.default.svc.cluster.local"])
    );
    // Too short a duration: kube's message.
    let out = s.kubectl(&["create", "token", "default", "--duration=5m"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("may not specify a duration less than 10 minutes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Too long a one too (2^32 seconds at most, so the expiry never overflows).
    let out = s.kubectl(&["create", "token", "default", "--duration=2000000h"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("may not specify a duration larger than 2^32 seconds"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Once the account is deleted the token is refused, even after `default` is re-created.
    s.kubectl_ok(&["delete", "serviceaccount", "default"]);
    poll("token refused", Duration::from_secs(5), || {
        let out = as_sa(&["get", "configmaps"]);
        String::from_utf8_lossy(&out.stderr)
            .contains("Unauthorized")
            .then_some(())
    })
    .unwrap();
    assert_ne!(review(&token)["authenticated"], true);
}

#[test]
fn tokens_bound_to_a_pod_or_secret_die_with_it() {
    let s = server_with_default_account();
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "sa-view",
        "--clusterrole=view",
        "--serviceaccount=default:default",
    ]);
    s.kubectl_ok(&["run", "p", "--image=nginx"]);
    s.kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=a=b"]);
    let pod = s.kubectl_json(&["get", "pod", "p"]);
    let pod_uid = pod["metadata"]["uid"].as_str().unwrap().to_owned();
    let works = |token: &str| {
        s.kubectl(&["--token", token, "get", "configmaps"])
            .status
            .success()
    };
    let token = |args: &[&str]| {
        s.kubectl_ok(&[&["create", "token", "default"][..], args].concat())
            .trim()
            .to_owned()
    };

    // Bound to the Pod (kubectl's --bound-object-*): kube's claims name it.
    let to_pod = token(&[
        "--bound-object-kind=Pod",
        "--bound-object-name=p",
        &format!("--bound-object-uid={pod_uid}"),
    ]);
    let claims = jwt_part(&to_pod, 1);
    assert_eq!(
        claims["kubernetes.io"]["pod"],
        serde_json::json!({"name": "p", "uid": pod_uid})
    );
    assert!(works(&to_pod));
    // kube's `ServiceAccountInfo.UserInfo`: the Pod and the token's id in the user's extra.
    let who = s.kubectl_json(&["--token", &to_pod, "auth", "whoami"]);
    assert_eq!(
        who["status"]["userInfo"]["extra"],
        serde_json::json!({
            "authentication.kubernetes.io/credential-id": [format!("JTI={}", claims["jti"].as_str().unwrap())],
            "authentication.kubernetes.io/pod-name": ["p"],
            "authentication.kubernetes.io/pod-uid": [pod_uid],
        }),
        "{who}"
    );
    let to_secret = token(&["--bound-object-kind=Secret", "--bound-object-name=s"]);
    let secret_uid = s.kubectl_json(&["get", "secret", "s"])["metadata"]["uid"].clone();
    assert_eq!(
        jwt_part(&to_secret, 1)["kubernetes.io"]["secret"]["uid"],
        secret_uid
    );
    assert!(works(&to_secret));
    let unbound = token(&[]);

    // kube's refusals: a kind that cannot be bound (400), a missing object (404), a stale uid (409).
    let refused = |args: &[&str], want: &str| {
        let out = s.kubectl(&[&["create", "token", "default"][..], args].concat());
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
    };
    let body = |r: serde_json::Value| {
        s.http().post_json(
            "/api/v1/namespaces/default/serviceaccounts/default/token",
            &serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                "spec": {"boundObjectRef": r}}),
        )
    };
    let r = body(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );
    refused(
        &["--bound-object-kind=Pod", "--bound-object-name=nope"],
        "pods \"nope\" not found",
    );
    refused(
        &[
            "--bound-object-kind=Pod",
            "--bound-object-name=p",
            "--bound-object-uid=0000",
        ],
        "the UID in the bound object reference (0000) does not match the UID in record",
    );

    // Deleting the Pod ends its token (the fake kubelet is not loaded: no finalizer holds it);
    // the Secret's and the unbound token still work, until the Secret goes too.
    s.kubectl_ok(&["delete", "pod", "p", "--wait=false"]);
    poll(
        "the pod-bound token refused",
        Duration::from_secs(10),
        || (!works(&to_pod)).then_some(()),
    )
    .unwrap();
    assert!(works(&to_secret) && works(&unbound));
    s.kubectl_ok(&["delete", "secret", "s"]);
    poll(
        "the secret-bound token refused",
        Duration::from_secs(10),
        || (!works(&to_secret)).then_some(()),
    )
    .unwrap();
    assert!(works(&unbound));
}

/// Legacy token Secrets, as kube's token controller fills them: a
/// `kubernetes.io/service-account-token` Secret naming an account gets a token (issuer
/// `kubernetes/serviceaccount`, kube's legacy claims), the cluster CA and the namespace; the token
/// authenticates as the account while the Secret holds it and is not labelled invalid, and its use
/// is stamped on the Secret; a Secret for an account that does not exist, and the Secrets of an
/// account that is deleted, are deleted.
#[test]
fn legacy_token_secrets_are_populated_and_authenticate() {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let s = server_with_default_account();
    s.kubectl_ok(&["create", "serviceaccount", "robot"]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "robot-view",
        "--clusterrole=view",
        "--serviceaccount=default:robot",
    ]);
    let sa_uid = s.kubectl_json(&["get", "sa", "robot"])["metadata"]["uid"].clone();
    let secret = |name: &str, account: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  annotations:\n    \
             kubernetes.io/service-account.name: {account}\ntype: kubernetes.io/service-account-token\n"
        )
    };
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &secret("robot-token", "robot"));
    assert!(out.status.success(), "{out:?}");
    let filled = poll("the token secret filled", Duration::from_secs(10), || {
        let v = s.kubectl_json(&["get", "secret", "robot-token"]);
        v["data"]["token"].is_string().then_some(v)
    })
    .unwrap();
    let field = |k: &str| {
        String::from_utf8(b64.decode(filled["data"][k].as_str().unwrap()).unwrap()).unwrap()
    };
    assert_eq!(field("namespace"), "default");
    assert_eq!(Some(field("ca.crt")), s.ca_pem, "ca.crt is the cluster CA");
    assert_eq!(
        filled["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        sa_uid
    );
    let token = field("token");
    // kube's LegacyClaims (pkg/serviceaccount/legacy.go): no audience, no expiry.
    let claims = jwt_part(&token, 1);
    assert_eq!(
        claims,
        serde_json::json!({
            "iss": "kubernetes/serviceaccount",
            "kubernetes.io/serviceaccount/namespace": "default",
            "kubernetes.io/serviceaccount/secret.name": "robot-token",
            "kubernetes.io/serviceaccount/service-account.name": "robot",
            "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
            "sub": "system:serviceaccount:default:robot",
        })
    );
    let works = |token: &str| {
        s.kubectl(&["--token", token, "get", "configmaps"])
            .status
            .success()
    };
    assert!(works(&token));
    let who = s.kubectl_json(&["--token", &token, "auth", "whoami"]);
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:robot"
    );
    // Its use is stamped on the Secret (kube's legacy-token-last-used, today in UTC).
    let today = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .unwrap();
    let today = String::from_utf8_lossy(&today.stdout).trim().to_owned();
    poll("last-used stamped", Duration::from_secs(10), || {
        let v = s.kubectl_json(&["get", "secret", "robot-token"]);
        let used = v["metadata"]["labels"]["kubernetes.io/legacy-token-last-used"].clone();
        (used == today.as_str()).then_some(())
    })
    .unwrap();
    // Labelled invalid: refused until the label goes (kube's legacy-token-invalid-since).
    s.kubectl_ok(&[
        "label",
        "secret",
        "robot-token",
        "kubernetes.io/legacy-token-invalid-since=2026-01-01",
    ]);
    assert!(!works(&token));
    s.kubectl_ok(&[
        "label",
        "secret",
        "robot-token",
        "kubernetes.io/legacy-token-invalid-since-",
    ]);
    assert!(works(&token));
    // A token the Secret no longer holds is refused (kube: "does not match server's copy").
    let other = s.kubectl_stdin(&["apply", "-f", "-"], &secret("robot-token-2", "robot"));
    assert!(other.status.success(), "{other:?}");
    let second = poll("the second secret filled", Duration::from_secs(10), || {
        let v = s.kubectl_json(&["get", "secret", "robot-token-2"]);
        v["data"]["token"].as_str().map(str::to_owned)
    })
    .unwrap();
    let second = String::from_utf8(b64.decode(second).unwrap()).unwrap();
    assert!(works(&second));
    let patch = serde_json::json!({"data": {"token": b64.encode(&token)}}).to_string();
    s.kubectl_ok(&["patch", "secret", "robot-token-2", "-p", &patch]);
    assert!(!works(&second), "a token its Secret no longer holds");
    // A Secret naming an account that does not exist is deleted.
    let ghost = s.kubectl_stdin(&["apply", "-f", "-"], &secret("ghost-token", "ghost"));
    assert!(ghost.status.success(), "{ghost:?}");
    poll(
        "the ghost's secret deleted",
        Duration::from_secs(10),
        || {
            (!s.kubectl(&["get", "secret", "ghost-token"])
                .status
                .success())
            .then_some(())
        },
    )
    .unwrap();
    // Deleting the account deletes its token Secrets; the token stops working.
    s.kubectl_ok(&["delete", "serviceaccount", "robot"]);
    poll(
        "the account's secrets deleted",
        Duration::from_secs(10),
        || {
            let out = s.kubectl_ok(&["get", "secrets", "-o", "name"]);
            (!out.contains("robot-token")).then_some(())
        },
    )
    .unwrap();
    assert!(!works(&token));
}

/// kube's ServiceAccount and DefaultTolerationSeconds admission on a Pod's create, in the order
/// users follow: a namespace, then at once a Pod in it (its `default` account may be a moment
/// behind).
#[test]
fn pods_get_their_account_token_volume_and_default_tolerations() {
    let s = Server::start().unwrap();
    let pod = |name: &str, extra: &str| {
        format!(
            r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "{name}"}},
              "spec": {{"containers": [{{"name": "c", "image": "nginx"}}],
                        "initContainers": [{{"name": "i", "image": "busybox"}}] {extra}}}}}"#
        )
    };
    s.kubectl_ok(&["create", "namespace", "fresh"]);
    // Its `default` account deleted (the controller makes it again): the Pod waits for it.
    poll("fresh's default account", Duration::from_secs(30), || {
        has_default(&s, "fresh")
    })
    .unwrap();
    s.kubectl_ok(&["delete", "serviceaccount", "default", "-n", "fresh"]);
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(s.kubectl_stdin(&["create", "-n", "fresh", "-f", "-"], &pod("web", "")));
    let p = s.kubectl_json(&["get", "pod", "web", "-n", "fresh"]);
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    let vols = p["spec"]["volumes"].as_array().unwrap();
    let name = vols[0]["name"].as_str().unwrap();
    assert!(name.starts_with("kube-api-access-"), "{p}");
    let sources = &vols[0]["projected"]["sources"];
    assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
    assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(
        sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );
    for c in ["containers", "initContainers"] {
        assert_eq!(
            p["spec"][c][0]["volumeMounts"],
            serde_json::json!([{"name": name, "readOnly": true,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]),
            "{c}"
        );
    }
    let keys: Vec<&str> = p["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable"
        ]
    );
    assert_eq!(p["spec"]["tolerations"][0]["tolerationSeconds"], 300);
    // kubectl replace of the manifest as written (with the account, which admission named):
    // the tolerations come back on the update, the volume does not (it is part of the spec,
    // and a Pod's spec is immutable, in kube the same).
    let out = s.kubectl_stdin(
        &["replace", "-n", "fresh", "-f", "-"],
        &pod(
            "web",
            r#", "serviceAccountName": "default", "serviceAccount": "default""#,
        ),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("pod updates may not change fields"), "{err}");
    assert!(
        err.contains("(changed: containers, initContainers, volumes)"),
        "the volume and its mounts are the change: {err}"
    );

    // An account that does not exist: refused.
    let out = s.kubectl_stdin(
        &["create", "-f", "-"],
        &pod("ghost", r#", "serviceAccountName": "ghost""#),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"pods "ghost" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found"#),
        "{err}"
    );
    // Opting out, on the Pod or on its account.
    ok(s.kubectl_stdin(
        &["create", "-f", "-"],
        &pod("quiet", r#", "automountServiceAccountToken": false"#),
    ));
    let p = s.kubectl_json(&["get", "pod", "quiet"]);
    assert!(p["spec"]["volumes"].is_null(), "{p}");
    ok(s.kubectl_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
            "automountServiceAccountToken": false, "secrets": [{"name": "allowed"}],
            "imagePullSecrets": [{"name": "registry"}]}"#,
    ));
    ok(s.kubectl_stdin(
        &["create", "-f", "-"],
        &pod("strict", r#", "serviceAccountName": "strict""#),
    ));
    let p = s.kubectl_json(&["get", "pod", "strict"]);
    assert!(p["spec"]["volumes"].is_null(), "{p}");
    assert_eq!(
        p["spec"]["imagePullSecrets"],
        serde_json::json!([{"name": "registry"}])
    );
    // Its Pods may use only the Secrets it lists.
    let out = s.kubectl_stdin(
        &["create", "-f", "-"],
        &pod(
            "leaky",
            r#", "serviceAccountName": "strict", "volumes": [{"name": "s", "secret": {"secretName": "other"}}]"#,
        ),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"volume with secret.secretName=\"other\" is not allowed because service account strict does not reference that secret"#)
            || err.contains(r#"volume with secret.secretName="other" is not allowed because service account strict does not reference that secret"#),
        "{err}"
    );
}
