//! Process wiring: open the store, bootstrap, bind, write the kubeconfig, serve until a signal,
//! then shut down with everything flushed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use crate::api::{self, ApiOptions, AppState};
use crate::model::Registry;
use crate::service::Service;
use crate::store::{SledStore, Store, StoreOptions};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("opening the store in {dir}: {source}")]
    Store {
        dir: PathBuf,
        source: crate::store::StoreError,
    },
    #[error("creating the initial namespaces: {0}")]
    Bootstrap(crate::model::ApiError),
    #[error("listening on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(std::io::Error),
    #[error("flushing the store at shutdown: {0}")]
    Shutdown(crate::store::StoreError),
}

/// How long shutdown waits for open requests and watches to finish before dropping them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub controllers: Option<PathBuf>,
    pub watch_history: usize,
    pub fsync: bool,
    pub api: ApiOptions,
}

/// The kubeconfig kubectl uses as is.
pub fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: turtles\n  cluster:\n    server: {server}\nusers:\n- name: admin\n  user: {{}}\ncontexts:\n- name: turtles\n  context:\n    cluster: turtles\n    user: admin\n    namespace: default\ncurrent-context: turtles\n"
    )
}

fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

/// Run the server until SIGINT or SIGTERM.
pub async fn serve(cfg: ServeConfig) -> Result<(), ServerError> {
    let started = Instant::now();
    let store_dir = cfg.data_dir.join("store");
    let store = SledStore::open(StoreOptions {
        dir: store_dir.clone(),
        watch_history: cfg.watch_history,
        fsync: cfg.fsync,
    })
    .map_err(|source| ServerError::Store {
        dir: store_dir,
        source,
    })?;
    let store: Arc<dyn Store> = Arc::new(store);
    let registry = Arc::new(Registry::with_builtins());
    let service = Arc::new(Service::new(store.clone(), registry.clone()));
    service.bootstrap().await.map_err(ServerError::Bootstrap)?;

    if let Some(dir) = &cfg.controllers {
        tracing::warn!(
            dir = %dir.display(),
            "the WebAssembly controller runtime is not part of this build yet; the controllers folder is not loaded"
        );
    }

    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    // Every stored CRD is served before the server answers.
    let crds = crate::crd::controller::CrdController::new(service.clone());
    crds.start(shutdown_rx.clone())
        .await
        .map_err(ServerError::Bootstrap)?;
    let state = Arc::new(AppState {
        crds,
        service,
        registry,
        options: cfg.api.clone(),
        shutdown: shutdown_rx,
    });
    let app = api::router(state);
    let listener = TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| ServerError::Bind {
            addr: cfg.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        addr: cfg.listen,
        source,
    })?;
    let url = format!("http://{addr}");
    let kc_path = cfg.data_dir.join("admin.kubeconfig");
    write_atomically(&kc_path, &kubeconfig(&url)).map_err(|source| ServerError::Kubeconfig {
        path: kc_path.clone(),
        source,
    })?;
    tracing::info!(
        url = %url,
        kubeconfig = %kc_path.display(),
        ready_ms = started.elapsed().as_secs_f64() * 1000.0,
        "turtles is serving; try: kubectl --kubeconfig {} get ns",
        kc_path.display()
    );

    let mut stopping = shutdown_tx.subscribe();
    let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
        wait_for_signal().await;
        tracing::info!("shutting down: ending watches, finishing requests, flushing the store");
        let _ = shutdown_tx.send(true);
    });
    // A client that stops reading (a stalled watch) would hold graceful shutdown forever: past
    // the grace period its connection is dropped and the store is flushed regardless.
    let result = tokio::select! {
        r = serving => r,
        _ = async {
            let _ = stopping.wait_for(|s| *s).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "connections still open after the grace period; closing them");
            Ok(())
        }
    };
    let flushed = tokio::task::spawn_blocking(move || store.shutdown())
        .await
        .unwrap_or(Ok(()));
    result.map_err(ServerError::Serve)?;
    flushed.map_err(ServerError::Shutdown)?;
    tracing::info!("stopped cleanly");
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
