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
//! the work is done. The work then runs on tokio's blocking pool, at most
//! one transform per core at once across the process, so the engine thread
//! goes on running other Workers; a transform that takes longer than
//! [`TRANSFORM_TIME_LIMIT`] is answered with an error (its work, bounded
//! by the area, finishes on the pool and is dropped). Errors are resolved
//! as `[code, message]`, which the JavaScript throws as an `ImagesError`.

mod work;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use isolane_engine::api::{HostError, HostState, Reservation, Settle, Settlement, Unit};
use isolane_engine::api::{begin_op, js_string, u8_array};

use work::{ImagesFailure, Info, Output, Transform};

/// The longest a transform may take, its turn in the pool included.
const TRANSFORM_TIME_LIMIT: Duration = Duration::from_secs(10);

/// `env.NAME` for an Images binding.
pub(crate) fn unit() -> Unit {
    Unit::new("images")
        .js(&["37_images.js"])
        .function("imagesInfo", images_info)
        .function("imagesTransform", images_transform)
}

/// Transforms running at once in the process: one per core.
fn pool_slots() -> Arc<tokio::sync::Semaphore> {
    static SLOTS: OnceLock<Arc<tokio::sync::Semaphore>> = OnceLock::new();
    SLOTS
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            Arc::new(tokio::sync::Semaphore::new(cores))
        })
        .clone()
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

/// The work on the blocking pool, in its turn, within the time limit.
async fn run(
    bytes: Vec<u8>,
    transforms: Vec<Transform>,
    output: Output,
    charge: Reservation,
) -> Transformed {
    let Ok(_slot) = pool_slots().acquire_owned().await else {
        return Transformed(Err(ImagesFailure::new(
            9523,
            "ERROR: the image pool is closed",
        )));
    };
    let job = tokio::task::spawn_blocking(move || {
        let done = work::transform(&bytes, &transforms, &output);
        drop(charge);
        done
    });
    match tokio::time::timeout(TRANSFORM_TIME_LIMIT, job).await {
        Ok(Ok(done)) => Transformed(done),
        Ok(Err(error)) => {
            tracing::warn!(%error, "images: a transform failed on the blocking pool");
            Transformed(Err(ImagesFailure::new(
                9523,
                "ERROR: Internal Images binding error",
            )))
        }
        Err(_) => Transformed(Err(ImagesFailure::new(
            9523,
            format!(
                "ERROR: the transform took longer than {} s",
                TRANSFORM_TIME_LIMIT.as_secs()
            ),
        ))),
    }
}

/// The transform's future: its work when the plan passes and its charge
/// fits, else its error. `None` when the isolate is at its memory limit
/// (it is being terminated).
fn start(
    host: &HostState,
    bytes: Vec<u8>,
    transforms: &str,
    output: Output,
) -> Option<Pin<Box<dyn Future<Output = Transformed>>>> {
    let planned = plan(&bytes, transforms).and_then(|(transforms, charge)| {
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
        Ok((transforms, charge)) => {
            let charge = Reservation::new(host.memory(), charge).ok()?;
            Box::pin(run(bytes, transforms, output, charge))
        }
        Err(error) => Box::pin(std::future::ready(Transformed(Err(error)))),
    })
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
    let early: Result<_, HostError> = Ok(start(&host, bytes, &transforms, output)?);
    let (resolver, promise, work) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let done = work.await;
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, Settlement::custom(done));
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}
