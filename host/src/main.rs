//! The `turtles` command line. Thin: parse flags, set up logging, call the library.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc malloc: measured in `docs/benchmarks.md` (the host allocates and
/// frees a parsed tree per request on several threads, where glibc spent ~20% of the CPU),
/// counting what each thread holds (`turtles::heap`: CEL evaluations are bounded by it).
#[global_allocator]
static GLOBAL: turtles::heap::Counting = turtles::heap::Counting;

#[derive(Parser)]
#[command(
    name = "turtles",
    version,
    about = "A small, fast Kubernetes-style control plane"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start: the size of the `serve` variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the API until SIGTERM/SIGINT.
    Serve {
        /// Where objects, the kubeconfig and caches live.
        #[arg(long, default_value = "turtles-data", env = "TURTLES_DATA_DIR")]
        data_dir: PathBuf,
        /// Address to listen on (port 0 picks a free port; the kubeconfig names the real one).
        #[arg(long, default_value = "127.0.0.1:6443", env = "TURTLES_LISTEN")]
        listen: SocketAddr,
        /// Folder of WebAssembly controllers.
        #[arg(long)]
        controllers: Option<PathBuf>,
        /// Change events kept in memory for resuming watches and reading past revisions.
        #[arg(long, default_value_t = 200_000)]
        watch_history: usize,
        /// Bytes of old object versions (serialized JSON) the watch history may keep alive; the
        /// oldest events are dropped beyond this, as beyond --watch-history events. Accepts the
        /// suffixes Ki, Mi, Gi.
        #[arg(long, default_value = "256Mi", value_parser = parse_bytes)]
        watch_history_bytes: usize,
        /// Bytes of events one watch may have queued for a client that does not read; a watch
        /// further behind is closed and its client resumes from the last resourceVersion it saw.
        /// Accepts the suffixes Ki, Mi, Gi.
        #[arg(long, default_value = "16Mi", value_parser = parse_bytes)]
        watch_buffer_bytes: usize,
        /// Skip the fdatasync before acknowledging a write (acknowledged writes then survive a
        /// crash of this process, but not a power loss).
        #[arg(long)]
        no_fsync: bool,
        /// Largest object stored, in bytes of its JSON (etcd's default request limit, 1.5 MiB);
        /// larger writes get 413.
        #[arg(long, default_value_t = turtles::model::limits::DEFAULT_MAX_OBJECT_BYTES)]
        max_object_bytes: usize,
        /// Seconds between watch bookmarks.
        #[arg(long, default_value_t = 30)]
        bookmark_interval: u64,
        /// Serve plain HTTP instead of HTTPS (tokens then cross the network in the clear).
        #[arg(long)]
        insecure_http: bool,
        /// Extra subject alternative name for the generated serving certificate (repeatable).
        #[arg(long = "tls-san")]
        tls_san: Vec<String>,
        /// Serve this certificate chain (PEM) instead of a generated one; needs --tls-key.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The private key (PEM) of --tls-cert.
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// CA certificates (PEM) that client certificates must chain to; their CN is the user
        /// and their O fields the groups (default: the generated CA; none with --tls-cert).
        #[arg(long, conflicts_with = "insecure_http")]
        client_ca_file: Option<PathBuf>,
        /// The CA certificate (PEM) the built-in CSR signer issues client certificates with
        /// (kube-controller-manager's flag; default: the generated CA, when it verifies client
        /// certificates). Usually the --client-ca-file CA.
        #[arg(
            long,
            requires = "cluster_signing_key_file",
            conflicts_with = "insecure_http"
        )]
        cluster_signing_cert_file: Option<PathBuf>,
        /// The private key (PEM, PKCS #8) of --cluster-signing-cert-file.
        #[arg(long, requires = "cluster_signing_cert_file")]
        cluster_signing_key_file: Option<PathBuf>,
        /// CA certificates (PEM) that a front proxy's client certificate must chain to; such a
        /// proxy names the user in the --requestheader-* headers (kube's flag).
        #[arg(long, conflicts_with = "insecure_http")]
        requestheader_client_ca_file: Option<PathBuf>,
        /// The common names a front proxy's certificate may have (comma-separated; empty: any).
        #[arg(long, value_delimiter = ',')]
        requestheader_allowed_names: Vec<String>,
        /// Headers naming the user, checked in order (kube has no default; turtles takes
        /// kubeadm's).
        #[arg(long, value_delimiter = ',', default_value = "X-Remote-User")]
        requestheader_username_headers: Vec<String>,
        /// Headers naming the user's uid.
        #[arg(long, value_delimiter = ',', default_value = "X-Remote-Uid")]
        requestheader_uid_headers: Vec<String>,
        /// Headers naming the user's groups.
        #[arg(long, value_delimiter = ',', default_value = "X-Remote-Group")]
        requestheader_group_headers: Vec<String>,
        /// Prefixes of headers naming the user's extras.
        #[arg(long, value_delimiter = ',', default_value = "X-Remote-Extra-")]
        requestheader_extra_headers_prefix: Vec<String>,
        /// Static bearer tokens in kube's CSV format: token,user,uid,"group1,group2".
        #[arg(long)]
        token_auth_file: Option<PathBuf>,
        /// The IPv4 CIDR Service cluster IPs are allocated from (kubeadm's default); its first
        /// address is the `kubernetes` Service's.
        #[arg(long, default_value = "10.96.0.0/12")]
        service_cluster_ip_range: turtles::allocator::IpRange,
        /// The node ports NodePort and LoadBalancer Services get (FIRST-LAST).
        #[arg(long, default_value = "30000-32767")]
        service_node_port_range: turtles::allocator::PortRange,
        /// Seconds a Node may be missing before the pod garbage collector deletes the Pods bound
        /// to it (kube's fixed 40 s quarantine).
        #[arg(long, default_value_t = 40)]
        orphaned_pod_quarantine: u64,
        /// How many finished (Succeeded or Failed) Pods the pod garbage collector keeps before
        /// it deletes the oldest (kube-controller-manager's `--terminated-pod-gc-threshold`; 0
        /// keeps them all).
        #[arg(long, default_value_t = 12_500)]
        terminated_pod_gc_threshold: usize,
        /// Seconds a Node may go without a heartbeat (its kubelet's Lease renewed, or its status
        /// posted) before the node lifecycle controller marks it `Unknown` and taints it
        /// unreachable (kube-controller-manager's `--node-monitor-grace-period`, 50 s).
        #[arg(long, default_value_t = 50)]
        node_monitor_grace_period: u64,
        /// Seconds an Event is kept after its last write (kube-apiserver's `--event-ttl`, 1 h;
        /// 0 keeps Events for ever).
        #[arg(long, default_value_t = 3600)]
        event_ttl: u64,
        /// Milliseconds one controller call (register or reconcile) may run.
        #[arg(long, default_value_t = 2000)]
        reconcile_deadline_ms: u64,
        /// Memory one controller instance may use, in MiB.
        #[arg(long, default_value_t = 128)]
        controller_memory_mb: usize,
        /// Run a new component on baseline (Winch) code while its optimized (Cranelift) code
        /// compiles in the background (false: wait for the optimized code).
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        baseline_compile: bool,
        /// Read-only requests served at once; beyond it 429 (watches are not counted; 0: no
        /// limit).
        #[arg(long, default_value_t = 400)]
        max_requests_inflight: usize,
        /// Mutating requests served at once; beyond it 429 (0: no limit).
        #[arg(long, default_value_t = 200)]
        max_mutating_requests_inflight: usize,
        /// Connections open at once that have not authenticated a request; a new one beyond it
        /// closes the oldest (0: no limit).
        #[arg(long, default_value_t = 1024)]
        max_unauthenticated_connections: usize,
        /// Seconds a TLS handshake may take.
        #[arg(long, default_value_t = 10)]
        tls_handshake_timeout: u64,
        /// Seconds an HTTP/1.1 request head may take to arrive (also the keep-alive idle time).
        #[arg(long, default_value_t = 32)]
        header_read_timeout: u64,
        /// Seconds a request body may take to arrive; past it the request is answered 504. Also
        /// the longest deadline of a request (kube's --request-timeout), which `?timeout=` may
        /// shorten and which bounds its admission webhook calls.
        #[arg(long, default_value_t = 60)]
        request_body_timeout: u64,
        /// Seconds a connection with no request in flight stays open.
        #[arg(long, default_value_t = 90)]
        idle_timeout: u64,
        /// Seconds a client may take none of the bytes it is sent: a connection whose socket
        /// accepts nothing for this long while it has bytes to write is closed (with the
        /// response it was writing, a watch's included), and a watch whose client takes no event
        /// for this long while events wait is closed. A connection with nothing to write, or
        /// whose client reads slowly but reads, is never cut (Go's http2 WriteByteTimeout).
        #[arg(long, default_value_t = 30)]
        write_stall_timeout: u64,
        /// Copy the host's own code onto transparent huge pages at start (fewer TLB misses on
        /// every request and reconcile, for ~36 MiB more resident memory; see
        /// docs/benchmarks.md, "The host's code on huge pages"). `false` keeps the code
        /// file-backed, as `perf` needs to name its functions.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set, env = "TURTLES_CODE_HUGE_PAGES")]
        code_huge_pages: bool,
        /// Where objects are kept: `wal` (a write-ahead log and snapshots of turtles' own, in
        /// --data-dir), `sled` (the sled database, in --data-dir) or `etcd` (an etcd v3 cluster
        /// shared by any number of hosts; see docs/scale-out.md). Without it: `sled` for a data
        /// dir that already holds a sled store, `wal` otherwise. See docs/storage.md.
        #[arg(long, value_parser = ["sled", "wal", "etcd"])]
        store: Option<String>,
        /// With --store wal: log bytes after which a snapshot of every object is written and the
        /// log before it deleted (or the last snapshot's size, if larger). Accepts the suffixes
        /// Ki, Mi, Gi.
        #[arg(long, default_value = "64Mi", value_parser = parse_bytes)]
        wal_snapshot_bytes: usize,
        /// etcd client URLs, comma-separated (http:// or https://), for --store etcd.
        #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
        etcd_endpoints: Vec<String>,
        /// Every etcd key starts with this (kube's --etcd-prefix); hosts that share it serve one
        /// cluster.
        #[arg(long, default_value = "/registry/")]
        etcd_prefix: String,
        /// CA certificate (PEM) that etcd's serving certificate is verified with.
        #[arg(long)]
        etcd_cafile: Option<PathBuf>,
        /// Client certificate (PEM) presented to etcd; needs --etcd-keyfile.
        #[arg(long, requires = "etcd_keyfile")]
        etcd_certfile: Option<PathBuf>,
        /// The private key (PEM) of --etcd-certfile.
        #[arg(long, requires = "etcd_certfile")]
        etcd_keyfile: Option<PathBuf>,
        /// With --store etcd: run the controllers on one host at a time, elected through the
        /// Lease kube-system/turtles-controllers (false: every host runs them).
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        leader_elect: bool,
        /// How long a non-leader waits, after it last saw the Lease change, before taking it
        /// over (kube's 15s). Units ms, s or m.
        #[arg(long, default_value = "15s", value_parser = parse_duration)]
        leader_elect_lease_duration: std::time::Duration,
        /// How long the leader keeps trying to renew before it stops its controllers (kube's
        /// 10s; shorter than the lease duration).
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        leader_elect_renew_deadline: std::time::Duration,
        /// Between attempts to acquire or renew the Lease (kube's 2s).
        #[arg(long, default_value = "2s", value_parser = parse_duration)]
        leader_elect_retry_period: std::time::Duration,
        /// Test only: SIGUSR1 holds every in-process watcher (informers and HTTP watches), SIGUSR2
        /// releases them; released, they resume or relist as after a lag (see docs/api.md).
        #[arg(long, hide = true)]
        test_hold_watchers_on_signal: bool,
    },
    /// Scaffold a controller project: its source, a unit test, a README and turtles.toml; the
    /// SDK is referenced where this binary extracts it ($TURTLES_HOME/sdk/...), not copied.
    New {
        /// The guest language: rust, go, python, js or c.
        #[arg(long)]
        lang: String,
        /// The controller's name (its NAME.wasm and its Controller object): a DNS-1123 label.
        name: String,
        /// The project's folder (default: ./NAME); must not exist or be empty.
        dir: Option<PathBuf>,
    },
    /// Build a project into a component with its language's toolchain (installed on first use
    /// into $TURTLES_TOOLCHAINS, default $TURTLES_HOME/toolchains).
    Build {
        /// The project's folder (holds turtles.toml).
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Where to write the component (default: DIR/NAME.wasm).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Build a project into a controllers folder, and again on every source change: the host
    /// serving that folder swaps the controller in place.
    Dev {
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// The controllers folder of a running `turtles serve`.
        #[arg(long)]
        controllers: PathBuf,
    },
    /// Show a controller's log lines (GET /apis/turtles.dev/v1/controllers/NAME/log).
    Logs {
        name: String,
        /// Stream new lines as they are logged.
        #[arg(long, short)]
        follow: bool,
        /// Only the last N lines.
        #[arg(long)]
        tail: Option<usize>,
        /// Prefix each line with when it was logged (RFC 3339).
        #[arg(long)]
        timestamps: bool,
        /// The kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
    /// Convert a stopped host's store to another engine (only sled -> wal so far), keeping
    /// every object and the revision counter; the old store stays beside it as store.sled.
    Convert {
        /// The data directory whose store is converted (the host must be stopped).
        #[arg(long, default_value = "turtles-data", env = "TURTLES_DATA_DIR")]
        data_dir: PathBuf,
        /// The engine to convert to.
        #[arg(long, value_parser = ["wal"])]
        to: String,
    },
    /// Mint a bearer token for a user and print a kubeconfig for it (or revoke the user's tokens),
    /// or with `--client-cert` a client certificate from the host's CA.
    Kubeconfig {
        /// The data directory of the host the kubeconfig is for.
        #[arg(long, default_value = "turtles-data", env = "TURTLES_DATA_DIR")]
        data_dir: PathBuf,
        /// User name the token authenticates as.
        #[arg(long)]
        user: String,
        /// Group of the user (repeatable).
        #[arg(long = "group")]
        groups: Vec<String>,
        /// Revoke every token minted for the user instead.
        #[arg(long, conflicts_with = "client_cert")]
        revoke: bool,
        /// A client certificate (a new P-256 key; CN the user, an O per group, valid a year)
        /// signed by the host's CA (`DATA/pki/ca.key`) instead of a token. It cannot be revoked.
        #[arg(long)]
        client_cert: bool,
    },
}

/// A byte count: digits with an optional binary suffix (`Ki`, `Mi`, `Gi`), as kube writes
/// quantities.
/// `15s`, `500ms`, `1m` (or bare seconds).
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (like 15s, 500ms, 1m)"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("{s:?} must be a positive duration"));
    }
    Ok(std::time::Duration::from_secs_f64(v * scale))
}

fn parse_bytes(s: &str) -> Result<usize, String> {
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => {
            return Err(format!(
                "{s:?}: expected bytes, optionally with Ki, Mi or Gi"
            ))
        }
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{s:?}: expected bytes, optionally with Ki, Mi or Gi"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // Before any other thread exists (the runtime, the stores and the epoch ticker start later).
    if let Command::Serve {
        code_huge_pages: true,
        ..
    } = &cli.command
    {
        match turtles::hugetext::remap() {
            Ok(moved) => tracing::info!("the host's code is on huge pages: {moved}"),
            Err(e) => tracing::info!("the host's code stays on 4 KiB pages: {e}"),
        }
    }
    match cli.command {
        Command::Serve {
            data_dir,
            listen,
            controllers,
            watch_history,
            watch_history_bytes,
            watch_buffer_bytes,
            no_fsync,
            max_object_bytes,
            bookmark_interval,
            insecure_http,
            tls_san,
            tls_cert,
            tls_key,
            client_ca_file,
            cluster_signing_cert_file,
            cluster_signing_key_file,
            requestheader_client_ca_file,
            requestheader_allowed_names,
            requestheader_username_headers,
            requestheader_uid_headers,
            requestheader_group_headers,
            requestheader_extra_headers_prefix,
            token_auth_file,
            service_cluster_ip_range,
            service_node_port_range,
            orphaned_pod_quarantine,
            terminated_pod_gc_threshold,
            node_monitor_grace_period,
            event_ttl,
            reconcile_deadline_ms,
            controller_memory_mb,
            baseline_compile,
            max_requests_inflight,
            max_mutating_requests_inflight,
            max_unauthenticated_connections,
            tls_handshake_timeout,
            header_read_timeout,
            request_body_timeout,
            idle_timeout,
            write_stall_timeout,
            test_hold_watchers_on_signal,
            code_huge_pages: _,
            store,
            etcd_endpoints,
            wal_snapshot_bytes,
            etcd_prefix,
            etcd_cafile,
            etcd_certfile,
            etcd_keyfile,
            leader_elect,
            leader_elect_lease_duration,
            leader_elect_renew_deadline,
            leader_elect_retry_period,
        } => {
            if leader_elect && leader_elect_renew_deadline >= leader_elect_lease_duration {
                anyhow::bail!("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration");
            }
            let leader_election = leader_elect.then(|| turtles::leader::LeaderOptions {
                lease_duration: leader_elect_lease_duration,
                renew_deadline: leader_elect_renew_deadline,
                retry_period: leader_elect_retry_period,
                identity: turtles::leader::default_identity(),
            });
            let secs = |s: u64| std::time::Duration::from_secs(s.max(1));
            // Absolute: the compile cache (wasmtime) refuses a relative directory, and the
            // default `turtles-data` is one.
            let data_dir = std::path::absolute(&data_dir)?;
            let store = store.unwrap_or_else(|| {
                let dir = data_dir.join("store");
                if turtles::store::sled_store::holds_sled(&dir) {
                    tracing::info!(dir = %dir.display(), "the data dir holds a sled store: using --store sled");
                    "sled".into()
                } else {
                    "wal".into()
                }
            });
            let store = match store.as_str() {
                "etcd" => turtles::server::StoreBackend::Etcd {
                    endpoints: etcd_endpoints,
                    prefix: etcd_prefix,
                    tls: turtles::store::etcd_store::EtcdTls {
                        ca: etcd_cafile,
                        cert: etcd_certfile,
                        key: etcd_keyfile,
                    },
                },
                "wal" => turtles::server::StoreBackend::Wal {
                    snapshot_after_bytes: wal_snapshot_bytes as u64,
                },
                _ => turtles::server::StoreBackend::Sled,
            };
            let cfg = turtles::server::ServeConfig {
                store,
                leader_election,
                data_dir,
                listen,
                controllers,
                watch_history,
                watch_history_bytes,
                fsync: !no_fsync,
                max_object_bytes,
                api: turtles::api::ApiOptions {
                    bookmark_interval: secs(bookmark_interval),
                    watch_buffer_bytes: watch_buffer_bytes.max(1),
                    write_stall_timeout: secs(write_stall_timeout),
                    request_body_timeout: secs(request_body_timeout),
                    max_requests_inflight,
                    max_mutating_requests_inflight,
                },
                http: turtles::server::HttpOptions {
                    tls_handshake_timeout: secs(tls_handshake_timeout),
                    header_read_timeout: secs(header_read_timeout),
                    idle_timeout: secs(idle_timeout),
                    max_unauthenticated_connections,
                },
                tls: turtles::server::TlsOptions {
                    insecure_http,
                    sans: tls_san,
                    cert: tls_cert,
                    key: tls_key,
                    client_ca: client_ca_file,
                    cluster_signing: cluster_signing_cert_file.zip(cluster_signing_key_file),
                    requestheader: requestheader_client_ca_file.map(|client_ca| {
                        turtles::server::RequestHeaderOptions {
                            client_ca,
                            allowed_names: requestheader_allowed_names,
                            username_headers: requestheader_username_headers,
                            uid_headers: requestheader_uid_headers,
                            group_headers: requestheader_group_headers,
                            extra_headers_prefix: requestheader_extra_headers_prefix,
                        }
                    }),
                },
                token_auth_file,
                service_cluster_ip_range,
                service_node_port_range,
                orphaned_pod_quarantine: std::time::Duration::from_secs(orphaned_pod_quarantine),
                terminated_pod_gc_threshold,
                node_monitor_grace_period: std::time::Duration::from_secs(
                    node_monitor_grace_period.max(1),
                ),
                event_ttl: std::time::Duration::from_secs(event_ttl),
                runtime: turtles::runtime::RuntimeOptions {
                    call_deadline: std::time::Duration::from_millis(reconcile_deadline_ms.max(10)),
                    memory_limit: controller_memory_mb.max(1) << 20,
                    cache_dir: PathBuf::new(),
                    baseline: baseline_compile,
                },
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                if test_hold_watchers_on_signal {
                    turtles::informer::hold::install_signals()?;
                }
                turtles::server::serve(cfg).await?;
                anyhow::Ok(())
            })?;
        }
        Command::New { lang, name, dir } => {
            use turtles::project;
            let home = project::bundle::Home::from_env()?;
            let lang = project::Lang::parse(&lang)?;
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            let files = project::new_project(&home, lang, &name, &dir)?;
            for f in &files {
                eprintln!("  {}", f.display());
            }
            eprintln!(
                "created the {} controller {name} in {d}; build it with `turtles build {d}`, or run `turtles dev {d} --controllers FOLDER` beside a host serving FOLDER",
                lang.name(),
                d = dir.display(),
            );
        }
        Command::Build { dir, out } => {
            use turtles::project;
            let home = project::bundle::Home::from_env()?;
            let p = project::Project::open(&dir)?;
            let out = out.unwrap_or_else(|| p.default_output());
            let took = p.build(&home, &out)?;
            eprintln!(
                "built {} in {} ms: {}",
                p.name,
                took.as_millis(),
                out.display()
            );
        }
        Command::Dev { dir, controllers } => {
            use turtles::project;
            let home = project::bundle::Home::from_env()?;
            let p = project::Project::open(&dir)?;
            project::dev::run(&home, &p, &controllers)?;
        }
        Command::Logs {
            name,
            follow,
            tail,
            timestamps,
            kubeconfig,
        } => {
            let opts = turtles::project::logs::LogOptions {
                follow,
                tail,
                timestamps,
            };
            turtles::project::logs::show(
                kubeconfig.as_deref(),
                &name,
                &opts,
                &mut std::io::stdout().lock(),
            )?;
        }
        Command::Convert { data_dir, to: _ } => {
            let done = turtles::store::convert::sled_to_wal(&data_dir)?;
            eprintln!(
                "converted {} objects at revision {} to the wal engine; the sled store is kept at {} (delete it once the host runs well on wal)",
                done.objects,
                done.revision,
                done.kept.display()
            );
        }
        Command::Kubeconfig {
            data_dir,
            user,
            groups,
            revoke,
            client_cert,
        } => {
            if revoke {
                let n = turtles::auth::tokens::revoke(&data_dir, &user)?;
                eprintln!("revoked {n} token(s) of user {user:?}");
                return Ok(());
            }
            let (server, ca) = turtles::server::recorded_server(&data_dir).ok_or_else(|| {
                anyhow::anyhow!(
                    "{} has no admin.kubeconfig: start `turtles serve --data-dir {}` first",
                    data_dir.display(),
                    data_dir.display()
                )
            })?;
            if client_cert {
                let pki = data_dir.join("pki");
                if !pki.join(turtles::server::CLIENT_CA_MARKER).exists() {
                    anyhow::bail!(
                        "the host of {} does not verify client certificates with {} (it runs with --client-ca-file, --tls-cert or --insecure-http, or has not been started since an upgrade): a certificate from it would not authenticate",
                        data_dir.display(),
                        pki.join("ca.crt").display()
                    );
                }
                let authority = turtles::auth::signer::Authority::load(
                    &pki.join("ca.crt"),
                    &pki.join("ca.key"),
                )?;
                let key = rcgen::KeyPair::generate()?;
                let request = turtles::auth::signer::client_request(&key, &user, &groups)?;
                let usages = ["digital signature".to_owned(), "client auth".to_owned()];
                let cert = authority.sign(&turtles::auth::signer::Issue {
                    request: &request,
                    usages: &usages,
                    ttl: turtles::controllers::csrsigning::SIGNING_DURATION,
                    now: chrono::Utc::now().timestamp(),
                })?;
                let credential = turtles::server::Credential::Certificate {
                    cert: &cert,
                    key: &key.serialize_pem(),
                };
                print!(
                    "{}",
                    turtles::server::kubeconfig_for(&server, ca.as_deref(), &user, credential)
                );
                return Ok(());
            }
            let token = turtles::auth::tokens::mint(&data_dir, &user, &groups)?;
            print!(
                "{}",
                turtles::server::kubeconfig(&server, ca.as_deref(), &user, &token)
            );
        }
    }
    Ok(())
}
