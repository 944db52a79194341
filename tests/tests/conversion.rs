//! CRD conversion webhooks end to end: a CRD served as v1 (stored) and v2, converted by a real
//! HTTPS webhook on loopback; kubectl and raw clients read, list, watch and write either
//! version, and a failing webhook is kube's 500.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{poll, webhook, Server};

/// v1 keeps `spec.size`, v2 `spec.replicas`; `/fail` refuses every conversion.
fn convert(path: &str, request: &Value) -> Value {
    if path == "/fail" {
        return json!({"result": {"status": "Failure", "message": "boom"}});
    }
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let converted: Vec<Value> = objects
        .into_iter()
        .map(|mut o| {
            let spec = o["spec"].as_object().cloned().unwrap_or_default();
            let n = spec.get("size").or(spec.get("replicas")).cloned();
            let mut out = serde_json::Map::new();
            if let Some(n) = n {
                let field = if desired.ends_with("/v2") {
                    "replicas"
                } else {
                    "size"
                };
                out.insert(field.into(), n);
            }
            o["spec"] = Value::Object(out);
            o["apiVersion"] = json!(desired);
            // A webhook may change labels; other metadata it changes is not taken.
            o["metadata"]["labels"]["converted-to"] = json!(desired.replace('/', "_"));
            o["metadata"]["resourceVersion"] = json!("999999");
            o
        })
        .collect();
    json!({"result": {"status": "Success"}, "convertedObjects": converted})
}

fn crd(url: &str, ca: &str) -> Value {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conv.example.com"},
        "spec": {"group": "conv.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("size")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("replicas")}],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"url": url, "caBundle": ca}}}}})
}

const V1: &str = "/apis/conv.example.com/v1/namespaces/default/widgets";
const V2: &str = "/apis/conv.example.com/v2/namespaces/default/widgets";

#[test]
fn a_webhook_converts_between_served_versions() {
    let hook = webhook::start(convert).unwrap();
    let s = Server::start().unwrap();
    let http = s.http();
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    // kube's validation of the conversion.
    let mut bad = crd(&format!("{}/convert", hook.url), &hook.ca_bundle);
    bad["spec"]["conversion"]["webhook"]
        .as_object_mut()
        .unwrap()
        .remove("clientConfig");
    let r = http.post_json(crds, &bad);
    let st = turtles_tests::assert_status(&r, 422, "Invalid");
    assert!(
        st["message"].as_str().unwrap().contains(
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"
        ),
        "{st}"
    );
    let r = http.post_json(
        crds,
        &crd(&format!("{}/convert", hook.url), &hook.ca_bundle),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.conv.example.com",
        "--timeout=30s",
    ]);

    // Written as v1, read as v2 (and v1 as stored).
    s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: conv.example.com/v1\nkind: Widget\nmetadata: {name: a}\nspec: {size: 3}\n",
    );
    let a = poll("the widget", Duration::from_secs(10), || {
        let r = http.get(&format!("{V2}/a"));
        (r.status == 200).then(|| r.json())
    })
    .unwrap();
    assert_eq!(a["apiVersion"], "conv.example.com/v2", "{a}");
    assert_eq!(a["spec"], json!({"replicas": 3}));
    assert_eq!(
        a["metadata"]["labels"]["converted-to"],
        "conv.example.com_v2"
    );
    assert_ne!(a["metadata"]["resourceVersion"], "999999");
    let stored = http.get(&format!("{V1}/a")).json();
    assert_eq!(stored["spec"], json!({"size": 3}));
    assert!(stored["metadata"].get("labels").is_none(), "{stored}");

    // Written as v2: stored as v1, answered as v2.
    let r = http.post_json(
        V2,
        &json!({"apiVersion": "conv.example.com/v2", "kind": "Widget",
            "metadata": {"name": "b"}, "spec": {"replicas": 5}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["spec"], json!({"replicas": 5}));
    assert_eq!(http.get(&format!("{V1}/b")).json()["spec"]["size"], 5);

    // kubectl lists either version; a patch through v2 lands in v1.
    let list = s.kubectl_json(&["get", "widgets.v2.conv.example.com", "-o", "json"]);
    let sizes: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"]["replicas"])
        .collect();
    assert_eq!(sizes, [&json!(3), &json!(5)], "{list}");
    let rv = http.get(V2).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut w = http.watch(&format!(
        "{V2}?watch=true&resourceVersion={rv}&timeoutSeconds=10"
    ));
    s.kubectl_ok(&[
        "patch",
        "widgets.v2.conv.example.com",
        "b",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":7}}"#,
    ]);
    let ev = w.expect_event("MODIFIED");
    assert_eq!(ev["object"]["apiVersion"], "conv.example.com/v2", "{ev}");
    assert_eq!(ev["object"]["spec"], json!({"replicas": 7}));
    assert_eq!(http.get(&format!("{V1}/b")).json()["spec"]["size"], 7);
    assert!(hook.calls.load(std::sync::atomic::Ordering::SeqCst) >= 5);

    // A webhook that fails: kube's 500, naming the conversion.
    let mut c = http.get(&format!("{crds}/widgets.conv.example.com")).json();
    c["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = json!(format!("{}/fail", hook.url));
    let r = http.put_json(&format!("{crds}/widgets.conv.example.com"), &c);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = poll(
        "the failing webhook to be used",
        Duration::from_secs(10),
        || {
            let r = http.get(&format!("{V2}/a"));
            (r.status == 500).then_some(r)
        },
    )
    .unwrap();
    // kube's answer to an error that is no API status: 500, no reason.
    let st = r.json();
    assert_eq!(st["code"], 500, "{st}");
    assert!(st.get("reason").is_none(), "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("conversion webhook for conv.example.com/v1, Kind=Widget failed: boom"),
        "{st}"
    );
    // The stored version needs no conversion.
    assert_eq!(http.get(&format!("{V1}/a")).status, 200);
}
