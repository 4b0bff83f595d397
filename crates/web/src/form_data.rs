//! `host.formDataParse`: the body of `Request/Response.formData()`.
//!
//! The Content-Type is parsed by the `mime` crate, and a
//! `multipart/form-data` body by `multer` (the parser axum uses). `multer`
//! is asynchronous; here the whole body is already in memory, so it is fed
//! as one ready chunk and every poll completes at once (`now_or_never`).
//! An `application/x-www-form-urlencoded` body is left to JS, which parses
//! it with the URLSearchParams parser (js/06_url.js).
//!
//! Memory: the body is copied once for `multer`, which copies it again into
//! its buffer; both copies are charged to the worker's budget for the length
//! of the call, and each file part's bytes are charged for as long as its
//! `File` lives (they become an ArrayBuffer's backing store). Strings go to
//! the JS heap, which V8 bounds. CPU: parsing is linear in the body's
//! length, and the watchdog is checked between parts.

use std::convert::Infallible;

use bytes::Bytes;
use futures::FutureExt;

use isolane_engine::api::{
    HostError, HostResult, HostState, Reservation, Unit, js_string, u8_array,
};

/// Why a body could not be read as form data (thrown as a TypeError).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FormDataError {
    #[error(
        "Unrecognized Content-Type header value. FormData can only parse the following MIME types: multipart/form-data, application/x-www-form-urlencoded"
    )]
    UnsupportedType,
    #[error(
        "No boundary string in Content-Type header. The multipart/form-data MIME type requires a boundary parameter."
    )]
    NoBoundary,
    #[error("Malformed multipart/form-data body: {0}")]
    Malformed(#[from] multer::Error),
    #[error("Content-Disposition header in FormData part is missing a name.")]
    NoName,
    #[error("Malformed multipart/form-data body: it ended early")]
    Incomplete,
}

/// How a body of this Content-Type is parsed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FormKind {
    /// `multipart/form-data` with this boundary.
    Multipart(String),
    /// `application/x-www-form-urlencoded`.
    UrlEncoded,
}

/// The parser for a Content-Type header value.
pub(crate) fn form_kind(content_type: &str) -> Result<FormKind, FormDataError> {
    let mime: mime::Mime = content_type
        .trim()
        .parse()
        .map_err(|_| FormDataError::UnsupportedType)?;
    match (mime.type_(), mime.subtype()) {
        (mime::MULTIPART, mime::FORM_DATA) => match mime.get_param(mime::BOUNDARY) {
            Some(boundary) if !boundary.as_str().is_empty() => {
                Ok(FormKind::Multipart(boundary.as_str().to_owned()))
            }
            _ => Err(FormDataError::NoBoundary),
        },
        (mime::APPLICATION, mime::WWW_FORM_URLENCODED) => Ok(FormKind::UrlEncoded),
        _ => Err(FormDataError::UnsupportedType),
    }
}

/// One part of a multipart body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// A part without a filename: a string entry (UTF-8, invalid bytes
    /// replaced).
    Text { name: String, value: String },
    /// A part with a filename: a `File` entry.
    File {
        name: String,
        filename: String,
        /// The part's Content-Type if it is a valid MIME type, `""` if it is
        /// not, `text/plain` if there is none (the Fetch standard's parser).
        content_type: String,
        bytes: Vec<u8>,
    },
}

/// The parts of a multipart body, read one at a time.
pub(crate) struct Parts {
    multipart: multer::Multipart<'static>,
}

impl Parts {
    pub(crate) fn new(body: Bytes, boundary: String) -> Self {
        let chunk = futures::stream::once(futures::future::ready(Ok::<_, Infallible>(body)));
        Self {
            multipart: multer::Multipart::new(chunk, boundary),
        }
    }

    /// The next part, `None` after the close delimiter.
    pub(crate) fn next_part(&mut self) -> Result<Option<Part>, FormDataError> {
        // The body is one ready chunk: nothing is ever pending, and a parser
        // that still wants more has met the end of the body.
        let field = self
            .multipart
            .next_field()
            .now_or_never()
            .ok_or(FormDataError::Incomplete)??;
        let Some(field) = field else {
            return Ok(None);
        };
        let name = field.name().ok_or(FormDataError::NoName)?.to_owned();
        let filename = field.file_name().map(str::to_owned);
        let content_type = match field.headers().get(http::header::CONTENT_TYPE) {
            None => "text/plain".to_owned(),
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<mime::Mime>().ok())
                .map_or_else(String::new, |m| m.to_string()),
        };
        let bytes = field
            .bytes()
            .now_or_never()
            .ok_or(FormDataError::Incomplete)??;
        Ok(Some(match filename {
            None => Part::Text {
                name,
                value: String::from_utf8_lossy(&bytes).into_owned(),
            },
            Some(filename) => Part::File {
                name,
                filename,
                content_type,
                bytes: bytes.to_vec(),
            },
        }))
    }
}

/// `FormData`, and `formData()` of a body.
pub(crate) fn unit() -> Unit {
    Unit::new("form_data")
        .js(&["24_form_data.js"])
        .function("formDataParse", form_data_parse)
}

fn type_error(error: FormDataError) -> HostError {
    HostError::type_error(error.to_string())
}

host_fn! {
/// `formDataParse(u8, contentType)` → `null` for a urlencoded body (JS
/// parses it), else the entries of a multipart body: `[name, string]` or
/// `[name, u8, filename, type]`. Throws TypeError for another type or a
/// malformed body.
fn form_data_parse<'s>(
    scope,
    body: v8::Local<'s, v8::Value>,
    content_type: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let content_type = content_type.to_rust_string_lossy(scope);
    let boundary = match form_kind(&content_type).map_err(type_error)? {
        FormKind::UrlEncoded => return Ok(Some(v8::null(scope).into())),
        FormKind::Multipart(boundary) => boundary,
    };
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(body) else {
        return Err(HostError::type_error(
            "formDataParse: the body must be a Uint8Array",
        ));
    };
    let Some(host) = HostState::get(scope) else {
        return Ok(None);
    };
    // The copy handed to multer and multer's own buffer. Over the limit the
    // isolate is being terminated and nothing is returned.
    let Ok(_reservation) = Reservation::new(host.memory(), view.byte_length().saturating_mul(2))
    else {
        return Ok(None);
    };
    let mut body = vec![0; view.byte_length()];
    view.copy_contents(&mut body);
    let mut parts = Parts::new(Bytes::from(body), boundary);
    let entries = v8::Array::new(scope, 0);
    let mut index = 0;
    let tripwire = host.tripwire();
    loop {
        if tripwire.has_fired() {
            // The turn was terminated; V8 unwinds it on return.
            return Ok(None);
        }
        let Some(part) = parts.next_part().map_err(type_error)? else {
            break;
        };
        // A handle scope per part: a body of a million tiny parts must not
        // hold millions of handles (V8's handle blocks are not charged).
        v8::scope!(let inner, scope);
        let Some(entry) = part_value(inner, part) else {
            // Over the memory limit: the isolate is being terminated.
            return Ok(None);
        };
        if entries.set_index(inner, index, entry.into()).is_none() {
            return Ok(None);
        }
        index += 1;
    }
    Ok(Some(entries.into()))
}
}

/// One entry as JS: `[name, string]` or `[name, u8, filename, type]`.
fn part_value<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    part: Part,
) -> Option<v8::Local<'s, v8::Array>> {
    let items = match part {
        Part::Text { name, value } => vec![js_string(scope, &name)?, js_string(scope, &value)?],
        Part::File {
            name,
            filename,
            content_type,
            bytes,
        } => vec![
            js_string(scope, &name)?,
            u8_array(scope, bytes)?.into(),
            js_string(scope, &filename)?,
            js_string(scope, &content_type)?,
        ],
    };
    Some(v8::Array::new_with_elements(scope, &items))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(boundary: &str, body: &str) -> Result<Vec<Part>, FormDataError> {
        let mut parts = Parts::new(Bytes::from(body.to_owned()), boundary.to_owned());
        let mut out = Vec::new();
        while let Some(part) = parts.next_part()? {
            out.push(part);
        }
        Ok(out)
    }

    #[test]
    fn kinds() {
        assert_eq!(
            form_kind("multipart/form-data; boundary=abc").unwrap(),
            FormKind::Multipart("abc".to_owned())
        );
        assert_eq!(
            form_kind("Multipart/Form-Data; boundary=\"a.b(c)\"").unwrap(),
            FormKind::Multipart("a.b(c)".to_owned())
        );
        assert_eq!(
            form_kind("application/x-www-form-urlencoded;charset=UTF-8").unwrap(),
            FormKind::UrlEncoded
        );
        assert!(matches!(
            form_kind("multipart/form-data"),
            Err(FormDataError::NoBoundary)
        ));
        // An empty quoted boundary is no MIME type to the `mime` crate.
        assert!(form_kind("multipart/form-data; boundary=\"\"").is_err());
        for bad in ["text/plain", "", "multipart/mixed; boundary=a", "nonsense"] {
            assert!(
                matches!(form_kind(bad), Err(FormDataError::UnsupportedType)),
                "{bad}"
            );
        }
    }

    #[test]
    fn text_and_file_parts() {
        let body = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
                    --b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.txt\"\r\n\
                    Content-Type: TEXT/html\r\n\r\nhi\r\n\
                    --b\r\nContent-Disposition: form-data; name=\"g\"; filename=\"y\"\r\n\r\n\r\n\
                    --b--\r\n";
        assert_eq!(
            parse("b", body).unwrap(),
            vec![
                Part::Text {
                    name: "a".to_owned(),
                    value: "1".to_owned()
                },
                Part::File {
                    name: "f".to_owned(),
                    filename: "x.txt".to_owned(),
                    content_type: "text/html".to_owned(),
                    bytes: b"hi".to_vec()
                },
                Part::File {
                    name: "g".to_owned(),
                    filename: "y".to_owned(),
                    content_type: "text/plain".to_owned(),
                    bytes: Vec::new()
                },
            ]
        );
    }

    #[test]
    fn malformed_bodies() {
        let no_name = "--b\r\nContent-Disposition: form-data\r\n\r\n1\r\n--b--\r\n";
        assert!(matches!(parse("b", no_name), Err(FormDataError::NoName)));
        let no_close = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1";
        assert!(parse("b", no_close).is_err());
        assert!(parse("b", "").is_err());
        assert!(parse("b", "--b").is_err());
        let no_headers = "--b\r\n\r\nvalue\r\n--b--\r\n";
        assert!(parse("b", no_headers).is_err());
        assert!(parse("b", "--b--").unwrap().is_empty());
    }
}
