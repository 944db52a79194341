//! `turtles logs NAME [-f]`: a controller's log lines, read from the API server that runs it
//! (`GET /apis/turtles.dev/v1/controllers/NAME/log`) with the credentials of a kubeconfig, as
//! `kubectl logs` reads a Pod's.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// What can go wrong reading a kubeconfig or the log.
#[derive(Debug, thiserror::Error)]
pub enum LogsError {
    #[error("{path}: {message}")]
    Kubeconfig { path: PathBuf, message: String },
    #[error("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or write ~/.kube/config")]
    NoKubeconfig,
    #[error("{0}")]
    Http(String),
    #[error("{0}")]
    Server(String),
    #[error("writing the log: {0}")]
    Output(std::io::Error),
}

/// Which lines: `tail` last ones (all kept if `None`), then new ones as they come with `follow`.
pub struct LogOptions {
    pub follow: bool,
    pub tail: Option<usize>,
    pub timestamps: bool,
}

/// The server, CA and token of a kubeconfig's current context.
struct Target {
    server: String,
    ca_pem: Option<Vec<u8>>,
    insecure: bool,
    token: Option<String>,
}

fn kubeconfig_path(explicit: Option<&Path>) -> Result<PathBuf, LogsError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(first) = std::env::var_os("KUBECONFIG")
        .and_then(|v| std::env::split_paths(&v).find(|p| !p.as_os_str().is_empty()))
    {
        return Ok(first);
    }
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".kube/config"))
        .ok_or(LogsError::NoKubeconfig)
}

fn load(path: &Path) -> Result<Target, LogsError> {
    let bad = |message: String| LogsError::Kubeconfig {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let config: Value = serde_yaml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let current = config["current-context"]
        .as_str()
        .ok_or_else(|| bad("no current-context".into()))?;
    let named = |list: &str, name: &str, field: &str| -> Result<Value, LogsError> {
        config[list]
            .as_array()
            .and_then(|l| l.iter().find(|e| e["name"].as_str() == Some(name)))
            .map(|e| e[field].clone())
            .ok_or_else(|| bad(format!("no {list} entry named {name:?}")))
    };
    let context = named("contexts", current, "context")?;
    let cluster_name = context["cluster"].as_str().unwrap_or_default();
    let cluster = named("clusters", cluster_name, "cluster")?;
    let user = match context["user"].as_str() {
        Some(u) if !u.is_empty() => named("users", u, "user")?,
        _ => Value::Null,
    };
    let base64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|e| bad(format!("base64: {e}")))
    };
    let relative = |p: &str| path.parent().unwrap_or(Path::new(".")).join(p);
    let ca_pem = match (
        cluster["certificate-authority-data"].as_str(),
        cluster["certificate-authority"].as_str(),
    ) {
        (Some(data), _) => Some(base64(data)?),
        (None, Some(file)) => {
            Some(std::fs::read(relative(file)).map_err(|e| bad(format!("{file}: {e}")))?)
        }
        _ => None,
    };
    let token = match (user["token"].as_str(), user["tokenFile"].as_str()) {
        (Some(t), _) => Some(t.to_owned()),
        (None, Some(file)) => Some(
            std::fs::read_to_string(relative(file))
                .map_err(|e| bad(format!("{file}: {e}")))?
                .trim()
                .to_owned(),
        ),
        _ => None,
    };
    Ok(Target {
        server: cluster["server"]
            .as_str()
            .ok_or_else(|| bad(format!("cluster {cluster_name:?} has no server")))?
            .trim_end_matches('/')
            .to_owned(),
        ca_pem,
        insecure: cluster["insecure-skip-tls-verify"].as_bool() == Some(true),
        token,
    })
}

/// Copies the controller's log to `out` (until the server ends it, with `follow`).
pub fn show(
    kubeconfig: Option<&Path>,
    name: &str,
    opts: &LogOptions,
    out: &mut impl Write,
) -> Result<(), LogsError> {
    // A name that is not a controller's would not stay in its URL segment.
    super::check_name(name).map_err(|e| LogsError::Http(e.to_string()))?;
    let target = load(&kubeconfig_path(kubeconfig)?)?;
    let http = |e: reqwest::Error| LogsError::Http(e.to_string());
    let mut builder = reqwest::blocking::Client::builder()
        .timeout(None)
        .danger_accept_invalid_certs(target.insecure);
    if let Some(pem) = &target.ca_pem {
        for cert in reqwest::Certificate::from_pem_bundle(pem).map_err(http)? {
            builder = builder.add_root_certificate(cert);
        }
    }
    let client = builder.build().map_err(http)?;
    let mut url = format!(
        "{}/apis/turtles.dev/v1/controllers/{name}/log?timestamps={}",
        target.server, opts.timestamps
    );
    if opts.follow {
        url.push_str("&follow=true");
    }
    if let Some(t) = opts.tail {
        url.push_str(&format!("&tailLines={t}"));
    }
    let mut req = client.get(&url);
    if let Some(token) = &target.token {
        req = req.bearer_auth(token);
    }
    let mut resp = req.send().map_err(http)?;
    if !resp.status().is_success() {
        let code = resp.status();
        let body = resp.text().unwrap_or_default();
        let message = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|s| s["message"].as_str().map(str::to_owned))
            .unwrap_or(body);
        return Err(LogsError::Server(format!("{code}: {message}")));
    }
    // Line by line as they arrive: the body is copied in chunks as the server sends them.
    let mut buf = [0u8; 8192];
    loop {
        let n =
            std::io::Read::read(&mut resp, &mut buf).map_err(|e| LogsError::Http(e.to_string()))?;
        if n == 0 {
            return Ok(());
        }
        out.write_all(&buf[..n]).map_err(LogsError::Output)?;
        out.flush().map_err(LogsError::Output)?;
    }
}
