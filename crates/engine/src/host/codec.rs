//! `host.compression*` and `host.textDecoder*`: the streaming codecs behind
//! `CompressionStream`/`DecompressionStream` (flate2, `codec/flate.rs`) and
//! the legacy encodings of `TextDecoder` (encoding_rs, `codec/text.rs`).
//!
//! Each codec's state lives here, in a per-isolate [`Codecs`] table, named
//! for JavaScript by a handle object (an object with one internal field, the
//! id, that JavaScript cannot forge: the same scheme as
//! `host/crypto/handles.rs`). The state is charged to the worker's memory
//! budget while it lives, and it lives until JavaScript frees it (the
//! stream ended, failed or was canceled), its handle is garbage collected
//! (a `TextDecoder` made at the top level is used by many requests, so
//! codecs are not owned by one request), or the isolate goes. A compression
//! stream made during a request is also freed when that request ends (it is
//! that request's I/O; see [`Codecs::drop_for`]).
//!
//! Work per call is bounded: a step reads at most [`INPUT_STEP`] bytes of
//! its input and writes at most [`OUTPUT_STEP`]; JavaScript comes back for
//! the rest, between steps the watchdog can stop it, and each step's output
//! is a charged buffer before the next is made.

mod flate;
mod text;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use self::flate::{CodecError, Compressor, Decompressor, Format};
use super::handle::{handle_id, new_handle};
use super::{HostState, arg_string, throw_type_error, u8_array};
use crate::memory::Memory;

pub(super) use self::text::{encoding_for_label, text_decode, text_decoder_new};

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
/// Charged for an encoding_rs decoder (a few hundred bytes at most).
const TEXT_DECODER_CHARGE: usize = 1024;

/// What a handle names.
pub(crate) enum Codec {
    Compress(Box<Compressor>),
    Decompress(Box<Decompressor>),
    Text(Box<text::TextDecoder>),
}

impl Codec {
    fn charge(&self) -> usize {
        match self {
            Self::Compress(_) => COMPRESSOR_CHARGE,
            Self::Decompress(_) => DECOMPRESSOR_CHARGE,
            Self::Text(_) => TEXT_DECODER_CHARGE,
        }
    }
}

struct Entry {
    codec: Codec,
    /// The request whose end frees it (0: none; see [`Codecs::drop_for`]).
    owner: u32,
    /// Keeps the finalizer armed; dropped with the entry.
    _handle: v8::Weak<v8::Object>,
}

/// The codecs of one isolate.
pub(crate) struct Codecs {
    memory: Arc<Memory>,
    next: Cell<u32>,
    entries: RefCell<HashMap<u32, Entry>>,
    /// Ids whose handle was collected while `entries` was borrowed.
    collected: RefCell<Vec<u32>>,
}

impl Codecs {
    pub(crate) fn new(memory: Arc<Memory>) -> Self {
        Self {
            memory,
            next: Cell::new(0),
            entries: RefCell::default(),
            collected: RefCell::default(),
        }
    }

    /// A new handle for `codec`; `None` over the memory limit (the isolate
    /// is then being terminated) or when V8 could not make the object.
    fn insert<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        codec: Codec,
        owner: u32,
    ) -> Option<v8::Local<'s, v8::Object>> {
        self.sweep();
        let charge = codec.charge();
        self.memory.charge(charge).ok()?;
        let id = self.next.get().wrapping_add(1).max(1);
        self.next.set(id);
        let Some((object, handle)) = new_handle(scope, id, |host, id| host.codecs.remove(id))
        else {
            self.memory.release(charge);
            return None;
        };
        self.entries.borrow_mut().insert(
            id,
            Entry {
                codec,
                owner,
                _handle: handle,
            },
        );
        Some(object)
    }

    /// Runs `f` on the codec a handle names (no JavaScript runs meanwhile);
    /// `None` when `handle` names none (freed, or not a handle).
    fn with<T>(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        handle: v8::Local<'_, v8::Value>,
        f: impl FnOnce(&mut Codec) -> T,
    ) -> Option<T> {
        let id = handle_id(scope, handle)?;
        let mut entries = self.entries.try_borrow_mut().ok()?;
        Some(f(&mut entries.get_mut(&id)?.codec))
    }

    /// Drops entry `id` now, or at the next insert when the table is
    /// borrowed (a finalizer may run inside any V8 allocation; it must not
    /// panic whatever happens).
    fn remove(&self, id: u32) {
        let removed = match self.entries.try_borrow_mut() {
            Ok(mut entries) => entries.remove(&id),
            Err(_) => {
                if let Ok(mut collected) = self.collected.try_borrow_mut() {
                    collected.push(id);
                }
                None
            }
        };
        if let Some(entry) = removed {
            self.memory.release(entry.codec.charge());
        }
    }

    /// Frees the codecs request `ctx` owns (every request's when `None`):
    /// compression streams are I/O of the request that made them, as in
    /// workerd, and go with it; text decoders (often made at the top level
    /// and shared by requests) and streams made outside a request are
    /// owned by none and live until collected.
    pub(crate) fn drop_for(&self, ctx: Option<u32>) {
        let removed: Vec<Entry> = match self.entries.try_borrow_mut() {
            Ok(mut entries) => {
                let ids: Vec<u32> = entries
                    .iter()
                    .filter(|(_, e)| e.owner != 0 && ctx.is_none_or(|c| c == e.owner))
                    .map(|(id, _)| *id)
                    .collect();
                ids.into_iter()
                    .filter_map(|id| entries.remove(&id))
                    .collect()
            }
            Err(_) => return,
        };
        for entry in removed {
            self.memory.release(entry.codec.charge());
        }
    }

    fn sweep(&self) {
        let ids = match self.collected.try_borrow_mut() {
            Ok(mut collected) => std::mem::take(&mut *collected),
            Err(_) => return,
        };
        for id in ids {
            self.remove(id);
        }
    }
}

impl Drop for Codecs {
    fn drop(&mut self) {
        let charged: usize = self
            .entries
            .get_mut()
            .values()
            .map(|e| e.codec.charge())
            .sum();
        self.memory.release(charged);
    }
}

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

/// `compressionNew(kind, format)` → handle: `kind` `"compress"` or
/// `"decompress"`, `format` one of the Compression Standard's (JS checked it).
pub(super) fn compression_new(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let kind = arg_string(scope, &args, 0);
    let name = arg_string(scope, &args, 1);
    let Some(format) = Format::parse(&name) else {
        throw_type_error(scope, &format!("Unsupported compression format: '{name}'"));
        return;
    };
    let codec = if kind == "compress" {
        Codec::Compress(Box::new(Compressor::new(format)))
    } else {
        Codec::Decompress(Box::new(Decompressor::new(format)))
    };
    if let Some(handle) = host.codecs.insert(scope, codec, host.current()) {
        rv.set(handle.into());
    }
}

/// `compressionWrite(handle, u8)` → `[consumed, output]`: one step over the
/// start of `u8`; `output` null means all of `u8` was consumed and nothing
/// more is pending. Throws TypeError for corrupt input.
pub(super) fn compression_write(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let input = input_step(args.get(1));
    let mut out = Vec::new();
    let result = host.codecs.with(scope, args.get(0), |codec| match codec {
        Codec::Compress(c) => c.step(&input, false, &mut out, OUTPUT_STEP),
        Codec::Decompress(d) => d.step(&input, &mut out, OUTPUT_STEP),
        Codec::Text(_) => Err(CodecError::Compress),
    });
    let consumed = match result {
        Some(Ok(consumed)) => consumed,
        Some(Err(error)) => return throw_type_error(scope, &error.to_string()),
        None => {
            return throw_type_error(
                scope,
                "the compression stream has ended: it belonged to a request that is over",
            );
        }
    };
    let Some(output) = output(scope, out) else {
        return;
    };
    let consumed = v8::Number::new(scope, consumed as f64).into();
    rv.set(v8::Array::new_with_elements(scope, &[consumed, output]).into());
}

/// `compressionEnd(handle)` → output or null: the input has ended. A
/// compressor writes the rest of its stream (call again until null); a
/// decompressor throws TypeError unless its stream was complete.
pub(super) fn compression_end(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let mut out = Vec::new();
    let result = host.codecs.with(scope, args.get(0), |codec| match codec {
        Codec::Compress(c) => c.step(&[], true, &mut out, OUTPUT_STEP).map(drop),
        Codec::Decompress(d) => d.finish(),
        Codec::Text(_) => Err(CodecError::Compress),
    });
    match result {
        Some(Ok(())) => {}
        Some(Err(error)) => return throw_type_error(scope, &error.to_string()),
        None => {
            return throw_type_error(
                scope,
                "the compression stream has ended: it belonged to a request that is over",
            );
        }
    }
    if let Some(output) = output(scope, out) {
        rv.set(output);
    }
}

/// `codecFree(handle)`: the codec is no longer needed; its memory is given back.
pub(super) fn codec_free(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    if let Some(id) = handle_id(scope, args.get(0)) {
        host.codecs.remove(id);
    }
}
