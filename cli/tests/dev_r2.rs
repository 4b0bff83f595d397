//! R2 through `isolane dev` as a user runs it (issue 58): the real binary,
//! real HTTP, one engine thread, objects on local disk under `--state`.
//!
//! - `compat/apps/r2` (every bucket method, option and error) is served by
//!   `isolane dev` and by `wrangler dev` (miniflare's local R2 on workerd,
//!   in a fresh `--persist-to`) in the same run and the answers compared.
//!   Normalized before comparing: `uploaded` and `version` (a time and a
//!   random id), `uploadId` and a part's `etag` (random ids). Set apart:
//!   `storageClass`, which Isolane answers `Standard` (as R2 does) and
//!   miniflare leaves empty.
//! - What a request wrote is there after `isolane dev` is killed with
//!   SIGKILL and started again on the same state folder.
//! - A 256 MiB object a Worker makes as a stream goes into the bucket and
//!   streams back down, the dev process's peak resident memory far below
//!   its size.
//! - Two namespaces' buckets of the same name are apart; a Worker that
//!   hoards objects in memory ends at its memory limit and one that
//!   uploads parts without end at its wall-time limit, while a neighbour
//!   Worker on the same thread answers before, during and after.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

#[path = "support/peer.rs"]
mod peer;
#[path = "support/dev.rs"]
mod support;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use nix::sys::signal::Signal;
use serde_json::Value;
use support::{HttpClient, client, free_port, request, when_ready};

/// `value` with the fields named in the module's doc set to null (a part's
/// `etag` is one beside a `partNumber`).
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let part = map.contains_key("partNumber");
            Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let random = ["uploaded", "version", "uploadId"].contains(&k.as_str())
                            || (part && k == "etag");
                        let v = if random {
                            Value::Null
                        } else if k == "storageClass" && v == "" {
                            Value::from("Standard")
                        } else {
                            normalized(v)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn dev_r2_answers_as_wrangler_dev_does_and_keeps_objects_across_a_kill() {
    let app = support::repo().join("compat/apps/r2");
    let state = tempfile::tempdir().unwrap();
    let client = client();
    let port = free_port().unwrap();
    let mut dev = peer::dev_with_node(&app, port, state.path());
    let wrangler = free_port().unwrap();
    let _wrangler = peer::wrangler_dev_persisting(&app, wrangler, &state.path().join("wrangler"));
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    peer::wrangler_ready(&client, &app, wrangler, "/").await;

    let ours = normalized(&peer::json(&client, port, "/probe").await);
    let theirs = normalized(&peer::json(&client, wrangler, "/probe").await);
    let mut differ = Vec::new();
    for (key, value) in theirs.as_object().unwrap() {
        if &ours[key] != value {
            differ.push(format!(
                "{key}:\n  isolane: {}\n  wrangler: {value}",
                ours[key]
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert_eq!(ours, theirs);
    // A few answers spelled out, so that the comparison is not of nothing.
    assert_eq!(ours["text"], "hello world");
    assert_eq!(ours["range_offsetLength"]["text"], "ell");
    assert_eq!(ours["put"]["etag"], "5eb63bbbe01eeed093cb22bb8f5acdc3");
    assert_eq!(ours["putOnlyIfFails"], Value::Null);
    assert_eq!(ours["multipart"]["size"], 5 * 1024 * 1024 + 7);
    assert!(
        ours["md5Bad"]["error"]
            .as_str()
            .unwrap()
            .starts_with("Error: put: The MD5 checksum you specified did not match"),
        "{}",
        ours["md5Bad"]
    );

    // Objects outlive a SIGKILL.
    let put = "/put-text?k=kept&v=still-here";
    assert_eq!(
        request(&client, port, "localhost", put).await.unwrap().1,
        "ok"
    );
    dev.process.signal(Signal::SIGKILL).unwrap();
    dev.process.wait_exit(support::DEADLINE).unwrap();
    let mut dev = peer::dev_with_node(&app, port, state.path());
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    let kept = request(&client, port, "localhost", "/get-text?k=kept").await;
    assert_eq!(kept.unwrap().1, "still-here");
    assert!(dev.interrupt().success());
}

/// Sends `body` to `path` and reads the answer.
async fn put(client: &HttpClient, port: u16, path: &str, body: Bytes) -> (u16, String) {
    let request = http::Request::put(format!("http://127.0.0.1:{port}{path}"))
        .header(http::header::HOST, "localhost")
        .body(Full::new(body))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn dev_r2_streams_a_256_mib_object_both_ways_in_bounded_memory() {
    const SIZE: usize = 256 << 20;
    let app = support::repo().join("compat/apps/r2");
    let state = tempfile::tempdir().unwrap();
    let client = client();
    let port = free_port().unwrap();
    let mut dev = peer::dev_with_node(&app, port, state.path());
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    // Warm: the isolate and its first object.
    let (status, _) = put(&client, port, "/put?k=small", Bytes::from_static(b"x")).await;
    assert_eq!(status, 200);
    let before = dev.process.peak_rss_kib().unwrap();

    // Made by the Worker as a stream (`isolane dev` takes request bodies
    // up to 100 MB, as Cloudflare's free plan).
    let body: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    let md5 = hex::encode(<md5::Md5 as md5::Digest>::digest(&body));
    drop(body);
    let (status, answer) = request(&client, port, "localhost", "/generate?k=big&mib=256")
        .await
        .unwrap();
    assert_eq!(status, 200, "{answer}");
    let stored: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(stored["size"], SIZE);
    assert_eq!(stored["etag"], md5);
    let after_put = dev.process.peak_rss_kib().unwrap();

    let request = http::Request::get(format!("http://127.0.0.1:{port}/get?k=big"))
        .header(http::header::HOST, "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut hasher = <md5::Md5 as md5::Digest>::new();
    let mut got = 0usize;
    let mut index = 0usize;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            for (offset, b) in data.iter().enumerate() {
                assert_eq!(
                    *b,
                    ((index + offset) % 251) as u8,
                    "byte {}",
                    index + offset
                );
            }
            index += data.len();
            got += data.len();
            md5::Digest::update(&mut hasher, &data);
        }
    }
    assert_eq!(got, SIZE);
    assert_eq!(hex::encode(md5::Digest::finalize(hasher)), md5);
    let after_get = dev.process.peak_rss_kib().unwrap();
    eprintln!(
        "256 MiB up and down: dev's peak RSS {} MiB before, {} MiB after the put, {} MiB after the get",
        before >> 10,
        after_put >> 10,
        after_get >> 10
    );
    // Far below the object: a whole copy anywhere would add 256 MiB.
    assert!(
        after_get.saturating_sub(before) < 64 << 10,
        "{before} → {after_get} KiB"
    );
    assert!(dev.interrupt().success());
}

/// A Worker of a namespace on bucket `probe`: `/put`, `/get`, `/hoard`
/// (keeps reading an object into memory) and `/parts` (uploads parts
/// without end); errors answered as `caught …`.
const APP: &str = r#"export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const k = url.searchParams.get('k');
    try {
      switch (url.pathname) {
        case '/put':
          await env.B.put(k, url.searchParams.get('v'));
          return new Response('ok');
        case '/get': {
          const o = await env.B.get(k);
          return new Response(o === null ? 'none' : await o.text());
        }
        case '/seed':
          await env.B.put('big', new Uint8Array(4 << 20));
          return new Response('ok');
        case '/hoard': {
          const kept = [];
          for (;;) kept.push(await (await env.B.get('big')).arrayBuffer());
        }
        case '/parts': {
          const up = await env.B.createMultipartUpload('endless');
          for (let n = 1; ; n++) await up.uploadPart(n, 'x');
        }
      }
    } catch (e) {
      return new Response(`caught ${e.message}`);
    }
    return new Response('?');
  }
};
"#;

/// The hostile `path` on `a.test`, with the neighbour asked before, during
/// and after it; the hostile answer.
async fn beside_the_neighbour(client: &HttpClient, port: u16, path: &'static str) -> (u16, String) {
    let ok = (200, "neighbour ok".to_owned());
    let ask = |host: &'static str, path: &'static str| request(client, port, host, path);
    assert_eq!(ask("neighbour.test", "/").await.unwrap(), ok);
    let (hostile, during) = tokio::join!(ask("a.test", path), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let asked = std::time::Instant::now();
        (ask("neighbour.test", "/").await.unwrap(), asked.elapsed())
    });
    assert_eq!(during.0, ok);
    assert!(during.1 < Duration::from_secs(5), "{:?}", during.1);
    assert_eq!(ask("neighbour.test", "/").await.unwrap(), ok);
    let hostile = hostile.unwrap();
    eprintln!(
        "{path}: {hostile:?}; the neighbour asked during it answered in {:?}",
        during.1
    );
    hostile
}

#[tokio::test]
async fn dev_r2_namespaces_are_apart_and_hostile_workers_end_at_their_limits() {
    let spec = |host: &str| {
        format!(
            "  routes: [{{ host: {host} }}]\n  limits: {{ memoryMiB: 64, wallMs: 3000 }}\n  bindings: [{{ name: B, r2Bucket: {{ bucket: probe }} }}]\n"
        )
    };
    let client = client();
    let (_dir, dev, port) = support::two_teams_and_a_neighbour(&client, spec, APP).await;
    let ask = |host: &'static str, path: &'static str| request(&client, port, host, path);

    // The same bucket name, two namespaces: two buckets.
    assert_eq!(
        ask("a.test", "/put?k=x&v=from-a").await.unwrap(),
        (200, "ok".into())
    );
    assert_eq!(ask("b.test", "/get?k=x").await.unwrap().1, "none");
    assert_eq!(
        ask("b.test", "/put?k=x&v=from-b").await.unwrap(),
        (200, "ok".into())
    );
    assert_eq!(ask("a.test", "/get?k=x").await.unwrap().1, "from-a");
    assert_eq!(ask("b.test", "/get?k=x").await.unwrap().1, "from-b");

    assert_eq!(ask("a.test", "/seed").await.unwrap(), (200, "ok".into()));
    let (status, body) = beside_the_neighbour(&client, port, "/hoard").await;
    assert!(status >= 500, "{status} {body}");
    assert!(body.to_lowercase().contains("memory"), "{body}");
    let (status, body) = beside_the_neighbour(&client, port, "/parts").await;
    assert_eq!(status, 504, "{body}");
    // The bucket serves on, its objects whole.
    assert_eq!(ask("a.test", "/get?k=x").await.unwrap().1, "from-a");
    assert!(dev.interrupt().success());
}
