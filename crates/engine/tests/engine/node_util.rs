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
        assert_eq!(got, want, "answer {i} differs from workerd's");
    }
    assert_eq!(got.len(), want.len(), "as many answers as workerd: {out}");
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
