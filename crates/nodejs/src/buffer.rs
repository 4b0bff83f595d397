//! `node:buffer`'s encodings, as Node decodes and encodes them: hex,
//! base64 and base64url by the `hex` and `base64` crates, latin1, ascii and
//! utf16le straight into V8's one- and two-byte strings. UTF-8 goes through
//! the encoding unit's `utf8Encode`/`utf8Decode`.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use isolane_engine::api::{HostError, HostResult};
use isolane_engine::api::{u8_array, view_bytes};

/// Node's base64 decoder is forgiving: either alphabet, padding or none,
/// stray characters skipped, trailing bits ignored.
const FORGIVING: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// What `Buffer.from(string, encoding)` holds, for the encodings decoded
/// here.
fn decode(text: &str, encoding: &str) -> HostResult<Vec<u8>> {
    match encoding {
        "hex" => {
            // Node stops at the first pair that is not hex.
            let valid = text
                .as_bytes()
                .chunks_exact(2)
                .take_while(|pair| pair.iter().all(u8::is_ascii_hexdigit))
                .count();
            hex::decode(&text[..valid * 2]).map_err(|e| HostError::type_error(e.to_string()))
        }
        "base64" | "base64url" => {
            // Either alphabet, up to the first `=`; whatever else is skipped.
            let mut clean: Vec<u8> = text
                .bytes()
                .take_while(|b| *b != b'=')
                .filter_map(|b| match b {
                    b'-' => Some(b'+'),
                    b'_' => Some(b'/'),
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => Some(b),
                    _ => None,
                })
                .collect();
            // A lone last character carries no whole byte: Node drops it.
            if clean.len() % 4 == 1 {
                clean.pop();
            }
            FORGIVING
                .decode(&clean)
                .map_err(|e| HostError::type_error(e.to_string()))
        }
        other => Err(HostError::type_error(format!(
            "internal: bufferFromString of {other:?}"
        ))),
    }
}

host_fn! {
/// `bufferFromString(string, encoding)`: `hex`, `base64` or `base64url`.
pub(super) fn from_string<'s>(scope, text: String, encoding: String)
    -> HostResult<Option<v8::Local<'s, v8::Uint8Array>>>
{
    let bytes = decode(&text, &encoding)?;
    Ok(u8_array(scope, bytes))
}
}

host_fn! {
/// `bufferToString(u8, encoding)`: `hex`, `base64`, `base64url`, `latin1`,
/// `ascii` or `utf16le`.
pub(super) fn to_string<'s>(scope, view: v8::Local<'s, v8::Value>, encoding: String)
    -> HostResult<Option<v8::Local<'s, v8::String>>>
{
    let Some(bytes) = view_bytes(view) else {
        return Err(HostError::type_error("bufferToString: not a view"));
    };
    let string = match encoding.as_str() {
        "hex" => v8::String::new(scope, &hex::encode(&bytes)),
        "base64" => v8::String::new(scope, &base64::engine::general_purpose::STANDARD.encode(&bytes)),
        "base64url" => v8::String::new(
            scope,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes),
        ),
        "latin1" => v8::String::new_from_one_byte(scope, &bytes, v8::NewStringType::Normal),
        "ascii" => {
            let bytes: Vec<u8> = bytes.iter().map(|b| b & 0x7f).collect();
            v8::String::new_from_one_byte(scope, &bytes, v8::NewStringType::Normal)
        }
        "utf16le" => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
                .collect();
            v8::String::new_from_two_byte(scope, &units, v8::NewStringType::Normal)
        }
        other => {
            return Err(HostError::type_error(format!(
                "internal: bufferToString of {other:?}"
            )));
        }
    };
    Ok(string)
}
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_as_node_does() {
        assert_eq!(decode("0aff1", "hex").unwrap(), vec![0x0a, 0xff]);
        assert_eq!(decode("0aZZff", "hex").unwrap(), vec![0x0a]);
        assert_eq!(decode("aGVsbG8=", "base64").unwrap(), b"hello");
        assert_eq!(decode("aGVsbG8", "base64url").unwrap(), b"hello");
        assert_eq!(decode("aGVs bG8\n", "base64").unwrap(), b"hello");
        assert_eq!(decode("_-8", "base64").unwrap(), vec![0xff, 0xef]);
        assert_eq!(decode("aGVsbG8=trailing", "base64").unwrap(), b"hello");
        assert_eq!(decode("aGVsbG8h1", "base64").unwrap(), b"hello!");
    }
}
