//! Cloudflare's Images binding in `isolane dev` (docs/images.md): a
//! wrangler project with `[images] binding = "IMAGES"` served by `isolane
//! dev` and by `wrangler dev` (its local binding runs `sharp`) from the same
//! folder, compared on what is comparable — `info()`'s fields, the output's
//! content type and, decoded, its dimensions (not its bytes: the encoders
//! differ); then the hostile side on one engine thread: a decompression
//! bomb and a memory-hungry transform refused before decoding, a large
//! resize run off the thread, with a benign neighbour answering before,
//! during and after.
#![allow(clippy::unwrap_used)]

use std::io::Cursor;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use image::{DynamicImage, ImageFormat};

#[path = "support/dev.rs"]
mod support;
use support::{Dev, HttpClient, client, free_port, request, when_ready};
#[path = "support/peer.rs"]
mod peer;
use peer::{wrangler_dev, wrangler_ready};

/// The Worker: `GET /env` tells what `env` of `cloudflare:workers` holds
/// (Astro's image endpoint reads the binding there); `POST /info` answers `info()`; `POST /t?t=[...]&f=<type>`
/// runs the transforms in order and answers the output, its type in
/// `x-type` as `contentType()` said; an `ImagesError` is answered as JSON.
const WORKER: &str = r#"
import { env as moduleEnv } from "cloudflare:workers";
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("pong");
    if (url.pathname === "/env") {
      return Response.json({ has: "IMAGES" in moduleEnv, info: typeof moduleEnv.IMAGES?.info });
    }
    try {
      if (url.pathname === "/info") return Response.json(await env.IMAGES.info(request.body));
      let transformer = env.IMAGES.input(request.body);
      for (const step of JSON.parse(url.searchParams.get("t") ?? "[]")) {
        transformer = transformer.transform(step);
      }
      const result = await transformer.output({ format: url.searchParams.get("f"), quality: 80 });
      const response = result.response();
      return new Response(response.body, {
        headers: { "content-type": response.headers.get("content-type"), "x-type": result.contentType() },
      });
    } catch (error) {
      return Response.json({ message: String(error.message), code: error.code }, { status: 422 });
    }
  },
};
"#;

/// A `w`×`h` picture (a gradient, so the codecs have something to do).
fn picture(w: u32, h: u32, format: ImageFormat) -> Vec<u8> {
    let image = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image)
        .write_to(&mut out, format)
        .unwrap();
    out.into_inner()
}

/// CRC-32 (IEEE) of `bytes`, as a PNG chunk carries it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut hasher = flate2::Crc::new();
    hasher.update(bytes);
    hasher.sum()
}

/// A decompression bomb's header: a valid 1×1 PNG whose IHDR (checksum
/// made right) declares 50,000×50,000 pixels, 2.5 gigapixels.
fn bomb() -> Vec<u8> {
    let mut png = picture(1, 1, ImageFormat::Png);
    png[16..20].copy_from_slice(&50_000u32.to_be_bytes());
    png[20..24].copy_from_slice(&50_000u32.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    png
}

/// Status, headers and body bytes of `POST path` with `body`, `Host: host`.
async fn post(
    client: &HttpClient,
    port: u16,
    host: &str,
    path: &str,
    body: &[u8],
) -> (u16, http::HeaderMap, Bytes) {
    let request = http::Request::post(format!("http://127.0.0.1:{port}{path}"))
        .header(http::header::HOST, host)
        .body(Full::new(Bytes::copy_from_slice(body)))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    (
        parts.status.as_u16(),
        parts.headers,
        body.collect().await.unwrap().to_bytes(),
    )
}

fn json(body: &Bytes) -> serde_json::Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(body)))
}

/// What a transform's answer is, comparably: status, content type, the
/// type `contentType()` said, and the decoded output's dimensions.
fn outcome(reply: &(u16, http::HeaderMap, Bytes)) -> (u16, String, String, (u32, u32)) {
    let header = |name| peer::header(&reply.1, name).to_owned();
    assert_eq!(reply.0, 200, "{}", String::from_utf8_lossy(&reply.2));
    let decoded = image::load_from_memory(&reply.2).unwrap();
    let format = image::guess_format(&reply.2).unwrap();
    assert_eq!(
        format.to_mime_type(),
        header("content-type"),
        "the bytes are what the type says"
    );
    (
        reply.0,
        header("content-type"),
        header("x-type"),
        (decoded.width(), decoded.height()),
    )
}

/// A wrangler project of the Worker with `[images] binding = "IMAGES"`.
fn project(dir: &Path) {
    std::fs::write(dir.join("worker.js"), WORKER).unwrap();
    std::fs::write(
        dir.join("wrangler.toml"),
        "name = \"images\"\nmain = \"worker.js\"\ncompatibility_date = \"2025-06-01\"\n\n[images]\nbinding = \"IMAGES\"\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_answer_as_wrangler_dev_answers() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let client = client();
    let (ours, theirs) = (free_port().unwrap(), free_port().unwrap());
    let mut dev = Dev::start_in(&["--port", &ours.to_string()], Some(dir.path()));
    let _wrangler = wrangler_dev(dir.path(), theirs);
    when_ready(&client, &mut dev, ours, "localhost", "/ping").await;
    wrangler_ready(&client, dir.path(), theirs, "/ping").await;

    let env = (
        peer::get(&client, ours, "/env", &[]).await,
        peer::get(&client, theirs, "/env", &[]).await,
    );
    assert_eq!(env.0.2, env.1.2, "env of cloudflare:workers");
    assert_eq!(env.0.2, r#"{"has":true,"info":"function"}"#);
    let png = picture(64, 48, ImageFormat::Png);
    let jpeg = picture(64, 48, ImageFormat::Jpeg);
    for (what, input) in [("png", &png), ("jpeg", &jpeg)] {
        let a = post(&client, ours, "localhost", "/info", input).await;
        let b = post(&client, theirs, "localhost", "/info", input).await;
        assert_eq!((a.0, json(&a.2)), (b.0, json(&b.2)), "info of a {what}");
        assert_eq!(json(&a.2)["width"], 64, "{what}");
    }
    let cases = [
        (&png, r#"[{"width":32}]"#, "image/webp", (32, 24)),
        (&jpeg, r#"[{"rotate":90}]"#, "image/png", (48, 64)),
        (
            &png,
            r#"[{"width":20,"height":20,"fit":"cover"}]"#,
            "image/jpeg",
            (20, 20),
        ),
        (
            &png,
            r#"[{"width":32,"height":32,"fit":"contain"}]"#,
            "image/png",
            (32, 24),
        ),
        (&png, r#"[{"width":640}]"#, "image/png", (64, 48)),
        (
            &jpeg,
            r#"[{"rotate":270},{"width":24}]"#,
            "image/webp",
            (24, 32),
        ),
    ];
    for (input, steps, format, size) in cases {
        let path = format!("/t?f={format}&t={}", urlencode(steps));
        let a = outcome(&post(&client, ours, "localhost", &path, input).await);
        let b = outcome(&post(&client, theirs, "localhost", &path, input).await);
        assert_eq!(a, b, "{steps} as {format}");
        assert_eq!(a, (200, format.into(), format.into(), size), "{steps}");
    }
    // Garbage: both throw an error with a numeric code; ours is
    // Cloudflare's 9412 (wrangler's local binding answers 9523, its
    // sharp having thrown).
    let (status, _, body) = post(&client, ours, "localhost", "/info", b"not an image").await;
    let (their_status, _, their_body) =
        post(&client, theirs, "localhost", "/info", b"not an image").await;
    assert_eq!((status, their_status), (422, 422));
    assert!(json(&their_body)["code"].is_number(), "{their_body:?}");
    let ours = json(&body);
    assert_eq!(ours["code"], 9412, "{ours}");
    assert!(
        ours["message"]
            .as_str()
            .unwrap()
            .starts_with("IMAGES_INFO_ERROR 9412: ERROR: Bad input"),
        "{ours}"
    );
    assert!(dev.interrupt().success());
}

/// `s` with what a query value cannot hold escaped.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn worker_yaml(name: &str, host: &str, script: &str, extra: &str) -> String {
    let script: String = script.lines().map(|line| format!("    {line}\n")).collect();
    format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata:\n  name: {name}\nspec:\n  routes:\n    - host: {host}\n{extra}  script: |\n{script}---\n"
    )
}

/// How long the neighbour may take to answer: far less than an image
/// bomb's decoding on its thread would hold it, and room for a debug build
/// on a loaded machine (its answers take milliseconds when idle).
const NEIGHBOUR_BOUND: Duration = Duration::from_secs(5);

/// The neighbour answers within `bound`.
async fn neighbour_answers(client: &HttpClient, port: u16, bound: Duration) -> Duration {
    let started = Instant::now();
    let (status, body) = request(client, port, "n.test", "/").await.unwrap();
    let took = started.elapsed();
    assert_eq!((status, body.as_str()), (200, "benign"));
    assert!(took < bound, "the neighbour took {took:?}");
    took
}

/// `isolane dev` serving the images Worker as `host` with `limits` (YAML),
/// and a benign neighbour on `n.test` (one engine thread), the neighbour
/// answering.
async fn beside_a_neighbour(
    name: &str,
    host: &str,
    limits: &str,
) -> (Dev, HttpClient, u16, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let binding =
        format!("  bindings:\n    - name: IMAGES\n      images: {{}}\n  limits: {limits}\n");
    let yaml = [
        worker_yaml(name, host, WORKER, &binding),
        worker_yaml(
            "neighbour",
            "n.test",
            "export default { fetch() { return new Response('benign'); } };",
            "",
        ),
    ];
    std::fs::write(dir.path().join("workers.yaml"), yaml.concat()).unwrap();
    let client = client();
    let port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), port, &[]);
    when_ready(&client, &mut dev, port, "n.test", "/").await;
    neighbour_answers(&client, port, NEIGHBOUR_BOUND).await;
    (dev, client, port, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bombs_and_large_resizes_leave_the_neighbour_answering() {
    let (dev, client, port, _dir) =
        beside_a_neighbour("images", "i.test", "{memoryMiB: 128, wallMs: 30000}").await;
    let bound = NEIGHBOUR_BOUND;

    // The bomb: info reads its header as Cloudflare's does; a transform is
    // refused from that header, before a pixel is decoded.
    let bomb = bomb();
    let (status, _, body) = post(&client, port, "i.test", "/info", &bomb).await;
    assert_eq!(status, 200, "{body:?}");
    assert_eq!(json(&body)["width"], 50_000);
    let started = Instant::now();
    let path = "/t?f=image/png&t=%5B%7B%22width%22%3A10%7D%5D";
    let (status, _, body) = post(&client, port, "i.test", path, &bomb).await;
    let refused_in = started.elapsed();
    let answer = json(&body);
    assert_eq!((status, &answer["code"]), (422, &serde_json::json!(9413)));
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("IMAGES_TRANSFORM_ERROR 9413: ERROR: Image too large: 50000x50000"),
        "{answer}"
    );
    assert!(refused_in < bound, "{refused_in:?}");

    // Within the area limit but not the Worker's memory: refused, charged
    // nothing, and the Worker goes on.
    let steps = urlencode(r#"[{"width":12000,"height":8000,"fit":"squeeze"}]"#);
    let small = picture(64, 48, ImageFormat::Png);
    let path = format!("/t?f=image/png&t={steps}");
    let (status, _, body) = post(&client, port, "i.test", &path, &small).await;
    let answer = json(&body);
    assert_eq!((status, &answer["code"]), (422, &serde_json::json!(9523)));
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("more than the Worker's memory limit leaves"),
        "{answer}"
    );
    // Garbage.
    let (_, _, body) = post(&client, port, "i.test", path.as_str(), b"GIF89a?").await;
    assert_eq!(json(&body)["code"], 9412, "{body:?}");

    // A large resize (2000x2000 to 3000x3000, blurred) runs off the engine
    // thread: the neighbour answers while it is in flight.
    let large = picture(2000, 2000, ImageFormat::Png);
    let steps = urlencode(r#"[{"width":3000,"height":3000,"fit":"squeeze","blur":40}]"#);
    let path = format!("/t?f=image/png&t={steps}");
    let heavy = {
        let client = client.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let reply = post(&client, port, "i.test", &path, &large).await;
            (reply, started.elapsed())
        })
    };
    let mut during = Vec::new();
    while !heavy.is_finished() {
        during.push(neighbour_answers(&client, port, bound).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (reply, heavy_took) = heavy.await.unwrap();
    assert_eq!(
        outcome(&reply),
        (200, "image/png".into(), "image/png".into(), (3000, 3000))
    );
    assert!(
        during.len() >= 3,
        "the neighbour answered {} times in the {heavy_took:?} the resize took",
        during.len()
    );
    let slowest = during.iter().max().unwrap();
    eprintln!(
        "large resize: {heavy_took:?}; neighbour answered {} times during it, slowest {slowest:?}",
        during.len()
    );
    // Never held for a good part of the resize, however slow this run.
    assert!(
        *slowest * 2 < heavy_took,
        "the neighbour waited {slowest:?} of the resize's {heavy_took:?}"
    );
    neighbour_answers(&client, port, bound).await;
    assert!(dev.interrupt().success());
}

/// A transform's CPU time is the request's, as Web Crypto's offloaded work
/// is: a Worker whose `cpuMs` is less than a large resize costs ends as
/// `cpu_limit` when the time is charged, and answers again after; the
/// neighbour on the same thread answers before, during and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transform_past_the_worker_s_cpu_limit_ends_its_request() {
    let (dev, client, port, _dir) =
        beside_a_neighbour("greedy", "g.test", "{cpuMs: 100, wallMs: 30000}").await;
    let bound = NEIGHBOUR_BOUND;

    let large = picture(2000, 2000, ImageFormat::Png);
    let steps = urlencode(r#"[{"width":3000,"height":3000,"fit":"squeeze","blur":40}]"#);
    let path = format!("/t?f=image/png&t={steps}");
    let heavy = {
        let client = client.clone();
        tokio::spawn(async move { post(&client, port, "g.test", &path, &large).await })
    };
    let mut during = 0;
    while !heavy.is_finished() {
        neighbour_answers(&client, port, bound).await;
        during += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, _, body) = heavy.await.unwrap();
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("CPU time limit of 100 ms"), "{body}");
    assert!(during >= 1, "the neighbour was not asked during the resize");
    // The Worker answers again (a new isolate).
    assert_eq!(
        request(&client, port, "g.test", "/ping").await.unwrap(),
        (200, "pong".to_owned())
    );
    neighbour_answers(&client, port, bound).await;
    assert!(dev.interrupt().success());
}
