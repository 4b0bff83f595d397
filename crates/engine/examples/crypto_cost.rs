//! Measures what Web Crypto costs a worker per call: HMAC-SHA256 sign,
//! ECDSA P-256 verify, RS256 (RSASSA-PKCS1-v1_5 SHA-256, 2048-bit) verify and
//! sign, Ed25519 verify, RSA-2048 key generation (whose cost varies from one
//! key to the next: the best of 5 means of 20). Each figure is the wall time of a request doing `N`
//! calls minus that of one doing none, over `N` (best of several runs): the
//! engine's request overhead cancels out, the `await` per call stays in.
//!
//! With `--workerd BIN` the same worker also runs in `workerd serve` (the
//! npm `workerd` package's binary, as `bench/run.sh` installs it) and is
//! measured the same way over HTTP on 127.0.0.1, in the same run.
//!
//! ```text
//! source ../shared/v8/env.sh   # offline V8
//! cargo run --release -p isolane-engine --example crypto_cost [-- --workerd BIN]
//! ```
#![allow(clippy::unwrap_used)]

#[path = "support/workerd.rs"]
mod workerd;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use isolane_engine::{Body, Engine, EngineConfig, Limits, WorkerBundle};

const WORKER: &str = r#"
const S = crypto.subtle;
const data = new TextEncoder().encode('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwiaWF0IjoxNTE2MjM5MDIyfQ');
let ready;
async function setup() {
  const hmac = await S.importKey('raw', new Uint8Array(32).fill(7), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const ec = await S.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  const ecSig = await S.sign({ name: 'ECDSA', hash: 'SHA-256' }, ec.privateKey, data);
  const rsa = await S.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048,
    publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, false, ['sign', 'verify']);
  const rsaSig = await S.sign('RSASSA-PKCS1-v1_5', rsa.privateKey, data);
  const ed = await S.generateKey('Ed25519', false, ['sign', 'verify']);
  const edSig = await S.sign('Ed25519', ed.privateKey, data);
  return {
    hmac: () => S.sign('HMAC', hmac, data),
    ecdsa: () => S.verify({ name: 'ECDSA', hash: 'SHA-256' }, ec.publicKey, ecSig, data),
    rs256: () => S.verify('RSASSA-PKCS1-v1_5', rsa.publicKey, rsaSig, data),
    rs256sign: () => S.sign('RSASSA-PKCS1-v1_5', rsa.privateKey, data),
    ed25519: () => S.verify('Ed25519', ed.publicKey, edSig, data),
    rsagen: () => S.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, false, ['sign', 'verify']),
  };
}
export default { async fetch(request) {
  ready ??= setup();
  const ops = await ready;
  const url = new URL(request.url);
  const op = ops[url.searchParams.get('op')];
  const n = Number(url.searchParams.get('n'));
  for (let i = 0; i < n; i++) await op();
  return new Response('ok');
} };
"#;

async fn call(engine: &Engine, bundle: &Arc<WorkerBundle>, op: &str, n: u32) -> Duration {
    let request = http::Request::builder()
        .uri(format!("http://bench.test/?op={op}&n={n}"))
        .body(Body::empty())
        .unwrap();
    let started = Instant::now();
    let response = engine.execute(0, bundle.clone(), request).await.unwrap();
    assert_eq!(response.status(), 200);
    let _ = response.into_body().collect().await.unwrap();
    started.elapsed()
}

/// The calls measured and how many of each per request.
const OPS: [(&str, u32); 6] = [
    ("hmac", 20_000),
    ("ecdsa", 1_000),
    ("rs256", 2_000),
    ("rs256sign", 100),
    ("ed25519", 2_000),
    ("rsagen", 20),
];

/// Best of 5 of (time of `n` calls − time of none) / `n`, in µs.
async fn per_call<F, Fut>(mut call: F, n: u32) -> f64
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    call(10).await;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let base = call(0).await;
        let loaded = call(n).await;
        best = best.min(loaded.saturating_sub(base).as_secs_f64() * 1e6 / f64::from(n));
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workerd = args
        .iter()
        .position(|a| a == "--workerd")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let isolane = runtime.block_on(async {
        let engine = Engine::start(
            EngineConfig {
                families: isolane_runtime::families(),
                threads: 1,
                pin_threads: false,
                // 20 RSA key generations can take more than the default cap.
                max_cpu_ms: 0,
                ..EngineConfig::default()
            },
            Arc::new(isolane_engine::NoopObserver),
        )
        .unwrap();
        let mut bundle = WorkerBundle::new("bench/crypto", "r1", WORKER);
        bundle.limits = Limits {
            cpu_ms: 600_000,
            wall_ms: 600_000,
            ..Limits::default()
        };
        let bundle = Arc::new(bundle);
        let mut results = Vec::new();
        for (op, n) in OPS {
            results.push(per_call(|n| call(&engine, &bundle, op, n), n).await);
        }
        results
    });
    let theirs = workerd.map(|bin| {
        let server = workerd::Workerd::start(&bin, WORKER, "/?op=hmac&n=1");
        let mut results = Vec::new();
        for (op, n) in OPS {
            let server = &server;
            let call = move |n| async move {
                let started = Instant::now();
                server
                    .request("GET", &format!("/?op={op}&n={n}"), "")
                    .unwrap();
                started.elapsed()
            };
            results.push(runtime.block_on(per_call(call, n)));
        }
        results
    });
    println!("{:<10} {:>12} {:>12}", "call", "isolane µs", "workerd µs");
    for (i, (op, _)) in OPS.iter().enumerate() {
        let other = theirs
            .as_ref()
            .and_then(|r| r.get(i))
            .map_or("-".to_owned(), |v| format!("{v:.2}"));
        println!("{op:<10} {:>12.2} {other:>12}", isolane[i]);
    }
}
