//! Test harness: start the real `turtles` binary on a free loopback port with a temporary data
//! directory, and drive it with the real `kubectl` and a raw HTTP client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

pub mod etcd;
pub mod extension;
pub mod webhook;

/// The `turtles` binary under test: `$TURTLES_BIN`, else `target/<profile>/turtles` beside the
/// test executable (`cargo xtask test` builds it first).
pub fn turtles_bin() -> PathBuf {
    if let Ok(p) = std::env::var("TURTLES_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>  ->  target/<profile>/turtles
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile> directory");
    let bin = profile_dir.join("turtles");
    assert!(
        bin.exists(),
        "{} is missing: build it first (`cargo build -p turtles`, or run `cargo xtask test`)",
        bin.display()
    );
    bin
}

/// A guest built by `cargo xtask guests` (`target/guests/NAME.wasm`), as bytes.
/// The cargo target directory the tests were built in.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .expect("the target directory")
        .to_path_buf()
}

pub fn guest(name: &str) -> Vec<u8> {
    let path = target_dir().join("guests").join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; build the guests first (`cargo xtask guests`, part of `cargo xtask test`)",
            path.display()
        )
    })
}

/// Poll `f` until it returns `Some`, or fail after `deadline` with `what`.
pub fn poll<T>(what: &str, deadline: Duration, mut f: impl FnMut() -> Option<T>) -> Result<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if start.elapsed() > deadline {
            bail!("timed out after {deadline:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A running host. Killed (SIGKILL) on drop; its data directory is removed.
pub struct Server {
    pub data_dir: PathBuf,
    pub url: String,
    pub kubeconfig: PathBuf,
    /// The admin's bearer token and the CA (PEM) from `admin.kubeconfig`.
    pub token: String,
    pub ca_pem: Option<String>,
    child: Option<Child>,
    keep_dir: bool,
    extra_args: Vec<String>,
}

impl Server {
    pub fn start() -> Result<Self> {
        Self::start_with(&[])
    }

    /// Start with an (empty) controllers folder at `DATA/controllers`.
    pub fn start_with_controllers(extra_args: &[&str]) -> Result<Self> {
        Self::start_inner(extra_args, true)
    }

    /// Start with an (empty) controllers folder and a compile cache of its own, empty: every
    /// component really compiles (other tests share one warm cache).
    pub fn start_with_controllers_cold(extra_args: &[&str]) -> Result<Self> {
        Self::start_cold_with_folder(&[], extra_args)
    }

    /// Like [`Server::start_with_controllers_cold`], with `files` (name, bytes) in the controllers
    /// folder before the host starts.
    pub fn start_cold_with_folder(files: &[(&str, &[u8])], extra_args: &[&str]) -> Result<Self> {
        let data_dir = Self::fresh_dir();
        std::fs::create_dir_all(data_dir.join("controllers"))?;
        for (name, bytes) in files {
            std::fs::write(
                data_dir.join("controllers").join(format!("{name}.wasm")),
                bytes,
            )?;
        }
        let mut args: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        args.push("--controllers".into());
        args.push(data_dir.join("controllers").display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::start_at(data_dir, &args, false)
    }

    /// The controllers folder of a server started with [`Server::start_with_controllers`].
    pub fn controllers_dir(&self) -> PathBuf {
        self.data_dir.join("controllers")
    }

    /// Drop a controller into the folder the supported way: write a temporary file, rename it.
    pub fn drop_controller(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let dir = self.controllers_dir();
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!(".{name}.wasm.tmp"));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, dir.join(format!("{name}.wasm")))?;
        Ok(())
    }

    pub fn start_with(extra_args: &[&str]) -> Result<Self> {
        Self::start_inner(extra_args, false)
    }

    /// Start on a data directory the caller made (a small filesystem mounted there, say); it is
    /// emptied on drop like any other.
    pub fn start_in(data_dir: PathBuf, extra_args: &[&str]) -> Result<Self> {
        Self::start_at(data_dir, extra_args, false)
    }

    fn fresh_dir() -> PathBuf {
        std::env::temp_dir().join(format!(
            "turtles-test-{}-{}",
            std::process::id(),
            uuid_like()
        ))
    }

    fn start_inner(extra_args: &[&str], controllers: bool) -> Result<Self> {
        Self::start_at(Self::fresh_dir(), extra_args, controllers)
    }

    fn start_at(data_dir: PathBuf, extra_args: &[&str], controllers: bool) -> Result<Self> {
        std::fs::create_dir_all(&data_dir)?;
        let mut s = Server {
            kubeconfig: data_dir.join("admin.kubeconfig"),
            data_dir,
            url: String::new(),
            token: String::new(),
            ca_pem: None,
            child: None,
            keep_dir: false,
            extra_args: extra_args.iter().map(|s| s.to_string()).collect(),
        };
        if controllers {
            let dir = s.controllers_dir();
            std::fs::create_dir_all(&dir)?;
            // One compile cache for every test host: a Python or JavaScript component compiles
            // once per test run, not once per test (wasmtime's cache is safe across processes).
            let shared = target_dir().join("test-wasm-cache");
            std::fs::create_dir_all(&shared)?;
            std::os::unix::fs::symlink(&shared, s.data_dir.join("cache"))?;
            s.extra_args.push("--controllers".into());
            s.extra_args.push(dir.display().to_string());
        }
        s.spawn()?;
        Ok(s)
    }

    fn spawn(&mut self) -> Result<()> {
        let _ = std::fs::remove_file(&self.kubeconfig);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data_dir.join("turtles.log"))?;
        let child = Command::new(turtles_bin())
            .arg("serve")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .args(&self.extra_args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("spawning turtles")?;
        self.child = Some(child);
        let kc = self.kubeconfig.clone();
        let text = poll("admin.kubeconfig", Duration::from_secs(30), || {
            std::fs::read_to_string(&kc).ok()
        })?;
        let (url, ca_pem, token) = parse_kubeconfig(&text)?;
        self.url = url;
        self.ca_pem = ca_pem;
        self.token = token;
        // The host's root CA publisher writes `kube-root-ca.crt` into each namespace once it
        // runs: wait until every namespace has one, so what a test writes and watches comes
        // after them. (Best effort: a host that does not run the controllers, or has a
        // terminating namespace, may never get there; without TLS there is nothing to publish.)
        if self.ca_pem.is_some() {
            let http = self.http();
            let list = |path: &str| -> Option<Vec<Value>> {
                let r = http.try_request("GET", path, None, None).ok()?;
                let v: Value = serde_json::from_slice(&r.body).ok()?;
                v["items"].as_array().cloned()
            };
            let published = format!("/api/v1/configmaps?fieldSelector=metadata.name%3D{ROOT_CA}");
            let _ = poll(
                "kube-root-ca.crt in every active namespace",
                Duration::from_secs(5),
                || {
                    let has: Vec<Value> = list(&published)?
                        .into_iter()
                        .map(|c| c["metadata"]["namespace"].clone())
                        .collect();
                    let active = list("/api/v1/namespaces")?;
                    active
                        .iter()
                        .filter(|n| n["status"]["phase"] == "Active")
                        .all(|n| has.contains(&n["metadata"]["name"]))
                        .then_some(())
                },
            );
        }
        Ok(())
    }

    /// The process id of the running host.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A field of `/proc/<pid>/status` in KiB (`VmRSS` now, `VmHWM` the peak so far).
    pub fn memory_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status.lines().find_map(|l| {
            l.strip_prefix(field)?
                .strip_prefix(':')?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data_dir.join("turtles.log")).unwrap_or_default()
    }

    /// SIGTERM and wait for a clean exit.
    pub fn stop(&mut self) -> Result<std::process::ExitStatus> {
        let mut child = self.child.take().context("not running")?;
        let pid = child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status()?;
        let status = poll(
            "turtles to exit after SIGTERM",
            Duration::from_secs(30),
            || child.try_wait().ok().flatten(),
        )?;
        Ok(status)
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill9(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Start again on the same data directory (a new port).
    pub fn restart(&mut self) -> Result<()> {
        if self.child.is_some() {
            self.stop()?;
        }
        self.spawn()
    }

    pub fn keep_data(&mut self) {
        self.keep_dir = true;
    }

    /// Run kubectl against this server.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("KUBECACHEDIR", self.data_dir.join("kubecache"))
            .stdin(Stdio::null())
            .output()
            .expect("kubectl runs")
    }

    /// Run kubectl with another kubeconfig (another user) against this server.
    pub fn kubectl_with(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .env("KUBECACHEDIR", self.data_dir.join("kubecache-other"))
            .stdin(Stdio::null())
            .output()
            .expect("kubectl runs")
    }

    /// `turtles kubeconfig --user USER --group G...`: mint a token; returns the kubeconfig's path
    /// and the token.
    pub fn mint(&self, user: &str, groups: &[&str]) -> Result<(PathBuf, String)> {
        let mut cmd = Command::new(turtles_bin());
        cmd.args(["kubeconfig", "--data-dir"])
            .arg(&self.data_dir)
            .args(["--user", user]);
        for g in groups {
            cmd.args(["--group", g]);
        }
        let out = cmd.output()?;
        if !out.status.success() {
            bail!(
                "turtles kubeconfig failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let text = String::from_utf8(out.stdout)?;
        let (_, _, token) = parse_kubeconfig(&text)?;
        let path = self.data_dir.join(format!("{user}.kubeconfig"));
        std::fs::write(&path, &text)?;
        Ok((path, token))
    }

    /// `turtles kubeconfig --user USER --revoke`.
    pub fn revoke(&self, user: &str) -> Result<()> {
        let out = Command::new(turtles_bin())
            .args(["kubeconfig", "--data-dir"])
            .arg(&self.data_dir)
            .args(["--user", user, "--revoke"])
            .output()?;
        if !out.status.success() {
            bail!("revoke failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// Run kubectl with `stdin` as standard input.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("KUBECACHEDIR", self.data_dir.join("kubecache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        child.wait_with_output().expect("kubectl output")
    }

    /// `kubectl apply -f -` of a manifest, which must succeed.
    pub fn kubectl_apply(&self, manifest: &str) {
        let out = self.kubectl_stdin(&["apply", "-f", "-"], manifest);
        assert!(
            out.status.success(),
            "kubectl apply failed: {}\n{manifest}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// kubectl that must succeed; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// kubectl -o json, parsed.
    pub fn kubectl_json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl_ok(&a)).expect("kubectl printed JSON")
    }

    /// Start a long-running kubectl (e.g. `get -w -o json`) whose standard output is a stream
    /// of JSON documents, read as they come.
    /// A long-running kubectl (e.g. `get -w`) with its stdout piped.
    fn kubectl_spawn(&self, args: &[&str]) -> (Child, std::process::ChildStdout) {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("KUBECACHEDIR", self.data_dir.join("kubecache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl runs");
        let stdout = child.stdout.take().expect("stdout");
        (child, stdout)
    }

    pub fn kubectl_stream(&self, args: &[&str]) -> KubectlStream {
        let (child, stdout) = self.kubectl_spawn(args);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let docs = serde_json::Deserializer::from_reader(stdout).into_iter::<Value>();
            for doc in docs {
                let Ok(doc) = doc else { break };
                if tx.send(doc).is_err() {
                    break;
                }
            }
        });
        KubectlStream { child, docs: rx }
    }

    /// Start a long-running kubectl (e.g. `get pods -w`) and read its output lines as they come.
    pub fn kubectl_lines(&self, args: &[&str]) -> KubectlLines {
        let (child, stdout) = self.kubectl_spawn(args);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        KubectlLines { child, lines: rx }
    }

    /// Every event of the watch at `path` (`...?watch=true`) from now on, collected on a thread
    /// (the watch is established when this returns).
    pub fn record_events(&self, path: &str) -> std::sync::Arc<std::sync::Mutex<Vec<Value>>> {
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = events.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let http = self.http();
        let path = path.to_owned();
        std::thread::spawn(move || {
            let mut w = http.watch_with_timeout(&path, Duration::from_secs(900));
            let _ = ready_tx.send(());
            while let Ok(Some(ev)) = w.try_next_event() {
                if let Ok(mut sink) = sink.lock() {
                    sink.push(ev);
                }
            }
        });
        ready_rx.recv().expect("watch started");
        events
    }

    /// The revision numbers `kubectl rollout history KIND/NAME` lists, in its order.
    pub fn rollout_history(&self, what: &str) -> Vec<u64> {
        let history = self.kubectl_ok(&["rollout", "history", what]);
        let mut lines = history.lines().skip_while(|l| !l.starts_with("REVISION"));
        assert!(lines.next().is_some(), "{history}");
        lines
            .filter_map(|l| l.split_whitespace().next())
            .map(|n| n.parse().unwrap_or_else(|_| panic!("{history}")))
            .collect()
    }

    /// Waits until the host's own writes after a first start are done: an APIService for every
    /// served group version (but the aggregator's own) with its `Available` condition, and the
    /// `extension-apiserver-authentication` ConfigMap. A test that compares revisions across a
    /// restart waits for this first.
    pub fn wait_settled(&self, deadline: Duration) -> Result<()> {
        let http = self.http();
        let groups = http.get("/apis").json();
        let wanted = 1 + groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["name"] != "apiregistration.k8s.io")
            .map(|g| g["versions"].as_array().map_or(0, Vec::len))
            .sum::<usize>();
        poll("the host's start-up writes", deadline, || {
            let list = http
                .get("/apis/apiregistration.k8s.io/v1/apiservices")
                .json();
            let items = list["items"].as_array()?;
            let available = items
                .iter()
                .filter(|a| {
                    a["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "Available")
                })
                .count();
            let cm = http.get(
                "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
            );
            (available >= wanted && cm.status == 200).then_some(())
        })
    }

    /// Waits until every controller named is `Running` in `kubectl get controllers`.
    pub fn wait_controllers_running(&self, names: &[&str], deadline: Duration) -> Result<()> {
        poll("the controllers Running", deadline, || {
            let list = self.kubectl_json(&["get", "controllers"]);
            let items = list["items"].as_array()?;
            names
                .iter()
                .all(|n| {
                    items
                        .iter()
                        .any(|c| c["metadata"]["name"] == *n && c["status"]["phase"] == "Running")
                })
                .then_some(())
        })
    }

    /// A raw client authenticated as the admin, trusting the server's CA.
    pub fn http(&self) -> Http {
        self.http_with_token(Some(&self.token))
    }

    /// A raw client with this bearer token (or none), trusting the server's CA.
    pub fn http_with_token(&self, token: Option<&str>) -> Http {
        Http {
            base: self.url.clone(),
            client: reqwest::blocking_client(self.ca_pem.as_deref(), token),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.kill9();
        if !self.keep_dir && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.data_dir);
        }
    }
}

/// A kubectl child printing JSON documents; killed on drop.
pub struct KubectlStream {
    child: Child,
    docs: std::sync::mpsc::Receiver<Value>,
}

impl KubectlStream {
    /// The next document kubectl printed, or `None` if none came within `timeout` (or kubectl
    /// exited).
    pub fn next(&self, timeout: Duration) -> Option<Value> {
        self.docs.recv_timeout(timeout).ok()
    }
}

/// A running kubectl whose output is read line by line.
pub struct KubectlLines {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl KubectlLines {
    /// Every line printed so far (without waiting).
    pub fn drain(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }
}

impl Drop for KubectlLines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for KubectlStream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A ConfigMap body with these labels and data.
pub fn configmap(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> Value {
    let map = |kv: &[(&str, &str)]| -> serde_json::Map<String, Value> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect()
    };
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": map(labels)},
        "data": map(data),
    })
}

/// `metadata.resourceVersion` of an object (or list) as a number.
pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no numeric metadata.resourceVersion in {obj}"))
}

/// The `metadata.name` of every item of a list, in order, leaving out [`ROOT_CA`].
pub fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {list}"))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .filter(|n| n != ROOT_CA && n != EXTENSION_AUTH)
        .collect()
}

/// The ConfigMap the host keeps in every namespace (kube's root CA publisher): lists of a
/// namespace's ConfigMaps hold it besides what a test made. [`item_names`] leaves it out.
pub const ROOT_CA: &str = "kube-root-ca.crt";

/// The ConfigMap the host keeps in `kube-system` for extension API servers (the aggregation
/// layer's `extension-apiserver-authentication`).
pub const EXTENSION_AUTH: &str = "extension-apiserver-authentication";

/// `names` without the ConfigMaps the host keeps ([`ROOT_CA`], [`EXTENSION_AUTH`]).
pub fn without_root_ca<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Vec<String> {
    names
        .into_iter()
        .map(|n| n.as_ref().to_owned())
        .filter(|n| {
            ![ROOT_CA, EXTENSION_AUTH]
                .iter()
                .any(|k| n == k || n == &format!("configmap/{k}"))
        })
        .collect()
}

/// A unique suffix for temporary names.
pub fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:x}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Server URL, CA PEM and bearer token of a kubeconfig written by turtles.
pub fn parse_kubeconfig(text: &str) -> Result<(String, Option<String>, String)> {
    use base64::Engine;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_owned()))
    };
    let url = field("server: ").context("server: line in kubeconfig")?;
    let ca = match field("certificate-authority-data: ") {
        Some(b) => Some(String::from_utf8(
            base64::engine::general_purpose::STANDARD.decode(b)?,
        )?),
        None => None,
    };
    let token = field("token: ").unwrap_or_default();
    Ok((url, ca, token))
}

mod reqwest {
    pub fn blocking_client(
        ca_pem: Option<&str>,
        token: Option<&str>,
    ) -> ::reqwest::blocking::Client {
        let mut b = ::reqwest::blocking::Client::builder()
            .use_rustls_tls()
            .timeout(std::time::Duration::from_secs(30));
        if let Some(pem) = ca_pem {
            let cert = ::reqwest::Certificate::from_pem(pem.as_bytes()).expect("CA PEM");
            b = b.add_root_certificate(cert);
        }
        if let Some(t) = token {
            let mut headers = ::reqwest::header::HeaderMap::new();
            let v = ::reqwest::header::HeaderValue::from_str(&format!("Bearer {t}"))
                .expect("token header");
            headers.insert(::reqwest::header::AUTHORIZATION, v);
            b = b.default_headers(headers);
        }
        b.build().expect("http client")
    }
}

/// A raw HTTP client for exact status codes and bodies.
pub struct Http {
    pub base: String,
    pub client: ::reqwest::blocking::Client,
}

pub struct Reply {
    pub status: u16,
    pub headers: ::reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Http {
    pub fn request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Reply {
        self.try_request(method, path, content_type, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e:#}"))
    }

    /// Like [`Http::request`], but a transport failure (server gone, connection reset) is an
    /// `Err` instead of a panic.
    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Result<Reply> {
        let method = ::reqwest::Method::from_bytes(method.as_bytes())?;
        let mut rb = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(ct) = content_type {
            rb = rb.header("Content-Type", ct);
        }
        if let Some(b) = body {
            rb = rb.body(b);
        }
        let resp = rb.send()?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.bytes()?.to_vec();
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None, None)
    }

    /// A GET with this `Accept` header.
    pub fn request_with_accept(&self, path: &str, accept: &str) -> Reply {
        let resp = self
            .client
            .get(format!("{}{}", self.base, path))
            .header("Accept", accept)
            .send()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        Reply {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            body: resp.bytes().map(|b| b.to_vec()).unwrap_or_default(),
        }
    }

    pub fn post_json(&self, path: &str, body: &Value) -> Reply {
        self.request(
            "POST",
            path,
            Some("application/json"),
            Some(body.to_string().into_bytes()),
        )
    }

    pub fn put_json(&self, path: &str, body: &Value) -> Reply {
        self.request(
            "PUT",
            path,
            Some("application/json"),
            Some(body.to_string().into_bytes()),
        )
    }

    pub fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.request(
            "PATCH",
            path,
            Some(content_type),
            Some(body.to_string().into_bytes()),
        )
    }

    pub fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, None, None)
    }

    /// Open a watch and return a reader of its lines; each read waits at most a minute.
    pub fn watch(&self, path: &str) -> WatchReader {
        self.watch_with_timeout(path, Duration::from_secs(60))
    }

    /// Open a watch asking for a representation in `Accept` (e.g. `PartialObjectMetadata`).
    pub fn watch_with_accept(&self, path: &str, accept: &str) -> WatchReader {
        let resp = self
            .client
            .get(format!("{}{}", self.base, path))
            .header("Accept", accept)
            .timeout(Duration::from_secs(60))
            .send()
            .unwrap_or_else(|e| panic!("watch {path}: {e}"));
        WatchReader {
            status: resp.status().as_u16(),
            lines: std::io::BufReader::new(resp),
        }
    }

    /// Open a watch whose reads each wait at most `read_timeout` for the server.
    pub fn watch_with_timeout(&self, path: &str, read_timeout: Duration) -> WatchReader {
        let resp = self
            .client
            .get(format!("{}{}", self.base, path))
            .timeout(read_timeout)
            .send()
            .unwrap_or_else(|e| panic!("watch {path}: {e}"));
        WatchReader {
            status: resp.status().as_u16(),
            lines: std::io::BufReader::new(resp),
        }
    }
}

pub struct WatchReader {
    pub status: u16,
    lines: std::io::BufReader<::reqwest::blocking::Response>,
}

impl WatchReader {
    /// The next event, `Ok(None)` when the server ended the stream, or `Err` when the read
    /// timed out or the connection failed.
    pub fn try_next_event(&mut self) -> Result<Option<Value>> {
        use std::io::BufRead;
        let mut line = String::new();
        match self
            .lines
            .read_line(&mut line)
            .context("reading the watch")?
        {
            0 => Ok(None),
            _ => {
                Ok(Some(serde_json::from_str(&line).with_context(|| {
                    format!("watch line is not JSON: {line:?}")
                })?))
            }
        }
    }

    /// The next event, or `None` when the server ended the stream. Panics on a read timeout.
    pub fn next_event(&mut self) -> Option<Value> {
        self.try_next_event().unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// The next event, which must exist and have this `type`.
    pub fn expect_event(&mut self, event_type: &str) -> Value {
        let ev = self
            .next_event()
            .unwrap_or_else(|| panic!("watch ended while waiting for {event_type}"));
        assert_eq!(ev["type"], event_type, "unexpected event: {ev}");
        ev
    }
}

/// Assert a `Status` body with this code and reason.
pub fn assert_status(r: &Reply, code: u16, reason: &str) -> Value {
    assert_eq!(r.status, code, "HTTP status; body: {}", r.text());
    let s = r.json();
    assert_eq!(s["kind"], "Status", "{s}");
    assert_eq!(s["code"], code, "{s}");
    assert_eq!(s["reason"], reason, "{s}");
    s
}

// --- example objects of every built-in kind

pub fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}]})
}

pub fn template() -> Value {
    json!({"metadata": {"labels": {"app": "ex"}}, "spec": pod_spec()})
}

/// A certificate signing request for `CN=ex` (base64 of its PEM), made by `openssl req`.
pub const EXAMPLE_CSR: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIR01HOENBUUF3RFRFTE1Ba0dBMVVFQXd3Q1pYZ3dXVEFUQmdjcWhrak9QUUlCQmdncWhrak9QUU1CQndOQwpBQVRoUHVSTkNqYWVQSE1Ub1psVTFZWkVvSEsyZGdlbFo0RlZuMGkyaEYxUXhIZm1DbFRXU2FESmpLclZFMnJtCnI2M3pVTGhsRlE0YTZXd2FoS2Jjc09NRG9BQXdDZ1lJS29aSXpqMEVBd0lEUndBd1JBSWdLc05XNjF4TXdHd28KaE15QUtiNFpQWXpWQ0Q4OFRnN2tjVDBHM0FSbnV2QUNJQXZndzM2WlZFS2ZxNnpXdmJsM2IwK3VuSURxRzd3ZwpOc0dVWW83R2pxR3QKLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==";

/// The fields beyond metadata an example of `kind` has: what kube requires of it, or what makes
/// it an ordinary example.
/// The fields beyond metadata an example of `kind` has.
pub fn example_fields(kind: &str) -> Value {
    let selector = json!({"matchLabels": {"app": "ex"}});
    match kind {
        "Pod" => json!({"spec": pod_spec()}),
        "Deployment" | "ReplicaSet" | "DaemonSet" => {
            json!({"spec": {"selector": selector, "template": template()}})
        }
        "StatefulSet" => {
            json!({"spec": {"serviceName": "ex", "selector": selector, "template": template()}})
        }
        "ReplicationController" => {
            json!({"spec": {"replicas": 1, "selector": {"app": "ex"}, "template": template()}})
        }
        "Job" => json!({"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}),
        "CronJob" => {
            json!({"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template":
            {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
        }
        "PodTemplate" => json!({"template": template()}),
        "Service" => json!({"spec": {"selector": {"app": "ex"}, "ports": [{"port": 80}]}}),
        "ConfigMap" => json!({"data": {"k": "v"}}),
        "Secret" => json!({"data": {"k": "dg=="}}),
        "PersistentVolumeClaim" => json!({"spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
        "PersistentVolume" => json!({"spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/ex"}}}),
        "HorizontalPodAutoscaler" => json!({"spec": {"maxReplicas": 3,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ex"}}}),
        "PodDisruptionBudget" => json!({"spec": {"minAvailable": 1, "selector": selector}}),
        "Ingress" => {
            json!({"spec": {"defaultBackend": {"service": {"name": "ex", "port": {"number": 80}}}}})
        }
        "NetworkPolicy" => json!({"spec": {"podSelector": {}}}),
        "IngressClass" => json!({"spec": {"controller": "example.com/ingress-controller"}}),
        "APIService" => json!({"spec": {"group": "walk.example.com", "version": "v1",
            "groupPriorityMinimum": 1000, "versionPriority": 15}}),
        "FlowSchema" => json!({"spec": {"priorityLevelConfiguration": {"name": "global-default"}}}),
        "PriorityLevelConfiguration" => {
            json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}})
        }
        "ValidatingAdmissionPolicy" => json!({"spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "true"}]}}),
        "ValidatingAdmissionPolicyBinding" => {
            json!({"spec": {"policyName": "ex", "validationActions": ["Deny"]}})
        }
        "MutatingAdmissionPolicy" => json!({"spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": "Object{}"}}],
            "reinvocationPolicy": "Never"}}),
        "MutatingAdmissionPolicyBinding" => json!({"spec": {"policyName": "ex"}}),
        "IPAddress" => json!({"spec": {"parentRef": {"group": "", "resource": "services",
            "namespace": "walk", "name": "ex"}}}),
        "ServiceCIDR" => json!({"spec": {"cidrs": ["10.200.0.0/16"]}}),
        "CSIStorageCapacity" => json!({"storageClassName": "ex"}),
        "StorageClass" => json!({"provisioner": "example.com/ex"}),
        "VolumeAttachment" => json!({"spec": {"attacher": "example.com",
            "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}}),
        "VolumeAttributesClass" => json!({"driverName": "example.com/csi",
            "parameters": {"iops": "100"}}),
        "EndpointSlice" => json!({"addressType": "IPv4"}),
        "PriorityClass" => json!({"value": 10}),
        "RuntimeClass" => json!({"handler": "runc"}),
        "Lease" => json!({"spec": {"holderIdentity": "me"}}),
        "Role" | "ClusterRole" => {
            json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
        }
        "RoleBinding" => json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole", "name": "view"}}),
        "ClusterRoleBinding" => json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole", "name": "view"}}),
        "CustomResourceDefinition" => json!({"spec": {"group": "walk.example.com",
            "names": {"plural": "exes", "kind": "Ex"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema":
                {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        // A real request (P-256, CN=ex), as kube validates `spec.request`.
        "CertificateSigningRequest" => json!({"spec": {"request": EXAMPLE_CSR,
            "signerName": "example.com/ex", "usages": ["client auth"]}}),
        "Event" => {
            json!({"involvedObject": {"kind": "Pod", "name": "ex"}, "reason": "Ex", "message": "ex"})
        }
        "ControllerRevision" => json!({"data": {"ex": "yes"}, "revision": 1}),
        _ => json!({}),
    }
}

/// An example object of a built-in kind to be created in namespace `ns`: an Event is about an
/// object of that namespace, as kube requires of an Event there.
pub fn example_object_in(api_version: &str, kind: &str, name: &str, ns: &str) -> Value {
    let mut obj = example_object(api_version, kind, name);
    if kind == "Event" {
        if api_version == "events.k8s.io/v1" {
            for (k, v) in [
                (
                    "regarding",
                    json!({"kind": "Pod", "name": "ex", "namespace": ns}),
                ),
                ("note", json!("ex")),
                ("reason", json!("Ex")),
                ("type", json!("Normal")),
                ("action", json!("Example")),
                ("reportingController", json!("example.com/ex")),
                ("reportingInstance", json!("ex-1")),
                ("eventTime", json!("2026-12-01T00:00:00.000000Z")),
            ] {
                obj[k] = v;
            }
            if let Some(o) = obj.as_object_mut() {
                o.remove("involvedObject");
                o.remove("message");
            }
        } else {
            obj["involvedObject"]["namespace"] = json!(ns);
        }
    }
    obj
}

/// An example object of a built-in kind (a CRD gets a fixed name, as its name must be
/// `plural.group`), labelled `walk=yes`.
pub fn example_object(api_version: &str, kind: &str, name: &str) -> Value {
    let name = match kind {
        "CustomResourceDefinition" => "exes.walk.example.com",
        // An APIService is named by its version and group, an IPAddress by its address.
        "APIService" => "v1.walk.example.com",
        "IPAddress" => "192.0.2.7",
        _ => name,
    };
    let mut obj = serde_json::json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "labels": {"walk": "yes"}},
    });
    if let Value::Object(fields) = example_fields(kind) {
        for (k, v) in fields {
            obj[k] = v;
        }
    }
    obj
}
