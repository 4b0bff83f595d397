//! node:util's parsers on hostile input: MIMEType, parseArgs and parseEnv
//! on ~10 MB of the input a backtracking or rescanning parser chokes on
//! answer well inside a CPU limit of 5 s (each is one pass; a quadratic one
//! would take hours); `diff`, whose work is the product of its inputs'
//! lengths, ends at the Worker's limit. A benign Worker on the same thread
//! answers before, during (its request waits its turn) and after each.

use std::sync::Arc;
use std::time::Instant;

use isolane_engine::{ExecuteError, Limits, NodeCompat, PoolMode};

use crate::node_buffer::node_worker;
use crate::node_crypto::attack_beside;
use crate::support::*;

const LIMITS: Limits = Limits {
    cpu_ms: 5_000,
    wall_ms: 60_000,
    memory_mib: 512,
    subrequests: 50,
};

fn worker(name: &str, body: &str) -> isolane_engine::WorkerBundle {
    let source = format!(
        "import util from 'node:util';\n\
         export default {{ async fetch() {{ {body} }} }};"
    );
    let mut bundle = (*node_worker(&format!("t/{name}"), &source, NodeCompat::V1)).clone();
    bundle.limits = LIMITS;
    bundle
}

/// Runs `body` beside the benign neighbour and returns what it answered.
async fn answers_beside(name: &str, body: &str) -> String {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let hostile = Arc::new(worker(name, body));
    let started = Instant::now();
    let attacking = {
        let engine = engine.clone();
        tokio::spawn(async move { run(&engine, 0, &hostile, "/").await })
    };
    neighbour_ok(&engine, &neighbour).await;
    let (status, text) = attacking.await.expect("the request task ends");
    println!("{name}: answered after {:?}", started.elapsed());
    neighbour_ok(&engine, &neighbour).await;
    assert_eq!(status, 200, "{name}: {text}");
    text
}

#[tokio::test]
async fn mime_type_parses_10_mb_in_one_pass() {
    let body = "const n = 2_500_000;\n\
        const quotes = new util.MIMEType('a/b' + ';x=\"'.repeat(n)).params.get('x').length;\n\
        const names = [...new util.MIMEType('a/b' + ';x'.repeat(5_000_000)).params].length;\n\
        const pairs = new util.MIMEType('a/b' + ';k=v'.repeat(n)).toString();\n\
        const spaces = new util.MIMEType('a/b;k=' + ' '.repeat(10_000_000) + 'v').params.get('k');\n\
        let bad; try { new util.MIMEType('a'.repeat(10_000_000) + ' /b'); } catch (e) { bad = e.code; }\n\
        return new Response([quotes, names, pairs, spaces.length, bad].join());";
    let text = answers_beside("mime", body).await;
    // As Node 20 answers for the same inputs.
    assert_eq!(text, "3,0,a/b;k=v,10000001,ERR_INVALID_MIME_SYNTAX");
}

#[tokio::test]
async fn parse_args_takes_10_mb_in_one_pass() {
    let body = "const options = { v: { type: 'boolean', short: 'v', multiple: true }, f: { type: 'string', short: 'f' } };\n\
        const group = util.parseArgs({ args: ['-' + 'v'.repeat(1_000_000)], options }).values.v.length;\n\
        const long = util.parseArgs({ args: ['--f=' + 'x'.repeat(10_000_000)], options }).values.f.length;\n\
        const many = util.parseArgs({ args: Array(1_000_000).fill('-v'), options }).values.v.length;\n\
        const rest = util.parseArgs({ args: ['--', ...Array(1_000_000).fill('--f')], options, allowPositionals: true }).positionals.length;\n\
        let bad; try { util.parseArgs({ args: ['-' + 'v'.repeat(1_000_000) + 'q'], options }); } catch (e) { bad = e.code; }\n\
        return new Response([group, long, many, rest, bad].join());";
    let text = answers_beside("args", body).await;
    // As Node 20 answers for the same inputs made smaller: on these its
    // parseArgs overflows its stack (the group) or takes time growing with
    // the square of the argument count (100k: 3.3 s, 200k: 15.9 s).
    assert_eq!(
        text,
        "1000000,10000000,1000000,1000000,ERR_PARSE_ARGS_UNKNOWN_OPTION"
    );
}

#[tokio::test]
async fn parse_env_takes_10_mb_in_one_pass() {
    let body = "const unclosed = Object.keys(util.parseEnv('A=\"x\\n'.repeat(2_000_000))).length;\n\
        const noEquals = Object.keys(util.parseEnv('x'.repeat(10_000_000) + '\\nB=1')).length;\n\
        const bare = Object.keys(util.parseEnv('#\\n'.repeat(5_000_000))).length;\n\
        const mixed = Object.keys(util.parseEnv(\"A='x\\nB=`y\\n\".repeat(1_000_000))).length;\n\
        const long = util.parseEnv('A=\"' + 'x\\\\n'.repeat(2_500_000) + '\"').A.length;\n\
        return new Response([unclosed, noEquals, bare, mixed, long].join());";
    let text = answers_beside("env", body).await;
    // What workerd answers for the same body.
    assert_eq!(text, "1,1,0,2,5000000");
}

/// `diff` of two 1 MB texts with nothing in common needs ~10^12 steps: it
/// ends at the Worker's CPU (or memory) limit, not the process.
#[tokio::test]
async fn diff_of_large_inputs_ends_at_the_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let hostile = worker(
        "diff",
        "util.diff('a'.repeat(1_000_000), 'b'.repeat(1_000_000)); return new Response('never');",
    );
    let started = Instant::now();
    let error = attack_beside(&engine, &neighbour, hostile).await;
    println!("diff: {error:?} after {:?}", started.elapsed());
    assert!(
        matches!(
            error,
            ExecuteError::CpuLimit { limit_ms: 5_000 }
                | ExecuteError::MemoryLimit { limit_mib: 512 }
        ),
        "{error:?}"
    );
}
