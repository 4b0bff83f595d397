//! The gzip-compressed tars an artifact's layers are: written
//! deterministically (the same files make the same bytes, so the same
//! digest), and read through a bound on what decompression may yield.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::write::GzEncoder;

/// A deterministic gzip-compressed tar of `files` (name, bytes), in order.
pub(crate) fn tar_gz<'a>(files: impl Iterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    tar.mode(tar::HeaderMode::Deterministic);
    for (name, content) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        // invariant: writing to a Vec cannot fail; names are checked
        // relative paths, long ones go in a GNU extension.
        tar.append_data(&mut header, name, content)
            .expect("invariant: a tar in memory is written");
    }
    let tar = tar
        .into_inner()
        .expect("invariant: a tar in memory is finished");
    let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
    gzip.write_all(&tar)
        .expect("invariant: gzip into memory cannot fail");
    gzip.finish()
        .expect("invariant: gzip into memory cannot fail")
}

/// A reader that yields at most `left` bytes and fails (remembering it)
/// when its source has more: the bound on a decompression bomb.
pub(crate) struct Bounded<R> {
    pub(crate) inner: R,
    pub(crate) left: u64,
    pub(crate) exceeded: bool,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.exceeded = true;
            return Err(std::io::Error::other(
                "the uncompressed layer is over its limit",
            ));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..want])?;
        self.left -= read as u64;
        Ok(read)
    }
}
