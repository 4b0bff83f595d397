// console.*: the worker logs lines and lists what it expects the host to have logged in the response's "logs" field ([level, message], in order); the harness compares them.

const expected = [];
function expectLog(level, message, call) {
  call();
  expected.push([level, message]);
}

export default {
  async fetch(request, env, ctx) {
    results = { passed: 0, failed: [] };
    expected.length = 0;
    await test('console has the usual methods', () => {
      for (const m of ['log', 'info', 'debug', 'warn', 'error', 'trace', 'assert', 'table', 'time', 'timeEnd', 'timeLog',
        'count', 'countReset', 'group', 'groupEnd', 'dir']) {
        eq(typeof console[m], 'function', m);
      }
      eq(Object.prototype.toString.call(console), '[object console]');
    });
    await test('levels and format specifiers', () => {
      expectLog('info', 'plain', () => console.log('plain'));
      expectLog('info', 'info line', () => console.info('info line'));
      expectLog('debug', 'debug line', () => console.debug('debug line'));
      expectLog('warn', 'warn line', () => console.warn('warn line'));
      expectLog('error', 'error line', () => console.error('error line'));
      expectLog('info', 'a b 1 true null undefined', () => console.log('a', 'b', 1, true, null, undefined));
      expectLog('info', 's=str d=42 i=3 f=1.5 %', () => console.log('s=%s d=%d i=%i f=%f %%', 'str', 42, 3.9, '1.5'));
      expectLog('info', 'j={"k":[1,2]} extra', () => console.log('j=%j', { k: [1, 2] }, 'extra'));
      expectLog('info', 'o={ a: 1 } O={ b: \'x\' }', () => console.log('o=%o O=%O', { a: 1 }, { b: 'x' }));
      expectLog('info', 'styled', () => console.log('%cstyled', 'color: red'));
      expectLog('info', 'missing %s', () => console.log('missing %s'));
      expectLog('info', 'big 12n NaN', () => console.log('big %d %d', 12n, {}));
      expectLog('info', '-0 0', () => console.log(-0, 0));
    });
    await test('values are inspected compactly', () => {
      expectLog('info', '{ a: 1, b: \'two\', c: [ 1, 2, 3 ], d: { e: { f: [Object] } } }',
        () => console.log({ a: 1, b: 'two', c: [1, 2, 3], d: { e: { f: { g: 1 } } } }));
      expectLog('info', '[ 1, \'x\', null, undefined, 5n, Symbol(s) ]', () => console.log([1, 'x', null, undefined, 5n, Symbol('s')]));
      expectLog('info', 'Map(1) { \'k\' => 1 } Set(2) { 1, 2 }', () => console.log(new Map([['k', 1]]), new Set([1, 2])));
      expectLog('info', '[Function: named] [Function (anonymous)] [class K]', () => console.log(function named() {}, (() => () => {})(), class K {}));
      expectLog('info', 'Uint8Array(3) [ 1, 2, 3 ] ArrayBuffer { byteLength: 4 }', () => console.log(new Uint8Array([1, 2, 3]), new ArrayBuffer(4)));
      expectLog('info', '1970-01-01T00:00:00.005Z /re/g', () => console.log(new Date(5), /re/g));
      expectLog('info', 'Point { x: 1, y: 2 }', () => { class Point { constructor() { this.x = 1; this.y = 2; } } console.log(new Point()); });
      expectLog('info', '[Object: null prototype] { z: 1 }', () => console.log(Object.assign(Object.create(null), { z: 1 })));
      expectLog('info', '{ \'needs-quote\': 1, [Symbol(k)]: 2 }', () => console.log({ 'needs-quote': 1, [Symbol('k')]: 2 }));
      expectLog('info', '{ self: [Circular] }', () => { const o = {}; o.self = o; console.log(o); });
      expectLog('info', '[ <2 empty items>, 1 ]', () => console.log([, , 1]));
      expectLog('info', '{ get: [Getter] }', () => console.log({ get get() { return 1; } }));
      expectLog('info', 'Headers { \'a\' => \'1\' } URL { href: \'https://a.com/\' }', () => console.log(new Headers({ a: '1' }), new URL('https://a.com')));
      expectLog('info', '[Number: 3] [String: \'s\']', () => console.log(new Number(3), new String('s')));
      const many = Array.from({ length: 150 }, (_, i) => i);
      expectLog('info', `[ ${many.slice(0, 100).join(', ')}, ... 50 more items ]`, () => console.log(many));
    });
    await test('errors print their stack', () => {
      const e = new TypeError('bad thing');
      console.error(e);
      expected.push(['error', e.stack]);
      const d = new DOMException('dom thing', 'NotFoundError');
      console.log(d);
      expected.push(['info', d.stack]);
    });
    await test('assert, count, group, time', () => {
      console.assert(true, 'not logged');
      expectLog('error', 'Assertion failed', () => console.assert(false));
      expectLog('error', 'Assertion failed: x is 1', () => console.assert(0, 'x is %d', 1));
      expectLog('info', 'default: 1', () => console.count());
      expectLog('info', 'default: 2', () => console.count());
      expectLog('info', 'k: 1', () => console.count('k'));
      console.countReset();
      expectLog('info', 'default: 1', () => console.count());
      expectLog('info', 'outer', () => console.group('outer'));
      expectLog('info', '  inner\n  second line', () => console.log('inner\nsecond line'));
      console.groupEnd();
      expectLog('info', 'after group', () => console.log('after group'));
      console.time('t');
      console.timeEnd('t');
      expectLog('warn', 'Timer \'nope\' does not exist', () => console.timeEnd('nope'));
    });
    await test('trace logs a stack', () => {
      console.trace('here %d', 1);
      expected.push(['debug', 'TRACE-PLACEHOLDER']);
      expected.pop();
    });
    return new Response(JSON.stringify({ ...results, logs: expected }), { headers: { 'content-type': 'application/json' } });
  },
};
