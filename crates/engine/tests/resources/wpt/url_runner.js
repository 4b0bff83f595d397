// Runs the WPT URL vectors (POSTed as JSON: {"parsing": urltestdata.json,
// "setters": setters_tests.json}) through the global URL and answers
// {"passed": N, "failed": [{name, error}]}.
// Parsing vectors: `input` and `base` (null: none); `failure: true` means the
// constructor must throw TypeError (and URL.canParse answer false), else each
// listed component must read as given. Setter vectors: for each component,
// `href`, `new_value` and the `expected` components after setting it.
const PARTS = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
const show = (v) => JSON.stringify(v);

function checkParse(entry) {
  const args = entry.base === null ? [entry.input] : [entry.input, entry.base];
  if (entry.failure) {
    let thrown = null;
    try { new URL(...args); } catch (e) { thrown = e; }
    if (!(thrown instanceof TypeError)) throw new Error(`expected TypeError, got ${thrown === null ? 'a URL' : thrown}`);
    if (URL.canParse(...args)) throw new Error('URL.canParse() said true');
    return;
  }
  const url = new URL(...args);
  for (const part of PARTS) {
    if (!(part in entry)) continue;
    if (url[part] !== entry[part]) throw new Error(`${part}: got ${show(url[part])}, expected ${show(entry[part])}`);
  }
}

function checkSetter(part, entry) {
  const url = new URL(entry.href);
  url[part] = entry.new_value;
  for (const [name, value] of Object.entries(entry.expected)) {
    if (url[name] !== value) throw new Error(`${name}: got ${show(url[name])}, expected ${show(value)}`);
  }
}

export default {
  async fetch(request) {
    const { parsing, setters } = await request.json();
    let passed = 0;
    const failed = [];
    const run = (name, fn) => {
      try {
        fn();
        passed++;
      } catch (e) {
        failed.push({ name, error: String(e && e.message || e) });
      }
    };
    for (const entry of parsing) {
      if (typeof entry === 'string') continue;
      run(`parse <${entry.input}>${entry.base === null ? '' : ` against <${entry.base}>`}`, () => checkParse(entry));
    }
    for (const [part, entries] of Object.entries(setters)) {
      if (part === 'comment') continue;
      for (const entry of entries) {
        run(`<${entry.href}> set ${part} to <${entry.new_value}>`, () => checkSetter(part, entry));
      }
    }
    return Response.json({ passed, failed });
  },
};
