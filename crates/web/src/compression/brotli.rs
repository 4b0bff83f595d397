//! [`BrotliCompressor`] and [`BrotliDecompressor`]: brotli (RFC 7932) on the
//! `brotli` crate's streaming encoder and decoder, stepped like the deflate
//! codecs (`flate.rs`): each step reads at most what it is given and writes
//! at most `limit` bytes, the caller comes back for the rest, so a brotli
//! bomb is many small steps, each one's output charged before the next.

use brotli::enc::StandardAlloc;
use brotli::enc::encode::{
    BrotliEncoderOperation, BrotliEncoderParameter, BrotliEncoderStateStruct,
};
use brotli::{BrotliDecompressStream, BrotliResult, BrotliState, interface};

use super::flate::CodecError;

/// Node's defaults (`BROTLI_DEFAULT_QUALITY`, `BROTLI_DEFAULT_WINDOW`).
pub(crate) const DEFAULT_QUALITY: u32 = 11;
pub(crate) const DEFAULT_WINDOW: u32 = 22;
/// The window sizes brotli has (without its large-window extension).
const WINDOWS: std::ops::RangeInclusive<u32> = 10..=24;

/// What an encoder of `quality` and window `2^lgwin` holds, roughly: its
/// ring buffer, its hasher (the binary trees of qualities 10 and 11 take
/// 8 bytes a window position; the bucket tables of 5–9 grow with the
/// quality) and a megabyte of block and command buffers.
pub(crate) fn compressor_charge(quality: u32, lgwin: u32) -> usize {
    let window = 1usize << lgwin;
    let hasher = match quality {
        0..=1 => 0,
        2..=4 => 1 << 18,
        5..=9 => 4 << (14 + quality - 1),
        _ => 8 * window,
    };
    window + hasher + (1 << 20)
}

/// What a decoder may hold: the largest window a stream can ask for (the
/// decoder sizes its ring buffer from the stream) and its tables.
pub(crate) const DECOMPRESSOR_CHARGE: usize = (1 << 24) + (256 << 10);

/// Checks Node's `BROTLI_PARAM_QUALITY` (0–11) and `BROTLI_PARAM_LGWIN`.
pub(crate) fn parameters(quality: Option<u32>, lgwin: Option<u32>) -> Option<(u32, u32)> {
    let quality = quality.unwrap_or(DEFAULT_QUALITY);
    let lgwin = lgwin.unwrap_or(DEFAULT_WINDOW);
    (quality <= 11 && WINDOWS.contains(&lgwin)).then_some((quality, lgwin))
}

/// A brotli encoder: write steps, then finish steps until it is done.
pub(crate) struct BrotliCompressor {
    state: BrotliEncoderStateStruct<StandardAlloc>,
    done: bool,
}

impl BrotliCompressor {
    /// `quality` and `lgwin` passed [`parameters`].
    pub(crate) fn new(quality: u32, lgwin: u32) -> Self {
        let mut state = BrotliEncoderStateStruct::new(StandardAlloc::default());
        state.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_QUALITY, quality);
        state.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_LGWIN, lgwin);
        Self { state, done: false }
    }

    /// As `flate::Compressor::step`: compresses `input` (or, with `finish`
    /// and no input, ends the stream) into `out` up to `limit` bytes;
    /// returns the bytes of `input` consumed.
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
        let op = if finish {
            BrotliEncoderOperation::BROTLI_OPERATION_FINISH
        } else {
            BrotliEncoderOperation::BROTLI_OPERATION_PROCESS
        };
        let start = out.len();
        out.resize(limit.max(start), 0);
        let (mut available_in, mut in_at) = (input.len(), 0);
        let (mut available_out, mut out_at) = (out.len() - start, start);
        let mut nop =
            |_: &mut interface::PredictionModeContextMap<interface::InputReferenceMut>,
             _: &mut [interface::StaticCommand],
             _: interface::InputPair,
             _: &mut StandardAlloc| ();
        let mut result = Ok(());
        while available_out > 0 {
            let before = (in_at, out_at);
            let ok = self.state.compress_stream(
                op,
                &mut available_in,
                input,
                &mut in_at,
                &mut available_out,
                out,
                &mut out_at,
                &mut None,
                &mut nop,
            );
            if !ok {
                result = Err(CodecError::Compress);
                break;
            }
            if finish && self.state.is_finished() {
                self.done = true;
                break;
            }
            let idle = available_in == 0 && !self.state.has_more_output();
            if (idle && !finish) || before == (in_at, out_at) {
                break;
            }
        }
        out.truncate(out_at);
        result.map(|()| in_at)
    }
}

/// A brotli decoder: write steps, then [`BrotliDecompressor::finish`].
pub(crate) struct BrotliDecompressor {
    state: BrotliState<StandardAlloc, StandardAlloc, StandardAlloc>,
    done: bool,
    /// An error found after output the caller has not taken yet.
    deferred: Option<CodecError>,
}

impl BrotliDecompressor {
    pub(crate) fn new() -> Self {
        Self {
            state: BrotliState::new(
                StandardAlloc::default(),
                StandardAlloc::default(),
                StandardAlloc::default(),
            ),
            done: false,
            deferred: None,
        }
    }

    /// As `flate::Decompressor::step`.
    pub(crate) fn step(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, CodecError> {
        if let Some(error) = self.deferred.take() {
            return Err(error);
        }
        if self.done {
            return if input.is_empty() {
                Ok(0)
            } else {
                Err(CodecError::TrailingData)
            };
        }
        let start = out.len();
        out.resize(limit.max(start), 0);
        let (mut available_in, mut in_at) = (input.len(), 0);
        let (mut available_out, mut out_at) = (out.len() - start, start);
        let mut total = 0;
        let result = BrotliDecompressStream(
            &mut available_in,
            &mut in_at,
            input,
            &mut available_out,
            &mut out_at,
            out,
            &mut total,
            &mut self.state,
        );
        out.truncate(out_at);
        let error = match result {
            BrotliResult::ResultSuccess => {
                self.done = true;
                (in_at < input.len()).then_some(CodecError::TrailingData)
            }
            BrotliResult::NeedsMoreInput | BrotliResult::NeedsMoreOutput => None,
            BrotliResult::ResultFailure => Some(self.corrupt()),
        };
        match error {
            None => Ok(in_at),
            Some(error) if out.len() == start => Err(error),
            Some(error) => {
                self.deferred = Some(error);
                Ok(input.len())
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

    /// The decoder's failure in the words of brotli's C library, which
    /// node:zlib's errors carry: `ERROR_FORMAT_PADDING_1 (-14)`, its
    /// `BrotliDecoderErrorCode` without the `BROTLI_DECODER_` prefix and
    /// its number.
    fn corrupt(&self) -> CodecError {
        let code = self.state.error_code;
        let name = format!("{code:?}");
        let name = name.strip_prefix("BROTLI_DECODER_").unwrap_or(&name);
        CodecError::Corrupt(format!("{name} ({})", code as i32))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const LIMIT: usize = 1024;

    fn compress(data: &[u8], quality: u32) -> Vec<u8> {
        let mut c = BrotliCompressor::new(quality, DEFAULT_WINDOW);
        let mut all = Vec::new();
        let mut at = 0;
        loop {
            let mut out = Vec::new();
            at += c.step(&data[at..], false, &mut out, LIMIT).unwrap();
            assert!(out.len() <= LIMIT);
            if out.is_empty() && at == data.len() {
                break;
            }
            all.extend(out);
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

    fn decompress(data: &[u8], piece: usize) -> Result<Vec<u8>, CodecError> {
        let mut d = BrotliDecompressor::new();
        let mut all = Vec::new();
        for chunk in data.chunks(piece.max(1)) {
            let mut at = 0;
            loop {
                let mut out = Vec::new();
                at += d.step(&chunk[at..], &mut out, LIMIT)?;
                assert!(out.len() <= LIMIT);
                if out.is_empty() && at == chunk.len() {
                    break;
                }
                all.extend(out);
            }
        }
        d.finish()?;
        Ok(all)
    }

    #[test]
    fn round_trips_in_bounded_steps_and_refuses_what_is_broken() {
        let data: Vec<u8> = (0..100_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
            .collect();
        for quality in [0, 5, 11] {
            let packed = compress(&data, quality);
            for piece in [1, 100, 1 << 20] {
                assert_eq!(
                    decompress(&packed, piece).unwrap(),
                    data,
                    "{quality} {piece}"
                );
            }
        }
        let packed = compress(b"hello", 11);
        assert_eq!(
            decompress(&packed[..packed.len() - 1], 3),
            Err(CodecError::Truncated)
        );
        let mut junk = packed.clone();
        junk.push(0);
        assert_eq!(decompress(&junk, 100), Err(CodecError::TrailingData));
        assert!(decompress(&[0xff; 16], 100).is_err());
        // Named as brotli's C library names its errors (Node's error for
        // the same bytes).
        assert_eq!(
            decompress(&[0xff; 4], 100),
            Err(CodecError::Corrupt("ERROR_FORMAT_PADDING_2 (-15)".into()))
        );
    }

    #[test]
    fn a_bomb_comes_out_in_bounded_steps() {
        let bomb = compress(&vec![0; 8 << 20], 5);
        assert!(bomb.len() < 16 * 1024, "{}", bomb.len());
        let mut d = BrotliDecompressor::new();
        let (mut at, mut total, mut steps) = (0, 0, 0);
        loop {
            let mut out = Vec::new();
            at += d.step(&bomb[at..], &mut out, 64 * 1024).unwrap();
            assert!(out.len() <= 64 * 1024);
            if out.is_empty() && at == bomb.len() {
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
