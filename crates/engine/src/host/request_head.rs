//! A request's head as JavaScript hands it to the host (a method, a URL and
//! a header map) for a call that goes to another Worker, an object or a
//! Worker's assets: parsed in one place, each mistake a `TypeError` naming it.

use http::{HeaderMap, Method, Request, Uri};

use super::error::HostError;

/// The method and URI of a request from JavaScript.
pub fn method_and_uri(method: &str, url: &str) -> Result<(Method, Uri), HostError> {
    let parsed = Method::from_bytes(method.as_bytes())
        .map_err(|_| HostError::type_error(format!("invalid method {method:?}")))?;
    let uri = url
        .parse()
        .map_err(|_| HostError::type_error(format!("invalid URL {url:?}")))?;
    Ok((parsed, uri))
}

/// A request of `body` with the head from JavaScript.
pub fn request<B>(
    method: &str,
    url: &str,
    headers: HeaderMap,
    body: B,
) -> Result<Request<B>, HostError> {
    let (method, uri) = method_and_uri(method, url)?;
    let mut request = Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_head_becomes_the_request() {
        let mut headers = HeaderMap::new();
        headers.insert("x-a", http::HeaderValue::from_static("1"));
        let request = request("PUT", "https://a.example/p?q", headers, 7_u8).expect("valid");
        assert_eq!(request.method(), Method::PUT);
        assert_eq!(request.uri(), "https://a.example/p?q");
        assert_eq!(request.headers()["x-a"], "1");
        assert_eq!(*request.body(), 7);
    }

    #[test]
    fn an_invalid_method_or_url_is_named() {
        let method = method_and_uri("GE T", "https://a.example/").expect_err("bad method");
        assert!(
            method.to_string().contains("invalid method \"GE T\""),
            "{method}"
        );
        let url = method_and_uri("GET", "not a url").expect_err("bad URL");
        assert!(
            url.to_string().contains("invalid URL \"not a url\""),
            "{url}"
        );
    }
}
