//! The certificate story end to end: the `certificate` and `issuer` guests (built by
//! `cargo xtask guests`) dropped into the real binary's controllers folder turn a Certificate
//! into a `kubernetes.io/tls` Secret signed by a CA Issuer, checked with the `openssl` CLI.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use turtles_tests::{guest, poll, Server};

const CRDS: [&str; 4] = [
    "certificates.cert-manager.io",
    "certificaterequests.cert-manager.io",
    "issuers.cert-manager.io",
    "clusterissuers.cert-manager.io",
];
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `openssl ARGS` in `dir`; it must succeed. Returns stdout and stderr together.
fn openssl(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("openssl could not run ({e}): install it (apt: openssl)"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "openssl {args:?} failed: {text}");
    text
}

fn get(s: &Server, path: &str) -> Option<Value> {
    let r = s.http().get(path);
    (r.status == 200).then(|| r.json())
}

fn ready(obj: &Value) -> Option<&Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

fn b64(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap_or_else(|| panic!("not a string: {v}")))
        .expect("base64")
}

const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const CERTS: &str = "/apis/cert-manager.io/v1/namespaces/default/certificates";
const REQUESTS: &str = "/apis/cert-manager.io/v1/namespaces/default/certificaterequests";

/// Poll until the Secret holds a tls.crt whose leaf has a SAN containing `dns`; returns it.
fn wait_secret_for(s: &Server, name: &str, dns: &str, dir: &Path) -> Value {
    let mut last = String::new();
    poll(
        &format!("Secret {name} with a certificate for {dns}"),
        DEADLINE,
        || {
            let secret = get(s, &format!("{SECRETS}/{name}"))?;
            let crt = b64(secret["data"].get("tls.crt")?);
            std::fs::write(dir.join("probe.pem"), &crt).unwrap();
            last = openssl(
                dir,
                &[
                    "x509",
                    "-in",
                    "probe.pem",
                    "-noout",
                    "-ext",
                    "subjectAltName",
                ],
            );
            last.contains(&format!("DNS:{dns}")).then_some(secret)
        },
    )
    .unwrap_or_else(|e| panic!("{e}; last SAN: {last}\n{}", s.log()))
}

#[test]
fn certificate_is_issued_by_a_ca_issuer_and_verifies_with_openssl() {
    let s = Server::start_with_controllers(&[]).unwrap();
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-examples/crds");
    for crd in CRDS {
        let file = crds.join(format!("{crd}.yaml"));
        s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    }
    for crd in CRDS {
        s.kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            &format!("crd/{crd}"),
        ]);
    }

    // A CA (ECDSA P-256, PKCS#8 key) made by openssl, in a kubernetes.io/tls Secret.
    let dir = s.data_dir.join("pki");
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=turtles-test-ca",
            "-days",
            "30",
        ],
    );
    let ca_key = std::fs::read_to_string(dir.join("ca.key")).unwrap();
    assert!(ca_key.contains("BEGIN PRIVATE KEY"), "not PKCS#8: {ca_key}");
    let (crt, key) = (dir.join("ca.crt"), dir.join("ca.key"));
    s.kubectl_ok(&[
        "create",
        "secret",
        "tls",
        "ca",
        "--cert",
        crt.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: ca\nspec:\n  ca:\n    secretName: ca\n",
    );
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: web\nspec:\n  secretName: web-tls\n  commonName: web.example.test\n  dnsNames: [web.example.test]\n  privateKey:\n    rotationPolicy: Never\n  issuerRef:\n    name: ca\n    kind: Issuer\n",
    );

    s.drop_controller("certificate", &guest("certificate"))
        .unwrap();
    s.drop_controller("issuer", &guest("issuer")).unwrap();
    s.drop_controller("issuer-ready", &guest("issuer-ready"))
        .unwrap();

    // The signed Secret appears.
    let secret = wait_secret_for(&s, "web-tls", "web.example.test", &dir);
    assert_eq!(secret["type"], "kubernetes.io/tls", "{secret}");
    let owner = &secret["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Certificate", "{secret}");
    assert_eq!(owner["name"], "web", "{secret}");
    assert_eq!(owner["controller"], true, "{secret}");
    std::fs::write(dir.join("leaf.pem"), b64(&secret["data"]["tls.crt"])).unwrap();
    std::fs::write(dir.join("tls.key"), b64(&secret["data"]["tls.key"])).unwrap();

    // It verifies against the CA, names the host, is a server certificate, and matches the key.
    let verify = openssl(&dir, &["verify", "-CAfile", "ca.crt", "leaf.pem"]);
    assert!(verify.contains("leaf.pem: OK"), "{verify}");
    let san = openssl(
        &dir,
        &[
            "x509",
            "-in",
            "leaf.pem",
            "-noout",
            "-ext",
            "subjectAltName",
        ],
    );
    assert!(san.contains("DNS:web.example.test"), "{san}");
    let usage = openssl(
        &dir,
        &[
            "x509",
            "-in",
            "leaf.pem",
            "-noout",
            "-ext",
            "keyUsage,extendedKeyUsage,basicConstraints",
        ],
    );
    // cert-manager's default usages: no extended key usage unless asked for.
    assert!(
        usage.contains("Digital Signature, Key Encipherment")
            && !usage.contains("Extended Key Usage")
            && usage.contains("CA:FALSE"),
        "{usage}"
    );
    let subject = openssl(
        &dir,
        &[
            "x509", "-in", "leaf.pem", "-noout", "-subject", "-nameopt", "RFC2253",
        ],
    );
    assert!(subject.contains("CN=web.example.test"), "{subject}");
    let cert_pub = openssl(&dir, &["x509", "-in", "leaf.pem", "-noout", "-pubkey"]);
    let key_pub = openssl(&dir, &["pkey", "-pubout", "-in", "tls.key"]);
    assert!(cert_pub.contains("BEGIN PUBLIC KEY"), "{cert_pub}");
    assert_eq!(cert_pub, key_pub, "the certificate is not for tls.key");

    // The Certificate is Ready, through its status subresource.
    let cert = poll("Certificate web to be Ready", DEADLINE, || {
        get(&s, &format!("{CERTS}/web")).filter(|c| ready(c).is_some_and(|r| r["status"] == "True"))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert!(
        cert["status"]["notAfter"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{cert}"
    );
    let table = s.kubectl_ok(&["get", "certificate", "web"]);
    assert!(
        table.contains("True") && table.contains("web-tls"),
        "{table}"
    );

    // The request carries the CSR and the chain, never the private key, which has a Secret of
    // its own.
    let request = get(&s, &format!("{REQUESTS}/web-1")).expect("CertificateRequest web-1");
    let csr = String::from_utf8(b64(&request["spec"]["request"])).unwrap();
    assert!(csr.contains("BEGIN CERTIFICATE REQUEST"), "{csr}");
    assert!(!request.to_string().contains("PRIVATE KEY"));
    assert_eq!(ready(&request).unwrap()["status"], "True", "{request}");
    let chain = String::from_utf8(b64(&request["status"]["certificate"])).unwrap();
    assert_eq!(chain.matches("BEGIN CERTIFICATE").count(), 2, "{chain}");
    let key_secret = get(&s, &format!("{SECRETS}/web-key")).expect("Secret web-key");
    std::fs::write(dir.join("next.key"), b64(&key_secret["data"]["tls.key"])).unwrap();
    let next_pub = openssl(&dir, &["pkey", "-pubout", "-in", "next.key"]);
    assert_eq!(next_pub, key_pub, "web-key holds the key in use");

    // Both controllers run, each with only the permissions it uses.
    for name in ["certificate", "issuer", "issuer-ready"] {
        poll(&format!("{name} Running"), DEADLINE, || {
            get(&s, &format!("/apis/turtles.dev/v1/controllers/{name}"))
                .filter(|c| c["status"]["phase"] == "Running")
        })
        .unwrap();
    }
    let table = s.kubectl_ok(&["get", "controllers"]);
    for name in ["certificate", "issuer"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(name) && l.contains("Running")),
            "{table}"
        );
    }
    let can = |verb: &str, what: &str, who: &str| {
        let out = s.kubectl(&["auth", "can-i", verb, what, "--as", who]);
        String::from_utf8_lossy(&out.stdout).trim() == "yes"
    };
    assert!(can(
        "create",
        "certificaterequests.cert-manager.io",
        "system:controller:certificate"
    ));
    assert!(!can("get", "secrets", "system:controller:certificate"));
    assert!(can("get", "secrets", "system:controller:issuer"));
    assert!(!can("create", "secrets", "system:controller:issuer"));
    assert!(can(
        "get",
        "clusterissuers.cert-manager.io",
        "system:controller:issuer"
    ));
    assert!(can("get", "secrets", "system:controller:issuer-ready"));
    assert!(!can("create", "secrets", "system:controller:issuer-ready"));

    // A new DNS name: a new request and the Secret re-issued, with the same key
    // (rotationPolicy: Never).
    patch_certificate(
        &s,
        "web",
        r#"{"spec":{"dnsNames":["web.example.test","www.example.test"]}}"#,
    );
    let renewed = wait_secret_for(&s, "web-tls", "www.example.test", &dir);
    std::fs::write(dir.join("leaf2.pem"), b64(&renewed["data"]["tls.crt"])).unwrap();
    let verify = openssl(&dir, &["verify", "-CAfile", "ca.crt", "leaf2.pem"]);
    assert!(verify.contains("leaf2.pem: OK"), "{verify}");
    let cert_pub2 = openssl(&dir, &["x509", "-in", "leaf2.pem", "-noout", "-pubkey"]);
    assert_eq!(cert_pub2, key_pub);
    poll("Certificate web to be Ready again", DEADLINE, || {
        get(&s, &format!("{CERTS}/web")).filter(|c| ready(c).is_some_and(|r| r["status"] == "True"))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

/// A server with the certificate CRDs established and the `certificate` and `issuer` guests
/// loaded, and a folder for openssl's files.
fn story() -> (Server, std::path::PathBuf) {
    let s = Server::start_with_controllers(&[]).unwrap();
    apply_crds(&s, &CRDS);
    s.drop_controller("certificate", &guest("certificate"))
        .unwrap();
    s.drop_controller("issuer", &guest("issuer")).unwrap();
    s.drop_controller("issuer-ready", &guest("issuer-ready"))
        .unwrap();
    let dir = s.data_dir.join("pki");
    std::fs::create_dir_all(&dir).unwrap();
    (s, dir)
}

/// Poll `kubectl get WHAT -o json` until its Ready condition has this status and reason.
fn wait_ready(s: &Server, what: &[&str], status: &str, reason: &str) -> Value {
    let mut last = Value::Null;
    poll(
        &format!("{what:?}: Ready={status} reason {reason}"),
        DEADLINE,
        || {
            let mut args = vec!["get"];
            args.extend(what);
            args.extend(["-o", "json"]);
            let out = s.kubectl(&args);
            last = serde_json::from_slice(&out.stdout).ok()?;
            ready(&last)
                .filter(|c| c["status"] == status && c["reason"] == reason)
                .cloned()
        },
    )
    .unwrap_or_else(|e| panic!("{e}; last: {last}\n{}", s.log()))
}

/// A Certificate `NAME` for `NAME.example.test` from the issuer; waits for its Secret and
/// checks the chain with `openssl verify -CAfile CA_FILE`. Returns the Secret.
fn issue_and_verify(
    s: &Server,
    dir: &Path,
    name: &str,
    kind: &str,
    issuer: &str,
    ca_file: &str,
) -> Value {
    let extra = format!("  dnsNames: [{name}.example.test]\n");
    s.kubectl_apply(&certificate_yaml(name, kind, issuer, &extra));
    let dns = format!("{name}.example.test");
    let secret = wait_secret_for(s, &format!("{name}-tls"), &dns, dir);
    verify_secret(dir, &secret, &format!("{name}.pem"), ca_file);
    secret
}

/// `kubectl patch certificate NAME --type=merge -p PATCH`.
fn patch_certificate(s: &Server, name: &str, patch: &str) {
    s.kubectl_ok(&["patch", "certificate", name, "--type=merge", "-p", patch]);
}

fn certificate_yaml(name: &str, issuer_kind: &str, issuer: &str, extra: &str) -> String {
    format!(
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: {name}\nspec:\n  secretName: {name}-tls\n  issuerRef:\n    name: {issuer}\n    kind: {issuer_kind}\n{extra}"
    )
}

/// The story as cert-manager's docs tell it: a ClusterIssuer made from an RSA CA whose Secret
/// lives in the cluster resource namespace `cert-manager`, Issuers whose Ready condition says
/// what is wrong with their Secret, and a SelfSigned Issuer.
#[test]
fn cluster_issuer_self_signed_issuer_and_issuer_readiness() {
    let (s, dir) = story();
    s.kubectl_ok(&["create", "namespace", "cert-manager"]);
    // An issuer of another group is someone else's: its request is left alone.
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: foreign\nspec:\n  secretName: foreign-tls\n  dnsNames: [foreign.example.test]\n  issuerRef:\n    name: acme\n    group: example.com\n",
    );

    // The ClusterIssuer's Secret does not exist yet: it says so.
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: root\nspec:\n  ca:\n    secretName: root-ca\n",
    );
    let cond = wait_ready(&s, &["clusterissuer", "root"], "False", "ErrGetKeyPair");
    assert!(
        cond["message"].as_str().unwrap().contains("root-ca"),
        "{cond}"
    );
    make_ca(&dir, "root", &["rsa:2048"], &[]);
    ca_secret(&s, &dir, "root", "root-ca", "cert-manager");
    let cond = wait_ready(&s, &["clusterissuer", "root"], "True", "KeyPairVerified");
    assert_eq!(cond["message"], "Signing CA verified", "{cond}");
    let table = s.kubectl_ok(&["get", "clusterissuers"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("root ") && l.contains("True")),
        "{table}"
    );

    let secret = issue_and_verify(&s, &dir, "app", "ClusterIssuer", "root", "root.crt");
    let annotations = &secret["metadata"]["annotations"];
    assert_eq!(
        annotations["cert-manager.io/issuer-kind"], "ClusterIssuer",
        "{secret}"
    );
    assert_eq!(
        annotations["cert-manager.io/issuer-name"], "root",
        "{secret}"
    );
    let ca_crt = String::from_utf8(b64(&secret["data"]["ca.crt"])).unwrap();
    let root = std::fs::read_to_string(dir.join("root.crt")).unwrap();
    assert_eq!(ca_crt.trim(), root.trim(), "ca.crt is the CA");

    // An Issuer whose Secret holds no usable CA says so too.
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "not-a-ca",
        "--from-literal=tls.crt=nonsense",
        "--from-literal=tls.key=nonsense",
    ]);
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: broken\nspec:\n  ca:\n    secretName: not-a-ca\n",
    );
    wait_ready(&s, &["issuer", "broken"], "False", "ErrInvalidKeyPair");

    // A SelfSigned Issuer: the certificate is signed by its own key and is its own CA.
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: self\nspec:\n  selfSigned: {}\n",
    );
    wait_ready(&s, &["issuer", "self"], "True", "IsReady");
    s.kubectl_apply(&certificate_yaml(
        "selfie",
        "Issuer",
        "self",
        "  dnsNames: [selfie.example.test]\n",
    ));
    let secret = wait_secret_for(&s, "selfie-tls", "selfie.example.test", &dir);
    std::fs::write(dir.join("selfie-ca.pem"), b64(&secret["data"]["ca.crt"])).unwrap();
    verify_secret(&dir, &secret, "selfie.pem", "selfie-ca.pem");
    assert_eq!(
        b64(&secret["data"]["ca.crt"]),
        b64(&secret["data"]["tls.crt"])
    );

    // cert-manager's bootstrap: a self-signed CA certificate becomes the CA of a ca Issuer.
    s.kubectl_apply(&certificate_yaml(
        "boot-ca",
        "Issuer",
        "self",
        "  commonName: boot-ca\n  isCA: true\n",
    ));
    wait_ready(&s, &["certificate", "boot-ca"], "True", "Ready");
    let secret = get(&s, &format!("{SECRETS}/boot-ca-tls")).expect("boot-ca-tls");
    std::fs::write(dir.join("boot-ca.pem"), b64(&secret["data"]["tls.crt"])).unwrap();
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: boot\nspec:\n  ca:\n    secretName: boot-ca-tls\n",
    );
    issue_and_verify(&s, &dir, "booted", "Issuer", "boot", "boot-ca.pem");

    // By now every request of ours is signed; the foreign one was never touched.
    let foreign = get(&s, &format!("{REQUESTS}/foreign-1")).expect("request foreign-1");
    assert!(foreign["status"]["conditions"].is_null(), "{foreign}");
}

/// A CA made by `openssl req -x509 -newkey NEWKEY..`: `NAME.crt`, and `NAME.key` rewritten by
/// `openssl CONVERT.. -in` when given (e.g. to PKCS#1 or SEC1). Returns the key's PEM.
fn make_ca(dir: &Path, name: &str, newkey: &[&str], convert: &[&str]) -> String {
    let (crt, key) = (format!("{name}.crt"), format!("{name}.key"));
    let mut args = vec!["req", "-x509", "-nodes", "-newkey"];
    args.extend(newkey);
    let subj = format!("/CN={name}-ca");
    args.extend([
        "-keyout", &key, "-out", &crt, "-subj", &subj, "-days", "365",
    ]);
    openssl(dir, &args);
    if !convert.is_empty() {
        let mut args = convert.to_vec();
        let converted = format!("{key}.converted");
        args.extend(["-in", &key, "-out", &converted]);
        openssl(dir, &args);
        std::fs::rename(dir.join(&converted), dir.join(&key)).unwrap();
    }
    std::fs::read_to_string(dir.join(&key)).unwrap()
}

/// `kubectl create secret tls NAME` from `DIR/CA.crt` and `DIR/CA.key`, in `namespace`.
fn ca_secret(s: &Server, dir: &Path, ca: &str, name: &str, namespace: &str) {
    let (crt, key) = (dir.join(format!("{ca}.crt")), dir.join(format!("{ca}.key")));
    s.kubectl_ok(&[
        "create",
        "secret",
        "tls",
        name,
        "-n",
        namespace,
        "--cert",
        crt.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
}

/// The PEM `tls.crt` of a Secret, written to `DIR/FILE`; `openssl verify -CAfile CA` must pass.
fn verify_secret(dir: &Path, secret: &Value, file: &str, ca_file: &str) {
    std::fs::write(dir.join(file), b64(&secret["data"]["tls.crt"])).unwrap();
    let verify = openssl(dir, &["verify", "-CAfile", ca_file, file]);
    assert!(verify.contains(&format!("{file}: OK")), "{verify}");
}

/// Most CAs people have are RSA, made by `openssl req -x509 -newkey rsa:2048`; others are
/// ECDSA or Ed25519, and their keys come as PKCS#8, PKCS#1 or SEC1 PEM. Each signs.
#[test]
fn ca_keys_of_every_common_type_sign_and_verify_with_openssl() {
    let (s, dir) = story();
    let cas: [(&str, &[&str], &[&str], &str); 5] = [
        ("rsa8", &["rsa:2048"], &[], "BEGIN PRIVATE KEY"),
        (
            "rsa1",
            &["rsa:2048"],
            &["pkey", "-traditional"],
            "BEGIN RSA PRIVATE KEY",
        ),
        (
            "p256",
            &["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
            &["ec"],
            "BEGIN EC PRIVATE KEY",
        ),
        (
            "p384",
            &["ec", "-pkeyopt", "ec_paramgen_curve:secp384r1"],
            &[],
            "BEGIN PRIVATE KEY",
        ),
        ("ed25519", &["ed25519"], &[], "BEGIN PRIVATE KEY"),
    ];
    for (name, newkey, convert, pem) in cas {
        let key = make_ca(&dir, name, newkey, convert);
        assert!(key.contains(pem), "{name}: {key}");
        ca_secret(&s, &dir, name, &format!("{name}-ca"), "default");
        s.kubectl_apply(
            &format!("apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: {name}\nspec:\n  ca:\n    secretName: {name}-ca\n"),
        );
        s.kubectl_apply(
            &format!("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: {name}\nspec:\n  secretName: {name}-tls\n  dnsNames: [{name}.example.test]\n  usages: [digital signature, server auth]\n  issuerRef:\n    name: {name}\n"),
        );
    }
    for (name, ..) in cas {
        let secret = wait_secret_for(
            &s,
            &format!("{name}-tls"),
            &format!("{name}.example.test"),
            &dir,
        );
        let leaf = format!("{name}-leaf.pem");
        verify_secret(&dir, &secret, &leaf, &format!("{name}.crt"));
        // The extended key usage is there and, as RFC 5280 practice and cert-manager, not critical.
        let eku = openssl(
            &dir,
            &["x509", "-in", &leaf, "-noout", "-ext", "extendedKeyUsage"],
        );
        assert!(
            eku.contains("TLS Web Server Authentication"),
            "{name}: {eku}"
        );
        assert!(!eku.contains("critical"), "{name}: {eku}");
    }
}

fn controller(s: &Server, name: &str) -> Option<Value> {
    get(s, &format!("/apis/turtles.dev/v1/controllers/{name}"))
}

/// The `Watching` condition of a controller, once it says `status` and its message contains `text`.
fn watching(s: &Server, name: &str, status: &str, text: &str) -> Value {
    poll(
        &format!("controller {name}: Watching={status} mentioning {text:?}"),
        DEADLINE,
        || {
            let c = controller(s, name)?;
            let cond = c["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Watching")?
                .clone();
            (c["status"]["phase"] == "Running"
                && cond["status"] == status
                && cond["message"].as_str()?.contains(text))
            .then_some(cond)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()))
}

fn apply_crds(s: &Server, names: &[&str]) {
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-examples/crds");
    for crd in names {
        let file = crds.join(format!("{crd}.yaml"));
        s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    }
    for crd in names {
        s.kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            &format!("crd/{crd}"),
        ]);
    }
}

/// The order every user follows: the host with its controllers first, the CRDs afterwards. The
/// controllers wait for their kinds (and say so), start watching the moment the CRDs are
/// established, stop when a CRD goes and follow it when it comes back.
#[test]
fn controllers_started_before_their_crds_follow_the_crds_as_they_come_and_go() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("certificate", &guest("certificate"))
        .unwrap();
    s.drop_controller("issuer", &guest("issuer")).unwrap();
    let cond = watching(
        &s,
        "certificate",
        "False",
        "cert-manager.io/v1/certificates",
    );
    assert_eq!(cond["reason"], "ResourceNotServed", "{cond}");
    watching(
        &s,
        "issuer",
        "False",
        "cert-manager.io/v1/certificaterequests",
    );

    apply_crds(&s, &CRDS);
    watching(&s, "certificate", "True", "");
    watching(&s, "issuer", "True", "");

    let dir = s.data_dir.join("pki");
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=later-ca",
            "-days",
            "30",
        ],
    );
    let (crt, key) = (dir.join("ca.crt"), dir.join("ca.key"));
    s.kubectl_ok(&[
        "create",
        "secret",
        "tls",
        "ca",
        "--cert",
        crt.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: ca\nspec:\n  ca:\n    secretName: ca\n",
    );
    let cert = |name: &str, dns: &str| {
        format!("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: {name}\nspec:\n  secretName: {name}-tls\n  dnsNames: [{dns}]\n  issuerRef:\n    name: ca\n    kind: Issuer\n")
    };
    s.kubectl_apply(&cert("first", "first.example.test"));
    wait_secret_for(&s, "first-tls", "first.example.test", &dir);

    // The Certificate CRD goes: the certificate controller says so; then it comes back.
    s.kubectl_ok(&["delete", "crd", CRDS[0], "--wait=true"]);
    watching(&s, "certificate", "False", "no longer served");
    apply_crds(&s, &CRDS[..1]);
    watching(&s, "certificate", "True", "");
    s.kubectl_apply(&cert("second", "second.example.test"));
    wait_secret_for(&s, "second-tls", "second.example.test", &dir);
}

/// `openssl x509 -in FILE -noout ARGS..` in `dir`.
fn x509(dir: &Path, file: &str, args: &[&str]) -> String {
    let mut all = vec!["x509", "-in", file, "-noout"];
    all.extend(args);
    openssl(dir, &all)
}

/// Unix seconds of an RFC 3339 timestamp in a status field.
fn unix(v: &Value) -> i64 {
    let text = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    let out = Command::new("date")
        .args(["-u", "-d", text, "+%s"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("date cannot read {text}"))
}

/// Poll until the Certificate is Ready with `status.revision` at least `revision`.
fn wait_revision(s: &Server, name: &str, revision: u64) -> Value {
    let mut last = Value::Null;
    poll(
        &format!("Certificate {name} Ready at revision {revision}"),
        Duration::from_secs(90),
        || {
            last = get(s, &format!("{CERTS}/{name}"))?;
            (last["status"]["revision"].as_u64()? >= revision
                && ready(&last).is_some_and(|r| r["status"] == "True"))
            .then(|| last.clone())
        },
    )
    .unwrap_or_else(|e| panic!("{e}; last: {last}\n{}", s.log()))
}

/// Every field of cert-manager's Certificate that shapes the certificate, the key and the
/// Secret, for each key algorithm and encoding; and the status it reports.
#[test]
fn certificate_fields_key_algorithms_and_status() {
    let (s, dir) = story();
    make_ca(&dir, "ca", &["rsa:2048"], &[]);
    ca_secret(&s, &dir, "ca", "ca", "default");
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: ca\nspec:\n  ca:\n    secretName: ca\n",
    );
    // (name, privateKey, PEM header of tls.key, what `openssl x509 -text` says of the key)
    let keys = [
        (
            "rsa",
            "{}",
            "BEGIN RSA PRIVATE KEY",
            "Public-Key: (2048 bit)",
        ),
        (
            "rsa3072",
            "{algorithm: RSA, size: 3072, encoding: PKCS8}",
            "BEGIN PRIVATE KEY",
            "Public-Key: (3072 bit)",
        ),
        (
            "p256",
            "{algorithm: ECDSA}",
            "BEGIN EC PRIVATE KEY",
            "NIST CURVE: P-256",
        ),
        (
            "p384",
            "{algorithm: ECDSA, size: 384, encoding: PKCS8}",
            "BEGIN PRIVATE KEY",
            "NIST CURVE: P-384",
        ),
        (
            "ed25519",
            "{algorithm: Ed25519}",
            "BEGIN PRIVATE KEY",
            "ED25519",
        ),
    ];
    for (name, key, ..) in keys {
        s.kubectl_apply(&certificate_yaml(
            name,
            "Issuer",
            "ca",
            &format!("  dnsNames: [{name}.example.test]\n  privateKey: {key}\n"),
        ));
    }
    s.kubectl_apply(
        &certificate_yaml(
            "full",
            "Issuer",
            "ca",
            "  commonName: full.example.test\n  dnsNames: [full.example.test, www.example.test]\n  ipAddresses: [10.0.0.1, '::1']\n  uris: ['spiffe://cluster.local/ns/default/sa/web']\n  emailAddresses: [ops@example.test]\n  usages: [digital signature, key encipherment, server auth, client auth]\n  duration: 720h\n  secretTemplate:\n    labels: {team: web}\n    annotations: {owner: ops}\n",
        ),
    );
    s.kubectl_apply(&certificate_yaml(
        "sub-ca",
        "Issuer",
        "ca",
        "  commonName: sub-ca\n  isCA: true\n  privateKey: {algorithm: ECDSA}\n",
    ));

    for (name, _, header, text) in keys {
        let secret = wait_secret_for(
            &s,
            &format!("{name}-tls"),
            &format!("{name}.example.test"),
            &dir,
        );
        let file = format!("{name}.pem");
        verify_secret(&dir, &secret, &file, "ca.crt");
        let key = String::from_utf8(b64(&secret["data"]["tls.key"])).unwrap();
        assert!(
            key.starts_with(&format!("-----{header}-----")),
            "{name}: {key}"
        );
        let text_out = x509(&dir, &file, &["-text"]);
        assert!(text_out.contains(text), "{name}: {text_out}");
        std::fs::write(dir.join(format!("{name}.key")), &key).unwrap();
        let key_pub = openssl(&dir, &["pkey", "-pubout", "-in", &format!("{name}.key")]);
        assert_eq!(
            x509(&dir, &file, &["-pubkey"]),
            key_pub,
            "{name}: tls.key is not the certificate's"
        );
    }

    let secret = wait_secret_for(&s, "full-tls", "www.example.test", &dir);
    verify_secret(&dir, &secret, "full.pem", "ca.crt");
    let san = x509(&dir, "full.pem", &["-ext", "subjectAltName"]);
    for want in [
        "DNS:full.example.test",
        "DNS:www.example.test",
        "IP Address:10.0.0.1",
        "IP Address:0:0:0:0:0:0:0:1",
        "URI:spiffe://cluster.local/ns/default/sa/web",
        "email:ops@example.test",
    ] {
        assert!(san.contains(want), "{want}: {san}");
    }
    let subject = x509(&dir, "full.pem", &["-subject", "-nameopt", "RFC2253"]);
    assert!(subject.contains("CN=full.example.test"), "{subject}");
    let eku = x509(
        &dir,
        "full.pem",
        &["-ext", "extendedKeyUsage,keyUsage,basicConstraints"],
    );
    assert!(
        eku.contains("TLS Web Server Authentication, TLS Web Client Authentication")
            && !eku.contains("Extended Key Usage: critical")
            && eku.contains("Digital Signature, Key Encipherment")
            && eku.contains("CA:FALSE"),
        "{eku}"
    );
    let ca_crt = String::from_utf8(b64(&secret["data"]["ca.crt"])).unwrap();
    let ca = std::fs::read_to_string(dir.join("ca.crt")).unwrap();
    assert_eq!(ca_crt.trim(), ca.trim(), "ca.crt");
    assert_eq!(secret["metadata"]["labels"]["team"], "web", "{secret}");
    assert_eq!(
        secret["metadata"]["annotations"]["owner"], "ops",
        "{secret}"
    );
    let annotations = &secret["metadata"]["annotations"];
    assert_eq!(annotations["cert-manager.io/certificate-name"], "full");
    assert_eq!(
        annotations["cert-manager.io/common-name"],
        "full.example.test"
    );
    assert_eq!(
        annotations["cert-manager.io/alt-names"],
        "full.example.test,www.example.test"
    );
    assert_eq!(annotations["cert-manager.io/ip-sans"], "10.0.0.1,::1");

    // The status: Ready, the validity, the renewal time two thirds in, revision 1.
    let cert = wait_revision(&s, "full", 1);
    let st = &cert["status"];
    assert_eq!(st["revision"], 1, "{cert}");
    let cond = ready(&cert).unwrap();
    assert_eq!(cond["reason"], "Ready", "{cert}");
    assert_eq!(
        cond["message"], "Certificate is up to date and has not expired",
        "{cert}"
    );
    assert!(
        !st["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Issuing"),
        "Issuing is gone once issued: {cert}"
    );
    let (nb, na, rt) = (
        unix(&st["notBefore"]),
        unix(&st["notAfter"]),
        unix(&st["renewalTime"]),
    );
    assert_eq!(na - nb, 720 * 3600, "duration 720h: {cert}");
    assert_eq!(
        na - rt,
        240 * 3600,
        "renewBefore defaults to a third: {cert}"
    );
    let end = x509(&dir, "full.pem", &["-enddate"]);
    let end = end.trim().trim_start_matches("notAfter=");
    let out = Command::new("date")
        .args(["-u", "-d", end, "+%s"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        na.to_string(),
        "{end}"
    );

    // isCA: a CA certificate that may sign.
    let cert = wait_revision(&s, "sub-ca", 1);
    let secret = get(&s, &format!("{SECRETS}/sub-ca-tls")).expect("sub-ca-tls");
    verify_secret(&dir, &secret, "sub-ca.pem", "ca.crt");
    let bc = x509(&dir, "sub-ca.pem", &["-ext", "basicConstraints,keyUsage"]);
    assert!(
        bc.contains("CA:TRUE") && bc.contains("Certificate Sign"),
        "{bc} {cert}"
    );

    // kubectl shows cert-manager's columns.
    let table = s.kubectl_ok(&["get", "certificates"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "SECRET", "AGE"], "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("full ") && l.contains("True") && l.contains("full-tls")),
        "{table}"
    );
    let wide = s.kubectl_ok(&["get", "certificates", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "SECRET", "ISSUER", "STATUS", "AGE"],
        "{wide}"
    );
    assert!(
        wide.contains("Certificate is up to date and has not expired"),
        "{wide}"
    );

    // What cannot be issued says why, in the Ready condition.
    for (name, extra, says) in [
        (
            "p521",
            "  dnsNames: [a.example.test]\n  privateKey: {algorithm: ECDSA, size: 521}\n",
            "ECDSA key size 521 is not supported",
        ),
        (
            "bad-ip",
            "  ipAddresses: ['1.2.3']\n",
            "\"1.2.3\" is not an IP address",
        ),
    ] {
        s.kubectl_apply(&certificate_yaml(name, "Issuer", "ca", extra));
        let cond = wait_ready(&s, &["certificate", name], "False", "Failed");
        assert!(cond["message"].as_str().unwrap().contains(says), "{cond}");
    }
}

/// A certificate for a minute is renewed before it ends; a deleted Secret, a Secret with
/// someone else's certificate and a change of usages each lead to a new issuance. (A changed spec re-issues too:
/// `certificate_is_issued_by_a_ca_issuer_and_verifies_with_openssl`.)
#[test]
fn certificates_renew_and_repair_their_secret() {
    let (s, dir) = story();
    make_ca(
        &dir,
        "ca",
        &["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
        &[],
    );
    ca_secret(&s, &dir, "ca", "ca", "default");
    s.kubectl_apply(
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: ca\nspec:\n  ca:\n    secretName: ca\n",
    );
    // One minute, renewed 45 s before its end: 15 s after issuance.
    s.kubectl_apply(
        &certificate_yaml(
            "short",
            "Issuer",
            "ca",
            "  dnsNames: [short.example.test]\n  duration: 1m\n  renewBefore: 45s\n  privateKey: {algorithm: ECDSA}\n",
        ),
    );
    s.kubectl_apply(&certificate_yaml(
        "web",
        "Issuer",
        "ca",
        "  dnsNames: [web.example.test]\n  privateKey: {rotationPolicy: Never}\n",
    ));

    let first = wait_revision(&s, "short", 1);
    let (na, rt) = (
        unix(&first["status"]["notAfter"]),
        unix(&first["status"]["renewalTime"]),
    );
    assert_eq!(na - rt, 45, "renewBefore: {first}");
    let secret = get(&s, &format!("{SECRETS}/short-tls")).unwrap();
    verify_secret(&dir, &secret, "short1.pem", "ca.crt");
    let serial1 = x509(&dir, "short1.pem", &["-serial"]);
    let pub1 = x509(&dir, "short1.pem", &["-pubkey"]);
    // The controller comes back by itself at the renewal time: revision 2, a new certificate
    // (and a new key: rotationPolicy Always is the default).
    let renewed = wait_revision(&s, "short", 2);
    let secret = get(&s, &format!("{SECRETS}/short-tls")).unwrap();
    verify_secret(&dir, &secret, "short2.pem", "ca.crt");
    assert_ne!(x509(&dir, "short2.pem", &["-serial"]), serial1, "{renewed}");
    assert_ne!(x509(&dir, "short2.pem", &["-pubkey"]), pub1, "a new key");
    assert!(unix(&renewed["status"]["notBefore"]) >= rt - 1, "{renewed}");
    // The request of the previous revision is cleaned up.
    poll("CertificateRequest short-1 deleted", DEADLINE, || {
        get(&s, &format!("{REQUESTS}/short-1"))
            .is_none()
            .then_some(())
    })
    .unwrap();

    // The Secret is deleted: it comes back, with the same key (rotationPolicy: Never).
    let web = wait_revision(&s, "web", 1);
    let secret = wait_secret_for(&s, "web-tls", "web.example.test", &dir);
    verify_secret(&dir, &secret, "web1.pem", "ca.crt");
    let web_pub = x509(&dir, "web1.pem", &["-pubkey"]);
    s.kubectl_ok(&["delete", "secret", "web-tls"]);
    let web = wait_revision(&s, "web", web["status"]["revision"].as_u64().unwrap() + 1);
    let secret = wait_secret_for(&s, "web-tls", "web.example.test", &dir);
    verify_secret(&dir, &secret, "web2.pem", "ca.crt");
    assert_eq!(
        x509(&dir, "web2.pem", &["-pubkey"]),
        web_pub,
        "rotationPolicy Never keeps the key"
    );

    // Someone puts another certificate into it: it is replaced.
    let ca_pem = std::fs::read(dir.join("ca.crt")).unwrap();
    let patch = serde_json::json!({"data": {"tls.crt": base64::engine::general_purpose::STANDARD.encode(ca_pem)}});
    s.kubectl_ok(&[
        "patch",
        "secret",
        "web-tls",
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
    let web = wait_revision(&s, "web", web["status"]["revision"].as_u64().unwrap() + 1);
    let secret = wait_secret_for(&s, "web-tls", "web.example.test", &dir);
    verify_secret(&dir, &secret, "web3.pem", "ca.crt");

    // Other usages, with the same names and key: a new certificate with them.
    patch_certificate(
        &s,
        "web",
        r#"{"spec":{"usages":["digital signature","client auth"]}}"#,
    );
    wait_revision(&s, "web", web["status"]["revision"].as_u64().unwrap() + 1);
    let secret = get(&s, &format!("{SECRETS}/web-tls")).unwrap();
    verify_secret(&dir, &secret, "web4.pem", "ca.crt");
    let eku = x509(&dir, "web4.pem", &["-ext", "extendedKeyUsage"]);
    assert!(eku.contains("TLS Web Client Authentication"), "{eku}");
}
