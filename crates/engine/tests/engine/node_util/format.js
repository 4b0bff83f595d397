// node:util vectors (format): the body of an async function given `util`; node_util.rs
// compares its answer with format.txt, what workerd answers for the same code.
const r = [];
const f = util.format;
class Named { toString() { return 'custom text'; } }
r.push(f('%s|%s|%s|%s', new Named(), { toString: 5 }, -0, 12n), f('%s', new Date(0)), f('%s', [1, [2, [3]]]));
r.push(f('%d|%d|%d|%d', '42', -0, {}, 3n), f('%i|%i', '42.9px', Symbol('x')), f('%f|%f', '1.5e3', 'x'));
const circ = { c: 1 }; circ.me = circ; r.push(f('%j', circ), f('%j', Symbol('x')), f('%j %j', { a: [1] }, 'str'));
try { f('%j', { toJSON() { throw new Error('toJSON broke'); } }); r.push('no throw'); } catch (e) { r.push('threw ' + e.message); }
r.push(f('%%%s%%%%', 'hi'), f('%%|%s%%', 'x'), f('%s:%s', 'only'), f('%x %s', 1), f('no directives', 1, 'two', { three: 3 }), f(1, 'a', [2]));
r.push(f('%o', { f() {}, a: [1] }), f('%O', { a: { b: { c: { d: 1 } } } }), f('%c%s', 'color: red', 'shown'));
r.push(util.formatWithOptions({ numericSeparator: true }, '%d %i %s', 1234567, 7654321, 1234.5678), util.formatWithOptions({ colors: true }, 'x', 1, null));
try { util.formatWithOptions(null, 'x'); } catch (e) { r.push(e.code + ': ' + e.message); }
return r.join('\n---\n');
