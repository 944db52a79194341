//! The controllers folder: every `*.wasm` file is a controller (or, when it exports the
//! `turtles:admission` world, an admission policy: `policy.rs`) named after its stem. New files
//! load, changed files are swapped in place, removed files unload. Dotfiles and temporary names
//! are ignored, and a file is only read once its size and modification time have held still
//! across two scans, so a half-written file is never loaded (write-then-rename is the supported
//! way to drop one).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::controller::ControllerHandle;
use super::policy::PolicyHandle;
use super::Host;
use crate::admission::StartupHold;

/// How often the folder is scanned.
pub const SCAN: Duration = Duration::from_millis(25);
/// How often controller status objects are refreshed.
const STATUS_EVERY: Duration = Duration::from_secs(1);

type Stamp = (SystemTime, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Is this a file the folder loads?
pub fn is_controller_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    !name.starts_with('.') && name.ends_with(".wasm") && name.len() > ".wasm".len()
}

/// What a file of the folder is.
#[derive(Clone)]
enum Handle {
    Controller(Arc<ControllerHandle>),
    Policy(Arc<PolicyHandle>),
}

impl Handle {
    async fn unload(&self) {
        match self {
            Self::Controller(h) => h.unload().await,
            Self::Policy(h) => h.unload().await,
        }
    }

    async fn publish_status(&self) {
        match self {
            Self::Controller(h) => h.publish_status().await,
            Self::Policy(h) => h.publish_status().await,
        }
    }
}

struct Entry {
    handle: Handle,
    /// The stamp of the bytes last handed to the controller.
    loaded: Stamp,
}

/// All controllers loaded from one folder.
pub struct Folder {
    dir: PathBuf,
    host: Arc<Host>,
    entries: tokio::sync::Mutex<HashMap<String, Entry>>,
    /// Held until the first scan handed every file to its handle: until then, which admission
    /// policies are in force is not known (see `admission::wasm::StartupHold`).
    first_scan: std::sync::Mutex<Option<StartupHold>>,
}

impl Folder {
    pub fn new(dir: PathBuf, host: Arc<Host>) -> Arc<Self> {
        let hold = host.service.admission.wasm.hold();
        Arc::new(Self {
            dir,
            host,
            entries: tokio::sync::Mutex::new(HashMap::new()),
            first_scan: std::sync::Mutex::new(Some(hold)),
        })
    }

    /// Components compiled so far (identical bytes share one compile).
    pub fn compiles(&self) -> u64 {
        self.host.runtime.compiler.compiles()
    }

    /// Components compiled optimized in the background after starting on baseline code.
    pub fn tier_ups(&self) -> u64 {
        self.host.runtime.compiler.tier_ups()
    }

    /// The host every controller of the folder shares.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// The controllers (not the admission policies) of the folder.
    pub async fn handles(&self) -> Vec<Arc<ControllerHandle>> {
        self.entries
            .lock()
            .await
            .values()
            .filter_map(|e| match &e.handle {
                Handle::Controller(h) => Some(h.clone()),
                Handle::Policy(_) => None,
            })
            .collect()
    }

    /// Every controller and admission policy of the folder as `/metrics` shows it.
    pub async fn metered(&self) -> Vec<super::driver::Metered> {
        self.entries
            .lock()
            .await
            .values()
            .map(|e| match &e.handle {
                Handle::Controller(h) => h.metered(),
                Handle::Policy(h) => h.metered(),
            })
            .collect()
    }

    fn scan_dir(&self) -> HashMap<String, (PathBuf, Stamp)> {
        let mut out = HashMap::new();
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for entry in rd.flatten() {
            let path = entry.path();
            if !is_controller_file(&path) || !path.is_file() {
                continue;
            }
            if let (Some(name), Some(st)) = (super::controller_name(&path), stamp(&path)) {
                out.insert(name, (path, st));
            }
        }
        out
    }

    /// Load what is there, then follow the folder until `shutdown`.
    pub async fn run(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        // Held here so that any way out of this function (an early return, a panic) lets go.
        let mut first_hold = self.first_scan.lock().ok().and_then(|mut h| h.take());
        if let Err(e) = std::fs::create_dir_all(&self.dir) {
            tracing::error!(dir = %self.dir.display(), error = %e, "controllers folder unusable");
            return;
        }
        tracing::info!(dir = %self.dir.display(), "watching the controllers folder");
        let mut pending: HashMap<String, Stamp> = HashMap::new();
        let mut first = true;
        let mut was_leading = false;
        let mut last_status = std::time::Instant::now();
        loop {
            let mut seen = self.scan_dir();
            for reserved in crate::controllers::BUILT_IN {
                if seen.remove(*reserved).is_some() && first {
                    tracing::warn!(
                        controller = reserved,
                        "the name of a built-in controller: file ignored"
                    );
                }
            }
            // At start, and whenever this host becomes the one that runs the controllers (with
            // etcd no host leads yet at start; a new leader's folder is what runs from now on).
            let leading = self.host.service.leadership.is_leading();
            if first || (leading && !was_leading) {
                remove_stale(&self.host.service, |name| seen.contains_key(name)).await;
            }
            was_leading = leading;
            let mut entries = self.entries.lock().await;
            // Removed files unload.
            let gone: Vec<String> = entries
                .keys()
                .filter(|n| !seen.contains_key(*n))
                .cloned()
                .collect();
            for name in gone {
                if let Some(e) = entries.remove(&name) {
                    e.handle.unload().await;
                }
                pending.remove(&name);
            }
            for (name, (path, st)) in &seen {
                let changed = entries.get(name).is_none_or(|e| e.loaded != *st);
                if !changed {
                    pending.remove(name);
                    continue;
                }
                // Load only once the file held still for a scan (or at start-up).
                let stable = first || pending.get(name) == Some(st);
                if !stable {
                    pending.insert(name.clone(), *st);
                    continue;
                }
                pending.remove(name);
                // Up to tens of MiB: read on the blocking pool, not on an async worker.
                let read = {
                    let path = path.clone();
                    tokio::task::spawn_blocking(move || read_bounded(&path))
                        .await
                        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
                };
                let bytes = match read {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(file = %path.display(), error = %e, "cannot read controller");
                        continue;
                    }
                };
                if stamp(path) != Some(*st) {
                    // Changed while we read it: next scan.
                    continue;
                }
                use super::policy::Exports;
                let exports = super::policy::exports(&bytes);
                let file = path.display().to_string();
                let handle = match entries.get(name).map(|e| e.handle.clone()) {
                    // Bytes that are neither (truncated, corrupt) never switch the kind: their
                    // load fails and the running version stays in force.
                    Some(h @ Handle::Controller(_)) if exports != Exports::Policy => h,
                    Some(h @ Handle::Policy(_)) if exports != Exports::Controller => h,
                    other => {
                        // New, or a controller replaced by a policy (or back): the old one goes.
                        if let Some(old) = other {
                            old.unload().await;
                        }
                        if exports == Exports::Policy {
                            Handle::Policy(PolicyHandle::new(name, self.host.clone(), &file))
                        } else {
                            Handle::Controller(ControllerHandle::new(
                                name,
                                self.host.clone(),
                                &file,
                            ))
                        }
                    }
                };
                entries.insert(
                    name.clone(),
                    Entry {
                        handle: handle.clone(),
                        loaded: *st,
                    },
                );
                // A policy found at start-up holds back admission until its first load.
                let hold = (first && matches!(handle, Handle::Policy(_)))
                    .then(|| self.host.service.admission.wasm.hold());
                // Compile in the background; the old version (if any) serves meanwhile.
                tokio::spawn(async move {
                    match &handle {
                        Handle::Controller(h) => h.load_from_folder(bytes).await,
                        Handle::Policy(h) => h.load_from_folder(bytes, hold).await,
                    }
                    handle.publish_status().await;
                });
            }
            if last_status.elapsed() >= STATUS_EVERY {
                last_status = std::time::Instant::now();
                for e in entries.values() {
                    e.handle.publish_status().await;
                }
            }
            drop(entries);
            first_hold.take();
            first = false;
            tokio::select! {
                _ = tokio::time::sleep(SCAN) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// At start-up and when this host starts leading: forget the controllers whose files are gone
/// (removed while the host was down, or not in the new leader's folder): their `Controller`
/// objects, roles and bindings. Built-in controllers stay. Only a leading host removes anything
/// (see `remove_identity`).
pub async fn remove_stale(svc: &crate::service::Service, present: impl Fn(&str) -> bool) {
    use super::controller::{remove_identity, GROUP, RESOURCE};
    let Some(ri) = svc.registry.lookup(GROUP, "v1", RESOURCE) else {
        return;
    };
    let Ok(snap) = svc.store.list(&ri.group_resource(), None) else {
        return;
    };
    for obj in snap.items.values() {
        let name = crate::model::meta::name(obj.head());
        let builtin =
            obj.value().pointer("/status/builtIn") == Some(&serde_json::Value::Bool(true));
        if builtin || present(name) {
            continue;
        }
        tracing::info!(controller = %name, "its file is gone: removing the stale controller");
        remove_identity(svc, name).await;
    }
}

/// Largest component file the folder reads (the biggest example, Python, is ~18 MiB).
const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// A component file, refused past [`MAX_COMPONENT_BYTES`].
fn read_bounded(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_COMPONENT_BYTES} bytes"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wasm_files_without_dots() {
        assert!(is_controller_file(Path::new("/x/labeler.wasm")));
        assert!(!is_controller_file(Path::new("/x/.labeler.wasm")));
        assert!(!is_controller_file(Path::new("/x/labeler.wasm.tmp")));
        assert!(!is_controller_file(Path::new("/x/.wasm")));
        assert!(!is_controller_file(Path::new("/x/labeler.txt")));
    }
}
