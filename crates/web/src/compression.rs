//! `host.compression*` and `host.codecFree`: the streaming codecs behind
//! `CompressionStream`/`DecompressionStream` (flate2,
//! `compression/flate.rs`) and `node:zlib` (those, brotli: the `brotli`
//! crate, `compression/brotli.rs`, and Zstandard: libzstd through the
//! `zstd` crate, `compression/zstd.rs`). `isolane-nodejs`' `zlib.js` calls
//! these host functions: Node's `node:zlib` needs this family. The legacy
//! encodings of `TextDecoder` are the core's (`host/text/decoder.rs`).
//!
//! Each codec lives in the isolate's handle table (`host/handle.rs`), named
//! for JavaScript by a handle object, charged to the worker's memory budget
//! while it lives. It lives until JavaScript frees it (the stream ended,
//! failed or was canceled), its handle is garbage collected, or the isolate
//! goes; a compression stream made during a request is also freed when that
//! request ends (it is that request's I/O), while a `TextDecoder` (often
//! made at the top level and shared by requests) is owned by the isolate.
//!
//! Work per call is bounded: a step reads at most [`INPUT_STEP`] bytes of
//! its input and writes at most [`OUTPUT_STEP`]; JavaScript comes back for
//! the rest, between steps the watchdog can stop it, and each step's output
//! is a charged buffer before the next is made.

mod brotli;
mod flate;
mod zstd;

use std::rc::Rc;

use isolane_engine::api::{HostError, HostResult, HostState, Owner, Unit, u8_array};

use self::brotli::{BrotliCompressor, BrotliDecompressor};
use self::flate::{Compressor, Decompressor, Format};
use self::zstd::{ZstdCompressor, ZstdDecompressor};

/// `CompressionStream` and `DecompressionStream`.
pub(crate) fn unit() -> Unit {
    Unit::new("compression")
        .js(&["24_compression.js"])
        .function("compressionNew", compression_new)
        .function("compressionWrite", compression_write)
        .function("compressionEnd", compression_end)
        .function("codecFree", codec_free)
}

/// The most input bytes one step reads.
pub(crate) const INPUT_STEP: usize = 64 * 1024;
/// The most output bytes one step writes.
pub(crate) const OUTPUT_STEP: usize = 64 * 1024;

/// Charged for a compressor: deflate's state at the default level, one
/// allocation in zlib-rs (`DeflateAllocOffsets`): a doubled 32 KiB window,
/// 64 KiB of hash chains, a 128 KiB hash head, 112 KiB of pending and
/// symbol buffers (~370 KiB with the state itself).
const COMPRESSOR_CHARGE: usize = 384 * 1024;
/// Charged for a decompressor: the 32 KiB window and the inflate state and
/// tables (~40 KiB in zlib-rs).
const DECOMPRESSOR_CHARGE: usize = 64 * 1024;

/// A compression stream's codec, as the handle table holds it.
enum Flate {
    Compress(Box<Compressor>),
    Decompress(Box<Decompressor>),
    BrotliCompress(Box<BrotliCompressor>),
    BrotliDecompress(Box<BrotliDecompressor>),
    ZstdCompress(Box<ZstdCompressor>),
    ZstdDecompress(Box<ZstdDecompressor>),
}

/// What `compressionNew` was asked for beyond kind and format.
struct Options {
    /// zlib's level, brotli's quality or zstd's level (may be negative).
    level: Option<i64>,
    /// brotli's lgwin or zstd's decoder `windowLogMax`.
    window: Option<u32>,
    /// zstd: write a checksum.
    checksum: bool,
    /// zstd: the whole input's size, when known (the sync calls).
    size: Option<u64>,
}

impl Flate {
    /// A codec for `kind` and `format`, and what it is charged.
    fn new(kind: &str, format: &str, options: &Options) -> HostResult<(Self, usize)> {
        let compress = kind == "compress";
        if format == "zstd" {
            return Self::zstd(compress, options);
        }
        let level = options.level.and_then(|l| u32::try_from(l).ok());
        let window = options.window;
        if format == "brotli" {
            if !compress {
                let codec = Self::BrotliDecompress(Box::new(BrotliDecompressor::new()));
                return Ok((codec, brotli::DECOMPRESSOR_CHARGE));
            }
            let (quality, lgwin) = brotli::parameters(level, window).ok_or_else(|| {
                HostError::range_error("brotli: quality must be 0-11 and lgwin 10-24")
            })?;
            let codec = Self::BrotliCompress(Box::new(BrotliCompressor::new(quality, lgwin)));
            return Ok((codec, brotli::compressor_charge(quality, lgwin)));
        }
        let Some(format) = Format::parse(format) else {
            return Err(HostError::type_error(format!(
                "Unsupported compression format: '{format}'"
            )));
        };
        Ok(if compress {
            let codec = Self::Compress(Box::new(Compressor::with_level(format, level)));
            (codec, COMPRESSOR_CHARGE)
        } else {
            (
                Self::Decompress(Box::new(Decompressor::new(format))),
                DECOMPRESSOR_CHARGE,
            )
        })
    }

    /// A zstd encoder or decoder (JS checked the options' ranges).
    fn zstd(compress: bool, options: &Options) -> HostResult<(Self, usize)> {
        let failed = |e: flate::CodecError| HostError::range_error(format!("zstd: {e}"));
        if compress {
            let level = options.level.map_or(zstd::DEFAULT_LEVEL, |l| {
                i32::try_from(l.clamp(-(1 << 17), 22)).unwrap_or(zstd::DEFAULT_LEVEL)
            });
            let codec =
                ZstdCompressor::new(level, options.checksum, options.size).map_err(failed)?;
            let charge = zstd::compressor_charge(level, options.size);
            return Ok((Self::ZstdCompress(Box::new(codec)), charge));
        }
        let window_log = options.window.unwrap_or(zstd::DEFAULT_WINDOW_LOG_MAX);
        if !zstd::WINDOW_LOGS.contains(&window_log) {
            return Err(HostError::range_error("zstd: windowLogMax must be 10-31"));
        }
        let codec = ZstdDecompressor::new(window_log).map_err(failed)?;
        let charge = zstd::decompressor_charge(window_log);
        Ok((Self::ZstdDecompress(Box::new(codec)), charge))
    }

    /// One step over the start of `input` (see `compressionWrite`).
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, flate::CodecError> {
        match self {
            Self::Compress(c) => c.step(input, false, out, OUTPUT_STEP),
            Self::Decompress(d) => d.step(input, out, OUTPUT_STEP),
            Self::BrotliCompress(c) => c.step(input, false, out, OUTPUT_STEP),
            Self::BrotliDecompress(d) => d.step(input, out, OUTPUT_STEP),
            Self::ZstdCompress(c) => c.step(input, false, out, OUTPUT_STEP),
            Self::ZstdDecompress(d) => d.step(input, out, OUTPUT_STEP),
        }
    }

    /// The input has ended (see `compressionEnd`).
    fn end(&mut self, out: &mut Vec<u8>) -> Result<(), flate::CodecError> {
        match self {
            Self::Compress(c) => c.step(&[], true, out, OUTPUT_STEP).map(drop),
            Self::Decompress(d) => d.finish(),
            Self::BrotliCompress(c) => c.step(&[], true, out, OUTPUT_STEP).map(drop),
            Self::BrotliDecompress(d) => d.finish(),
            Self::ZstdCompress(c) => c.step(&[], true, out, OUTPUT_STEP).map(drop),
            Self::ZstdDecompress(d) => d.finish(),
        }
    }
}

const ENDED: &str = "the compression stream has ended: it belonged to a request that is over";

/// At most [`INPUT_STEP`] bytes from the start of a view (no copy of the rest).
fn input_step(value: v8::Local<'_, v8::Value>) -> Vec<u8> {
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(value) else {
        return Vec::new();
    };
    let mut bytes = vec![0; view.byte_length().min(INPUT_STEP)];
    let copied = view.copy_contents(&mut bytes);
    bytes.truncate(copied);
    bytes
}

/// A step's output for JavaScript: a charged Uint8Array, or null when empty.
/// `None` over the memory limit (the isolate is being terminated).
fn output<'s>(scope: &mut v8::PinScope<'s, '_>, out: Vec<u8>) -> Option<v8::Local<'s, v8::Value>> {
    if out.is_empty() {
        return Some(v8::null(scope).into());
    }
    u8_array(scope, out).map(Into::into)
}

// === host functions ===

host_fn! {
/// `compressionNew(kind, format, level, window, checksum, size)` → handle:
/// `kind` `"compress"` or `"decompress"`, `format` one of the Compression
/// Standard's (JS checked it), `brotli` or `zstd` (node:zlib); `level`
/// zlib's level, brotli's quality or zstd's level, `window` brotli's lgwin
/// or zstd's windowLogMax (undefined: the defaults); `checksum` (zstd) a
/// boolean, `size` (zstd) the whole input's length when known.
fn compression_new<'s>(
    scope,
    host: Rc<HostState>,
    kind: String,
    name: String,
    level: v8::Local<'s, v8::Value>,
    window: v8::Local<'s, v8::Value>,
    checksum: v8::Local<'s, v8::Value>,
    size: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Object>>> {
    let number = |v: v8::Local<'s, v8::Value>| {
        v.number_value(scope)
            .filter(|n| !v.is_null_or_undefined() && n.is_finite())
            .map(|n| n as i64)
    };
    let options = Options {
        level: number(level),
        window: number(window).and_then(|n| u32::try_from(n).ok()),
        checksum: checksum.is_true(),
        size: number(size).and_then(|n| u64::try_from(n).ok()),
    };
    let (codec, charge) = Flate::new(&kind, &name, &options)?;
    let owner = Owner::request(host.current());
    Ok(host.handles().insert_object(scope, codec, charge, owner))
}
}

host_fn! {
/// `compressionWrite(handle, u8)` → `[consumed, output]`: one step over the
/// start of `u8`; `output` null means all of `u8` was consumed and nothing
/// more is pending. Throws TypeError for corrupt input.
fn compression_write<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    input: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let input = input_step(input);
    let mut out = Vec::new();
    let result = host
        .handles()
        .with_handle(scope, handle, |codec: &mut Flate| codec.write(&input, &mut out));
    let consumed = match result {
        Some(Ok(consumed)) => consumed,
        Some(Err(error)) => return Err(HostError::type_error(error.to_string())),
        None => return Err(HostError::type_error(ENDED)),
    };
    let Some(output) = output(scope, out) else {
        return Ok(None);
    };
    let consumed = v8::Number::new(scope, consumed as f64).into();
    Ok(Some(v8::Array::new_with_elements(scope, &[consumed, output])))
}
}

host_fn! {
/// `compressionEnd(handle)` → output or null: the input has ended. A
/// compressor writes the rest of its stream (call again until null); a
/// decompressor throws TypeError unless its stream was complete.
fn compression_end<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let mut out = Vec::new();
    let result = host
        .handles()
        .with_handle(scope, handle, |codec: &mut Flate| codec.end(&mut out));
    match result {
        Some(Ok(())) => Ok(output(scope, out)),
        Some(Err(error)) => Err(HostError::type_error(error.to_string())),
        None => Err(HostError::type_error(ENDED)),
    }
}
}

host_fn! {
/// `codecFree(handle)`: the codec is no longer needed; its memory is given back.
fn codec_free<'s>(scope, host: Rc<HostState>, handle: v8::Local<'s, v8::Value>) {
    host.handles().remove_handle(scope, handle);
}
}
