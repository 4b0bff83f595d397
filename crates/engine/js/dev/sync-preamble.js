#!/usr/bin/env node
// Copies dev/preamble.js (the suites' tiny test harness) into every suite in
// tests/web_api, between the "tiny test harness" and "end of harness" markers.
// Suites are single-file workers, so each carries its own copy.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const dir = path.resolve(__dirname, '../../tests/web_api');
const preamble = fs.readFileSync(path.join(__dirname, 'preamble.js'), 'utf8').trimEnd() + '\n';
const re = /\/\/ ---- tiny test harness[\s\S]*?\/\/ ---- end of harness ----\n/;
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.js'))) {
  const p = path.join(dir, f);
  const src = fs.readFileSync(p, 'utf8');
  if (!re.test(src)) continue;
  const out = src.replace(re, preamble);
  if (out !== src) { fs.writeFileSync(p, out); console.log(`updated ${f}`); }
}
