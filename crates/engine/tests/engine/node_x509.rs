//! `node:crypto`'s X509Certificate against Node's own answers for the same
//! certificates (`node_x509_vectors.json`, written by
//! `node_x509_vectors.mjs`: certificates the `openssl` command made, and
//! what Node 20's X509Certificate printed for them, by
//! `node_x509_describe.mjs`, which the Worker runs too); a hostile Worker
//! keeping certificates without end meets its memory limit, and one parsing
//! without end its CPU limit, while a neighbour on the same thread answers.

use std::sync::Arc;

use isolane_engine::{ExecuteError, Limits, NodeCompat, PoolMode};

use crate::node_buffer::{answer, node_worker};
use crate::node_crypto::attack_beside;
use crate::support::*;

/// Node's certificates and answers (see the module docs).
const VECTORS: &str = include_str!("node_x509_vectors.json");

/// What the vectors' `expected` holds (`node_x509_describe.mjs`, the same
/// function Node ran), computed in a Worker, as JSON.
fn describe() -> String {
    let function = include_str!("node_x509_describe.mjs").replace("export function", "function");
    format!("{function}\nreturn JSON.stringify(describeAll(crypto, Buffer, V));")
}

async fn run_x509(body: &str) -> String {
    let imports = format!(
        "import crypto from 'node:crypto'; import {{ Buffer }} from 'node:buffer';\nconst V = {VECTORS};"
    );
    answer(NodeCompat::V1, &imports, body).await
}

#[tokio::test]
async fn certificates_read_as_node_reads_them() {
    let out = run_x509(&describe()).await;
    let ours: serde_json::Value = serde_json::from_str(&out).unwrap();
    let vectors: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
    let node = &vectors["expected"];
    for key in node.as_object().unwrap().keys() {
        assert_eq!(ours[key], node[key], "{key}");
    }
    assert_eq!(&ours, node);
}

#[tokio::test]
async fn bad_certificates_and_arguments_throw_as_in_node() {
    let out = run_x509(
        r#"
        const r = [];
        const tryIt = (f) => { try { return String(f()); } catch (e) { return `${e.name}:${e.code ?? ''}`; } };
        r.push(tryIt(() => new crypto.X509Certificate('not a cert')));
        r.push(tryIt(() => new crypto.X509Certificate(Buffer.from([0x30, 0x03, 0x02, 0x01, 0x01]))));
        r.push(tryIt(() => new crypto.X509Certificate(42)));
        r.push(tryIt(() => new crypto.X509Certificate(Buffer.alloc(300 * 1024, 0x30))));
        const leaf = new crypto.X509Certificate(V.leaf);
        r.push(tryIt(() => leaf.checkIP('not an ip')));
        r.push(tryIt(() => leaf.checkHost(1)));
        r.push(tryIt(() => leaf.checkHost('a', { subject: 'sometimes' })));
        r.push(tryIt(() => leaf.verify(crypto.createPrivateKey(V.caKey))));
        r.push(tryIt(() => leaf.checkIssued({})));
        r.push(leaf.issuerCertificate, leaf.validToDate.toISOString() === new Date(leaf.validTo).toISOString());
        r.push(new crypto.X509Certificate(leaf.raw).fingerprint256 === leaf.fingerprint256);
        r.push(new crypto.X509Certificate(V.leaf + V.ca).subject === leaf.subject);
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "Error: Error: TypeError:ERR_INVALID_ARG_TYPE Error: TypeError:ERR_INVALID_ARG_VALUE \
         TypeError:ERR_INVALID_ARG_TYPE TypeError:ERR_INVALID_ARG_VALUE TypeError:ERR_INVALID_ARG_VALUE \
         TypeError:ERR_INVALID_ARG_TYPE  true true true"
    );
}

/// A Worker that keeps certificates of a thousand names (each holds its
/// DER and its signed part, about 52 KiB, in buffers the host made and
/// charged to its memory) ends at its memory limit, and one parsing without end at its
/// CPU limit; a neighbour on the same thread answers before, during and
/// after each.
#[tokio::test]
async fn hostile_certificate_loops_end_at_their_limits() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let keeping = format!(
        "import crypto from 'node:crypto'; import {{ Buffer }} from 'node:buffer';\nconst V = {VECTORS};\nconst kept = [];\nconst big = Buffer.from(V.big);\nexport default {{ fetch() {{ for (;;) kept.push(new crypto.X509Certificate(big)); }} }};"
    );
    let mut hostile = (*node_worker("t/x509-keep", &keeping, NodeCompat::V1)).clone();
    // 16 MiB, reached after ~300 certificates: in a debug build each parse
    // of the thousand-name certificate takes ~8 ms, and 32 MiB took ~5 s,
    // the engine's most CPU a request may have (a fresh-clone CI run met
    // that limit first).
    hostile.limits = memory_limits(16);
    let started = std::time::Instant::now();
    let error = attack_beside(&engine, &neighbour, hostile).await;
    println!("x509-keep ended after {:?}", started.elapsed());
    assert!(
        matches!(error, ExecuteError::MemoryLimit { .. }),
        "{error:?}"
    );

    let parsing = format!(
        "import crypto from 'node:crypto';\nconst V = {VECTORS};\nexport default {{ fetch() {{ for (;;) new crypto.X509Certificate(V.leaf).checkHost('x.api.example.com'); }} }};"
    );
    let mut hostile = (*node_worker("t/x509-parse", &parsing, NodeCompat::V1)).clone();
    hostile.limits = Limits {
        cpu_ms: 200,
        ..memory_limits(128)
    };
    let error = attack_beside(&engine, &neighbour, hostile).await;
    assert!(
        matches!(error, ExecuteError::CpuLimit { limit_ms: 200 }),
        "{error:?}"
    );
}
