//! The SDK bundle this binary carries (see `host/build.rs`): the WIT, and per language the SDK,
//! the project template and the build script, extracted once per bundle to
//! `$TURTLES_HOME/sdk/VERSION-HASH/` with the repository's layout (so each build script finds
//! `../../wit` as it does in the repository).

use std::path::{Path, PathBuf};

use super::{io, ProjectError, Result};

mod generated {
    include!(concat!(env!("OUT_DIR"), "/sdk_bundle.rs"));
}

/// Every bundled file: its path (repository-relative, `/`-separated) and contents.
pub fn files() -> impl Iterator<Item = (&'static str, &'static [u8])> {
    generated::FILES.iter().copied()
}

/// The WASI preview1 reactor adapter matching this host's wasmtime, for languages whose
/// compilers emit preview1 modules (C, Go).
const ADAPTER: &[u8] =
    wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
const ADAPTER_FILE: &str = "wasi_snapshot_preview1.reactor.wasm";

/// Where bundles and toolchains live: `$TURTLES_HOME`, else `$XDG_DATA_HOME/turtles`, else
/// `~/.local/share/turtles`.
#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
    toolchains: Option<PathBuf>,
}

impl Home {
    pub fn from_env() -> Result<Self> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let root = var("TURTLES_HOME")
            .or_else(|| var("XDG_DATA_HOME").map(|d| d.join("turtles")))
            .or_else(|| var("HOME").map(|h| h.join(".local/share/turtles")))
            .ok_or(ProjectError::NoHome)?;
        Ok(Self {
            root,
            toolchains: var("TURTLES_TOOLCHAINS"),
        })
    }

    pub fn at(root: PathBuf) -> Self {
        Self {
            root,
            toolchains: None,
        }
    }

    /// This binary's bundle folder (not necessarily extracted yet).
    pub fn sdk_dir(&self) -> PathBuf {
        self.root
            .join("sdk")
            .join(format!("{}-{}", env!("CARGO_PKG_VERSION"), generated::HASH))
    }

    /// Toolchains every project shares: `$TURTLES_TOOLCHAINS`, else `HOME/toolchains`.
    pub fn toolchains(&self) -> PathBuf {
        self.toolchains
            .clone()
            .unwrap_or_else(|| self.root.join("toolchains"))
    }

    /// Extracts the bundle unless it is there; returns its folder. Written to a private folder
    /// and renamed into place, so concurrent runs never see half a bundle.
    pub fn extract(&self) -> Result<PathBuf> {
        let dir = self.sdk_dir();
        if dir.join(".complete").exists() {
            return Ok(dir);
        }
        let partial = self.root.join("sdk").join(format!(
            ".{}-{}.partial-{}",
            env!("CARGO_PKG_VERSION"),
            generated::HASH,
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&partial);
        for (path, bytes) in files() {
            let dest = partial.join(path);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::write(&dest, bytes).map_err(io(&dest))?;
        }
        let marker = partial.join(".complete");
        std::fs::write(&marker, b"").map_err(io(&marker))?;
        if let Err(e) = std::fs::rename(&partial, &dir) {
            let _ = std::fs::remove_dir_all(&partial);
            // Another process extracted the same bundle first: theirs is as good.
            if !dir.join(".complete").exists() {
                return Err(ProjectError::Io {
                    path: dir,
                    source: e,
                });
            }
        }
        Ok(dir)
    }

    /// The environment the build scripts get: the shared toolchains folder and the adapter
    /// (written there once). Variables the caller set already are kept.
    pub fn toolchain_env(&self) -> Result<Vec<(String, PathBuf)>> {
        let toolchains = self.toolchains();
        std::fs::create_dir_all(&toolchains).map_err(io(&toolchains))?;
        let adapter = match std::env::var_os("TURTLES_WASI_ADAPTER") {
            Some(a) if !a.is_empty() => PathBuf::from(a),
            _ => write_adapter(&toolchains)?,
        };
        Ok(vec![
            ("TURTLES_TOOLCHAINS".into(), toolchains),
            ("TURTLES_WASI_ADAPTER".into(), adapter),
        ])
    }
}

fn write_adapter(dir: &Path) -> Result<PathBuf> {
    let path = dir.join(ADAPTER_FILE);
    if std::fs::read(&path).is_ok_and(|b| b == ADAPTER) {
        return Ok(path);
    }
    let tmp = dir.join(format!(".adapter-{}.tmp", std::process::id()));
    std::fs::write(&tmp, ADAPTER).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_has_the_wit_and_every_language_and_extracts_once() {
        let names: Vec<&str> = files().map(|(p, _)| p).collect();
        assert!(names.contains(&"wit/controller.wit"), "{names:?}");
        for lang in super::super::Lang::ALL {
            let build = format!("guest-examples/{}/build.sh", lang.dir());
            assert!(names.contains(&build.as_str()), "no {build}");
        }
        assert!(
            !names
                .iter()
                .any(|n| n.contains("node_modules/") || n.contains("/build/")),
            "build output bundled"
        );
        let root = std::env::temp_dir().join(format!("turtles-bundle-{}", std::process::id()));
        let home = Home::at(root.clone());
        let dir = home.extract().unwrap();
        assert!(dir.join("wit/controller.wit").is_file());
        let stamp = std::fs::metadata(dir.join(".complete"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(home.extract().unwrap(), dir);
        let again = std::fs::metadata(dir.join(".complete"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(stamp, again, "extracted twice");
        let _ = std::fs::remove_dir_all(&root);
    }
}
