//! `TextDecoder` for the encodings other than UTF-8 (which keeps its own
//! fast path, the core's `host/text.rs`): encoding_rs, the Encoding Standard's decoders
//! as Firefox ships them. One [`TextDecoder`] per JS `TextDecoder` that
//! decodes something else, so `{stream: true}` keeps its state here.

use encoding_rs::{Decoder, DecoderResult, Encoding};

use std::rc::Rc;

use isolane_engine::api::{HostError, HostResult, HostState, Owner};

/// Charged for an encoding_rs decoder (a few hundred bytes at most).
const TEXT_DECODER_CHARGE: usize = 1024;

/// The most bytes JavaScript hands over per `textDecode` call (it splits
/// longer input): the output buffer is sized from it.
pub(crate) const TEXT_STEP: usize = 1024 * 1024;

/// An encoding's decoder and how to make it afresh.
pub(crate) struct TextDecoder {
    encoding: &'static Encoding,
    ignore_bom: bool,
    decoder: Decoder,
}

/// The input is not valid in the encoding (`fatal`), or too long.
#[derive(Debug)]
pub(crate) struct Malformed;

impl TextDecoder {
    pub(crate) fn new(encoding: &'static Encoding, ignore_bom: bool) -> Self {
        Self {
            encoding,
            ignore_bom,
            decoder: fresh(encoding, ignore_bom),
        }
    }

    /// Decodes `input` to UTF-16; `last` ends the stream (and the next call
    /// starts a new one, as the standard's `decode()` without `stream`).
    /// The decoder starts afresh after an error too.
    pub(crate) fn decode(
        &mut self,
        input: &[u8],
        fatal: bool,
        last: bool,
    ) -> Result<Vec<u16>, Malformed> {
        let result = self.run(input, fatal, last);
        if last || result.is_err() {
            self.decoder = fresh(self.encoding, self.ignore_bom);
        }
        result
    }

    fn run(&mut self, input: &[u8], fatal: bool, last: bool) -> Result<Vec<u16>, Malformed> {
        let max = self
            .decoder
            .max_utf16_buffer_length(input.len())
            .ok_or(Malformed)?;
        let mut out = vec![0u16; max];
        let written = if fatal {
            let (result, _, written) = self
                .decoder
                .decode_to_utf16_without_replacement(input, &mut out, last);
            match result {
                DecoderResult::InputEmpty => written,
                DecoderResult::Malformed(..) | DecoderResult::OutputFull => return Err(Malformed),
            }
        } else {
            let (result, _, written, _) = self.decoder.decode_to_utf16(input, &mut out, last);
            if result == encoding_rs::CoderResult::OutputFull {
                return Err(Malformed);
            }
            written
        };
        out.truncate(written);
        Ok(out)
    }
}

fn fresh(encoding: &'static Encoding, ignore_bom: bool) -> Decoder {
    // The standard strips a BOM only of the decoder's own encoding (no
    // sniffing for another): what `with_bom_removal` does.
    if ignore_bom {
        encoding.new_decoder_without_bom_handling()
    } else {
        encoding.new_decoder_with_bom_removal()
    }
}

/// The encoding a `TextDecoder` label names: `None` for an unknown label and
/// for the `replacement` encoding's labels (the constructor throws RangeError
/// for both).
pub(crate) fn lookup(label: &str) -> Option<&'static Encoding> {
    Encoding::for_label_no_replacement(label.as_bytes())
}

host_fn! {
/// `encodingForLabel(label)` → the encoding's name in lowercase, or null.
pub(super) fn encoding_for_label<'s>(
    scope,
    label: String,
) -> Option<v8::Local<'s, v8::Value>> {
    match lookup(&label) {
        Some(encoding) => {
            let name = encoding.name().to_ascii_lowercase();
            v8::String::new(scope, &name).map(Into::into)
        }
        None => Some(v8::null(scope).into()),
    }
}
}

host_fn! {
/// `textDecoderNew(label, ignoreBOM)` → handle (the label JS already checked).
/// Owned by the isolate: a `TextDecoder` made at the top level serves many
/// requests.
pub(super) fn text_decoder_new<'s>(
    scope,
    host: Rc<HostState>,
    label: String,
    ignore_bom: bool,
) -> HostResult<Option<v8::Local<'s, v8::Object>>> {
    let Some(encoding) = lookup(&label) else {
        return Err(HostError::type_error(format!(
            "textDecoderNew: unknown encoding {label:?}"
        )));
    };
    let decoder = TextDecoder::new(encoding, ignore_bom);
    Ok(host
        .handles()
        .insert_object(scope, decoder, TEXT_DECODER_CHARGE, Owner::Isolate))
}
}

host_fn! {
/// `textDecode(handle, u8, fatal, last)` → string; throws TypeError for
/// malformed input when `fatal`. JS hands over at most [`TEXT_STEP`] bytes.
pub(super) fn text_decode<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    input: Option<Vec<u8>>,
    fatal: bool,
    last: bool,
) -> HostResult<v8::Local<'s, v8::String>> {
    let Some(input) = input else {
        return Err(HostError::type_error("textDecode: input must be a Uint8Array"));
    };
    if input.len() > TEXT_STEP {
        return Err(HostError::type_error("textDecode: input step too long"));
    }
    let result = host
        .handles()
        .with_handle(scope, handle, |decoder: &mut TextDecoder| {
            decoder
                .decode(&input, fatal, last)
                .map_err(|Malformed| decoder.encoding.name().to_ascii_lowercase())
        });
    let units = match result {
        Some(Ok(units)) => units,
        Some(Err(name)) => {
            return Err(HostError::type_error(format!(
                "The encoded data was not valid for encoding {name}"
            )));
        }
        None => return Err(HostError::type_error("textDecode: not a TextDecoder")),
    };
    v8::String::new_from_two_byte(scope, &units, v8::NewStringType::Normal)
        .ok_or_else(|| HostError::type_error("textDecode: the decoded string is too long"))
}
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn decode(
        label: &str,
        parts: &[&[u8]],
        fatal: bool,
        ignore_bom: bool,
    ) -> Result<String, Malformed> {
        let mut d = TextDecoder::new(lookup(label).unwrap(), ignore_bom);
        let mut units = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            units.extend(d.decode(part, fatal, i + 1 == parts.len())?);
        }
        Ok(String::from_utf16(&units).unwrap())
    }

    #[test]
    fn labels_streaming_and_bom() {
        assert!(lookup("replacement").is_none());
        assert!(lookup("iso-2022-kr").is_none());
        assert_eq!(lookup(" latin1\n").unwrap().name(), "windows-1252");
        assert_eq!(lookup("utf-16").unwrap().name(), "UTF-16LE");
        assert_eq!(
            decode("latin1", &[b"caf\xe9"], true, false).unwrap(),
            "café"
        );
        // Shift_JIS split inside a two-byte sequence (U+3042).
        assert_eq!(
            decode("sjis", &[b"\x82", b"\xa0"], true, false).unwrap(),
            "\u{3042}"
        );
        // A UTF-16 BOM is stripped for UTF-16 only, and kept with ignoreBOM.
        assert_eq!(
            decode("utf-16le", &[b"\xff", b"\xfea\x00"], true, false).unwrap(),
            "a"
        );
        assert_eq!(
            decode("utf-16le", &[b"\xff\xfea\x00"], true, true).unwrap(),
            "\u{feff}a"
        );
        assert_eq!(
            decode("windows-1252", &[b"\xef\xbb\xbfa"], true, false).unwrap(),
            "ï»¿a"
        );
        // Truncated at the end: an error when fatal, U+FFFD otherwise.
        assert!(decode("utf-16be", &[b"\x00a\x00"], true, false).is_err());
        assert_eq!(
            decode("utf-16be", &[b"\x00a\x00"], false, false).unwrap(),
            "a\u{fffd}"
        );
    }
}
