//! `turtles-bench`: the API benchmark. Starts the release binary (`$TURTLES_BIN`) on loopback
//! with a fresh data directory and measures, in one run: time to ready, idle RSS, durable creates
//! per second with 8 concurrent keep-alive clients (create p50/p99), LIST of 2,000 ConfigMaps,
//! watch delivery latency with 100 watchers, RSS after the load, and custom-resource creates
//! (20-field schema) beside ConfigMap creates. Run it with
//! `cargo xtask bench`; it prints a markdown table.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Mutex;

mod load;
mod scale;

struct Host {
    child: Child,
    url: String,
    dir: PathBuf,
    /// The flags it was started with (a restart passes them again).
    extra: Vec<String>,
}

impl Host {
    async fn start(extra: &[&str]) -> Result<(Self, Duration)> {
        Self::start_inner(extra, false).await
    }

    /// With `controllers`, the host follows `DATA/controllers`.
    async fn start_inner(extra: &[&str], controllers: bool) -> Result<(Self, Duration)> {
        let bin =
            std::env::var("TURTLES_BIN").context("TURTLES_BIN must name the turtles binary")?;
        Self::start_bin(&bin, extra, controllers).await
    }

    /// The binary under test, on the CPUs `pin` names (`taskset -c`), if any.
    async fn start_pinned(extra: &[&str], pin: Option<&str>) -> Result<(Self, Duration)> {
        let bin =
            std::env::var("TURTLES_BIN").context("TURTLES_BIN must name the turtles binary")?;
        Self::spawn(&bin, extra, false, pin).await
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Start `bin` (the binary under test, or a baseline to compare with).
    async fn start_bin(bin: &str, extra: &[&str], controllers: bool) -> Result<(Self, Duration)> {
        Self::spawn(bin, extra, controllers, None).await
    }

    async fn spawn(
        bin: &str,
        extra: &[&str],
        controllers: bool,
        pin: Option<&str>,
    ) -> Result<(Self, Duration)> {
        let dir = std::env::temp_dir().join(format!(
            "turtles-bench-{}-{}",
            std::process::id(),
            rand_tag()
        ));
        std::fs::create_dir_all(&dir)?;
        let (child, url, ready) = Self::launch(bin, &dir, extra, controllers, pin).await?;
        let extra = extra.iter().map(|a| (*a).to_owned()).collect();
        Ok((
            Host {
                child,
                url,
                dir,
                extra,
            },
            ready,
        ))
    }

    /// Kill the host and start the binary under test again on the same data dir and flags;
    /// returns the time from the start to `/readyz` 200.
    async fn restart(&mut self) -> Result<Duration> {
        let bin =
            std::env::var("TURTLES_BIN").context("TURTLES_BIN must name the turtles binary")?;
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The new process listens on a new port and writes a new kubeconfig.
        let _ = std::fs::remove_file(self.dir.join("admin.kubeconfig"));
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        let (child, url, ready) = Self::launch(&bin, &self.dir, &extra, false, None).await?;
        self.child = child;
        self.url = url;
        Ok(ready)
    }

    /// Start `bin` on `dir` and wait until it is ready.
    async fn launch(
        bin: &str,
        dir: &std::path::Path,
        extra: &[&str],
        controllers: bool,
        pin: Option<&str>,
    ) -> Result<(Child, String, Duration)> {
        let start = Instant::now();
        // taskset execs the binary: the child's pid is the host's.
        let mut cmd = match pin {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus, bin]);
                c
            }
            None => Command::new(bin),
        };
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .args(extra);
        if controllers {
            let cdir = dir.join("controllers");
            std::fs::create_dir_all(&cdir)?;
            cmd.arg("--controllers").arg(cdir);
        }
        // `BENCH_HOST_LOG=FILTER`: the hosts' logs, at that filter, appended to
        // `$TMPDIR/turtles-bench-host.log` (the data dirs go when the bench ends).
        let (filter, log) = match std::env::var("BENCH_HOST_LOG") {
            Ok(f) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(std::env::temp_dir().join("turtles-bench-host.log"))?;
                (f, Stdio::from(file))
            }
            Err(_) => ("warn".to_owned(), Stdio::null()),
        };
        let child = cmd
            .env("RUST_LOG", filter)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        let kc = dir.join("admin.kubeconfig");
        let url = loop {
            if let Ok(t) = std::fs::read_to_string(&kc) {
                if let Ok((u, ca, token)) = turtles_tests::parse_kubeconfig(&t) {
                    if let Ok(mut c) = CREDENTIALS.lock() {
                        *c = Some((ca, token));
                    }
                    break u;
                }
            }
            if start.elapsed() > Duration::from_secs(30) {
                bail!("turtles did not start");
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        };
        // Ready = answers /readyz (over TLS, verified against the host's CA).
        let http = client();
        loop {
            if let Ok(r) = http.get(format!("{url}/readyz")).send().await {
                if r.status().as_u16() == 200 {
                    break;
                }
            }
            if start.elapsed() > Duration::from_secs(30) {
                bail!("turtles never became ready");
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        Ok((child, url, start.elapsed()))
    }

    fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(f64::NAN)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_tag() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// CA and bearer token of the host under test (the bench runs one host at a time).
static CREDENTIALS: std::sync::Mutex<Option<(Option<String>, String)>> =
    std::sync::Mutex::new(None);

fn client() -> reqwest::Client {
    let creds = CREDENTIALS.lock().ok().and_then(|c| c.clone());
    let mut b = reqwest::Client::builder().use_rustls_tls();
    if let Some((ca, token)) = creds {
        if let Some(pem) = ca {
            if let Ok(cert) = reqwest::Certificate::from_pem(pem.as_bytes()) {
                b = b.add_root_certificate(cert);
            }
        }
        let mut headers = reqwest::header::HeaderMap::new();
        if let Ok(v) = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")) {
            headers.insert(reqwest::header::AUTHORIZATION, v);
        }
        b = b.default_headers(headers);
    }
    b.pool_max_idle_per_host(1).build().expect("http client")
}

async fn create_ns(c: &reqwest::Client, url: &str, ns: &str) -> Result<()> {
    let r = c
        .post(format!("{url}/api/v1/namespaces"))
        .json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        .send()
        .await?;
    if r.status().as_u16() != 201 {
        bail!("namespace create: {}", r.status());
    }
    Ok(())
}

fn configmap(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "bench", "tier": "load"}},
        "data": {"key": "value-0123456789", "other": "a somewhat longer value to make ~300 bytes of JSON"},
    })
}

/// A CRD with a 20-field schema (types, enums, patterns, bounds, defaults, a nested object).
fn widget_crd() -> serde_json::Value {
    let mut props = serde_json::Map::new();
    for i in 0..8 {
        props.insert(format!("s{i}"), json!({"type": "string", "maxLength": 64}));
    }
    for i in 0..6 {
        props.insert(
            format!("n{i}"),
            json!({"type": "integer", "minimum": 0, "maximum": 1000000}),
        );
    }
    props.insert(
        "mode".into(),
        json!({"type": "string", "enum": ["fast", "safe", "slow"], "default": "safe"}),
    );
    props.insert(
        "host".into(),
        json!({"type": "string", "pattern": "^[a-z0-9.-]+$"}),
    );
    props.insert(
        "enabled".into(),
        json!({"type": "boolean", "default": true}),
    );
    props.insert(
        "tags".into(),
        json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}),
    );
    props.insert(
        "ratio".into(),
        json!({"type": "number", "minimum": 0, "maximum": 1}),
    );
    props.insert("owner".into(), json!({"type": "object", "properties": {"name": {"type": "string"}, "team": {"type": "string"}}}));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.bench.turtles.dev"},
        "spec": {
            "group": "bench.turtles.dev", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "required": ["s0", "host"], "properties": props}},
            }}}],
        },
    })
}

fn widget(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "bench.turtles.dev/v1", "kind": "Widget",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "s0": "alpha", "s1": "beta", "s2": "gamma", "s3": "delta", "s4": "e", "s5": "f", "s6": "g", "s7": "h",
            "n0": 1, "n1": 2, "n2": 3, "n3": 4, "n4": 5, "n5": 6,
            "host": "svc.example.com", "tags": ["a", "b"], "ratio": 0.5,
            "owner": {"name": "bench", "team": "turtles"},
        },
    })
}

/// The cost of admission: creates by one client into a namespace nothing matches, and into
/// namespaces matched by one CEL ValidatingAdmissionPolicy, one MutatingAdmissionPolicy (an
/// ApplyConfiguration setting a label), one Wasm validating policy (the Rust `bench-policy`, the
/// same check as the CEL one) and one validating webhook (HTTPS on loopback, keep-alive, admits
/// all), same host. The requests of a round go to the namespaces in turn (request `i` to
/// namespace `i % 5`), so every row sees the same machine state; p50 per round, median of rounds.
/// About what a durable commit takes on the bench machine (sled flush + fdatasync, measured in
/// session 22): the idle a create's request leaves between the client's requests.
const COMMIT_PAUSE: Duration = Duration::from_micros(350);

async fn admission(rows: &mut Vec<(String, String)>, per: usize, rounds: usize) -> Result<()> {
    let (h, _) = Host::start_inner(&[], true).await?;
    let c = client();
    create_ns(&c, &h.url, "plain").await?;
    drop_file(
        &h.dir.join("controllers"),
        "bench-policy",
        &guest_bytes("bench-policy")?,
    )?;
    wait_optimized(&c, &h.url, "bench-policy").await?;
    let hook = turtles_tests::webhook::start(|_, _| json!({"allowed": true}))?;
    for (ns, label) in [
        ("policed", "on"),
        ("mutated", "mutate"),
        ("wasm", "wasm"),
        ("hooked", "webhook"),
    ] {
        let r = c
            .post(format!("{}/api/v1/namespaces", h.url))
            .json(&json!({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": ns, "labels": {"policy": label}}}))
            .send()
            .await?;
        if r.status().as_u16() != 201 {
            bail!("namespace create: {}", r.status());
        }
    }
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["configmaps"]}]});
    let ar = format!("{}/apis/admissionregistration.k8s.io/v1", h.url);
    for (coll, body) in [
        (
            "validatingadmissionpolicies",
            json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "bench"},
            "spec": {"matchConstraints": rules,
                     "validations": [{"expression": "object.metadata.labels.app == 'bench' && size(object.data) < 10",
                                      "message": "not a bench object"}]}}),
        ),
        (
            "validatingadmissionpolicybindings",
            json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "bench"},
            "spec": {"policyName": "bench", "validationActions": ["Deny"],
                     "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "on"}}}}}),
        ),
        (
            "mutatingadmissionpolicies",
            json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "bench"},
            "spec": {"matchConstraints": rules,
                     "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                        "expression": "Object{metadata: Object.metadata{labels: {'mutated': object.metadata.labels.app}}}"}}]}}),
        ),
        (
            "mutatingadmissionpolicybindings",
            json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": "bench"},
            "spec": {"policyName": "bench",
                     "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "mutate"}}}}}),
        ),
        (
            "validatingwebhookconfigurations",
            json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "bench"},
            "webhooks": [{"name": "bench.turtles.dev", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None", "failurePolicy": "Fail",
                          "clientConfig": {"url": format!("{}/validate", hook.url), "caBundle": hook.ca_bundle},
                          "rules": rules["resourceRules"],
                          "namespaceSelector": {"matchLabels": {"policy": "webhook"}}}]}),
        ),
    ] {
        let r = c.post(format!("{ar}/{coll}")).json(&body).send().await?;
        if r.status().as_u16() != 201 {
            bail!("{coll} create: {}: {}", r.status(), r.text().await?);
        }
    }
    // The mutation happened (else the row would measure nothing).
    let r = c
        .post(format!("{}/api/v1/namespaces/mutated/configmaps", h.url))
        .json(&configmap("probe"))
        .send()
        .await?;
    let probe: serde_json::Value = r.json().await?;
    if probe
        .pointer("/metadata/labels/mutated")
        .and_then(|v| v.as_str())
        != Some("bench")
    {
        bail!("the MutatingAdmissionPolicy did not apply: {probe}");
    }
    // The Wasm and CEL policies deny what is not a bench object (else the rows would measure
    // nothing).
    for ns in ["wasm", "policed"] {
        let r = c
            .post(format!("{}/api/v1/namespaces/{ns}/configmaps", h.url))
            .json(
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stranger"}}),
            )
            .send()
            .await?;
        if !matches!(r.status().as_u16(), 403 | 422) {
            bail!("the policy of {ns} did not deny: {}", r.status());
        }
    }
    const NAMESPACES: [&str; 5] = ["plain", "policed", "mutated", "wasm", "hooked"];
    let n = NAMESPACES.len();
    // [real creates, dry runs, dry runs after a pause] x namespace: p50 per round, and
    // creates/s. The third pass waits as long as a durable commit takes before each request
    // (outside the timing), so the machine idles between requests as it does for creates:
    // what admission adds there, against the dry runs back to back, is the cost of running on
    // caches the idle let go cold, not of the write.
    let mut p50s: [[Vec<f64>; 5]; 3] = Default::default();
    let mut rates: [Vec<f64>; 5] = Default::default();
    let http = client();
    for round in 0..rounds {
        for (pass, (query, pause)) in [
            ("", Duration::ZERO),
            ("?dryRun=All", Duration::ZERO),
            ("?dryRun=All", COMMIT_PAUSE),
        ]
        .into_iter()
        .enumerate()
        {
            let mut lat: [Vec<Duration>; 5] = Default::default();
            let mut busy = [Duration::ZERO; 5];
            for i in 0..per * n {
                let k = i % n;
                let url = format!(
                    "{}/api/v1/namespaces/{}/configmaps{query}",
                    h.url, NAMESPACES[k]
                );
                if !pause.is_zero() {
                    // Blocking on purpose: a timer would round up to a millisecond.
                    std::thread::sleep(pause);
                }
                let t = Instant::now();
                let r = http
                    .post(url)
                    .json(&configmap(&format!("r{round}-{pass}-{i}")))
                    .send()
                    .await?;
                let code = r.status().as_u16();
                let _ = r.bytes().await?;
                if code != 201 {
                    bail!("create in {} answered {code}", NAMESPACES[k]);
                }
                let d = t.elapsed();
                lat[k].push(d);
                busy[k] += d;
            }
            for k in 0..n {
                lat[k].sort();
                p50s[pass][k].push(percentile(&lat[k], 0.5).as_secs_f64() * 1e6);
                if pass == 0 {
                    rates[k].push(per as f64 / busy[k].as_secs_f64());
                }
            }
        }
    }
    let [real, dry, paused] = p50s;
    for (what, p) in [
        ("create", real),
        (
            "dry-run create (dryRun=All: the whole chain, no write)",
            dry,
        ),
        (
            "dry-run create after a 0.35 ms pause (the client idles as long as a durable commit takes, outside the timing)",
            paused,
        ),
    ] {
        let [p_none, p_vap, p_map, p_wasm, p_hook] = p.map(median);
        rows.push((
            format!("{what} p50, 1 client: no policy vs one matching CEL ValidatingAdmissionPolicy vs one matching MutatingAdmissionPolicy (ApplyConfiguration) vs one matching Wasm validating policy (Rust) vs one matching validating webhook (HTTPS, loopback), same host, requests to the five namespaces in turn, {per} each, median of {rounds}"),
            format!(
                "{p_none:.0} µs vs {p_vap:.0} µs (+{:.0} µs) vs {p_map:.0} µs (+{:.0} µs) vs {p_wasm:.0} µs (+{:.0} µs) vs {p_hook:.0} µs (+{:.0} µs)",
                p_vap - p_none,
                p_map - p_none,
                p_wasm - p_none,
                p_hook - p_none
            ),
        ));
    }
    // The floor for the webhook: the same AdmissionReview round trip from here, keep-alive.
    let direct = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(hook.ca_pem.as_bytes())?)
        .build()?;
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                    "operation": "CREATE", "namespace": "hooked", "object": configmap("x")}});
    let mut trips = Vec::with_capacity(per);
    for _ in 0..per {
        let t = Instant::now();
        let r = direct
            .post(format!("{}/validate", hook.url))
            .json(&review)
            .send()
            .await?;
        let _ = r.bytes().await?;
        trips.push(t.elapsed());
    }
    trips.sort();
    rows.push((
        format!("the webhook's own round trip (the same AdmissionReview POSTed by the bench, HTTPS keep-alive, loopback), p50 of {per}"),
        format!("{:.0} µs", percentile(&trips, 0.5).as_secs_f64() * 1e6),
    ));
    let [r_none, r_vap, r_map, r_wasm, r_hook] = rates.map(median);
    rows.push((
        "creates/s, 1 client, no policy vs VAP vs MAP vs Wasm vs webhook (as above)".to_owned(),
        format!("{r_none:.0}/s vs {r_vap:.0}/s vs {r_map:.0}/s vs {r_wasm:.0}/s vs {r_hook:.0}/s"),
    ));
    Ok(())
}

/// Server-side apply against create, on one host per round, 8 clients: ConfigMap creates
/// (POST), the same number created by apply (PATCH `application/apply-patch+yaml` of an object
/// that does not exist), and re-applies of those objects with a changed value (an update as the
/// same manager). Medians of `rounds`, and apply's ratio to create.
async fn apply_vs_create(
    rows: &mut Vec<(String, String)>,
    total: usize,
    rounds: usize,
) -> Result<()> {
    let (mut created, mut applied, mut reapplied) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (h, _) = Host::start(&[]).await?;
        let c = client();
        create_ns(&c, &h.url, "create").await?;
        create_ns(&c, &h.url, "apply").await?;
        let (rate, _) = creates(&h.url, "create", 8, total).await?;
        created.push(rate);
        for (value, expect, out) in [("1", 201, &mut applied), ("2", 200, &mut reapplied)] {
            let coll = format!("{}/api/v1/namespaces/apply/configmaps", h.url);
            let (rate, _) = drive(8, total, expect, move |http, i| {
                let name = format!("obj-{i}");
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"app": "bench"}},
                    "data": {"key": value, "other": "some value of a few bytes"}});
                http.patch(format!("{coll}/{name}?fieldManager=bench"))
                    .header("content-type", "application/apply-patch+yaml")
                    .body(body.to_string())
            })
            .await?;
            out.push(rate);
        }
    }
    let (c, a, r) = (median(created), median(applied), median(reapplied));
    rows.push((
        format!("server-side apply vs create: ConfigMaps/s, 8 clients, {total} each, median of {rounds}"),
        format!(
            "create {c:.0}/s; apply creating {a:.0}/s (ratio {:.2}); apply updating {r:.0}/s (ratio {:.2})",
            a / c,
            r / c
        ),
    ));
    Ok(())
}

/// `total` creates from `clients` concurrent keep-alive clients; returns (creates/s, latencies).
async fn creates(
    url: &str,
    ns: &str,
    clients: usize,
    total: usize,
) -> Result<(f64, Vec<Duration>)> {
    creates_of(
        format!("{url}/api/v1/namespaces/{ns}/configmaps"),
        configmap,
        "obj-",
        clients,
        total,
    )
    .await
}

async fn creates_of(
    collection: String,
    body: fn(&str) -> serde_json::Value,
    prefix: &str,
    clients: usize,
    total: usize,
) -> Result<(f64, Vec<Duration>)> {
    let prefix = prefix.to_owned();
    drive(clients, total, 201, move |http, i| {
        http.post(&collection).json(&body(&format!("{prefix}{i}")))
    })
    .await
}

/// `total` requests from `clients` concurrent keep-alive clients (client `c` sends requests
/// `c, c + clients, ...` made by `request`), each expected to answer `expect`; returns
/// (requests/s, sorted latencies).
async fn drive(
    clients: usize,
    total: usize,
    expect: u16,
    request: impl Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder + Send + Sync + 'static,
) -> Result<(f64, Vec<Duration>)> {
    let request = Arc::new(request);
    let lat = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let request = request.clone();
        let lat = lat.clone();
        tasks.push(tokio::spawn(async move {
            let http = client();
            let mut mine = Vec::with_capacity(total / clients + 1);
            for i in (c..total).step_by(clients) {
                let t = Instant::now();
                let r = request(&http, i).send().await?;
                let code = r.status().as_u16();
                let _ = r.bytes().await?;
                if code != expect {
                    bail!("request {i} answered {code}, expected {expect}");
                }
                mine.push(t.elapsed());
            }
            lat.lock().await.extend(mine);
            Ok::<_, anyhow::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    let mut l = Arc::try_unwrap(lat)
        .map_err(|_| anyhow::anyhow!("latencies shared"))?
        .into_inner();
    l.sort_unstable();
    Ok((rate, l))
}

/// Use `token` instead of the admin's for the clients made from now on.
fn set_token(token: &str) {
    if let Ok(mut c) = CREDENTIALS.lock() {
        if let Some((_, t)) = c.as_mut() {
            *t = token.to_owned();
        }
    }
}

fn current_token() -> String {
    CREDENTIALS
        .lock()
        .ok()
        .and_then(|c| c.as_ref().map(|(_, t)| t.clone()))
        .unwrap_or_default()
}

/// `total` GETs of existing objects `obj-0..n` from `clients` keep-alive clients.
async fn gets(
    collection: String,
    prefix: &str,
    n: usize,
    clients: usize,
    total: usize,
) -> Result<(f64, Vec<Duration>)> {
    let prefix = prefix.to_owned();
    drive(clients, total, 200, move |http, i| {
        http.get(format!("{collection}/{prefix}{}", i % n))
    })
    .await
}

/// Mint a token with `turtles kubeconfig` for `user`.
fn mint(data_dir: &std::path::Path, user: &str) -> Result<String> {
    let bin = std::env::var("TURTLES_BIN")?;
    let out = Command::new(bin)
        .args(["kubeconfig", "--data-dir"])
        .arg(data_dir)
        .args(["--user", user])
        .output()?;
    if !out.status.success() {
        bail!(
            "turtles kubeconfig: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (_, _, token) = turtles_tests::parse_kubeconfig(&String::from_utf8(out.stdout)?)?;
    Ok(token)
}

/// The binary under test against a baseline binary (`BENCH_BASELINE`), alternating on fresh hosts
/// in one run: durable creates with 8 clients, and LIST of 2,000 ConfigMaps. Medians and ratios.
async fn baseline(
    rows: &mut Vec<(String, String)>,
    base: &str,
    total: usize,
    rounds: usize,
) -> Result<()> {
    let current =
        std::env::var("TURTLES_BIN").context("TURTLES_BIN must name the turtles binary")?;
    let mut rates = [Vec::new(), Vec::new()];
    let mut pod_rates = [Vec::new(), Vec::new()];
    let mut lists = [Vec::new(), Vec::new()];
    for r in 0..rounds {
        for (i, bin) in [base, current.as_str()].into_iter().enumerate() {
            let (h, _) = Host::start_bin(bin, &[], false).await?;
            let c = client();
            create_ns(&c, &h.url, "bench").await?;
            let (rate, _) = creates(&h.url, "bench", 8, total).await?;
            // Pods: the kind whose create does the most (kube's pod-spec validation and
            // defaults, QoS, priority, LimitRange and quota lookups).
            create_ns(&c, &h.url, "pods").await?;
            let (pod_rate, _) = creates_of(
                format!("{}/api/v1/namespaces/pods/pods", h.url),
                bench_pod,
                "pod-",
                8,
                (total / 4).max(8),
            )
            .await?;
            pod_rates[i].push(pod_rate);
            create_ns(&c, &h.url, "list").await?;
            for n in 0..2000 {
                let resp = c
                    .post(format!("{}/api/v1/namespaces/list/configmaps", h.url))
                    .json(&configmap(&format!("cm-{n}")))
                    .send()
                    .await?;
                if resp.status().as_u16() != 201 {
                    bail!("create returned {}", resp.status());
                }
            }
            let l = list_latency(&h.url, "list", 50, 2000).await?;
            let p50 = percentile(&l, 0.5).as_secs_f64() * 1000.0;
            eprintln!(
                "baseline round {r} {}: {rate:.0} creates/s, {pod_rate:.0} Pod creates/s, LIST p50 {p50:.2} ms",
                ["base", "current"][i]
            );
            rates[i].push(rate);
            lists[i].push(p50);
        }
    }
    let (rb, rc) = (median(rates[0].clone()), median(rates[1].clone()));
    let (lb, lc) = (median(lists[0].clone()), median(lists[1].clone()));
    rows.push((
        format!("vs baseline: durable creates/s, 8 clients, median of {rounds} alternating"),
        format!("{rb:.0} -> {rc:.0} (ratio {:.3})", rc / rb),
    ));
    rows.push((
        format!("vs baseline: LIST 2,000 ConfigMaps p50, median of {rounds} alternating"),
        format!("{lb:.2} ms -> {lc:.2} ms (ratio {:.3})", lc / lb),
    ));
    let (pb, pc) = (median(pod_rates[0].clone()), median(pod_rates[1].clone()));
    rows.push((
        format!("vs baseline: durable Pod creates/s (a Deployment's kind of Pod), 8 clients, median of {rounds} alternating"),
        format!("{pb:.0} -> {pc:.0} (ratio {:.3})", pc / pb),
    ));
    Ok(())
}

/// A Pod as a Deployment makes them: two containers with ports, env, probes, resources and
/// mounts, two volumes (what kube's pod-spec validation and defaults work through).
fn bench_pod(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench", "pod-template-hash": "5d4c8b9f7"}},
        "spec": {
            "containers": [
                {"name": "web", "image": "nginx:1.27",
                 "ports": [{"name": "http", "containerPort": 80}],
                 "env": [{"name": "MODE", "value": "prod"},
                         {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                 "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                 "livenessProbe": {"tcpSocket": {"port": 80}, "initialDelaySeconds": 5},
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                               "limits": {"memory": "128Mi"}},
                 "volumeMounts": [{"name": "conf", "mountPath": "/etc/conf"},
                                  {"name": "cache", "mountPath": "/cache"}]},
                {"name": "sidecar", "image": "busybox:1.36", "command": ["sleep", "infinity"],
                 "resources": {"requests": {"cpu": "10m"}}}
            ],
            "volumes": [{"name": "conf", "configMap": {"name": "web-conf"}},
                        {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}]
        }
    })
}

/// `--store etcd` next to sled, in one run: durable creates/s from 8 clients and the p50 of a LIST
/// of 2,000 ConfigMaps, on sled, on a three-member etcd (on this same machine) through one host,
/// and through three hosts with the clients spread over them. Medians of `rounds`, each setup
/// fresh in each round.
async fn etcd(rows: &mut Vec<(String, String)>, total: usize, rounds: usize) -> Result<()> {
    let bin = std::env::var("TURTLES_BIN").context("TURTLES_BIN must name the turtles binary")?;
    const SETUPS: [&str; 3] = ["sled", "etcd, 1 host", "etcd, 3 hosts"];
    let mut rates: [Vec<f64>; 3] = Default::default();
    let mut p99s: [Vec<f64>; 3] = Default::default();
    let mut lists: [Vec<f64>; 3] = Default::default();
    for r in 0..rounds {
        for (i, setup) in SETUPS.iter().enumerate() {
            let cluster = if i > 0 {
                Some(turtles_tests::etcd::EtcdCluster::start(3)?)
            } else {
                None
            };
            let prefix = format!("/bench-{}/", rand_tag());
            let endpoints = cluster.as_ref().map(|c| c.endpoints()).unwrap_or_default();
            let args: Vec<&str> = match &cluster {
                Some(_) => vec![
                    "--store",
                    "etcd",
                    "--etcd-endpoints",
                    &endpoints,
                    "--etcd-prefix",
                    &prefix,
                ],
                None => vec![],
            };
            let mut hosts = Vec::new();
            for _ in 0..if i == 2 { 3 } else { 1 } {
                hosts.push(Host::start_bin(&bin, &args, false).await?.0);
            }
            // The hosts of one cluster share their CA and admin token: one client for all.
            let urls: Vec<String> = hosts.iter().map(|h| h.url.clone()).collect();
            let c = client();
            create_ns(&c, &urls[0], "bench").await?;
            let spread = urls.clone();
            let (rate, lat) = drive(8, total, 201, move |http, n| {
                http.post(format!(
                    "{}/api/v1/namespaces/bench/configmaps",
                    spread[n % spread.len()]
                ))
                .json(&configmap(&format!("obj-{n}")))
            })
            .await?;
            create_ns(&c, &urls[0], "list").await?;
            fill(&urls[0], "list", 2000, None).await?;
            let l = list_latency(&urls[urls.len() - 1], "list", 50, 2000).await?;
            let p50 = percentile(&l, 0.5).as_secs_f64() * 1000.0;
            let p99 = percentile(&lat, 0.99).as_secs_f64() * 1000.0;
            eprintln!("etcd round {r} {setup}: {rate:.0} creates/s (p99 {p99:.2} ms), LIST p50 {p50:.2} ms");
            rates[i].push(rate);
            p99s[i].push(p99);
            lists[i].push(p50);
            drop(hosts);
            drop(cluster);
        }
    }
    for (i, setup) in SETUPS.iter().enumerate() {
        rows.push((
            format!("{setup}: durable creates/s, 8 clients, {total} each, median of {rounds} (create p99)"),
            format!(
                "{:.0}/s ({:.2} ms)",
                median(rates[i].clone()),
                median(p99s[i].clone())
            ),
        ));
        rows.push((
            format!("{setup}: LIST 2,000 ConfigMaps p50, median of {rounds}"),
            format!("{:.2} ms", median(lists[i].clone())),
        ));
    }
    Ok(())
}

async fn list_latency(url: &str, ns: &str, rounds: usize, expect: usize) -> Result<Vec<Duration>> {
    let http = client();
    let mut out = Vec::with_capacity(rounds);
    // One body buffer for every round: what is measured is the server and the connection, not
    // the client's allocator (reading a fresh 1 MiB body cost a new mmap and its page faults on
    // some rounds and not on others, which made the figures of both binaries bimodal).
    let mut body: Vec<u8> = Vec::new();
    for _ in 0..rounds {
        body.clear();
        let t = Instant::now();
        let mut stream = http
            .get(format!("{url}/api/v1/namespaces/{ns}/configmaps"))
            .send()
            .await?
            .bytes_stream();
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk?);
        }
        out.push(t.elapsed());
        let v: serde_json::Value = serde_json::from_slice(&body)?;
        // The namespace's own `kube-root-ca.crt` (published when the namespace was made) is
        // not one of the benchmark's.
        let n = v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
            .count();
        if n != expect {
            bail!("list returned {n} items, expected {expect}");
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// `watchers` watches on one namespace; `events` creates, one at a time; latency from just before
/// the POST to each watcher reading the ADDED line.
async fn watch_delivery(
    url: &str,
    ns: &str,
    watchers: usize,
    events: usize,
) -> Result<Vec<Duration>> {
    let sent: Arc<std::sync::Mutex<Vec<Option<Instant>>>> =
        Arc::new(std::sync::Mutex::new(vec![None; events]));
    let lat = Arc::new(std::sync::Mutex::new(Vec::with_capacity(watchers * events)));
    let rv = {
        let v: serde_json::Value = client()
            .get(format!("{url}/api/v1/namespaces/{ns}/configmaps"))
            .send()
            .await?
            .json()
            .await?;
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("0")
            .to_owned()
    };
    let mut tasks = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(watchers);
    for _ in 0..watchers {
        let url = url.to_owned();
        let ns = ns.to_owned();
        let rv = rv.clone();
        let sent = sent.clone();
        let lat = lat.clone();
        let ready_tx = ready_tx.clone();
        tasks.push(tokio::spawn(async move {
            let resp = client()
                .get(format!(
                    "{url}/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}"
                ))
                .send()
                .await?;
            let _ = ready_tx.send(()).await;
            let mut stream = resp.bytes_stream();
            let mut buf = Vec::new();
            let mut seen = 0;
            while seen < events {
                let Some(chunk) = stream.next().await else {
                    bail!("watch ended early")
                };
                buf.extend_from_slice(&chunk?);
                while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=pos).collect();
                    let now = Instant::now();
                    let v: serde_json::Value = serde_json::from_slice(&line)?;
                    if v["type"] != "ADDED" {
                        continue;
                    }
                    let name = v["object"]["metadata"]["name"].as_str().unwrap_or("");
                    if let Some(i) = name
                        .strip_prefix("w-")
                        .and_then(|s| s.parse::<usize>().ok())
                    {
                        let t0 = sent.lock().ok().and_then(|s| s.get(i).copied().flatten());
                        if let Some(t0) = t0 {
                            lat.lock()
                                .map_err(|_| anyhow::anyhow!("poisoned"))?
                                .push(now - t0);
                        }
                        seen += 1;
                    }
                }
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    drop(ready_tx);
    for _ in 0..watchers {
        ready_rx.recv().await.context("watcher failed to start")?;
    }
    let http = client();
    for i in 0..events {
        if let Ok(mut s) = sent.lock() {
            s[i] = Some(Instant::now());
        }
        let r = http
            .post(format!("{url}/api/v1/namespaces/{ns}/configmaps"))
            .json(&configmap(&format!("w-{i}")))
            .send()
            .await?;
        if r.status().as_u16() != 201 {
            bail!("create returned {}", r.status());
        }
        // A steady trickle, not a burst: 2 ms between events.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .context("watchers did not finish")???;
    }
    let mut l = lat.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.clone();
    l.sort_unstable();
    Ok(l)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    format!("{cores} cores, {cpu}")
}

/// A built guest (`target/guests/NAME.wasm`).
fn guest_bytes(name: &str) -> Result<Vec<u8>> {
    let bin = PathBuf::from(std::env::var("TURTLES_BIN")?);
    let target = bin
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .context("target dir")?
        .to_path_buf();
    std::fs::read(target.join("guests").join(format!("{name}.wasm")))
        .context("build the guests first: cargo xtask guests")
}

fn drop_file(dir: &std::path::Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dir.join(format!("{name}.wasm")))?;
    Ok(())
}

async fn wait_running(c: &reqwest::Client, url: &str, name: &str) -> Result<()> {
    wait_status(c, url, name, Duration::from_secs(120), |s| {
        s.is_some_and(|s| s["phase"] == "Running")
    })
    .await
}

/// Wait until the controller (or admission policy) `name` runs its optimized code (what a
/// dispatch figure is about; a new component starts on baseline code).
async fn wait_optimized(c: &reqwest::Client, url: &str, name: &str) -> Result<()> {
    wait_status(c, url, name, Duration::from_secs(600), |s| {
        s.is_some_and(|s| s["phase"] == "Running" && s["codeTier"] == "Optimized")
    })
    .await
}

/// Until the controller `name` is unloaded (its `Controller` object gone).
async fn wait_gone(c: &reqwest::Client, url: &str, name: &str) -> Result<()> {
    wait_status(c, url, name, Duration::from_secs(60), |s| s.is_none()).await
}

/// Until `done` holds of the controller's status (`None`: there is no such controller).
async fn wait_status(
    c: &reqwest::Client,
    url: &str,
    name: &str,
    within: Duration,
    done: impl Fn(Option<&serde_json::Value>) -> bool,
) -> Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let r = c
            .get(format!("{url}/apis/turtles.dev/v1/controllers/{name}"))
            .send()
            .await?;
        match r.status().as_u16() {
            200 => {
                let v: serde_json::Value = r.json().await?;
                if done(Some(&v["status"])) {
                    return Ok(());
                }
            }
            404 if done(None) => return Ok(()),
            _ => {}
        }
        if Instant::now() > deadline {
            bail!("controller {name} did not get there within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Wait until the `n` labelled ConfigMaps named `prefix*` in `coll` carry a greeting.
async fn wait_greeted(c: &reqwest::Client, coll: &str, prefix: &str, n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let list: serde_json::Value = c
            .get(format!("{coll}?labelSelector=turtles.dev%2Fgreet%3Dtrue"))
            .send()
            .await?
            .json()
            .await?;
        let done = list["items"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|o| {
                        o["metadata"]["name"]
                            .as_str()
                            .is_some_and(|n| n.starts_with(prefix))
                    })
                    .filter(|o| o["metadata"]["annotations"]["turtles.dev/greeting"].is_string())
                    .count()
            })
            .unwrap_or(0);
        if done == n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {done} of {n} greeted");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The mean no-op reconcile of controller `name` as the host measures it (from /metrics), over
/// `touches` merge patches of the greeted ConfigMaps `prefix0..prefix{n-1}` in `default`; and
/// how many reconciles that was (touches of a key that is still queued coalesce).
async fn noop_dispatch(
    c: &reqwest::Client,
    url: &str,
    name: &str,
    prefix: &str,
    n: usize,
    touches: usize,
) -> Result<(f64, f64)> {
    let coll = format!("{url}/api/v1/namespaces/default/configmaps");
    let label = format!("controller=\"{name}\"");
    let metrics = || async {
        let m = c.get(format!("{url}/metrics")).send().await?.text().await?;
        Ok::<_, anyhow::Error>(m)
    };
    let (s0, n0) = histogram(
        &metrics().await?,
        "turtles_controller_reconcile_duration_seconds",
        &label,
    );
    for i in 0..touches {
        let r = c
            .patch(format!("{coll}/{prefix}{}", i % n))
            .header("Content-Type", "application/merge-patch+json")
            .body(json!({"data": {"k": format!("v{i}")}}).to_string())
            .send()
            .await?;
        if r.status().as_u16() != 200 {
            bail!("patch: {}", r.status());
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let (s1, n1) = loop {
        let m = metrics().await?;
        let (s1, n1) = histogram(&m, "turtles_controller_reconcile_duration_seconds", &label);
        // Wait for the queue to drain (read live: the Controller object lags up to a second).
        let depth = gauge(&m, "turtles_controller_queue_depth", &label);
        if (n1 - n0 >= touches as f64 * 0.5 && depth == Some(0.0)) || Instant::now() > deadline {
            break (s1, n1);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    Ok(((s1 - s0) / (n1 - n0).max(1.0) * 1e6, n1 - n0))
}

/// The value of a gauge with exactly these labels.
fn gauge(metrics: &str, name: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{name}{{{labels}}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Sum and count of a histogram in /metrics text.
fn histogram(metrics: &str, name: &str, labels: &str) -> (f64, f64) {
    let find = |suffix: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}_{suffix}{{{labels}}} ")))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (find("sum"), find("count"))
}

fn labeled(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"turtles.dev/greet": "true"}}, "data": {"k": "v"}})
}

/// A ConfigMap for the `noop` controller, as big as a greeted one of `labeled`.
fn noop_labeled(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"turtles.dev/test": "noop"},
            "annotations": {"turtles.dev/greeting": format!("hello, {name}")}},
        "data": {"k": "v"}})
}

/// Until the controller with metric labels `label` has made at least `n` reconciles and its
/// queue is empty.
async fn wait_reconciled(c: &reqwest::Client, url: &str, label: &str, n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let m = c.get(format!("{url}/metrics")).send().await?.text().await?;
        let (_, count) = histogram(&m, "turtles_controller_reconcile_duration_seconds", label);
        let depth = gauge(&m, "turtles_controller_queue_depth", label);
        if count >= n as f64 && depth == Some(0.0) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{label}: {count} reconciles of {n} after 60 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Event -> reconcile -> write visible: POST `count` labelled ConfigMaps (`prefix0`...) one at a
/// time, each time waiting for the labeler's patch on a watch. Includes the create's durable
/// write, the dispatch, the guest's API call and its durable write.
async fn event_to_write(
    c: &reqwest::Client,
    url: &str,
    prefix: &str,
    count: usize,
) -> Result<Vec<Duration>> {
    let coll = format!("{url}/api/v1/namespaces/default/configmaps");
    let list: serde_json::Value = c.get(&coll).send().await?.json().await?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_owned();
    let resp = c
        .get(format!("{coll}?watch=true&resourceVersion={rv}"))
        .send()
        .await?;
    let mut stream = resp.bytes_stream();
    let mut buf = Vec::new();
    let mut lat = Vec::new();
    for i in 0..count {
        let name = format!("{prefix}{i}");
        let t = Instant::now();
        let r = c.post(&coll).json(&labeled(&name)).send().await?;
        if r.status().as_u16() != 201 {
            bail!("create: {}", r.status());
        }
        'wait: loop {
            let Some(chunk) = stream.next().await else {
                bail!("watch ended")
            };
            buf.extend_from_slice(&chunk?);
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                let v: serde_json::Value = serde_json::from_slice(&line)?;
                if v["object"]["metadata"]["name"] == name.as_str()
                    && v["object"]["metadata"]["annotations"]["turtles.dev/greeting"].is_string()
                {
                    lat.push(t.elapsed());
                    break 'wait;
                }
            }
        }
    }
    Ok(lat)
}

/// The cumulative buckets `(le, count)` of a histogram in /metrics text (without `+Inf`).
fn buckets(metrics: &str, name: &str, labels: &str) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{{labels},le=\"");
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| {
            let (le, v) = rest.split_once("\"} ")?;
            Some((le.parse().ok()?, v.trim().parse().ok()?))
        })
        .collect()
}

/// The `q` quantile of the observations between two snapshots of a histogram's buckets, by
/// linear interpolation within the bucket it falls in (as Prometheus' `histogram_quantile`).
fn bucket_quantile(before: &[(f64, f64)], after: &[(f64, f64)], q: f64) -> f64 {
    let delta: Vec<(f64, f64)> = after
        .iter()
        .map(|(le, n)| {
            let was = before
                .iter()
                .find(|(l, _)| l == le)
                .map_or(0.0, |(_, n)| *n);
            (*le, n - was)
        })
        .collect();
    let Some(total) = delta.last().map(|(_, n)| *n).filter(|n| *n > 0.0) else {
        return f64::NAN;
    };
    let rank = q * total;
    let (mut lo, mut below) = (0.0, 0.0);
    for (le, n) in delta {
        if n >= rank {
            return lo + (le - lo) * ((rank - below) / (n - below).max(1e-9));
        }
        (lo, below) = (le, n);
    }
    lo
}

/// Issue 12's dispatch figures. The Rust `noop` controller (returns at once; the object is
/// handed over and never looked at, so the SDK never parses it): what a reconcile costs around
/// the guest's own work. Then per guest language, a no-op reconcile (the object is already
/// greeted; the guest reads it and returns), both as the host measures it around the call: mean and
/// p50 over at least `BENCH_DISPATCH_CALLS` (1,000) calls, from the reconcile histogram's
/// 1 µs..5 s buckets. Then event -> reconcile -> write visible (Rust labeler), and the time
/// from dropping the 16 example components on a cold compile cache until every Rust and C one
/// is `Running`.
async fn dispatch(rows: &mut Vec<(String, String)>) -> Result<()> {
    let wanted: f64 = std::env::var("BENCH_DISPATCH_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000.0);
    let hist = "turtles_controller_reconcile_duration_seconds";
    // BENCH_DISPATCH_LANGS=Rust (a comma list): only those languages' no-op rows, and not the
    // 16-component drop unless the list names `drop` (for iterating on one of them).
    let only: Option<Vec<String>> = std::env::var("BENCH_DISPATCH_LANGS")
        .ok()
        .map(|s| s.split(',').map(|l| l.trim().to_lowercase()).collect());
    for (lang, name) in [
        ("Rust", "noop"),
        ("Rust", "labeler"),
        ("Python", "py-greeter"),
        ("JavaScript", "js-greeter"),
    ] {
        if only
            .as_ref()
            .is_some_and(|o| !o.contains(&lang.to_lowercase()))
        {
            continue;
        }
        let (h, _) = Host::start_inner(&[], true).await?;
        let c = client();
        drop_file(&h.dir.join("controllers"), name, &guest_bytes(name)?)?;
        wait_optimized(&c, &h.url, name).await?;
        let coll = format!("{}/api/v1/namespaces/default/configmaps", h.url);
        let n = 50;
        let label = format!("controller=\"{name}\"");
        if name == "noop" {
            // Objects of the greeted ones' size, which the noop controller never looks at.
            creates_of(coll.clone(), noop_labeled, "d-", 4, n).await?;
            wait_reconciled(&c, &h.url, &label, n).await?;
        } else {
            creates_of(coll.clone(), labeled, "d-", 4, n).await?;
            wait_greeted(&c, &coll, "d-", n).await?;
        }
        let metrics = || async {
            let m = c
                .get(format!("{}/metrics", h.url))
                .send()
                .await?
                .text()
                .await?;
            Ok::<_, anyhow::Error>(m)
        };
        let guest_hist = "turtles_controller_guest_call_duration_seconds";
        let m0 = metrics().await?;
        let (s0, n0) = histogram(&m0, hist, &label);
        let b0 = buckets(&m0, hist, &label);
        let (gs0, gn0) = histogram(&m0, guest_hist, &label);
        let mut calls = 0.0;
        while calls < wanted {
            let (_, got) = noop_dispatch(&c, &h.url, name, "d-", n, 500).await?;
            if got <= 0.0 {
                bail!("{name}: touches caused no reconcile");
            }
            calls += got;
        }
        let m1 = metrics().await?;
        let (s1, n1) = histogram(&m1, hist, &label);
        let b1 = buckets(&m1, hist, &label);
        let mean_us = (s1 - s0) / (n1 - n0).max(1.0) * 1e6;
        let p50_us = bucket_quantile(&b0, &b1, 0.5) * 1e6;
        let (gs1, gn1) = histogram(&m1, guest_hist, &label);
        let guest_us = (gs1 - gs0) / (gn1 - gn0).max(1.0) * 1e6;
        rows.push((
            format!("{lang} guest (`{name}`): no-op reconcile as the host measures it, mean / p50 over {:.0} calls (mean of the guest call alone)", n1 - n0),
            format!("{mean_us:.1} µs / {p50_us:.1} µs ({guest_us:.1} µs)"),
        ));
        // The same, one reconcile at a time: each touch waits until its reconcile is counted, so
        // no request is being served while the guest runs (the figure above shares two cores
        // with the next PATCH and with this client).
        let quiet_calls = (wanted as usize / 2).max(100);
        let mut quiet = Vec::with_capacity(quiet_calls);
        let mut quiet_guest = Vec::with_capacity(quiet_calls);
        let m_prev = metrics().await?;
        let (mut s_prev, mut n_prev) = histogram(&m_prev, hist, &label);
        let (mut gs_prev, mut gn_prev) = histogram(&m_prev, guest_hist, &label);
        for i in 0..quiet_calls {
            let r = c
                .patch(format!("{coll}/d-{}", i % n))
                .header("Content-Type", "application/merge-patch+json")
                .body(json!({"data": {"q": format!("v{i}")}}).to_string())
                .send()
                .await?;
            if r.status().as_u16() != 200 {
                bail!("patch: {}", r.status());
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                // Let the reconcile run alone: a /metrics request served meanwhile would share
                // the cores with it (a no-op takes tens of microseconds; 2 ms is ample).
                tokio::time::sleep(Duration::from_millis(2)).await;
                let m = metrics().await?;
                let (s1, n1) = histogram(&m, hist, &label);
                if n1 > n_prev {
                    quiet.push((s1 - s_prev) / (n1 - n_prev) * 1e6);
                    (s_prev, n_prev) = (s1, n1);
                    let (gs1, gn1) = histogram(&m, guest_hist, &label);
                    quiet_guest.push((gs1 - gs_prev) / (gn1 - gn_prev).max(1.0) * 1e6);
                    (gs_prev, gn_prev) = (gs1, gn1);
                    break;
                }
                if Instant::now() > deadline {
                    bail!("{name}: a touch caused no reconcile within 10 s");
                }
            }
        }
        rows.push((
            format!("{lang} guest (`{name}`): no-op reconcile, one at a time (nothing else served meanwhile), median of {quiet_calls} (the guest call alone)"),
            format!("{:.1} µs ({:.1} µs)", median(quiet), median(quiet_guest)),
        ));
        // A backlog: the controller loaded again over 1,000 more objects, so its informer's
        // initial list queues them all at once and the worker reconciles them one after
        // another, as at a start, a relist or a resync (warm, unlike the rows above, where the
        // API's work between two reconciles leaves the caches cold).
        let backlog = 1000;
        if name == "noop" {
            creates_of(coll.clone(), noop_labeled, "b-", 4, backlog).await?;
        } else {
            creates_of(coll.clone(), labeled, "b-", 4, backlog).await?;
            wait_greeted(&c, &coll, "b-", backlog).await?;
        }
        wait_reconciled(&c, &h.url, &label, 0).await?;
        let file = h.dir.join("controllers").join(format!("{name}.wasm"));
        std::fs::remove_file(&file)?;
        wait_gone(&c, &h.url, name).await?;
        let m0 = metrics().await?;
        let (s0, n0) = histogram(&m0, hist, &label);
        let b0 = buckets(&m0, hist, &label);
        drop_file(&h.dir.join("controllers"), name, &guest_bytes(name)?)?;
        wait_reconciled(&c, &h.url, &label, n0 as usize + n + backlog).await?;
        let m1 = metrics().await?;
        let (s1, n1) = histogram(&m1, hist, &label);
        let b1 = buckets(&m1, hist, &label);
        rows.push((
            format!("{lang} guest (`{name}`): no-op reconciles of a backlog (loaded again over {} objects: {:.0} reconciles back to back), as the host measures them, mean / p50 (the mean includes the first call's instantiation)", n + backlog, n1 - n0),
            format!(
                "{:.1} µs / {:.1} µs",
                (s1 - s0) / (n1 - n0).max(1.0) * 1e6,
                bucket_quantile(&b0, &b1, 0.5) * 1e6
            ),
        ));
        if name == "labeler" {
            let mut lat = event_to_write(&c, &h.url, "lat-", 200).await?;
            lat.sort_unstable();
            rows.push((
                "event -> reconcile -> the controller's write visible on a watch (Rust labeler), p50 / p99 of 200".into(),
                format!("{} / {}", ms(percentile(&lat, 0.5)), ms(percentile(&lat, 0.99))),
            ));
        }
    }
    if only
        .as_ref()
        .is_some_and(|o| !o.iter().any(|l| l == "drop"))
    {
        return Ok(());
    }
    // 16 components dropped at once on a cold compile cache.
    const SMALL: &[&str] = &[
        "labeler",
        "labeler-v2",
        "looper",
        "trapper",
        "hog",
        "trespasser",
        "certificate",
        "issuer",
        "node",
        "c-greeter",
    ];
    const BIG: &[&str] = &[
        "deployment",
        "py-greeter",
        "py-greeter-v2",
        "replicaset",
        "js-greeter",
        "js-greeter-v2",
    ];
    let (h, _) = Host::start_inner(&[], true).await?;
    let c = client();
    let dir = h.dir.join("controllers");
    for name in SMALL.iter().chain(BIG) {
        std::fs::write(dir.join(format!(".{name}.tmp")), guest_bytes(name)?)?;
    }
    let dropped = Instant::now();
    for name in SMALL.iter().chain(BIG) {
        std::fs::rename(
            dir.join(format!(".{name}.tmp")),
            dir.join(format!("{name}.wasm")),
        )?;
    }
    let deadline = dropped + Duration::from_secs(300);
    let (small, compiling) = loop {
        let list: serde_json::Value = c
            .get(format!("{}/apis/turtles.dev/v1/controllers", h.url))
            .send()
            .await?
            .json()
            .await?;
        let running: Vec<&str> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| o["status"]["phase"] == "Running")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        if SMALL.iter().all(|n| running.contains(n)) {
            break (
                dropped.elapsed(),
                BIG.iter().filter(|n| !running.contains(*n)).count(),
            );
        }
        if Instant::now() > deadline {
            bail!("the Rust and C controllers did not all start: {running:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    rows.push((
        "16 example components dropped at once, cold compile cache: every Rust and C one `Running`"
            .into(),
        format!(
            "{} ({compiling} of 6 Python/JavaScript still compiling)",
            ms(small)
        ),
    ));
    Ok(())
}

/// WebAssembly controllers: load time with a cold and a warm compile cache, memory per loaded
/// controller, event -> reconcile latency, reconciles/s, and the cost of dispatching a reconcile
/// that does no work.
async fn controllers(rows: &mut Vec<(String, String)>, rounds: usize) -> Result<()> {
    let labeler = guest_bytes("labeler")?;
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..rounds {
        // Cold: a fresh data directory has an empty compile cache.
        let (h, _) = Host::start_inner(&[], true).await?;
        let c = client();
        let dir = h.dir.join("controllers");
        let t = Instant::now();
        drop_file(&dir, "labeler", &labeler)?;
        wait_running(&c, &h.url, "labeler").await?;
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
        // Warm: the same bytes under another name hit the cache.
        let t = Instant::now();
        drop_file(&dir, "labeler-copy", &labeler)?;
        wait_running(&c, &h.url, "labeler-copy").await?;
        warm.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    rows.push((
        format!("controller file drop -> Running (compiled, registered, informers started), cold / warm compile cache, median of {rounds}"),
        format!("{:.1} ms / {:.1} ms", median(cold), median(warm)),
    ));

    let (h, _) = Host::start_inner(&[], true).await?;
    let c = client();
    let dir = h.dir.join("controllers");
    // Memory per loaded controller: RSS before and after loading 10 copies.
    let before = h.rss_mib();
    for i in 0..10 {
        drop_file(&dir, &format!("copy-{i}"), &labeler)?;
    }
    for i in 0..10 {
        wait_running(&c, &h.url, &format!("copy-{i}")).await?;
    }
    let after = h.rss_mib();
    rows.push((
        "RSS per loaded controller (10 copies of the Rust labeler, one warm instance each)".into(),
        format!("{:.2} MiB", (after - before) / 10.0),
    ));
    for i in 0..10 {
        std::fs::remove_file(dir.join(format!("copy-{i}.wasm")))?;
    }
    drop_file(&dir, "labeler", &labeler)?;
    wait_optimized(&c, &h.url, "labeler").await?;
    let coll = format!("{}/api/v1/namespaces/default/configmaps", h.url);
    let mut lat = event_to_write(&c, &h.url, "lat-", 200).await?;
    lat.sort_unstable();
    rows.push((
        "event -> reconcile -> the controller's write visible on a watch, p50 / p99 of 200".into(),
        format!(
            "{} / {}",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        ),
    ));
    // Reconciles/s: 2,000 labelled ConfigMaps, each reconcile patching its object.
    let n = 2000;
    let t = Instant::now();
    creates_of(coll.clone(), labeled, "rps-", 8, n).await?;
    wait_greeted(&c, &coll, "rps-", n).await?;
    let rate = n as f64 / t.elapsed().as_secs_f64();
    rows.push((
        format!("creates + reconciles (each reconcile patches its object), {n} objects, 8 clients"),
        format!("{rate:.0} objects/s fully reconciled"),
    ));
    // Dispatch of a reconcile that does no work: touch already-greeted objects; the guest sees
    // the greeting and returns. Measured by the host around the call (reading the object from
    // the store, guest entry on the async worker, the guest parsing the object), from /metrics.
    let (mean_us, calls) = noop_dispatch(&c, &h.url, "labeler", "rps-", n, 500).await?;
    rows.push((
        "no-op reconcile as the host measures it (object read + call of a warm instance on the async worker; guest parses ~400 B JSON), mean".into(),
        format!("{mean_us:.1} µs over {calls:.0} calls"),
    ));
    Ok(())
}

/// Per guest language, the same greeter controller (ConfigMaps labelled
/// `turtles.dev/greet=true` get an annotation; a reconcile of a greeted object returns without a
/// call): component size, cold compile, warm load, no-op dispatch and memory per instance.
async fn languages(rows: &mut Vec<(String, String)>, rounds: usize) -> Result<()> {
    for (lang, name) in [
        ("Rust", "labeler"),
        ("C", "c-greeter"),
        ("Python", "py-greeter"),
        ("JavaScript", "js-greeter"),
        ("Go", "go-greeter"),
    ] {
        let bytes = guest_bytes(name)?;
        let (mut cold, mut warm, mut compile, mut optimized) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            // Cold: a fresh data directory has an empty compile cache.
            let (h, _) = Host::start_inner(&[], true).await?;
            let c = client();
            let dir = h.dir.join("controllers");
            let t = Instant::now();
            drop_file(&dir, name, &bytes)?;
            wait_running(&c, &h.url, name).await?;
            cold.push(t.elapsed().as_secs_f64() * 1000.0);
            let status: serde_json::Value = c
                .get(format!("{}/apis/turtles.dev/v1/controllers/{name}", h.url))
                .send()
                .await?
                .json()
                .await?;
            compile.push(status["status"]["compileMillis"].as_f64().unwrap_or(0.0));
            // Then the optimized code, compiled in the background.
            wait_optimized(&c, &h.url, name).await?;
            optimized.push(t.elapsed().as_secs_f64() * 1000.0);
            // Warm: the same bytes under another name hit the cache.
            let t = Instant::now();
            drop_file(&dir, "copy", &bytes)?;
            wait_running(&c, &h.url, "copy").await?;
            warm.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        // Memory and dispatch on one host with a warm cache.
        let (h, _) = Host::start_inner(&[], true).await?;
        let c = client();
        let dir = h.dir.join("controllers");
        drop_file(&dir, name, &bytes)?;
        wait_optimized(&c, &h.url, name).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = h.rss_mib();
        let copies = 4;
        for i in 0..copies {
            drop_file(&dir, &format!("copy-{i}"), &bytes)?;
        }
        for i in 0..copies {
            wait_running(&c, &h.url, &format!("copy-{i}")).await?;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let per_instance = (h.rss_mib() - before) / copies as f64;
        for i in 0..copies {
            std::fs::remove_file(dir.join(format!("copy-{i}.wasm")))?;
        }
        // 50 greeted objects, then 500 touches whose reconciles find nothing to do.
        let coll = format!("{}/api/v1/namespaces/default/configmaps", h.url);
        let n = 50;
        creates_of(coll.clone(), labeled, "d-", 4, n).await?;
        wait_greeted(&c, &coll, "d-", n).await?;
        let (dispatch_us, _) = noop_dispatch(&c, &h.url, name, "d-", n, 500).await?;
        let label = format!("controller=\"{name}\"");
        let m = c
            .get(format!("{}/metrics", h.url))
            .send()
            .await?
            .text()
            .await?;
        let linear = gauge(&m, "turtles_controller_instance_memory_bytes", &label)
            .context("no instance memory gauge")?
            / 1048576.0;
        eprintln!(
            "{lang}: {} KiB, cold {:.0} ms, warm {:.0} ms, dispatch {dispatch_us:.1} µs, {per_instance:.2} MiB RSS/controller, {linear:.2} MiB linear memory/instance",
            bytes.len() / 1024,
            median(cold.clone()),
            median(warm.clone())
        );
        rows.push((
            format!("{lang} guest (`{name}`): component size / cold load to `Running` (compile {:.0} ms) / optimized code running / warm load / no-op dispatch / linear memory per instance / RSS per loaded controller", median(compile)),
            format!(
                "{:.0} KiB / {:.0} ms / {:.0} ms / {:.0} ms / {dispatch_us:.0} µs / {linear:.2} MiB / {per_instance:.2} MiB",
                bytes.len() as f64 / 1024.0,
                median(cold),
                median(optimized),
                median(warm)
            ),
        ));
    }
    Ok(())
}

/// The workload story end to end: a Deployment of `replicas` reconciled by the Python
/// `deployment`, JavaScript `replicaset` and C `node` controllers — time from the Deployment's
/// create until every replica is updated and available (what `kubectl rollout status` waits
/// for), then for a rolling update of its image, and for its deletion (the garbage collector)
/// until no Pod is left.
async fn workload(rows: &mut Vec<(String, String)>, rounds: usize) -> Result<()> {
    let replicas = 100;
    let (mut create, mut update, mut delete) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (h, _) = Host::start_inner(&[], true).await?;
        let c = client();
        let dir = h.dir.join("controllers");
        for name in ["deployment", "replicaset", "node"] {
            drop_file(&dir, name, &guest_bytes(name)?)?;
        }
        for name in ["deployment", "replicaset", "node"] {
            wait_optimized(&c, &h.url, name).await?;
        }
        let coll = format!("{}/apis/apps/v1/namespaces/default/deployments", h.url);
        let body = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "big"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "big"}},
                "template": {"metadata": {"labels": {"app": "big"}},
                             "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}},
            },
        });
        let t = Instant::now();
        let r = c.post(&coll).json(&body).send().await?;
        if r.status().as_u16() != 201 {
            bail!("deployment create: {}", r.status());
        }
        rolled_out(&c, &format!("{coll}/big"), replicas).await?;
        create.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}});
        let r = c
            .patch(format!("{coll}/big"))
            .header("Content-Type", "application/strategic-merge-patch+json")
            .body(image.to_string())
            .send()
            .await?;
        if r.status().as_u16() != 200 {
            bail!("deployment patch: {}", r.status());
        }
        rolled_out(&c, &format!("{coll}/big"), replicas).await?;
        update.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let r = c.delete(format!("{coll}/big")).send().await?;
        if !r.status().is_success() {
            bail!("deployment delete: {}", r.status());
        }
        let pods = format!("{}/api/v1/namespaces/default/pods?limit=1", h.url);
        loop {
            let v: serde_json::Value = c.get(&pods).send().await?.json().await?;
            if v["items"].as_array().is_some_and(Vec::is_empty) {
                break;
            }
            if t.elapsed() > Duration::from_secs(300) {
                bail!("pods left after 5 minutes");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        delete.push(t.elapsed().as_secs_f64() * 1000.0);
        eprintln!(
            "round {round}: {replicas} replicas rolled out in {:.0} ms, updated in {:.0} ms, collected in {:.0} ms",
            create[round], update[round], delete[round]
        );
    }
    rows.push((
        format!("workload: Deployment of {replicas} (Python -> JavaScript -> C controllers): create -> all available / image update -> rolled out / delete -> no Pod left, median of {rounds}"),
        format!(
            "{:.0} ms / {:.0} ms / {:.0} ms",
            median(create),
            median(update),
            median(delete)
        ),
    ));
    Ok(())
}

/// Wait until a Deployment's rollout is complete, as `kubectl rollout status` decides it.
async fn rolled_out(c: &reqwest::Client, url: &str, replicas: u64) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let d: serde_json::Value = c.get(url).send().await?.json().await?;
        let st = &d["status"];
        let n = |k: &str| st[k].as_u64().unwrap_or(0);
        if st["observedGeneration"] == d["metadata"]["generation"]
            && n("updatedReplicas") == replicas
            && n("replicas") == replicas
            && n("availableReplicas") == replicas
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("rollout not complete after 5 minutes: {st}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The API server's own numbers: start-up, creates, RBAC cost, LIST and watch.
async fn api(rows: &mut Vec<(String, String)>, total: usize, rounds: usize) -> Result<()> {
    // Time to ready and idle RSS: median of several fresh starts.
    let mut ready = Vec::new();
    let mut idle = Vec::new();
    for _ in 0..5 {
        let (h, r) = Host::start(&[]).await?;
        ready.push(r.as_secs_f64() * 1000.0);
        tokio::time::sleep(Duration::from_millis(300)).await;
        idle.push(h.rss_mib());
    }
    rows.extend([
        (
            "time to ready (spawn -> /readyz 200), median of 5".into(),
            format!("{:.1} ms", median(ready)),
        ),
        (
            "idle RSS, median of 5".into(),
            format!("{:.1} MiB", median(idle)),
        ),
    ]);
    // Creates, durable (default) and without fsync, alternating, `rounds` each.
    let mut durable = Vec::new();
    let mut nofsync = Vec::new();
    let mut durable_lat = Vec::new();
    let mut rss_loaded = Vec::new();
    for r in 0..rounds {
        for (mode, args) in [("durable", &[][..]), ("no-fsync", &["--no-fsync"][..])] {
            let (h, _) = Host::start(args).await?;
            let c = client();
            create_ns(&c, &h.url, "bench").await?;
            let (rate, lat) = creates(&h.url, "bench", 8, total).await?;
            eprintln!(
                "round {r} {mode}: {rate:.0} creates/s p50 {} p99 {}",
                ms(percentile(&lat, 0.5)),
                ms(percentile(&lat, 0.99))
            );
            if mode == "durable" {
                durable.push(rate);
                durable_lat.push((percentile(&lat, 0.5), percentile(&lat, 0.99)));
                rss_loaded.push(h.rss_mib());
            } else {
                nofsync.push(rate);
            }
        }
    }
    // Custom resources with a 20-field schema vs ConfigMaps, alternating on fresh hosts.
    let mut cr_rates = Vec::new();
    let mut cm_rates = Vec::new();
    for _ in 0..rounds {
        let (h, _) = Host::start(&[]).await?;
        let c = client();
        create_ns(&c, &h.url, "bench").await?;
        let r = c
            .post(format!(
                "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                h.url
            ))
            .json(&widget_crd())
            .send()
            .await?;
        if r.status().as_u16() != 201 {
            bail!("CRD create: {} {}", r.status(), r.text().await?);
        }
        let (cm, _) = creates(&h.url, "bench", 8, total / 2).await?;
        let (cr, _) = creates_of(
            format!(
                "{}/apis/bench.turtles.dev/v1/namespaces/bench/widgets",
                h.url
            ),
            widget,
            "obj-",
            8,
            total / 2,
        )
        .await?;
        eprintln!("custom resources {cr:.0}/s vs configmaps {cm:.0}/s");
        cr_rates.push(cr);
        cm_rates.push(cm);
    }
    let d = median(durable.clone());
    let n = median(nofsync);
    let mut p50s: Vec<f64> = durable_lat
        .iter()
        .map(|l| l.0.as_secs_f64() * 1000.0)
        .collect();
    let mut p99s: Vec<f64> = durable_lat
        .iter()
        .map(|l| l.1.as_secs_f64() * 1000.0)
        .collect();
    p50s.sort_by(f64::total_cmp);
    p99s.sort_by(f64::total_cmp);
    rows.push((
        format!("durable creates/s, 8 keep-alive clients, {total} creates, median of {rounds}"),
        format!("{d:.0}/s"),
    ));
    rows.push((
        "create latency p50 / p99 (median of runs)".into(),
        format!(
            "{:.2} ms / {:.2} ms",
            p50s[p50s.len() / 2],
            p99s[p99s.len() / 2]
        ),
    ));
    rows.push((
        "creates/s with --no-fsync (same run), ratio durable/no-fsync".into(),
        format!("{n:.0}/s, {:.2}", d / n),
    ));
    rows.push((
        format!("RSS after {total} creates"),
        format!("{:.1} MiB", median(rss_loaded)),
    ));
    let (crm, cmm) = (median(cr_rates), median(cm_rates));
    rows.push((
        format!(
            "custom resource (20-field schema) creates/s vs ConfigMap creates/s, same host, {} each, median of {rounds}",
            total / 2
        ),
        format!("{crm:.0}/s vs {cmm:.0}/s, ratio {:.2}", crm / cmm),
    ));
    // The cost of RBAC: the same creates and gets as the admin (system:masters, no rule
    // evaluation) and as a user allowed by a RoleBinding to the `edit` ClusterRole.
    let (h, _) = Host::start(&[]).await?;
    let c = client();
    create_ns(&c, &h.url, "rbac").await?;
    let admin = current_token();
    let user = mint(&h.dir, "bench-user")?;
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bench-user-edit", "namespace": "rbac"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "name": "bench-user", "apiGroup": "rbac.authorization.k8s.io"}],
    });
    let r = c
        .post(format!(
            "{}/apis/rbac.authorization.k8s.io/v1/namespaces/rbac/rolebindings",
            h.url
        ))
        .json(&binding)
        .send()
        .await?;
    if r.status().as_u16() != 201 {
        bail!("rolebinding create: {}", r.status());
    }
    let coll = format!("{}/api/v1/namespaces/rbac/configmaps", h.url);
    let per = total / 4;
    let mut create_rates = (Vec::new(), Vec::new());
    let mut get_rates = (Vec::new(), Vec::new());
    let mut get_p50 = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for (who, token) in [("admin", &admin), ("rbac", &user)] {
            set_token(token);
            // Distinct names per round and identity.
            let prefix = format!("{who}{round}-");
            let (rate, _) = creates_of(coll.clone(), configmap, &prefix, 8, per).await?;
            let (grate, glat) = gets(coll.clone(), &prefix, per, 8, per).await?;
            if who == "admin" {
                create_rates.0.push(rate);
                get_rates.0.push(grate);
                get_p50
                    .0
                    .push(percentile(&glat, 0.5).as_secs_f64() * 1000.0);
            } else {
                create_rates.1.push(rate);
                get_rates.1.push(grate);
                get_p50
                    .1
                    .push(percentile(&glat, 0.5).as_secs_f64() * 1000.0);
            }
        }
    }
    set_token(&admin);
    drop(h);
    let (ca, cu) = (median(create_rates.0), median(create_rates.1));
    let (ga, gu) = (median(get_rates.0), median(get_rates.1));
    rows.push((
        format!("creates/s, admin token vs RBAC-authorized user (RoleBinding to edit), {per} each, median of {rounds}"),
        format!("{ca:.0}/s vs {cu:.0}/s, ratio {:.2}", cu / ca),
    ));
    rows.push((
        format!(
            "GETs/s (p50), admin token vs RBAC-authorized user, {per} each, median of {rounds}"
        ),
        format!(
            "{ga:.0}/s ({:.2} ms) vs {gu:.0}/s ({:.2} ms), ratio {:.2}",
            median(get_p50.0),
            median(get_p50.1),
            gu / ga
        ),
    ));
    admission(rows, per, rounds).await?;
    // LIST of 2,000 and watch delivery on one host.
    let (h, _) = Host::start(&[]).await?;
    let c = client();
    create_ns(&c, &h.url, "list").await?;
    let http = client();
    for i in 0..2000 {
        let r = http
            .post(format!("{}/api/v1/namespaces/list/configmaps", h.url))
            .json(&configmap(&format!("cm-{i}")))
            .send()
            .await?;
        if r.status().as_u16() != 201 {
            bail!("create returned {}", r.status());
        }
    }
    let lists = list_latency(&h.url, "list", 50, 2000).await?;
    rows.push((
        "LIST 2,000 ConfigMaps (~1 MiB JSON), p50 / p99 of 50".into(),
        format!(
            "{} / {}",
            ms(percentile(&lists, 0.5)),
            ms(percentile(&lists, 0.99))
        ),
    ));
    create_ns(&c, &h.url, "watch").await?;
    let w = watch_delivery(&h.url, "watch", 100, 200).await?;
    rows.push((
        "watch delivery, 100 watchers x 200 events, p50 / p99".into(),
        format!("{} / {}", ms(percentile(&w, 0.5)), ms(percentile(&w, 0.99))),
    ));
    rows.push((
        "RSS with 2,200 objects and 100 watchers".into(),
        format!("{:.1} MiB", h.rss_mib()),
    ));
    drop(h);
    Ok(())
}

/// `n` ConfigMaps in `ns`, each owned by `owner` (when given), from 8 clients.
async fn fill(url: &str, ns: &str, n: usize, owner: Option<&serde_json::Value>) -> Result<()> {
    let owner = owner.cloned();
    let coll = format!("{url}/api/v1/namespaces/{ns}/configmaps");
    drive(8, n, 201, move |http, i| {
        let mut body = configmap(&format!("dep-{i}"));
        if let Some(o) = &owner {
            body["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
                "uid": o["metadata"]["uid"], "blockOwnerDeletion": true,
            }]);
        }
        http.post(&coll).json(&body)
    })
    .await?;
    Ok(())
}

/// Poll (every 5 ms) until `path` answers 404; the time since `since`.
async fn until_gone(
    c: &reqwest::Client,
    url: &str,
    path: &str,
    since: Instant,
) -> Result<Duration> {
    let deadline = since + Duration::from_secs(600);
    loop {
        let code = c
            .get(format!("{url}{path}"))
            .send()
            .await?
            .status()
            .as_u16();
        if code == 404 {
            return Ok(since.elapsed());
        }
        if Instant::now() > deadline {
            bail!("{path} still there after 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// How many ConfigMaps `ns` holds.
async fn count(c: &reqwest::Client, url: &str, ns: &str) -> Result<usize> {
    let v: serde_json::Value = c
        .get(format!("{url}/api/v1/namespaces/{ns}/configmaps"))
        .send()
        .await?
        .json()
        .await?;
    Ok(v["items"].as_array().map(Vec::len).unwrap_or(0))
}

/// The garbage collector and the namespace controller: time to collect 10,000 dependents of
/// one owner (background and foreground) and to empty a namespace of 10,000 objects.
async fn collection(rows: &mut Vec<(String, String)>, rounds: usize) -> Result<()> {
    let n: usize = std::env::var("BENCH_GC_OBJECTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let (mut background, mut foreground, mut namespace) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for policy in ["Background", "Foreground"] {
            let (h, _) = Host::start(&[]).await?;
            let c = client();
            create_ns(&c, &h.url, "gc").await?;
            let r = c
                .post(format!("{}/api/v1/namespaces/gc/configmaps", h.url))
                .json(&configmap("owner"))
                .send()
                .await?;
            if r.status().as_u16() != 201 {
                bail!("owner create: {}", r.status());
            }
            let owner: serde_json::Value = r.json().await?;
            fill(&h.url, "gc", n, Some(&owner)).await?;
            let t = Instant::now();
            let r = c
                .delete(format!("{}/api/v1/namespaces/gc/configmaps/owner", h.url))
                .json(&json!({"propagationPolicy": policy}))
                .send()
                .await?;
            if !r.status().is_success() {
                bail!("owner delete: {}", r.status());
            }
            let took = if policy == "Foreground" {
                // The owner goes last, once every dependent is gone.
                until_gone(&c, &h.url, "/api/v1/namespaces/gc/configmaps/owner", t).await?
            } else {
                loop {
                    if count(&c, &h.url, "gc").await? == 0 {
                        break t.elapsed();
                    }
                    if t.elapsed() > Duration::from_secs(600) {
                        bail!("dependents not collected after 10 minutes");
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            if count(&c, &h.url, "gc").await? != 0 {
                bail!("{policy}: dependents left after the owner went");
            }
            eprintln!(
                "round {round} {policy}: {n} dependents collected in {}",
                ms(took)
            );
            if policy == "Foreground" {
                foreground.push(took.as_secs_f64() * 1000.0);
            } else {
                background.push(took.as_secs_f64() * 1000.0);
            }
        }
        let (h, _) = Host::start(&[]).await?;
        let c = client();
        create_ns(&c, &h.url, "doomed").await?;
        fill(&h.url, "doomed", n, None).await?;
        let t = Instant::now();
        let r = c
            .delete(format!("{}/api/v1/namespaces/doomed", h.url))
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("namespace delete: {}", r.status());
        }
        let took = until_gone(&c, &h.url, "/api/v1/namespaces/doomed", t).await?;
        eprintln!(
            "round {round}: namespace of {n} emptied and deleted in {}",
            ms(took)
        );
        namespace.push(took.as_secs_f64() * 1000.0);
    }
    rows.push((
        format!("garbage collection of {n} dependents of one owner, background (owner DELETE -> none left), median of {rounds}"),
        format!("{:.0} ms ({:.0} objects/s)", median(background.clone()), n as f64 / median(background) * 1000.0),
    ));
    rows.push((
        format!("same, foreground (owner DELETE -> owner gone, after every dependent), median of {rounds}"),
        format!("{:.0} ms ({:.0} objects/s)", median(foreground.clone()), n as f64 / median(foreground) * 1000.0),
    ));
    rows.push((
        format!("namespace of {n} ConfigMaps: DELETE -> namespace gone, median of {rounds}"),
        format!(
            "{:.0} ms ({:.0} objects/s)",
            median(namespace.clone()),
            n as f64 / median(namespace) * 1000.0
        ),
    ));
    Ok(())
}

/// mimalloc, as the host: with glibc's malloc the bench's own reading of a 1 MiB LIST body cost
/// 1.6-4.6 ms late in a run (after the earlier sections had shaped its heap) where a fresh
/// process reading the same LIST from the same host took 1.6 ms.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<()> {
    let total: usize = std::env::var("BENCH_CREATES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let rounds = 3;
    println!("machine: {}", machine());
    println!(
        "turtles: {}",
        std::env::var("TURTLES_BIN").unwrap_or_default()
    );
    let mut rows: Vec<(String, String)> = Vec::new();
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let section = |name: &str| only.is_empty() || only.split(',').any(|s| s == name);
    if section("api") {
        api(&mut rows, total, rounds).await?;
    }
    if section("admission") && !section("api") {
        // Alone (`BENCH_ONLY=admission`); the api section runs it too.
        let per = (total / 10).max(10);
        admission(&mut rows, per, rounds).await?;
    }
    if section("load") {
        load::load(&mut rows, total, rounds).await?;
    }
    if section("gc") {
        collection(&mut rows, rounds).await?;
    }
    if section("apply") {
        apply_vs_create(&mut rows, total, rounds).await?;
    }
    if let Ok(base) = std::env::var("BENCH_BASELINE") {
        if section("baseline") {
            baseline(&mut rows, &base, total, 5).await?;
        }
    }
    if section("controllers") && std::env::var("BENCH_SKIP_CONTROLLERS").is_err() {
        controllers(&mut rows, rounds).await?;
    }
    if section("languages") && std::env::var("BENCH_SKIP_CONTROLLERS").is_err() {
        languages(&mut rows, rounds).await?;
    }
    if section("workload") && std::env::var("BENCH_SKIP_CONTROLLERS").is_err() {
        workload(&mut rows, rounds).await?;
    }
    if section("dispatch") && std::env::var("BENCH_SKIP_CONTROLLERS").is_err() {
        dispatch(&mut rows).await?;
    }
    if section("etcd") {
        // Needs the `etcd` binary (Debian's etcd-server); without it the row says so.
        if Command::new("etcd").arg("--version").output().is_ok() {
            etcd(&mut rows, total, rounds).await?;
        } else {
            rows.push(("etcd".into(), "skipped: no `etcd` on PATH".into()));
        }
    }
    // Only when named: a million objects take minutes.
    if only.split(',').any(|s| s == "scale") {
        scale::scale(&mut rows).await?;
    }
    println!();
    println!("| measure | turtles |");
    println!("|---|---|");
    for (k, v) in rows {
        println!("| {k} | {v} |");
    }
    Ok(())
}
