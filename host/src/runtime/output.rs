//! What a guest prints to stdout and stderr: collected during a call, handed to the controller's
//! log after it, and bounded per call. Bytes over the bound are counted and dropped, never
//! refused: a guest whose write fails would trap, and a guest that logs on every reconcile must
//! go on working however long it runs.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// How much one write may hand over at once (what `check-write` answers; the guest's libc splits
/// larger writes).
const WRITE_PERMIT: usize = 64 * 1024;

/// A guest's stdout and stderr (one buffer for both, in the order written).
#[derive(Clone)]
pub struct GuestOutput {
    buf: Arc<Mutex<Buf>>,
    cap: usize,
}

#[derive(Default)]
struct Buf {
    bytes: Vec<u8>,
    dropped: usize,
}

/// What a call printed: the bytes kept and how many more were dropped.
pub struct Printed {
    pub bytes: Vec<u8>,
    pub dropped: usize,
}

impl GuestOutput {
    /// Keep at most `cap` bytes between two [`take`](Self::take)s.
    pub fn new(cap: usize) -> Self {
        Self {
            buf: Arc::default(),
            cap,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Buf> {
        // The buffer is only appended to and taken: a panic elsewhere leaves it consistent.
        self.buf.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = self.lock();
        let room = self.cap.saturating_sub(buf.bytes.len());
        let kept = bytes.len().min(room);
        buf.bytes.extend_from_slice(&bytes[..kept]);
        buf.dropped += bytes.len() - kept;
    }

    /// What was printed since the last call, leaving the buffer empty.
    pub fn take(&self) -> Printed {
        let mut buf = self.lock();
        Printed {
            bytes: std::mem::take(&mut buf.bytes),
            dropped: std::mem::take(&mut buf.dropped),
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

#[async_trait::async_trait]
impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(WRITE_PERMIT)
    }
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_take_empties_the_buffer_and_the_bound_drops_the_excess() {
        let out = GuestOutput::new(10);
        out.push(b"hello ");
        out.push(b"world!");
        let p = out.take();
        assert_eq!(p.bytes, b"hello worl");
        assert_eq!(p.dropped, 2);
        let p = out.take();
        assert!(p.bytes.is_empty());
        assert_eq!(p.dropped, 0);
        out.push(b"again");
        assert_eq!(out.take().bytes, b"again");
    }
}
