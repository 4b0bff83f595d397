// node:internal/util_diff — util.diff(actual, expected): the shortest edit
// script between two strings (by character) or two arrays of strings, as
// [op, value] pairs: 0 in both, 1 only in `actual`, -1 only in `expected`
// (workerd's answer order: an actual's run before the expected's). Myers'
// O((N+M)·D) greedy search; the work is bounded by the two lengths'
// product, so it stays within a Worker's CPU limit only as that allows.
// Runs as function (host, internal, require, module, exports).

const { invalidArgType } = require('node:internal/errors');

function checkSide(value, name) {
  if (typeof value === 'string') return;
  if (!Array.isArray(value)) throw invalidArgType(name, 'of type string', value);
  value.forEach((item, i) => {
    if (typeof item !== 'string') throw invalidArgType(`${name}[${i}]`, 'of type string', item);
  });
}

// The furthest-reaching paths, one V array kept per edit distance d.
function search(a, b) {
  const max = a.length + b.length;
  const offset = max + 1;
  const v = new Array(2 * max + 3).fill(0);
  const trace = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
      let x = down ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < a.length && y < b.length && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= a.length && y >= b.length) return trace;
    }
  }
  return trace;
}

// Walks the trace back from the end into the edit script.
function backtrack(a, b, trace) {
  const out = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d >= 0; d--) {
    const v = trace[d];
    const at = (k) => v[k + d + 1];
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) out.push([0, a[--x]]) && y--;
    if (d > 0) out.push(down ? [-1, b[--y]] : [1, a[--x]]);
  }
  return out.reverse();
}

function diff(actual, expected) {
  checkSide(actual, 'actual');
  checkSide(expected, 'expected');
  const a = typeof actual === 'string' ? actual.split('') : actual;
  const b = typeof expected === 'string' ? expected.split('') : expected;
  return backtrack(a, b, search(a, b));
}

module.exports = { diff };
