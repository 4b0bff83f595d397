//! A connection whose first bytes have been read already, so that a wrapped
//! connection (TLS) can be held to the same first-bytes deadline as a plain
//! one: the bytes read while waiting are replayed to hyper before the rest.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// How much is read while waiting for the first bytes.
const FIRST_READ: usize = 4096;

/// `inner`, with `prefix` (already read from it) read first.
#[derive(Debug)]
pub struct Primed<I> {
    prefix: Bytes,
    inner: I,
}

impl<I: AsyncRead + Unpin> Primed<I> {
    /// Waits at most `timeout` for `inner`'s first bytes: `None` when the
    /// peer sent nothing (or went away) in time.
    pub async fn first_bytes(mut inner: I, timeout: Duration) -> Option<Self> {
        let mut buffer = vec![0u8; FIRST_READ];
        match tokio::time::timeout(timeout, inner.read(&mut buffer)).await {
            Ok(Ok(read)) if read > 0 => {
                buffer.truncate(read);
                Some(Self {
                    prefix: Bytes::from(buffer),
                    inner,
                })
            }
            _ => None,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Primed<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.has_remaining() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Primed<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
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

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn the_first_bytes_are_read_again() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b"hello").await.unwrap();
        let mut primed = Primed::first_bytes(server, Duration::from_secs(5))
            .await
            .unwrap();
        client.write_all(b" world").await.unwrap();
        drop(client);
        let mut all = String::new();
        primed.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "hello world");
    }

    #[tokio::test(start_paused = true)]
    async fn silence_is_none() {
        let (_client, server) = tokio::io::duplex(64);
        assert!(
            Primed::first_bytes(server, Duration::from_secs(1))
                .await
                .is_none()
        );
    }
}
