//! `node:stream` (and `stream/promises`, `stream/web`, `stream/consumers`),
//! `node:zlib`, `node:assert`, `node:timers` and `node:util/types`: each
//! answer is what Node 20 prints for the same code; and a zlib bomb ends at
//! the memory limit.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;

#[tokio::test]
async fn streams_behave_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import { ReadableStream } from 'node:stream/web'; import { text as toText } from 'node:stream/consumers'; import { Readable, Writable, Transform, PassThrough, Duplex, pipeline, finished } from 'node:stream'; import { pipeline as pipelineP, finished as finishedP } from 'node:stream/promises'; import { Buffer } from 'node:buffer';",
        r#"
        const r = [];
        const got = []; for await (const c of Readable.from(['a', 'b', 'c'])) got.push(c); r.push(got.join(''));
        let out = '';
        await pipelineP(Readable.from(['x', 'y']), new Transform({ transform(c, e, cb) { cb(null, String(c).toUpperCase()); } }), new Writable({ write(c, e, cb) { out += c; cb(); } }));
        r.push(out);
        // paused mode with read() and 'readable'
        const src = new Readable({ read() {} }); src.push('hel'); src.push('lo'); src.push(null);
        let text = ''; src.on('readable', () => { let c; while ((c = src.read()) !== null) text += c; }); await new Promise((res) => src.on('end', res)); r.push(text);
        // flowing mode with data events, setEncoding
        const s2 = new Readable({ read() {} }); s2.setEncoding('utf8'); const parts = []; s2.on('data', (d) => parts.push(typeof d + ':' + d)); s2.push(Buffer.from([0xe2, 0x82])); s2.push(Buffer.from([0xac])); s2.push(null); await new Promise((res) => s2.on('end', res)); r.push(parts.join(','));
        // backpressure: write returns false past highWaterMark, drain follows
        const slow = new Writable({ highWaterMark: 4, write(c, e, cb) { setTimeout(cb, 1); } });
        r.push(slow.write('abc'), slow.write('de')); await new Promise((res) => slow.once('drain', res)); r.push('drained');
        // finish order and final
        const order = []; const w = new Writable({ write(c, e, cb) { order.push('w' + c); cb(); }, final(cb) { order.push('final'); cb(); } });
        w.on('finish', () => order.push('finish')); w.on('close', () => order.push('close')); w.write('1'); w.end('2'); await new Promise((res) => w.on('close', res)); r.push(order.join(','));
        // PassThrough with pipe
        const pt = new PassThrough(); const chunks = []; pt.on('data', (c) => chunks.push(c.toString())); Readable.from(['p', 'q']).pipe(pt); await new Promise((res) => pt.on('end', res)); r.push(chunks.join(''));
        // errors reach pipeline's callback
        const err = await new Promise((res) => pipeline(new Readable({ read() { this.destroy(new Error('boom')); } }), new PassThrough(), (e) => res(e && e.message))); r.push(err);
        // finished with premature close
        const d = new PassThrough(); const fin = new Promise((res) => finished(d, (e) => res(e && e.code))); d.destroy(); r.push(await fin);
        // async generator in pipeline
        let joined = ''; await pipelineP(Readable.from([1, 2, 3]), async function* (source) { for await (const n of source) yield String(n * 2); }, new Writable({ objectMode: true, write(c, e, cb) { joined += c; cb(); } })); r.push(joined);
        // Duplex and instanceof
        const dup = new Duplex({ read() {}, write(c, e, cb) { this.push(c); cb(); } }); r.push(dup instanceof Writable, dup instanceof Readable, new PassThrough() instanceof Writable);
        // write after end
        const ended = new Writable({ write(c, e, cb) { cb(); } }); ended.end(); const wae = await new Promise((res) => { ended.on('error', (e) => res(e.code)); ended.write('x'); }); r.push(wae);
        // object mode and readableLength
        const om = new Readable({ objectMode: true, read() {} }); om.push({ a: 1 }); om.push({ b: 2 }); r.push(om.readableLength, JSON.stringify(om.read()));
        // stream/web and consumers
         r.push(typeof ReadableStream);
         r.push(await toText(Readable.from(['t', 'u'])));
        r.push(await finishedP(Readable.from([]).resume()) === undefined);
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "abc XY hello string:€ true false drained w1,w2,final,finish,close pq boom \
         ERR_STREAM_PREMATURE_CLOSE 246 true true true ERR_STREAM_WRITE_AFTER_END 2 {\"a\":1} \
         function tu true"
    );
}

/// Data pushed before anyone listens flows, once a 'data' listener resumes
/// the stream, in the AsyncLocalStorage context of that listener's code, as
/// in Node and workerd; data pushed while it flows, in the pusher's. (React's
/// SSR reads the RSC stream so: Next.js lost a `<script>` of its 404 page.)
#[tokio::test]
async fn buffered_data_flows_in_the_context_of_who_resumes() {
    let out = answer(
        NodeCompat::V1,
        "import { PassThrough } from 'node:stream'; import { AsyncLocalStorage } from 'node:async_hooks';",
        r#"
        const als = new AsyncLocalStorage();
        const seen = [];
        const pt = new PassThrough();
        als.run('writer', () => pt.write('a'));
        als.run('reader', () => pt.on('data', (c) => seen.push(c + ':' + als.getStore())));
        await new Promise((res) => setTimeout(res, 1));
        als.run('later', () => pt.write('b'));
        await new Promise((res) => setTimeout(res, 1));
        return seen.join(' ');
        "#,
    )
    .await;
    assert_eq!(out, "a:reader b:later");
}

#[tokio::test]
async fn zlib_assert_timers_and_util_types_behave_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import zlib from 'node:zlib'; import assert from 'node:assert'; import strict from 'node:assert/strict'; import { setTimeout as sleep, setImmediate as immediate } from 'node:timers/promises'; import timers from 'node:timers'; import types from 'node:util/types'; import { Readable, Writable } from 'node:stream'; import { pipeline } from 'node:stream/promises'; import { Buffer } from 'node:buffer';",
        r#"
        const r = [];
        const big = 'hello '.repeat(50000);
        r.push(zlib.gunzipSync(zlib.gzipSync(big)).toString() === big, zlib.gzipSync(big).length < 2000);
        r.push(zlib.inflateSync(zlib.deflateSync('abc')).toString(), zlib.inflateRawSync(zlib.deflateRawSync(Buffer.from('raw'))).toString());
        r.push(zlib.unzipSync(zlib.gzipSync('u1')).toString(), zlib.unzipSync(zlib.deflateSync('u2')).toString());
        r.push(zlib.deflateSync('abc').toString('hex').slice(0, 4), zlib.gzipSync('abc').toString('hex').slice(0, 6));
        try { zlib.gunzipSync(Buffer.from('not gzip')); } catch (e) { r.push(e.code); }
        try { zlib.gunzipSync(zlib.gzipSync(big), { maxOutputLength: 1000 }); } catch (e) { r.push(e.code); }
        r.push(await new Promise((res) => zlib.deflate('cb', (e, b) => zlib.inflate(b, (e2, o) => res(o.toString())))));
        const pieces = []; await pipeline(Readable.from([Buffer.from('stream '), Buffer.from('zlib')]), zlib.createGzip(), zlib.createGunzip(), new Writable({ write(c, e, cb) { pieces.push(c); cb(); } })); r.push(Buffer.concat(pieces).toString());
        r.push(typeof zlib.constants.Z_BEST_COMPRESSION);
        // assert
        assert(true); assert.ok(1); assert.equal(1, '1'); assert.deepEqual({ a: 1 }, { a: '1' }); strict.deepEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] });
        try { strict.equal(1, '1'); } catch (e) { r.push(e.name, e.code, e.operator, e instanceof assert.AssertionError); }
        try { assert.deepStrictEqual({ a: 1 }, { a: '1' }); } catch (e) { r.push(e.code); }
        try { assert.notStrictEqual(2, 2); } catch (e) { r.push(e.operator); }
        assert.throws(() => { throw new TypeError('bad thing'); }, TypeError); assert.throws(() => { throw new Error('bad thing'); }, /bad/); assert.throws(() => { throw new Error('x'); }, { message: 'x' });
        try { assert.throws(() => {}); } catch (e) { r.push(e.message); }
        try { assert.throws(() => { throw new Error('x'); }, { message: 'y' }); } catch (e) { r.push(e.code); }
        await assert.rejects(Promise.reject(new Error('no')), /no/); await assert.rejects(async () => { throw new RangeError('r'); }, RangeError);
        try { await assert.rejects(Promise.resolve(1)); } catch (e) { r.push(e.message); }
        assert.match('abc', /b/); try { assert.match('abc', /z/); } catch (e) { r.push(e.operator); }
        try { assert.fail('custom'); } catch (e) { r.push(e.message); }
        try { assert.ok(false, 'mine'); } catch (e) { r.push(e.message, e.generatedMessage); }
        try { assert.strictEqual(1, 2, new RangeError('own')); } catch (e) { r.push(e.name); }
        r.push(assert.strict === strict, strict.strict === strict);
        // timers
        r.push(await sleep(2, 'slept'), await immediate('imm'));
        const t = timers.setTimeout(() => {}, 1000); r.push(typeof t.ref, t.hasRef(), t.unref().hasRef()); timers.clearTimeout(t);
        r.push(await new Promise((res) => timers.setImmediate((v) => res(v), 'arg')));
        const ac = new AbortController(); const p = sleep(1000, 'x', { signal: ac.signal }); ac.abort(); try { await p; } catch (e) { r.push(e.name); }
        let n = 0; await new Promise((res) => { const iv = timers.setInterval(() => { if (++n === 3) { timers.clearInterval(iv); res(); } }, 1); }); r.push(n);
        // util/types
        r.push(types.isPromise(Promise.resolve()), types.isUint8Array(Buffer.alloc(1)), types.isDate(new Date()), types.isRegExp('x'));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "true true abc raw u1 u2 789c 1f8b08 Z_DATA_ERROR ERR_BUFFER_TOO_LARGE cb stream zlib \
         number AssertionError ERR_ASSERTION strictEqual true ERR_ASSERTION notStrictEqual \
         Missing expected exception. ERR_ASSERTION Missing expected rejection. match custom \
         mine false RangeError true true slept imm function true false arg AbortError 3 \
         true true true false"
    );
}

/// A zlib bomb (64 MiB of zeros in 64 KiB of gzip), inflated whole by
/// gunzipSync or through a createGunzip stream by a Worker that keeps every
/// chunk, ends at the Worker's memory limit; a benign Worker on the same
/// thread answers before, while the attack runs and after.
#[tokio::test]
async fn a_zlib_bomb_ends_at_the_memory_limit() {
    use std::io::Write as _;
    use std::sync::Arc;

    use base64::Engine as _;
    use isolane_engine::{ExecuteError, PoolMode};

    use crate::node_buffer::node_worker;
    use crate::node_crypto::attack_beside;
    use crate::support::*;

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        gzip.write_all(&zeros).unwrap();
    }
    let bomb = base64::engine::general_purpose::STANDARD.encode(gzip.finish().unwrap());
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let attacks = [
        "const out = zlib.gunzipSync(bomb); return new Response(String(out.length));",
        "const kept = []; await new Promise((resolve, reject) => Readable.from([bomb]).pipe(zlib.createGunzip()).on('data', (c) => kept.push(c)).on('end', resolve).on('error', reject)); return new Response(String(kept.length));",
    ];
    for (i, attack) in attacks.iter().enumerate() {
        let script = format!(
            "import zlib from 'node:zlib'; import {{ Readable }} from 'node:stream'; import {{ Buffer }} from 'node:buffer';\n\
             const bomb = Buffer.from('{bomb}', 'base64');\n\
             export default {{ async fetch() {{ {attack} }} }};"
        );
        let mut hostile = (*node_worker(&format!("t/bomb-{i}"), &script, NodeCompat::V1)).clone();
        hostile.limits = memory_limits(32);
        let error = attack_beside(&engine, &neighbour, hostile).await;
        assert!(
            matches!(error, ExecuteError::MemoryLimit { limit_mib: 32 }),
            "{attack}: {error:?}"
        );
    }
}
