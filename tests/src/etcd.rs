//! A real etcd cluster on loopback ports for the tests of `--store etcd` (the `etcd` binary of
//! Debian's `etcd-server` package, which `.ci/run` installs). Members are killed and their data
//! directories removed on drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::uuid_like;

pub struct Member {
    pub name: String,
    pub client_url: String,
    peer_url: String,
    dir: PathBuf,
    child: Option<Child>,
}

pub struct EtcdCluster {
    pub members: Vec<Member>,
    /// `--initial-cluster` and `--initial-cluster-token` (a restarted member is given them
    /// again; etcd reads them only for an empty data directory).
    initial: String,
    token: String,
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl EtcdCluster {
    /// Start `n` members and wait until the cluster answers a linearizable read. Ports are
    /// picked free and then handed to etcd, so another process can take one in between (the
    /// member then exits with "address already in use"): the cluster is started again on other
    /// ports, up to three times.
    pub fn start(n: usize) -> Result<Self> {
        let mut last = None;
        for _ in 0..3 {
            match Self::try_start(n) {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("etcd did not start")))
    }

    fn try_start(n: usize) -> Result<Self> {
        let run = uuid_like();
        let mut members = Vec::new();
        for i in 0..n {
            members.push(Member {
                name: format!("m{i}"),
                client_url: format!("http://127.0.0.1:{}", free_port()?),
                peer_url: format!("http://127.0.0.1:{}", free_port()?),
                dir: std::env::temp_dir().join(format!("turtles-etcd-{run}-m{i}")),
                child: None,
            });
        }
        let initial = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = EtcdCluster {
            members,
            initial,
            token: run,
        };
        for i in 0..n {
            cluster.spawn(i)?;
        }
        // Dropped on failure: every member is killed and its directory removed.
        cluster.wait_healthy()?;
        Ok(cluster)
    }

    fn spawn(&mut self, i: usize) -> Result<()> {
        let m = &self.members[i];
        let log = std::fs::OpenOptions::new().create(true).append(true).open(
            std::env::temp_dir().join(format!("turtles-etcd-{}-{}.log", self.token, m.name)),
        )?;
        let child = Command::new("etcd")
            .args(["--name", &m.name, "--data-dir"])
            .arg(&m.dir)
            .args(["--listen-client-urls", &m.client_url])
            .args(["--advertise-client-urls", &m.client_url])
            .args(["--listen-peer-urls", &m.peer_url])
            .args(["--initial-advertise-peer-urls", &m.peer_url])
            .args(["--initial-cluster", &self.initial])
            .args(["--initial-cluster-token", &self.token])
            .args(["--initial-cluster-state", "new"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting etcd (Debian package etcd-server)")?;
        self.members[i].child = Some(child);
        Ok(())
    }

    /// Wait until every running member reports itself healthy (which needs a leader); fails at
    /// once if a member exits.
    fn wait_healthy(&mut self) -> Result<()> {
        let http = reqwest::blocking::Client::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let mut healthy = 0;
            let mut running = 0;
            for m in &mut self.members {
                let Some(child) = m.child.as_mut() else {
                    continue;
                };
                if let Some(status) = child.try_wait()? {
                    anyhow::bail!("etcd member {} exited: {status}", m.name);
                }
                running += 1;
                let url = format!("{}/health", m.client_url);
                let ok = http
                    .get(&url)
                    .timeout(Duration::from_secs(2))
                    .send()
                    .ok()
                    .and_then(|r| r.text().ok())
                    .is_some_and(|b| b.contains("\"health\":\"true\""));
                healthy += usize::from(ok);
            }
            if healthy == running {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                anyhow::bail!("timed out after 60s waiting for etcd to be healthy");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Start every killed member again on its data directory, and wait until the cluster is
    /// healthy.
    pub fn restart_killed(&mut self) -> Result<()> {
        for i in 0..self.members.len() {
            if self.members[i].child.is_none() {
                self.spawn(i)?;
            }
        }
        self.wait_healthy()
    }

    /// `--etcd-endpoints` for every member.
    pub fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(|m| m.client_url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// SIGKILL one member.
    pub fn kill9(&mut self, i: usize) -> Result<()> {
        if let Some(mut c) = self.members[i].child.take() {
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            if let Some(mut c) = m.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            let _ = std::fs::remove_dir_all(&m.dir);
        }
    }
}
