//! `host.dataUrl`: `fetch()` of a `data:` URL — the Fetch Standard's
//! "data: URL processor", by servo's `data-url` crate. No network is involved,
//! so there is no egress check and no subrequest; the URL's length is bounded
//! instead, and the decoded body (never longer than the URL) is charged to
//! the isolate's memory budget like every buffer the host hands to JS.

use data_url::DataUrl;

use isolane_engine::api::{HostError, HostResult, js_string, u8_array};

/// The longest `data:` URL `fetch()` decodes, in bytes of its (ASCII)
/// serialisation. The decoding runs on the isolate's thread in one go.
const MAX_DATA_URL_LEN: usize = 16 << 20;

host_fn! {
/// `dataUrl(href)` → `[mimeType, Uint8Array]`; throws TypeError for a URL
/// that is too long or that the processor refuses (no comma, bad base64).
pub(super) fn data_url<'s>(
    scope,
    href: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let Some(href) = href.to_string(scope) else {
        return Ok(None);
    };
    // An href is ASCII (the URL parser percent-encoded the rest), so its
    // UTF-16 length is its byte length: checked before it is copied out.
    if href.length() > MAX_DATA_URL_LEN {
        return Err(HostError::type_error(format!(
            "fetch failed: a data: URL may be at most {MAX_DATA_URL_LEN} bytes long, this one is {}",
            href.length()
        )));
    }
    let href = href.to_rust_string_lossy(scope);
    let decoded = match DataUrl::process(&href) {
        Ok(url) => url
            .decode_to_vec()
            .map(|(body, _fragment)| (url.mime_type().to_string(), body))
            .map_err(|_| "its base64 body is invalid".to_owned()),
        Err(error) => Err(error.to_string()),
    };
    let (mime, body) = match decoded {
        Ok(decoded) => decoded,
        Err(reason) => {
            return Err(HostError::type_error(format!(
                "fetch failed: invalid data: URL ({reason})"
            )));
        }
    };
    // Over the memory budget: the isolate is being terminated, nothing to do.
    let Some(bytes) = u8_array(scope, body) else {
        return Ok(None);
    };
    let Some(mime) = js_string(scope, &mime) else {
        return Ok(None);
    };
    Ok(Some(v8::Array::new_with_elements(scope, &[mime, bytes.into()])))
}
}

#[cfg(test)]
mod tests {
    use data_url::DataUrl;

    // Vectors from the Fetch Standard's data: URL processor examples.
    #[test]
    fn processor_gives_mime_type_and_body() {
        let url = DataUrl::process("data:,Hello%2C%20World%21").unwrap();
        assert_eq!(url.mime_type().to_string(), "text/plain;charset=US-ASCII");
        assert_eq!(url.decode_to_vec().unwrap().0, b"Hello, World!");
        let url = DataUrl::process("data:text/plain;base64,aGVsbG8gZGF0YQ==").unwrap();
        assert_eq!(url.mime_type().to_string(), "text/plain");
        assert_eq!(url.decode_to_vec().unwrap().0, b"hello data");
        assert!(DataUrl::process("data:text/plain").is_err());
        assert!(
            DataUrl::process("data:;base64,a")
                .unwrap()
                .decode_to_vec()
                .is_err()
        );
    }
}
