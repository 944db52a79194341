//! Project tasks: `cargo xtask test` (everything CI checks) and `cargo xtask bench`.

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

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match task.as_str() {
        "test" => test(&rest),
        "bench" => bench(&rest),
        _ => {
            eprintln!("usage: cargo xtask <test|bench> [args]\n  test   fmt check, clippy, build, every test\n  bench  release build, then the API benchmark (results as markdown)");
            std::process::exit(2);
        }
    }
}
