//! Each controller's recent log lines, kept in memory and served at
//! `GET /apis/turtles.dev/v1/controllers/NAME/log` (`tailLines`, `timestamps`, `limitBytes`,
//! `follow`), as a Pod's log is by kube. A guest's `log` calls land here as well as in the host's
//! own log. Bounded per controller (lines, bytes, one line's length) whatever the guest writes;
//! a follower that falls behind is told how many lines it missed instead of slowing the guest.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, SecondsFormat, Utc};
use tokio::sync::broadcast;

/// Lines kept per controller.
pub const MAX_LINES: usize = 2000;
/// Bytes of line text kept per controller.
pub const MAX_BYTES: usize = 1 << 20;
/// One line's text is cut at this many bytes (at a character boundary), marked with `…`.
pub const MAX_LINE: usize = 8 << 10;
/// Lines a follower may be behind before it skips ahead.
pub const FOLLOW_BACKLOG: usize = 256;
/// Follow streams open at once, over every controller.
pub const MAX_FOLLOWERS: usize = 64;

/// One line as a guest logged it: when, and `LEVEL message k=v...`.
#[derive(Debug, Clone)]
pub struct Line {
    pub time: DateTime<Utc>,
    pub text: Arc<str>,
}

impl Line {
    /// The line as served: `text\n`, or `RFC3339-nanos text\n` with `timestamps`.
    pub fn render(&self, timestamps: bool, out: &mut String) {
        if timestamps {
            out.push_str(&self.time.to_rfc3339_opts(SecondsFormat::Nanos, true));
            out.push(' ');
        }
        out.push_str(&self.text);
        out.push('\n');
    }
}

/// One controller's lines.
pub struct LogBuffer {
    lines: Mutex<Ring>,
    tx: broadcast::Sender<Line>,
    /// Set once the controller is unloaded: follow streams end.
    closed: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct Ring {
    lines: VecDeque<Line>,
    bytes: usize,
}

impl Default for LogBuffer {
    fn default() -> Self {
        Self {
            lines: Mutex::default(),
            tx: broadcast::Sender::new(FOLLOW_BACKLOG),
            closed: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl LogBuffer {
    /// Appends one line (cut to [`MAX_LINE`]), dropping the oldest past the bounds.
    pub fn push(&self, mut text: String) {
        cut(&mut text);
        // One line per entry: a guest's newlines would forge lines.
        if text.contains(['\n', '\r']) {
            text = text.replace(['\n', '\r'], " ");
        }
        let line = Line {
            time: Utc::now(),
            text: text.into(),
        };
        let mut ring = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        ring.bytes += line.text.len();
        ring.lines.push_back(line.clone());
        while ring.lines.len() > MAX_LINES || ring.bytes > MAX_BYTES {
            match ring.lines.pop_front() {
                Some(old) => ring.bytes -= old.text.len(),
                None => break,
            }
        }
        // Sent under the lock (it never blocks): followers see lines in the ring's order, and a
        // snapshot taken meanwhile neither misses nor repeats one. No follower: nothing to do.
        let _ = self.tx.send(line);
    }

    /// Ends every follow stream (the controller was unloaded).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Resolves once [`close`](Self::close) was called.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.closed.subscribe();
        async move {
            let _ = rx.wait_for(|c| *c).await;
        }
    }

    /// The last `tail` lines (all kept if `None`), and a receiver of every line after them.
    pub fn snapshot(&self, tail: Option<usize>) -> (Vec<Line>, broadcast::Receiver<Line>) {
        let ring = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        // Subscribed under the lock: no line is missed or repeated between the two.
        let rx = self.tx.subscribe();
        let skip = tail.map_or(0, |t| ring.lines.len().saturating_sub(t));
        (ring.lines.iter().skip(skip).cloned().collect(), rx)
    }
}

/// Cuts `text` to [`MAX_LINE`] bytes at a character boundary, marked with `…`.
pub fn cut(text: &mut String) {
    if text.len() > MAX_LINE {
        let mut at = MAX_LINE;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push('…');
    }
}

/// Every loaded controller's buffer, by name: a swapped-in version continues its predecessor's
/// log; an unloaded controller's buffer goes (and its followers' streams end once its instances
/// are gone).
#[derive(Default)]
pub struct Logs {
    buffers: Mutex<HashMap<String, Arc<LogBuffer>>>,
    followers: Arc<std::sync::atomic::AtomicUsize>,
}

/// One open follow stream, counted against [`MAX_FOLLOWERS`] until dropped.
pub struct FollowPermit(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for FollowPermit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Logs {
    pub fn buffer(&self, name: &str) -> Arc<LogBuffer> {
        let mut map = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(name.to_owned()).or_default().clone()
    }

    /// Forgets an unloaded controller's lines and ends its follow streams.
    pub fn remove(&self, name: &str) {
        let mut map = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = map.remove(name) {
            b.close();
        }
    }

    /// A place for one more follow stream, if fewer than [`MAX_FOLLOWERS`] are open.
    pub fn follow_permit(&self) -> Option<FollowPermit> {
        use std::sync::atomic::Ordering;
        let taken = self
            .followers
            .try_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_FOLLOWERS).then_some(n + 1)
            })
            .is_ok();
        taken.then(|| FollowPermit(self.followers.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_by_lines_and_bytes_and_cut_lines() {
        let b = LogBuffer::default();
        for i in 0..MAX_LINES + 10 {
            b.push(format!("INFO line {i}"));
        }
        let (lines, _) = b.snapshot(None);
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(&*lines[0].text, "INFO line 10");
        let (tail, _) = b.snapshot(Some(2));
        assert_eq!(tail.len(), 2);
        assert_eq!(&*tail[1].text, format!("INFO line {}", MAX_LINES + 9));

        let b = LogBuffer::default();
        for _ in 0..(MAX_BYTES / MAX_LINE) + 5 {
            b.push("é".repeat(MAX_LINE));
        }
        let (lines, _) = b.snapshot(None);
        let bytes: usize = lines.iter().map(|l| l.text.len()).sum();
        assert!(bytes <= MAX_BYTES, "{bytes}");
        assert!(lines[0].text.len() <= MAX_LINE + '…'.len_utf8());
        assert!(lines[0].text.ends_with('…'));
    }

    #[test]
    fn followers_are_bounded() {
        let logs = Logs::default();
        let permits: Vec<_> = (0..MAX_FOLLOWERS)
            .map_while(|_| logs.follow_permit())
            .collect();
        assert_eq!(permits.len(), MAX_FOLLOWERS);
        assert!(logs.follow_permit().is_none());
        drop(permits);
        assert!(logs.follow_permit().is_some());
    }

    #[test]
    fn a_guest_cannot_forge_lines_and_followers_see_what_follows() {
        let b = LogBuffer::default();
        b.push("INFO one\nERROR forged".into());
        let (lines, mut rx) = b.snapshot(None);
        assert_eq!(lines.len(), 1);
        assert_eq!(&*lines[0].text, "INFO one ERROR forged");
        b.push("INFO two".into());
        assert_eq!(&*rx.try_recv().unwrap().text, "INFO two");
        let mut out = String::new();
        lines[0].render(false, &mut out);
        assert_eq!(out, "INFO one ERROR forged\n");
        out.clear();
        lines[0].render(true, &mut out);
        assert!(out.ends_with("Z INFO one ERROR forged\n"), "{out}");
    }
}
