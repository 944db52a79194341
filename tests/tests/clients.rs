//! Real clients' typed APIs against the real binary: the Python `kubernetes` client (installed
//! by `cargo xtask test` under `target/toolchains`) creating, reading, patching and deleting
//! built-in kinds through its generated models, which fail when an answer does not have the shape
//! kube gives it, and server-side apply through its dynamic client (create, 409 conflict, force).

use std::process::Command;

use turtles_tests::{target_dir, Server};

#[test]
fn python_kubernetes_typed_apis_work() {
    let toolchains = target_dir().join("toolchains");
    let client = std::fs::read_dir(&toolchains)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python-kubernetes-"))
        })
        .unwrap_or_else(|| {
            panic!(
                "no python-kubernetes-* under {}: run `cargo xtask test` (it installs the client)",
                toolchains.display()
            )
        });
    let s = Server::start().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/typed_clients.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&s.kubeconfig)
        .env("PYTHONPATH", &client)
        .env("TURTLES_CSR", turtles_tests::EXAMPLE_CSR)
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
