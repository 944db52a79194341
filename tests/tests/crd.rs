//! CustomResourceDefinitions end to end: the seed cert-manager `Certificate` CRD installed with
//! the real kubectl, its instances driven through kubectl and raw HTTP.

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{assert_status, item_names, poll, rv, Server};

const CRD_YAML: &str = include_str!("../../guest-examples/crds/certificates.cert-manager.io.yaml");
const CRD_NAME: &str = "certificates.cert-manager.io";
const CRD_PATH: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/certificates.cert-manager.io";
const CERTS: &str = "/apis/cert-manager.io/v1/namespaces/default/certificates";
const DEADLINE: Duration = Duration::from_secs(20);

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `kubectl apply -f -` of `yaml`, which must succeed; returns stdout.
fn apply(s: &Server, yaml: &str) -> String {
    let out = s.kubectl_stdin(&["apply", "-f", "-"], yaml);
    assert!(
        out.status.success(),
        "kubectl apply failed: {}\n{yaml}",
        stderr(&out)
    );
    stdout(&out)
}

/// The condition of this `type` on a CRD (or any object with status.conditions).
fn condition(obj: &Value, kind: &str) -> Option<Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .cloned()
}

/// Poll `kubectl get crd NAME -o json` until the condition has this status; returns it.
fn wait_condition(s: &Server, crd: &str, kind: &str, status: &str) -> Value {
    poll(
        &format!("{crd}: condition {kind}={status}"),
        DEADLINE,
        || {
            let obj = s.kubectl_json(&["get", "crd", crd]);
            condition(&obj, kind).filter(|c| c["status"] == status)
        },
    )
    .unwrap()
}

/// Install the seed CRD and wait until it is Established.
fn install(s: &Server) {
    let out = apply(s, CRD_YAML);
    assert!(out.contains("created"), "{out}");
    wait_condition(s, CRD_NAME, "Established", "True");
}

/// A Certificate body (JSON) with the required fields.
fn cert(name: &str) -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": name},
        "spec": {"secretName": format!("{name}-tls"), "issuerRef": {"name": "letsencrypt"}},
    })
}

/// A Certificate manifest (YAML) with the required fields and `extra` lines under `spec`.
fn cert_yaml(name: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: {name}\nspec:\n  secretName: {name}-tls\n  issuerRef:\n    name: letsencrypt\n{extra_spec}"
    )
}

fn create_raw(s: &Server, body: &Value) -> Value {
    let r = s.http().post_json(CERTS, body);
    assert_eq!(r.status, 201, "create: {}", r.text());
    r.json()
}

fn get_raw(s: &Server, path: &str) -> Value {
    let r = s.http().get(path);
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    r.json()
}

fn generation(obj: &Value) -> i64 {
    obj["metadata"]["generation"]
        .as_i64()
        .unwrap_or_else(|| panic!("no metadata.generation in {obj}"))
}

/// Rows of a `kubectl get` table, each split on whitespace (the header first).
fn table(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// The table row whose NAME is `name` (or `kind.group/name`, as category listings may print).
fn row<'a>(rows: &'a [Vec<String>], name: &str, out: &str) -> &'a Vec<String> {
    rows.iter()
        .skip(1)
        .find(|r| r[0] == name || r[0].ends_with(&format!("/{name}")))
        .unwrap_or_else(|| panic!("no row {name}:\n{out}"))
}

#[test]
fn crd_is_established_served_and_discoverable() {
    let s = Server::start().unwrap();
    // Nothing is served before the CRD exists.
    assert_eq!(s.http().get(CERTS).status, 404);

    let out = apply(&s, CRD_YAML);
    assert!(out.contains(CRD_NAME) && out.contains("created"), "{out}");
    let established = wait_condition(&s, CRD_NAME, "Established", "True");
    assert!(
        established["lastTransitionTime"].is_string(),
        "{established}"
    );
    let accepted = wait_condition(&s, CRD_NAME, "NamesAccepted", "True");
    assert_eq!(accepted["reason"], "NoConflicts", "{accepted}");
    s.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=30s",
        &format!("crd/{CRD_NAME}"),
    ]);
    let crd = s.kubectl_json(&["get", "crd", CRD_NAME]);
    assert_eq!(
        crd["status"]["acceptedNames"]["kind"], "Certificate",
        "{crd}"
    );
    assert_eq!(
        crd["status"]["acceptedNames"]["shortNames"],
        json!(["cert", "certs"])
    );
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(
        crd["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"]),
        "{crd}"
    );
    // Settling a new CRD (finalizer, then status) does not trip over its own writes.
    let log = s.log();
    assert!(!log.contains("reconciling CRD failed"), "{log}");

    // `kubectl get crd` lists it.
    let out = s.kubectl_ok(&["get", "crd"]);
    let rows = table(&out);
    assert_eq!(rows[0][0], "NAME", "{out}");
    row(&rows, CRD_NAME, &out);

    // `kubectl api-resources` lists it with its short names.
    let out = s.kubectl_ok(&["api-resources"]);
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("certificates"))
        .unwrap_or_else(|| panic!("certificates not in api-resources:\n{out}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "certificates",
            "cert,certs",
            "cert-manager.io/v1",
            "true",
            "Certificate"
        ],
        "{out}"
    );
    let out = s.kubectl_ok(&["api-resources", "--categories=cert-manager", "-o", "name"]);
    assert_eq!(out.trim(), "certificates.cert-manager.io", "{out}");

    // Discovery: the group and its resources (with the status subresource).
    let list = get_raw(&s, "/apis/cert-manager.io/v1");
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"certificates"), "{list}");
    assert!(names.contains(&"certificates/status"), "{list}");
    // The collection is served, empty.
    assert!(item_names(&get_raw(&s, CERTS)).is_empty());
}

#[test]
fn printer_columns_by_short_name_and_category() {
    let s = Server::start().unwrap();
    install(&s);
    let out = apply(&s, &cert_yaml("web", ""));
    assert!(
        out.contains("certificate.cert-manager.io/web created"),
        "{out}"
    );
    let r = s.http().patch(
        &format!("{CERTS}/web/status"),
        "application/merge-patch+json",
        &json!({"status": {"conditions": [{"type": "Ready", "status": "True", "message": "Issued"}]}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());

    for resource in ["certs", "cert", "certificates", "cert-manager"] {
        let out = s.kubectl_ok(&["get", resource]);
        let rows = table(&out);
        assert_eq!(
            rows[0],
            ["NAME", "READY", "SECRET", "AGE"],
            "get {resource}:\n{out}"
        );
        let web = row(&rows, "web", &out);
        assert_eq!(web.len(), 4, "{out}");
        assert_eq!(web[1], "True", "{out}");
        assert_eq!(web[2], "web-tls", "{out}");
        assert!(
            web[3].ends_with('s') || web[3].ends_with('m'),
            "AGE is a duration: {out}"
        );
    }

    let out = s.kubectl_ok(&["get", "certs", "-o", "wide"]);
    let rows = table(&out);
    assert_eq!(
        rows[0],
        ["NAME", "READY", "SECRET", "ISSUER", "STATUS", "AGE"],
        "{out}"
    );
    let web = row(&rows, "web", &out);
    assert_eq!(
        web[1..5],
        ["True", "web-tls", "letsencrypt", "Issued"],
        "{out}"
    );

    // A certificate with no status yet: READY is empty, the other columns still line up.
    apply(&s, &cert_yaml("fresh", ""));
    let out = s.kubectl_ok(&["get", "cert-manager", "-o", "wide"]);
    let rows = table(&out);
    let fresh = row(&rows, "fresh", &out);
    assert_eq!(fresh.len(), 4, "empty READY and STATUS cells: {out}");
    assert_eq!(fresh[1..3], ["fresh-tls", "letsencrypt"], "{out}");
}

#[test]
fn defaults_are_applied_and_unknown_fields_pruned() {
    let s = Server::start().unwrap();
    install(&s);
    apply(&s, &cert_yaml("d", "  privateKey:\n    size: 2048\n"));
    let c = s.kubectl_json(&["get", "cert", "d"]);
    let spec = &c["spec"];
    assert_eq!(spec["duration"], "2160h", "{c}");
    assert_eq!(spec["replicas"], 1, "{c}");
    assert_eq!(spec["issuerRef"]["kind"], "Issuer", "{c}");
    assert_eq!(spec["issuerRef"]["group"], "cert-manager.io", "{c}");
    assert_eq!(spec["issuerRef"]["name"], "letsencrypt", "{c}");
    assert_eq!(spec["privateKey"]["algorithm"], "RSA", "{c}");
    assert_eq!(spec["privateKey"]["rotationPolicy"], "Always", "{c}");
    assert_eq!(spec["privateKey"]["size"], 2048, "{c}");
    // A value given is not overwritten by the default.
    apply(&s, &cert_yaml("given", "  duration: 720h\n  replicas: 4\n"));
    let c = s.kubectl_json(&["get", "cert", "given"]);
    assert_eq!(c["spec"]["duration"], "720h", "{c}");
    assert_eq!(c["spec"]["replicas"], 4, "{c}");

    // Without client-side validation kubectl asks the server to ignore unknown fields: pruned.
    let yaml = cert_yaml("loose", "  bogusField: 1\n");
    let out = s.kubectl_stdin(&["apply", "--validate=false", "-f", "-"], &yaml);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = s.kubectl_json(&["get", "cert", "loose"]);
    assert!(c["spec"].get("bogusField").is_none(), "pruned: {c}");
    assert_eq!(c["spec"]["secretName"], "loose-tls", "{c}");

    // Raw HTTP, fieldValidation=Ignore: created, pruned, no warning.
    let mut body = cert("ignored");
    body["spec"]["zzz"] = json!("x");
    body["topLevelJunk"] = json!(true);
    let r = s
        .http()
        .post_json(&format!("{CERTS}?fieldValidation=Ignore"), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.headers.get("warning").is_none(), "{:?}", r.headers);
    let c = get_raw(&s, &format!("{CERTS}/ignored"));
    assert!(c["spec"].get("zzz").is_none(), "{c}");
    assert!(c.get("topLevelJunk").is_none(), "{c}");

    // fieldValidation=Warn: created and pruned, with a Warning header naming the field.
    let mut body = cert("warned");
    body["spec"]["zzz"] = json!("x");
    let r = s
        .http()
        .post_json(&format!("{CERTS}?fieldValidation=Warn"), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let warnings: Vec<String> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap_or("").to_owned())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("299") && w.contains("spec.zzz")),
        "{warnings:?}"
    );
    assert!(r.json()["spec"].get("zzz").is_none(), "{}", r.text());
    let c = get_raw(&s, &format!("{CERTS}/warned"));
    assert!(c["spec"].get("zzz").is_none(), "{c}");

    // fieldValidation=Strict: refused, nothing stored.
    let mut body = cert("strict");
    body["spec"]["zzz"] = json!("x");
    let r = s
        .http()
        .post_json(&format!("{CERTS}?fieldValidation=Strict"), &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("spec.zzz"), "{}", r.text());
    assert_status(&s.http().get(&format!("{CERTS}/strict")), 404, "NotFound");
}

/// A custom resource's body as apiextensions-apiserver's handler reads it: not JSON is
/// refused naming the kind, a body without `kind` or with another `apiVersion` (none included)
/// is a 400, another `kind` the strategy's 422; nothing is stored.
#[test]
fn bodies_are_read_as_kubes_custom_resource_handler_reads_them() {
    let s = Server::start().unwrap();
    install(&s);
    let http = s.http();
    let post =
        |body: &[u8]| http.request("POST", CERTS, Some("application/json"), Some(body.to_vec()));
    let r = post(b"{\"apiVersion\": \"cert-manager.io/v1\", \"kind\": \"Certificate\" x}");
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.json()["message"],
        "the object provided is unrecognized (must be of type Certificate): couldn't get version/kind; json parse error: invalid character 'x' after object key:value pair ({\"apiVersion\": \"cert-manager.i ...)"
    );
    let mut no_kind = cert("no-kind");
    no_kind.as_object_mut().unwrap().remove("kind");
    let text = no_kind.to_string();
    let r = post(text.as_bytes());
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.json()["message"],
        format!(
            "Certificate in version \"v1\" cannot be handled as a Certificate: Object 'Kind' is missing in '{text}'"
        )
    );
    let mut no_version = cert("no-version");
    no_version.as_object_mut().unwrap().remove("apiVersion");
    let r = http.post_json(CERTS, &no_version);
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.json()["message"],
        "the API version in the data () does not match the expected API version (cert-manager.io/v1)"
    );
    let mut other = cert("other");
    other["kind"] = json!("Issuer");
    let r = http.post_json(CERTS, &other);
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.json()["message"],
        "Issuer.cert-manager.io \"other\" is invalid: kind: Invalid value: \"Issuer\": must be Certificate"
    );
    assert_eq!(r.json()["details"]["causes"][0]["field"], "kind");
    for name in ["no-kind", "no-version", "other"] {
        assert_status(&http.get(&format!("{CERTS}/{name}")), 404, "NotFound");
    }
    // An update with another kind: the same 422, the object unchanged.
    let created = create_raw(&s, &cert("kept"));
    let mut changed = created.clone();
    changed["kind"] = json!("Issuer");
    let r = http.put_json(&format!("{CERTS}/kept"), &changed);
    assert_status(&r, 422, "Invalid");
    assert_eq!(get_raw(&s, &format!("{CERTS}/kept"))["kind"], "Certificate");
}

#[test]
fn status_is_reset_on_create() {
    let s = Server::start().unwrap();
    install(&s);
    let mut body = cert("c");
    body["status"] = json!({"replicas": 5});
    let created = create_raw(&s, &body);
    assert!(created.get("status").is_none(), "{created}");
    assert!(get_raw(&s, &format!("{CERTS}/c")).get("status").is_none());
}

#[test]
fn kubectl_apply_with_unknown_field_fails_strict_validation() {
    let s = Server::start().unwrap();
    install(&s);
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &cert_yaml("strict", "  bogusField: 1\n"),
    );
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stderr(&out).contains("bogusField"), "{}", stderr(&out));
    assert_status(&s.http().get(&format!("{CERTS}/strict")), 404, "NotFound");
    // The same manifest without the field goes in.
    apply(&s, &cert_yaml("strict", ""));
}

#[test]
fn invalid_instance_names_every_bad_field() {
    let s = Server::start().unwrap();
    install(&s);
    let yaml = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: bad\nspec:\n  issuerRef:\n    name: x\n    kind: Wrong\n";
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    assert!(!out.status.success(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("is invalid"), "{err}");
    assert!(err.contains("spec.secretName"), "{err}");
    assert!(err.contains("spec.issuerRef.kind"), "{err}");
    assert!(err.contains("Wrong"), "{err}");

    let body = json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "bad"},
        "spec": {"issuerRef": {"name": "x", "kind": "Wrong"}},
    });
    let r = s.http().post_json(CERTS, &body);
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(st["details"]["kind"], "Certificate", "{st}");
    assert_eq!(st["details"]["group"], "cert-manager.io", "{st}");
    assert_eq!(st["details"]["name"], "bad", "{st}");
    let causes = st["details"]["causes"].as_array().expect("causes");
    let cause = |field: &str| {
        causes
            .iter()
            .find(|c| c["field"] == field)
            .unwrap_or_else(|| panic!("no cause for {field}: {st}"))
    };
    assert_eq!(
        cause("spec.secretName")["reason"],
        "FieldValueRequired",
        "{st}"
    );
    assert_eq!(
        cause("spec.issuerRef.kind")["reason"],
        "FieldValueNotSupported",
        "{st}"
    );
    assert_status(&s.http().get(&format!("{CERTS}/bad")), 404, "NotFound");

    // Other schema checks: bounds and formats.
    let mut body = cert("bounds");
    body["spec"]["replicas"] = json!(101);
    body["spec"]["ipAddresses"] = json!(["not-an-ip"]);
    let st = assert_status(&s.http().post_json(CERTS, &body), 422, "Invalid");
    let fields: Vec<&str> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert!(fields.contains(&"spec.replicas"), "{st}");
    assert!(
        fields.iter().any(|f| f.starts_with("spec.ipAddresses")),
        "{st}"
    );
}

#[test]
fn cel_rule_message_reaches_the_user() {
    let s = Server::start().unwrap();
    install(&s);
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &cert_yaml("same", "  duration: 1h\n  renewBefore: 1h\n"),
    );
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("renewBefore must differ from duration"),
        "{}",
        stderr(&out)
    );
    assert_status(&s.http().get(&format!("{CERTS}/same")), 404, "NotFound");

    // The rule sees defaults: renewBefore equal to the defaulted duration is refused too.
    let mut body = cert("defaulted");
    body["spec"]["renewBefore"] = json!("2160h");
    let st = assert_status(&s.http().post_json(CERTS, &body), 422, "Invalid");
    assert!(
        st["message"]
            .as_str()
            .unwrap_or("")
            .contains("renewBefore must differ from duration"),
        "{st}"
    );

    // Different values pass.
    apply(
        &s,
        &cert_yaml("differ", "  duration: 2h\n  renewBefore: 1h\n"),
    );
    let c = s.kubectl_json(&["get", "cert", "differ"]);
    assert_eq!(c["spec"]["renewBefore"], "1h");

    // An update that breaks the rule is refused as well.
    let r = s.http().patch(
        &format!("{CERTS}/differ"),
        "application/merge-patch+json",
        &json!({"spec": {"renewBefore": "2h"}}),
    );
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        get_raw(&s, &format!("{CERTS}/differ"))["spec"]["renewBefore"],
        "1h"
    );
}

#[test]
fn explain_walks_the_schema() {
    let s = Server::start().unwrap();
    install(&s);
    let out = s.kubectl_ok(&["explain", "certificates.spec"]);
    assert!(
        out.contains("KIND:       Certificate") || out.contains("Certificate"),
        "{out}"
    );
    let field = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name}\t")) || l.trim() == name)
            .unwrap_or_else(|| panic!("{name} not listed:\n{out}"))
            .to_owned()
    };
    assert!(field("secretName").contains("-required-"), "{out}");
    assert!(field("issuerRef").contains("-required-"), "{out}");
    field("dnsNames");
    assert!(out.contains("The certificate wanted."), "{out}");
    let out = s.kubectl_ok(&["explain", "cert.spec.issuerRef.kind"]);
    assert!(out.contains("Issuer or ClusterIssuer."), "{out}");
}

#[test]
fn status_subresource_separates_spec_and_status() {
    let s = Server::start().unwrap();
    install(&s);
    let created = create_raw(&s, &cert("st"));
    assert_eq!(generation(&created), 1);
    let item = format!("{CERTS}/st");

    // PATCH /status: status changes, spec does not, generation stays.
    let r = s.http().patch(
        &format!("{item}/status"),
        "application/merge-patch+json",
        &json!({"spec": {"secretName": "sneaky"}, "status": {"replicas": 2}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let c = r.json();
    assert_eq!(c["status"]["replicas"], 2, "{c}");
    assert_eq!(c["spec"]["secretName"], "st-tls", "{c}");
    assert_eq!(generation(&c), 1, "{c}");
    let c = get_raw(&s, &item);
    assert_eq!(c["status"]["replicas"], 2, "{c}");
    assert_eq!(c["spec"]["secretName"], "st-tls", "{c}");

    // PUT to the main endpoint cannot change status; a status-only change is a no-op.
    let mut body = c.clone();
    body["status"]["replicas"] = json!(9);
    let r = s.http().put_json(&item, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let c = get_raw(&s, &item);
    assert_eq!(c["status"]["replicas"], 2, "{c}");
    assert_eq!(generation(&c), 1, "{c}");

    // A spec change through the main endpoint bumps generation, still keeping status.
    let mut body = c.clone();
    body["spec"]["secretName"] = json!("renamed");
    body["status"] = json!({"replicas": 7});
    let r = s.http().put_json(&item, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let c = get_raw(&s, &item);
    assert_eq!(c["spec"]["secretName"], "renamed", "{c}");
    assert_eq!(c["status"]["replicas"], 2, "{c}");
    assert_eq!(generation(&c), 2, "{c}");

    // PUT /status: status changes, spec does not, generation stays.
    let mut body = c.clone();
    body["spec"]["secretName"] = json!("ignored");
    body["status"] = json!({"replicas": 3, "conditions": [{"type": "Ready", "status": "False"}]});
    let r = s.http().put_json(&format!("{item}/status"), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let c = get_raw(&s, &item);
    assert_eq!(c["status"]["replicas"], 3, "{c}");
    assert_eq!(c["status"]["conditions"][0]["status"], "False", "{c}");
    assert_eq!(c["spec"]["secretName"], "renamed", "{c}");
    assert_eq!(generation(&c), 2, "{c}");

    // The status schema is enforced on /status.
    let r = s.http().patch(
        &format!("{item}/status"),
        "application/merge-patch+json",
        &json!({"status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}}),
    );
    assert_status(&r, 422, "Invalid");

    // kubectl sees the same object.
    let c = s.kubectl_json(&["get", "cert", "st"]);
    assert_eq!(c["status"]["replicas"], 3, "{c}");
    assert_eq!(generation(&c), 2, "{c}");
}

#[test]
fn scale_subresource() {
    let s = Server::start().unwrap();
    install(&s);
    apply(&s, &cert_yaml("sc", ""));
    let r = s.http().patch(
        &format!("{CERTS}/sc/status"),
        "application/merge-patch+json",
        &json!({"status": {"replicas": 1}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());

    let out = s.kubectl_ok(&["scale", "cert", "sc", "--replicas=3"]);
    assert!(out.contains("scaled"), "{out}");
    let c = s.kubectl_json(&["get", "cert", "sc"]);
    assert_eq!(c["spec"]["replicas"], 3, "{c}");
    assert_eq!(generation(&c), 2, "a spec change: {c}");
    assert_eq!(c["status"]["replicas"], 1, "{c}");

    let sc = get_raw(&s, &format!("{CERTS}/sc/scale"));
    assert_eq!(sc["kind"], "Scale", "{sc}");
    assert_eq!(sc["apiVersion"], "autoscaling/v1", "{sc}");
    assert_eq!(sc["metadata"]["name"], "sc", "{sc}");
    assert_eq!(sc["metadata"]["namespace"], "default", "{sc}");
    assert_eq!(
        sc["metadata"]["resourceVersion"],
        c["metadata"]["resourceVersion"]
    );
    assert_eq!(sc["spec"]["replicas"], 3, "{sc}");
    assert_eq!(sc["status"]["replicas"], 1, "{sc}");

    // PUT of a Scale with a stale resourceVersion conflicts.
    let mut stale = sc.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    stale["spec"]["replicas"] = json!(5);
    assert_status(
        &s.http().put_json(&format!("{CERTS}/sc/scale"), &stale),
        409,
        "Conflict",
    );
    // The schema still applies through scale: replicas has a maximum of 100.
    let r = s.http().patch(
        &format!("{CERTS}/sc/scale"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 500}}),
    );
    assert_status(&r, 422, "Invalid");
    assert_eq!(get_raw(&s, &format!("{CERTS}/sc"))["spec"]["replicas"], 3);
    // Server-side apply of the Scale (YAML): the custom resource's specReplicasPath is set, the
    // schema still holds, and the manager's entry is a `scale` one.
    let apply_scale = |replicas: u32| {
        s.http().request(
            "PATCH",
            &format!("{CERTS}/sc/scale?fieldManager=autoscaler&force=true"),
            Some("application/apply-patch+yaml"),
            Some(
                format!("apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: sc\nspec:\n  replicas: {replicas}\n")
                    .into_bytes(),
            ),
        )
    };
    let r = apply_scale(7);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"]["replicas"], 7);
    let c = get_raw(&s, &format!("{CERTS}/sc"));
    assert_eq!(c["spec"]["replicas"], 7);
    let entry = c["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "autoscaler")
        .cloned()
        .unwrap_or_else(|| panic!("{c}"));
    assert_eq!(entry["subresource"], "scale");
    assert_eq!(entry["operation"], "Apply");
    assert_status(&apply_scale(500), 422, "Invalid");
    // A certificate missing: 404.
    assert_status(
        &s.http().get(&format!("{CERTS}/ghost/scale")),
        404,
        "NotFound",
    );
}

#[test]
fn strategic_patch_415_and_put_without_resource_version_422() {
    let s = Server::start().unwrap();
    install(&s);
    let created = create_raw(&s, &cert("p"));
    let item = format!("{CERTS}/p");

    let r = s.http().patch(
        &item,
        "application/strategic-merge-patch+json",
        &json!({"spec": {"replicas": 2}}),
    );
    assert_status(&r, 415, "UnsupportedMediaType");
    // kubectl patch defaults to strategic; it must be told --type=merge.
    let out = s.kubectl(&["patch", "cert", "p", "-p", r#"{"spec":{"replicas":2}}"#]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert_eq!(get_raw(&s, &item)["spec"]["replicas"], 1);
    s.kubectl_ok(&[
        "patch",
        "cert",
        "p",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":2}}"#,
    ]);
    assert_eq!(get_raw(&s, &item)["spec"]["replicas"], 2);
    let r = s.http().patch(
        &item,
        "application/json-patch+json",
        &json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"]["replicas"], 4);

    // PUT without metadata.resourceVersion: 422 naming the field.
    let mut body = created.clone();
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    body["spec"]["secretName"] = json!("changed");
    let st = assert_status(&s.http().put_json(&item, &body), 422, "Invalid");
    assert_eq!(
        st["details"]["causes"][0]["field"], "metadata.resourceVersion",
        "{st}"
    );
    assert_eq!(get_raw(&s, &item)["spec"]["secretName"], "p-tls");
    // With a stale one: 409.
    let st = assert_status(&s.http().put_json(&item, &created), 409, "Conflict");
    assert_eq!(st["details"]["name"], "p", "{st}");
    // With the current one: accepted.
    let mut body = get_raw(&s, &item);
    body["spec"]["secretName"] = json!("changed");
    let r = s.http().put_json(&item, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(get_raw(&s, &item)["spec"]["secretName"], "changed");
}

#[test]
fn watch_sees_added_modified_deleted() {
    let s = Server::start().unwrap();
    install(&s);
    let http = s.http();
    let mut w = http.watch(&format!("{CERTS}?watch=1"));
    assert_eq!(w.status, 200);
    create_raw(&s, &cert("w"));
    let ev = w.expect_event("ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "w", "{ev}");
    assert_eq!(ev["object"]["apiVersion"], "cert-manager.io/v1", "{ev}");
    assert_eq!(ev["object"]["kind"], "Certificate", "{ev}");
    assert_eq!(ev["object"]["spec"]["duration"], "2160h", "defaulted: {ev}");

    let r = http.patch(
        &format!("{CERTS}/w"),
        "application/merge-patch+json",
        &json!({"spec": {"commonName": "example.com"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let ev = w.expect_event("MODIFIED");
    assert_eq!(ev["object"]["metadata"]["name"], "w", "{ev}");
    assert_eq!(ev["object"]["spec"]["commonName"], "example.com", "{ev}");

    let r = http.delete(&format!("{CERTS}/w"));
    assert_eq!(r.status, 200, "{}", r.text());
    let ev = w.expect_event("DELETED");
    assert_eq!(ev["object"]["metadata"]["name"], "w", "{ev}");
    assert_status(&http.get(&format!("{CERTS}/w")), 404, "NotFound");
}

#[test]
fn conflicting_short_name_is_not_accepted_nor_served() {
    let s = Server::start().unwrap();
    install(&s);
    apply(&s, &cert_yaml("c", ""));
    let issuers = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: issuers.cert-manager.io
spec:
  group: cert-manager.io
  names:
    kind: Issuer
    plural: issuers
    shortNames: [cert]
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;
    apply(&s, issuers);
    let accepted = wait_condition(&s, "issuers.cert-manager.io", "NamesAccepted", "False");
    assert_eq!(accepted["reason"], "ShortNamesConflict", "{accepted}");
    assert!(
        accepted["message"].as_str().unwrap_or("").contains("cert"),
        "{accepted}"
    );
    let established = wait_condition(&s, "issuers.cert-manager.io", "Established", "False");
    assert_eq!(established["status"], "False");

    let r = s
        .http()
        .get("/apis/cert-manager.io/v1/namespaces/default/issuers");
    assert_status(&r, 404, "NotFound");
    let list = get_raw(&s, "/apis/cert-manager.io/v1");
    assert!(
        !list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "issuers"),
        "{list}"
    );
    // The first CRD keeps its names: `cert` still means certificates.
    let c = s.kubectl_json(&["get", "cert", "c"]);
    assert_eq!(c["kind"], "Certificate");
    let crd = s.kubectl_json(&["get", "crd", CRD_NAME]);
    assert_eq!(condition(&crd, "NamesAccepted").unwrap()["status"], "True");

    // Fixing the conflict gets the second CRD accepted and served.
    apply(
        &s,
        &issuers.replace("shortNames: [cert]", "shortNames: [iss]"),
    );
    wait_condition(&s, "issuers.cert-manager.io", "NamesAccepted", "True");
    wait_condition(&s, "issuers.cert-manager.io", "Established", "True");
    let r = s
        .http()
        .get("/apis/cert-manager.io/v1/namespaces/default/issuers");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn restart_serves_crds_from_the_first_request() {
    let mut s = Server::start().unwrap();
    install(&s);
    apply(&s, &cert_yaml("kept", "  commonName: kept.example.com\n"));
    let before = get_raw(&s, &format!("{CERTS}/kept"));
    s.stop().unwrap();
    s.restart().unwrap();
    // No polling: the very first request after the kubeconfig appears must be served.
    let after = get_raw(&s, &format!("{CERTS}/kept"));
    assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(after["spec"], before["spec"]);
    let out = s.kubectl_ok(&["get", "certs"]);
    let rows = table(&out);
    assert_eq!(rows[0], ["NAME", "READY", "SECRET", "AGE"], "{out}");
    row(&rows, "kept", &out);
    let crd = s.kubectl_json(&["get", "crd", CRD_NAME]);
    assert_eq!(
        condition(&crd, "Established").unwrap()["status"],
        "True",
        "{crd}"
    );
    // Still validated and defaulted after the restart.
    let st = assert_status(
        &s.http().post_json(
            CERTS,
            &json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                    "metadata": {"name": "bad"}, "spec": {"issuerRef": {"name": "x"}}}),
        ),
        422,
        "Invalid",
    );
    assert_eq!(
        st["details"]["causes"][0]["field"], "spec.secretName",
        "{st}"
    );
    let c = create_raw(&s, &cert("new"));
    assert_eq!(c["spec"]["duration"], "2160h");
}

#[test]
fn deleting_the_crd_deletes_its_instances() {
    let s = Server::start().unwrap();
    install(&s);
    s.kubectl_ok(&["create", "namespace", "other"]);
    create_raw(&s, &cert("a"));
    create_raw(&s, &cert("b"));
    let r = s.http().post_json(
        "/apis/cert-manager.io/v1/namespaces/other/certificates",
        &cert("c"),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let all = get_raw(&s, "/apis/cert-manager.io/v1/certificates");
    assert_eq!(item_names(&all).len(), 3, "{all}");

    let out = s.kubectl_ok(&["delete", "crd", CRD_NAME]);
    assert!(out.contains("deleted"), "{out}");
    poll("the CRD to go", DEADLINE, || {
        (s.http().get(CRD_PATH).status == 404).then_some(())
    })
    .unwrap();
    poll("certificates to stop being served", DEADLINE, || {
        (s.http().get(CERTS).status == 404).then_some(())
    })
    .unwrap();
    assert_status(&s.http().get(&format!("{CERTS}/a")), 404, "NotFound");
    assert_eq!(
        s.http()
            .get("/apis/cert-manager.io/v1/namespaces/other/certificates")
            .status,
        404
    );
    assert_eq!(s.http().get("/apis/cert-manager.io/v1").status, 404);
    let out = s.kubectl(&["get", "certs"]);
    assert!(!out.status.success(), "{}", stdout(&out));

    // Installing it again starts empty: the instances really are gone.
    install(&s);
    assert!(item_names(&get_raw(&s, "/apis/cert-manager.io/v1/certificates")).is_empty());
}

#[test]
fn instance_finalizer_holds_a_terminating_crd() {
    let s = Server::start().unwrap();
    install(&s);
    let mut held = cert("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create_raw(&s, &held);
    create_raw(&s, &cert("free"));

    let r = s.http().delete(CRD_PATH);
    assert_eq!(r.status, 200, "{}", r.text());

    let crd = poll("the CRD to be Terminating", DEADLINE, || {
        let r = s.http().get(CRD_PATH);
        (r.status == 200)
            .then(|| r.json())
            .filter(|crd| condition(crd, "Terminating").is_some_and(|c| c["status"] == "True"))
    })
    .unwrap();
    assert!(crd["metadata"]["deletionTimestamp"].is_string(), "{crd}");
    assert_eq!(
        condition(&crd, "Terminating").unwrap()["reason"],
        "InstanceDeletionInProgress"
    );
    // The free instance goes; the held one stays, marked for deletion.
    poll("the unheld instance to go", DEADLINE, || {
        (item_names(&get_raw(&s, CERTS)) == ["held"]).then_some(())
    })
    .unwrap();
    let h = get_raw(&s, &format!("{CERTS}/held"));
    assert!(h["metadata"]["deletionTimestamp"].is_string(), "{h}");
    // The CRD is still there, still held.
    let crd = s.kubectl_json(&["get", "crd", CRD_NAME]);
    assert!(crd["metadata"]["deletionTimestamp"].is_string(), "{crd}");

    // New instances are refused while the CRD terminates.
    let r = s.http().post_json(CERTS, &cert("late"));
    let st = assert_status(&r, 405, "MethodNotAllowed");
    assert!(
        st["message"].as_str().unwrap_or("").contains("terminating"),
        "{st}"
    );
    assert_status(&s.http().get(&format!("{CERTS}/late")), 404, "NotFound");

    // Release the finalizer: the instance, then the CRD, go.
    let r = s.http().patch(
        &format!("{CERTS}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    poll(
        "the CRD to go once its last instance is gone",
        DEADLINE,
        || (s.http().get(CRD_PATH).status == 404).then_some(()),
    )
    .unwrap();
    poll("certificates to stop being served", DEADLINE, || {
        (s.http().get(CERTS).status == 404).then_some(())
    })
    .unwrap();
    let out = s.kubectl_ok(&["get", "crd", "-o", "name"]);
    assert!(!out.contains(CRD_NAME), "{out}");
}

const WIDGETS_YAML: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  conversion:
    strategy: None
  versions:
    - name: v1beta1
      served: true
      storage: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
"#;

#[test]
fn multi_version_crd_serves_every_served_version() {
    let s = Server::start().unwrap();
    apply(&s, WIDGETS_YAML);
    wait_condition(&s, "widgets.example.com", "Established", "True");
    let beta = "/apis/example.com/v1beta1/namespaces/default/widgets";
    let v1 = "/apis/example.com/v1/namespaces/default/widgets";

    let r = s.http().post_json(
        beta,
        &json!({"apiVersion": "example.com/v1beta1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["apiVersion"],
        "example.com/v1beta1",
        "{}",
        r.text()
    );

    let at_v1 = get_raw(&s, &format!("{v1}/w"));
    assert_eq!(at_v1["apiVersion"], "example.com/v1", "{at_v1}");
    assert_eq!(at_v1["spec"]["size"], 3, "{at_v1}");
    let at_beta = get_raw(&s, &format!("{beta}/w"));
    assert_eq!(at_beta["apiVersion"], "example.com/v1beta1", "{at_beta}");
    assert_eq!(at_beta["metadata"]["uid"], at_v1["metadata"]["uid"]);

    let list = get_raw(&s, beta);
    assert_eq!(list["apiVersion"], "example.com/v1beta1", "{list}");
    assert_eq!(item_names(&list), ["w"]);
    assert_eq!(
        list["items"][0]["apiVersion"], "example.com/v1beta1",
        "{list}"
    );
    let list = get_raw(&s, v1);
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v1", "{list}");
    // A watch at v1beta1 shows objects at v1beta1.
    let mut w = s.http().watch(&format!("{beta}?watch=1"));
    assert_eq!(w.status, 200);
    let ev = w.expect_event("ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "w", "{ev}");
    assert_eq!(ev["object"]["apiVersion"], "example.com/v1beta1", "{ev}");
    drop(w);

    // An object created at v1 shows at v1beta1 too.
    let r = s.http().post_json(
        v1,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "x"}, "spec": {"size": 1}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let x = get_raw(&s, &format!("{beta}/x"));
    assert_eq!(x["apiVersion"], "example.com/v1beta1", "{x}");

    // A body whose apiVersion names the other version is refused.
    let r = s.http().post_json(
        beta,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "y"}}),
    );
    assert_status(&r, 400, "BadRequest");

    // An update at v1beta1 is stored (and read back at v1) correctly.
    let mut body = at_beta.clone();
    body["spec"]["size"] = json!(5);
    let r = s.http().put_json(&format!("{beta}/w"), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["apiVersion"], "example.com/v1beta1");
    let at_v1 = get_raw(&s, &format!("{v1}/w"));
    assert_eq!(at_v1["apiVersion"], "example.com/v1", "{at_v1}");
    assert_eq!(at_v1["spec"]["size"], 5, "{at_v1}");

    // kubectl reaches both versions.
    let w = s.kubectl_json(&["get", "widgets.v1beta1.example.com", "w"]);
    assert_eq!(w["apiVersion"], "example.com/v1beta1", "{w}");
    let w = s.kubectl_json(&["get", "widgets.v1.example.com", "w"]);
    assert_eq!(w["apiVersion"], "example.com/v1", "{w}");
    let crd = s.kubectl_json(&["get", "crd", "widgets.example.com"]);
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]), "{crd}");
}

/// The OpenAPI v3 index's URL for a group-version, if listed.
fn openapi_url(s: &Server, gv: &str) -> Option<String> {
    let idx = get_raw(s, "/openapi/v3");
    idx["paths"][gv]["serverRelativeURL"]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn openapi_follows_the_crd_schema() {
    let s = Server::start().unwrap();
    let gv = "apis/cert-manager.io/v1";
    assert_eq!(openapi_url(&s, gv), None, "no document before the CRD");
    install(&s);
    let url = openapi_url(&s, gv).expect("a v3 document for cert-manager.io/v1");
    assert!(url.contains("hash="), "{url}");
    let doc = get_raw(&s, &url);
    let paths = doc["paths"].as_object().expect("paths");
    assert!(
        paths.contains_key("/apis/cert-manager.io/v1/namespaces/{namespace}/certificates/{name}"),
        "{doc}"
    );
    let schema = &doc["components"]["schemas"]["io.cert-manager.v1.Certificate"];
    assert!(
        schema["properties"]["spec"]["properties"]["secretName"].is_object(),
        "{doc}"
    );
    assert!(schema["properties"]["spec"]["properties"]
        .get("keystores")
        .is_none());
    let v2_keystores = || {
        get_raw(&s, "/openapi/v2")["definitions"]["io.cert-manager.v1.Certificate"]["properties"]
            ["spec"]["properties"]["keystores"]["type"]
            .clone()
    };
    assert_eq!(v2_keystores(), serde_json::Value::Null);

    // Update the CRD with a new field: a new document under a new hash.
    let updated = CRD_YAML.replace(
        "                commonName:\n",
        "                keystores:\n                  description: Extra keystores to write.\n                  type: string\n                commonName:\n",
    );
    assert_ne!(updated, CRD_YAML);
    let out = apply(&s, &updated);
    assert!(out.contains("configured"), "{out}");
    let new_url = poll("a new OpenAPI hash", DEADLINE, || {
        openapi_url(&s, gv).filter(|u| *u != url)
    })
    .unwrap();
    let doc = get_raw(&s, &new_url);
    let schema = &doc["components"]["schemas"]["io.cert-manager.v1.Certificate"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["keystores"]["type"], "string",
        "{doc}"
    );
    // The v2 document (cached between changes) follows too.
    assert_eq!(v2_keystores(), "string");
    // The new field is accepted under kubectl's strict validation, and explained.
    apply(&s, &cert_yaml("ks", "  keystores: jks\n"));
    let c = s.kubectl_json(&["get", "cert", "ks"]);
    assert_eq!(c["spec"]["keystores"], "jks", "{c}");
    let out = s.kubectl_ok(&["explain", "certificates.spec.keystores"]);
    assert!(out.contains("Extra keystores to write."), "{out}");
    // An unchanged schema keeps its hash.
    assert_eq!(openapi_url(&s, gv), Some(new_url));
}

#[test]
fn a_protected_group_needs_the_api_approval_annotation() {
    let s = Server::start().unwrap();
    let crd = |annotations: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.k8s.io\n{annotations}spec:\n  group: example.k8s.io\n  scope: Namespaced\n  names: {{plural: things, singular: thing, kind: Thing}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object}}}}\n"
        )
    };
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &crd(""));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"),
        "{}",
        stderr(&out)
    );
    apply(
        &s,
        &crd("  annotations: {api-approved.kubernetes.io: \"unapproved, experimental\"}\n"),
    );
    let policy = wait_condition(
        &s,
        "things.example.k8s.io",
        "KubernetesAPIApprovalPolicyConformant",
        "False",
    );
    assert_eq!(policy["reason"], "UnapprovedAnnotation");
    assert_eq!(
        policy["message"],
        "not approved: \"unapproved, experimental\""
    );
    wait_condition(&s, "things.example.k8s.io", "Established", "True");
}

const GADGETS_V1: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              mode: {type: string}
              size: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
"#;

const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";

fn create_gadget(s: &Server, body: &Value) -> Value {
    let r = s.http().post_json(GADGETS, body);
    assert_eq!(r.status, 201, "create: {}", r.text());
    r.json()
}

/// kube's validation ratcheting (`CRDValidationRatcheting`, on by default): a CRD made stricter
/// after objects were stored leaves them writable as long as the now-invalid values stay as
/// they are; `/status` writes validate `status` only; CEL rules still run beside a pattern
/// violation; a CRD without a status subresource counts `status` for `generation`.
#[test]
fn a_stricter_crd_ratchets_unchanged_values_and_status_writes_check_status_only() {
    let s = Server::start().unwrap();
    apply(&s, GADGETS_V1);
    wait_condition(&s, "gadgets.example.com", "Established", "True");
    let created = create_gadget(
        &s,
        &json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": {"name": "g"}, "spec": {"mode": "legacy", "size": 1}}),
    );
    // Stricter: mode becomes an enum the stored value is not in.
    let stricter = GADGETS_V1.replace(
        "mode: {type: string}",
        "mode: {type: string, enum: [fast, slow]}",
    );
    apply(&s, &stricter);
    let item = format!("{GADGETS}/g");
    poll("the stricter schema to be served", DEADLINE, || {
        let mut body = get_raw(&s, &item);
        body["spec"]["mode"] = json!("other");
        // A dry run: the stored `legacy` must stay for what follows.
        (s.http()
            .put_json(&format!("{item}?dryRun=All"), &body)
            .status
            == 422)
            .then_some(())
    })
    .unwrap();
    // The status, a label and another spec field change: the unchanged `legacy` is let be.
    let r = s.http().patch(
        &format!("{item}/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Ready"}}),
    );
    assert_eq!(r.status, 200, "status write: {}", r.text());
    let r = s.http().patch(
        &item,
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"a": "b"}}, "spec": {"size": 2}}),
    );
    assert_eq!(r.status, 200, "update: {}", r.text());
    // Changing the invalid value itself is refused, with kube's message.
    let r = s.http().patch(
        &item,
        "application/merge-patch+json",
        &json!({"spec": {"mode": "older"}}),
    );
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "Unsupported value: \"older\": supported values: \"fast\", \"slow\"",
        "{st}"
    );
    // A status write is checked against the status schema only, with paths under `status`.
    let r = s.http().patch(
        &format!("{item}/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": 3}}),
    );
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "status.phase", "{st}");
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "Invalid value: \"integer\": phase in body must be of type string: \"integer\"",
        "{st}"
    );
    assert!(rv(&get_raw(&s, &item)) > rv(&created));
}

/// A CRD without a status subresource: `status` is part of what bumps `generation` (kube's
/// custom resource strategy); with one it is not.
#[test]
fn generation_counts_status_only_without_a_status_subresource() {
    let s = Server::start().unwrap();
    let plain = GADGETS_V1.replace("    subresources: {status: {}}\n", "");
    apply(&s, &plain);
    wait_condition(&s, "gadgets.example.com", "Established", "True");
    let created = create_gadget(
        &s,
        &json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": {"name": "g"}, "spec": {"mode": "x"}}),
    );
    assert_eq!(generation(&created), 1);
    let r = s.http().patch(
        &format!("{GADGETS}/g"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Ready"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"]["phase"], "Ready");
    assert_eq!(generation(&r.json()), 2);
    let r = s.http().patch(
        &format!("{GADGETS}/g"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"a": "b"}}}),
    );
    assert_eq!(generation(&r.json()), 2);
}

/// Objects stored before their CRD's schema changed read as kube's storage decoder reads them:
/// pruned of fields the schema dropped and with the defaults it added, so a later metadata-only
/// write is not refused for a field the client never sent (`Strict`) and does not bump
/// `generation` for a default.
#[test]
fn objects_stored_before_a_schema_change_read_pruned_and_defaulted() {
    let s = Server::start().unwrap();
    let v1 = GADGETS_V1.replace(
        "              size: {type: integer}\n",
        "              size: {type: integer}\n              legacy: {type: string}\n",
    );
    apply(&s, &v1);
    wait_condition(&s, "gadgets.example.com", "Established", "True");
    let created = create_gadget(
        &s,
        &json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": {"name": "old"}, "spec": {"mode": "x", "legacy": "a"}}),
    );
    assert_eq!(created["spec"]["legacy"], "a");
    // The schema drops `legacy` and defaults `size`.
    let v2 = GADGETS_V1.replace(
        "              size: {type: integer}\n",
        "              size: {type: integer, default: 3}\n",
    );
    apply(&s, &v2);
    let item = format!("{GADGETS}/old");
    let got = poll("the new schema on read", DEADLINE, || {
        let g = get_raw(&s, &item);
        (g["spec"]["size"] == 3).then_some(g)
    })
    .unwrap();
    assert!(got["spec"].get("legacy").is_none(), "{got}");
    assert_eq!(got["spec"]["mode"], "x");
    // A list and a fresh watch read it the same way.
    let list = get_raw(&s, GADGETS);
    assert_eq!(list["items"][0]["spec"]["size"], 3, "{list}");
    assert!(list["items"][0]["spec"].get("legacy").is_none(), "{list}");
    // kubectl's Strict label patch is not refused for `legacy`, and the generation stays.
    s.kubectl_ok(&["label", "gadget", "old", "tier=gold"]);
    let after = get_raw(&s, &item);
    assert_eq!(after["metadata"]["labels"]["tier"], "gold");
    assert_eq!(generation(&after), generation(&created), "{after}");
}

/// kube's CRD update checks: an Established CRD keeps its scope and kind, and a version still
/// in `status.storedVersions` may not leave `spec.versions`.
#[test]
fn an_established_crd_keeps_its_scope_kind_and_stored_versions() {
    let s = Server::start().unwrap();
    let two = GADGETS_V1.replace(
        "  - name: v1\n    served: true\n    storage: true\n",
        "  - name: v1beta1\n    served: true\n    storage: false\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n  - name: v1\n    served: true\n    storage: true\n",
    );
    let two = two.replacen("storage: true", "storage: TRUE_MARK", 1);
    // v1beta1 first as the storage version, then v1.
    let first = two
        .replace("storage: false", "storage: true")
        .replace("storage: TRUE_MARK", "storage: false");
    apply(&s, &first);
    wait_condition(&s, "gadgets.example.com", "Established", "True");
    let then = two.replace("storage: TRUE_MARK", "storage: true");
    apply(&s, &then);
    let crd = poll("both stored versions", DEADLINE, || {
        let c = s.kubectl_json(&["get", "crd", "gadgets.example.com"]);
        (c["status"]["storedVersions"] == json!(["v1beta1", "v1"])).then_some(c)
    })
    .unwrap();
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    let refused = |yaml: &str, needle: &str| {
        let out = s.kubectl_stdin(&["apply", "-f", "-"], yaml);
        assert!(!out.status.success(), "accepted:\n{yaml}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{needle}\nnot in:\n{err}");
    };
    refused(
        &then.replace("scope: Namespaced", "scope: Cluster"),
        "spec.scope: Invalid value: \"Cluster\": field is immutable",
    );
    refused(
        &then.replace("kind: Gadget", "kind: Gizmo"),
        "spec.names.kind: Invalid value: \"Gizmo\": field is immutable",
    );
    let without_beta = GADGETS_V1.to_owned();
    refused(
        &without_beta,
        "status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version",
    );
}

/// CEL rules run off the async workers, within a time bound: while two slow evaluations (a rule
/// kube prices as linear that the interpreter runs in quadratic time) hold both cores' worth of
/// work, the server still answers others; and they stop at the bound as kube stops a rule over
/// its cost limit.
#[test]
fn slow_rules_do_not_stop_the_server() {
    let s = Server::start().unwrap();
    apply(
        &s,
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: lists.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: lists, singular: list, kind: List}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.items.all(x, x <= self.items.size())"
            properties:
              items: {type: array, maxItems: 100000, items: {type: integer}}
"#,
    );
    wait_condition(&s, "lists.example.com", "Established", "True");
    let path = "/apis/example.com/v1/namespaces/default/lists";
    let body = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "List", "metadata": {"name": name},
            "spec": {"items": vec![0; 30000]}})
    };
    poll("the kind is served", DEADLINE, || {
        (s.http().get(path).status == 200).then_some(())
    })
    .unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let (http, done, body) = (s.http(), done.clone(), body(name));
            std::thread::spawn(move || {
                let r = http.post_json(path, &body);
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                (r.status, r.text())
            })
        })
        .collect();
    // Both writes are being served (the gauge counts them once authenticated; their rules
    // start at once); until one of them is done, the server keeps answering others.
    poll("both writes in flight", DEADLINE, || {
        let m = s.http().get("/metrics").text();
        m.contains("turtles_api_inflight_requests{request_kind=\"mutating\"} 2")
            .then_some(())
    })
    .unwrap();
    let answered = poll("an answer while the rules run", DEADLINE, || {
        (s.http().get("/api/v1/namespaces/default/configmaps").status == 200)
            .then(|| done.load(std::sync::atomic::Ordering::SeqCst))
    })
    .unwrap();
    for w in writers {
        let (status, text) = w.join().unwrap();
        assert_eq!(status, 422, "{text}");
        assert!(
            text.contains("'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.items.all(x, x <= self.items.size())"),
            "{text}"
        );
    }
    assert_eq!(
        answered, 0,
        "the server answered only once a slow write was done"
    );
}

/// kube notes that rules went unchecked only where the version has rules: a CRD without any
/// reports its blocking error alone.
#[test]
fn no_unchecked_rules_note_without_rules() {
    let s = Server::start().unwrap();
    apply(
        &s,
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sizes.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: sizes, singular: size, kind: Size}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string, enum: [S, M, L]}
"#,
    );
    wait_condition(&s, "sizes.example.com", "Established", "True");
    let path = "/apis/example.com/v1/namespaces/default/sizes";
    let body = json!({"apiVersion": "example.com/v1", "kind": "Size", "metadata": {"name": "bad"},
        "spec": {"size": "XL"}});
    let r = poll("the kind is served", DEADLINE, || {
        let r = s.http().post_json(path, &body);
        (r.status != 404).then_some(r)
    })
    .unwrap();
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "Size.example.com \"bad\" is invalid: spec.size: Unsupported value: \"XL\": supported values: \"S\", \"M\", \"L\"",
        "{st}"
    );
}

/// A custom resource's OpenAPI as kube's CRD builder publishes it: apiVersion, kind and metadata
/// in its schema, and its List, in v3 and v2; `kubectl explain` reaches apiVersion and kind.
#[test]
fn openapi_gives_custom_resources_type_meta_and_a_list() {
    let s = Server::start().unwrap();
    apply(&s, WIDGETS_YAML);
    wait_condition(&s, "widgets.example.com", "Established", "True");
    let doc = poll("the v3 document of example.com/v1", DEADLINE, || {
        let doc = get_raw(&s, &openapi_url(&s, "apis/example.com/v1")?);
        doc["components"]["schemas"].get("com.example.v1.WidgetList")?;
        Some(doc)
    })
    .unwrap();
    let schemas = &doc["components"]["schemas"];
    let widget = &schemas["com.example.v1.Widget"]["properties"];
    assert_eq!(widget["apiVersion"]["type"], "string", "{widget}");
    assert_eq!(widget["kind"]["type"], "string", "{widget}");
    assert_eq!(
        widget["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let list = &schemas["com.example.v1.WidgetList"];
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"], "#/components/schemas/com.example.v1.Widget",
        "{list}"
    );
    assert_eq!(list["required"], json!(["items"]));
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "WidgetList"
    );
    assert!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"].is_object());
    let v2 = get_raw(&s, "/openapi/v2");
    let defs = &v2["definitions"];
    assert_eq!(
        defs["com.example.v1.Widget"]["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(
        defs["com.example.v1.WidgetList"]["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
    );
    let out = s.kubectl_ok(&["explain", "widgets.apiVersion"]);
    assert!(
        out.contains("APIVersion defines the versioned schema"),
        "{out}"
    );
    let out = s.kubectl_ok(&["explain", "widgets.kind"]);
    assert!(out.contains("Kind is a string value"), "{out}");
}

/// What one object's rules may hold is bounded: a rule that grows memory by the object's size
/// at every step of a loop (kube's cost count would stop it; turtles' estimate does not price
/// string concatenation by size) stops past 64 MiB with kube's per-call message, instead of
/// taking the host's memory.
#[test]
fn rules_are_bounded_in_memory() {
    let s = Server::start().unwrap();
    apply(
        &s,
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: growers.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: growers, singular: grower, kind: Grower}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.parts.map(p, self.big + p).size() >= 0"
            properties:
              big: {type: string}
              parts: {type: array, items: {type: string}}
"#,
    );
    wait_condition(&s, "growers.example.com", "Established", "True");
    let path = "/apis/example.com/v1/namespaces/default/growers";
    poll("the kind is served", DEADLINE, || {
        (s.http().get(path).status == 200).then_some(())
    })
    .unwrap();
    let before = s.memory_kib("VmRSS").unwrap();
    // 1,000 copies of 1 MB would hold 1 GB.
    let r = s.http().post_json(
        path,
        &json!({"apiVersion": "example.com/v1", "kind": "Grower", "metadata": {"name": "g"},
            "spec": {"big": "x".repeat(1 << 20), "parts": vec!["a"; 1000]}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(
        r.text().contains("'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.parts.map(p, self.big + p).size() >= 0"),
        "{}",
        r.text()
    );
    let peak = s.memory_kib("VmHWM").unwrap();
    assert!(
        peak < before + 700 * 1024,
        "the host went from {before} KiB to a peak of {peak} KiB"
    );
}

/// Sprockets: v1 stored (with a default), v1alpha1 and v1beta1 served and deprecated, the one
/// with kube's default warning, the other with its own; both keep unknown fields.
const SPROCKETS_YAML: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sprockets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: sprockets, singular: sprocket, kind: Sprocket, listKind: SprocketList}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "v1beta1 sprockets are going away"
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              shape: {type: string}
              teeth: {type: integer, default: 12}
"#;

/// The texts of a reply's `Warning` headers, as sent.
fn warning_headers(r: &turtles_tests::Reply) -> Vec<String> {
    r.headers
        .get_all("warning")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect()
}

/// A deprecated version's warning (its `deprecationWarning`, or kube's default text naming the
/// newest version that is not deprecated) comes with every request to it, which kubectl prints,
/// and not with requests to the other versions; a `deprecationWarning` on a version that is not
/// deprecated is refused as kube refuses it.
#[test]
fn deprecated_versions_warn_on_every_request() {
    let s = Server::start().unwrap();
    apply(&s, SPROCKETS_YAML);
    wait_condition(&s, "sprockets.example.com", "Established", "True");
    let default_text = "example.com/v1alpha1 Sprocket is deprecated; use example.com/v1 Sprocket";
    let own_text = "v1beta1 sprockets are going away";

    // kubectl prints them on stderr.
    let out = s.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: example.com/v1alpha1\nkind: Sprocket\nmetadata: {name: a, namespace: default}\nspec: {shape: round}\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("Warning: {default_text}")),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl(&["get", "sprockets.v1beta1.example.com", "a", "-o", "name"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("Warning: {own_text}")),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl(&["get", "sprockets.v1.example.com", "a", "-o", "name"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "sprocket.example.com/a");
    assert!(!stderr(&out).contains("Warning"), "{}", stderr(&out));

    // Raw HTTP: on a list, a get of a missing object (404) and a watch; not through v1.
    let alpha = "/apis/example.com/v1alpha1/namespaces/default/sprockets";
    let header = format!("299 - \"{default_text}\"");
    let r = s.http().get(alpha);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(warning_headers(&r), std::slice::from_ref(&header));
    let r = s.http().get(&format!("{alpha}/missing"));
    assert_status(&r, 404, "NotFound");
    assert_eq!(warning_headers(&r), std::slice::from_ref(&header));
    let r = s.http().get(&format!(
        "{alpha}?watch=true&timeoutSeconds=1&resourceVersion=0"
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(warning_headers(&r), std::slice::from_ref(&header));
    let r = s
        .http()
        .get("/apis/example.com/v1/namespaces/default/sprockets/a");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(warning_headers(&r).is_empty(), "{:?}", r.headers);

    // kube's validation of `deprecationWarning`.
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &SPROCKETS_YAML.replace(
            "    deprecated: true\n    deprecationWarning: \"v1beta1 sprockets are going away\"\n",
            "    deprecationWarning: \"v1beta1 sprockets are going away\"\n",
        ),
    );
    assert!(!out.status.success(), "accepted");
    assert!(
        stderr(&out).contains(&format!(
            "spec.versions[1].deprecationWarning: Invalid value: \"{own_text}\": can only be set for deprecated versions"
        )),
        "{}",
        stderr(&out)
    );
}

/// An object written through a version other than the storage version (`conversion: None`) is
/// stored as kube stores it: pruned by the storage version's schema; read through either
/// version with its defaults, the same before and after a restart.
#[test]
fn writes_through_another_version_are_pruned_by_the_storage_schema() {
    let mut s = Server::start().unwrap();
    apply(&s, SPROCKETS_YAML);
    wait_condition(&s, "sprockets.example.com", "Established", "True");
    let alpha = "/apis/example.com/v1alpha1/namespaces/default/sprockets";
    let v1 = "/apis/example.com/v1/namespaces/default/sprockets";
    let r = s.http().post_json(
        alpha,
        &json!({"apiVersion": "example.com/v1alpha1", "kind": "Sprocket",
            "metadata": {"name": "legacy"},
            "spec": {"shape": "round", "extra": 1}, "somethingElse": true}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let want = json!({"shape": "round", "teeth": 12});
    let created = r.json();
    assert_eq!(created["spec"], want, "{created}");
    assert!(created.get("somethingElse").is_none(), "{created}");
    let read = |s: &Server| {
        let at_v1 = get_raw(s, &format!("{v1}/legacy"));
        let at_alpha = get_raw(s, &format!("{alpha}/legacy"));
        for (o, version) in [(&at_v1, "v1"), (&at_alpha, "v1alpha1")] {
            assert_eq!(o["apiVersion"], format!("example.com/{version}"), "{o}");
            assert_eq!(o["spec"], want, "{o}");
            assert!(o.get("somethingElse").is_none(), "{o}");
        }
        (at_v1, at_alpha)
    };
    let before = read(&s);
    // A write to the CRD after the object's (a label), so that after the restart the object
    // counts as stored before the CRD's schema: read again through it, with the same answers.
    s.kubectl_ok(&["label", "crd", "sprockets.example.com", "touched=yes"]);
    s.stop().unwrap();
    s.restart().unwrap();
    let after = read(&s);
    assert_eq!(after, before);
}
