//! A stored body being read: one ranged GET from the first offset asked
//! for, read on as long as the reader asks for the next bytes (a jump
//! opens a new one), pinned to the object's etag.

use std::sync::Arc;

use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::super::{R2Error, R2Read};
use super::S3Store;
use super::http::{Request, error_of};

/// An open GET: its body and the offset its next byte has.
struct Open {
    body: Incoming,
    at: u64,
    /// Bytes of a frame not yet given out.
    left: Bytes,
}

pub(super) struct S3Read {
    store: Arc<S3Store>,
    s3_key: String,
    etag: String,
    size: u64,
    open: Option<Open>,
}

impl S3Read {
    pub(super) fn new(store: Arc<S3Store>, s3_key: String, etag: String, size: u64) -> Self {
        Self {
            store,
            s3_key,
            etag,
            size,
            open: None,
        }
    }

    /// A GET of the object from `offset` on.
    fn open(&self, offset: u64) -> Result<Open, R2Error> {
        let client = &self.store.client;
        let action = client
            .bucket()
            .get_object(Some(client.credentials()), &self.s3_key);
        let request = Request::new(&action)
            .header("range", format!("bytes={offset}-"))
            .header("if-match", format!("\"{}\"", self.etag));
        client.block_on(async {
            let response = client.send(request).await?;
            let status = response.status().as_u16();
            if status == 412 || status == 404 {
                return Err(R2Error::Internal(
                    "the object was replaced while it was read".into(),
                ));
            }
            if status != 206 && status != 200 {
                let body = response.into_body().collect().await.map(|b| b.to_bytes());
                let text = body.map(|b| String::from_utf8_lossy(&b).into_owned());
                return Err(error_of(status, &text.unwrap_or_default()));
            }
            let mut open = Open {
                body: response.into_body(),
                at: offset,
                left: Bytes::new(),
            };
            // A store that ignores the range sends the whole body.
            if status == 200 && offset > 0 {
                open.skip(offset).await?;
            }
            Ok(open)
        })
    }
}

impl Open {
    /// The next bytes, or `None` at the end.
    async fn next(&mut self) -> Result<Option<Bytes>, R2Error> {
        if !self.left.is_empty() {
            return Ok(Some(std::mem::take(&mut self.left)));
        }
        while let Some(frame) = self.body.frame().await {
            let frame = frame.map_err(|e| R2Error::Internal(format!("reading from S3: {e}")))?;
            if let Ok(data) = frame.into_data()
                && !data.is_empty()
            {
                return Ok(Some(data));
            }
        }
        Ok(None)
    }

    /// Drops the next `len` bytes (a body sent whole, from offset 0).
    async fn skip(&mut self, mut len: u64) -> Result<(), R2Error> {
        while len > 0 {
            let Some(mut data) = self.next().await? else {
                return Ok(());
            };
            let n = usize::try_from(len).unwrap_or(usize::MAX).min(data.len());
            data.advance(n);
            len -= n as u64;
            self.left = data;
        }
        Ok(())
    }
}

impl R2Read for S3Read {
    fn read_at(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, R2Error> {
        if offset >= self.size || len == 0 {
            return Ok(Vec::new());
        }
        let mut open = match self.open.take() {
            Some(open) if open.at == offset => open,
            _ => self.open(offset)?,
        };
        let mut out = Vec::with_capacity(len.min(1 << 20));
        let client = &self.store.client;
        client.block_on(async {
            while out.len() < len {
                let Some(mut data) = open.next().await? else {
                    break;
                };
                let n = (len - out.len()).min(data.len());
                out.extend_from_slice(&data[..n]);
                data.advance(n);
                open.left = data;
            }
            Ok::<_, R2Error>(())
        })?;
        open.at = offset + out.len() as u64;
        self.open = Some(open);
        Ok(out)
    }
}
