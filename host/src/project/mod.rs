//! Controller projects outside this repository: `turtles new` scaffolds one from a language's
//! template, `turtles build` builds it into `NAME.wasm` with that language's toolchain, `turtles
//! dev` rebuilds on every change and drops the result into a controllers folder.
//!
//! The SDKs, templates and build scripts travel inside the binary (the [`bundle`]); each binary
//! extracts its own bundle once to `$TURTLES_HOME/sdk/VERSION-HASH/` and projects reference the
//! SDK there by path, so no project copies SDK files. Toolchains are installed on first use into
//! `$TURTLES_TOOLCHAINS` (default `$TURTLES_HOME/toolchains`), shared by every project.

pub mod bundle;
pub mod dev;
pub mod logs;

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Everything that can go wrong scaffolding or building a project.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("unknown language {0:?} (languages: rust, go, python, js, c)")]
    UnknownLang(String),
    #[error("{0:?} is not a valid controller name: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, at most 63 characters")]
    InvalidName(String),
    #[error("{0} exists and is not empty")]
    NotEmpty(PathBuf),
    #[error(
        "{0}: not a turtles project (no turtles.toml with name and lang; `turtles new` makes one)"
    )]
    NotAProject(PathBuf),
    #[error("no home folder for the SDK bundle: set TURTLES_HOME (or HOME)")]
    NoHome,
    #[error("the {lang} build of {name} failed ({status})")]
    BuildFailed {
        lang: &'static str,
        name: String,
        status: std::process::ExitStatus,
    },
}

pub type Result<T, E = ProjectError> = std::result::Result<T, E>;

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ProjectError + '_ {
    move |source| ProjectError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A guest language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Go,
    Python,
    Js,
    C,
}

impl Lang {
    pub const ALL: [Lang; 5] = [Lang::Rust, Lang::Go, Lang::Python, Lang::Js, Lang::C];

    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "rust" | "rs" => Lang::Rust,
            "go" | "golang" => Lang::Go,
            "python" | "py" => Lang::Python,
            "js" | "javascript" => Lang::Js,
            "c" => Lang::C,
            other => return Err(ProjectError::UnknownLang(other.to_owned())),
        })
    }

    /// The name in `turtles.toml` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Go => "go",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::C => "c",
        }
    }

    /// Its folder in the bundle, `guest-examples/<dir>`.
    fn dir(self) -> &'static str {
        self.name()
    }
}

/// A project: its folder and what its `turtles.toml` says.
#[derive(Debug, Clone)]
pub struct Project {
    pub dir: PathBuf,
    pub name: String,
    pub lang: Lang,
}

/// The file that marks a project's folder.
pub const MANIFEST: &str = "turtles.toml";

impl Project {
    /// Reads `DIR/turtles.toml` (`name = "..."`, `lang = "..."`).
    pub fn open(dir: &Path) -> Result<Self> {
        let manifest = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest)
            .map_err(|_| ProjectError::NotAProject(dir.to_path_buf()))?;
        let value = |key: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
            })
        };
        let (Some(name), Some(lang)) = (value("name"), value("lang")) else {
            return Err(ProjectError::NotAProject(dir.to_path_buf()));
        };
        check_name(&name)?;
        let dir = dir.canonicalize().map_err(io(dir))?;
        Ok(Self {
            dir,
            name,
            lang: Lang::parse(&lang)?,
        })
    }

    /// Where `turtles build` puts the component by default: `DIR/NAME.wasm`.
    pub fn default_output(&self) -> PathBuf {
        self.dir.join(format!("{}.wasm", self.name))
    }

    /// Builds the project into `out` (written aside, then renamed: `out` may be in a live
    /// controllers folder) with the language's build script from the bundle, its output on
    /// this process's stderr. Returns how long it took.
    pub fn build(&self, home: &bundle::Home, out: &Path) -> Result<Duration> {
        let sdk = home.extract()?;
        let env = home.toolchain_env()?;
        let script = sdk
            .join("guest-examples")
            .join(self.lang.dir())
            .join("build.sh");
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let out = std::path::absolute(out).map_err(io(out))?;
        let start = Instant::now();
        // The toolchains' stdout joins their stderr: this process's stdout stays clean, and
        // whoever reads the build's messages (`turtles dev`'s caller) gets all of them.
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(io(&script))?;
        let status = Command::new("bash")
            .arg(&script)
            .arg("--project")
            .arg(&self.dir)
            .arg(&out)
            .envs(env)
            .stdout(std::process::Stdio::from(stderr))
            .status()
            .map_err(io(&script))?;
        if !status.success() {
            return Err(ProjectError::BuildFailed {
                lang: self.lang.name(),
                name: self.name.clone(),
                status,
            });
        }
        Ok(start.elapsed())
    }
}

/// A controller's name is its file's stem and the `Controller` object's name: a DNS-1123 label.
pub fn check_name(name: &str) -> Result<()> {
    // A letter first: every language's package name accepts it (cargo refuses a leading digit).
    let ok = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(ProjectError::InvalidName(name.to_owned()))
    }
}

/// `turtles new`: scaffolds a project of `lang` named `name` in `dir` (which must not exist or
/// be empty) from the language's template, with `turtles.toml`. Returns the files written.
pub fn new_project(
    home: &bundle::Home,
    lang: Lang,
    name: &str,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    check_name(name)?;
    if let Ok(mut entries) = std::fs::read_dir(dir) {
        if entries.next().is_some() {
            return Err(ProjectError::NotEmpty(dir.to_path_buf()));
        }
    }
    let sdk = home.extract()?;
    let lang_dir = sdk.join("guest-examples").join(lang.dir());
    let prefix = format!("guest-examples/{}/template/", lang.dir());
    let vars = [
        ("{{name}}", name.to_owned()),
        ("{{name_snake}}", name.replace('-', "_")),
        ("{{sdk}}", lang_dir.to_string_lossy().into_owned()),
        ("{{version}}", env!("CARGO_PKG_VERSION").to_owned()),
    ];
    let mut written = Vec::new();
    for (path, bytes) in bundle::files() {
        let Some(rel) = path.strip_prefix(&prefix) else {
            continue;
        };
        let rel = rel.strip_suffix(".tmpl").unwrap_or(rel);
        let dest = dir.join(rel);
        let contents = match std::str::from_utf8(bytes) {
            Ok(text) => {
                let mut text = text.to_owned();
                for (k, v) in &vars {
                    text = text.replace(k, v);
                }
                text.into_bytes()
            }
            Err(_) => bytes.to_vec(),
        };
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&dest, contents).map_err(io(&dest))?;
        written.push(dest);
    }
    let manifest = dir.join(MANIFEST);
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    std::fs::write(
        &manifest,
        format!(
            "# A turtles controller project: `turtles build` builds it into {name}.wasm.\nname = \"{name}\"\nlang = \"{}\"\n",
            lang.name()
        ),
    )
    .map_err(io(&manifest))?;
    written.push(manifest);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_labels() {
        for ok in ["a", "hello-ctl", "x1", &"a".repeat(63)] {
            check_name(ok).unwrap();
        }
        for bad in ["", "-a", "a-", "1a", "A", "a_b", "a.b", &"a".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    /// Every language's template scaffolds a project that `Project::open` reads back, with
    /// every placeholder filled.
    #[test]
    fn every_template_scaffolds_a_project() {
        let root = std::env::temp_dir().join(format!("turtles-new-{}", std::process::id()));
        let home = bundle::Home::at(root.clone());
        for lang in Lang::ALL {
            let dir = root.join("projects").join(lang.name());
            let files = new_project(&home, lang, "hello-ctl", &dir).unwrap();
            assert!(files.len() >= 3, "{lang:?}: only {files:?}");
            assert!(files.iter().any(|f| f.ends_with("README.md")), "{lang:?}");
            for f in &files {
                let text = std::fs::read_to_string(f).unwrap_or_default();
                assert!(!text.contains("{{"), "{} keeps a placeholder", f.display());
            }
            let p = Project::open(&dir).unwrap();
            assert_eq!((p.name.as_str(), p.lang), ("hello-ctl", lang));
            assert!(matches!(
                new_project(&home, lang, "hello-ctl", &dir),
                Err(ProjectError::NotEmpty(_))
            ));
        }
        let _ = std::fs::remove_dir_all(&root);
    }
}
