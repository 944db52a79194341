//! Process wiring: open the store, bootstrap, bind, write the kubeconfig, serve until a signal,
//! then shut down with everything flushed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::api::{self, ApiOptions, AppState};
use crate::model::Registry;
use crate::service::Service;
use crate::store::etcd_store::{EtcdOptions, EtcdStore};
use crate::store::{SledStore, Store, StoreOptions, WalStore};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("opening the store in {dir}: {source}")]
    Store {
        dir: PathBuf,
        source: crate::store::StoreError,
    },
    #[error("opening the etcd store at {endpoints}: {source}")]
    Etcd {
        endpoints: String,
        source: crate::store::StoreError,
    },
    #[error("sharing {name} with the other hosts through etcd: {why}")]
    Shared { name: String, why: String },
    #[error("creating the initial namespaces: {0}")]
    Bootstrap(crate::model::ApiError),
    #[error(transparent)]
    ServiceAccountKey(#[from] crate::auth::serviceaccount::KeyError),
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
    #[error("authentication setup: {0}")]
    Auth(crate::auth::tokens::TokenError),
    #[error("TLS setup: {0}")]
    Tls(crate::auth::tls::TlsError),
    #[error("the aggregation layer: {0}")]
    Aggregator(crate::aggregator::AggregatorError),
    #[error("the CSR signer's CA (--cluster-signing-cert-file): {0}")]
    Signer(crate::auth::signer::SignerError),
    #[error("starting the WebAssembly runtime: {0}")]
    Runtime(crate::runtime::RuntimeError),
    #[error("serving: {0}")]
    Serve(std::io::Error),
    #[error("flushing the store at shutdown: {0}")]
    Shutdown(crate::store::StoreError),
}

/// How long shutdown waits for open requests and watches to finish before dropping them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Serve plain HTTP (tokens travel in the clear).
    pub insecure_http: bool,
    /// Extra SANs for the generated serving certificate.
    pub sans: Vec<String>,
    /// The operator's own certificate chain and key, instead of generated ones.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// The CAs client certificates are verified against (kube's `--client-ca-file`); without
    /// it, the generated CA (none with `cert`).
    pub client_ca: Option<PathBuf>,
    /// The CA certificate and key the CSR signer issues with (kube-controller-manager's
    /// `--cluster-signing-{cert,key}-file`); without it, the generated CA when it is the client
    /// CA.
    pub cluster_signing: Option<(PathBuf, PathBuf)>,
    /// Front proxies that name the user in headers (kube's `--requestheader-*`).
    pub requestheader: Option<RequestHeaderOptions>,
}

/// kube's `--requestheader-*` flags.
#[derive(Debug, Clone)]
pub struct RequestHeaderOptions {
    /// The CAs a front proxy's client certificate must chain to.
    pub client_ca: PathBuf,
    /// The common names its certificate may have (empty: any).
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_headers_prefix: Vec<String>,
}

/// Timeouts and limits of the HTTP layer below the handlers (kube's values where it has them).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// A TLS handshake must complete within this.
    pub tls_handshake_timeout: Duration,
    /// An HTTP/1.1 request head must arrive within this once the server waits for it (kube's
    /// `ReadHeaderTimeout` is 32 s). This also closes HTTP/1.1 keep-alive connections idle that
    /// long.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed (kube: 90 s).
    pub idle_timeout: Duration,
    /// Connections open at once that have not authenticated a request; beyond it the oldest is
    /// closed (0: no limit).
    pub max_unauthenticated_connections: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            tls_handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(32),
            idle_timeout: Duration::from_secs(90),
            max_unauthenticated_connections: 1024,
        }
    }
}

/// HTTP/2 streams one connection may have open at once (kube's default).
const HTTP2_MAX_STREAMS: u32 = 250;
/// The request head an HTTP/2 client may send (`SETTINGS_MAX_HEADER_LIST_SIZE`): kube-apiserver's
/// 1 MiB (`MaxHeaderBytes`, which Go's HTTP/2 server advertises), so a long label selector in
/// the path is answered (hyper's default, 16 KiB, made `kubectl get -l` of ~2,000 values fail
/// in the client). The path itself is bounded at 64 KiB by the `http` crate's URI type, on
/// both protocols (HTTP/1.1 answers 414 past it).
const HTTP2_MAX_HEADER_LIST: u32 = 1 << 20;

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub controllers: Option<PathBuf>,
    /// Where objects are kept.
    pub store: StoreBackend,
    /// With `--store etcd`: elect the host that runs the controllers (`None`: every host runs
    /// them, `--leader-elect=false`).
    pub leader_election: Option<crate::leader::LeaderOptions>,
    pub watch_history: usize,
    /// Bytes of old object versions the watch history may keep (see `StoreOptions`).
    pub watch_history_bytes: usize,
    pub fsync: bool,
    /// Largest object stored, in bytes of its JSON.
    pub max_object_bytes: usize,
    pub api: ApiOptions,
    pub http: HttpOptions,
    pub tls: TlsOptions,
    /// Limits of every WebAssembly controller.
    pub runtime: crate::runtime::RuntimeOptions,
    /// kube's static token file (`token,user,uid,"group1,group2"`).
    pub token_auth_file: Option<PathBuf>,
    /// `--service-cluster-ip-range`
    pub service_cluster_ip_range: crate::allocator::IpRange,
    /// `--service-node-port-range`
    pub service_node_port_range: crate::allocator::PortRange,
    /// `--orphaned-pod-quarantine`: how long a Node may be missing before its Pods are deleted.
    pub orphaned_pod_quarantine: std::time::Duration,
    /// `--terminated-pod-gc-threshold`: how many finished Pods are kept (0: all).
    pub terminated_pod_gc_threshold: usize,
    /// `--node-monitor-grace-period`: how long a Node may go without a heartbeat.
    pub node_monitor_grace_period: std::time::Duration,
    /// `--event-ttl`: how long an Event is kept after its last write (zero: for ever).
    pub event_ttl: std::time::Duration,
}

/// `--store`: a store in the data dir (the wal engine or sled), or a shared etcd cluster.
#[derive(Debug, Clone)]
pub enum StoreBackend {
    /// The sled database in the data dir.
    Sled,
    /// The write-ahead log and snapshots of [`crate::store::wal`], in the data dir; a snapshot
    /// once the log has grown by `snapshot_after_bytes`.
    Wal { snapshot_after_bytes: u64 },
    Etcd {
        endpoints: Vec<String>,
        prefix: String,
        tls: crate::store::etcd_store::EtcdTls,
    },
}

/// The files (under the data dir) every host on one etcd prefix shares, so that a kubeconfig or
/// a token of one host is good on all: the CA, the service-account signing key, the admin token.
/// Each host keeps its own serving certificate, signed by the shared CA. They are stored as one
/// bundle (one etcd key, written once), so a host never takes some without the others.
const SHARED_FILES: [&str; 4] = ["pki/ca.crt", "pki/ca.key", "pki/sa.key", "auth/admin.token"];
const IDENTITY: &str = "identity";

fn shared_error(why: impl std::fmt::Display) -> ServerError {
    ServerError::Shared {
        name: IDENTITY.to_owned(),
        why: why.to_string(),
    }
}

/// The bundle: file name -> base64 of its bytes, as JSON.
fn identity_bundle(data_dir: &Path) -> Option<Vec<u8>> {
    use base64::Engine;
    let mut files = serde_json::Map::new();
    for name in SHARED_FILES {
        let bytes = std::fs::read(data_dir.join(name)).ok()?;
        files.insert(
            name.to_owned(),
            serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        );
    }
    serde_json::to_vec(&files).ok()
}

/// Before this host makes its identity: take what another host of the cluster made, all of it.
async fn pull_shared_files(etcd: &EtcdStore, data_dir: &Path) -> Result<(), ServerError> {
    use base64::Engine;
    let Some(stored) = etcd.shared_file(IDENTITY).await.map_err(shared_error)? else {
        return Ok(());
    };
    let files: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&stored).map_err(shared_error)?;
    let mut decoded = Vec::new();
    for name in SHARED_FILES {
        let bytes = files
            .get(name)
            .and_then(serde_json::Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .ok_or_else(|| shared_error(format!("the stored bundle has no readable {name}")))?;
        decoded.push((name, bytes));
    }
    for (name, bytes) in decoded {
        let path = data_dir.join(name);
        if std::fs::read(&path).ok().as_deref() == Some(&bytes[..]) {
            continue;
        }
        let io = |source| ServerError::Kubeconfig {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        crate::auth::write_private(&path, &bytes).map_err(io)?;
        if name == "pki/ca.crt" {
            // Issued by another CA: made again, by the shared one.
            let _ = std::fs::remove_file(data_dir.join("pki/server.crt"));
        }
        tracing::info!(file = name, "using the cluster's shared copy");
    }
    Ok(())
}

/// After: offer this host's files; if another host offered different ones in the meantime (two
/// first hosts started at once), this one cannot serve with its own and must start again.
async fn offer_shared_files(etcd: &EtcdStore, data_dir: &Path) -> Result<(), ServerError> {
    let Some(mine) = identity_bundle(data_dir) else {
        // Not all of them here (a host serving --tls-cert has no CA of its own): nothing to offer.
        return Ok(());
    };
    let stored = etcd
        .offer_shared_file(IDENTITY, &mine)
        .await
        .map_err(shared_error)?;
    if stored != mine {
        return Err(shared_error(
            "another host of this cluster made its own at the same time; start this host again to use that one",
        ));
    }
    Ok(())
}

/// A kubeconfig kubectl uses as is: the server, the CA to verify it with, and a bearer token.
/// A warning when the CSR signer's CA (`--cluster-signing-cert-file`) is not among the CAs this
/// host verifies client certificates with: what it issues would not authenticate here (kube
/// allows it, and so does this host).
fn warn_if_untrusted(signing_cert: &Path, client_ca: Option<&Path>) {
    let ders = |p: &Path| -> Vec<Vec<u8>> {
        std::fs::read(p)
            .ok()
            .and_then(|b| pem::parse_many(b).ok())
            .unwrap_or_default()
            .into_iter()
            .map(pem::Pem::into_contents)
            .collect()
    };
    let signing = ders(signing_cert);
    let trusted = client_ca.map(ders).unwrap_or_default();
    if !signing.iter().any(|c| trusted.contains(c)) {
        tracing::warn!(
            signing_cert = %signing_cert.display(),
            "the CSR signer's CA is not in --client-ca-file: the certificates it issues will not authenticate to this host"
        );
    }
}

/// Present in `DATA/pki` while the host verifies client certificates with the generated CA.
pub const CLIENT_CA_MARKER: &str = "ca-verifies-clients";

pub fn kubeconfig(server: &str, ca_pem: Option<&str>, user: &str, token: &str) -> String {
    kubeconfig_for(server, ca_pem, user, Credential::Token(token))
}

/// What a kubeconfig's user presents.
pub enum Credential<'a> {
    Token(&'a str),
    /// A client certificate and its key (PEM).
    Certificate {
        cert: &'a str,
        key: &'a str,
    },
}

/// A kubeconfig for `server` whose user `user` presents `credential`.
pub fn kubeconfig_for(
    server: &str,
    ca_pem: Option<&str>,
    user: &str,
    credential: Credential<'_>,
) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let credential = match credential {
        Credential::Token(token) => format!("    token: {token}\n"),
        Credential::Certificate { cert, key } => format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(cert),
            b64(key)
        ),
    };
    let ca = ca_pem
        .map(|pem| {
            format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(pem)
            )
        })
        .unwrap_or_default();
    // Quoted (a JSON string is a YAML double-quoted scalar): a name like `true`, `123` or
    // `a: b` stays a string.
    let user = serde_json::Value::String(user.to_owned()).to_string();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: turtles\n  cluster:\n    server: {server}\n{ca}users:\n- name: {user}\n  user:\n{credential}contexts:\n- name: turtles\n  context:\n    cluster: turtles\n    user: {user}\n    namespace: default\ncurrent-context: turtles\n"
    )
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    crate::auth::write_private(path, contents.as_bytes())
}

/// The server URL and CA recorded in `DATA/admin.kubeconfig` by a running (or the last) host.
pub fn recorded_server(data_dir: &Path) -> Option<(String, Option<String>)> {
    use base64::Engine;
    let text = std::fs::read_to_string(data_dir.join("admin.kubeconfig")).ok()?;
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))?
        .to_owned();
    let ca = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|b| String::from_utf8(b).ok());
    Some((server, ca))
}

/// How old a claim of a Service IP or node port whose Service does not hold it must be before a
/// repair removes it (younger ones may belong to a create under way on another host).
const CLAIM_GRACE: Duration = Duration::from_secs(60);

/// Run the server until SIGINT or SIGTERM.
pub async fn serve(cfg: ServeConfig) -> Result<(), ServerError> {
    let started = Instant::now();
    raise_fd_limit();
    let store_dir = cfg.data_dir.join("store");
    let mut etcd = None;
    let store: Arc<dyn Store> = match &cfg.store {
        StoreBackend::Sled | StoreBackend::Wal { .. } => {
            let mut opts = StoreOptions {
                dir: store_dir.clone(),
                watch_history: cfg.watch_history,
                watch_history_bytes: cfg.watch_history_bytes,
                fsync: cfg.fsync,
                max_object_bytes: cfg.max_object_bytes,
                ..StoreOptions::in_dir(store_dir.clone())
            };
            let opened: Result<Arc<dyn Store>, _> = match &cfg.store {
                StoreBackend::Wal {
                    snapshot_after_bytes,
                } => {
                    opts.snapshot_after_bytes = *snapshot_after_bytes;
                    WalStore::open(opts).map(|s| Arc::new(s) as Arc<dyn Store>)
                }
                _ => SledStore::open(opts).map(|s| Arc::new(s) as Arc<dyn Store>),
            };
            opened.map_err(|source| ServerError::Store {
                dir: store_dir,
                source,
            })?
        }
        StoreBackend::Etcd {
            endpoints,
            prefix,
            tls,
        } => {
            let store = Arc::new(
                EtcdStore::open(EtcdOptions {
                    endpoints: endpoints.clone(),
                    prefix: prefix.clone(),
                    tls: tls.clone(),
                    watch_history: cfg.watch_history,
                    watch_history_bytes: cfg.watch_history_bytes,
                    max_object_bytes: cfg.max_object_bytes,
                })
                .await
                .map_err(|source| ServerError::Etcd {
                    endpoints: endpoints.join(","),
                    source,
                })?,
            );
            // One identity for the cluster: what an earlier host made is used here too.
            pull_shared_files(&store, &cfg.data_dir).await?;
            etcd = Some(store.clone());
            store
        }
    };
    let registry = Arc::new(Registry::with_builtins());
    let mut service = Service::with_service_ranges(
        store.clone(),
        registry.clone(),
        cfg.service_cluster_ip_range,
        cfg.service_node_port_range,
    );
    // One host on sled always runs the controllers; hosts sharing etcd elect one.
    let campaign = match (&cfg.store, &cfg.leader_election) {
        (StoreBackend::Etcd { .. }, Some(opts)) => {
            let (leadership, lead) = crate::leader::elected(opts);
            service.leadership = leadership;
            Some((opts.clone(), lead))
        }
        _ => None,
    };
    let service = Arc::new(service);
    service.bootstrap().await.map_err(ServerError::Bootstrap)?;
    // Claims of Service IPs and node ports: made for Services stored before claims existed,
    // removed where a host died between a claim and its Service's write.
    crate::claims::repair(&*store, &service.allocators, CLAIM_GRACE).await;
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(crate::claims::follow(service.clone(), shutdown_rx.clone()));
    tokio::spawn(crate::claims::repair_periodically(
        service.clone(),
        CLAIM_GRACE,
        shutdown_rx.clone(),
    ));
    // kube-apiserver's `rbac/bootstrap-roles` hook: the bootstrap policy is created or reconciled
    // at every start; conflicts and store failures are tried again for up to 30 s, and an object
    // that still fails is logged, not fatal (`docs/security.md`).
    let failed = service
        .reconcile_bootstrap_policy(crate::auth::rbac::bootstrap_objects())
        .await;
    if failed > 0 {
        tracing::error!(
            failed,
            "some bootstrap RBAC objects could not be reconciled with the policy; serving anyway"
        );
    }
    // kube-apiserver's `priority-and-fairness-config-producer` hook: API Priority and Fairness'
    // bootstrap FlowSchemas and PriorityLevelConfigurations, ensured at start (a failure that
    // may pass tried again for up to 30 s, then logged, not fatal) and every minute after
    // (`docs/api.md`, "API Priority and Fairness"; not enforced).
    match crate::builtin::flowcontrol_bootstrap::ensure_at_start(&service).await {
        Ok(done) => tracing::debug!(
            created = done.created,
            updated = done.updated,
            deleted = done.deleted,
            "APF bootstrap configuration ensured"
        ),
        Err(e) => tracing::error!(
            error = %e,
            "the APF bootstrap configuration could not be ensured; serving anyway, trying again every minute"
        ),
    }
    tokio::spawn(crate::builtin::flowcontrol_bootstrap::keep(
        service.clone(),
        shutdown_rx.clone(),
    ));

    // Every stored CRD is served before the server answers.
    let crds = crate::crd::controller::CrdController::new(service.clone());
    crds.start(shutdown_rx.clone())
        .await
        .map_err(ServerError::Bootstrap)?;
    // Identity: the admin token, minted tokens, the operator's static token file.
    let admin_token = crate::auth::tokens::admin_token(&cfg.data_dir).map_err(ServerError::Auth)?;
    let mut token_files = vec![crate::auth::tokens::minted_file(&cfg.data_dir)];
    token_files.extend(cfg.token_auth_file.clone());
    let authn = Arc::new(
        crate::auth::Authenticator::new(&admin_token, token_files).map_err(ServerError::Auth)?,
    );
    let issuer = Arc::new(crate::auth::serviceaccount::TokenIssuer::load_or_create(
        &cfg.data_dir.join("pki"),
        store.clone(),
    )?);
    authn.set_service_accounts(issuer.clone());
    let requestheader_ca = cfg
        .tls
        .requestheader
        .as_ref()
        .map(|r| r.client_ca.as_path());
    let tls = if cfg.tls.insecure_http {
        None
    } else {
        let material = match (&cfg.tls.cert, &cfg.tls.key) {
            (Some(cert), Some(key)) => crate::auth::tls::provided(
                cert,
                key,
                cfg.tls.client_ca.as_deref(),
                requestheader_ca,
            ),
            _ => crate::auth::tls::generated(
                &cfg.data_dir.join("pki"),
                &cfg.tls.sans,
                cfg.tls.client_ca.as_deref(),
                requestheader_ca,
            ),
        };
        Some(material.map_err(ServerError::Tls)?)
    };
    // The CSR signer's CA: the operator's (`--cluster-signing-*`, loaded before anything is
    // campaigned for, so a bad file fails the start cleanly), else the generated CA when it is
    // the client CA.
    let generated = tls.as_ref().and_then(|t| t.authority.clone());
    let authority = match (&cfg.tls.cluster_signing, &tls) {
        (Some((cert, key)), Some(_)) => {
            let a = crate::auth::signer::Authority::load(cert, key).map_err(ServerError::Signer)?;
            warn_if_untrusted(cert, cfg.tls.client_ca.as_deref());
            Some(Arc::new(a))
        }
        _ => generated.clone(),
    };
    if let Some(etcd) = &etcd {
        offer_shared_files(etcd, &cfg.data_dir).await?;
    }
    // Campaign only once this host can serve (a start that fails holds no Lease).
    let campaign = campaign.map(|(opts, lead)| {
        tokio::spawn(crate::leader::campaign(
            service.clone(),
            opts,
            lead,
            shutdown_rx.clone(),
        ))
    });
    // The built-in controllers (garbage collector, namespaces, service accounts, tokens), once
    // every kind is listed.
    let root_ca = tls.as_ref().map(|t| Arc::from(t.ca_pem.as_str()));
    // Whether the generated CA is the one client certificates are verified with, for
    // `turtles kubeconfig --client-cert` (which signs with it) to know.
    let marker = cfg.data_dir.join("pki").join(CLIENT_CA_MARKER);
    if generated.is_some() {
        let _ = write_private(&marker, "DATA/pki/ca.crt verifies client certificates\n");
    } else {
        let _ = std::fs::remove_file(&marker);
    }
    // The aggregation layer: the front proxy's own CA and client certificate, the APIServices'
    // controllers, and what extension servers read to trust the proxy.
    let front_proxy =
        crate::auth::tls::front_proxy(&cfg.data_dir.join("pki")).map_err(ServerError::Tls)?;
    let aggregator =
        crate::aggregator::Aggregator::new(&front_proxy).map_err(ServerError::Aggregator)?;
    let client_ca = match (&cfg.tls.client_ca, &tls) {
        (Some(path), Some(_)) => std::fs::read_to_string(path).ok(),
        (None, Some(t)) if t.client_verifier.is_some() => Some(t.ca_pem.clone()),
        _ => None,
    };
    tokio::spawn(crate::aggregator::availability::keep_discovery(
        aggregator.clone(),
        store.clone(),
        shutdown_rx.clone(),
    ));
    // The front proxies this host trusts (`--requestheader-*`), as the request path reads them.
    let requestheader = match (&cfg.tls.requestheader, &tls) {
        (Some(o), Some(t)) => t.requestheader_verifier.clone().map(|verifier| {
            let lower = |v: &[String]| v.iter().map(|h| h.to_ascii_lowercase()).collect();
            Arc::new(api::x509::RequestHeader {
                verifier,
                allowed_names: o.allowed_names.clone(),
                username_headers: lower(&o.username_headers),
                uid_headers: lower(&o.uid_headers),
                group_headers: lower(&o.group_headers),
                extra_prefixes: lower(&o.extra_headers_prefix),
            })
        }),
        _ => None,
    };
    // Extension servers learn to trust this host's front proxy; and, as kube publishes its own
    // flags, the front proxies this host trusts.
    let mut requestheader_ca_pem = front_proxy.ca_pem.clone();
    let mut allowed_names = vec![crate::auth::tls::FRONT_PROXY_CLIENT.to_owned()];
    if let Some(o) = &cfg.tls.requestheader {
        if let Ok(pem) = std::fs::read_to_string(&o.client_ca) {
            requestheader_ca_pem.push_str(&pem);
        }
        allowed_names.extend(o.allowed_names.iter().cloned());
    }
    tokio::spawn(crate::aggregator::authentication::keep(
        service.clone(),
        crate::aggregator::authentication::Trust {
            client_ca,
            requestheader_ca: requestheader_ca_pem,
            allowed_names,
        },
        shutdown_rx.clone(),
    ));
    let builtin_controllers = crate::controllers::start(
        service.clone(),
        issuer,
        root_ca,
        authority,
        aggregator.clone(),
        crate::controllers::Settings {
            orphan_quarantine: cfg.orphaned_pod_quarantine,
            terminated_threshold: cfg.terminated_pod_gc_threshold,
            node_monitor_grace: cfg.node_monitor_grace_period,
            event_ttl: cfg.event_ttl,
        },
        shutdown_rx.clone(),
    )
    .await;
    let authz = Arc::new(crate::auth::Authorizer::new(store.clone()));
    let state = Arc::new(AppState {
        authn,
        authz,
        crds,
        service,
        registry,
        inflight: api::inflight::InFlightLimits::new(
            cfg.api.max_requests_inflight,
            cfg.api.max_mutating_requests_inflight,
        ),
        offload: Default::default(),
        watch_events: Default::default(),
        options: cfg.api.clone(),
        shutdown: shutdown_rx,
        metrics: Default::default(),
        controllers: Default::default(),
        builtin_controllers,
        log_follows: Default::default(),
        watches: Arc::new(api::pod_streams::Follows::with_limits(
            "watches",
            api::watch::MAX_WATCHES_PER_USER,
            usize::MAX,
        )),
        aggregator,
        requestheader: requestheader.clone(),
    });
    let router = api::router(state.clone());
    if let Some(dir) = &cfg.controllers {
        let mut opts = cfg.runtime.clone();
        opts.cache_dir = cfg.data_dir.join("cache");
        let runtime = crate::runtime::Runtime::new(opts).map_err(ServerError::Runtime)?;
        let host = Arc::new(crate::runtime::Host {
            runtime,
            service: state.service.clone(),
            router: router.clone(),
            authn: state.authn.clone(),
        });
        let folder = crate::runtime::folder::Folder::new(dir.clone(), host);
        let _ = state.controllers.set(folder.clone());
        tokio::spawn(folder.run(state.shutdown.clone()));
    } else {
        // No controllers folder: no WebAssembly controller runs, whatever an earlier run left.
        crate::runtime::folder::remove_stale(&state.service, |_| false).await;
    }
    let app = router.into_make_service();
    let listener = std::net::TcpListener::bind(cfg.listen).map_err(|source| ServerError::Bind {
        addr: cfg.listen,
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        addr: cfg.listen,
        source,
    })?;
    // The `kubernetes` Service and its endpoints: this host alone, or (hosts on etcd) every
    // live host, kept up to date until this one stops.
    let endpoints = match &etcd {
        None => {
            use crate::builtin::kubernetes_service::{only, reconcile};
            reconcile(&state.service, addr.port(), &only(addr), true)
                .await
                .map_err(ServerError::Bootstrap)?;
            None
        }
        Some(_) => {
            use crate::builtin::kubernetes_service::{keep, renew, Renewal, Seen};
            let identity = uuid::Uuid::new_v4().to_string();
            let mut seen = Seen::default();
            renew(&state.service, &identity, addr, Renewal::Start, &mut seen)
                .await
                .map_err(ServerError::Bootstrap)?;
            Some(tokio::spawn(keep(
                state.service.clone(),
                identity,
                addr,
                seen,
                state.shutdown.clone(),
            )))
        }
    };
    crate::builtin::kubernetes_service::ensure_service_cidr(&state.service)
        .await
        .map_err(ServerError::Bootstrap)?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");
    let kc_path = cfg.data_dir.join("admin.kubeconfig");
    let kc = kubeconfig(
        &url,
        tls.as_ref().map(|t| t.ca_pem.as_str()),
        crate::auth::tokens::ADMIN_USER,
        &admin_token,
    );
    write_private(&kc_path, &kc).map_err(|source| ServerError::Kubeconfig {
        path: kc_path.clone(),
        source,
    })?;
    if tls.is_none() {
        tracing::warn!("SERVING PLAIN HTTP (--insecure-http): bearer tokens and every object cross the network unencrypted");
    }
    tracing::info!(
        url = %url,
        kubeconfig = %kc_path.display(),
        ready_ms = started.elapsed().as_secs_f64() * 1000.0,
        "turtles is serving; try: kubectl --kubeconfig {} get ns",
        kc_path.display()
    );

    let handle = axum_server::Handle::new();
    {
        let handle = handle.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutting down: ending watches, finishing requests, flushing the store");
            let _ = shutdown_tx.send(true);
            // A client that stops reading (a stalled watch) would hold shutdown forever: past the
            // grace period its connection is dropped and the store is flushed regardless.
            handle.graceful_shutdown(Some(SHUTDOWN_GRACE));
        });
    }
    let gate = api::connections::Gate::new(api::connections::ConnectionOptions {
        max_unauthenticated: cfg.http.max_unauthenticated_connections,
        idle_timeout: cfg.http.idle_timeout,
        // The same bound as a watch's stall cut-off: one flag, `--write-stall-timeout`.
        write_stall_timeout: cfg.api.write_stall_timeout,
    });
    let result = match tls {
        Some(t) => {
            let config = axum_server::tls_rustls::RustlsConfig::from_config(t.server_config);
            let acceptor = api::x509::PeerAcceptor::new(
                axum_server::tls_rustls::RustlsAcceptor::new(config)
                    .handshake_timeout(cfg.http.tls_handshake_timeout)
                    .acceptor(api::connections::GateAcceptor::new(gate)),
                t.client_verifier,
                requestheader,
            );
            match axum_server::from_tcp(listener) {
                Ok(server) => {
                    configure(server.acceptor(acceptor), &cfg.http)
                        .handle(handle)
                        .serve(app)
                        .await
                }
                Err(e) => Err(e),
            }
        }
        None => match axum_server::from_tcp(listener) {
            Ok(server) => {
                configure(
                    server.acceptor(api::connections::GateAcceptor::new(gate)),
                    &cfg.http,
                )
                .handle(handle)
                .serve(app)
                .await
            }
            Err(e) => Err(e),
        },
    };
    // The Lease is given up, and this host leaves the `kubernetes` endpoints (through the
    // store), before the store closes.
    let tasks = futures::future::join_all([campaign, endpoints].into_iter().flatten());
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, tasks).await;
    let flushed = tokio::task::spawn_blocking(move || store.shutdown())
        .await
        .unwrap_or(Ok(()));
    result.map_err(ServerError::Serve)?;
    flushed.map_err(ServerError::Shutdown)?;
    tracing::info!("stopped cleanly");
    Ok(())
}

/// The HTTP protocol settings: header timeout, HTTP/2 streams, accept errors logged (the
/// server backs off 50 ms after each, so running out of file descriptors does not spin).
fn configure<A>(
    mut server: axum_server::Server<SocketAddr, A>,
    http: &HttpOptions,
) -> axum_server::Server<SocketAddr, A> {
    let builder = server.http_builder();
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(http.header_read_timeout);
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_concurrent_streams(HTTP2_MAX_STREAMS)
        .max_header_list_size(HTTP2_MAX_HEADER_LIST);
    let last_warned = std::sync::Mutex::new(None::<Instant>);
    server.accept_error_handler(move |peer, e| {
        if peer.is_some() {
            // A failed or timed-out handshake, an evicted connection: the client's doing.
            tracing::debug!(error = %e, "connection closed before it was served");
            return;
        }
        // The listener itself failed (EMFILE...): warn at most once a second.
        if let Ok(mut last) = last_warned.lock() {
            if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                *last = Some(Instant::now());
                tracing::warn!(error = %e, "accepting connections failed; retrying");
            }
        }
    })
}

/// Raise the soft limit on open files to the hard limit, as servers commonly do: every
/// connection is a file descriptor.
fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if got != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "reading the open-files limit");
        return;
    }
    if lim.rlim_cur < lim.rlim_max {
        let before = lim.rlim_cur;
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), "raising the open-files limit");
            return;
        }
        tracing::debug!(
            from = before,
            to = lim.rlim_max,
            "raised the open-files limit"
        );
    }
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
