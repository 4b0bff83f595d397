//! `node:` modules behind the compatibility settings, and `node:buffer`.

use std::sync::Arc;

use isolane_engine::{
    Compat, ExecuteError, Module, ModuleKind, NodeCompat, PoolMode, WorkerBundle,
};

use crate::support::*;

/// A one-script module Worker with `compat`.
pub fn node_worker(id: &str, source: &str, compat: NodeCompat) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, source, memory_limits(128), &[]);
    bundle.compat = Compat::node(compat);
    Arc::new(bundle)
}

/// `modules` with `compat`.
pub fn node_modules(id: &str, modules: Vec<Module>, compat: NodeCompat) -> Arc<WorkerBundle> {
    node_modules_with(id, modules, Compat::node(compat))
}

/// A Worker of `modules` with the compatibility settings `compat`.
pub fn node_modules_with(id: &str, modules: Vec<Module>, compat: Compat) -> Arc<WorkerBundle> {
    let mut bundle = (*modules_bundle(id, modules)).clone();
    bundle.compat = compat;
    Arc::new(bundle)
}

pub async fn load_error(worker: Arc<WorkerBundle>) -> String {
    let (engine, _) = engine(1, PoolMode::Pinned);
    match engine.execute(0, worker, get("/")).await {
        Err(ExecuteError::Script { message }) => message,
        other => panic!("expected a load error, got {:?}", other.map(|r| r.status())),
    }
}

/// Runs `body` (statements ending in `return <string>`) in a fetch handler
/// of a Worker importing `node:buffer`; its answer.
pub async fn answer(compat: NodeCompat, imports: &str, body: &str) -> String {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let source = format!(
        "{imports}\nexport default {{ async fetch() {{ const out = await (async () => {{ {body} }})(); return new Response(String(out)); }} }};"
    );
    let (status, text) = run(&engine, 0, &node_worker("t/node", &source, compat), "/").await;
    assert_eq!(status, 200, "{text}");
    text
}

#[tokio::test]
async fn node_modules_need_the_flag_and_say_so() {
    let source = "import { Buffer } from 'node:buffer'; export default {};";
    let message = load_error(node_worker("t/off", source, NodeCompat::Off)).await;
    assert!(message.contains("nodejs_compat"), "{message}");
    let message = load_error(node_modules(
        "t/off-modules",
        vec![
            es("main.js", "import c from './c.cjs'; export default {};"),
            Module::new("c.cjs", ModuleKind::CommonJS, "require('node:buffer');"),
        ],
        NodeCompat::Off,
    ))
    .await;
    assert!(
        message.contains(r#"Cannot load "node:buffer" imported by "c.cjs": Node.js modules need the nodejs_compat compatibility flag"#),
        "{message}"
    );
    // v1: the prefix only; an unknown built-in is named.
    let bare = "import { Buffer } from 'buffer'; export default {};";
    let message = load_error(node_worker("t/v1", bare, NodeCompat::V1)).await;
    assert!(message.contains(r#"Cannot resolve "buffer""#), "{message}");
    let unknown = "import x from 'node:nope'; export default {};";
    let message = load_error(node_worker("t/nope", unknown, NodeCompat::V2)).await;
    assert!(
        message.contains(r#"No such module "node:nope""#),
        "{message}"
    );
    // nodejs_als alone: no buffer.
    let message = load_error(node_worker("t/als", source, NodeCompat::Als)).await;
    assert!(message.contains("nodejs_compat"), "{message}");
}

/// Modules workerd gates behind flags of their own (`node:fs` behind
/// `enable_nodejs_fs_module`, ...) load only when the Worker's settings
/// open the gate, whether imported or required, prefixed or bare.
#[tokio::test]
async fn gated_modules_need_their_own_flag_and_say_so() {
    let at = |date: &str, flags: &[&str]| {
        let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
        Compat::from_settings(Some(date), &flags).unwrap()
    };
    let gated = |id: &str, source: &str, compat: Compat| {
        let mut bundle = (*bundle(id, source)).clone();
        bundle.compat = compat;
        Arc::new(bundle)
    };
    let fs = "import { readFileSync } from 'node:fs'; export default { fetch() { return new Response(typeof readFileSync); } };";
    let early = at("2025-09-14", &["nodejs_compat"]);
    let message = load_error(gated("t/fs-early", fs, early)).await;
    assert!(
        message.contains(r#"Cannot load "node:fs" imported by "worker.js": it needs the enable_nodejs_fs_module compatibility flag (or, with Node.js compatibility, a compatibility date from 2025-09-15)"#),
        "{message}"
    );
    let bare = "import fs from 'fs'; export default {};";
    let message = load_error(gated("t/fs-bare", bare, early)).await;
    assert!(message.contains(r#"Cannot resolve "fs""#), "{message}");
    let required = "const os = require('node:os'); module.exports = {};";
    let message = load_error(node_modules_with(
        "t/os-cjs",
        vec![
            es("main.js", "import c from './c.cjs'; export default {};"),
            Module::new("c.cjs", ModuleKind::CommonJS, required),
        ],
        early,
    ))
    .await;
    assert!(message.contains("enable_nodejs_os_module"), "{message}");
    // process.getBuiltinModule and module.createRequire hold the gate too.
    let (engine, _) = engine(1, PoolMode::Pinned);
    let reach = "import process from 'node:process'; import { createRequire } from 'node:module';
        export default { fetch() {
            let required;
            try { required = typeof createRequire('/w.js')('fs').readFileSync; }
            catch (e) { required = e.message; }
            return new Response(typeof process.getBuiltinModule('fs') + ' | ' + typeof process.getBuiltinModule('node:path') + ' | ' + required);
        } };";
    let (status, body) = run(&engine, 0, &gated("t/fs-reach", reach, early), "/").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("undefined | object | ") && body.contains("enable_nodejs_fs_module"),
        "{body}"
    );
    let open = at("2025-09-15", &["nodejs_compat"]);
    assert_eq!(
        run(&engine, 0, &gated("t/fs-reach-open", reach, open), "/").await,
        (200, "object | object | function".to_owned())
    );
    // The flag opens it at an earlier date; the date alone from 2025-09-15.
    for compat in [
        at("2025-01-01", &["nodejs_compat", "enable_nodejs_fs_module"]),
        at("2025-09-15", &["nodejs_compat"]),
    ] {
        let worker = gated("t/fs-open", fs, compat);
        assert_eq!(
            run(&engine, 0, &worker, "/").await,
            (200, "function".to_owned())
        );
    }
}

#[tokio::test]
async fn buffer_imports_requires_and_is_global_under_v2() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = node_modules(
        "t/cjs",
        vec![
            es(
                "main.js",
                "import c from './c.cjs';
                 import buffer, { Buffer } from 'node:buffer';
                 export default { fetch() { return new Response([c, buffer.Buffer === Buffer, typeof globalThis.Buffer].join(' ')); } };",
            ),
            Module::new(
                "c.cjs",
                ModuleKind::CommonJS,
                "const { Buffer } = require('node:buffer'); module.exports = Buffer.from('hi').toString('hex');",
            ),
        ],
        NodeCompat::V1,
    );
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "6869 true undefined".to_owned())
    );
    let v2 = answer(
        NodeCompat::V2,
        "import { Buffer as B } from 'buffer';",
        "return [B === Buffer, Buffer.from('aGk=', 'base64').toString()].join(' ');",
    )
    .await;
    assert_eq!(v2, "true hi");
}

#[tokio::test]
async fn buffer_encodings_round_trip_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import { Buffer } from 'node:buffer';",
        r#"
        const b = Buffer.from('héllo wörld €');
        const r = [];
        for (const e of ['utf8', 'hex', 'base64', 'base64url', 'latin1', 'ascii', 'utf16le', 'binary', 'ucs2']) {
          r.push(e + '=' + b.toString(e).length + ':' + Buffer.from(b.toString(e), e).length);
        }
        r.push(Buffer.from('aGVsbG8', 'base64url').toString());
        r.push(Buffer.from('ff00zz', 'hex').length);
        r.push(Buffer.from('€', 'latin1')[0]);
        r.push(Buffer.from('ab', 'utf16le').toString('hex'));
        r.push(Buffer.byteLength('€'), Buffer.byteLength('€', 'utf16le'), Buffer.byteLength('aGk=', 'base64'));
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "utf8=13:17 hex=34:17 base64=24:17 base64url=23:17 latin1=17:17 ascii=17:17 utf16le=8:16 binary=17:17 ucs2=8:16 \
         hello 2 172 61006200 3 2 2"
    );
}

#[tokio::test]
async fn buffer_api_behaves_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import { Buffer, kMaxLength } from 'node:buffer';",
        r#"
        const r = [];
        const a = Buffer.alloc(4, 'ab');
        r.push(a.toString(), Buffer.isBuffer(a), Buffer.isBuffer(new Uint8Array(1)), a instanceof Uint8Array);
        const c = Buffer.concat([Buffer.from('x'), Buffer.from('yz')]);
        r.push(c.toString(), Buffer.concat([c, c], 4).toString());
        const s = c.slice(1); s[0] = 65; r.push(c.toString(), s.subarray(1).toString());
        r.push(Buffer.from('a').equals(Buffer.from('a')), Buffer.compare(Buffer.from('a'), Buffer.from('b')), Buffer.from('b').compare(Buffer.from('a')));
        const n = Buffer.alloc(16);
        n.writeUInt32BE(0xdeadbeef, 0); n.writeInt16LE(-2, 4); n.writeDoubleLE(1.5, 8);
        r.push(n.readUInt32BE(0).toString(16), n.readInt16LE(4), n.readDoubleLE(8), n.readUInt8(0), n.readUIntBE(0, 3).toString(16), n.readIntLE(4, 2));
        n.writeBigUInt64BE(2n ** 63n, 0); r.push(n.readBigUInt64BE(0) === 2n ** 63n);
        try { n.readUInt32LE(14); } catch (e) { r.push(e.code); }
        try { Buffer.from('x', 'nope'); } catch (e) { r.push(e.code); }
        try { n.writeUInt8(300, 0); } catch (e) { r.push(e.code); }
        r.push(Buffer.from('hello').indexOf('l'), Buffer.from('hello').lastIndexOf('l'), Buffer.from('hello').includes('ell'));
        r.push(JSON.stringify(Buffer.from([1, 2])), Buffer.from({ type: 'Buffer', data: [104, 105] }).toString());
        const w = Buffer.alloc(3); r.push(w.write('€x'), w.write('ab', 1), w.toString('hex'));
        r.push(Buffer.from(new Uint16Array([1, 256, 513])).toString('hex'), Buffer.from(new Uint8Array([7, 8]).buffer, 1).toString('hex'));
        r.push(kMaxLength > 0, Buffer.isEncoding('UTF-8'), Buffer.isEncoding('nope'), typeof Buffer.poolSize);
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "abab true false true xyz xyzx xAz z true -1 1 deadbeef -2 1.5 222 deadbe -2 true \
         ERR_OUT_OF_RANGE ERR_UNKNOWN_ENCODING ERR_OUT_OF_RANGE 2 3 true {\"type\":\"Buffer\",\"data\":[1,2]} hi \
         3 2 e26162 010001 08 true true false number"
    );
}

/// A huge Buffer is refused like any ArrayBuffer past the memory limit:
/// a RangeError (or the isolate's memory_limit), never an abort.
#[tokio::test]
async fn a_huge_buffer_is_refused_not_fatal() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let source = "import { Buffer } from 'node:buffer';
        export default { fetch() {
          try { const b = Buffer.alloc(2 ** 31); return new Response('allocated ' + b.length); }
          catch (e) { return new Response(e.name); }
        } };";
    let worker = node_worker("t/huge", source, NodeCompat::V1);
    let result = engine.execute(0, worker, get("/")).await;
    match result {
        Ok(response) => {
            let (status, body) = text(Ok(response)).await;
            assert_eq!((status, body.as_str()), (200, "RangeError"));
        }
        Err(error) => assert!(format!("{error:?}").contains("Memory"), "{error:?}"),
    }
    // The thread still answers.
    let ok = bundle(
        "t/after",
        "export default { fetch() { return new Response('ok'); } };",
    );
    assert_eq!(run(&engine, 0, &ok, "/").await, (200, "ok".to_owned()));
}
