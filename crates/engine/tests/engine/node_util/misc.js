// node:util vectors (misc): the body of an async function given `util`; node_util.rs
// compares its answer with misc.txt, what workerd answers for the same code.
const r = [];
const t = util.types;
const fakeDate = { [Symbol.toStringTag]: 'Date' }; const fakeMap = { [Symbol.toStringTag]: 'Map' };
r.push([t.isDate(fakeDate), t.isMap(fakeMap), t.isDate(new Date()), t.isMap(new Map()), t.isRegExp(RegExp.prototype), t.isRegExp(/x/)].join());
r.push([t.isProxy(new Proxy({}, {})), t.isProxy({}), t.isPromise(Promise.resolve()), t.isPromise({ then() {} }), t.isNumberObject(new Number(1)), t.isNumberObject(1), t.isBoxedPrimitive(Object(Symbol())), t.isStringObject('s')].join());
r.push([t.isNativeError(new TypeError()), t.isNativeError({ __proto__: Error.prototype }), t.isArgumentsObject((function () { return arguments; })()), t.isArgumentsObject([]), t.isGeneratorObject((function* () {})()), t.isSetIterator(new Set().values())].join());
const errors = [];
const code = (fn) => { try { fn(); errors.push('none'); } catch (e) { errors.push(`${e.code}: ${e.message}`); } };
code(() => util.promisify('x')); code(() => util.promisify(Object.assign(() => {}, { [util.promisify.custom]: 1 })));
code(() => util.callbackify(null)); code(() => util.callbackify(async () => {})(1));
code(() => util.inherits(function () {}, null)); code(() => util.inherits(null, function () {})); code(() => util.inherits(function () {}, Object.assign(() => {}, { prototype: undefined })));
code(() => util.styleText('nope', 'x')); code(() => util.styleText('red', 5)); code(() => util.stripVTControlCharacters(5));
r.push(errors.join('\n'));
r.push(JSON.stringify([util.styleText('red', 'x'), util.styleText('red', 'x', { validateStream: false }), util.styleText(['bold', 'underline'], 'y', { validateStream: false }), util.stripVTControlCharacters('\u001b[31mred\u001b[39m \u001b]8;;http://a\u0007link\u001b]8;;\u0007')]));
const cb = util.callbackify(async function fetchIt(a) { return a; }); r.push(`${cb.name} ${cb.length}`);
const falsy = await new Promise((res) => util.callbackify(() => Promise.reject(0))((e) => res(e)));
r.push(`${falsy.code} ${falsy.message} ${falsy.reason}`);
const two = util.promisify((cb) => cb(null, 'first', 'second')); r.push(await two());
r.push([util.isDate(new Date()), util.isError(new Error()), util.isPrimitive(null), util.isPrimitive({}), util.isObject(null), util.isRegExp(/x/), util.isBuffer(new Uint8Array(1)), util.isNullOrUndefined(undefined)].join());
r.push(JSON.stringify(util._extend({ a: 1 }, { b: 2 })), JSON.stringify(util._extend({ a: 1 }, null)));
const d = util.isDeepStrictEqual; const c1 = {}; c1.s = c1; const c2 = {}; c2.s = c2;
r.push([d(new Set([{ a: 1 }]), new Set([{ a: 1 }])), d(new Map([[{ k: 1 }, 'v']]), new Map([[{ k: 1 }, 'v']])), d(0, -0), d(NaN, NaN), d([0], [-0]),
  d(new Uint8Array([1]), new Uint8Array([1])), d(new Uint8Array([1]), new Int8Array([1])), d(new Number(1), new Number(2)), d(new Error('x'), new Error('y')),
  d({ [Symbol.for('s')]: 1 }, { [Symbol.for('s')]: 2 }), d([1, , 3], [1, undefined, 3]), d(Object.create(null), {}), d(/a/g, /a/i), d(c1, c2),
  d(new Set([1, { a: [2] }]), new Set([{ a: [2] }, 1])), d({ a: undefined }, { b: undefined }), d(new Set([{ a: 1 }, { a: 1 }]), new Set([{ a: 1 }, { a: 2 }]))].join());
return r.join('\n---\n');
