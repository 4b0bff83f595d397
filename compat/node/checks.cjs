// The checks, as CommonJS so that each module is required on its own (a
// missing one throws here, not at load).
const checks = [];
const check = (name, fn) => checks.push([name, fn]);
const mod = (name) => require(`node:${name}`);

// buffer (4)
check('buffer base64 round trip', () => mod('buffer').Buffer.from(mod('buffer').Buffer.from('héllo').toString('base64'), 'base64').toString() === 'héllo');
check('buffer concat/equals', () => { const { Buffer } = mod('buffer'); return Buffer.concat([Buffer.from('ab'), Buffer.from('c')]).equals(Buffer.from('abc')); });
check('buffer readUInt32BE', () => mod('buffer').Buffer.from([1, 2, 3, 4]).readUInt32BE(0) === 0x01020304);
check('Buffer global', () => globalThis.Buffer === mod('buffer').Buffer);
// events (3)
check('events emit', () => { const E = mod('events'); const e = new E(); let n = 0; e.on('x', (v) => { n += v; }); e.emit('x', 2); return n === 2; });
check('events.once', async () => { const { EventEmitter, once } = mod('events'); const e = new EventEmitter(); const p = once(e, 'go'); e.emit('go', 7); return (await p)[0] === 7; });
check('events error without listener', () => { const E = mod('events'); try { new E().emit('error', new Error('boom')); return false; } catch (e) { return e.message === 'boom'; } });
// async_hooks (3)
check('AsyncLocalStorage run', () => { const { AsyncLocalStorage } = mod('async_hooks'); const als = new AsyncLocalStorage(); return als.run(1, () => als.getStore()) === 1 && als.getStore() === undefined; });
check('AsyncLocalStorage across await and timers', () => { const { AsyncLocalStorage } = mod('async_hooks'); const als = new AsyncLocalStorage(); return als.run('s', async () => { await new Promise((r) => setTimeout(r, 1)); await null; return als.getStore() === 's'; }); });
check('AsyncResource', () => { const { AsyncLocalStorage, AsyncResource } = mod('async_hooks'); const als = new AsyncLocalStorage(); const r = als.run('x', () => new AsyncResource('t')); return r.runInAsyncScope(() => als.getStore()) === 'x'; });
// util (3)
check('util.format', () => mod('util').format('%s=%d %j', 'a', 1, { b: 2 }) === 'a=1 {"b":2}');
check('util.promisify', async () => { const f = mod('util').promisify((a, cb) => cb(null, a + 1)); return (await f(1)) === 2; });
check('util.types and inspect', () => { const u = mod('util'); return u.types.isUint8Array(new Uint8Array()) && u.inspect({ a: [1, 'x'] }) === "{ a: [ 1, 'x' ] }"; });
// path (2)
check('path.join', () => mod('path').join('/a/b', '../c', 'd.txt') === '/a/c/d.txt');
check('path/posix basename, extname', () => { const p = require('node:path/posix'); return p.basename('/x/y.tar.gz', '.gz') === 'y.tar' && p.extname('a.js') === '.js'; });
// querystring (2)
check('querystring.parse', () => { const q = mod('querystring').parse('a=1&b=x%20y&a=2'); return q.b === 'x y' && q.a.length === 2; });
check('querystring.stringify', () => mod('querystring').stringify({ a: [1, 2], b: 'x y' }) === 'a=1&a=2&b=x%20y');
// string_decoder (2)
check('StringDecoder split character', () => { const { StringDecoder } = mod('string_decoder'); const d = new StringDecoder('utf8'); const euro = new Uint8Array([0xe2, 0x82, 0xac]); return d.write(euro.subarray(0, 1)) === '' && d.write(euro.subarray(1)) === '€'; });
check('StringDecoder end', () => { const { StringDecoder } = mod('string_decoder'); const d = new StringDecoder('utf8'); d.write(new Uint8Array([0xe2])); return d.end() === '\ufffd'; });
// crypto (3)
check('crypto.createHash', () => mod('crypto').createHash('sha256').update('abc').digest('hex') === 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
check('crypto.createHmac', () => mod('crypto').createHmac('sha256', 'k').update('m').digest('base64').length === 44);
check('crypto.randomBytes', () => mod('crypto').randomBytes(16).length === 16);
// zlib (2)
check('zlib gzip round trip', () => { const z = mod('zlib'); return z.gunzipSync(z.gzipSync('hello hello')).toString() === 'hello hello'; });
check('zlib deflate round trip', () => { const z = mod('zlib'); return z.inflateSync(z.deflateSync('abc')).toString() === 'abc'; });
// stream (2)
check('stream Readable.from', async () => { const { Readable } = mod('stream'); const out = []; for await (const c of Readable.from(['a', 'b'])) out.push(c); return out.join('') === 'ab'; });
check('stream/promises pipeline', async () => { const { Readable, Transform, Writable } = mod('stream'); const { pipeline } = require('node:stream/promises'); let got = ''; await pipeline(Readable.from(['a', 'b']), new Transform({ transform(c, e, cb) { cb(null, String(c).toUpperCase()); } }), new Writable({ write(c, e, cb) { got += c; cb(); } })); return got === 'AB'; });
// assert (2)
check('assert.deepStrictEqual', () => { mod('assert').deepStrictEqual({ a: [1] }, { a: [1] }); return true; });
check('assert throws AssertionError', () => { try { mod('assert').strictEqual(1, 2); return false; } catch (e) { return e.code === 'ERR_ASSERTION'; } });
// process (2)
check('process.nextTick', () => new Promise((resolve) => mod('process').nextTick(() => resolve(true))));
check('process.env and version', () => { const p = mod('process'); return typeof p.env === 'object' && typeof p.version === 'string'; });
// diagnostics_channel (1)
check('diagnostics_channel', () => { const dc = mod('diagnostics_channel'); let got; dc.subscribe('c', (m) => { got = m; }); dc.channel('c').publish(5); return got === 5; });
// url (1)
check('url.fileURLToPath and format', () => { const u = mod('url'); return u.fileURLToPath('file:///a/b') === '/a/b' && u.format({ protocol: 'http', host: 'x.test', pathname: '/p' }) === 'http://x.test/p'; });

module.exports = checks;
