//! Embeds the guest SDK bundle: the WIT, and per language its build script, SDK and project
//! template (what `turtles new` scaffolds from and `turtles build` builds with), as
//! `include_bytes!` entries in `$OUT_DIR/sdk_bundle.rs`, with a hash of the whole for the folder
//! the binary extracts them to.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Per language folder under `guest-examples/`: the files and folders of the bundle.
const BUNDLE: &[(&str, &[&str])] = &[
    (
        "rust",
        &["build.sh", "turtles-controller", "template", "Cargo.lock"],
    ),
    ("c", &["build.sh", "sdk", "template"]),
    ("python", &["build.sh", "sdk", "template"]),
    (
        "js",
        &[
            "build.sh",
            "sdk",
            "testing",
            "template",
            "package.json",
            "package-lock.json",
        ],
    ),
    ("go", &["build.sh", "sdk", "template"]),
];

/// Never bundled, wherever they are: build output, installed toolchains, caches.
const SKIP_DIRS: &[&str] = &["node_modules", "build", "target", "__pycache__"];

fn main() {
    let host = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = host
        .parent()
        .expect("the host crate sits in the repository")
        .to_path_buf();
    let mut files = Vec::new();
    add(&root, Path::new("wit"), &mut files);
    for (lang, entries) in BUNDLE {
        for entry in *entries {
            // Watched even while missing: the build script runs again once it appears.
            add(
                &root,
                &Path::new("guest-examples").join(lang).join(entry),
                &mut files,
            );
        }
    }
    files.sort();
    let mut out = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    // FNV-1a over every path and content: the extracted folder's name changes with the bundle.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for rel in &files {
        let abs = root.join(rel);
        let bytes = std::fs::read(&abs).expect("a bundled file is readable");
        let name = rel.to_string_lossy().replace('\\', "/");
        for b in name.bytes().chain([0]).chain(bytes.iter().copied()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        writeln!(out, "    ({name:?}, include_bytes!({:?})),", abs.display()).expect("string");
    }
    out.push_str("];\n");
    writeln!(out, "pub const HASH: &str = \"{hash:016x}\";").expect("string");
    let dest =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("sdk_bundle.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

/// `rel` (a file, or a folder walked recursively) into `files`, each watched for changes.
fn add(root: &Path, rel: &Path, files: &mut Vec<PathBuf>) {
    let abs = root.join(rel);
    println!("cargo:rerun-if-changed={}", abs.display());
    if abs.is_file() {
        files.push(rel.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(&abs) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = rel.join(&*name);
        // Dot-files are editor and tool state, except a template's own (`.gitignore.tmpl`).
        if name.starts_with('.') && !name.ends_with(".tmpl") {
            continue;
        }
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if is_dir {
            if !SKIP_DIRS.contains(&&*name) {
                add(root, &path, files);
            }
        } else if !name.ends_with(".pyc") && !name.ends_with(".tmp") && !name.ends_with(".wasm") {
            files.push(path);
        }
    }
}
