//! Client certificates (kube's x509 authenticator), end to end: certificates made by `openssl` as
//! kube's documentation makes them, used by the real kubectl against the real binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use serde_json::json;
use turtles_tests::Server;

fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req` with a new P-256 key (written to `key`) for `subject`; `args` say what it makes
/// (`-new`: a CSR, `-x509`: a self-signed certificate), written to `out`.
fn new_key(key: &Path, subject: &str, out: &Path, args: &[&str]) {
    let (key, out) = (key.to_str().unwrap(), out.to_str().unwrap());
    let mut all = vec![
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        key,
        "-subj",
        subject,
        "-out",
        out,
    ];
    all.extend(args);
    openssl(&all);
}

/// A key and a client certificate for `subject`, signed by `ca` (its `.crt` and `.key`);
/// returns the certificate's and the key's paths.
fn client_cert(dir: &Path, name: &str, subject: &str, ca: (&Path, &Path)) -> (PathBuf, PathBuf) {
    signed(
        dir,
        name,
        subject,
        ca,
        Some("extendedKeyUsage=clientAuth\n"),
    )
}

/// Like [`client_cert`]; without `extensions` openssl makes an X.509 v1 certificate.
fn signed(
    dir: &Path,
    name: &str,
    subject: &str,
    ca: (&Path, &Path),
    extensions: Option<&str>,
) -> (PathBuf, PathBuf) {
    let (key, csr, crt, ext) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.csr")),
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.ext")),
    );
    new_key(&key, subject, &csr, &["-new"]);
    let (csr, ca_crt, ca_key, crt_s, ext_s) = (
        csr.to_str().unwrap(),
        ca.0.to_str().unwrap(),
        ca.1.to_str().unwrap(),
        crt.to_str().unwrap(),
        ext.to_str().unwrap(),
    );
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca_crt,
        "-CAkey",
        ca_key,
        "-set_serial",
        "4242",
        "-days",
        "1",
        "-out",
        crt_s,
    ];
    if let Some(e) = extensions {
        std::fs::write(&ext, e).unwrap();
        args.extend(["-extfile", ext_s]);
    }
    openssl(&args);
    (crt, key)
}

/// A CA of its own (not the host's).
fn other_ca(dir: &Path) -> (PathBuf, PathBuf) {
    let (crt, key) = (dir.join("other-ca.crt"), dir.join("other-ca.key"));
    new_key(&key, "/CN=other-ca", &crt, &["-x509", "-days", "1"]);
    (crt, key)
}

/// A kubeconfig for `s` whose user presents `cert` (and a bearer token, if given).
fn kubeconfig(s: &Server, name: &str, cert: (&Path, &Path), token: Option<&str>) -> PathBuf {
    let b64 =
        |p: &Path| base64::engine::general_purpose::STANDARD.encode(std::fs::read(p).unwrap());
    let ca = base64::engine::general_purpose::STANDARD.encode(s.ca_pem.as_deref().unwrap());
    let token = token
        .map(|t| format!("    token: {t}\n"))
        .unwrap_or_default();
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: {name}\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n{token}contexts:\n- name: t\n  context:\n    cluster: t\n    user: {name}\n    namespace: default\ncurrent-context: t\n",
        s.url,
        b64(cert.0),
        b64(cert.1)
    );
    let path = s.data_dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path
}

/// kube's credential id of a certificate: `X509SHA256=` and the SHA-256 of its DER, in hex.
fn credential_id(crt: &Path) -> String {
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(crt)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = text.trim().rsplit('=').next().unwrap().replace(':', "");
    format!("X509SHA256={}", hex.to_lowercase())
}

/// kubectl failed, saying `needle`.
fn refused(out: &std::process::Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(needle), "{err}");
}

fn whoami(s: &Server, kubeconfig: &Path) -> serde_json::Value {
    let out = s.kubectl_with(kubeconfig, &["auth", "whoami", "-o", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The host's PKI folder, a folder for the test's own certificates, and the host's CA.
fn host_pki(s: &Server) -> (PathBuf, PathBuf, (PathBuf, PathBuf)) {
    let pki = s.data_dir.join("pki");
    let dir = s.data_dir.join("certs");
    std::fs::create_dir_all(&dir).unwrap();
    let ca = (pki.join("ca.crt"), pki.join("ca.key"));
    (pki, dir, ca)
}

/// POST a SelfSubjectReview with `client`: the status code and the answer.
fn review(s: &Server, client: &reqwest::blocking::Client) -> (u16, serde_json::Value) {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let r = client
        .post(format!(
            "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
            s.url
        ))
        .json(&review)
        .send()
        .unwrap();
    (r.status().as_u16(), r.json().unwrap())
}

#[test]
fn a_client_certificate_is_its_common_name_and_organizations() {
    let s = Server::start().unwrap();
    let (_, dir, ca) = host_pki(&s);
    let (crt, key) = client_cert(&dir, "alice", "/CN=alice/O=dev/O=ops", (&ca.0, &ca.1));
    let alice = kubeconfig(&s, "alice", (&crt, &key), None);

    // Who the certificate says, as kube's CommonNameUserConversion makes it.
    let me = whoami(&s, &alice);
    let info = &me["status"]["userInfo"];
    assert_eq!(info["username"], "alice", "{me}");
    assert_eq!(
        info["groups"],
        json!(["dev", "ops", "system:authenticated"])
    );
    assert_eq!(
        info["extra"]["authentication.kubernetes.io/credential-id"],
        json!([credential_id(&crt)])
    );
    assert!(info.get("uid").is_none(), "{info}");

    // Authorized as that user and those groups.
    let out = s.kubectl_with(&alice, &["get", "configmaps"]);
    refused(
        &out,
        "User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"",
    );
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "ops-view",
        "--clusterrole=view",
        "--group=ops",
        "-n",
        "default",
    ]);
    s.kubectl_ok(&["create", "configmap", "seen", "-n", "default"]);
    let names = turtles_tests::poll("alice may list", std::time::Duration::from_secs(10), || {
        let out = s.kubectl_with(&alice, &["get", "configmaps", "-o", "name"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    })
    .unwrap();
    assert!(names.contains("configmap/seen"), "{names}");

    // kube tries the certificate before the bearer token: with both, the request is alice's.
    let both = kubeconfig(&s, "both", (&crt, &key), Some(&s.token));
    assert_eq!(whoami(&s, &both)["status"]["userInfo"]["username"], "alice");

    // A certificate whose subject has no common name is no user: the token decides.
    let (crt_no_cn, key_no_cn) = client_cert(&dir, "nocn", "/O=system:masters", (&ca.0, &ca.1));
    let no_cn = kubeconfig(&s, "nocn", (&crt_no_cn, &key_no_cn), None);
    let out = s.kubectl_with(&no_cn, &["get", "configmaps"]);
    refused(&out, "Unauthorized");
    let no_cn_token = kubeconfig(&s, "nocn-token", (&crt_no_cn, &key_no_cn), Some(&s.token));
    assert_eq!(
        whoami(&s, &no_cn_token)["status"]["userInfo"]["username"],
        "admin"
    );

    // A certificate from a CA the host does not trust authenticates nobody: 401, as in kube.
    let other = other_ca(&dir);
    let (crt_other, key_other) = client_cert(
        &dir,
        "mallory",
        "/CN=admin/O=system:masters",
        (&other.0, &other.1),
    );
    let mallory = kubeconfig(&s, "mallory", (&crt_other, &key_other), None);
    let out = s.kubectl_with(&mallory, &["get", "configmaps"]);
    refused(&out, "Unauthorized");
}

/// A client that always presents `cert` (rustls sends it whatever CAs the server names).
fn presenting(s: &Server, cert: (&Path, &Path)) -> reqwest::blocking::Client {
    presenting_over(s, cert, reqwest::tls::Version::TLS_1_3)
}

/// Like [`presenting`], speaking TLS `version` at most.
fn presenting_over(
    s: &Server,
    cert: (&Path, &Path),
    version: reqwest::tls::Version,
) -> reqwest::blocking::Client {
    let mut pem = std::fs::read(cert.0).unwrap();
    pem.extend(std::fs::read(cert.1).unwrap());
    reqwest::blocking::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(
            reqwest::Certificate::from_pem(s.ca_pem.as_deref().unwrap().as_bytes()).unwrap(),
        )
        .identity(reqwest::Identity::from_pem(&pem).unwrap())
        .max_tls_version(version)
        .build()
        .unwrap()
}

#[test]
fn a_certificate_that_does_not_verify_gets_kubes_401() {
    let s = Server::start().unwrap();
    let (_, dir, ca) = host_pki(&s);
    let other = other_ca(&dir);
    let (crt, key) = client_cert(
        &dir,
        "mallory",
        "/CN=admin/O=system:masters",
        (&other.0, &other.1),
    );
    let (code, status) = review(&s, &presenting(&s, (&crt, &key)));
    assert_eq!(code, 401);
    assert_eq!(status["reason"], "Unauthorized", "{status}");
    // The same client with the host's CA behind its certificate is who it says.
    let (crt, key) = client_cert(&dir, "erin", "/CN=erin", (&ca.0, &ca.1));
    let (code, me) = review(&s, &presenting(&s, (&crt, &key)));
    assert_eq!(code, 201);
    assert_eq!(me["status"]["userInfo"]["username"], "erin", "{me}");
    // TLS 1.2 proves the key its own way (a signature over the handshake's messages).
    let tls12 = presenting_over(&s, (&crt, &key), reqwest::tls::Version::TLS_1_2);
    let (code, me) = review(&s, &tls12);
    assert_eq!(code, 201);
    assert_eq!(me["status"]["userInfo"]["username"], "erin", "{me}");
}

#[test]
fn certificates_kube_would_not_take_leave_the_token_to_decide() {
    let s = Server::start().unwrap();
    let (pki, dir, ca) = host_pki(&s);
    // An X.509 v1 certificate (openssl without -extfile): the handshake completes, the chain is
    // refused (v3 is required), and the request is the token's, or 401 without one.
    let (crt, key) = signed(&dir, "v1", "/CN=victor", (&ca.0, &ca.1), None);
    let v1 = kubeconfig(&s, "v1", (&crt, &key), None);
    refused(&s.kubectl_with(&v1, &["auth", "whoami"]), "Unauthorized");
    let v1_token = kubeconfig(&s, "v1-token", (&crt, &key), Some(&s.token));
    assert_eq!(
        whoami(&s, &v1_token)["status"]["userInfo"]["username"],
        "admin"
    );
    // The host's own serving certificate is signed by the same CA, for servers only.
    let server = kubeconfig(
        &s,
        "server",
        (&pki.join("server.crt"), &pki.join("server.key")),
        None,
    );
    refused(
        &s.kubectl_with(&server, &["auth", "whoami"]),
        "Unauthorized",
    );
}

#[test]
fn client_ca_file_names_the_cas_client_certificates_chain_to() {
    let dir =
        std::env::temp_dir().join(format!("turtles-client-ca-{}", turtles_tests::uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let other = other_ca(&dir);
    let s = Server::start_with(&["--client-ca-file", other.0.to_str().unwrap()]).unwrap();
    let (crt, key) = client_cert(&dir, "carol", "/CN=carol/O=team", (&other.0, &other.1));
    let carol = kubeconfig(&s, "carol", (&crt, &key), None);
    let me = whoami(&s, &carol);
    assert_eq!(me["status"]["userInfo"]["username"], "carol", "{me}");
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        json!(["team", "system:authenticated"])
    );
    // The host's own CA is no longer trusted for client certificates.
    let pki = s.data_dir.join("pki");
    let (crt, key) = client_cert(
        &dir,
        "dave",
        "/CN=dave",
        (&pki.join("ca.crt"), &pki.join("ca.key")),
    );
    let dave = kubeconfig(&s, "dave", (&crt, &key), None);
    let out = s.kubectl_with(&dave, &["auth", "whoami"]);
    refused(&out, "Unauthorized");
    // Token clients are served as before.
    assert!(s
        .kubectl_ok(&["get", "ns", "-o", "name"])
        .contains("namespace/default"));
    // `turtles kubeconfig --client-cert` would sign with a CA this host does not trust: refused.
    let out = Command::new(turtles_tests::turtles_bin())
        .args(["kubeconfig", "--data-dir"])
        .arg(&s.data_dir)
        .args(["--user", "erin", "--client-cert"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not verify client certificates"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // And the CSR signer is off: an approved request stays unsigned (kube's controller-manager
    // needs its own signing flags for that too).
    assert!(!s.kubectl_ok(&["get", "controllers"]).contains("csrsigning"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CertificateSigningRequest for `subject` (a new key in `dir`) with these usages; returns the
/// manifest and the key's path.
fn csr_manifest(
    dir: &Path,
    name: &str,
    subject: &str,
    usages: &[&str],
) -> (serde_json::Value, PathBuf) {
    let (key, csr) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.csr")),
    );
    new_key(&key, subject, &csr, &["-new"]);
    let request = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&csr).unwrap());
    let manifest = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": request,
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": usages,
            "expirationSeconds": 86400,
            // Not the requester's to say: the server fills it in.
            "username": "mallory",
        },
    });
    (manifest, key)
}

/// The CSR once `done` holds for it (the host's signer answers within seconds).
fn csr_when(
    s: &Server,
    name: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    turtles_tests::poll(
        &format!("csr {name}"),
        std::time::Duration::from_secs(15),
        || {
            let v = s.kubectl_json(&["get", "csr", name, "-o", "json"]);
            done(&v).then_some(v)
        },
    )
    .unwrap()
}

fn condition<'a>(csr: &'a serde_json::Value, ty: &str) -> Option<&'a serde_json::Value> {
    csr["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

#[test]
fn an_approved_csr_is_signed_by_the_host_and_its_certificate_authenticates() {
    let s = Server::start().unwrap();
    let (_, dir, ca) = host_pki(&s);
    let admin = s.kubectl_json(&["auth", "whoami", "-o", "json"]);
    let admin_name = admin["status"]["userInfo"]["username"].clone();

    // Created by the admin: pending, and the admin's whatever the body said.
    let (manifest, key) = csr_manifest(&dir, "alice", "/CN=alice/O=dev/O=ops", &["client auth"]);
    let out = s.kubectl_stdin(&["create", "-f", "-"], &manifest.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created = s.kubectl_json(&["get", "csr", "alice", "-o", "json"]);
    assert_eq!(created["spec"]["username"], admin_name, "{created}");
    assert_eq!(created["status"], json!({}), "{created}");
    let table = s.kubectl_ok(&["get", "csr", "alice"]);
    assert!(
        table.contains("Pending") && table.contains("24h"),
        "{table}"
    );

    // bob may read and update CSRs, approval included, but may not approve for this signer.
    let (bob, _) = s.mint("bob", &[]).unwrap();
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "csr-user",
        "--verb=get,list,create,update,patch",
        "--resource=certificatesigningrequests,certificatesigningrequests/approval",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "bob-csr",
        "--clusterrole=csr-user",
        "--user=bob",
    ]);
    refused(
        &s.kubectl_with(&bob, &["certificate", "approve", "alice"]),
        "certificatesigningrequests.certificates.k8s.io \"alice\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\"",
    );
    assert!(condition(
        &s.kubectl_json(&["get", "csr", "alice", "-o", "json"]),
        "Approved"
    )
    .is_none());

    // Bound to kube's approver role for this signer, bob approves (kubectl PUTs /approval);
    // the host's signer issues the certificate.
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "bob-approves",
        "--clusterrole=system:certificates.k8s.io:kube-apiserver-client-approver",
        "--user=bob",
    ]);
    let out = s.kubectl_with(&bob, &["certificate", "approve", "alice"]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("approved"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let issued = csr_when(&s, "alice", |v| v["status"]["certificate"].is_string());
    let approved = condition(&issued, "Approved").unwrap();
    assert_eq!(approved["reason"], "KubectlApprove");
    assert!(approved["lastTransitionTime"].is_string(), "{issued}");
    assert!(s
        .kubectl_ok(&["get", "csr", "alice"])
        .contains("Approved,Issued"));
    let crt = dir.join("alice.crt");
    let pem = base64::engine::general_purpose::STANDARD
        .decode(issued["status"]["certificate"].as_str().unwrap())
        .unwrap();
    std::fs::write(&crt, &pem).unwrap();
    // A client certificate of the host's CA, as long as asked (a day, less the 5 minutes it
    // is backdated).
    openssl(&[
        "verify",
        "-CAfile",
        ca.0.to_str().unwrap(),
        "-purpose",
        "sslclient",
        crt.to_str().unwrap(),
    ]);
    let ends_within = |secs: &str| {
        !Command::new("openssl")
            .args(["x509", "-noout", "-checkend", secs, "-in"])
            .arg(&crt)
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(!ends_within("85000") && ends_within("86400"));

    // kubectl with it is alice, in dev and ops.
    let alice = kubeconfig(&s, "alice", (&crt, &key), None);
    let me = whoami(&s, &alice);
    assert_eq!(me["status"]["userInfo"]["username"], "alice", "{me}");
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        json!(["dev", "ops", "system:authenticated"])
    );

    // A usage a client certificate may not have: Failed, not issued.
    let (srv, _) = csr_manifest(&dir, "srv", "/CN=srv", &["client auth", "server auth"]);
    s.kubectl_stdin(&["create", "-f", "-"], &srv.to_string());
    s.kubectl_ok(&["certificate", "approve", "srv"]);
    let failed = csr_when(&s, "srv", |v| condition(v, "Failed").is_some());
    let f = condition(&failed, "Failed").unwrap();
    assert_eq!(f["reason"], "SignerValidationFailure");
    assert_eq!(
        f["message"],
        "invalid usage for client certificate: server auth"
    );
    assert!(failed["status"].get("certificate").is_none(), "{failed}");
    assert!(s
        .kubectl_ok(&["get", "csr", "srv"])
        .contains("Approved,Failed"));

    // Denied: never signed. (The signer takes requests in order: once a later one is issued,
    // the denied one has been looked at.)
    let (carol, _) = csr_manifest(&dir, "carol", "/CN=carol", &["client auth"]);
    s.kubectl_stdin(&["create", "-f", "-"], &carol.to_string());
    s.kubectl_ok(&["certificate", "deny", "carol"]);
    let (dave, _) = csr_manifest(&dir, "dave", "/CN=dave", &["client auth"]);
    s.kubectl_stdin(&["create", "-f", "-"], &dave.to_string());
    s.kubectl_ok(&["certificate", "approve", "dave"]);
    csr_when(&s, "dave", |v| v["status"]["certificate"].is_string());
    let denied = s.kubectl_json(&["get", "csr", "carol", "-o", "json"]);
    assert_eq!(
        condition(&denied, "Denied").unwrap()["reason"],
        "KubectlDeny"
    );
    assert!(denied["status"].get("certificate").is_none(), "{denied}");
    refused(
        &s.kubectl(&["certificate", "approve", "carol"]),
        "is already Denied",
    );

    // Nobody gets system:masters through this signer, not even the admin.
    let (masters, _) = csr_manifest(&dir, "root", "/CN=root/O=system:masters", &["client auth"]);
    refused(
        &s.kubectl_stdin(&["create", "-f", "-"], &masters.to_string()),
        "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
    );

    // /approval is read and written, never deleted.
    let http = s.http();
    let approval = "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval";
    assert_eq!(http.get(approval).json()["metadata"]["name"], "alice");
    turtles_tests::assert_status(&http.delete(approval), 405, "MethodNotAllowed");
    // Discovery lists it.
    let resources = s.kubectl_ok(&[
        "api-resources",
        "--api-group=certificates.k8s.io",
        "-o",
        "wide",
    ]);
    assert!(
        resources.contains("certificatesigningrequests"),
        "{resources}"
    );
    let list = http.get("/apis/certificates.k8s.io/v1").json();
    assert!(
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "certificatesigningrequests/approval"),
        "{list}"
    );
}

#[test]
fn turtles_kubeconfig_client_cert_authenticates_as_the_user_and_groups() {
    let s = Server::start().unwrap();
    let mint = |extra: &[&str]| {
        Command::new(turtles_tests::turtles_bin())
            .args(["kubeconfig", "--data-dir"])
            .arg(&s.data_dir)
            .args(["--user", "erin", "--group", "dev", "--group", "ops"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = mint(&["--client-cert"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("client-certificate-data: ")
            && text.contains("client-key-data: ")
            && !text.contains("token:"),
        "{text}"
    );
    let path = s.data_dir.join("erin.kubeconfig");
    std::fs::write(&path, &text).unwrap();
    let me = whoami(&s, &path);
    let info = &me["status"]["userInfo"];
    assert_eq!(info["username"], "erin", "{me}");
    assert_eq!(
        info["groups"],
        json!(["dev", "ops", "system:authenticated"])
    );
    assert!(
        info["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .unwrap()
            .starts_with("X509SHA256=")
    );
    // A certificate cannot be revoked: the two flags do not go together.
    let out = mint(&["--client-cert", "--revoke"]);
    assert!(!out.status.success());
    // A user name YAML would read as something else stays a string in the kubeconfig.
    for odd in ["true", "123", "a: b"] {
        let (path, _) = s.mint(odd, &[]).unwrap();
        assert_eq!(whoami(&s, &path)["status"]["userInfo"]["username"], odd);
    }
}

#[test]
fn cluster_signing_flags_give_the_signer_the_client_ca() {
    let dir = std::env::temp_dir().join(format!("turtles-signing-{}", turtles_tests::uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let other = other_ca(&dir);
    let (crt, key) = (other.0.to_str().unwrap(), other.1.to_str().unwrap());
    let s = Server::start_with(&[
        "--client-ca-file",
        crt,
        "--cluster-signing-cert-file",
        crt,
        "--cluster-signing-key-file",
        key,
    ])
    .unwrap();
    let (manifest, key) = csr_manifest(&dir, "frank", "/CN=frank/O=qa", &["client auth"]);
    let out = s.kubectl_stdin(&["create", "-f", "-"], &manifest.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.kubectl_ok(&["certificate", "approve", "frank"]);
    let issued = csr_when(&s, "frank", |v| v["status"]["certificate"].is_string());
    let cert = dir.join("frank.crt");
    std::fs::write(
        &cert,
        base64::engine::general_purpose::STANDARD
            .decode(issued["status"]["certificate"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    // Issued by the operator's CA, and the host takes it.
    openssl(&[
        "verify",
        "-CAfile",
        crt,
        "-purpose",
        "sslclient",
        cert.to_str().unwrap(),
    ]);
    let frank = kubeconfig(&s, "frank", (&cert, &key), None);
    let me = whoami(&s, &frank);
    assert_eq!(me["status"]["userInfo"]["username"], "frank", "{me}");
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        json!(["qa", "system:authenticated"])
    );
    let _ = std::fs::remove_dir_all(&dir);
}
