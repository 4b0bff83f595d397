//! `node:util` against workerd's answers: each `node_util/<case>.js` is the
//! body of an async function given `util`; `node_util/<case>.txt` is what
//! workerd answers for it (as current Node prints; Node 20 differs only in
//! `[Symbol(s)]` for `Symbol(s)` keys and styleText). The cases are ours:
//! inspect's shapes and options, format's directives, util.types' brand
//! checks, the coded errors, styleText, callbackify, promisify.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;

async fn same_as_node(body: &str, node: &str) {
    let out = answer(NodeCompat::V1, "import util from 'node:util';", body).await;
    let (got, want): (Vec<&str>, Vec<&str>) = (
        out.split("\n---\n").collect(),
        node.trim_end().split("\n---\n").collect(),
    );
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "answer {i} differs from the expected one");
    }
    assert_eq!(got.len(), want.len(), "as many answers as expected: {out}");
}

#[tokio::test]
async fn inspect_prints_as_node() {
    same_as_node(
        include_str!("node_util/inspect.js"),
        include_str!("node_util/inspect.txt"),
    )
    .await;
}

#[tokio::test]
async fn format_directives_as_node() {
    same_as_node(
        include_str!("node_util/format.js"),
        include_str!("node_util/format.txt"),
    )
    .await;
}

#[tokio::test]
async fn types_errors_and_helpers_as_node() {
    same_as_node(
        include_str!("node_util/misc.js"),
        include_str!("node_util/misc.txt"),
    )
    .await;
}

/// The runtime's own proxies (the `ArrayBuffer` and `WebAssembly.Memory`
/// constructors that charge the Worker's memory, Durable Object stubs) keep
/// their targets and handlers: `util.inspect`, with or without
/// `showProxy`, and custom inspect functions planted on the prototypes a
/// target inherits from never hand a Worker the native constructor behind
/// them (with it, resizable buffers would skip the memory reservation).
#[tokio::test]
async fn inspect_never_hands_out_the_runtimes_proxy_targets() {
    let out = answer(
        NodeCompat::V2,
        "import util from 'node:util';",
        r#"
        const seen = new Set();
        const spy = function () { seen.add(this); return 'x'; };
        for (const proto of [Object.prototype, Function.prototype]) {
          Object.defineProperty(proto, util.inspect.custom, { value: spy, configurable: true });
        }
        for (const value of [ArrayBuffer, WebAssembly.Memory, WebAssembly.Instance]) {
          util.inspect(value); util.inspect(value, { showProxy: true }); util.inspect({ value }, { showProxy: true, depth: 5 });
          util.format('%o %O', value, value);
        }
        const known = new Set([ArrayBuffer, WebAssembly.Memory, WebAssembly.Instance]);
        const leaked = [...seen].filter((v) => typeof v === 'function' && !known.has(v) && ['ArrayBuffer', 'Memory', 'Instance'].includes(v.name));
        return [leaked.length, util.types.isProxy(ArrayBuffer), util.types.isProxy(new Proxy({}, {}))].join(' ');
        "#,
    )
    .await;
    assert_eq!(out, "0 false true");
}

/// parseArgs against Node 20 (workerd exports it but throws "not
/// implemented"): options, short groups, inline values, `--`, multiple,
/// defaults, negatives, tokens, and each coded error.
#[tokio::test]
async fn parse_args_as_node() {
    same_as_node(
        include_str!("node_util/args.js"),
        include_str!("node_util/args.txt"),
    )
    .await;
}

/// MIMEType and MIMEParams against Node 20, which follows the WHATWG MIME
/// Sniffing standard. workerd strays from it (its errors carry no code,
/// a value of only `\` stays unquoted, `params.set` keeps an existing
/// value, `delete` moves the last parameter into the gap, a lone
/// `new MIMEParams()` keeps nothing, U+0100 and above pass as values):
/// there Isolane answers as Node.
#[tokio::test]
async fn mime_type_as_node() {
    same_as_node(
        include_str!("node_util/mime.js"),
        include_str!("node_util/mime.txt"),
    )
    .await;
}

/// parseEnv, diff, the system error names, signals, aborted,
/// getCallSites and MIMEType's inspect against workerd.
#[tokio::test]
async fn env_diff_errors_and_the_rest_as_workerd() {
    same_as_node(
        include_str!("node_util/api.js"),
        include_str!("node_util/api.txt"),
    )
    .await;
}
