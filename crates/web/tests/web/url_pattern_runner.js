// Runs the WPT URLPattern vectors (urlpatterntestdata.json, POSTed as the
// request body; from tests/engine/url_pattern.rs) through the global URLPattern and answers
// {"passed": N, "failed": [{name, error}]}. Each vector: `pattern` (the
// constructor's arguments) and `expected_obj` (the component patterns, or
// "error" when the constructor must throw TypeError); `inputs` (test()/exec()
// arguments) and `expected_match` (null, "error", or the exec() result,
// components left out meaning {input: "", groups: {"0": ""}} unless listed in
// `exactly_empty_components`).
const COMPONENTS = ['protocol', 'username', 'password', 'hostname', 'port', 'pathname', 'search', 'hash'];
// Components whose presence in an init pattern makes later ones wildcards
// instead of being taken from the base URL.
const EARLIER = {
  protocol: [], username: [], password: [],
  hostname: ['protocol'],
  port: ['protocol', 'hostname'],
  pathname: ['protocol', 'hostname', 'port'],
  search: ['protocol', 'hostname', 'port', 'pathname'],
  hash: ['protocol', 'hostname', 'port', 'pathname', 'search'],
};

const show = (v) => JSON.stringify(v, (k, x) => (x === undefined ? '(undefined)' : x));

function expectedPattern(entry, component) {
  if (entry.exactly_empty_components && entry.exactly_empty_components.includes(component)) return '';
  const first = entry.pattern[0];
  if (typeof first === 'object' && first !== null && first[component]) return first[component];
  if (typeof first === 'object' && first !== null && EARLIER[component].some((c) => c in first)) return '*';
  let base = null;
  if (typeof first === 'object' && first !== null && first.baseURL) base = new URL(first.baseURL);
  else if (typeof entry.pattern[1] === 'string') base = new URL(entry.pattern[1]);
  if (base !== null && component !== 'username' && component !== 'password') {
    const value = base[component];
    if (component === 'protocol') return value.slice(0, -1);
    if (component === 'search' || component === 'hash') return value.slice(1);
    return value;
  }
  return '*';
}

function expectThrows(fn, what) {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof TypeError)) throw new Error(`${what}: threw ${e && e.name}, expected TypeError`);
    return;
  }
  throw new Error(`${what}: did not throw`);
}

function sameGroups(actual, expected) {
  const a = Object.keys(actual).sort(), b = Object.keys(expected).sort();
  if (show(a) !== show(b)) return false;
  return a.every((k) => Object.is(actual[k], expected[k]));
}

function check(entry) {
  if (entry.expected_obj === 'error') {
    expectThrows(() => new URLPattern(...entry.pattern), 'constructor');
    return;
  }
  const pattern = new URLPattern(...entry.pattern);
  const expectedObj = entry.expected_obj || {};
  for (const c of COMPONENTS) {
    const expected = expectedObj[c] !== undefined ? expectedObj[c] : expectedPattern(entry, c);
    if (pattern[c] !== expected) throw new Error(`pattern.${c}: got ${show(pattern[c])}, expected ${show(expected)}`);
  }
  if (entry.expected_match === 'error') {
    expectThrows(() => pattern.test(...entry.inputs), 'test()');
    expectThrows(() => pattern.exec(...entry.inputs), 'exec()');
    return;
  }
  const tested = pattern.test(...entry.inputs);
  if (tested !== Boolean(entry.expected_match)) throw new Error(`test(): got ${tested}`);
  const result = pattern.exec(...entry.inputs);
  if (!entry.expected_match || typeof entry.expected_match !== 'object') {
    if (result !== entry.expected_match) throw new Error(`exec(): got ${show(result)}, expected ${show(entry.expected_match)}`);
    return;
  }
  const inputs = entry.expected_match.inputs || entry.inputs;
  if (result.inputs.length !== inputs.length) throw new Error(`exec().inputs: got ${show(result.inputs)}`);
  result.inputs.forEach((input, i) => {
    if (typeof input === 'string') {
      if (input !== inputs[i]) throw new Error(`exec().inputs[${i}]: got ${show(input)}, expected ${show(inputs[i])}`);
      return;
    }
    for (const c of COMPONENTS) {
      if (input[c] !== inputs[i][c]) throw new Error(`exec().inputs[${i}].${c}: got ${show(input[c])}`);
    }
  });
  for (const c of COMPONENTS) {
    let expected = entry.expected_match[c];
    if (!expected) {
      const empty = entry.exactly_empty_components && entry.exactly_empty_components.includes(c);
      expected = { input: '', groups: empty ? {} : { 0: '' } };
    }
    const groups = {};
    for (const [k, v] of Object.entries(expected.groups)) groups[k] = v === null ? undefined : v;
    const got = result[c];
    if (got.input !== expected.input || !sameGroups(got.groups, groups)) {
      throw new Error(`exec().${c}: got ${show(got)}, expected ${show({ input: expected.input, groups })}`);
    }
  }
}

export default {
  async fetch(request) {
    const data = await request.json();
    let passed = 0;
    const failed = [];
    for (const entry of data) {
      const name = `${show(entry.pattern)} ${show(entry.inputs)}`;
      try {
        check(entry);
        passed++;
      } catch (e) {
        failed.push({ name, error: String(e && e.message || e) });
      }
    }
    return Response.json({ passed, failed });
  },
};
