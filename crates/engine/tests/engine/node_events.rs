//! `node:events` and `node:async_hooks`; each answer is what Node 20 prints
//! for the same code.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;

#[tokio::test]
async fn event_emitter_behaves_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import EventEmitter, { once, errorMonitor, EventEmitter as EE2 } from 'node:events';",
        r#"
        const r = [];
        r.push(EventEmitter === EE2, typeof once);
        const e = new EventEmitter();
        const seen = [];
        e.on('x', (a, b) => seen.push('on' + a + b));
        e.prependListener('x', () => seen.push('first'));
        e.once('x', () => seen.push('once'));
        r.push(e.emit('x', 1, 2), e.emit('x', 3, 4), e.emit('nothing'), seen.join(','));
        r.push(e.listenerCount('x'), e.eventNames().join('|'));
        const names = [];
        e.on('newListener', (n) => names.push(n));
        e.on('removeListener', (n) => names.push('-' + n));
        const f = () => {};
        e.on('y', f); e.off('y', f);
        r.push(names.join(','));
        try { e.emit('error', new Error('boom')); } catch (err) { r.push(err.message); }
        try { e.emit('error', 'str'); } catch (err) { r.push(err.code); }
        let monitored = 0; e.on(errorMonitor, () => monitored++); e.on('error', () => {});
        e.emit('error', new Error('x')); r.push(monitored);
        const p = once(e, 'done'); e.emit('done', 'a', 'b'); r.push((await p).join('+'));
        const q = once(e, 'never'); e.emit('error', new Error('bad'));
        try { await q; } catch (err) { r.push('rejected ' + err.message); }
        class Sub extends EventEmitter {} const s = new Sub(); let got; s.on('z', function () { got = this === s; }); s.emit('z'); r.push(got);
        e.removeAllListeners('x'); r.push(e.listenerCount('x'), e.getMaxListeners(), EventEmitter.defaultMaxListeners);
        const ac = new AbortController(); const w = once(e, 'w', { signal: ac.signal }); ac.abort();
        try { await w; } catch (err) { r.push(err.name); }
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "true function true true false first,on12,once,first,on34 2 x removeListener,y,-y boom \
         ERR_UNHANDLED_ERROR 1 a+b rejected bad true 0 10 10 AbortError"
    );
}

#[tokio::test]
async fn async_local_storage_follows_promises_and_timers() {
    let out = answer(
        NodeCompat::V1,
        "import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';",
        r#"
        const als = new AsyncLocalStorage();
        const other = new AsyncLocalStorage();
        const r = [];
        r.push(String(als.getStore()));
        const inner = await als.run('A', async () => {
          const seen = [als.getStore()];
          await null; seen.push(als.getStore());
          await new Promise((res) => setTimeout(res, 1)); seen.push(als.getStore());
          const t = await new Promise((res) => setTimeout(() => res(als.getStore()), 1)); seen.push(t);
          seen.push(await Promise.resolve().then(() => als.getStore()));
          other.run('B', () => seen.push(als.getStore() + other.getStore()));
          seen.push(String(other.getStore()));
          als.exit(() => seen.push(String(als.getStore())));
          const q = new Promise((res) => queueMicrotask(() => res(als.getStore()))); seen.push(await q);
          return seen.join(',');
        });
        r.push(inner, String(als.getStore()));
        const resource = als.run('R', () => new AsyncResource('t'));
        r.push(resource.runInAsyncScope(() => als.getStore()));
        const bound = als.run('bound', () => AsyncLocalStorage.bind(() => als.getStore()));
        r.push(bound());
        const snap = als.run('snap', () => AsyncLocalStorage.snapshot());
        r.push(snap(() => als.getStore()));
        const both = await Promise.all([als.run(1, async () => { await new Promise((res) => setTimeout(res, 5)); return als.getStore(); }), als.run(2, async () => { await null; return als.getStore(); })]);
        r.push(both.join('|'));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "undefined A,A,A,A,A,AB,undefined,undefined,A undefined R bound snap 1|2"
    );
}

/// `nodejs_als` alone gives async_hooks; enterWith does not leak into the
/// next request on the same isolate.
#[tokio::test]
async fn async_hooks_load_under_nodejs_als_and_requests_start_clean() {
    use crate::support::*;
    let (engine, _) = engine(1, isolane_engine::PoolMode::Pinned);
    let source = "import { AsyncLocalStorage } from 'node:async_hooks';
        const als = new AsyncLocalStorage();
        let n = 0;
        export default { fetch() { const before = String(als.getStore()); als.enterWith(++n); return new Response(before); } };";
    let worker = crate::node_buffer::node_worker("t/als", source, NodeCompat::Als);
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "undefined".to_owned())
    );
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "undefined".to_owned())
    );
}

/// `node:path` (and `path/posix`), `node:string_decoder`,
/// `node:querystring`; answers as Node 20's.
#[tokio::test]
async fn path_string_decoder_and_querystring_behave_as_in_node() {
    let out = answer(
        NodeCompat::V2,
        "import path from 'node:path'; import { basename } from 'path/posix';
         import { StringDecoder } from 'node:string_decoder'; import qs from 'querystring';",
        r#"
        const r = [];
        r.push(path.join('/a/b', '../c', 'd.txt'), path.resolve('x', '../y'), path.relative('/a/b/c', '/a/d'));
        r.push(path.normalize('a//b/./c/..'), path.dirname('/a/b/'), basename('/x/y.tar.gz', '.gz'), path.extname('.profile'));
        r.push(JSON.stringify(path.parse('/home/u/f.txt')), path.format({ dir: '/a', name: 'b', ext: 'js' }), path.sep, path.posix === path);
        const d = new StringDecoder('utf8'); const euro = Buffer.from('€');
        r.push(JSON.stringify(d.write(euro.subarray(0, 2))), d.write(euro.subarray(2)), JSON.stringify(d.write(Buffer.from([0xf0])) + d.end()));
        const u = new StringDecoder('utf16le'); r.push(u.write(Buffer.from([0x61])) + u.write(Buffer.from([0x00, 0x62])) + u.end(Buffer.from([0x00])));
        r.push(JSON.stringify(qs.parse('a=1&b=x%20y+z&a=2&c')), qs.stringify({ a: [1, 2], b: "x y!", c: null }), qs.escape('ä&'), qs.unescape('%41%zz'));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "/a/c/d.txt /y ../../d a/b /a y.tar  \
         {\"root\":\"/\",\"dir\":\"/home/u\",\"base\":\"f.txt\",\"ext\":\".txt\",\"name\":\"f\"} /a/b.js / true \
         \"\" € \"\u{fffd}\" ab \
         {\"a\":[\"1\",\"2\"],\"b\":\"x y z\",\"c\":\"\"} a=1&a=2&b=x%20y!&c= %C3%A4%26 A%zz"
    );
}

/// `node:util`; answers as Node 20's, but an enumerable symbol key prints
/// as workerd and Node 22+ print it (`Symbol(s): 2`).
#[tokio::test]
async fn util_behaves_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import util from 'node:util';",
        r#"
const r = [];
r.push(util.format('%s=%d %j', 'a', 1, { b: 2 }), util.format('%s %o', 'x'), util.format('a', 1, 'b', { c: [1] }), util.format('%i%%', 42.9));
r.push(util.inspect({ a: [1, 'x'] }), util.inspect('s'), util.inspect([]), util.inspect({}), util.inspect(new Map([['k', 1]])), util.inspect(new Set([1])));
r.push(util.inspect({ a: { b: { c: { d: 1 } } } }), util.inspect(function foo() {}), util.inspect(() => {}), util.inspect(class A {}), util.inspect(-0), util.inspect(10n), util.inspect(null));
r.push(util.inspect({ 'a-b': 1, [Symbol('s')]: 2 }), util.inspect(new Uint8Array([1, 2])), util.inspect(Object.create(null)), util.inspect([undefined, null]));
const o = { x: 1 }; o.self = o; r.push(util.inspect(o));
r.push(util.types.isUint8Array(new Uint8Array()), util.types.isPromise(Promise.resolve()), util.types.isDate(new Date()), util.types.isRegExp(/x/), util.types.isAsyncFunction(async () => {}), util.types.isTypedArray(new DataView(new ArrayBuffer(1))));
const p = util.promisify((a, cb) => cb(null, a + 1)); r.push(await p(1));
const bad = util.promisify((cb) => cb(new Error('no'))); try { await bad(); } catch (e) { r.push(e.message); }
const cbd = util.callbackify(async (x) => x * 2); r.push(await new Promise((res) => cbd(4, (e, v) => res(v))));
function A() {} function B() {} util.inherits(A, B); r.push(new A() instanceof B, A.super_ === B);
r.push(util.isDeepStrictEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), util.isDeepStrictEqual([1], ['1']));

        return r.join(' | ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        r#"a=1 {"b":2} | x %o | a 1 b { c: [ 1 ] } | 42% | { a: [ 1, 'x' ] } | 's' | [] | {} | Map(1) { 'k' => 1 } | Set(1) { 1 } | { a: { b: { c: [Object] } } } | [Function: foo] | [Function (anonymous)] | [class A] | -0 | 10n | null | { 'a-b': 1, Symbol(s): 2 } | Uint8Array(2) [ 1, 2 ] | [Object: null prototype] {} | [ undefined, null ] | <ref *1> { x: 1, self: [Circular *1] } | true | true | true | true | true | false | 2 | no | 8 | true | true | true | false"#
    );
}

/// `node:url` and `node:diagnostics_channel` answer as Node 20's;
/// `node:process` as workerd's (its version, platform, cwd), and under v2
/// it is the `process` global.
#[tokio::test]
async fn url_diagnostics_channel_and_process() {
    let out = answer(
        NodeCompat::V2,
        "import url from 'node:url'; import dc from 'node:diagnostics_channel'; import proc from 'node:process';",
        r#"
const r = [];
r.push(url.fileURLToPath('file:///a/b%20c'), url.pathToFileURL('/x/y z#?').href, url.format({ protocol: 'http', host: 'x.test', pathname: '/p', query: { a: 1 } }));
r.push(url.format(new URL('https://u:p@x.test/a?b#c'), { auth: false, fragment: false }), url.resolve('/one/two/three', 'four'), url.resolve('http://example.com/', '/one'));
const p = url.parse('https://user:pw@host.test:8080/p/a?x=1#h', true);
r.push(p.protocol, p.auth, p.host, p.port, p.hostname, p.hash, p.search, JSON.stringify(p.query), p.pathname, p.path, p.href);
let got = []; const fn = (m, n) => got.push(n + ':' + m); dc.subscribe('ch', fn); dc.channel('ch').publish(5); r.push(dc.hasSubscribers('ch'), dc.unsubscribe('ch', fn), dc.hasSubscribers('ch'), got.join());
const tc = dc.tracingChannel('op'); const ev = []; tc.subscribe({ start: () => ev.push('start'), end: () => ev.push('end'), asyncStart: () => ev.push('as'), asyncEnd: () => ev.push('ae'), error: () => ev.push('err') });
r.push(tc.traceSync(() => 7), await tc.tracePromise(async () => 8), ev.join());

        const ticks = []; process.nextTick(() => ticks.push('tick')); await null; await null;
        r.push(process.version, process.platform, process.cwd(), typeof process.env, ticks.join(), process === proc);
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        r#"/a/b c file:///x/y%20z%23%3F http://x.test/p?a=1 https://x.test/a?b /one/two/four http://example.com/one https: user:pw host.test:8080 8080 host.test #h ?x=1 {"x":"1"} /p/a /p/a?x=1 https://user:pw@host.test:8080/p/a?x=1#h true true false ch:5 7 8 start,end,start,end,as,ae v22.23.4 linux /bundle object tick true"#
    );
}

/// Node's test-event-emitter-method-names: every method's `name` is its
/// own, and `on`/`off` are `addListener`/`removeListener`.
#[tokio::test]
async fn emitter_methods_have_their_node_names() {
    let out = answer(
        NodeCompat::V1,
        "import { EventEmitter } from 'node:events';",
        r#"
        const E = EventEmitter.prototype;
        const wrong = Object.getOwnPropertyNames(E)
          .filter((n) => !['constructor', 'on', 'off'].includes(n) && typeof E[n] === 'function' && E[n].name !== n);
        return [E.on === E.addListener, E.off === E.removeListener, wrong.join(',') || 'none'].join(' ');
        "#,
    )
    .await;
    assert_eq!(out, "true true none");
}
