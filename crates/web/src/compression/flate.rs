//! [`Compressor`] and [`Decompressor`]: the three formats of the Compression
//! Standard (`gzip`, `deflate` = zlib, `deflate-raw`) on flate2's low-level
//! streaming API, stepped so that no single call does unbounded work: each
//! step reads at most what it is given and writes at most `limit` bytes, and
//! the caller comes back for the rest. A decompression bomb (a kilobyte that
//! inflates to a gigabyte) thus becomes many small steps, each one's output
//! handed to JavaScript (and charged) before the next is made.
//!
//! The gzip member framing (RFC 1952: the header with its optional fields
//! and header CRC, the CRC-32 and length trailer) is zlib's, through
//! flate2's `new_gzip` constructors on its zlib-rs backend: like zlib, the
//! decoder reads one member and stops at its end, so whatever follows (a
//! second member too) is trailing data.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The window of every stream: 2¹⁵ bytes, the largest deflate has (and
/// what `new` uses for zlib and raw deflate).
const WINDOW_BITS: u8 = 15;

/// A format name the Compression Standard (and workerd) accepts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Format {
    Gzip,
    Deflate,
    DeflateRaw,
}

impl Format {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "gzip" => Some(Self::Gzip),
            "deflate" => Some(Self::Deflate),
            "deflate-raw" => Some(Self::DeflateRaw),
            _ => None,
        }
    }
}

/// Why a step failed; the stream is errored with a TypeError carrying it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum CodecError {
    #[error("DecompressionStream: corrupt input ({0})")]
    Corrupt(String),
    #[error("DecompressionStream: data after the end of the compressed stream")]
    TrailingData,
    #[error("DecompressionStream: the compressed stream is truncated")]
    Truncated,
    #[error("CompressionStream: the compressor failed")]
    Compress,
}

// === impl Compressor ===

/// A compressing stream: write steps, then finish steps until it is done.
pub(crate) struct Compressor {
    z: Compress,
    done: bool,
}

impl Compressor {
    #[cfg(test)]
    pub(crate) fn new(format: Format) -> Self {
        Self::with_level(format, None)
    }

    /// A compressor at zlib's `level` (0–9; `None`: zlib's default, 6).
    pub(crate) fn with_level(format: Format, level: Option<u32>) -> Self {
        let level = level.map_or_else(Compression::default, |l| Compression::new(l.min(9)));
        let z = match format {
            // zlib's header: no name, no time, the OS byte of the build
            // (3, Unix, on the platforms Isolane and workerd run on).
            Format::Gzip => Compress::new_gzip(level, WINDOW_BITS),
            Format::Deflate => Compress::new(level, true),
            Format::DeflateRaw => Compress::new(level, false),
        };
        Self { z, done: false }
    }

    /// Compresses from `input` into `out` until `out` holds `limit` bytes or
    /// `input` is used up; returns the bytes of `input` consumed. With
    /// `finish` (and empty `input`) the stream is ended instead; call again
    /// while it returns output.
    pub(crate) fn step(
        &mut self,
        input: &[u8],
        finish: bool,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, CodecError> {
        if self.done {
            return Ok(0);
        }
        let flush = if finish {
            FlushCompress::Finish
        } else {
            FlushCompress::None
        };
        let mut used = 0;
        out.reserve_exact(limit.saturating_sub(out.len()));
        while out.len() < limit {
            let (in_before, out_before) = (self.z.total_in(), self.z.total_out());
            let status = self
                .z
                .compress_vec(&input[used..], out, flush)
                .map_err(|_| CodecError::Compress)?;
            let took = usize::try_from(self.z.total_in() - in_before).unwrap_or(0);
            used += took;
            if finish && status == Status::StreamEnd {
                self.done = true;
                break;
            }
            if took == 0 && self.z.total_out() == out_before {
                break;
            }
        }
        Ok(used)
    }
}

// === impl Decompressor ===

/// A decompressing stream: write steps, then [`Decompressor::finish`].
pub(crate) struct Decompressor {
    z: Decompress,
    /// The compressed stream (for gzip, its trailer too) has ended.
    done: bool,
    /// An error found after output that the caller has not taken yet: it
    /// gets the output first (WPT's decompression-extra-input).
    deferred: Option<CodecError>,
}

impl Decompressor {
    pub(crate) fn new(format: Format) -> Self {
        let z = match format {
            Format::Gzip => Decompress::new_gzip(WINDOW_BITS),
            Format::Deflate => Decompress::new(true),
            Format::DeflateRaw => Decompress::new(false),
        };
        Self {
            z,
            done: false,
            deferred: None,
        }
    }

    /// Decompresses from `input` into `out` until `out` holds `limit` bytes
    /// or `input` is used up; returns the bytes of `input` consumed. When
    /// `out` is not full on return, all of `input` was consumed.
    pub(crate) fn step(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, CodecError> {
        if let Some(error) = self.deferred.take() {
            return Err(error);
        }
        let mut used = 0;
        match self.run(input, &mut used, out, limit) {
            Ok(()) => Ok(used),
            Err(error) if out.is_empty() => Err(error),
            Err(error) => {
                self.deferred = Some(error);
                Ok(input.len())
            }
        }
    }

    fn run(
        &mut self,
        input: &[u8],
        used: &mut usize,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), CodecError> {
        out.reserve_exact(limit.saturating_sub(out.len()));
        loop {
            if self.done {
                if *used < input.len() {
                    return Err(CodecError::TrailingData);
                }
                return Ok(());
            }
            if out.len() >= limit {
                return Ok(());
            }
            let (in_before, out_before) = (self.z.total_in(), out.len());
            let status = self
                .z
                .decompress_vec(&input[*used..], out, FlushDecompress::None)
                .map_err(|e| {
                    // zlib's words ("incorrect data check", "header crc mismatch", ...).
                    CodecError::Corrupt(e.message().unwrap_or("invalid deflate data").to_owned())
                })?;
            *used += usize::try_from(self.z.total_in() - in_before).unwrap_or(0);
            if status == Status::StreamEnd {
                self.done = true;
            } else if self.z.total_in() == in_before && out.len() == out_before {
                if *used < input.len() {
                    return Err(CodecError::Corrupt("the decoder made no progress".into()));
                }
                return Ok(());
            }
        }
    }

    /// The input has ended: an error unless the compressed stream did.
    pub(crate) fn finish(&mut self) -> Result<(), CodecError> {
        if let Some(error) = self.deferred.take() {
            return Err(error);
        }
        if self.done {
            Ok(())
        } else {
            Err(CodecError::Truncated)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use flate2::Crc;

    use super::*;

    const LIMIT: usize = 1024;

    fn compress(format: Format, data: &[u8], piece: usize) -> Vec<u8> {
        let mut c = Compressor::new(format);
        let mut all = Vec::new();
        for chunk in data.chunks(piece.max(1)) {
            let mut at = 0;
            loop {
                let mut out = Vec::new();
                at += c.step(&chunk[at..], false, &mut out, LIMIT).unwrap();
                assert!(out.len() <= LIMIT);
                if out.is_empty() {
                    break;
                }
                all.extend(out);
            }
            assert_eq!(at, chunk.len());
        }
        loop {
            let mut out = Vec::new();
            c.step(&[], true, &mut out, LIMIT).unwrap();
            if out.is_empty() {
                break;
            }
            all.extend(out);
        }
        all
    }

    fn decompress(format: Format, data: &[u8], piece: usize) -> Result<Vec<u8>, CodecError> {
        let mut d = Decompressor::new(format);
        let mut all = Vec::new();
        for chunk in data.chunks(piece.max(1)) {
            let mut at = 0;
            loop {
                let mut out = Vec::new();
                at += d.step(&chunk[at..], &mut out, LIMIT)?;
                assert!(out.len() <= LIMIT);
                if out.is_empty() {
                    break;
                }
                all.extend(out);
            }
        }
        d.finish()?;
        Ok(all)
    }

    const FORMATS: [Format; 3] = [Format::Gzip, Format::Deflate, Format::DeflateRaw];

    #[test]
    fn round_trips_in_bounded_steps() {
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
            .collect();
        for format in FORMATS {
            for piece in [1, 7, 4096, 1 << 20] {
                let packed = compress(
                    format,
                    &data[..if piece == 1 { 5000 } else { data.len() }],
                    piece,
                );
                let want = &data[..if piece == 1 { 5000 } else { data.len() }];
                for dpiece in [1, 13, 65536] {
                    assert_eq!(
                        decompress(format, &packed, dpiece).unwrap(),
                        want,
                        "{format:?} {piece} {dpiece}"
                    );
                }
            }
        }
    }

    // WPT compression/resources/decompression-input.js: 'expected output'.
    const GZIP: [u8; 35] = [
        31, 139, 8, 0, 0, 0, 0, 0, 0, 3, 75, 173, 40, 72, 77, 46, 73, 77, 81, 200, 47, 45, 41, 40,
        45, 1, 0, 176, 1, 57, 179, 15, 0, 0, 0,
    ];
    const DEFLATE: [u8; 23] = [
        120, 156, 75, 173, 40, 72, 77, 46, 73, 77, 81, 200, 47, 45, 41, 40, 45, 1, 0, 48, 173, 6,
        36,
    ];

    #[test]
    fn known_vectors_and_their_corruptions() {
        assert_eq!(
            decompress(Format::Gzip, &GZIP, 3).unwrap(),
            b"expected output"
        );
        assert_eq!(
            decompress(Format::Deflate, &DEFLATE, 2).unwrap(),
            b"expected output"
        );
        assert_eq!(
            decompress(Format::DeflateRaw, &DEFLATE[2..19], 1).unwrap(),
            b"expected output"
        );
        // Truncated, trailing junk, bad CRC, bad length, FHCRC set.
        assert_eq!(
            decompress(Format::Gzip, &GZIP[..34], 5),
            Err(CodecError::Truncated)
        );
        let mut junk = GZIP.to_vec();
        junk.push(0);
        assert_eq!(
            decompress(Format::Gzip, &junk, 100),
            Err(CodecError::TrailingData)
        );
        let mut bad = GZIP;
        bad[27] = 0;
        assert!(decompress(Format::Gzip, &bad, 100).is_err());
        let mut bad = GZIP;
        bad[31] = 1;
        assert!(decompress(Format::Gzip, &bad, 100).is_err());
        let mut bad = GZIP;
        bad[3] = 2;
        assert!(decompress(Format::Gzip, &bad, 100).is_err());
        let mut ok = GZIP;
        ok[3] = 1; // FTEXT
        assert!(decompress(Format::Gzip, &ok, 100).is_ok());
        let mut bad = DEFLATE;
        bad[19] = 255;
        assert!(decompress(Format::Deflate, &bad, 100).is_err());
        assert_eq!(
            decompress(Format::Deflate, &[], 1),
            Err(CodecError::Truncated)
        );
        // Two members are not one stream.
        let double = [GZIP, GZIP].concat();
        assert_eq!(
            decompress(Format::Gzip, &double, 100),
            Err(CodecError::TrailingData)
        );
    }

    #[test]
    fn gzip_headers_with_every_optional_field() {
        // FEXTRA (XLEN 3), FNAME, FCOMMENT, FHCRC, then the WPT vector's body and trailer.
        let mut header = vec![0x1f, 0x8b, 8, 0x04 | 0x08 | 0x10 | 0x02, 0, 0, 0, 0, 0, 3];
        header.extend_from_slice(&[3, 0, b'x', b'y', b'z']);
        header.extend_from_slice(b"name.txt\0a comment\0");
        let mut crc = Crc::new();
        crc.update(&header);
        header.extend_from_slice(&((crc.sum() & 0xffff) as u16).to_le_bytes());
        let input = [&header[..], &GZIP[10..]].concat();
        for piece in [1, 2, 5, 100] {
            assert_eq!(
                decompress(Format::Gzip, &input, piece).unwrap(),
                b"expected output",
                "{piece}"
            );
        }
        let mut bad = input.clone();
        bad[header.len() - 1] ^= 1;
        assert!(decompress(Format::Gzip, &bad, 100).is_err());
        // Reserved flag bits are an error; an empty extra field is not.
        let mut reserved = GZIP;
        reserved[3] = 0x20;
        assert!(decompress(Format::Gzip, &reserved, 100).is_err());
        let empty_extra = [
            &[0x1f, 0x8b, 8, 0x04, 0, 0, 0, 0, 0, 3, 0, 0][..],
            &GZIP[10..],
        ]
        .concat();
        assert_eq!(
            decompress(Format::Gzip, &empty_extra, 3).unwrap(),
            b"expected output"
        );
    }

    #[test]
    fn gzip_framing_errors_where_and_as_before() {
        // zlib's header: no name, no time, Unix; then the trailer is checked
        // as soon as it is read, not only when the input ends.
        let packed = compress(Format::Gzip, b"expected output", 100);
        assert_eq!(packed[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
        let corrupt = |bytes: &[u8]| {
            let mut d = Decompressor::new(Format::Gzip);
            let mut out = Vec::new();
            d.step(bytes, &mut out, LIMIT)
                .and_then(|_| d.step(&[], &mut Vec::new(), LIMIT))
        };
        for at in [27, 31] {
            let mut bad = GZIP;
            bad[at] ^= 1; // CRC-32, ISIZE
            assert!(matches!(corrupt(&bad), Err(CodecError::Corrupt(_))), "{at}");
        }
        // Truncated anywhere, the trailer included, is truncated.
        for end in [5, 10, 20, 27, 34] {
            assert_eq!(
                decompress(Format::Gzip, &GZIP[..end], 3),
                Err(CodecError::Truncated),
                "{end}"
            );
        }
        // A name and a comment of any length are skipped, not stored.
        let mut long = vec![0x1f, 0x8b, 8, 0x08 | 0x10, 0, 0, 0, 0, 0, 3];
        long.extend(std::iter::repeat_n(b'n', 200_000));
        long.push(0);
        long.extend(std::iter::repeat_n(b'c', 100_000));
        long.push(0);
        long.extend_from_slice(&GZIP[10..]);
        assert_eq!(
            decompress(Format::Gzip, &long, 65536).unwrap(),
            b"expected output"
        );
    }

    #[test]
    fn a_bomb_comes_out_in_bounded_steps() {
        let bomb = compress(Format::Gzip, &vec![0; 8 << 20], 1 << 20);
        assert!(bomb.len() < 16 * 1024, "{}", bomb.len());
        let mut d = Decompressor::new(Format::Gzip);
        let (mut at, mut total, mut steps) = (0, 0, 0);
        loop {
            let mut out = Vec::new();
            at += d.step(&bomb[at..], &mut out, 64 * 1024).unwrap();
            assert!(out.len() <= 64 * 1024);
            if out.is_empty() {
                break;
            }
            total += out.len();
            steps += 1;
        }
        d.finish().unwrap();
        assert_eq!(total, 8 << 20);
        assert!(steps >= 128);
    }
}
