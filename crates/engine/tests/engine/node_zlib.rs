//! `node:zlib`'s brotli, `crc32` and `level`: answers compared with what
//! Node 20 prints for the same code (Node's brotli output decompressed here,
//! ours decompressed by `node`); a brotli bomb ends at the memory limit and
//! endless brotli compression at the CPU limit.

use std::sync::Arc;

use isolane_engine::{ExecuteError, NodeCompat, PoolMode};

use crate::node_buffer::{answer, node_worker};
use crate::node_crypto::attack_beside;
use crate::support::*;

/// 256 MiB of zeros, brotli-compressed by Node (421 bytes).
const BOMB: &str = "y///P/gnAOKxQCD3/o///3/wTwDEYRGA7v0f////4J8AiMMCAN37P/7//8E/ARCHBQC693/8//+DfwIgDgsAdO//+P//B/8EQBwWAOje//H//w/+CYA4LADQvf/j//8f/BMAcVgAoHv/x///P/gnAOKwAED3/o///3/wTwDEYQGA7v0f////4J8AiMMCAN37P/7//8E/ARCHBQC693/8//+DfwIgDgsAdO//+P//B/8EQBwWAOje//H//w/+CYA4LADQvf/j//8f/BMAcVgAoHv/x///P/gnAOKwAED3/o///3/wTwDEYQGA7v0f////4J8AiMMCAN37P/7//8E/ARCHBQC693/8//+DfwIgDgsAdO//+P//B/8EQBwWAOje//H//w/+CYA4LADQvf/j//8f/BMAcVgAoHv/x///P/gnAOKwAED3/o///3/wTwDEYQGA7v0f////4J8AiMMCAN37P/7//8E/ARCHBQC693/8//+DfwIgDgsAdO//+P//B/8EQBwWAOje//H//w/+CYA4LADQvf/L//8//BMAcVgAoHv/Bw==";

#[tokio::test]
async fn brotli_crc32_and_levels_answer_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import zlib from 'node:zlib'; import { Buffer } from 'node:buffer'; import { Readable } from 'node:stream';",
        r#"
        const r = [];
        const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
        r.push(zlib.brotliDecompressSync(Buffer.from('G4MDiCwOeNPQlV2XELsXK6nK0JLMjK1BXObyNsgZnp4Ke4MNOHBIIG8kvkGnFc4cHieqKTjCibhPgwE=', 'base64')).toString() === text);
        r.push(zlib.brotliDecompressSync(Buffer.from('i8EBAICqqqrq/3Slw0lvJz1cTFVFN1M1MVMztQ0O4OJXmkhxgw3GPCOotVk4ZvErbuizEfWlzr6f6C2DKwtt+T+CJsPwQwM=', 'base64')).toString() === text);
        const fast = zlib.brotliCompressSync(text, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } });
        const best = zlib.brotliCompressSync(text);
        r.push(best.length < fast.length, zlib.brotliDecompressSync(fast).toString() === text);
        r.push(await new Promise((res, rej) => zlib.brotliCompress(text, (e, b) => (e ? rej(e) : res(zlib.brotliDecompressSync(b).toString() === text)))));
        const parts = [];
        await new Promise((res, rej) => Readable.from([best.subarray(0, 10), best.subarray(10)]).pipe(zlib.createBrotliDecompress()).on('data', (c) => parts.push(c)).on('end', res).on('error', rej));
        r.push(Buffer.concat(parts).toString() === text);
        try { zlib.brotliDecompressSync(Buffer.from('garbage')); } catch (e) { r.push(e.code); }
        try { zlib.brotliCompressSync('x', { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 12 } }); } catch (e) { r.push(e.code); }
        r.push(zlib.crc32('hello'), zlib.crc32(Buffer.from('world'), zlib.crc32('hello ')), zlib.crc32(''));
        const stored = zlib.deflateSync(text, { level: 0 });
        r.push(stored.toString('base64').slice(0, 60), stored.length);
        r.push(zlib.deflateSync(text, { level: 1 }).length > zlib.deflateSync(text, { level: 9 }).length - 20, zlib.inflateSync(zlib.deflateSync(text, { level: 9 })).toString() === text);
        try { zlib.deflateSync('x', { level: 12 }); } catch (e) { r.push(e.code); }
        r.push(zlib.constants.BROTLI_PARAM_QUALITY, zlib.constants.BROTLI_DEFAULT_WINDOW);
        r.push(best.toString('base64'));
        return r.join(' ');
        "#,
    )
    .await;
    let (head, ours) = out.rsplit_once(' ').expect("our brotli");
    assert_eq!(
        head,
        "true true true true true true Z_DATA_ERROR ERR_OUT_OF_RANGE 907060870 222957957 0 \
         eAEBhAN7/FRoZSBxdWljayBicm93biBmb3gganVtcHMgb3ZlciB0aGUgbGF6 911 true true ERR_OUT_OF_RANGE 1 22"
    );
    // Node reads our brotli.
    let script = format!(
        "const t = 'The quick brown fox jumps over the lazy dog. '.repeat(20); \
         console.log(require('zlib').brotliDecompressSync(Buffer.from('{ours}', 'base64')).toString() === t)"
    );
    let output = std::process::Command::new("node")
        .args(["-e", &script])
        .output()
        .expect("node runs (the test compares with Node)");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "true");
}

/// A brotli bomb (256 MiB of zeros in 421 bytes), decompressed whole by
/// brotliDecompressSync or through a stream by a Worker keeping every
/// chunk, ends at the Worker's memory limit; a benign Worker on the same
/// thread answers before, while the attack runs and after.
#[tokio::test]
async fn a_brotli_bomb_ends_at_the_memory_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let attacks = [
        "const out = zlib.brotliDecompressSync(bomb); return new Response(String(out.length));",
        "const kept = []; await new Promise((resolve, reject) => Readable.from([bomb]).pipe(zlib.createBrotliDecompress()).on('data', (c) => kept.push(c)).on('end', resolve).on('error', reject)); return new Response(String(kept.length));",
    ];
    for (i, attack) in attacks.iter().enumerate() {
        let script = format!(
            "import zlib from 'node:zlib'; import {{ Readable }} from 'node:stream'; import {{ Buffer }} from 'node:buffer';\n\
             const bomb = Buffer.from('{BOMB}', 'base64');\n\
             export default {{ async fetch() {{ {attack} }} }};"
        );
        let mut hostile =
            (*node_worker(&format!("t/brotli-bomb-{i}"), &script, NodeCompat::V1)).clone();
        hostile.limits = memory_limits(64);
        let error = attack_beside(&engine, &neighbour, hostile).await;
        assert!(
            matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
            "{attack}: {error:?}"
        );
    }
}

/// A Worker compressing with brotli's slowest settings without end (one
/// call on 4 MiB, or a loop of calls) ends at its CPU limit: each step
/// reads at most 64 KiB, and the limit stops it between steps; a neighbour
/// on the same thread answers before, during and after.
#[tokio::test]
async fn endless_brotli_compression_ends_at_the_cpu_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let attacks = [
        "zlib.brotliCompressSync(data);",
        "for (;;) zlib.brotliCompressSync(data.subarray(0, 1 << 16));",
    ];
    for (i, attack) in attacks.iter().enumerate() {
        let script = format!(
            "import zlib from 'node:zlib';\n\
             const data = new Uint8Array(4 << 20).map((_, i) => (i * 2654435761) >>> 24);\n\
             export default {{ fetch() {{ {attack} return new Response('never'); }} }};"
        );
        let mut hostile =
            (*node_worker(&format!("t/brotli-cpu-{i}"), &script, NodeCompat::V1)).clone();
        hostile.limits = isolane_engine::Limits {
            cpu_ms: 200,
            ..memory_limits(256)
        };
        let started = std::time::Instant::now();
        let error = attack_beside(&engine, &neighbour, hostile).await;
        println!("brotli attack {i}: ended after {:?}", started.elapsed());
        assert!(
            matches!(error, ExecuteError::CpuLimit { limit_ms: 200 }),
            "{attack}: {error:?}"
        );
    }
}
