//! Measures what Web Crypto costs a worker per call: HMAC-SHA256 sign,
//! ECDSA P-256 verify, RS256 (RSASSA-PKCS1-v1_5 SHA-256, 2048-bit) verify and
//! sign, Ed25519 verify. Each figure is the wall time of a request doing `N`
//! calls minus that of one doing none, over `N` (best of several runs): the
//! engine's request overhead cancels out, the `await` per call stays in.
//!
//! ```text
//! source ../shared/v8/env.sh   # offline V8
//! cargo run --release -p isolane-engine --example crypto_cost
//! ```
#![allow(clippy::unwrap_used)]

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

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let engine = Engine::start(
            EngineConfig {
                threads: 1,
                pin_threads: false,
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
        for (op, n) in [
            ("hmac", 20_000),
            ("ecdsa", 1_000),
            ("rs256", 2_000),
            ("rs256sign", 100),
            ("ed25519", 2_000),
        ] {
            call(&engine, &bundle, op, 10).await;
            let mut best = f64::MAX;
            for _ in 0..5 {
                let base = call(&engine, &bundle, op, 0).await;
                let loaded = call(&engine, &bundle, op, n).await;
                let per_call = loaded.saturating_sub(base).as_secs_f64() * 1e6 / f64::from(n);
                best = best.min(per_call);
            }
            println!("{op:<10} {best:>9.2} µs per call (best of 5 × {n} calls)");
        }
    });
}
