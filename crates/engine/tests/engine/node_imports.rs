//! Every `node:` module workerd lets a Worker import (its npm release, date
//! 2025-11-01 with `nodejs_compat`; later dates in `node_stubs.rs`) imports here too; the ones that are
//! only importable throw a clear "not implemented" when used.

use isolane_engine::{Compat, NodeCompat};

use crate::node_buffer::{answer, load_error, node_worker};

/// What `require('node:<name>')` loads on workerd at 2025-11-01 (probed
/// with its npm binary; the stubs it opens by later dates, child_process
/// and the others, are `node_stubs.rs`' business).
const WORKERD_LOADS: &str = "assert assert/strict async_hooks buffer console constants crypto \
    diagnostics_channel dns dns/promises events fs fs/promises http http2 https module net os \
    path path/posix path/win32 process querystring stream stream/consumers stream/promises \
    stream/web string_decoder sys timers timers/promises tls url util util/types vm zlib";

#[tokio::test]
async fn every_module_workerd_imports_loads() {
    let out = answer(
        NodeCompat::V2,
        "import { createRequire } from 'node:module';",
        &format!(
            r#"
            const require = createRequire('/bundle/worker.js');
            const failed = [];
            for (const name of '{WORKERD_LOADS}'.split(/\s+/)) {{
              try {{ if (typeof require('node:' + name) !== 'object' && typeof require(name) !== 'function') failed.push(name); }}
              catch (e) {{ failed.push(name + ': ' + e.message); }}
            }}
            return failed.length === 0 ? 'all' : failed.join('; ');
            "#
        ),
    )
    .await;
    assert_eq!(out, "all");
}

#[tokio::test]
async fn importable_only_modules_say_not_implemented() {
    let out = answer(
        NodeCompat::V1,
        "import fs from 'node:fs'; import { readFile } from 'node:fs/promises'; import http from 'node:http'; \
         import https from 'node:https'; import net from 'node:net'; import dns from 'node:dns'; \
         import os from 'node:os'; import vm from 'node:vm'; import Module, { builtinModules, isBuiltin } from 'node:module'; \
         import constants from 'node:constants'; import console2 from 'node:console';",
        r#"
        const r = [];
        try { fs.readFileSync('/x'); } catch (e) { r.push(e.code, e.message); }
        r.push(await readFile('/x').catch((e) => e.code));
        r.push(fs.constants.O_CREAT, http.STATUS_CODES[404], http.METHODS.includes('PATCH'));
        const agent = new https.Agent({ keepAlive: true }); r.push(agent.keepAlive, agent instanceof http.Agent);
        try { http.createServer(); } catch (e) { r.push(e.message); }
        r.push(net.isIP('10.0.0.1'), net.isIP('::1'), net.isIP('fe80::1%eth0'), net.isIP('1.2.3.256'), net.isIP('x'), net.isIPv6('1::2::3'));
        try { net.createServer(); } catch (e) { r.push(e.code); }
        try { dns.lookupService('127.0.0.1', 22, () => {}); } catch (e) { r.push(e.code); }
        r.push(os.platform(), os.EOL === '\n', os.constants.signals.SIGTERM, os.tmpdir());
        try { new vm.Script('1'); } catch (e) { r.push(e.code); }
        r.push(Module.createRequire('/a.js')('node:path').sep, builtinModules.includes('zlib'), isBuiltin('node:fs'), isBuiltin('left-pad'));
        try { Module.createRequire('/a.js')('./local.js'); } catch (e) { r.push(e.code); }
        r.push(constants.SIGINT, constants.O_RDONLY, console2 === globalThis.console);
        return r.join(' | ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "ENOENT | ENOENT: no such file or directory, open '/x' | \
         ENOENT | 64 | Not Found | true | true | true | \
         http.createServer is not implemented on Isolane | 4 | 6 | 6 | 0 | 0 | false | \
         ERR_METHOD_NOT_IMPLEMENTED | ERR_METHOD_NOT_IMPLEMENTED | linux | true | 15 | /tmp/ | \
         ERR_METHOD_NOT_IMPLEMENTED | / | true | true | false | MODULE_NOT_FOUND | 2 | 0 | true"
    );
}

/// The built-ins' shared parts are not Node's modules: a Worker cannot
/// import them.
#[tokio::test]
async fn internal_parts_are_not_importable() {
    let source = "import e from 'node:internal/errors'; export default {};";
    let message = load_error(node_worker("t/internal", source, NodeCompat::V2)).await;
    assert!(
        message.contains(r#"No such module "node:internal/errors""#),
        "{message}"
    );
}

/// `process.env` holds the Worker's text bindings when its settings say so
/// (`Compat::process_env`), and is empty otherwise.
#[tokio::test]
async fn process_env_holds_text_bindings_when_the_settings_say_so() {
    use std::sync::Arc;

    use isolane_engine::PoolMode;

    use crate::support::*;

    let (engine, _) = engine(1, PoolMode::Pinned);
    let source = "import process from 'node:process';\n\
                  export default { fetch(request, env) { return new Response(JSON.stringify(process.env) + ' ' + (process.env.GREETING === env.GREETING)); } };";
    for (populate, expected) in [
        (
            true,
            r#"{"API_URL":"https://x.test","GREETING":"hello"} true"#,
        ),
        (false, "{} false"),
    ] {
        let mut bundle = bundle_with(
            &format!("t/env-{populate}"),
            source,
            memory_limits(128),
            &[("GREETING", "hello"), ("API_URL", "https://x.test")],
        );
        bundle.compat = Compat::node(NodeCompat::V2);
        bundle.compat.process_env = populate;
        let (status, text) = run(&engine, 0, &Arc::new(bundle), "/").await;
        assert_eq!((status, text.as_str()), (200, expected));
    }
}
