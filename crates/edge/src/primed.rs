//! A connection whose first bytes have been read already, so that every
//! connection, plain or wrapped (TLS), is held to one deadline until hyper
//! can tell which HTTP it speaks: the bytes read while waiting are replayed
//! to hyper before the rest.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// How much is read while waiting for the first bytes.
const FIRST_READ: usize = 4096;

/// The HTTP/2 connection preface (RFC 9113 §3.4). hyper's version detection
/// reads until the bytes so far stop matching it or it is whole, with no
/// deadline of its own, so a client that sends part of it and stalls would
/// be held open.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// `inner`, with `prefix` (already read from it) read first.
#[derive(Debug)]
pub struct Primed<I> {
    prefix: Bytes,
    inner: I,
}

impl<I> Primed<I> {
    /// The wrapped connection (its TLS session, say).
    pub fn get_ref(&self) -> &I {
        &self.inner
    }
}

impl<I: AsyncRead + Unpin> Primed<I> {
    /// Waits at most `timeout` for `inner`'s first bytes, and for as many
    /// as tell HTTP/1 from HTTP/2: `None` when the peer did not send them
    /// (or went away) in time.
    pub async fn first_bytes(mut inner: I, timeout: Duration) -> Option<Self> {
        let mut buffer = vec![0u8; FIRST_READ];
        let mut read = 0;
        let enough = async {
            loop {
                match inner.read(&mut buffer[read..]).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => read += n,
                }
                if !still_the_preface(&buffer[..read]) {
                    return true;
                }
            }
        };
        if !tokio::time::timeout(timeout, enough).await.unwrap_or(false) {
            return None;
        }
        buffer.truncate(read);
        Some(Self {
            prefix: Bytes::from(buffer),
            inner,
        })
    }
}

/// Whether `read` is a strict beginning of the HTTP/2 preface, so the
/// version is not known yet.
fn still_the_preface(read: &[u8]) -> bool {
    read.len() < H2_PREFACE.len() && H2_PREFACE.starts_with(read)
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

    #[tokio::test]
    async fn the_whole_preface_is_waited_for_and_read_again() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(&H2_PREFACE[..5]).await.unwrap();
        let primed = tokio::spawn(Primed::first_bytes(server, Duration::from_secs(5)));
        client.write_all(&H2_PREFACE[5..]).await.unwrap();
        client.write_all(b"frames").await.unwrap();
        drop(client);
        let mut primed = primed.await.unwrap().unwrap();
        let mut all = Vec::new();
        primed.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, [H2_PREFACE, b"frames"].concat());
    }

    #[tokio::test(start_paused = true)]
    async fn part_of_the_preface_then_silence_is_none() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(&H2_PREFACE[..10]).await.unwrap();
        assert!(
            Primed::first_bytes(server, Duration::from_secs(1))
                .await
                .is_none()
        );
    }

    #[test]
    fn http1_is_told_at_its_first_byte() {
        assert!(!still_the_preface(b"G"));
        assert!(!still_the_preface(b"PRI * HTTP/1.1"));
        assert!(still_the_preface(b"PRI * HTTP/2"));
        assert!(!still_the_preface(H2_PREFACE));
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
