//! Cloudflare's Images binding (`images: {}`, wrangler's `[images]
//! binding`): `env.NAME.info(stream)` and `env.NAME.input(stream)
//! .transform({...}).output({format})` (`js/37_images.js`), on the `image`
//! crate (`images/work.rs`).
//!
//! `info` reads only the header, on this thread. A transform is bounded
//! before any pixel is decoded: the area the header declares (at most
//! 100 megapixels, Cloudflare's limit) and the largest area the transforms
//! reach are checked, and that many pixels (4 bytes each, source and
//! result) plus the input are charged to the Worker's memory budget until
//! the work is done. The work then runs on the engine's offload pool as Web
//! Crypto's does (`isolane_web::offload`): one transform at a time per
//! isolate, at most one per core in the engine and half of them for one
//! namespace, its CPU time charged to the request, which ends as
//! `cpu_limit` past its budget; the transform asks between steps (decode,
//! each transform, encode) whether the budget is spent. Errors are
//! resolved as `[code, message]`, which the JavaScript throws as an
//! `ImagesError`.

mod work;

use std::rc::Rc;

use isolane_engine::api::{HostState, Reservation, Settle, Settlement, Unit};
use isolane_engine::api::{js_string, u8_array};
use isolane_web::offload::{self, Slot};

use work::{ImagesFailure, Info, Output, Transform};

/// `env.NAME` for an Images binding.
pub(crate) fn unit() -> Unit {
    Unit::new("images")
        .js(&["37_images.js"])
        .function("imagesInfo", images_info)
        .function("imagesTransform", images_transform)
        .state::<ImagesState>()
}

/// The unit's per-isolate state: its offload slot (one transform at a
/// time for one isolate).
struct ImagesState {
    slot: Slot,
}

impl Default for ImagesState {
    fn default() -> Self {
        Self {
            slot: offload::slot(),
        }
    }
}

/// `[code, text]` for JavaScript: 0 and `text` on success.
fn pair<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    code: u32,
    text: &str,
    bytes: Option<v8::Local<'s, v8::Value>>,
) -> Option<v8::Local<'s, v8::Value>> {
    let code = v8::Integer::new_from_unsigned(scope, code).into();
    let text = js_string(scope, text)?;
    let mut items = vec![code, text];
    items.extend(bytes);
    Some(v8::Array::new_with_elements(scope, &items).into())
}

fn failure<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    failure: &ImagesFailure,
) -> Option<v8::Local<'s, v8::Value>> {
    pair(scope, failure.code, &failure.to_string(), None)
}

host_fn! {
/// `imagesInfo(bytes)` → `[0, infoJson]` or `[code, message]`.
fn images_info<'s>(
    scope,
    bytes: Option<Vec<u8>>,
) -> Option<v8::Local<'s, v8::Value>> {
    let bytes = bytes.unwrap_or_default();
    match work::info(&bytes) {
        Ok(Info::Svg) => pair(scope, 0, r#"{"format":"image/svg+xml"}"#, None),
        Ok(Info::Bitmap { format, file_size, width, height }) => {
            let json = format!(
                r#"{{"format":"{format}","fileSize":{file_size},"width":{width},"height":{height}}}"#
            );
            pair(scope, 0, &json, None)
        }
        Err(error) => failure(scope, &error),
    }
}
}

/// What a transform settles with.
struct Transformed(Result<(Vec<u8>, &'static str), ImagesFailure>);

impl Settle for Transformed {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
        let answer = match self.0 {
            Ok((bytes, mime)) => {
                // Over the memory limit: the isolate is being terminated.
                let bytes = u8_array(scope, bytes).ok_or(undefined)?;
                pair(scope, 0, mime, Some(bytes.into()))
            }
            Err(error) => failure(scope, &error),
        };
        answer.ok_or(undefined)
    }
}

/// The transforms (JSON from JavaScript), and the bytes the work needs
/// charged: the input, the largest area reached (source and result, 4
/// bytes a pixel). The area the header declares is checked first.
fn plan(bytes: &[u8], transforms: &str) -> Result<(Vec<Transform>, usize), ImagesFailure> {
    let transforms: Vec<Transform> = serde_json::from_str(transforms).map_err(|error| {
        ImagesFailure::new(9523, format!("ERROR: Invalid transform options: {error}"))
    })?;
    let (w, h) = match work::info(bytes)? {
        Info::Bitmap { width, height, .. } => (width, height),
        Info::Svg => {
            return Err(ImagesFailure::new(
                9520,
                "ERROR: SVG input cannot be transformed by this runtime yet",
            ));
        }
    };
    work::check_area(w, h)?;
    let peak = work::peak_pixels(w, h, &transforms)?;
    if peak > work::MAX_PIXELS {
        return Err(ImagesFailure::new(
            9413,
            format!(
                "ERROR: Image too large: the transforms reach {peak} pixels, over the limit of {} (100 megapixels)",
                work::MAX_PIXELS
            ),
        ));
    }
    let charge = usize::try_from(peak.saturating_mul(8)).unwrap_or(usize::MAX);
    Ok((transforms, charge.saturating_add(bytes.len())))
}

/// The transforms and their memory charged, when the plan passes and the
/// charge fits, else the binding's error. `None` when the isolate is at
/// its memory limit (it is being terminated).
fn reserve(
    host: &HostState,
    bytes: &[u8],
    transforms: &str,
) -> Option<Result<(Vec<Transform>, Reservation), ImagesFailure>> {
    let planned = plan(bytes, transforms).and_then(|(transforms, charge)| {
        // Asked without stopping the Worker: an image too large for what
        // its limit leaves is the binding's error, which it can handle.
        if host.memory().would_fit(charge) {
            Ok((transforms, charge))
        } else {
            Err(ImagesFailure::new(
                9523,
                format!(
                    "ERROR: the transform needs {} MiB, more than the Worker's memory limit leaves",
                    charge >> 20
                ),
            ))
        }
    });
    Some(match planned {
        Ok((transforms, charge)) => Ok((transforms, Reservation::new(host.memory(), charge).ok()?)),
        Err(error) => Err(error),
    })
}

/// A promise resolved now with the binding's error.
fn refused<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    error: &ImagesFailure,
) -> Option<v8::Local<'s, v8::Promise>> {
    let resolver = v8::PromiseResolver::new(scope)?;
    let value = failure(scope, error)?;
    resolver.resolve(scope, value)?;
    Some(resolver.get_promise(scope))
}

host_fn! {
/// `imagesTransform(bytes, transformsJson, format, quality)` → Promise of
/// `[0, contentType, bytes]` or `[code, message]` (quality 0: the default).
fn images_transform<'s>(
    scope,
    host: Rc<HostState>,
    bytes: Option<Vec<u8>>,
    transforms: String,
    format: String,
    quality: f64,
) -> Option<v8::Local<'s, v8::Promise>> {
    let bytes = bytes.unwrap_or_default();
    // 1 to 100 once JavaScript has checked it; 0 for the default.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let quality = (quality >= 1.0).then(|| quality.min(100.0) as u8);
    let output = Output { format, quality };
    let (transforms, charge) = match reserve(&host, &bytes, &transforms)? {
        Ok(reserved) => reserved,
        Err(error) => return refused(scope, &error),
    };
    let slot = host.state::<ImagesState>()?.slot.clone();
    let work = move |stop: &isolane_engine::api::Stop| {
        let done = work::transform(&bytes, &transforms, &output, stop);
        drop(charge);
        done
    };
    offload::spawn(scope, slot, work, |done| {
        Settlement::custom(Transformed(done.unwrap_or_else(|| {
            Err(ImagesFailure::new(9523, "ERROR: Internal Images binding error"))
        })))
    })
}
}
