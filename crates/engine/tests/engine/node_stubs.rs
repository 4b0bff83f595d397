//! The Node modules workerd opens by date as stubs (`node:child_process`,
//! `node:tty`, ... and `node:punycode`), the old internal names packages
//! still require (`_http_agent`, `_stream_readable`, ...), and the exports
//! that joined with them (events.on, stream.duplexPair, buffer.transcode).

use std::sync::Arc;

use isolane_engine::{Compat, NodeCompat, PoolMode};

use crate::node_buffer::{answer, load_error};
use crate::support::*;

/// Every module and its date, as workerd 1.20261117 opens them with
/// `nodejs_compat` (probed with its npm binary: each loads from that date,
/// not the day before).
const DATED: [(&str, &str); 18] = [
    ("cluster", "2025-12-04"),
    ("domain", "2025-12-04"),
    ("punycode", "2025-12-04"),
    ("trace_events", "2025-12-04"),
    ("wasi", "2025-12-04"),
    ("_stream_wrap", "2026-01-29"),
    ("dgram", "2026-01-29"),
    ("inspector", "2026-01-29"),
    ("inspector/promises", "2026-01-29"),
    ("sqlite", "2026-01-29"),
    ("child_process", "2026-03-17"),
    ("perf_hooks", "2026-03-17"),
    ("readline", "2026-03-17"),
    ("readline/promises", "2026-03-17"),
    ("repl", "2026-03-17"),
    ("tty", "2026-03-17"),
    ("v8", "2026-03-17"),
    ("worker_threads", "2026-03-17"),
];

fn at(id: &str, source: &str, date: &str) -> Arc<isolane_engine::WorkerBundle> {
    let mut worker = (*bundle(id, source)).clone();
    worker.compat = Compat::from_settings(Some(date), &["nodejs_compat".to_owned()]).unwrap();
    Arc::new(worker)
}

/// The day before `date` (every date above is past the 1st of its month).
fn day_before(date: &str) -> String {
    let (month, day) = date.split_at(8);
    format!("{month}{:02}", day.parse::<u8>().unwrap() - 1)
}

/// Each stub loads from its date and names its flag the day before.
#[tokio::test]
async fn each_stub_module_opens_on_workerds_date_and_names_its_flag_before() {
    for (name, date) in DATED {
        let source = format!(
            "import m from 'node:{name}'; export default {{ fetch() {{ return new Response(typeof m); }} }};"
        );
        let (engine, _) = engine(1, PoolMode::Pinned);
        let (status, body) = run(&engine, 0, &at("t/stub-on", &source, date), "/").await;
        assert_eq!(
            (status, body.as_str()),
            (
                200,
                if name == "_stream_wrap" {
                    "function"
                } else {
                    "object"
                }
            ),
            "{name}"
        );
        let message = load_error(at("t/stub-off", &source, &day_before(date))).await;
        let flag = format!(
            "enable_nodejs_{}_module",
            name.split('/').next().unwrap().trim_start_matches('_')
        );
        assert!(
            message.contains(&flag) && message.contains(date),
            "{name}: {message}"
        );
    }
}

/// What a package does with them at load time works; what would need a
/// process, a thread or a terminal throws Node's "not implemented".
#[tokio::test]
async fn stubs_answer_harmless_questions_and_refuse_the_rest() {
    let out = answer(
        NodeCompat::V2,
        "import cp from 'node:child_process'; import cluster from 'node:cluster'; import tty from 'node:tty'; \
         import wt from 'node:worker_threads'; import v8 from 'node:v8'; import { performance, constants } from 'node:perf_hooks'; \
         import readline from 'node:readline'; import inspector from 'node:inspector'; import ip from 'node:inspector/promises'; \
         import domain from 'node:domain'; import { DatabaseSync, constants as sql } from 'node:sqlite'; import test from 'node:test';",
        r#"
        const r = [];
        const code = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };
        r.push(code(() => cp.spawn('ls')), code(() => cp.execSync('ls')), typeof cp.ChildProcess);
        r.push(cluster.isPrimary, cluster.isWorker, code(() => cluster.fork()));
        r.push(tty.isatty(1), code(() => new tty.WriteStream(1)));
        r.push(wt.isMainThread, String(wt.parentPort), wt.threadId, code(() => new wt.Worker('x.js')));
        wt.setEnvironmentData('k', 7); r.push(wt.getEnvironmentData('k'));
        r.push(v8.getHeapStatistics().used_heap_size, code(() => v8.serialize({})));
        r.push(performance === globalThis.performance, constants.NODE_PERFORMANCE_GC_MAJOR);
        const rl = readline.createInterface({ input: null }); r.push(typeof rl.on, readline.cursorTo(null, 0));
        r.push(String(inspector.url()), code(() => ip.url()), code(() => new inspector.Session().post('x')));
        r.push(domain.create().run((a) => a + 1, 1));
        r.push(code(() => new DatabaseSync(':memory:')), sql.SQLITE_INSERT, sql.SQLITE_RECURSIVE, typeof test.MockTracker);
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "ERR_METHOD_NOT_IMPLEMENTED ERR_METHOD_NOT_IMPLEMENTED function true false ERR_METHOD_NOT_IMPLEMENTED \
         false ERR_METHOD_NOT_IMPLEMENTED true null 0 ERR_METHOD_NOT_IMPLEMENTED 7 0 ERR_METHOD_NOT_IMPLEMENTED \
         true 4 function true undefined ERR_METHOD_NOT_IMPLEMENTED ERR_METHOD_NOT_IMPLEMENTED 2 \
         ERR_METHOD_NOT_IMPLEMENTED 18 33 function"
    );
}

/// Punycode as RFC 3492's and Node's vectors give it (RFC 3492 section 7.1
/// sample (A) Arabic; Node's documented `toASCII` examples).
#[tokio::test]
async fn punycode_encodes_and_decodes_as_node() {
    let out = answer(
        NodeCompat::V2,
        "import punycode from 'node:punycode'; import url from 'node:url';",
        r#"
        const r = [];
        r.push(punycode.encode('mañana'), punycode.decode('maana-pta'), punycode.encode('☃-⌘'));
        r.push(punycode.toASCII('mañana.com'), punycode.toASCII('☃-⌘.com'), punycode.toASCII('джумла@джpумлатест.bрфa'));
        r.push(punycode.toUnicode('xn--maana-pta.com'), punycode.toUnicode('example.com'));
        r.push(punycode.decode('egbpdaj6bu4bxfgehfvwxn') === '\u0644\u064A\u0647\u0645\u0627\u0628\u062A\u0643\u0644\u0645\u0648\u0634\u0639\u0631\u0628\u064A\u061F');
        r.push(punycode.ucs2.decode('\uD834\uDF06').join(','), punycode.ucs2.encode([0x1D306, 65]) === '\uD834\uDF06A');
        try { punycode.decode('\u0100'); } catch (e) { r.push(e.name); }
        r.push(url.domainToUnicode('xn--espaol-zwa.com'), url.domainToUnicode('xn--iñvalid.com') === '');
        return r.join(' | ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "maana-pta | mañana | --dqo34k | xn--maana-pta.com | xn----dqo34k.com | джумла@xn--p-8sbkgc5ag7bhce.xn--ba-lmcq | \
         mañana.com | example.com | true | 119558 | true | RangeError | español.com | true"
    );
}

/// Packages still require Node's old internal names.
#[tokio::test]
async fn the_old_internal_module_names_are_nodes_parts() {
    let out = answer(
        NodeCompat::V2,
        "import { createRequire } from 'node:module'; import http from 'node:http'; import stream from 'node:stream'; import tls from 'node:tls';",
        r#"
        const require = createRequire('/bundle/worker.js');
        const r = [];
        r.push(require('_http_agent').Agent === http.Agent, require('_http_incoming').IncomingMessage === http.IncomingMessage);
        r.push(require('_http_outgoing').OutgoingMessage === http.OutgoingMessage, require('_http_common').methods.includes('GET'));
        r.push(require('_http_common')._checkIsHttpToken('x-y'), require('_http_common')._checkIsHttpToken('x y'));
        r.push(require('_http_server').STATUS_CODES[418], require('_http_client').ClientRequest === http.ClientRequest);
        r.push(require('_stream_readable') === stream.Readable, require('_stream_duplex') === stream.Duplex);
        r.push(require('_stream_transform') === stream.Transform, require('_stream_passthrough') === stream.PassThrough);
        r.push(require('_stream_writable') === stream.Writable, require('_tls_wrap').TLSSocket === tls.TLSSocket);
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "true true true true true false I'm a Teapot true true true true true true true"
    );
}

/// events.on iterates, ends on an error and on abort; duplexPair crosses;
/// transcode converts as ICU does for Node.
#[tokio::test]
async fn events_on_duplex_pair_and_transcode_answer_as_node() {
    let out = answer(
        NodeCompat::V2,
        "import { on, EventEmitter, getMaxListeners, EventEmitterAsyncResource } from 'node:events'; \
         import { duplexPair } from 'node:stream'; import { transcode, Buffer } from 'node:buffer';",
        r#"
        const r = [];
        const ee = new EventEmitter();
        setTimeout(() => { ee.emit('x', 1, 2); ee.emit('x', 3); ee.emit('error', new Error('boom')); });
        try { for await (const args of on(ee, 'x')) r.push(args.join('+')); } catch (e) { r.push(e.message); }
        r.push(ee.listenerCount('x'), ee.listenerCount('error'));
        const ac = new AbortController();
        setTimeout(() => { ee.emit('y', 'a'); ac.abort(); });
        try { for await (const [v] of on(ee, 'y', { signal: ac.signal })) r.push(v); } catch (e) { r.push(e.name); }
        const closing = new EventEmitter();
        setTimeout(() => { closing.emit('data', 'd'); closing.emit('end'); });
        for await (const [v] of on(closing, 'data', { close: ['end'] })) r.push(v);
        r.push(getMaxListeners(ee), typeof new EventEmitterAsyncResource({ name: 'r' }).asyncResource);
        const [a, b] = duplexPair();
        a.write('ping'); a.end();
        let got = ''; for await (const chunk of b) got += chunk; r.push(got);
        r.push(transcode(Buffer.from('€a'), 'utf8', 'latin1').toString('hex'), transcode(Buffer.from('hé'), 'utf8', 'utf16le').toString('hex'));
        try { transcode(Buffer.from('x'), 'utf8', 'hex'); } catch (e) { r.push(e.code); }
        return r.join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "1+2 3 boom 0 0 a AbortError d 10 object ping 3f61 6800e900 U_ILLEGAL_ARGUMENT_ERROR"
    );
}

/// The rest of `process` and `module` as workerd answers them (probed with
/// its npm binary): ids 0, changing them EPERM, no IPC, no addons.
#[tokio::test]
async fn process_and_module_answer_the_rest_as_workerd() {
    let out = answer(
        NodeCompat::V2,
        "import process from 'node:process'; import Module from 'node:module';",
        r#"
        const code = (f) => { try { return String(f()); } catch (e) { return e.code; } };
        return [
          process.getuid(), process.getgroups().join(), code(() => process.setuid(1)), process.connected, String(process.channel),
          process.allowedNodeEnvironmentFlags.size, process.send({}), code(() => process.binding('fs')), code(() => process.dlopen()),
          process.resourceUsage().maxRSS, Object.keys(Module._cache).length, Module.constants.compileCacheStatus.DISABLED,
          code(() => Module._load('x')), String(Module.getCompileCacheDir()),
        ].join(' ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "0 0 EPERM false null 0 false ERR_METHOD_NOT_IMPLEMENTED ERR_METHOD_NOT_IMPLEMENTED 0 0 3 ERR_METHOD_NOT_IMPLEMENTED undefined"
    );
}

/// node:console is the runtime's console with Node's Console class on it,
/// writing util.format's lines to the streams it is given.
#[tokio::test]
async fn node_console_has_nodes_console_class() {
    let out = answer(
        NodeCompat::V2,
        "import console2, { Console } from 'node:console';",
        r#"
        const out = [], err = [];
        const c = new Console({ stdout: { write: (s) => out.push(s) }, stderr: { write: (s) => err.push(s) } });
        const { log } = c;
        log('a %d %s', 1, 'b'); c.error('e', { x: 1 }); c.group('g'); c.info('in'); c.groupEnd(); c.count(); c.count();
        c.assert(1 === 2, 'nope'); c.dir({ y: [1] });
        let refused; try { new Console({}); } catch (e) { refused = e.code; }
        const legacy = []; new Console({ write: (s) => legacy.push(s) }).log('old');
        console.clear(); console.profile(); console.profileEnd(); console.timeStamp();
        return JSON.stringify([console2 === globalThis.console, console2.Console === Console, out, err, refused, legacy, typeof console.createTask('t').run]);
        "#,
    )
    .await;
    assert_eq!(
        out,
        r#"[true,true,["a 1 b\n","g\n","  in\n","default: 1\n","default: 2\n","{ y: [ 1 ] }\n"],["e { x: 1 }\n","Assertion failed: nope\n"],"ERR_CONSOLE_WRITABLE_STREAM",["old\n"],"function"]"#
    );
}
