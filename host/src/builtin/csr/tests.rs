use super::*;
use crate::auth::signer::testing::{name, request, CN, O};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn pem_of(orgs: &[&str], cn: &str) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut attrs: Vec<(&[u8], &str)> = orgs.iter().map(|o| (O, *o)).collect();
    attrs.push((CN, cn));
    request(&key, &name(&attrs), &[])
}

fn csr(usages: &[&str]) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {
            "request": b64(&pem_of(&["dev"], "alice")),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": usages,
        },
    })
}

fn messages(causes: &[Cause]) -> Vec<String> {
    causes.iter().map(ToString::to_string).collect()
}

#[test]
fn create_takes_the_requester_from_the_user_and_starts_with_an_empty_status() {
    let mut obj = csr(&["client auth"]);
    obj["spec"]["username"] = json!("mallory");
    obj["spec"]["groups"] = json!(["system:masters"]);
    obj["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
    let user = UserInfo {
        name: "alice".into(),
        uid: "u-1".into(),
        groups: vec!["dev".into(), "system:authenticated".into()],
        extra: [("k".to_owned(), vec!["v".to_owned()])].into(),
    };
    prepare_create(&mut obj, Some(&user));
    assert_eq!(obj["spec"]["username"], "alice");
    assert_eq!(obj["spec"]["uid"], "u-1");
    assert_eq!(
        obj["spec"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    assert_eq!(obj["spec"]["extra"], json!({"k": ["v"]}));
    assert_eq!(obj["status"], json!({}));
    assert!(validate(&obj, None, Subresource::Main).is_empty());
    // No user (the host's own write): no requester at all.
    prepare_create(&mut obj, None);
    assert!(obj["spec"].get("username").is_none() && obj["spec"].get("groups").is_none());
}

#[test]
fn a_create_is_validated_as_kube_does() {
    let mut obj = csr(&["client auth", "flying", "client auth"]);
    obj["spec"]["request"] = json!(b64("not pem"));
    obj["spec"]["signerName"] = json!("example/x");
    obj["spec"]["expirationSeconds"] = json!(60);
    let got = messages(&validate(&obj, None, Subresource::Main));
    let quoted = obj["spec"]["request"].to_string();
    assert_eq!(
        got[0],
        format!(
            "spec.request: Invalid value: {quoted}: PEM block type must be CERTIFICATE REQUEST"
        )
    );
    assert!(got[1].starts_with("spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\", \"client auth\""), "{got:?}");
    assert_eq!(got[2], "spec.usages[2]: Duplicate value: \"client auth\"");
    assert_eq!(got[3], "spec.signerName: Invalid value: \"example/x\": should be a domain with at least two segments separated by dots");
    assert_eq!(got[4], "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)");
    assert_eq!(got.len(), 5, "{got:?}");

    let mut obj = csr(&[]);
    obj["spec"]["signerName"] = json!(LEGACY_SIGNER);
    let got = messages(&validate(&obj, None, Subresource::Main));
    assert_eq!(
        got,
        [
            "spec.usages: Required value",
            "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version",
        ]
    );
    for (signer, want) in [
        ("", "spec.signerName: Required value"),
        ("a.b", "spec.signerName: Invalid value: \"a.b\": must be a fully qualified domain and path of the form 'example.com/signer-name'"),
        ("a.B/x", "spec.signerName: Invalid value: \"a.B/x\": validating label \"B\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ] {
        let mut obj = csr(&["client auth"]);
        obj["spec"]["signerName"] = json!(signer);
        assert_eq!(messages(&validate(&obj, None, Subresource::Main)), [want]);
    }
}

#[test]
fn approval_sets_conditions_and_nothing_else_and_the_status_keeps_them() {
    let mut stored = csr(&["client auth"]);
    prepare_create(&mut stored, None);
    // /approval: conditions come from the request, with timestamps; spec and certificate stay.
    let mut new = stored.clone();
    new["spec"]["usages"] = json!(["server auth"]);
    new["status"] = json!({"certificate": b64("x"), "conditions": [
        {"type": "Approved", "status": "True", "reason": "KubectlApprove"}]});
    let mut out = stored.clone();
    out["status"] = new["status"].clone();
    prepare_update(Subresource::Approval, &stored, &mut out);
    assert_eq!(out["spec"], stored["spec"]);
    assert!(out["status"].get("certificate").is_none());
    let c = &out["status"]["conditions"][0];
    assert_eq!(c["reason"], "KubectlApprove");
    assert!(c["lastUpdateTime"].is_string() && c["lastTransitionTime"].is_string());
    assert!(validate(&out, Some(&stored), Subresource::Approval).is_empty());
    // The same conditions through the main resource or /status are refused.
    let got = messages(&validate(&out, Some(&stored), Subresource::Status));
    assert_eq!(
        got,
        ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
    );

    // /status keeps the stored approval and may set the certificate once.
    let approved = out;
    let mut status = approved.clone();
    status["status"]["conditions"][0]["reason"] = json!("Changed");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["x".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem();
    let cert = cert.as_str();
    status["status"]["certificate"] = json!(b64(cert));
    prepare_update(Subresource::Status, &approved, &mut status);
    assert_eq!(
        status["status"]["conditions"][0]["reason"],
        "KubectlApprove"
    );
    assert!(validate(&status, Some(&approved), Subresource::Status).is_empty());
    // Not through /approval, and never changed once set.
    let got = messages(&validate(&status, Some(&approved), Subresource::Approval));
    assert_eq!(
        got,
        ["status.certificate: Forbidden: updates may not set certificate content"]
    );
    let mut again = status.clone();
    again["status"]["certificate"] = json!(b64(&format!("{cert}{cert}")));
    let got = messages(&validate(&again, Some(&status), Subresource::Status));
    assert_eq!(
        got,
        ["status.certificate: Forbidden: updates may not modify existing certificate content"]
    );
    // Not a certificate.
    let mut junk = approved.clone();
    junk["status"]["certificate"] = json!(b64("hello"));
    let got = messages(&validate(&junk, Some(&approved), Subresource::Status));
    assert_eq!(got, ["status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"]);
    // An approval cannot be taken back, nor be joined by a denial.
    let mut removed = status.clone();
    removed["status"]["conditions"] = json!([]);
    let got = messages(&validate(&removed, Some(&status), Subresource::Approval));
    assert_eq!(
        got,
        ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
    );
    let mut both = status.clone();
    both["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "Denied", "status": "True"}));
    let got = messages(&validate(&both, Some(&status), Subresource::Approval));
    assert_eq!(got, ["status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"]);
    let mut bad_status = status.clone();
    bad_status["status"]["conditions"][0]["status"] = json!("False");
    let got = messages(&validate(&bad_status, Some(&status), Subresource::Approval));
    assert_eq!(
        got,
        ["status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""]
    );
}

#[test]
fn a_transition_time_is_kept_for_the_same_type_and_status() {
    let old = json!({"status": {"conditions": [
        {"type": "Approved", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z", "lastUpdateTime": "2020-01-01T00:00:00Z"}]}});
    let mut new = json!({"status": {"conditions": [
        {"type": "Approved", "status": "True"},
        {"type": "Failed", "status": "True", "lastUpdateTime": "2021-01-01T00:00:00Z"}]}});
    populate_timestamps(&mut new, &old);
    let c = &new["status"]["conditions"];
    assert_eq!(c[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    assert_ne!(c[0]["lastUpdateTime"], "2020-01-01T00:00:00Z");
    assert_eq!(c[1]["lastUpdateTime"], "2021-01-01T00:00:00Z");
    assert_ne!(c[1]["lastTransitionTime"], "2020-01-01T00:00:00Z");
}
