//! [`ZstdCompressor`] and [`ZstdDecompressor`]: Zstandard (RFC 8878) on
//! libzstd's streaming API (`zstd-safe`), stepped like the deflate codecs
//! (`flate.rs`): each step reads at most what it is given and writes at
//! most `limit` bytes, the caller comes back for the rest, so a zstd bomb is
//! many small steps, each one's output charged before the next.
//!
//! Memory is libzstd's own (C `malloc`), allocated at the first step, so it
//! is charged up front from what that step can allocate: the encoder's
//! workspace at its level (smaller when the input's size is known, as in
//! the sync calls), the decoder's largest window (`windowLogMax`, 2²³ bytes
//! unless the Worker asks for more) and its block buffers. A frame that
//! declares a larger window is refused before anything is allocated for it.

use ::zstd::zstd_safe::zstd_sys::ZSTD_EndDirective;
use ::zstd::zstd_safe::{self, CCtx, CParameter, DCtx, DParameter, InBuffer, OutBuffer};

use super::flate::CodecError;

/// libzstd's default level (`ZSTD_CLEVEL_DEFAULT`).
pub(crate) const DEFAULT_LEVEL: i32 = 3;
/// The decoder's default `windowLogMax`: an 8 MiB window, what `zstd -19`
/// uses (zstd's own default, 27, would charge 128 MiB a decoder).
pub(crate) const DEFAULT_WINDOW_LOG_MAX: u32 = 23;
/// The windows libzstd has (`ZSTD_WINDOWLOG_MIN`..`ZSTD_WINDOWLOG_MAX_64`).
pub(crate) const WINDOW_LOGS: std::ops::RangeInclusive<u32> = 10..=31;

/// `ZSTD_estimateCStreamSize(level)` of libzstd 1.5 for levels 1..=22 (the
/// workspace of a stream of unknown size; levels below 1 are level 1's).
const ENCODER_ESTIMATE: [usize; 22] = [
    1_369_505,
    2_090_401,
    3_663_265,
    4_973_985,
    6_022_561,
    6_022_561,
    9_168_289,
    9_168_289,
    17_556_897,
    30_139_809,
    30_139_809,
    55_305_633,
    55_305_633,
    55_305_633,
    72_082_849,
    72_082_849,
    72_082_849,
    72_082_849,
    93_848_031,
    202_899_935,
    404_226_527,
    815_423_967,
];

/// What an encoder at `level` may allocate. With the input's `size` known
/// libzstd shrinks its window to the input (at least 1 KiB) and its hash
/// and chain tables (4 bytes an entry) to at most twice the window each.
pub(crate) fn compressor_charge(level: i32, size: Option<u64>) -> usize {
    let level = if level == 0 { DEFAULT_LEVEL } else { level };
    let index = usize::try_from(level.clamp(1, 22) - 1).unwrap_or(0);
    // The estimate leaves out the context itself and, at levels 20-22, the
    // long-distance matcher's tables (libzstd holds 7% more at level 22).
    let estimate = ENCODER_ESTIMATE[index] + ENCODER_ESTIMATE[index] / 8 + (64 << 10);
    match size {
        Some(size) => {
            let window = usize::try_from(size.max(1024).next_power_of_two()).unwrap_or(usize::MAX);
            estimate.min(window.saturating_mul(20).saturating_add(1 << 20))
        }
        None => estimate,
    }
}

/// What a decoder of window `2^window_log` may allocate: the window and
/// libzstd's block buffers and tables (under 480 KiB).
pub(crate) fn decompressor_charge(window_log: u32) -> usize {
    (1usize << window_log) + (512 << 10)
}

fn zstd_error(code: usize) -> CodecError {
    CodecError::Corrupt(zstd_safe::get_error_name(code).to_owned())
}

/// A zstd encoder: write steps, then finish steps until it is done.
pub(crate) struct ZstdCompressor {
    cctx: CCtx<'static>,
    done: bool,
}

impl ZstdCompressor {
    /// An encoder at `level` (clamped to libzstd's levels), writing a
    /// checksum when `checksum`; `size` is the whole input's, when known.
    pub(crate) fn new(level: i32, checksum: bool, size: Option<u64>) -> Result<Self, CodecError> {
        let mut cctx = CCtx::create();
        let level = level.clamp(zstd_safe::min_c_level(), zstd_safe::max_c_level());
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .and_then(|_| cctx.set_parameter(CParameter::ChecksumFlag(checksum)))
            .and_then(|_| cctx.set_pledged_src_size(size))
            .map_err(zstd_error)?;
        Ok(Self { cctx, done: false })
    }

    /// As `flate::Compressor::step`: compresses `input` (or, with `finish`
    /// and no input, ends the frame) into `out` up to `limit` bytes;
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
        let directive = if finish {
            ZSTD_EndDirective::ZSTD_e_end
        } else {
            ZSTD_EndDirective::ZSTD_e_continue
        };
        let start = out.len();
        out.resize(limit.max(start), 0);
        let mut input = InBuffer::around(input);
        let mut output = OutBuffer::around_pos(&mut out[..], start);
        let result = self
            .cctx
            .compress_stream2(&mut output, &mut input, directive);
        let written = output.pos();
        out.truncate(written);
        let remaining = result.map_err(|_| CodecError::Compress)?;
        if finish && remaining == 0 {
            self.done = true;
        }
        Ok(input.pos())
    }

    /// What libzstd holds for it now.
    #[cfg(test)]
    fn memory(&self) -> usize {
        self.cctx.sizeof()
    }
}

/// A zstd decoder: write steps, then [`ZstdDecompressor::finish`]. Like
/// workerd's, it reads one frame and ignores whatever follows it.
pub(crate) struct ZstdDecompressor {
    dctx: DCtx<'static>,
    /// Some input was given (an empty input is an empty output).
    started: bool,
    done: bool,
}

impl ZstdDecompressor {
    /// A decoder refusing frames whose window is over `2^window_log_max`
    /// (in [`WINDOW_LOGS`]).
    pub(crate) fn new(window_log_max: u32) -> Result<Self, CodecError> {
        let mut dctx = DCtx::create();
        dctx.set_parameter(DParameter::WindowLogMax(window_log_max))
            .map_err(zstd_error)?;
        Ok(Self {
            dctx,
            started: false,
            done: false,
        })
    }

    /// As `flate::Decompressor::step`.
    pub(crate) fn step(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, CodecError> {
        if self.done {
            return Ok(input.len());
        }
        self.started |= !input.is_empty();
        let start = out.len();
        out.resize(limit.max(start), 0);
        let mut input_buffer = InBuffer::around(input);
        let mut output = OutBuffer::around_pos(&mut out[..], start);
        let result = self.dctx.decompress_stream(&mut output, &mut input_buffer);
        let written = output.pos();
        out.truncate(written);
        let hint = result.map_err(zstd_error)?;
        if hint == 0 {
            // The frame ended (and all of it was written out).
            self.done = true;
            return Ok(input.len());
        }
        Ok(input_buffer.pos())
    }

    /// The input has ended: an error unless the frame did (or there was
    /// no input at all).
    pub(crate) fn finish(&mut self) -> Result<(), CodecError> {
        if self.done || !self.started {
            Ok(())
        } else {
            Err(CodecError::Truncated)
        }
    }

    /// What libzstd holds for it now.
    #[cfg(test)]
    fn memory(&self) -> usize {
        self.dctx.sizeof()
    }
}

#[cfg(test)]
#[path = "zstd_tests.rs"]
mod tests;
