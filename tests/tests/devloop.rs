//! Controller projects outside the repository (issue 18), with the real binary, each language's
//! real toolchain and a running host: for every language, `turtles new` in a temporary folder,
//! `turtles build`, the component dropped into the host's controllers folder, a ConfigMap
//! annotated by it, and its log line read back with `turtles logs` (the `log` subresource); then
//! one `turtles dev` round trip, where an edit to the source is reconciling within the build's
//! time plus 1 s.
//!
//! The toolchains are the ones `cargo xtask guests` installed (`TURTLES_TOOLCHAINS` is
//! `target/toolchains`, as `turtles build` would use `$TURTLES_HOME/toolchains`); the SDK bundle
//! is extracted under `target/turtles-home`, as it would be under `~/.local/share/turtles`.
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use turtles_tests::{poll, target_dir, turtles_bin, uuid_like, Server};

/// A cold compile of a Python or JavaScript component on a busy 2-core machine: the deadline
/// bounds a hang, not the compile's speed.
const LOAD_DEADLINE: Duration = Duration::from_secs(300);

/// A folder outside the repository, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("turtles-{what}-{}", uuid_like()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `turtles ARGS` as a developer runs it, with the shared home and toolchains.
fn turtles(args: &[&str]) -> Command {
    let target = target_dir();
    let mut cmd = Command::new(turtles_bin());
    cmd.args(args)
        .env("TURTLES_HOME", target.join("turtles-home"))
        .env("TURTLES_TOOLCHAINS", target.join("toolchains"))
        // The Rust project's dependencies as `cargo xtask guests` compiled them (same lockfile,
        // same profile): only the project itself and its SDK crate compile.
        .env(
            "CARGO_TARGET_DIR",
            target.parent().unwrap().join("guest-examples/rust/target"),
        )
        .stdin(Stdio::null());
    cmd
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("turtles runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

fn wait_running(s: &Server, name: &str) {
    poll(&format!("controller {name} Running"), LOAD_DEADLINE, || {
        let c = s
            .http()
            .get(&format!("/apis/turtles.dev/v1/controllers/{name}"))
            .json();
        (c["status"]["phase"] == "Running").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

fn annotation(s: &Server, cm: &str, key: &str) -> Option<String> {
    let cm = s
        .http()
        .get(&format!("/api/v1/namespaces/default/configmaps/{cm}"))
        .json();
    cm["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_owned)
}

/// new -> build -> drop -> reconcile -> logs, for one language.
fn new_build_drop_reconcile(lang: &str) {
    let _shared = MACHINE.read().unwrap_or_else(|p| p.into_inner());
    let name = format!("hello-{lang}");
    let projects = TempDir::new("projects");
    let dir = projects.0.join(&name);
    let dir_s = dir.to_str().unwrap();
    run_ok(turtles(&["new", "--lang", lang, &name, dir_s]).current_dir(&projects.0));
    assert!(dir.join("turtles.toml").is_file());
    assert!(dir.join("README.md").is_file());
    // The project references the SDK; it does not carry a copy of it.
    let sdk_files = [
        "turtles.go",
        "turtles.h",
        "turtles-controller.js",
        "Cargo.toml",
    ];
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let f = entry.file_name();
        assert!(
            f != "sdk" && (f == "Cargo.toml" || !sdk_files.contains(&f.to_str().unwrap())),
            "{lang}: the project holds SDK file {f:?}"
        );
    }
    let built = run_ok(turtles(&["build", dir_s]).current_dir(&projects.0));
    let wasm = dir.join(format!("{name}.wasm"));
    let bytes = std::fs::read(&wasm).unwrap_or_else(|e| panic!("{e}: {built}"));
    // A component, not a core module: the component-model layer in the header.
    assert_eq!(
        &bytes[..8],
        b"\0asm\x0d\x00\x01\x00",
        "{lang}: not a component"
    );

    let s = Server::start_with_controllers(&[]).unwrap();
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "before"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    s.drop_controller(&name, &bytes).unwrap();
    wait_running(&s, &name);
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "after"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let key = format!("turtles.dev/{name}");
    let want = format!("hello from {name}");
    for cm in ["before", "after"] {
        poll(&format!("{cm} annotated by {name}"), LOAD_DEADLINE, || {
            (annotation(&s, cm, &key).as_deref() == Some(want.as_str())).then_some(())
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    }
    // Its log, through `turtles logs` (the `log` subresource, with the admin's kubeconfig).
    let kubeconfig = s.kubeconfig.to_str().unwrap();
    let lines = poll("the log line", Duration::from_secs(10), || {
        let out = run_ok(&mut turtles(&["logs", &name, "--kubeconfig", kubeconfig]));
        out.contains("annotated default/after").then_some(out)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert!(lines.contains("annotated default/before"), "{lines}");
}

#[test]
fn a_rust_project_outside_the_repository_builds_and_reconciles() {
    new_build_drop_reconcile("rust");
}

#[test]
fn a_go_project_outside_the_repository_builds_and_reconciles() {
    new_build_drop_reconcile("go");
}

#[test]
fn a_python_project_outside_the_repository_builds_and_reconciles() {
    new_build_drop_reconcile("python");
}

#[test]
fn a_js_project_outside_the_repository_builds_and_reconciles() {
    new_build_drop_reconcile("js");
}

#[test]
fn a_c_project_outside_the_repository_builds_and_reconciles() {
    new_build_drop_reconcile("c");
}

/// A child's output, line by line, with when each line came.
fn lines_of(out: impl std::io::Read + Send + 'static) -> mpsc::Receiver<(Instant, String)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                return;
            }
        }
    });
    rx
}

/// The dev round trip's timing is measured alone: the other tests of this file (toolchain
/// builds, hosts) take this shared, the round trip exclusively.
static MACHINE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The next "built NAME in N ms" line: when it came and N.
fn next_build(rx: &mpsc::Receiver<(Instant, String)>, seen: &mut Vec<String>) -> (Instant, u64) {
    let deadline = Instant::now() + LOAD_DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (at, line) = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no build reported ({e}):\n{}", seen.join("\n")));
        seen.push(line.clone());
        if let Some(rest) = line.strip_prefix("turtles dev: built ") {
            let ms = rest
                .split(" in ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unreadable: {line}"));
            return (at, ms);
        }
        assert!(
            !(line.starts_with("turtles dev: ") && line.contains("failed")),
            "the build failed:\n{}",
            seen.join("\n")
        );
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `turtles dev` beside a running host: the first build lands in the folder and reconciles; an
/// edit to the source (the greeting) is built, swapped in and reconciling every ConfigMap again
/// within the build's own time plus 1 s.
#[test]
fn turtles_dev_rebuilds_on_an_edit_and_the_host_swaps_it_in() {
    let _alone = MACHINE.write().unwrap_or_else(|p| p.into_inner());
    let name = "dev-c";
    let projects = TempDir::new("dev");
    let dir = projects.0.join(name);
    let dir_s = dir.to_str().unwrap();
    run_ok(&mut turtles(&["new", "--lang", "c", name, dir_s]));
    let s = Server::start_with_controllers(&[]).unwrap();
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "edited"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let controllers = s.controllers_dir();
    let mut dev = Killed(
        turtles(&["dev", dir_s, "--controllers", controllers.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let rx = lines_of(dev.0.stderr.take().unwrap());
    let mut seen = Vec::new();
    next_build(&rx, &mut seen);
    wait_running(&s, name);
    let key = format!("turtles.dev/{name}");
    poll("the first build reconciling", LOAD_DEADLINE, || {
        (annotation(&s, "edited", &key).as_deref() == Some("hello from dev-c")).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));

    // `turtles logs -f`: the last line so far (the first version's), then what follows.
    let mut follower = Killed(
        turtles(&[
            "logs",
            name,
            "-f",
            "--tail",
            "1",
            "--kubeconfig",
            s.kubeconfig.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let follow_rx = lines_of(follower.0.stdout.take().unwrap());
    let (_, last) = follow_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the followed log's last line");
    // (Which object's: every ConfigMap is annotated, `kube-root-ca.crt` of each namespace too.)
    assert!(last.contains("annotated "), "{last}");

    // The edit, as an editor saves it: the whole file rewritten.
    let source = dir.join("controller.c");
    let text = std::fs::read_to_string(&source).unwrap();
    assert_eq!(text.matches("hello from").count(), 1, "{text}");
    let edited = Instant::now();
    std::fs::write(&source, text.replace("hello from", "howdy from")).unwrap();
    let (built_at, build_ms) = next_build(&rx, &mut seen);
    let reconciled = poll("the edit reconciling", LOAD_DEADLINE, || {
        (annotation(&s, "edited", &key).as_deref() == Some("howdy from dev-c")).then(Instant::now)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", seen.join("\n"), s.log()));
    let total = reconciled - edited;
    let after_build = reconciled.saturating_duration_since(built_at);
    eprintln!(
        "edit -> reconciled {} ms (build {build_ms} ms, build done -> reconciled {} ms)",
        total.as_millis(),
        after_build.as_millis()
    );
    assert!(
        total <= Duration::from_millis(build_ms) + Duration::from_secs(1),
        "edit -> reconciled took {total:?}, the build {build_ms} ms:\n{}",
        seen.join("\n")
    );
    // The follower saw the new version's line as it was logged.
    let line = poll("the followed log line", Duration::from_secs(10), || {
        follow_rx
            .try_iter()
            .map(|(_, l)| l)
            .find(|l| l.contains("annotated default/edited"))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert!(line.contains("INFO"), "{line}");
    drop(follower);
    drop(dev);
}
