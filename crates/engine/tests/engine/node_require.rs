//! `require()` of Node's built-ins from CommonJS code inside a bundle, in
//! the shapes bundlers emit. workerd has no global `require` in an ES-module
//! Worker: wrangler turns each `require` of a built-in into an import of
//! it when it bundles (its `nodejs_compat` esbuild plugin), and CommonJS
//! modules uploaded as such get a `require` of their own. esbuild alone
//! (no wrangler) leaves a `__require` shim that calls the global `require`
//! and throws without one, on workerd as here.

use isolane_engine::{Module, ModuleKind, NodeCompat, PoolMode};

use crate::node_buffer::{answer, load_error, node_modules, node_worker};
use crate::support::*;

/// esbuild's helpers for CommonJS code in an ES-module bundle, as it emits
/// them (`__commonJS` wraps a module, `__toESM` gives its default export).
const ESBUILD_HELPERS: &str = r#"
var __getOwnPropNames = Object.getOwnPropertyNames;
var __commonJS = (cb, mod) => function __require2() {
  return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;
};
var __toESM = (mod) => mod && mod.__esModule ? mod : { default: mod };
"#;

/// A bundle as wrangler writes it with `nodejs_compat`: each `require` of
/// a built-in (here `node:buffer`, bare `events` and `util`, `node:stream`)
/// became a CommonJS module whose body is `module.exports = <the import>`.
fn wrangler_bundle() -> String {
    format!(
        r#"
import libDefault from "node:buffer";
import libDefault2 from "events";
import libDefault3 from "util";
import libDefault4 from "node:stream";
{ESBUILD_HELPERS}
var require_node_buffer = __commonJS({{ "node-built-in-modules:node:buffer"(exports, module) {{ module.exports = libDefault; }} }});
var require_events = __commonJS({{ "node-built-in-modules:events"(exports, module) {{ module.exports = libDefault2; }} }});
var require_util = __commonJS({{ "node-built-in-modules:util"(exports, module) {{ module.exports = libDefault3; }} }});
var require_node_stream = __commonJS({{ "node-built-in-modules:node:stream"(exports, module) {{ module.exports = libDefault4; }} }});
var require_lib = __commonJS({{ "lib.cjs"(exports, module) {{
  const {{ Buffer }} = require_node_buffer();
  const EventEmitter = require_events();
  const {{ inherits, format }} = require_util();
  const {{ Readable }} = require_node_stream();
  function Counter() {{ EventEmitter.call(this); this.n = 0; }}
  inherits(Counter, EventEmitter);
  module.exports = async () => {{
    const c = new Counter();
    c.on("tick", () => c.n++);
    c.emit("tick"); c.emit("tick");
    let text = "";
    for await (const chunk of Readable.from([Buffer.from("ab"), Buffer.from("cd")])) text += chunk.toString("hex");
    return format("%s %d %s %s", Buffer.from("hi").toString("base64"), c.n, c instanceof EventEmitter, text);
  }};
}} }});
var import_lib = __toESM(require_lib());
export default {{ async fetch() {{ return new Response(await import_lib.default()); }} }};
"#
    )
}

#[tokio::test]
async fn wrangler_bundles_require_builtins_through_imports() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = node_worker("t/wrangler", &wrangler_bundle(), NodeCompat::V2);
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "aGk= 2 true 61626364".to_owned())
    );
    // Bare names are v2's: under v1 the bundle does not load, and says why.
    let message = load_error(node_worker(
        "t/wrangler-v1",
        &wrangler_bundle(),
        NodeCompat::V1,
    ))
    .await;
    assert!(message.contains("events"), "{message}");
}

/// esbuild without wrangler's plugin: `require` stays a call of the global
/// `require`, which an ES-module Worker does not have (workerd answers the
/// same `Dynamic require of "node:buffer" is not supported`).
#[tokio::test]
async fn esbuild_require_shim_finds_no_global_require_as_on_workerd() {
    let source = r#"
var __require = ((x) => typeof require !== "undefined" ? require : typeof Proxy !== "undefined" ? new Proxy(x, {
  get: (a, b) => (typeof require !== "undefined" ? require : a)[b]
}) : x)(function(x) {
  if (typeof require !== "undefined") return require.apply(this, arguments);
  throw Error('Dynamic require of "' + x + '" is not supported');
});
const { Buffer } = __require("node:buffer");
export default { fetch() { return new Response(Buffer.from("x")); } };
"#;
    let message = load_error(node_worker("t/shim", source, NodeCompat::V2)).await;
    assert!(
        message.contains(r#"Dynamic require of "node:buffer" is not supported"#),
        "{message}"
    );
}

/// A CommonJS module of a bundle (wrangler's `CommonJS` module type, like
/// workerd's `commonJsModule`) has its own `require`: `node:` names, and
/// under v2 the bare ones; `require` of a name that is not a built-in and
/// not in the bundle names both.
#[tokio::test]
async fn commonjs_modules_require_builtins_by_both_names_under_v2() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let modules = || {
        vec![
            es(
                "main.js",
                "import c from './c.cjs'; export default { fetch() { return new Response(c()); } };",
            ),
            Module::new(
                "c.cjs",
                ModuleKind::CommonJS,
                "const events = require('events'); const { EventEmitter } = require('node:events');
                 const { StringDecoder } = require('string_decoder'); const qs = require('querystring');
                 const path = require('path/posix');
                 module.exports = () => [events === EventEmitter, new StringDecoder('utf8').write(Buffer.from([0xe2, 0x82, 0xac])),
                   qs.stringify({ a: [1, 2] }), path.join('/a', '../b'), require('buffer').Buffer === Buffer].join(' ');",
            ),
        ]
    };
    let worker = node_modules("t/cjs-v2", modules(), NodeCompat::V2);
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "true € a=1&a=2 /b true".to_owned())
    );
    let message = load_error(node_modules("t/cjs-v1", modules(), NodeCompat::V1)).await;
    assert!(message.contains("events"), "{message}");
}

/// The Node globals npm code reads under v2, as workerd has them (probed):
/// `global` is the global object (graceful-fs, and so fs-extra, reads it
/// at load), `setImmediate`/`clearImmediate` are `node:timers`'; v1 has
/// none of them.
#[tokio::test]
async fn v2_has_nodes_global_and_immediates() {
    let body = r#"
        if (typeof global === 'undefined') return 'none ' + typeof setImmediate;
        const ran = await new Promise((resolve) => setImmediate((x) => resolve(x), 'ran'));
        const cleared = setImmediate(() => { throw new Error('cleared immediate ran'); });
        clearImmediate(cleared);
        return [global === globalThis, ran, typeof clearImmediate].join(' ');
    "#;
    let v2 = answer(NodeCompat::V2, "", body).await;
    assert_eq!(v2, "true ran function");
    let v1 = answer(NodeCompat::V1, "", body).await;
    assert_eq!(v1, "none undefined");
}

/// What the import sweep found npm packages read at load, as workerd has
/// it: `process.stdout.isTTY` (ora, chalk's kin), `events.addAbortListener`
/// (got).
#[tokio::test]
async fn process_stdio_and_add_abort_listener() {
    let out = answer(
        NodeCompat::V2,
        "import { addAbortListener } from 'node:events';",
        r#"
        process.stdout.write('to the log\n');
        const r = [process.stdout.isTTY, process.stderr.fd, process.stdin.isTTY];
        const controller = new AbortController();
        const seen = [];
        addAbortListener(controller.signal, () => seen.push('aborted'));
        controller.abort();
        const done = new AbortController();
        done.abort();
        await new Promise((resolve) => addAbortListener(done.signal, resolve));
        try { addAbortListener({}, () => {}); } catch (e) { seen.push(e.code); }
        return [...r, ...seen].join(' ');
        "#,
    )
    .await;
    assert_eq!(out, "false 2 false aborted ERR_INVALID_ARG_TYPE");
}
