//! A settled host promise's value in JavaScript ([`Settlement::into_js`]),
//! and the head of an answer to a fetch or a call ([`FetchHead`]): made in
//! a turn, from the request state's records, so the state itself makes no
//! JS values.

use http::Response;

use super::error::HostError;
use super::headers::header_array;
use super::holder::{holder, set};
use super::respond::UNCHARGED_BODY;
use super::state::{FetchHead, HostState, Settle, Settlement};
use super::value::{js_string, u8_array};
use crate::body::Body;

impl Settlement {
    /// The JS value to resolve with (`Ok`) or reject with (`Err`).
    pub(crate) fn into_js<'s>(
        self,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let undefined = v8::undefined(scope).into();
        match self {
            Settlement::Undefined => Ok(undefined),
            Settlement::Null => Ok(v8::null(scope).into()),
            Settlement::Chunk(bytes) => {
                let chunk = u8_array(scope, bytes).ok_or(undefined)?;
                let object = holder(scope);
                set(scope, object, "chunk", Some(chunk.into()));
                Ok(object.into())
            }
            Settlement::Fetch(head) => Ok(head.into_js(scope)),
            Settlement::Custom(answer) => answer.into_js(scope),
            Settlement::TypeError(message) => Err(HostError::type_error(message)
                .to_js(scope)
                .ok_or(undefined)?),
        }
    }
}

impl FetchHead {
    /// Its status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Marked as the answer of a redirected request (`Response.redirected`).
    pub fn redirected(self, redirected: bool) -> Self {
        Self { redirected, ..self }
    }

    /// The head of `response` to request `ctx` from `url`, its body for
    /// `bodyRead`; up to `UNCHARGED_BODY` bytes given whole, as `bytes`.
    pub fn new(host: &HostState, ctx: u32, response: Response<Body>, url: String) -> Self {
        let (parts, body) = response.into_parts();
        let (status, headers) = (parts.status, parts.headers);
        let mut head = FetchHead {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or("").to_owned(),
            headers,
            body_id: 0,
            bytes: None,
            url,
            redirected: false,
            web_socket: 0,
        };
        match body.whole(UNCHARGED_BODY) {
            Ok(bytes) => head.bytes = Some(bytes),
            Err(body) if http_body::Body::is_end_stream(&body) => {}
            Err(body) => head.body_id = host.register_body(ctx, body),
        }
        head
    }

    fn into_js<'s>(self, scope: &mut v8::PinScope<'s, '_>) -> v8::Local<'s, v8::Value> {
        let object = holder(scope);
        let status = v8::Integer::new(scope, i32::from(self.status)).into();
        let status_text = js_string(scope, &self.status_text);
        let headers = header_array(scope, &self.headers).into();
        let body_id = v8::Integer::new_from_unsigned(scope, self.body_id).into();
        set(scope, object, "status", Some(status));
        set(scope, object, "statusText", status_text);
        set(scope, object, "headers", Some(headers));
        set(scope, object, "bodyId", Some(body_id));
        let bytes = self.bytes.and_then(|b| u8_array(scope, b.into()));
        set(scope, object, "bytes", bytes.map(Into::into));
        let url = js_string(scope, &self.url);
        set(scope, object, "url", url);
        let redirected = v8::Boolean::new(scope, self.redirected).into();
        set(scope, object, "redirected", Some(redirected));
        let web_socket = v8::Integer::new_from_unsigned(scope, self.web_socket).into();
        set(scope, object, "webSocket", Some(web_socket));
        object.into()
    }
}

/// A host error as an op's answer: its promise rejects with it.
impl Settle for HostError {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let undefined = v8::undefined(scope).into();
        Err(self.to_js(scope).unwrap_or(undefined))
    }
}
