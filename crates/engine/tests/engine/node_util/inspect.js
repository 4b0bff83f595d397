// node:util vectors (inspect): the body of an async function given `util`; node_util.rs
// compares its answer with inspect.txt, what workerd answers for the same code.
const r = [];
const i = (v, o) => util.inspect(v, o);
r.push(i({ a: { b: { c: {} } } }), i({ deep: { deeper: { deepest: { gone: 1 } } } }, { depth: 0 }));
const sparse = [1, , , 'x']; sparse.extra = true; r.push(i(sparse), i(new Array(3)));
class Point { constructor() { this.x = 1; this.y = 2; } } r.push(i(new Point()), i([new Point()], { depth: 0 }));
const bare = Object.create(null); bare.k = 'v'; r.push(i(bare), i(Object.create(null)));
r.push(i(new Number(-0)), i(new String('hi')), i(Object(7n)), i(new Boolean(false)));
r.push(i({ get g() { return 42; }, set s(v) {}, get gs() { return 'x'; }, set gs(v) {} }, { getters: true }));
r.push(i([1, 2], { showHidden: true }), i({ b: 1, a: 2, c: { z: 1, y: 2 } }, { sorted: true }));
r.push(i(Array.from({ length: 30 }, (_, n) => n * 3)), i(['a', 'b', 'c', 'd'], { maxArrayLength: 2 }));
r.push(i({ key: 'x'.repeat(70), other: 1 }), i(new Map([['m', new Map([[1, [2]]])]])), i(new Set([{ s: 1 }])));
const e = new RangeError('bad'); e.code = 'E_BAD'; r.push(i(e).split('\n').filter((l) => !l.includes(' at ')).join('|'));
r.push(i(Promise.resolve({ ok: 1 })), i(Promise.reject(3).catch(() => {}) && new Promise(() => {})));
const rejected = Promise.reject(new Error('no')); rejected.catch(() => {}); r.push(i(rejected).split('\n')[0]);
r.push(i(new Proxy({ t: 1 }, {}), { showProxy: true }), i({ [Symbol('a\nb')]: 1, __proto__: null, ['__proto__']: 2 }));
const a = { name: 'a' }; const b = { a }; a.b = b; a.self = a; r.push(i(a), i([a]));
r.push(i("it's"), i('it\'s "q"'), i('\x01\x7f\ud800'), i({ 'key with space': 1, [Symbol('s')]: 2, valid_id: 3 }));
r.push(i(async () => {}), i(function* gen() {}), i(class extends Point {}), i(Object.assign(function named() {}, { p: 1 })));
r.push(i(new Uint8Array([1, 2, 3]), { showHidden: true }), i(new ArrayBuffer(3)), i(new DataView(new ArrayBuffer(2))), i(new WeakSet()));
r.push(i({ a: 1 }, { colors: true }), i([null, undefined, 'x', 5n, Symbol('y')], { colors: true }));
r.push(i({ [util.inspect.custom]: (depth, opts) => `custom ${depth} ${typeof opts.stylize}` }), i({ nested: { [util.inspect.custom]: () => ({ re: 'placed' }) } }));
r.push(i((function () { return arguments; })(1, 'two')), i(new Date(0)), i(/re/gi), i(new Date(NaN)));
r.push(i('a\n'.repeat(20), { breakLength: 20 }), i({ v: 'line one\nline two\nline three and more text here ok' }));
r.push(i(Object.assign(Object.create({ inherited: 1 }), { own: 2 })), i({ a: [{ b: { c: [1] } }] }, { depth: null, compact: false }));
const limit = Error.stackTraceLimit; Error.stackTraceLimit = 0; const bare2 = new Error('no frames'); Error.stackTraceLimit = limit;
const late = new Error('kept'); late.extra = 1; r.push(i(bare2), i(Object.assign(bare2, { code: 'X' }), { compact: true, breakLength: 3 }), i(late).split('\n').filter((l) => !l.includes(' at ')).join('|'));
class Failure extends TypeError {} r.push(i(new Failure('typed')).split('\n')[0], i({ class() {} }), i({ r: Object.assign(/x/, { p: 1 }) }, { depth: 0 }), i(new String('ab'), { showHidden: true }));
let head = {}; const list = head; for (let n = 0; n < 100000; n++) head = head.next = {}; r.push(i(list), String(i(list, { depth: Infinity }).includes('Inspection interrupted prematurely')));
r.push(i({ [util.inspect.custom](depth, opts) { return Object.keys(opts).sort().join(',') + ' ' + depth + ' ' + opts.depth; } }, { depth: null }));
class Temp { constructor() { this.c = 21; } get f() { return this.c * 2; } static s() {} } r.push(i(new Temp(), { showHidden: true, getters: true }), i(new Temp(), { showHidden: true }), i(new Temp()));
const trapped = new Proxy({ a: 1 }, { get() { throw new Error('get trap'); }, ownKeys() { throw new Error('ownKeys trap'); }, getOwnPropertyDescriptor() { throw new Error('trap'); } });
const revocable = Proxy.revocable({}, {}); revocable.revoke(); r.push(i(trapped), i({ inner: trapped }), i(revocable.proxy), i(new Proxy([1, 2], {})), i(new Proxy(function named() {}, {})));
const gen = (() => function* () {})(); Object.setPrototypeOf(gen, Object.getPrototypeOf(async () => {})); r.push(i(gen), i({ get [Symbol.iterator]() { throw new Error('no'); } }));
const saved = Object.getOwnPropertyDescriptor(Object.prototype, 'constructor'); Object.defineProperty(Object.prototype, 'constructor', { get: () => Object.prototype, configurable: true });
try { r.push(i({ plain: [1] })); } finally { Object.defineProperty(Object.prototype, 'constructor', saved); }
return r.join('\n---\n');
