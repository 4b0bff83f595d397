//! Writes gathered per scheduler turn, so one request leaves in one segment.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stream whose writes are gathered per scheduler turn.
///
/// The first write of a batch (the writes up to a flush) returns `Pending`
/// and wakes its own task at once: the task runs again after the tasks
/// already woken on this thread, such as the HTTP/2 body task that was just
/// given send capacity, so their frames join the same write. The cost is one
/// extra poll of the connection task per batch, no syscall and no timer.
#[derive(Debug)]
pub struct Coalesced<T> {
    inner: T,
    /// A batch is open: its first write was already deferred once.
    open: bool,
}

impl<T> Coalesced<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Self { inner, open: false }
    }

    /// Whether to defer this write (the first of its batch).
    fn defer(&mut self, cx: &mut Context<'_>) -> bool {
        if self.open {
            return false;
        }
        self.open = true;
        cx.waker().wake_by_ref();
        true
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesced<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesced<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.defer(cx) {
            return Poll::Pending;
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.defer(cx) {
            return Poll::Pending;
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.inner).poll_flush(cx);
        if flushed.is_ready() {
            // The batch is out; the next write starts a new one.
            this.open = false;
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
