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
        // Node names this failure ERR__ERROR_FORMAT_PADDING_1: brotli's C
        // decoder checks the other padding first (docs/nodejs.md).
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
        "true true true true true true ERR__ERROR_FORMAT_PADDING_2 ERR_OUT_OF_RANGE 907060870 222957957 0 \
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

/// node:zlib's errors for the common failures are Node's, code, errno and
/// message (what Node 20 prints for the same code): input that ends early
/// (gzip, zlib, raw deflate, brotli; sync, stream and callback forms) is
/// Z_BUF_ERROR "unexpected end of file", a bad header, block or check
/// Z_DATA_ERROR in zlib's words, corrupt brotli data brotli's error.
#[tokio::test]
async fn zlib_errors_answer_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import zlib from 'node:zlib'; import { Buffer } from 'node:buffer';",
        r#"
        const r = [];
        const text = 'hello hello hello world';
        const gz = zlib.gzipSync(text), df = zlib.deflateSync(text), raw = zlib.deflateRawSync(text), br = zlib.brotliCompressSync(text);
        const mod = (b, i, v) => { const c = Buffer.from(b); c[i] = v; return c; };
        const show = (e) => `${e.code}/${e.errno}/${e.message}`;
        const cases = [
          () => zlib.gunzipSync(gz.subarray(0, gz.length - 4)),
          () => zlib.gunzipSync(gz.subarray(0, 12)),
          () => zlib.gunzipSync(Buffer.alloc(0)),
          () => zlib.inflateSync(df.subarray(0, df.length - 2)),
          () => zlib.inflateRawSync(raw.subarray(0, 5)),
          () => zlib.brotliDecompressSync(br.subarray(0, br.length - 2)),
          () => zlib.gunzipSync(mod(gz, 0, 0)),
          () => zlib.gunzipSync(mod(gz, 2, 9)),
          () => zlib.gunzipSync(mod(gz, gz.length - 8, gz[gz.length - 8] ^ 1)),
          () => zlib.gunzipSync(mod(gz, gz.length - 4, gz[gz.length - 4] ^ 1)),
          () => zlib.inflateSync(Buffer.from('not zlib data')),
          () => zlib.inflateSync(mod(df, df.length - 1, df[df.length - 1] ^ 1)),
          () => zlib.inflateSync(mod(df, 2, 0xff)),
          () => zlib.inflateRawSync(Buffer.from([0xff, 0xff])),
          () => zlib.unzipSync(Buffer.from('garbage')),
          () => zlib.brotliDecompressSync(Buffer.from([0xff, 0xff, 0xff, 0xff])),
        ];
        for (const f of cases) { try { f(); r.push('ok'); } catch (e) { r.push(show(e)); } }
        const stream = (s, data) => new Promise((res) => { s.on('data', () => {}); s.on('error', (e) => res(show(e))); s.on('end', () => res('end')); s.end(data); });
        r.push(await stream(zlib.createGunzip(), gz.subarray(0, gz.length - 4)));
        r.push(await stream(zlib.createGunzip(), mod(gz, 0, 0)));
        r.push(await stream(zlib.createBrotliDecompress(), br.subarray(0, br.length - 2)));
        r.push(await new Promise((res) => zlib.gunzip(gz.subarray(0, 10), (e) => res(show(e)))));
        return r.join(' | ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "Z_BUF_ERROR/-5/unexpected end of file | \
         Z_BUF_ERROR/-5/unexpected end of file | \
         Z_BUF_ERROR/-5/unexpected end of file | \
         Z_BUF_ERROR/-5/unexpected end of file | \
         Z_BUF_ERROR/-5/unexpected end of file | \
         Z_BUF_ERROR/-5/unexpected end of file | \
         Z_DATA_ERROR/-3/incorrect header check | \
         Z_DATA_ERROR/-3/unknown compression method | \
         Z_DATA_ERROR/-3/incorrect data check | \
         Z_DATA_ERROR/-3/incorrect length check | \
         Z_DATA_ERROR/-3/incorrect header check | \
         Z_DATA_ERROR/-3/incorrect data check | \
         Z_DATA_ERROR/-3/invalid block type | \
         Z_DATA_ERROR/-3/invalid block type | \
         Z_DATA_ERROR/-3/incorrect header check | \
         ERR__ERROR_FORMAT_PADDING_2/-15/Decompression failed | \
         Z_BUF_ERROR/-5/unexpected end of file | \
         Z_DATA_ERROR/-3/incorrect header check | \
         Z_BUF_ERROR/-5/unexpected end of file | \
         Z_BUF_ERROR/-5/unexpected end of file"
    );
}

/// Runs each hostile script (its limits `limits`) on a one-thread engine
/// beside a benign Worker, which answers before, during and after each;
/// what each attack ended with.
async fn attacks(
    name: &str,
    scripts: &[String],
    limits: isolane_engine::Limits,
) -> Vec<ExecuteError> {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let mut errors = Vec::new();
    for (i, script) in scripts.iter().enumerate() {
        let mut hostile = (*node_worker(&format!("t/{name}-{i}"), script, NodeCompat::V1)).clone();
        hostile.limits = limits;
        let started = std::time::Instant::now();
        errors.push(attack_beside(&engine, &neighbour, hostile).await);
        println!("{name} attack {i}: ended after {:?}", started.elapsed());
    }
    errors
}

/// A Worker compressing without end (one call on 4 MiB, or a loop of
/// calls) with `compress` ends at its CPU limit of 200 ms: each step reads
/// at most 64 KiB, and the limit stops it between steps. The data is
/// xorshift32's top bytes, which no codec shrinks, so that the one call
/// takes long at any build's speed (zstd level 19: ~1.2 s for 4 MiB with an
/// optimised libzstd; a periodic sequence took it under 200 ms).
async fn endless_compression(name: &str, compress: &str) {
    let scripts: Vec<String> = [
        format!("{compress}(data);"),
        format!("for (;;) {compress}(data.subarray(0, 1 << 16));"),
    ]
    .iter()
    .map(|attack| {
        format!(
            "import zlib from 'node:zlib';\n\
                 let x = 2463534242;\n\
                 const data = new Uint8Array(4 << 20).map(() => {{ x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return x >>> 24; }});\n\
                 export default {{ fetch() {{ {attack} return new Response('never'); }} }};"
        )
    })
    .collect();
    let limits = isolane_engine::Limits {
        cpu_ms: 200,
        ..memory_limits(256)
    };
    for error in attacks(name, &scripts, limits).await {
        assert!(
            matches!(error, ExecuteError::CpuLimit { limit_ms: 200 }),
            "{error:?}"
        );
    }
}

/// Each script ends at its memory limit of 64 MiB.
async fn memory_attacks(name: &str, prelude: &str, attacks_js: &[&str]) {
    let scripts: Vec<String> = attacks_js
        .iter()
        .map(|attack| {
            format!(
                "import zlib from 'node:zlib'; import {{ Readable }} from 'node:stream'; import {{ Buffer }} from 'node:buffer';\n\
                 {prelude}\n\
                 export default {{ async fetch() {{ {attack} }} }};"
            )
        })
        .collect();
    for error in attacks(name, &scripts, memory_limits(64)).await {
        assert!(
            matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
            "{error:?}"
        );
    }
}

/// A brotli bomb (256 MiB of zeros in 421 bytes), decompressed whole by
/// brotliDecompressSync or through a stream by a Worker keeping every
/// chunk, ends at the Worker's memory limit; a benign Worker on the same
/// thread answers before, while the attack runs and after.
#[tokio::test]
async fn a_brotli_bomb_ends_at_the_memory_limit() {
    let prelude = format!("const bomb = Buffer.from('{BOMB}', 'base64');");
    memory_attacks("brotli-bomb", &prelude, &[
        "const out = zlib.brotliDecompressSync(bomb); return new Response(String(out.length));",
        "const kept = []; await new Promise((resolve, reject) => Readable.from([bomb]).pipe(zlib.createBrotliDecompress()).on('data', (c) => kept.push(c)).on('end', resolve).on('error', reject)); return new Response(String(kept.length));",
    ])
    .await;
}

/// Endless compression at brotli's slowest settings (the defaults) ends at
/// the CPU limit; a neighbour on the same thread answers throughout.
#[tokio::test]
async fn endless_brotli_compression_ends_at_the_cpu_limit() {
    endless_compression("brotli-cpu", "zlib.brotliCompressSync").await;
}

/// "hello from the zstd CLI\n", compressed by the zstd CLI (v1.5.4, from
/// stdin: a checksum, no content size).
const ZSTD_CLI: &str = "KLUv/QRYwQAAaGVsbG8gZnJvbSB0aGUgenN0ZCBDTEkKPKOSVQ==";

/// node:zlib's Zstandard as workerd answers: the compressed bytes of the
/// sync form are workerd's (`zstdCompressSync` of the same text at the
/// default level, with a checksum and at level -5, printed by workerd
/// 1.2025 from compat/node_modules), the errors are workerd's messages with
/// libzstd's codes, and the zstd CLI reads our streamed output.
#[tokio::test]
async fn zstd_answers_as_in_workerd() {
    let out = answer(
        NodeCompat::V1,
        "import zlib from 'node:zlib'; import { Buffer } from 'node:buffer'; import { Readable } from 'node:stream';",
        &format!(r#"
        const r = [];
        const C = zlib.constants;
        const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
        r.push(zlib.zstdDecompressSync(Buffer.from('{ZSTD_CLI}', 'base64')).toString() === 'hello from the zstd CLI\n');
        r.push(zlib.zstdCompressSync(text).toString('hex'));
        r.push(zlib.zstdCompressSync(text, {{ params: {{ [C.ZSTD_c_checksumFlag]: 1 }} }}).toString('hex'));
        r.push(zlib.zstdCompressSync(text, {{ params: {{ [C.ZSTD_c_compressionLevel]: -5 }} }}).toString('hex'));
        r.push(zlib.zstdCompressSync('hello').toString('hex'), zlib.zstdDecompressSync(Buffer.alloc(0)).length);
        r.push(await new Promise((res, rej) => zlib.zstdCompress(text, (e, b) => (e ? rej(e) : zlib.zstdDecompress(b, (e2, t) => (e2 ? rej(e2) : res(t.toString() === text)))))));
        const long = Buffer.from(Array.from({{ length: 4000 }}, (_, i) => `line ${{i}}: ${{i * 7919 % 1000}}\n`).join(''));
        const parts = [];
        await new Promise((res, rej) => Readable.from([long.subarray(0, 1000), long.subarray(1000)]).pipe(zlib.createZstdCompress({{ params: {{ [C.ZSTD_c_compressionLevel]: 19 }} }})).on('data', (c) => parts.push(c)).on('end', res).on('error', rej));
        const packed = Buffer.concat(parts);
        const back = [];
        await new Promise((res, rej) => Readable.from([...packed].map((b) => Buffer.from([b]))).pipe(new zlib.ZstdDecompress()).on('data', (c) => back.push(c)).on('end', res).on('error', rej));
        r.push(Buffer.concat(back).equals(long));
        for (const bad of [Buffer.from('garbage garbage'), zlib.zstdCompressSync('hello').subarray(0, 12)]) {{
          try {{ zlib.zstdDecompressSync(bad); }} catch (e) {{ r.push(`${{e.code}}/${{e.errno}}/${{e.message}}`); }}
        }}
        // A frame declaring a 2^24-byte window around a raw block of 'hello'.
        const wide = Buffer.from('28b52ffd007029000068656c6c6f', 'hex');
        try {{ zlib.zstdDecompressSync(wide); }} catch (e) {{ r.push(`${{e.code}}/${{e.errno}}/${{e.message}}`); }}
        r.push(zlib.zstdDecompressSync(wide, {{ params: {{ [C.ZSTD_d_windowLogMax]: 24 }} }}).toString());
        // A 2^31 window, refused a thousand times: each refusal gives its decoder's charge back.
        let refused = 0;
        for (let i = 0; i < 1000; i++) try {{ zlib.zstdDecompressSync(Buffer.from('28b52ffd00a829000068656c6c6f', 'hex')); }} catch (e) {{ refused += e.errno === 16; }}
        r.push(refused);
        try {{ zlib.zstdCompressSync('x', {{ params: {{ 9999: 1 }} }}); }} catch (e) {{ r.push(e.message); }}
        r.push(C.ZSTD_e_end, zlib.ZSTD_c_checksumFlag, C.ZSTD_error_frameParameter_windowTooLarge, typeof zlib.createZstdDecompress);
        r.push(packed.toString('base64'));
        return r.join(' | ');
        "#),
    )
    .await;
    let (head, ours) = out.rsplit_once(" | ").expect("our zstd");
    assert_eq!(
        head,
        "true | \
         28b52ffd608402b50100d40254686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f672e200100a50a2b5506 | \
         28b52ffd648402b50100d40254686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f672e200100a50a2b55065913fa85 | \
         28b52ffd6084021d0300a40554686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f672e2054686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f672e200100dac9ae0a51 | \
         28b52ffd200529000068656c6c6f | 0 | true | true | \
         ZSTD_error_prefix_unknown/10/Zstd decompression failed: Unknown frame descriptor | \
         Z_DATA_ERROR/-3/unexpected end of file | \
         ZSTD_error_frameParameter_windowTooLarge/16/Zstd decompression failed: Frame requires too much memory for decoding | \
         hello | 1000 | Unsupported Zstd compression parameter: 9999 | 2 | 201 | 16 | function"
    );
    // The zstd CLI reads what our stream wrote.
    let packed = base64_decode(ours);
    let mut child = std::process::Command::new("zstd")
        .args(["-d", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("zstd runs (the test compares with the zstd CLI)");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), &packed).expect("write");
    let output = child.wait_with_output().expect("zstd ends");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && text.starts_with("line 0: 0\nline 1: 919\n"),
        "{text:.100}"
    );
    assert_eq!(text.lines().count(), 4000);
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

/// A zstd frame of RLE blocks made in JavaScript: 4 bytes a 128 KiB block,
/// `blocks` of them (32 KiB expand to 1 GiB), no content size, a 128 KiB
/// window.
const ZSTD_BOMB_JS: &str = "const blocks = 8192; const bomb = new Uint8Array(6 + 4 * blocks);\n\
     bomb.set([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38]);\n\
     for (let i = 0; i < blocks; i++) bomb.set([i === blocks - 1 ? 0x03 : 0x02, 0x00, 0x10, 0x00], 6 + 4 * i);";

/// A zstd bomb (1 GiB of zeros in 32 KiB), decompressed whole by
/// zstdDecompressSync or through a stream by a Worker keeping every chunk,
/// ends at the Worker's memory limit; a benign Worker on the same thread
/// answers before, while the attack runs and after. A Worker asking for a
/// 2 GiB decoder window (`ZSTD_d_windowLogMax` 31) is charged for it up
/// front and ends there too, after a thousand frames declaring a 2 GiB
/// window were each refused without it.
#[tokio::test]
async fn a_zstd_bomb_ends_at_the_memory_limit() {
    memory_attacks("zstd-bomb", ZSTD_BOMB_JS, &[
        "const out = zlib.zstdDecompressSync(bomb); return new Response(String(out.length));",
        "const kept = []; await new Promise((resolve, reject) => Readable.from([bomb]).pipe(zlib.createZstdDecompress()).on('data', (c) => kept.push(c)).on('end', resolve).on('error', reject)); return new Response(String(kept.length));",
        "const wide = Buffer.from('28b52ffd00a829000068656c6c6f', 'hex'); let refused = 0;\n\
         for (let i = 0; i < 1000; i++) try { zlib.zstdDecompressSync(wide); } catch (e) { if (e.code === 'ZSTD_error_frameParameter_windowTooLarge') refused++; }\n\
         if (refused !== 1000) return new Response(`refused ${refused}`);\n\
         return new Response(zlib.zstdDecompressSync(wide, { params: { [zlib.constants.ZSTD_d_windowLogMax]: 31 } }));",
    ])
    .await;
}

/// Endless compression at zstd's level 19 ends at the CPU limit; a
/// neighbour on the same thread answers throughout.
#[tokio::test]
async fn endless_zstd_compression_ends_at_the_cpu_limit() {
    endless_compression(
        "zstd-cpu",
        "((d) => zlib.zstdCompressSync(d, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 19 } }))",
    )
    .await;
}
