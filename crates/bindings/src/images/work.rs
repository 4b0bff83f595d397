//! The Images binding's image work, off the engine thread: the header read
//! (format, declared size) and its bounds, the transforms in order, the
//! encoding. Pure functions of bytes; `images.rs` runs them on the blocking
//! pool and settles the Worker's promise.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader, imageops::FilterType};
use isolane_engine::api::Stop;
use serde::Deserialize;

/// Cloudflare's bound on an input's area: 100 megapixels. Checked from the
/// dimensions the header declares, before a pixel is decoded.
pub(crate) const MAX_PIXELS: u64 = 100_000_000;

/// The longest side an output may have (Cloudflare's 12,000 pixels).
pub(crate) const MAX_SIDE: u32 = 12_000;

/// The largest blur radius (Cloudflare's `blur`: 1 to 250).
const MAX_BLUR: f32 = 250.0;

/// An error as the binding's `ImagesError` carries it: Cloudflare's code
/// and the text after `IMAGES_<OP>_`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code}: {message}")]
pub(crate) struct ImagesFailure {
    pub code: u32,
    pub message: String,
}

impl ImagesFailure {
    pub(crate) fn new(code: u32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Input that is not an image of a known format (Cloudflare's 9412).
fn bad_input(detail: impl std::fmt::Display) -> ImagesFailure {
    ImagesFailure::new(
        9412,
        format!("ERROR: Bad input: the input is not a supported image ({detail})"),
    )
}

/// What `info()` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Info {
    Svg,
    Bitmap {
        format: &'static str,
        file_size: usize,
        width: u32,
        height: u32,
    },
}

/// Whether `bytes` look like an SVG document (an `<svg` element near the
/// start, after an optional XML declaration, comments and a doctype).
fn is_svg(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    (text.starts_with('<')) && text.contains("<svg")
}

fn mime(format: ImageFormat) -> Result<&'static str, ImagesFailure> {
    match format {
        ImageFormat::Png => Ok("image/png"),
        ImageFormat::Jpeg => Ok("image/jpeg"),
        ImageFormat::Gif => Ok("image/gif"),
        ImageFormat::WebP => Ok("image/webp"),
        ImageFormat::Avif => Ok("image/avif"),
        other => Err(ImagesFailure::new(
            9520,
            format!(
                "ERROR: Unsupported image type {other:?}, expected one of: JPEG, SVG, PNG, WebP, GIF or AVIF"
            ),
        )),
    }
}

/// The format and the dimensions the header declares, read without
/// decoding a pixel.
pub(crate) fn info(bytes: &[u8]) -> Result<Info, ImagesFailure> {
    let Ok(format) = image::guess_format(bytes) else {
        return if is_svg(bytes) {
            Ok(Info::Svg)
        } else {
            Err(bad_input("unknown format"))
        };
    };
    let mime = mime(format)?;
    let reader = ImageReader::with_format(Cursor::new(bytes), format);
    let (width, height) = reader.into_dimensions().map_err(bad_input)?;
    Ok(Info::Bitmap {
        format: mime,
        file_size: bytes.len(),
        width,
        height,
    })
}

/// One `transform({...})` call's options; those not listed are ignored, as
/// wrangler's local binding ignores them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Transform {
    pub width: Option<f64>,
    pub height: Option<f64>,
    pub fit: Option<String>,
    pub rotate: Option<f64>,
    pub blur: Option<f64>,
    pub flip: Option<String>,
    pub background: Option<String>,
}

/// How `width`/`height` apply (Cloudflare's `fit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    ScaleDown,
    Contain,
    Cover,
    Crop,
    Pad,
    Squeeze,
}

fn fit_of(fit: Option<&str>) -> Result<Fit, ImagesFailure> {
    Ok(match fit {
        None | Some("scale-down") => Fit::ScaleDown,
        Some("contain") => Fit::Contain,
        Some("cover") => Fit::Cover,
        Some("crop") => Fit::Crop,
        Some("pad") => Fit::Pad,
        Some("squeeze") => Fit::Squeeze,
        Some(other) => {
            return Err(ImagesFailure::new(
                9523,
                format!(
                    "ERROR: Invalid fit {other:?}: expected scale-down, contain, cover, crop, pad or squeeze"
                ),
            ));
        }
    })
}

/// A side given as a number: a whole number of pixels, 1 to [`MAX_SIDE`].
fn side(value: Option<f64>, what: &str) -> Result<Option<u32>, ImagesFailure> {
    let Some(value) = value else { return Ok(None) };
    if !value.is_finite() || value < 1.0 || value > f64::from(MAX_SIDE) {
        return Err(ImagesFailure::new(
            9523,
            format!("ERROR: Invalid {what} {value}: expected 1 to {MAX_SIDE} pixels"),
        ));
    }
    // In range: checked just above.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(Some(value.round() as u32))
}

/// `a * num / den`, rounded, at least 1.
fn scaled(a: u32, num: u32, den: u32) -> u32 {
    let value = (u64::from(a) * u64::from(num) + u64::from(den) / 2) / u64::from(den.max(1));
    u32::try_from(value.max(1)).unwrap_or(u32::MAX)
}

/// What a resize does: the size the picture is scaled to, and the canvas
/// it ends on (cropped to for cover/crop, padded to for pad).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resize {
    pub scale_to: (u32, u32),
    pub canvas: (u32, u32),
}

/// The size a `(w, h)` picture takes to fit inside or to cover `(tw, th)`.
fn fit_box(w: u32, h: u32, tw: u32, th: u32, cover: bool) -> (u32, u32) {
    // Compare w/tw with h/th without floats: w*th against h*tw.
    let wider = u64::from(w) * u64::from(th) > u64::from(h) * u64::from(tw);
    if wider != cover {
        (tw, scaled(h, tw, w))
    } else {
        (scaled(w, th, h), th)
    }
}

/// The resize `width`/`height`/`fit` ask of a `(w, h)` image, if any.
pub(crate) fn resize_of(w: u32, h: u32, t: &Transform) -> Result<Option<Resize>, ImagesFailure> {
    let fit = fit_of(t.fit.as_deref())?;
    let (tw, th) = match (side(t.width, "width")?, side(t.height, "height")?) {
        (None, None) => return Ok(None),
        (Some(tw), None) => (tw, scaled(h, tw, w)),
        (None, Some(th)) => (scaled(w, th, h), th),
        (Some(tw), Some(th)) => (tw, th),
    };
    let larger = tw > w || th > h;
    let resize = match fit {
        Fit::Squeeze => Resize {
            scale_to: (tw, th),
            canvas: (tw, th),
        },
        Fit::ScaleDown if tw >= w && th >= h => Resize {
            scale_to: (w, h),
            canvas: (w, h),
        },
        Fit::ScaleDown | Fit::Contain => {
            let to = fit_box(w, h, tw, th, false);
            Resize {
                scale_to: to,
                canvas: to,
            }
        }
        Fit::Crop if larger => {
            let to = if tw >= w && th >= h {
                (w, h)
            } else {
                fit_box(w, h, tw, th, false)
            };
            Resize {
                scale_to: to,
                canvas: to,
            }
        }
        Fit::Cover | Fit::Crop => Resize {
            scale_to: fit_box(w, h, tw, th, true),
            canvas: (tw, th),
        },
        Fit::Pad => Resize {
            scale_to: fit_box(w, h, tw, th, false),
            canvas: (tw, th),
        },
    };
    Ok(Some(resize))
}

/// `rotate`: 0, 90, 180 or 270 degrees clockwise.
fn quarter_turns(rotate: Option<f64>) -> Result<u8, ImagesFailure> {
    const DEGREES: [f64; 5] = [0.0, 90.0, 180.0, 270.0, 360.0];
    let Some(r) = rotate else { return Ok(0) };
    let turns = DEGREES.iter().position(|&d| (d - r).abs() < f64::EPSILON);
    match turns.and_then(|turns| u8::try_from(turns % 4).ok()) {
        Some(turns) => Ok(turns),
        None => Err(ImagesFailure::new(
            9523,
            format!("ERROR: Invalid rotate {r}: expected 0, 90, 180 or 270"),
        )),
    }
}

/// The largest area the image has across `transforms`, from `(w, h)`
/// without decoding: what the work is charged for and bounded by.
pub(crate) fn peak_pixels(w: u32, h: u32, transforms: &[Transform]) -> Result<u64, ImagesFailure> {
    let (mut w, mut h) = (w, h);
    let mut peak = u64::from(w) * u64::from(h);
    for t in transforms {
        if quarter_turns(t.rotate)? % 2 == 1 {
            (w, h) = (h, w);
        }
        if let Some(resize) = resize_of(w, h, t)? {
            let (sw, sh) = resize.scale_to;
            (w, h) = resize.canvas;
            peak = peak
                .max(u64::from(sw) * u64::from(sh))
                .max(u64::from(w) * u64::from(h));
        }
    }
    Ok(peak)
}

/// Refuses an image whose declared area is over [`MAX_PIXELS`] (9413).
pub(crate) fn check_area(w: u32, h: u32) -> Result<(), ImagesFailure> {
    let area = u64::from(w) * u64::from(h);
    if area > MAX_PIXELS {
        return Err(ImagesFailure::new(
            9413,
            format!(
                "ERROR: Image too large: {w}x{h} is {area} pixels, over the limit of {MAX_PIXELS} (100 megapixels)"
            ),
        ));
    }
    Ok(())
}

/// One transform applied to a decoded image.
fn apply(image: DynamicImage, t: &Transform) -> Result<DynamicImage, ImagesFailure> {
    let mut image = match quarter_turns(t.rotate)? {
        1 => image.rotate90(),
        2 => image.rotate180(),
        3 => image.rotate270(),
        _ => image,
    };
    if let Some(resize) = resize_of(image.width(), image.height(), t)? {
        image = resized(image, resize, t.background.as_deref());
    }
    if let Some(blur) = t.blur {
        #[allow(clippy::cast_possible_truncation)]
        let radius = (blur as f32).clamp(0.0, MAX_BLUR);
        if radius > 0.0 {
            image = image.fast_blur(radius / 2.0);
        }
    }
    Ok(match t.flip.as_deref() {
        None => image,
        Some("h") => image.fliph(),
        Some("v") => image.flipv(),
        Some("hv") | Some("vh") => image.fliph().flipv(),
        Some(other) => {
            return Err(ImagesFailure::new(
                9523,
                format!("ERROR: Invalid flip {other:?}: expected h, v or hv"),
            ));
        }
    })
}

/// `#rgb`/`#rrggbb` as opaque RGBA; white otherwise (pad's default).
fn color(background: Option<&str>) -> image::Rgba<u8> {
    let hex = background
        .and_then(|b| b.strip_prefix('#'))
        .unwrap_or("ffffff");
    let digits: Vec<u8> = match hex.len() {
        3 => hex
            .chars()
            .filter_map(|c| c.to_digit(16))
            .map(|d| (d * 17) as u8)
            .collect(),
        6 => (0..3)
            .filter_map(|i| u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok())
            .collect(),
        _ => Vec::new(),
    };
    match digits[..] {
        [r, g, b] => image::Rgba([r, g, b, 255]),
        _ => image::Rgba([255, 255, 255, 255]),
    }
}

/// The image scaled, then cropped (centred) or padded to its canvas.
fn resized(image: DynamicImage, resize: Resize, background: Option<&str>) -> DynamicImage {
    let (sw, sh) = resize.scale_to;
    let (cw, ch) = resize.canvas;
    let mut image = if (sw, sh) == (image.width(), image.height()) {
        image
    } else {
        image.resize_exact(sw, sh, FilterType::Lanczos3)
    };
    if (cw, ch) == (sw, sh) {
        return image;
    }
    if cw <= sw && ch <= sh {
        return image.crop((sw - cw) / 2, (sh - ch) / 2, cw, ch);
    }
    let mut canvas = image::RgbaImage::from_pixel(cw, ch, color(background));
    let x = i64::from(cw.saturating_sub(sw) / 2);
    let y = i64::from(ch.saturating_sub(sh) / 2);
    image::imageops::overlay(&mut canvas, &image.to_rgba8(), x, y);
    image = DynamicImage::ImageRgba8(canvas);
    image
}

/// The output format asked for: its MIME type and image crate format.
fn output_format(format: &str) -> Result<(&'static str, ImageFormat), ImagesFailure> {
    match format {
        "image/png" => Ok(("image/png", ImageFormat::Png)),
        "image/jpeg" => Ok(("image/jpeg", ImageFormat::Jpeg)),
        "image/webp" => Ok(("image/webp", ImageFormat::WebP)),
        "image/gif" => Ok(("image/gif", ImageFormat::Gif)),
        "image/avif" => Err(ImagesFailure::new(
            9520,
            "ERROR: AVIF output is not supported by this runtime yet",
        )),
        other => Err(ImagesFailure::new(
            9520,
            format!(
                "ERROR: Unsupported output format {other:?}: expected image/png, image/jpeg, image/webp or image/gif"
            ),
        )),
    }
}

/// What `output()` asked for.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    pub format: String,
    /// 1 to 100, JPEG only (WebP is written lossless).
    pub quality: Option<u8>,
}

/// Decodes `bytes` (its area checked first), applies `transforms` in order
/// and encodes the result: its bytes and content type.
pub(crate) fn transform(
    bytes: &[u8],
    transforms: &[Transform],
    output: &Output,
    stop: &Stop,
) -> Result<(Vec<u8>, &'static str), ImagesFailure> {
    let (mime, format) = output_format(&output.format)?;
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(bad_input)?;
    let Some(input) = reader.format() else {
        return Err(if is_svg(bytes) {
            ImagesFailure::new(
                9520,
                "ERROR: SVG input cannot be transformed by this runtime yet",
            )
        } else {
            bad_input("unknown format")
        });
    };
    self::mime(input)?;
    let (w, h) = ImageReader::with_format(Cursor::new(bytes), input)
        .into_dimensions()
        .map_err(bad_input)?;
    check_area(w, h)?;
    let mut reader = ImageReader::with_format(Cursor::new(bytes), input);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(w);
    limits.max_image_height = Some(h);
    reader.limits(limits);
    let mut image = reader.decode().map_err(bad_input)?;
    for t in transforms {
        stopped(stop)?;
        image = apply(image, t)?;
    }
    stopped(stop)?;
    encode(image, format, output.quality).map(|bytes| (bytes, mime))
}

/// Between steps: the request's CPU budget spent (the request then ends
/// as `cpu_limit` when the time is charged) or the request gone.
fn stopped(stop: &Stop) -> Result<(), ImagesFailure> {
    if stop.now() {
        return Err(ImagesFailure::new(
            9523,
            "ERROR: the Worker's CPU time ran out during the transform",
        ));
    }
    Ok(())
}

fn encode(
    image: DynamicImage,
    format: ImageFormat,
    quality: Option<u8>,
) -> Result<Vec<u8>, ImagesFailure> {
    let failed = |error: image::ImageError| {
        ImagesFailure::new(9523, format!("ERROR: encoding failed: {error}"))
    };
    let mut out = Cursor::new(Vec::new());
    match format {
        ImageFormat::Jpeg => {
            let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
            let encoder =
                image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality.unwrap_or(85));
            rgb.write_with_encoder(encoder).map_err(failed)?;
        }
        ImageFormat::WebP => {
            let rgba = DynamicImage::ImageRgba8(image.to_rgba8());
            rgba.write_to(&mut out, format).map_err(failed)?;
        }
        ImageFormat::Gif => {
            let rgba = DynamicImage::ImageRgba8(image.to_rgba8());
            rgba.write_to(&mut out, format).map_err(failed)?;
        }
        _ => image.write_to(&mut out, format).map_err(failed)?,
    }
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use super::*;

    /// A stop that never fires within a test.
    fn go() -> Stop {
        Stop::for_request(Arc::new(AtomicBool::new(false)), Duration::from_secs(600))
    }

    #[test]
    fn a_spent_budget_stops_the_transform_between_steps() {
        let gone = Stop::for_request(Arc::new(AtomicBool::new(true)), Duration::from_secs(600));
        let output = Output {
            format: "image/png".into(),
            quality: None,
        };
        let error =
            transform(&png(8, 8), &[t(Some(4.0), None, "contain")], &output, &gone).unwrap_err();
        assert_eq!(error.code, 9523, "{error}");
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let image =
            DynamicImage::ImageRgb8(image::RgbImage::from_pixel(w, h, image::Rgb([200, 10, 10])));
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn t(width: Option<f64>, height: Option<f64>, fit: &str) -> Transform {
        Transform {
            width,
            height,
            fit: Some(fit.into()),
            ..Transform::default()
        }
    }

    #[test]
    fn fits_size_the_image_as_cloudflare_documents() {
        let cases = [
            (t(Some(100.0), None, "scale-down"), (100, 50)),
            (t(Some(400.0), None, "scale-down"), (200, 100)),
            (t(Some(400.0), None, "contain"), (400, 200)),
            (t(Some(50.0), Some(50.0), "contain"), (50, 25)),
            (t(Some(50.0), Some(50.0), "cover"), (50, 50)),
            (t(Some(50.0), Some(50.0), "squeeze"), (50, 50)),
            (t(Some(80.0), Some(80.0), "pad"), (80, 80)),
        ];
        for (transform, want) in cases {
            let resize = resize_of(200, 100, &transform).unwrap().unwrap();
            assert_eq!(resize.canvas, want, "{transform:?}");
        }
        assert!(resize_of(200, 100, &t(Some(0.0), None, "cover")).is_err());
        assert!(resize_of(200, 100, &t(Some(1.0), None, "stretch")).is_err());
    }

    #[test]
    fn transforms_decode_rotate_resize_and_encode() {
        let rotate = Transform {
            rotate: Some(90.0),
            ..Transform::default()
        };
        let output = Output {
            format: "image/webp".into(),
            quality: None,
        };
        let (bytes, mime) = transform(
            &png(40, 20),
            &[rotate, t(Some(10.0), None, "contain")],
            &output,
            &go(),
        )
        .unwrap();
        assert_eq!(mime, "image/webp");
        let back = image::load_from_memory(&bytes).unwrap();
        assert_eq!((back.width(), back.height()), (10, 20));
        assert_eq!(
            info(&png(3, 7)).unwrap(),
            Info::Bitmap {
                format: "image/png",
                file_size: png(3, 7).len(),
                width: 3,
                height: 7
            }
        );
        assert_eq!(
            info(b"<?xml version=\"1.0\"?><svg></svg>").unwrap(),
            Info::Svg
        );
        assert_eq!(info(b"not an image at all").unwrap_err().code, 9412);
    }

    /// CRC-32 (IEEE) of `bytes`, as a PNG chunk carries it.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0xedb8_8320 & (!(crc & 1)).wrapping_add(1));
            }
        }
        !crc
    }

    #[test]
    fn a_declared_area_over_the_limit_is_refused_before_decoding() {
        // A PNG header claiming 50,000 x 50,000 over a tiny body (its IHDR
        // checksum made right, so only the size is wrong).
        let mut bomb = png(1, 1);
        bomb[16..20].copy_from_slice(&50_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&50_000u32.to_be_bytes());
        let crc = crc32(&bomb[12..29]);
        bomb[29..33].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            info(&bomb).unwrap(),
            Info::Bitmap {
                format: "image/png",
                file_size: bomb.len(),
                width: 50_000,
                height: 50_000
            }
        );
        let output = Output {
            format: "image/png".into(),
            quality: None,
        };
        let error = transform(&bomb, &[], &output, &go()).unwrap_err();
        assert_eq!(error.code, 9413, "{error}");
        assert_eq!(
            peak_pixels(10, 10, &[t(Some(1000.0), Some(1000.0), "squeeze")]).unwrap(),
            1_000_000
        );
    }
}
