//! Tokens minted by one runtime and verified by the other: the same worker
//! (WebCrypto only, fixed published keys) mints HS256, RS256, PS256, ES256
//! and EdDSA tokens in Isolane and, with `--workerd BIN`, in `workerd serve`;
//! each runtime verifies the other's tokens and rejects them once altered.
//! HS256, RS256 and EdDSA signatures are deterministic, so those tokens must
//! also be byte-identical. Exits 1 on any difference.
//!
//! ```text
//! cargo run --release -p isolane-engine --example webcrypto_interop [-- --workerd BIN]
//! ```
#![allow(clippy::unwrap_used)]

#[path = "support/workerd.rs"]
mod workerd;

use std::collections::BTreeMap;
use std::sync::Arc;

use http_body_util::BodyExt;
use isolane_engine::{Body, Engine, EngineConfig, WorkerBundle};

const WORKER: &str = r#"// GET /mint: one compact JWS per algorithm, signed with fixed keys (RFC 7515
// A.2's RSA key, A.3's P-256 key, RFC 8032 TEST 1's Ed25519 key, an HS256
// secret). POST /verify with such a JSON map: whether each verifies. WebCrypto only.
const S = crypto.subtle;
const enc = (s) => new TextEncoder().encode(s);
const b64u = (u8) => btoa(String.fromCharCode(...new Uint8Array(u8))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const unb64u = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
const unhex = (h) => new Uint8Array(h.match(/../g).map((x) => parseInt(x, 16)));
const RSA = { kty: 'RSA',
  n: 'ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ',
  e: 'AQAB',
  d: 'Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97IjlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-pWJ1O0BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2QvXt4ehNYTCBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLhBOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuOopznQ',
  p: '4BzEEOtIpmVdVEZNCqS7baC4crd0pqnRH_5IB3jw3bcxGn6QLvnEtfdUdiYrqBdss1l58BQ3KhooKeQTa9AB0Hw_Py5PJdTJNPY8cQn7ouZ2KKDcmnPGBY5t7yLc1QlQ5xHdwW1VhvKn-nXqhJTBgIPgtldC-KDV5z-y2XDwGUc',
  q: 'uQPEfgmVtjL0Uyyx88GZFF1fOunH3-7cepKmtH4pxhtCoHqpWmT8YAmZxaewHgHAjLYsp1ZSe7zFYHj7C6ul7TjeLQeZD_YwD66t62wDmpe_HlB-TnBA-njbglfIsRLtXlnDzQkv5dTltRJ11BKBBypeeF6689rjcJIDEz9RWdc',
  dp: 'BwKfV3Akq5_MFZDFZCnW-wzl-CCo83WoZvnLQwCTeDv8uzluRSnm71I3QCLdhrqE2e9YkxvuxdBfpT_PI7Yz-FOKnu1R6HsJeDCjn12Sk3vmAktV2zb34MCdy7cpdTh_YVr7tss2u6vneTwrA86rZtu5Mbr1C1XsmvkxHQAdYo0',
  dq: 'h_96-mK1R_7glhsum81dZxjTnYynPbZpHziZjeeHcXYsXaaMwkOlODsWa7I9xXDoRwbKgB719rrmI2oKr6N3Do9U0ajaHF-NKJnwgjMd2w9cjz3_-kyNlxAr2v4IKhGNpmM5iIgOS1VZnOZ68m6_pbLBSp3nssTdlqvd0tIiTHU',
  qi: 'IYd7DHOhrWvxkwPQsRM2tOgrjbcrfvtQJipd-DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd_QJQ3ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW0ITrJReOgo1cq9SbsxYawBgfp_gh6A5603k2-ZQwVK0JKSHuLFkuQ3U' };
const EC = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', d: 'jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI' };
const ED = { kty: 'OKP', crv: 'Ed25519', d: b64u(unhex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60')), x: b64u(unhex('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a')) };
const pub = (jwk) => { const { d, p, q, dp, dq, qi, ...rest } = jwk; return rest; };
const ALGS = {
  HS256: { imp: { name: 'HMAC', hash: 'SHA-256' }, op: 'HMAC', priv: { kty: 'oct', k: b64u(enc('a shared secret, 32 bytes long!!')) } },
  RS256: { imp: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, op: 'RSASSA-PKCS1-v1_5', priv: RSA },
  PS256: { imp: { name: 'RSA-PSS', hash: 'SHA-256' }, op: { name: 'RSA-PSS', saltLength: 32 }, priv: RSA },
  ES256: { imp: { name: 'ECDSA', namedCurve: 'P-256' }, op: { name: 'ECDSA', hash: 'SHA-256' }, priv: EC },
  EdDSA: { imp: 'Ed25519', op: 'Ed25519', priv: ED },
};
export default { async fetch(request) {
  const url = new URL(request.url);
  const out = {};
  const tokens = url.pathname === '/mint' ? null : JSON.parse(await request.text());
  for (const [alg, a] of Object.entries(ALGS)) {
    if (url.pathname === '/mint') {
      const key = await S.importKey('jwk', a.priv, a.imp, false, ['sign']);
      const si = b64u(enc(JSON.stringify({ alg, typ: 'JWT' }))) + '.' + b64u(enc(JSON.stringify({ sub: 'x', alg })));
      out[alg] = si + '.' + b64u(await S.sign(a.op, key, enc(si)));
    } else {
      const key = await S.importKey('jwk', alg === 'HS256' ? a.priv : pub(a.priv), a.imp, false, ['verify']);
      const [h, p, s] = tokens[alg].split('.');
      out[alg] = await S.verify(a.op, key, unb64u(s), enc(h + '.' + p));
    }
  }
  return Response.json(out);
} };
"#;

type Tokens = BTreeMap<String, String>;
type Verdicts = BTreeMap<String, bool>;

async fn isolane(engine: &Engine, bundle: &Arc<WorkerBundle>, path: &str, body: String) -> String {
    let request = http::Request::builder()
        .method(if body.is_empty() { "GET" } else { "POST" })
        .uri(format!("http://interop.test{path}"))
        .body(Body::from(body))
        .unwrap();
    let response = engine.execute(0, bundle.clone(), request).await.unwrap();
    assert_eq!(response.status(), 200);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// The tokens with one signature character changed.
fn altered(tokens: &Tokens) -> String {
    let changed: Tokens = tokens
        .iter()
        .map(|(alg, t)| {
            let mut chars: Vec<char> = t.chars().collect();
            let at = chars.len() - 2;
            chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
            (alg.clone(), chars.into_iter().collect())
        })
        .collect();
    serde_json::to_string(&changed).unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workerd_bin = args
        .iter()
        .position(|a| a == "--workerd")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = runtime.block_on(async {
        Engine::start(
            EngineConfig {
                families: isolane_runtime::families(),
                threads: 1,
                pin_threads: false,
                ..EngineConfig::default()
            },
            Arc::new(isolane_engine::NoopObserver),
        )
        .unwrap()
    });
    let bundle = Arc::new(WorkerBundle::new("interop/jwt", "r1", WORKER));
    let ours: Tokens =
        serde_json::from_str(&runtime.block_on(isolane(&engine, &bundle, "/mint", String::new())))
            .unwrap();
    let mut ok = true;
    let mut report = |what: &str, verdicts: &Verdicts, want: bool| {
        let good = verdicts.values().all(|v| *v == want) && verdicts.len() == ours.len();
        ok &= good;
        println!(
            "{:<48} {} {verdicts:?}",
            what,
            if good { "ok  " } else { "FAIL" }
        );
    };
    let own: Verdicts = serde_json::from_str(&runtime.block_on(isolane(
        &engine,
        &bundle,
        "/verify",
        serde_json::to_string(&ours).unwrap(),
    )))
    .unwrap();
    report("Isolane verifies its own tokens", &own, true);
    if let Some(bin) = workerd_bin {
        let server = workerd::Workerd::start(&bin, WORKER, "/mint");
        let theirs: Tokens =
            serde_json::from_str(&server.request("GET", "/mint", "").unwrap()).unwrap();
        let verify_theirs = |body: String| -> Verdicts {
            serde_json::from_str(&runtime.block_on(isolane(&engine, &bundle, "/verify", body)))
                .unwrap()
        };
        let verify_ours = |body: String| -> Verdicts {
            serde_json::from_str(&server.request("POST", "/verify", &body).unwrap()).unwrap()
        };
        report(
            "Isolane verifies workerd's tokens",
            &verify_theirs(serde_json::to_string(&theirs).unwrap()),
            true,
        );
        report(
            "Isolane rejects workerd's tokens, altered",
            &verify_theirs(altered(&theirs)),
            false,
        );
        report(
            "workerd verifies Isolane's tokens",
            &verify_ours(serde_json::to_string(&ours).unwrap()),
            true,
        );
        report(
            "workerd rejects Isolane's tokens, altered",
            &verify_ours(altered(&ours)),
            false,
        );
        for alg in ["HS256", "RS256", "EdDSA"] {
            let same = ours.get(alg) == theirs.get(alg);
            ok &= same;
            println!(
                "{:<48} {}",
                format!("{alg} token byte-identical in both"),
                if same { "ok" } else { "FAIL" }
            );
        }
    }
    if !ok {
        std::process::exit(1);
    }
}
