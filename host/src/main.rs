//! The `turtles` command line. Thin: parse flags, set up logging, call the library.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
        /// Skip the fdatasync before acknowledging a write (acknowledged writes then survive a
        /// crash of this process, but not a power loss).
        #[arg(long)]
        no_fsync: bool,
        /// Seconds between watch bookmarks.
        #[arg(long, default_value_t = 30)]
        bookmark_interval: u64,
    },
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
    match cli.command {
        Command::Serve {
            data_dir,
            listen,
            controllers,
            watch_history,
            no_fsync,
            bookmark_interval,
        } => {
            let cfg = turtles::server::ServeConfig {
                data_dir,
                listen,
                controllers,
                watch_history,
                fsync: !no_fsync,
                api: turtles::api::ApiOptions {
                    bookmark_interval: std::time::Duration::from_secs(bookmark_interval.max(1)),
                },
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(turtles::server::serve(cfg))?;
        }
    }
    Ok(())
}
