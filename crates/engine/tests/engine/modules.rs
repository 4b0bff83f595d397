//! Workers made of many modules (wrangler's types), and WebAssembly from
//! them: how each type imports, how imports resolve, what fails to load.

use std::sync::Arc;

use isolane_engine::{ExecuteError, Module, ModuleKind, PoolMode, WorkerBundle};

use crate::support::*;

/// `add.wasm`: `add(a, b)`.
pub fn add_wasm() -> Vec<u8> {
    wat::parse_str(
        r#"(module (func (export "add") (param i32 i32) (result i32)
            local.get 0 local.get 1 i32.add))"#,
    )
    .unwrap()
}

/// The issue's example: main.js imports ./add.wasm and ./greeting.txt.
#[tokio::test]
async fn wasm_and_text_modules_import_into_the_main_module() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = modules_bundle(
        "t/example",
        vec![
            es(
                "main.js",
                "import addModule from './add.wasm';
                 import greeting from './greeting.txt';
                 const { exports } = await WebAssembly.instantiate(addModule);
                 export default { fetch() { return new Response(`${exports.add(40, 2)} ${greeting}`); } };",
            ),
            Module::new("add.wasm", ModuleKind::CompiledWasm, add_wasm()),
            Module::new("greeting.txt", ModuleKind::Text, "hello from a text module"),
        ],
    );
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "42 hello from a text module".to_owned())
    );
}

/// Every type, folders, `../`, bare names, CommonJS `require`.
#[tokio::test]
async fn every_module_type_loads_and_resolves_within_the_bundle() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = modules_bundle(
        "t/types",
        vec![
            es(
                "src/main.js",
                "import { twice } from './lib/math.js';
                 import config from '../config.json';
                 import data from '../blob.bin';
                 import cjs from './lib/legacy.cjs';
                 import page from 'page.html';
                 import wasm from '/add.wasm';
                 const add = new WebAssembly.Instance(wasm).exports.add;
                 export default { fetch() {
                     return new Response([
                         twice(config.n), new Uint8Array(data).join(','), data.constructor.name,
                         cjs.greet('cjs'), cjs.size, page.trim(), add(1, 2),
                         wasm instanceof WebAssembly.Module,
                     ].join(' '));
                 } };",
            ),
            es("src/lib/math.js", "export const twice = (n) => n * 2;"),
            Module::new("config.json", ModuleKind::Json, r#"{"n": 21}"#),
            Module::new("blob.bin", ModuleKind::Data, vec![1u8, 2, 3]),
            Module::new(
                "src/lib/legacy.cjs",
                ModuleKind::CommonJS,
                "const helper = require('./helper.cjs');
                 const cfg = require('../../config.json');
                 module.exports = { greet: (n) => helper.hi + ' ' + n, size: cfg.n + __dirname.length };",
            ),
            Module::new(
                "src/lib/helper.cjs",
                ModuleKind::CommonJS,
                "exports.hi = 'hi';",
            ),
            Module::new("page.html", ModuleKind::Text, "<p>page</p>\n"),
            Module::new("add.wasm", ModuleKind::CompiledWasm, add_wasm()),
        ],
    );
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (
            200,
            "42 1,2,3 ArrayBuffer hi cjs 28 <p>page</p> 3 true".to_owned()
        )
    );
}

async fn load_error(worker: Arc<WorkerBundle>) -> String {
    let (engine, _) = engine(1, PoolMode::Pinned);
    match engine.execute(0, worker, get("/")).await {
        Err(ExecuteError::Script { message }) => message,
        other => panic!("expected a load error, got {:?}", other.map(|r| r.status())),
    }
}

/// An import that names no module of the bundle fails the load, naming
/// both ends, before any module runs.
#[tokio::test]
async fn a_missing_import_is_a_clear_load_error() {
    let message = load_error(modules_bundle(
        "t/missing",
        vec![
            es(
                "main.js",
                "import './lib.js'; export default { fetch() { return new Response('x'); } };",
            ),
            es(
                "lib.js",
                "import x from './missing.js'; globalThis.ran = true;",
            ),
        ],
    ))
    .await;
    assert!(
        message.contains(r#"Cannot resolve "./missing.js" imported by "lib.js": no module of that name in the bundle"#),
        "{message}"
    );
    let message = load_error(modules_bundle(
        "t/escape",
        vec![es(
            "main.js",
            "import x from '../../etc/passwd'; export default {};",
        )],
    ))
    .await;
    assert!(message.contains("Cannot resolve"), "{message}");
    let message = load_error(modules_bundle(
        "t/require",
        vec![
            es("main.js", "import c from './c.cjs'; export default {};"),
            Module::new("c.cjs", ModuleKind::CommonJS, "require('./nope.cjs');"),
        ],
    ))
    .await;
    assert!(
        message.contains(r#"Cannot find module "./nope.cjs" required by "c.cjs""#),
        "{message}"
    );
}

/// A .wasm that is not WebAssembly fails the load with the parser's reason;
/// so does a shared memory.
#[tokio::test]
async fn malformed_wasm_is_a_clear_load_error() {
    let main =
        "import m from './bad.wasm'; export default { fetch() { return new Response('x'); } };";
    let message = load_error(modules_bundle(
        "t/malformed",
        vec![
            es("main.js", main),
            Module::new(
                "bad.wasm",
                ModuleKind::CompiledWasm,
                b"\0asm\x01\0\0\0\x01\xff".to_vec(),
            ),
        ],
    ))
    .await;
    assert!(
        message.contains("CompileError: bad.wasm: not valid WebAssembly"),
        "{message}"
    );
    let shared = wat::parse_str("(module (memory (export \"m\") 1 2 shared))").unwrap();
    let message = load_error(modules_bundle(
        "t/shared",
        vec![
            es("main.js", main),
            Module::new("bad.wasm", ModuleKind::CompiledWasm, shared),
        ],
    ))
    .await;
    assert!(message.contains("shared memories are refused"), "{message}");
}

/// Wasm from bytes at run time is refused, as on Cloudflare; a memory made
/// through the JS API works within the limit; shared ones are refused.
#[tokio::test]
async fn wasm_is_compiled_only_from_the_bundle() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = modules_bundle(
        "t/runtime-compile",
        vec![
            es(
                "main.js",
                "import add from './add.wasm';
                 export default { async fetch() {
                     const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
                     const out = [String(WebAssembly.validate(bytes))];
                     const tries = [
                         () => new WebAssembly.Module(bytes),
                         () => WebAssembly.compile(bytes),
                         () => WebAssembly.instantiate(bytes),
                         () => new WebAssembly.Memory({ initial: 1, maximum: 2, shared: true }),
                         () => new WebAssembly.Memory({ initial: 1 }).grow(1),
                         () => WebAssembly.Module.imports(add).length,
                         () => typeof WebAssembly.Memory.prototype.toResizableBuffer,
                     ];
                     for (const t of tries) {
                         try { out.push(String(await t())); } catch (e) { out.push(e.name); }
                     }
                     return new Response(out.join(' '));
                 } };",
            ),
            Module::new("add.wasm", ModuleKind::CompiledWasm, add_wasm()),
        ],
    );
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (
            200,
            "true CompileError CompileError CompileError TypeError 1 0 undefined".to_owned()
        )
    );
}

/// The rewrite moves function indices (the runtime's grow functions are
/// imported first): calls, tables, `ref.func`, the start function, exports
/// and imported functions must all still reach the same functions.
#[tokio::test]
async fn rewritten_wasm_keeps_every_function_reference() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let wasm = wat::parse_str(
        r#"(module
            (import "env" "base" (func $base (result i32)))
            (memory (export "memory") 1)
            (table 2 funcref)
            (elem (i32.const 0) $seven $eight)
            (type $nullary (func (result i32)))
            (global $f (mut funcref) (ref.func $eight))
            (func $seven (result i32) i32.const 7)
            (func $eight (result i32) i32.const 8)
            (func $init
              (i32.store (i32.const 0) (call $base)))
            (start $init)
            (func (export "pick") (param i32) (result i32)
              (call_indirect (type $nullary) (local.get 0)))
            (func (export "stored") (result i32)
              (i32.load (i32.const 0)))
            (func (export "grow") (result i32)
              (memory.grow (i32.const 2)))
            (func (export "size") (result i32) memory.size))"#,
    )
    .unwrap();
    let worker = modules_bundle(
        "t/references",
        vec![
            es(
                "main.js",
                "import m from './refs.wasm';
                 export default { fetch() {
                     const { exports: e } = new WebAssembly.Instance(m, { env: { base: () => 100 } });
                     return new Response([e.pick(0), e.pick(1), e.stored(), e.grow(), e.size(),
                         e.memory.buffer.byteLength / 65536, e.memory instanceof WebAssembly.Memory].join(' '));
                 } };",
            ),
            Module::new("refs.wasm", ModuleKind::CompiledWasm, wasm),
        ],
    );
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "7 8 100 1 3 3 true".to_owned())
    );
}
