//! `turtles dev`: build the project, drop `NAME.wasm` into a controllers folder (written aside,
//! then renamed, so the running host swaps it in place), and again whenever a source file
//! changes. The sources are polled (every [`POLL`]): a fingerprint of every file's path, size
//! and modification time outside build output, so any editor's way of saving is seen.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::bundle::Home;
use super::{Project, Result};

/// How often the sources are looked at.
pub const POLL: Duration = Duration::from_millis(100);

/// Folders that are output or tooling, never sources.
const IGNORED_DIRS: &[&str] = &[
    "build",
    "target",
    "node_modules",
    "__pycache__",
    "venv",
    "dist",
    "vendor",
];

/// Files a build writes beside the sources (lock files the toolchains create or refresh): never
/// a change to rebuild for.
const BUILD_WRITTEN: &[&str] = &["Cargo.lock", "package-lock.json", "go.sum"];

/// The sources' fingerprint: every file that is not output (`build/`, `target/`, dot-files,
/// `*.wasm`, editor backups) with its size and modification time, sorted.
pub fn fingerprint(dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, u64, Option<SystemTime>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.')
            || name.ends_with('~')
            || name.ends_with(".wasm")
            || BUILD_WRITTEN.contains(&&*name)
        {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.is_dir() {
            if !IGNORED_DIRS.contains(&&*name) {
                walk(&entry.path(), out);
            }
        } else {
            out.push((entry.path(), meta.len(), meta.modified().ok()));
        }
    }
}

/// Builds `project` into `controllers/NAME.wasm` now and after every change, forever. A failed
/// build is reported and the last good component stays in the folder.
pub fn run(home: &Home, project: &Project, controllers: &Path) -> Result<()> {
    let out = controllers.join(format!("{}.wasm", project.name));
    loop {
        // The sources as the build takes them: an edit saved while it runs is a change after it.
        let mut seen = fingerprint(&project.dir);
        match project.build(home, &out) {
            Ok(took) => eprintln!(
                "turtles dev: built {} in {} ms -> {}",
                project.name,
                took.as_millis(),
                out.display()
            ),
            Err(e) => eprintln!("turtles dev: {e}; waiting for the next change"),
        }
        // Wait for a change (at once if one was saved during the build), then for the sources
        // to settle (an editor may write several files).
        loop {
            let now = fingerprint(&project.dir);
            if now != seen {
                seen = now;
                loop {
                    std::thread::sleep(POLL / 2);
                    let settled = fingerprint(&project.dir);
                    if settled == seen {
                        break;
                    }
                    seen = settled;
                }
                break;
            }
            std::thread::sleep(POLL);
        }
        eprintln!("turtles dev: change seen, rebuilding {}", project.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_sees_sources_and_ignores_output() {
        let dir = std::env::temp_dir().join(format!("turtles-dev-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join("build")).unwrap();
        std::fs::write(dir.join("src/main.go"), "package main").unwrap();
        let a = fingerprint(&dir);
        assert_eq!(a.len(), 1);
        std::fs::write(dir.join("build/x.o"), "obj").unwrap();
        std::fs::write(dir.join("hello.wasm"), "wasm").unwrap();
        std::fs::write(dir.join(".main.go.swp"), "swap").unwrap();
        // Lock files a build writes or refreshes beside the sources.
        std::fs::write(dir.join("Cargo.lock"), "# lock").unwrap();
        std::fs::write(dir.join("go.sum"), "sum").unwrap();
        assert_eq!(fingerprint(&dir), a, "output counted as a source");
        std::fs::write(dir.join("src/main.go"), "package main // edited").unwrap();
        assert_ne!(fingerprint(&dir), a, "an edit went unseen");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
