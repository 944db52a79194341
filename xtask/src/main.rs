//! Project tasks: `cargo xtask test` (everything CI checks), `cargo xtask guests` (the example
//! controllers as WebAssembly components) and `cargo xtask bench`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

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
    // The end-to-end tests spawn the real binary: build it first.
    run(cargo().args(["build", "-p", "turtles"]))?;
    cargo_test(extra)
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

/// `cargo xtask guests [--lang rust]`: build the example controllers into components and copy each
/// to `target/guests/NAME.wasm`, NAME being the crate name (`labeler-v2.wasm`).
fn guests(extra: &[String]) -> Result<()> {
    let mut langs = Vec::new();
    let mut args = extra.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--lang" => langs.push(args.next().context("--lang needs a value")?.clone()),
            other => match other.strip_prefix("--lang=") {
                Some(lang) => langs.push(lang.to_string()),
                None => bail!("guests: unknown argument {other:?} (usage: guests [--lang rust])"),
            },
        }
    }
    if langs.is_empty() {
        langs.push("rust".into());
    }
    let out = root().join("target").join("guests");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    for lang in &langs {
        match lang.as_str() {
            "rust" => rust_guests(&out)?,
            other => bail!("guests: no {other:?} guests yet (languages: rust)"),
        }
    }
    Ok(())
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
        .args(extra))
}

/// The example controllers a newcomer's host loads (the test-only guests stay out).
const DEMO_CONTROLLERS: &[&str] = &["labeler"];

/// Build the guests, put the example controllers into `turtles-data/controllers`, and run the
/// host in release mode with that folder (extra arguments go to `turtles serve`).
fn demo(extra: &[String]) -> Result<()> {
    guests(&[])?;
    let dir = root().join("turtles-data").join("controllers");
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
    run(cargo()
        .args([
            "run",
            "--release",
            "-p",
            "turtles",
            "--",
            "serve",
            "--data-dir",
        ])
        .arg(root().join("turtles-data"))
        .arg("--controllers")
        .arg(&dir)
        .args(extra))
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
        _ => {
            eprintln!("usage: cargo xtask <test|guests|bench|demo> [args]\n  demo    build the example controllers and run the host with them loaded\n  test    fmt check, clippy, guests, build, every test\n  guests  build the example controllers to target/guests/NAME.wasm [--lang rust]\n  bench   release build, then the API benchmark (results as markdown)");
            std::process::exit(2);
        }
    }
}
