//! Project tasks: `cargo xtask test` (everything CI checks), `cargo xtask guests` (the example
//! controllers as WebAssembly components), `cargo xtask bench` and `cargo xtask fuzz`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

mod goenums;
mod gotypes;
mod openapi;
mod protobuf;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .current_dir(root())
        .status()
        .with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn test(extra: &[String]) -> Result<()> {
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The guest workspace is separate from this one (fmt and clippy above skip it): check it too,
    // then build the example controllers into target/guests for the tests.
    run(cargo().args([
        "fmt",
        "--all",
        "--manifest-path",
        GUEST_RUST_MANIFEST,
        "--",
        "--check",
    ]))?;
    guests(&[])?;
    // The guest SDKs' own unit tests, natively (their toolchains are there after `guests`; the
    // Rust SDK's too), and the Rust examples' that have pure logic to test.
    run(cargo().args([
        "test",
        "--manifest-path",
        GUEST_RUST_MANIFEST,
        "--target-dir",
        GUEST_RUST_TARGET_DIR,
        "-p",
        "turtles-controller",
        "-p",
        "endpointslice",
        "-p",
        "statefulset",
        "-p",
        "daemonset",
        "-p",
        "persistentvolume",
        "-p",
        "hostpath-provisioner",
        "-p",
        "horizontal-pod-autoscaler",
        "-p",
        "service-controller",
        "-p",
        "registry-policy",
    ]))?;
    run(Command::new("bash").args(["guest-examples/c/build.sh", "--test"]))?;
    // No __pycache__ in the SDK folder: `turtles` embeds that folder (host/build.rs) and would
    // be rebuilt for it.
    run(Command::new("python3")
        .args([
            "-m",
            "unittest",
            "discover",
            "-s",
            "guest-examples/python/tests",
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1"))?;
    run(Command::new("npm").args(["test", "--prefix", "guest-examples/js"]))?;
    // gofmt, go vet (native and wasip1) and go test of the Go SDK and examples, against the fake host.
    run(Command::new("bash").args(["guest-examples/go/build.sh", "--test"]))?;
    // The client-compatibility tests drive the Python `kubernetes` client.
    python_kubernetes()?;
    // The end-to-end tests spawn the real binary: build it first, with every test target in the
    // same invocation so that the binary and the tests share one feature resolution (a plain
    // `build -p turtles` resolves features without the test dependencies and compiles wasmtime
    // a second time).
    run(cargo().args(["build", "--workspace", "--all-targets"]))?;
    cargo_test(extra)
}

/// The Python `kubernetes` client (the release for the Kubernetes version turtles serves) that
/// `tests/tests/clients.rs` drives, installed on first use under `target/toolchains`.
const PYTHON_KUBERNETES_VERSION: &str = "34.1.0";

fn python_kubernetes() -> Result<()> {
    let dir = root()
        .join("target/toolchains")
        .join(format!("python-kubernetes-{PYTHON_KUBERNETES_VERSION}"));
    if dir.join("kubernetes").is_dir() {
        return Ok(());
    }
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&dir)
        .arg(format!("kubernetes=={PYTHON_KUBERNETES_VERSION}")))
}

/// `cargo test --workspace`, echoing its output, then one closing line with the totals over every
/// test binary (cargo's own last line is usually an empty doc-test run).
fn cargo_test(extra: &[String]) -> Result<()> {
    use std::io::{BufRead, BufReader};
    let mut cmd = cargo();
    cmd.args(["test", "--workspace"])
        .args(extra)
        .current_dir(root());
    eprintln!("xtask: running {cmd:?}");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("starting cargo test")?;
    let stdout = child.stdout.take().context("cargo test stdout")?;
    let (mut passed, mut failed, mut ignored) = (0u64, 0u64, 0u64);
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        if let Some(rest) = line.strip_prefix("test result: ") {
            for part in rest.split(';') {
                let mut words = part.split_whitespace().rev();
                let (Some(label), Some(n)) = (words.next(), words.next()) else {
                    continue;
                };
                let n: u64 = n.parse().unwrap_or(0);
                match label {
                    "passed" => passed += n,
                    "failed" => failed += n,
                    "ignored" => ignored += n,
                    _ => {}
                }
            }
        }
    }
    let status = child.wait()?;
    println!("{passed} passed, {failed} failed, {ignored} skipped");
    if !status.success() {
        bail!("cargo test failed: {status}");
    }
    Ok(())
}

/// The Rust guest workspace (its own workspace, excluded from this one).
const GUEST_RUST_MANIFEST: &str = "guest-examples/rust/Cargo.toml";
/// Where its build goes (explicit, so `CARGO_TARGET_DIR` cannot move it).
const GUEST_RUST_TARGET_DIR: &str = "guest-examples/rust/target";
const WASM_TARGET: &str = "wasm32-wasip2";

/// The guest languages, in build order, with the aliases `--lang` accepts.
const LANGS: &[(&str, &[&str])] = &[
    ("rust", &["rs"]),
    ("c", &[]),
    ("python", &["py"]),
    ("javascript", &["js"]),
    ("go", &["golang"]),
];

/// `cargo xtask guests [--lang L]...`: build every example controller of every language (or of
/// the languages named) into a component at `target/guests/NAME.wasm`. Each language's toolchain
/// is installed on first use by its build script, at pinned versions.
fn guests(extra: &[String]) -> Result<()> {
    let mut langs = Vec::new();
    let mut args = extra.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--lang" => langs.push(args.next().context("--lang needs a value")?.clone()),
            other => match other.strip_prefix("--lang=") {
                Some(lang) => langs.push(lang.to_string()),
                None => bail!(
                    "guests: unknown argument {other:?} (usage: guests [--lang rust|c|python|javascript|go]...)"
                ),
            },
        }
    }
    let mut chosen = Vec::new();
    for lang in &langs {
        let Some((name, _)) = LANGS
            .iter()
            .find(|(n, aliases)| n == lang || aliases.contains(&lang.as_str()))
        else {
            bail!("guests: unknown language {lang:?} (languages: rust, c, python, javascript, go)");
        };
        chosen.push(*name);
    }
    if chosen.is_empty() {
        chosen = LANGS.iter().map(|(n, _)| *n).collect();
    }
    let out = root().join("target").join("guests");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    for lang in chosen {
        match lang {
            "rust" => rust_guests(&out)?,
            "c" => {
                let adapter = wasi_adapter()?;
                run(Command::new("bash")
                    .arg("guest-examples/c/build.sh")
                    .arg(&out)
                    .env("TURTLES_WASI_ADAPTER", adapter))?
            }
            "python" => run(Command::new("bash")
                .arg("guest-examples/python/build.sh")
                .arg(&out))?,
            "javascript" => run(Command::new("bash")
                .arg("guest-examples/js/build.sh")
                .arg(&out))?,
            "go" => {
                let adapter = wasi_adapter()?;
                run(Command::new("bash")
                    .arg("guest-examples/go/build.sh")
                    .arg(&out)
                    .env("TURTLES_WASI_ADAPTER", adapter))?
            }
            _ => unreachable!("LANGS lists every language"),
        }
    }
    Ok(())
}

/// The WASI preview1 reactor adapter matching the host's wasmtime, written from the bytes the
/// `wasi-preview1-component-adapter-provider` crate carries (C guests are preview1 modules).
fn wasi_adapter() -> Result<PathBuf> {
    let dir = root().join("target").join("toolchains");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("wasi_snapshot_preview1.reactor.wasm");
    let bytes = wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
    if std::fs::read(&path).ok().as_deref() != Some(bytes) {
        let tmp = dir.join(".adapter.tmp");
        std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(path)
}

fn rust_guests(out: &Path) -> Result<()> {
    ensure_wasm_target()?;
    run(cargo().args([
        "build",
        "--release",
        "--target",
        WASM_TARGET,
        "--manifest-path",
        GUEST_RUST_MANIFEST,
        "--target-dir",
        GUEST_RUST_TARGET_DIR,
    ]))?;
    let built = root()
        .join(GUEST_RUST_TARGET_DIR)
        .join(WASM_TARGET)
        .join("release");
    let workspace = root().join(GUEST_RUST_MANIFEST);
    let workspace = workspace.parent().context("guest manifest has a folder")?;
    let mut copied = 0;
    for entry in std::fs::read_dir(workspace)? {
        let manifest = entry?.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        // Only the controllers (cdylib crates), not the SDK.
        if !text.contains("cdylib") {
            continue;
        }
        let name = package_name(&text)
            .with_context(|| format!("no package name in {}", manifest.display()))?;
        let wasm = built.join(format!("{}.wasm", name.replace('-', "_")));
        // Write aside, then rename: a running server may be watching (or have mapped) the
        // destination, and must never see a half-written component.
        let tmp = out.join(format!(".{name}.wasm.tmp"));
        let dest = out.join(format!("{name}.wasm"));
        std::fs::copy(&wasm, &tmp)
            .with_context(|| format!("copying {} to {}", wasm.display(), tmp.display()))?;
        std::fs::rename(&tmp, &dest)
            .with_context(|| format!("renaming {} to {}", tmp.display(), dest.display()))?;
        let size = std::fs::metadata(&dest)?.len();
        eprintln!("xtask: {} ({} KiB)", dest.display(), size.div_ceil(1024));
        copied += 1;
    }
    if copied == 0 {
        bail!(
            "no Rust guest controllers found under {}",
            workspace.display()
        );
    }
    Ok(())
}

/// `name = "..."` in a manifest's `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(value) = line.strip_prefix("name") {
                let value = value.trim_start().strip_prefix('=')?.trim();
                return Some(value.trim_matches('"').to_string());
            }
        }
    }
    None
}

/// `rustup target add wasm32-wasip2` unless it is installed (run from the root, so the toolchain
/// pinned by rust-toolchain.toml is the one that gets it).
fn ensure_wasm_target() -> Result<()> {
    let listed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(root())
        .output();
    match listed {
        Ok(o) if o.status.success() => {
            if String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == WASM_TARGET)
            {
                return Ok(());
            }
            run(Command::new("rustup").args(["target", "add", WASM_TARGET]))
        }
        // No rustup: the toolchain is managed some other way; let cargo say if the target is missing.
        _ => {
            eprintln!("xtask: rustup not usable; assuming the {WASM_TARGET} target is installed");
            Ok(())
        }
    }
}

fn bench(extra: &[String]) -> Result<()> {
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "turtles",
        "-p",
        "turtles-tests",
        "--bin",
        "turtles",
        "--bin",
        "turtles-bench",
    ]))?;
    let target = root().join("target").join("release");
    run(Command::new(target.join("turtles-bench"))
        .env("TURTLES_BIN", target.join("turtles"))
        .args(extra))?;
    // The guests' own entry cost, next to the dispatch figures: warm calls in a tight loop
    // (an ignored host test: it needs the release build and the guests).
    let dispatch = match std::env::var("BENCH_ONLY") {
        Ok(only) if !only.is_empty() => only.split(',').any(|s| s.trim() == "dispatch"),
        _ => true,
    };
    if dispatch {
        run(cargo().args([
            "test",
            "--release",
            "-p",
            "turtles",
            "--lib",
            "entry_cost",
            "--",
            "--ignored",
            "--nocapture",
        ]))?;
    }
    Ok(())
}

/// The example controllers a newcomer's host loads (the test-only guests stay out): the
/// workload story (Deployment in Python, ReplicaSet and ReplicationController in JavaScript, a fake kubelet in C, the
/// EndpointSlices of Services, StatefulSets and DaemonSets in Rust, volumes bound and provisioned in
/// Rust), the
/// certificate story (Rust) and the labeler.
const DEMO_CONTROLLERS: &[&str] = &[
    "deployment",
    "replicaset",
    "replicationcontroller",
    "node",
    "endpointslice",
    "statefulset",
    "daemonset",
    "persistentvolume",
    "hostpath-provisioner",
    "horizontal-pod-autoscaler",
    "service-controller",
    "certificate",
    "issuer",
    "issuer-ready",
    "labeler",
    "job",
    "cronjob",
];

/// Build the host and the guests, put the example controllers into `turtles-data/controllers`,
/// run the host in release mode with that folder, apply the example CRDs and print what to try
/// (extra arguments go to `turtles serve`). Runs until the host exits (Ctrl-C).
fn demo(extra: &[String]) -> Result<()> {
    guests(&[])?;
    run(cargo().args(["build", "--release", "-p", "turtles"]))?;
    let data = root().join("turtles-data");
    let dir = data.join("controllers");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for name in DEMO_CONTROLLERS {
        let from = root()
            .join("target")
            .join("guests")
            .join(format!("{name}.wasm"));
        let tmp = dir.join(format!(".{name}.wasm.tmp"));
        std::fs::copy(&from, &tmp).with_context(|| format!("copying {}", from.display()))?;
        std::fs::rename(&tmp, dir.join(format!("{name}.wasm")))?;
    }
    let kubeconfig = data.join("admin.kubeconfig");
    let _ = std::fs::remove_file(&kubeconfig);
    let bin = root().join("target").join("release").join("turtles");
    let mut host = Command::new(&bin)
        .args(["serve", "--data-dir"])
        .arg(&data)
        .arg("--controllers")
        .arg(&dir)
        .args(extra)
        .current_dir(root())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    // The kubeconfig appears once the host serves.
    let start = std::time::Instant::now();
    while !kubeconfig.exists() {
        if let Some(status) = host.try_wait()? {
            bail!("the host exited early: {status}");
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            bail!("the host did not start within a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    match Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["apply", "-f", "guest-examples/crds/"])
        .current_dir(root())
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => eprintln!("xtask: applying the example CRDs failed ({s}); the host runs anyway"),
        Err(e) => eprintln!(
            "xtask: kubectl not found ({e}): apply guest-examples/crds/ yourself to try the certificate story"
        ),
    }
    println!(
        r#"
turtles is running with the example controllers. In another terminal:

  export KUBECONFIG={}
  kubectl get controllers                  # every controller Running (Python, JavaScript, C, Rust, Go, built-in)
  kubectl create deployment web --image=nginx:1.27 --replicas=3
  kubectl get pods -w                      # Pending -> ContainerCreating -> Running (Ctrl-C to stop)
  kubectl rollout status deployment/web
  kubectl get deploy,rs,pods,nodes -o wide
  kubectl expose deployment web --name=web-lb --port=80 --type=LoadBalancer
  kubectl get service web-lb               # EXTERNAL-IP 10.0.0.1 (the Rust service controller)
  kubectl scale deployment web --replicas=1
  kubectl autoscale deployment web --min=2 --max=4 --cpu-percent=50   # the Rust HPA controller scales it to 2
  kubectl get hpa                          # cpu: <unknown>/50%: no metrics-server, as in kind
  kubectl logs deployment/web              # empty: the fake kubelet runs no process
  kubectl delete deployment web            # the garbage collector removes its ReplicaSet and Pods
  kubectl create job pi --image=perl -- perl -e 1
  kubectl wait --for=condition=complete job/pi   # the Go job controller; the node finishes Pods in 1 s
  kubectl create cronjob tick --image=busybox --schedule="*/1 * * * *"   # a Job every minute
  kubectl apply -f guest-examples/manifests/web.yaml   # kube's StatefulSet example (Rust controller)
  kubectl rollout status statefulset/web   # web-0, web-1, web-2 in order, each with its claim
  kubectl get pvc,pv,storageclass          # each claim Bound to a volume provisioned for it
  kubectl create -f guest-examples/manifests/agent.yaml   # a DaemonSet: one Pod per node (Rust controller)
  kubectl rollout status daemonset/agent

Your own controller, hot-swapped on every save:

  {bin} new --lang go hello /tmp/hello     # rust | go | python | js | c
  {bin} dev /tmp/hello --controllers {dir}
  {bin} logs hello -f

Press Ctrl-C here to stop the host.
"#,
        kubeconfig.display(),
        bin = bin.display(),
        dir = dir.display(),
    );
    let status = host.wait()?;
    if !status.success() && status.code().is_some() {
        bail!("the host exited with {status}");
    }
    Ok(())
}

/// `cargo xtask fuzz [--iters N] [--seed S] [--release] [TARGET]...`: the fuzz targets of
/// `host/src/fuzz.rs` (all, or those named) with `N` mutated inputs each (default 200,000).
/// Findings are written to `target/fuzz-failures/`; see docs/security.md.
fn fuzz(extra: &[String]) -> Result<()> {
    let mut iters = "200000".to_string();
    let mut seed = None;
    let mut release = false;
    let mut targets = Vec::new();
    let mut args = extra.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iters" => iters = args.next().context("--iters needs a value")?.clone(),
            "--seed" => seed = Some(args.next().context("--seed needs a value")?.clone()),
            "--release" => release = true,
            other if other.starts_with('-') => bail!(
                "fuzz: unknown argument {other:?} (usage: fuzz [--iters N] [--seed S] [--release] [TARGET]...)"
            ),
            target => targets.push(format!("fuzz::{target}")),
        }
    }
    let mut cmd = cargo();
    cmd.args(["test", "-p", "turtles", "--lib"]);
    if release {
        cmd.arg("--release");
    }
    cmd.env("TURTLES_FUZZ_ITERS", iters);
    if let Some(seed) = seed {
        cmd.env("TURTLES_FUZZ_SEED", seed);
    }
    if targets.is_empty() {
        targets.push("fuzz::".to_string());
    }
    cmd.arg("--").args(&targets).arg("--nocapture");
    run(&mut cmd)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match task.as_str() {
        "test" => test(&rest),
        "guests" => guests(&rest),
        "bench" => bench(&rest),
        "demo" => demo(&rest),
        "fuzz" => fuzz(&rest),
        "import-protobuf" => protobuf::import(&rest, &root()),
        "import-gotypes" => gotypes::import(&rest, &root()),
        "import-openapi" => {
            openapi::import(&rest, &root().join("host/src/builtin/definitions.json"))
        }
        _ => {
            eprintln!("usage: cargo xtask <test|guests|bench|demo|fuzz|import-openapi|import-protobuf|import-gotypes> [args]\n  demo    build the host and every example controller, run the host with them loaded\n  test    fmt check, clippy, guests (every language), the SDKs' unit tests, build, every test\n  guests  build the example controllers to target/guests/NAME.wasm [--lang rust|c|python|javascript|go]\n  bench   release build, then the API benchmark (results as markdown)\n  fuzz    the parser fuzz targets, longer: [--iters N] [--seed S] [--release] [TARGET]...\n  import-openapi DIR  refresh host/src/builtin/definitions.json from kubernetes-json-schema\n  import-protobuf [DIR]  refresh host/src/builtin/protobuf.json from the k8s-pb crate's source\n  import-gotypes [DIR]  refresh host/src/builtin/omitempty.json, pointers.json and enums.json from kube's Go API types (git mirrors, default /work/.mirror)");
            std::process::exit(2);
        }
    }
}
