//! Connections as the servers take them: at most a set number open at
//! once (more wait in the kernel's backlog, so idle strangers cannot take
//! every file descriptor), a connection that sends nothing within a grace
//! period closed, and a failed accept (out of descriptors) waited out
//! instead of retried in a busy loop.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tokio_stream::Stream;
use tonic::transport::server::Connected;

/// How long a new connection may stay silent before it is closed.
pub const FIRST_BYTES_WITHIN: Duration = Duration::from_secs(10);

/// How long accepting pauses after it failed (no descriptor left).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(200);

/// A listener that can be polled for its next connection.
pub trait Accept: Send + Unpin + 'static {
    /// The connection type.
    type Conn: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static;
    /// `poll_accept` of the listener.
    fn poll_conn(&self, cx: &mut Context<'_>) -> Poll<io::Result<Self::Conn>>;
}

impl Accept for TcpListener {
    type Conn = TcpStream;
    fn poll_conn(&self, cx: &mut Context<'_>) -> Poll<io::Result<TcpStream>> {
        self.poll_accept(cx).map_ok(|(s, _)| s)
    }
}

impl Accept for UnixListener {
    type Conn = UnixStream;
    fn poll_conn(&self, cx: &mut Context<'_>) -> Poll<io::Result<UnixStream>> {
        self.poll_accept(cx).map_ok(|(s, _)| s)
    }
}

type Acquire = Pin<Box<dyn Future<Output = OwnedSemaphorePermit> + Send>>;

/// The connections of a listener, at most `limit` open at once.
pub struct Incoming<L: Accept> {
    listener: L,
    permits: Arc<Semaphore>,
    acquiring: Option<Acquire>,
    permit: Option<OwnedSemaphorePermit>,
    backoff: Option<Pin<Box<Sleep>>>,
    what: &'static str,
}

impl<L: Accept> std::fmt::Debug for Incoming<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming")
            .field("listener", &self.what)
            .field("free", &self.permits.available_permits())
            .finish()
    }
}

impl<L: Accept> Incoming<L> {
    /// `listener`'s connections, at most `limit` at once; `what` names it
    /// in the log.
    pub fn new(listener: L, limit: usize, what: &'static str) -> Self {
        Incoming {
            listener,
            permits: Arc::new(Semaphore::new(limit.max(1))),
            acquiring: None,
            permit: None,
            backoff: None,
            what,
        }
    }
}

impl<L: Accept> Stream for Incoming<L> {
    type Item = io::Result<Limited<L::Conn>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let me = &mut *self;
        loop {
            if let Some(pause) = &mut me.backoff {
                ready!(pause.as_mut().poll(cx));
                me.backoff = None;
            }
            if me.permit.is_none() {
                let permits = me.permits.clone();
                let fut = me.acquiring.get_or_insert_with(|| {
                    Box::pin(async move {
                        permits
                            .acquire_owned()
                            .await
                            .expect("the semaphore is never closed")
                    })
                });
                me.permit = Some(ready!(fut.as_mut().poll(cx)));
                me.acquiring = None;
            }
            match ready!(me.listener.poll_conn(cx)) {
                Ok(conn) => {
                    let permit = me.permit.take().expect("taken above");
                    return Poll::Ready(Some(Ok(Limited::new(conn, permit))));
                }
                Err(e) => {
                    tracing::warn!(listener = me.what, error = %e, "accepting a connection failed; pausing");
                    me.backoff = Some(Box::pin(tokio::time::sleep(ACCEPT_BACKOFF)));
                }
            }
        }
    }
}

/// A connection holding its place among the open ones, closed if it sends
/// nothing within [`FIRST_BYTES_WITHIN`].
pub struct Limited<S> {
    inner: S,
    _permit: OwnedSemaphorePermit,
    silent_until: Option<Pin<Box<Sleep>>>,
}

impl<S> std::fmt::Debug for Limited<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limited")
            .field("silent", &self.silent_until.is_some())
            .finish()
    }
}

impl<S> Limited<S> {
    fn new(inner: S, permit: OwnedSemaphorePermit) -> Self {
        Limited {
            inner,
            _permit: permit,
            silent_until: Some(Box::pin(tokio::time::sleep(FIRST_BYTES_WITHIN))),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Limited<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let me = &mut *self;
        let read = Pin::new(&mut me.inner).poll_read(cx, buf);
        if me.silent_until.is_some() {
            if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
                me.silent_until = None;
            } else if let Poll::Pending = read
                && let Some(deadline) = &mut me.silent_until
                && deadline.as_mut().poll(cx).is_ready()
            {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client sent nothing",
                )));
            }
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Limited<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<S: Connected> Connected for Limited<S> {
    type ConnectInfo = S::ConnectInfo;
    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// The open-file limit, raised to its hard limit (as most servers do: the
/// soft default of 1,024 is a leftover of `select`); returns the soft
/// limit now in force.
pub fn raise_open_files_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write and read only `lim`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    lim.rlim_cur
}

/// Connections each listener may hold open: a quarter of the descriptors
/// (the rest are for files, plugins and the other listener), at most 1,024.
pub fn connection_limit(open_files: u64) -> usize {
    (open_files / 4).clamp(4, 1024) as usize
}
