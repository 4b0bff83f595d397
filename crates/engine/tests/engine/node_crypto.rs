//! `node:crypto`: each answer is what Node 20 prints for the same code; and
//! a hostile Worker hashing or deriving without end meets the CPU limit
//! while a neighbour on the same thread answers.

use std::sync::Arc;

use isolane_engine::{Engine, ExecuteError, Limits, NodeCompat, PoolMode, WorkerBundle};

use crate::node_buffer::{answer, node_worker};
use crate::support::*;

#[tokio::test]
async fn hashes_hmac_random_and_pbkdf2_answer_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Buffer } from 'node:buffer';",
        r#"
        const r = [];
        r.push(crypto.createHash('sha256').update('abc').digest('hex'));
        r.push(crypto.createHash('md5').update('a').update(Buffer.from('bc')).digest('base64'));
        r.push(crypto.createHash('sha1').update('abc').digest('hex'));
        r.push(crypto.createHash('SHA384').update('').digest('hex').slice(0, 16));
        r.push(crypto.createHash('sha512').update('abc', 'utf8').digest().length);
        const h = crypto.createHash('sha256').update('ab'); const c = h.copy(); h.update('c'); r.push(h.digest('hex').slice(0, 8), c.digest('hex').slice(0, 8));
        try { h.digest(); } catch (e) { r.push(e.code); }
        try { crypto.createHash('nope'); } catch (e) { r.push(e.message); }
        r.push(crypto.createHmac('sha256', 'key').update('The quick brown fox jumps over the lazy dog').digest('hex'));
        r.push(crypto.createHmac('md5', Buffer.from('k')).update('m').digest('base64'));
        r.push(crypto.randomBytes(100000).length, crypto.randomUUID().length, /^[0-9a-f-]{36}$/.test(crypto.randomUUID()));
        const ints = Array.from({ length: 200 }, () => crypto.randomInt(3, 7)); r.push(Math.min(...ints) >= 3 && Math.max(...ints) < 7);
        r.push(crypto.timingSafeEqual(Buffer.from('ab'), Buffer.from('ab')), crypto.timingSafeEqual(Buffer.from('ab'), Buffer.from('ac')));
        try { crypto.timingSafeEqual(Buffer.from('a'), Buffer.from('ab')); } catch (e) { r.push(e.code); }
        r.push(crypto.pbkdf2Sync('password', 'salt', 1, 20, 'sha1').toString('hex'));
        r.push(await new Promise((res, rej) => crypto.pbkdf2('password', 'salt', 2, 32, 'sha256', (e, k) => (e ? rej(e) : res(k.toString('hex'))))));
        r.push(crypto.getRandomValues(new Uint8Array(4)).length, typeof crypto.webcrypto.subtle.digest, crypto.subtle === crypto.webcrypto.subtle);
        r.push(await new Promise((res) => crypto.randomBytes(8, (e, b) => res(b.length))));
        r.push(crypto.hash('sha1', 'abc'));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad kAFQmDzST7DWlj99KOF/cg== \
         a9993e364706816aba3e25717850c26c9cd0d89d 38b060a751ac9638 64 ba7816bf fb8e20fc \
         ERR_CRYPTO_HASH_FINALIZED Digest method not supported \
         f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8 7X5yTTqRVUqqIEMEHZxTBQ== \
         100000 36 true true true false ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH \
         0c60c80f961f0e71f3a9b524af6012062fe037a6 \
         ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43 4 function true 8 \
         a9993e364706816aba3e25717850c26c9cd0d89d"
    );
}

/// A Hash or Hmac a stream was piped into answers `digest()` as in Node
/// (what Node 20 prints for the same code): a Hash its digest once (then
/// ERR_CRYPTO_HASH_FINALIZED), an Hmac an empty one, as its own digest is
/// the stream's; the stream's output is the digest.
#[tokio::test]
async fn hashes_piped_into_answer_digest_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Buffer } from 'node:buffer'; import { pipeline } from 'node:stream/promises'; import { Readable } from 'node:stream';",
        r#"
        const r = [];
        const h = crypto.createHash('sha256');
        await pipeline(Readable.from(['a', 'b']), h);
        r.push(h.digest('hex'));
        try { h.digest('hex'); } catch (e) { r.push(e.code); }
        const s = crypto.createHash('md5');
        const out = [];
        s.on('data', (c) => out.push(c));
        s.end('ab');
        await new Promise((res) => s.on('end', res));
        r.push(Buffer.concat(out).toString('hex'), s.digest('base64'));
        const m = crypto.createHmac('sha256', 'k');
        await pipeline(Readable.from(['a', 'b']), m);
        r.push(JSON.stringify(m.digest('hex')));
        const m2 = crypto.createHmac('sha256', 'k').update('ab');
        r.push(m2.digest('hex').slice(0, 8), JSON.stringify(m2.digest('hex')), m2.digest().length);
        const m3 = crypto.createHmac('sha256', 'k');
        m3.on('data', (c) => r.push(c.toString('hex').slice(0, 8)));
        m3.end('ab');
        await new Promise((res) => m3.on('end', res));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603 ERR_CRYPTO_HASH_FINALIZED \
         187ef4436122d1cc2f40dc2b92f0eba0 GH70Q2Ei0cwvQNwrkvDroA== \"\" 7475bb11 \"\" 0 7475bb11"
    );
}

/// AES in CBC, CTR and GCM modes through createCipheriv/createDecipheriv.
#[tokio::test]
async fn aes_ciphers_answer_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Buffer } from 'node:buffer';",
        r#"
        const r = [];
        const key = Buffer.alloc(32, 7), iv = Buffer.alloc(16, 1), iv12 = Buffer.alloc(12, 2);
        const c1 = crypto.createCipheriv('aes-256-cbc', key, iv); const enc = c1.update('hello world, cipher me', 'utf8', 'base64') + c1.final('base64'); r.push(enc);
        const d1 = crypto.createDecipheriv('aes-256-cbc', key, iv); r.push(d1.update(enc, 'base64', 'utf8') + d1.final('utf8'));
        const c2 = crypto.createCipheriv('aes-128-ctr', key.subarray(0, 16), iv); r.push(Buffer.concat([c2.update('counter'), c2.final()]).toString('hex'));
        const c3 = crypto.createCipheriv('aes-256-gcm', key, iv12); c3.setAAD(Buffer.from('aad')); const ct = Buffer.concat([c3.update('secret', 'utf8'), c3.final()]); const tag = c3.getAuthTag(); r.push(ct.toString('hex'), tag.toString('hex'));
        const d3 = crypto.createDecipheriv('aes-256-gcm', key, iv12); d3.setAAD(Buffer.from('aad')); d3.setAuthTag(tag); r.push(d3.update(ct, undefined, 'utf8') + d3.final('utf8'));
        const d4 = crypto.createDecipheriv('aes-256-gcm', key, iv12); d4.setAuthTag(Buffer.alloc(16)); d4.update(ct); try { d4.final(); } catch (e) { r.push(e.message); }
        try { crypto.createCipheriv('aes-256-cbc', Buffer.alloc(5), iv); } catch (e) { r.push(e.code, e.message); }
        try { crypto.createCipheriv('aes-256-cbc', key, Buffer.alloc(3)); } catch (e) { r.push(e.code); }
        try { crypto.createCipheriv('nope-128', key, iv); } catch (e) { r.push(e.code); }
        const d5 = crypto.createDecipheriv('aes-256-cbc', Buffer.alloc(32, 8), iv); d5.update(enc, 'base64'); try { d5.final(); } catch (e) { r.push(e.message.includes('bad decrypt')); }
        r.push(crypto.getCiphers().includes('aes-256-gcm'));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "WqwJD8n/EWdkuMklzLH4kgTcSjiN2FmhTn9fhnHVEvk= hello world, cipher me 39409ded4486aa \
         69d18a753e9f 516132feab2283ba4fe4042f2a86dc59 secret \
         Unsupported state or unable to authenticate data ERR_CRYPTO_INVALID_KEYLEN \
         Invalid key length ERR_CRYPTO_INVALID_IV ERR_CRYPTO_UNKNOWN_CIPHER true true"
    );
}

/// HKDF: RFC 5869's first test case, and Node's answers.
#[tokio::test]
async fn hkdf_answers_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Buffer } from 'node:buffer';",
        r#"
        const r = [];
        const ikm = Buffer.alloc(22, 0x0b), salt = Buffer.from('000102030405060708090a0b0c', 'hex'), info = Buffer.from('f0f1f2f3f4f5f6f7f8f9', 'hex');
        const okm = crypto.hkdfSync('sha256', ikm, salt, info, 42); r.push(okm instanceof ArrayBuffer, Buffer.from(okm).toString('hex'));
        r.push(await new Promise((res) => crypto.hkdf('sha512', 'key', 'salt', 'info', 16, (e, k) => res(Buffer.from(k).toString('hex')))));
        try { crypto.hkdfSync('sha1', 'k', 's', 'i', 255 * 20 + 1); } catch (e) { r.push(e.code); }
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "true 3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865 \
         24156e2c35525baaf3d0fbb92b734c80 ERR_CRYPTO_INVALID_KEYLEN"
    );
}

/// scrypt: RFC 7914's first vector, and Node's answers; one call's work is
/// bounded (N × r × p at most 2^20) with a message saying so.
#[tokio::test]
async fn scrypt_answers_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Buffer } from 'node:buffer';",
        r#"
        const r = [];
        r.push(crypto.scryptSync('password', 'salt', 32).toString('hex'));
        r.push(crypto.scryptSync('', '', 64, { N: 16, r: 1, p: 1 }).toString('hex').slice(0, 32));
        r.push(await new Promise((res) => crypto.scrypt('pw', 'NaCl', 16, { cost: 1024, blockSize: 8, parallelization: 2 }, (e, k) => res(k.toString('base64')))));
        try { crypto.scryptSync('p', 's', 16, { N: 1000 }); } catch (e) { r.push(e.code); }
        try { crypto.scryptSync('p', 's', 16, { N: 2 ** 20 }); } catch (e) { r.push(e.code); }
        try { crypto.scryptSync('p', 's', 16, { N: 2 ** 18, r: 8, maxmem: 2 ** 30 }); } catch (e) { r.push(e.name + ': ' + e.message); }
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "745731af4484f323968969eda289aeee005b5903ac561e64a5aca121797bf773 \
         77d6576238657b203b19ca42c18a0497 EHf+E3TtuC7AUEUrp6FWkg== \
         ERR_CRYPTO_INVALID_SCRYPT_PARAMS ERR_CRYPTO_INVALID_SCRYPT_PARAMS \
         RangeError: scrypt: N × r × p above 1048576 is not supported"
    );
}

/// scrypt whose working memory (128 × N × r) is more than the Worker may
/// have ends at its memory limit, before the work starts.
#[tokio::test]
async fn scrypt_past_the_memory_limit_ends_there() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let script = "import crypto from 'node:crypto';\n\
        export default { fetch() { crypto.scryptSync('p', 's', 16, { N: 2 ** 20, r: 1, maxmem: 2 ** 31 }); return new Response('never'); } };";
    let mut hostile = (*node_worker("t/scrypt-memory", script, NodeCompat::V1)).clone();
    hostile.limits = memory_limits(32);
    let error = attack_beside(&engine, &neighbour, hostile).await;
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 32 }),
        "{error:?}"
    );
}

/// Hash and Hmac are streams too: written, piped into, read.
#[tokio::test]
async fn hashes_are_streams_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Readable } from 'node:stream'; import { pipeline } from 'node:stream/promises';",
        r#"
        const r = [];
        const h = crypto.createHash('sha256'); h.setEncoding('hex'); h.write('ab'); h.end('c'); await new Promise((res) => h.on('readable', res)); r.push(h.read());
        r.push(await new Promise((res) => Readable.from(['a', 'b', 'c']).pipe(crypto.createHash('md5')).on('data', (d) => res(d.toString('hex')))));
        const m = crypto.createHmac('sha1', 'k'); await pipeline(Readable.from(['x']), m); r.push(m.read().toString('base64'));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad \
         900150983cd24fb0d6963f7d28e17f72 ywATH87GAqj8hEE6KnAVTYwGoNI="
    );
}

/// PBKDF2 work is bounded per call as Web Crypto's is; the message says so.
#[tokio::test]
async fn pbkdf2_past_the_bound_is_refused_clearly() {
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto';",
        r#"
        const r = [];
        try { crypto.pbkdf2Sync('p', 's', 1e9, 32, 'sha256'); } catch (e) { r.push(e.name, e.message); }
        r.push(await new Promise((res) => crypto.pbkdf2('p', 's', 1e9, 32, 'sha256', (e) => res(e && e.name))));
        return r.join(' | ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "NotSupportedError | Pbkdf2 failed: iteration counts above 100000 are not supported \
         (requested 1000000000) | NotSupportedError"
    );
}

/// A Worker that hashes (a growing createHash update loop, a huge single
/// update) or derives (pbkdf2Sync or scryptSync at their bounds, in a loop)
/// without end is stopped at its CPU limit; a benign Worker on the same
/// thread answers before, while the attack runs and after.
#[tokio::test]
async fn endless_hashing_and_pbkdf2_end_at_the_cpu_limit() {
    each_ends_at_the_cpu_limit(
        "hash",
        "",
        &[
            "const h = crypto.createHash('sha256'); const chunk = new Uint8Array(1 << 20); for (;;) h.update(chunk);",
            "crypto.createHash('sha512').update(new Uint8Array(1 << 28));",
            "for (;;) crypto.createHmac('sha1', 'k').update('x'.repeat(1 << 16)).digest();",
            "for (;;) crypto.pbkdf2Sync('p', 's', 100000, 32, 'sha512');",
            "for (;;) crypto.scryptSync('p', 's', 32, { N: 2 ** 14, r: 8, p: 8 });",
        ],
    )
    .await;
}

/// Runs each of `attacks` (a fetch handler's body; `preamble` at module
/// level, node:crypto imported as `crypto`) as a hostile Worker limited to
/// 200 ms of CPU beside a benign neighbour on one thread (see
/// [`attack_beside`]); each must end at that limit.
pub async fn each_ends_at_the_cpu_limit(name: &str, preamble: &str, attacks: &[&str]) {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    for (i, attack) in attacks.iter().enumerate() {
        let script = format!(
            "import crypto from 'node:crypto';\n{preamble}\nexport default {{ fetch() {{ {attack} return new Response('never'); }} }};"
        );
        let mut hostile = (*node_worker(&format!("t/{name}-{i}"), &script, NodeCompat::V1)).clone();
        hostile.limits = Limits {
            cpu_ms: 200,
            ..memory_limits(512)
        };
        let error = attack_beside(&engine, &neighbour, hostile).await;
        assert!(
            matches!(error, ExecuteError::CpuLimit { limit_ms: 200 }),
            "{attack}: {error:?}"
        );
    }
}

/// The last line `node` prints running `script` (with `flags` before it).
pub fn node_prints(flags: &[&str], script: &str) -> String {
    let output = std::process::Command::new("node")
        .args(flags)
        .args(["-e", script])
        .output()
        .expect("node runs (the test compares with Node)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.trim().lines().last().unwrap_or_default().to_owned();
    assert!(
        output.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    last
}

/// Runs `cases` (a `.mjs` file exporting `function <function>(crypto,
/// Buffer)`) in a Worker and asserts that its answers are Node's (the
/// `cases` of `vectors`, the JSON its `*_vectors.mjs` wrote).
pub async fn cases_answer_as_node(cases: &str, function: &str, vectors: &str) {
    let cases = cases.replace("export function", "function");
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import { Buffer } from 'node:buffer';",
        &format!("{cases}\nreturn JSON.stringify({function}(crypto, Buffer));"),
    )
    .await;
    let ours: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let node: serde_json::Value = serde_json::from_str(vectors).unwrap();
    assert_answers_as_node(&ours, &node["cases"]);
}

/// Asserts that each of Node's answers (`node`, by case name) is `ours`,
/// listing every case that differs.
pub fn assert_answers_as_node(ours: &serde_json::Value, node: &serde_json::Value) {
    let mut differences = Vec::new();
    for (name, expected) in node.as_object().expect("Node's answers are an object") {
        if &ours[name] != expected {
            differences.push(format!(
                "{name}:\n  node:    {expected}\n  isolane: {}",
                ours[name]
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Runs `hostile` on thread 0 of `engine` while the benign `neighbour`
/// answers there before, during (its request waits its turn) and after;
/// how the hostile request failed.
pub async fn attack_beside(
    engine: &Arc<Engine>,
    neighbour: &Arc<WorkerBundle>,
    hostile: WorkerBundle,
) -> ExecuteError {
    neighbour_ok(engine, neighbour).await;
    let attacking = {
        let engine = engine.clone();
        let hostile = Arc::new(hostile);
        tokio::spawn(async move { engine.execute(0, hostile, get("/")).await })
    };
    neighbour_ok(engine, neighbour).await;
    let error = match attacking.await.unwrap() {
        Err(error) => error,
        Ok(response) => panic!("the attack answered {}", response.status()),
    };
    neighbour_ok(engine, neighbour).await;
    error
}
