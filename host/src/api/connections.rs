//! Bounds on connections, below HTTP (and below TLS): how many connections may be open without
//! having authenticated a request, how long a connection may sit idle, and how long its peer may
//! take none of the bytes it is sent.
//!
//! Every accepted TCP connection is registered as *pending* before anything else happens (the
//! TLS handshake included). It stops being pending when one of its requests authenticates (the
//! access middleware calls [`ConnectionGate::authenticated`]) or when it closes. At most
//! `max_unauthenticated` connections are pending: a new connection beyond that closes the
//! *oldest* pending one. A flood of half-open or token-less connections therefore holds at most
//! that many file descriptors, and can never lock out a client that authenticates (its
//! connection is the newest; it would have to be followed by `max_unauthenticated` more
//! connections before its first request completes to be evicted).
//!
//! The idle timeout closes a connection that has had no request in flight for that long
//! (HTTP/2 connections between requests, HTTP/2 or TLS connections that never send one). A
//! request in flight, a watch streaming included, is never idle.
//!
//! The write stall timeout (`--write-stall-timeout`, 30 s; Go's `http2.Server.WriteByteTimeout`)
//! closes a connection whose socket has accepted none of the bytes offered to it for that long:
//! the clock starts when a write finds the socket full and restarts with every byte the socket
//! takes. The stream's write then fails, hyper drops the connection, and with it everything the
//! connection held for a client that stopped reading: the response body (a watch's, and with it
//! the user's watch permit), hyper's queued chunks, rustls's buffers. A connection with nothing
//! to write (an idle watch) is never timed, and one whose reader is slow but takes bytes now and
//! then never times out. The watch task's own stall cut-off (`watch.rs`) uses the same timeout.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, Response};
use futures::task::AtomicWaker;
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Default of `--write-stall-timeout`: how long a client may take none of the bytes it is sent.
/// Thirty seconds, the cut-off this host's watches already had for a client that takes nothing:
/// long enough for a client paused by a busy machine or a slow network, short enough that what
/// a connection its client stopped reading holds is given back within a minute.
pub const DEFAULT_WRITE_STALL: Duration = Duration::from_secs(30);

/// Limits of the connection layer.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// Connections open at once that have not authenticated a request (0: no limit).
    pub max_unauthenticated: usize,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// A connection whose socket takes none of the bytes it has to write for this long is
    /// closed.
    pub write_stall_timeout: Duration,
}

/// Shared by every connection of one listener.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

struct GateInner {
    opts: ConnectionOptions,
    epoch: Instant,
    next_id: AtomicU64,
    /// Connections that have not authenticated yet, oldest first.
    pending: Mutex<BTreeMap<u64, Arc<ConnState>>>,
    evicted: AtomicU64,
}

/// One connection's state, shared by its stream and its requests.
struct ConnState {
    id: u64,
    killed: AtomicBool,
    read_waker: AtomicWaker,
    write_waker: AtomicWaker,
    in_flight: AtomicUsize,
    /// Milliseconds since the gate's epoch when the last request ended (or the connection
    /// opened).
    last_active_ms: AtomicU64,
}

impl ConnState {
    fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.read_waker.wake();
        self.write_waker.wake();
    }
}

impl GateInner {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn leave_pending(&self, id: u64) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&id);
        }
    }
}

impl Gate {
    pub fn new(opts: ConnectionOptions) -> Self {
        Self {
            inner: Arc::new(GateInner {
                opts,
                epoch: Instant::now(),
                next_id: AtomicU64::new(0),
                pending: Mutex::new(BTreeMap::new()),
                evicted: AtomicU64::new(0),
            }),
        }
    }

    /// Connections open now that have not authenticated.
    pub fn pending(&self) -> usize {
        self.inner.pending.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// Connections closed so far to make room for newer ones.
    pub fn evicted(&self) -> u64 {
        self.inner.evicted.load(Ordering::Relaxed)
    }

    /// `io` as the byte stream of connection `conn`.
    fn stream<I>(&self, io: I, conn: Arc<ConnState>) -> GatedStream<I> {
        GatedStream {
            io,
            gate: self.inner.clone(),
            conn,
            idle: Box::pin(tokio::time::sleep(self.inner.opts.idle_timeout)),
            blocked_since: None,
            write_stall: None,
        }
    }

    /// Register a new connection (evicting the oldest pending one when full).
    fn admit(&self) -> Arc<ConnState> {
        let inner = &self.inner;
        let conn = Arc::new(ConnState {
            id: inner.next_id.fetch_add(1, Ordering::Relaxed),
            killed: AtomicBool::new(false),
            read_waker: AtomicWaker::new(),
            write_waker: AtomicWaker::new(),
            in_flight: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(inner.now_ms()),
        });
        let max = inner.opts.max_unauthenticated;
        if max > 0 {
            if let Ok(mut pending) = inner.pending.lock() {
                while pending.len() >= max {
                    let Some((_, oldest)) = pending.pop_first() else {
                        break;
                    };
                    oldest.kill();
                    inner.evicted.fetch_add(1, Ordering::Relaxed);
                }
                pending.insert(conn.id, conn.clone());
            }
        }
        conn
    }
}

/// In every request's extensions: the connection it came on.
#[derive(Clone)]
pub struct ConnectionGate {
    gate: Arc<GateInner>,
    conn: Arc<ConnState>,
}

impl ConnectionGate {
    /// A request on this connection authenticated: it no longer counts as unauthenticated.
    pub fn authenticated(&self) {
        self.gate.leave_pending(self.conn.id);
    }
}

/// `axum_server` acceptor: registers the connection, wraps its stream and its service. Under
/// TLS it runs before the handshake (`RustlsAcceptor::acceptor`), so handshakes count too.
#[derive(Clone)]
pub struct GateAcceptor {
    gate: Gate,
}

/// Go's `net.ListenConfig` default keep-alive period.
const TCP_KEEPALIVE: Duration = Duration::from_secs(15);

impl GateAcceptor {
    pub fn new(gate: Gate) -> Self {
        Self { gate }
    }
}

impl<S> axum_server::accept::Accept<tokio::net::TcpStream, S> for GateAcceptor {
    type Stream = GatedStream<tokio::net::TcpStream>;
    type Service = GatedService<S>;
    type Future = std::future::Ready<io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: tokio::net::TcpStream, service: S) -> Self::Future {
        // As Go's net/http (and so kube-apiserver) does: no Nagle delay. Without it, a response
        // whose last segment is small waits for the client's delayed ACK (up to 40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
        // TCP keep-alive as Go's listeners set it (15 s): a peer that vanished without closing
        // (a dropped NAT mapping, a killed VM) is noticed, and the long-running request it held
        // open (a watch, a followed log) ends.
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(TCP_KEEPALIVE)
            .with_interval(TCP_KEEPALIVE);
        if let Err(e) = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive) {
            tracing::debug!(error = %e, "TCP keep-alive not set");
        }
        let conn = self.gate.admit();
        std::future::ready(Ok((
            self.gate.stream(stream, conn.clone()),
            GatedService {
                inner: service,
                handle: ConnectionGate {
                    gate: self.gate.inner.clone(),
                    conn,
                },
            },
        )))
    }
}

/// A connection's byte stream: fails once the connection was evicted or went idle, and its
/// writes fail once the socket has taken nothing for the write stall timeout.
pub struct GatedStream<I> {
    io: I,
    gate: Arc<GateInner>,
    conn: Arc<ConnState>,
    idle: Pin<Box<Sleep>>,
    /// Since when the socket has refused what it was offered, with nothing taken since.
    blocked_since: Option<tokio::time::Instant>,
    /// Wakes the connection's task at the write stall deadline, so its next write attempt
    /// fails then (made the first time a write is refused).
    write_stall: Option<Pin<Box<Sleep>>>,
}

impl<I> Drop for GatedStream<I> {
    fn drop(&mut self) {
        self.gate.leave_pending(self.conn.id);
    }
}

impl<I> GatedStream<I> {
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.conn.killed.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed to make room for newer unauthenticated connections",
            ));
        }
        let idle = self.gate.opts.idle_timeout;
        while self.idle.as_mut().poll(cx).is_ready() {
            let now = self.gate.now_ms();
            let deadline = if self.conn.in_flight.load(Ordering::Acquire) > 0 {
                now + idle.as_millis() as u64
            } else {
                let last = self.conn.last_active_ms.load(Ordering::Acquire);
                let deadline = last + idle.as_millis() as u64;
                if deadline <= now {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "connection idle for longer than the idle timeout",
                    ));
                }
                deadline
            };
            let at = self.gate.epoch + Duration::from_millis(deadline);
            self.idle.as_mut().reset(tokio::time::Instant::from_std(at));
        }
        Ok(())
    }

    /// The write stall timeout applied to the result of a write: bytes taken restart the clock;
    /// a refusal starts it (and arms the timer that wakes the task at its end), or, once it has
    /// run out, becomes the error that closes the connection. The write is always tried first,
    /// so a socket that takes bytes again is never cut, however late its task is polled.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match result {
            Poll::Ready(Ok(n)) if n > 0 => {
                self.blocked_since = None;
                result
            }
            Poll::Pending => {
                let limit = self.gate.opts.write_stall_timeout;
                let now = tokio::time::Instant::now();
                let since = *self.blocked_since.get_or_insert(now);
                // A timeout too large for the clock is no timeout.
                let Some(at) = since.checked_add(limit) else {
                    return Poll::Pending;
                };
                let timer = self
                    .write_stall
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
                if timer.deadline() != at {
                    timer.as_mut().reset(at);
                }
                if now >= at || timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the peer took no bytes for longer than the write stall timeout",
                    )));
                }
                Poll::Pending
            }
            // An error, or nothing asked of it: no news about the peer.
            Poll::Ready(_) => result,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for GatedStream<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.conn.read_waker.register(cx.waker());
        if let Err(e) = self.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for GatedStream<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.killed.load(Ordering::Acquire) {
            return Poll::Ready(Err(io::ErrorKind::ConnectionAborted.into()));
        }
        let result = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(cx, result)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.killed.load(Ordering::Acquire) {
            return Poll::Ready(Err(io::ErrorKind::ConnectionAborted.into()));
        }
        let result = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Counts a request as in flight from its start until its response body is done or dropped.
struct InFlight {
    gate: Arc<GateInner>,
    conn: Arc<ConnState>,
}

impl InFlight {
    fn new(handle: &ConnectionGate) -> Self {
        handle.conn.in_flight.fetch_add(1, Ordering::AcqRel);
        Self {
            gate: handle.gate.clone(),
            conn: handle.conn.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.conn
            .last_active_ms
            .store(self.gate.now_ms(), Ordering::Release);
        self.conn.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The connection's service: tags each request with its [`ConnectionGate`] and tracks it.
#[derive(Clone)]
pub struct GatedService<S> {
    inner: S,
    handle: ConnectionGate,
}

impl<S, B> tower::Service<Request<B>> for GatedService<S>
where
    S: tower::Service<Request<B>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let guard = InFlight::new(&self.handle);
        req.extensions_mut().insert(self.handle.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            // The request stays in flight until its body is written (a watch: until it ends).
            Ok(resp.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _ = &guard;
                    frame
                }))
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(write_stall_timeout: Duration) -> Gate {
        Gate::new(ConnectionOptions {
            max_unauthenticated: 2,
            idle_timeout: Duration::from_secs(60),
            write_stall_timeout,
        })
    }

    /// A connection to a peer that reads nothing: a 1 KiB pipe standing in for the socket.
    fn stalled_pair(
        gate: &Gate,
    ) -> (
        GatedStream<tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
    ) {
        let (ours, theirs) = tokio::io::duplex(1024);
        (gate.stream(ours, gate.admit()), theirs)
    }

    /// A peer that takes nothing: once the socket is full, the connection's writes fail at the
    /// write stall timeout, not before, even though nothing polls the stream meanwhile but the
    /// timer the refusal armed.
    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_takes_fails_at_the_stall_timeout() {
        use tokio::io::AsyncWriteExt;
        let gate = gate(Duration::from_secs(5));
        let (mut s, _peer) = stalled_pair(&gate);
        let started = tokio::time::Instant::now();
        let e = s
            .write_all(&vec![b'x'; 64 * 1024])
            .await
            .expect_err("the peer reads nothing");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_secs(5) && took < Duration::from_millis(5100),
            "{took:?}"
        );
    }

    /// A slow reader that takes a little every few seconds (each gap under the timeout, the
    /// whole transfer far over it) is never cut off; nor is a connection with nothing to write,
    /// however long it waits.
    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_and_an_idle_connection_are_not_cut() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let gate = gate(Duration::from_secs(5));
        let (mut s, mut peer) = stalled_pair(&gate);
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 512];
            let mut total = 0;
            while total < 16 * 1024 {
                tokio::time::sleep(Duration::from_secs(4)).await;
                total += peer.read(&mut buf).await.expect("read");
            }
            peer
        });
        let started = tokio::time::Instant::now();
        s.write_all(&vec![b'x'; 16 * 1024])
            .await
            .expect("the reader takes it, slowly");
        assert!(
            started.elapsed() > Duration::from_secs(60),
            "{:?}",
            started.elapsed()
        );
        let mut peer = reader.await.expect("reader");
        // Nothing pending: idle for ten times the timeout, then a write that fits goes through.
        tokio::time::sleep(Duration::from_secs(50)).await;
        s.write_all(b"still here")
            .await
            .expect("an idle connection is not stalled");
        let mut buf = [0u8; 10];
        peer.read_exact(&mut buf).await.expect("read");
        assert_eq!(&buf, b"still here");
    }

    #[tokio::test]
    async fn oldest_pending_connection_makes_room() {
        let gate = gate(Duration::from_secs(30));
        let a = gate.admit();
        let b = gate.admit();
        assert_eq!(gate.pending(), 2);
        let c = gate.admit();
        assert!(a.killed.load(Ordering::Acquire), "the oldest goes");
        assert!(!b.killed.load(Ordering::Acquire) && !c.killed.load(Ordering::Acquire));
        assert_eq!((gate.pending(), gate.evicted()), (2, 1));
        // An authenticated connection no longer counts and is never evicted.
        ConnectionGate {
            gate: gate.inner.clone(),
            conn: b.clone(),
        }
        .authenticated();
        let _d = gate.admit();
        let _e = gate.admit();
        assert!(!b.killed.load(Ordering::Acquire));
        assert!(c.killed.load(Ordering::Acquire));
    }
}
