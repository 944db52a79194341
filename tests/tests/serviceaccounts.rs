//! ServiceAccounts as kube-controller-manager keeps them: `default` in every namespace, created
//! when the namespace appears and again when it is deleted.

use std::time::Duration;

use turtles_tests::{poll, Server};

fn has_default(s: &Server, ns: &str) -> Option<String> {
    let out = s.kubectl(&["get", "serviceaccount", "default", "-n", ns, "-o", "name"]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
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
