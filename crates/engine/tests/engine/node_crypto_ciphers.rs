//! `node:crypto`'s ciphers against Node's own answers: every cipher on fixed
//! keys and IVs, streamed in uneven pieces, and the errors of misuse
//! (`node_cipher_cases.mjs`, which the Worker runs; what Node 20 answered for
//! it is `node_cipher_vectors.json`, written by `node_cipher_vectors.mjs`);
//! a Worker ciphering without end meets its CPU limit while a neighbour on
//! the same thread answers.

use std::sync::Arc;

use isolane_engine::{ExecuteError, NodeCompat, PoolMode};

use crate::node_buffer::{answer, node_worker};
use crate::node_crypto::{assert_answers_as_node, attack_beside, each_ends_at_the_cpu_limit};
use crate::support::*;

/// Node's answers (see the module docs).
const VECTORS: &str = include_str!("node_cipher_vectors.json");

async fn run_cases() -> serde_json::Value {
    let cases = include_str!("node_cipher_cases.mjs")
        .replace("export async function", "async function")
        .replace("export function", "function");
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Buffer } from 'node:buffer'; import { Readable } from 'node:stream';",
        &format!("{cases}\nreturn JSON.stringify({{ cases: cipherCases(crypto, Buffer), streams: await cipherStreams(crypto, Buffer, Readable) }});"),
    )
    .await;
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[tokio::test]
async fn ciphers_answer_as_in_node() {
    let ours = run_cases().await;
    let node: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
    assert_answers_as_node(&ours["cases"], &node["cases"]);
    assert_eq!(ours["streams"], node["streams"]);
}

/// A Worker ciphering without end (a loop of updates, one huge update, new
/// contexts in a loop, CCM messages at their 1 MiB bound) is stopped at its CPU limit; a benign Worker on the
/// same thread answers before, while the attack runs and after.
#[tokio::test]
async fn endless_ciphering_ends_at_the_cpu_limit() {
    each_ends_at_the_cpu_limit(
        "cipher",
        "const key = new Uint8Array(32), iv = new Uint8Array(16);",
        &[
            "const c = crypto.createCipheriv('aes-256-gcm', key, iv.subarray(0, 12)); const chunk = new Uint8Array(1 << 20); for (;;) c.update(chunk);",
            "crypto.createCipheriv('des-ede3-cbc', key.subarray(0, 24), iv.subarray(0, 8)).update(new Uint8Array(1 << 28));",
            "for (;;) crypto.createDecipheriv('aes-128-cbc', key.subarray(0, 16), iv).update(new Uint8Array(4096));",
            "for (;;) { const c = crypto.createCipheriv('aes-256-ccm', key, iv.subarray(0, 12), { authTagLength: 16 }); c.update(new Uint8Array(1 << 20)); c.final(); }",
        ],
    )
    .await;
}

/// Cipher contexts kept without end are charged to the Worker: it meets its
/// memory limit, and the neighbour answers throughout.
#[tokio::test]
async fn kept_cipher_contexts_end_at_the_memory_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let script = "import crypto from 'node:crypto';\nconst kept = [], key = new Uint8Array(32), iv = new Uint8Array(12);\n\
        export default { fetch() { for (;;) kept.push(crypto.createCipheriv('aes-256-gcm', key, iv)); } };";
    let mut hostile = (*node_worker("t/cipher-memory", script, NodeCompat::V1)).clone();
    hostile.limits = memory_limits(32);
    let error = attack_beside(&engine, &neighbour, hostile).await;
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 32 }),
        "{error:?}"
    );
}
