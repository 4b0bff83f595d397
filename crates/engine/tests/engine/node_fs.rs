//! `node:fs` as workerd's in-memory file system: the same calls
//! (`node_fs_check.js`) answer here as `node` answers them on a real
//! `/tmp`; `/bundle` holds the Worker's modules, read-only; each request has
//! its own `/tmp`; and a Worker writing files without end meets its memory
//! limit while a neighbour on the same thread answers.

use std::sync::Arc;

use isolane_engine::{Compat, ExecuteError, Module, ModuleKind, NodeCompat, PoolMode};

use crate::node_buffer::{answer, node_worker};
use crate::node_crypto::attack_beside;
use crate::support::*;

/// The calls, ending with `r`, their answers.
const CHECK: &str = include_str!("node_fs_check.js");

/// What Node 20 answers for `CHECK` (`T` a fresh directory under /tmp).
const NODE: &str = "false | /tmp/isolane-fs-check |  | hello world | 11 | aGVsbG8gd29ybGQ= | 11 | true | false | true |  | \
    b,one.txt | b:true,one.txt:false | false | hello world | a,a/b,a/b/two.txt,three.txt | ENOENT/open/-2 | \
    EEXIST/mkdir/-17 | ENOTEMPTY/rmdir/-39 | EISDIR/read/-21 | EISDIR/unlink/-21 | EEXIST/open/-17 | \
    ENOTDIR/scandir/-20 | EEXIST/copyfile/-17 | ENOENT: no such file or directory, open '/tmp/isolane-fs-check/missing' | \
    hell | hello world | ENOENT | a,p.txt,three.txt | promised | ENOENT | 0 | true | ENOSPC | \
    6 | 2 | 6 | aXYdef | 6 | EBADF | 4 | 0000 | ne/,t/wo/ | 11 | 11 | 4 | text | handle text | false | ";

#[tokio::test]
async fn tmp_files_answer_as_in_node() {
    let out = answer(
        NodeCompat::V1,
        "import fs from 'node:fs'; import fsp from 'node:fs/promises'; import { Buffer } from 'node:buffer';",
        &format!("{CHECK}\nreturn r.join(' | ');"),
    )
    .await;
    assert_eq!(out, NODE);
    // The same calls in Node, on the machine's /tmp.
    let script = format!(
        "const fs = require('fs'); const fsp = require('fs/promises'); \
         fs.rmSync('/tmp/isolane-fs-check', {{ recursive: true, force: true }}); \
         (async () => {{ {CHECK}\n console.log(r.join(' | ')); }})();"
    );
    let output = std::process::Command::new("node")
        .args(["-e", &script])
        .output()
        .expect("node runs (the test compares with Node)");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end_matches('\n'),
        NODE,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `/bundle` lists and reads the Worker's modules (relative paths start
/// there, the working directory) and refuses writes; each request's `/tmp`
/// starts empty.
#[tokio::test]
async fn bundle_is_read_only_and_tmp_is_per_request() {
    let main = "import fs from 'node:fs';
export default { fetch() {
  const r = [];
  r.push(fs.readdirSync('/bundle').join(','), fs.readdirSync('/').join(','));
  r.push(fs.readFileSync('/bundle/data/config.json', 'utf8').trim(), fs.readFileSync('data/config.json', 'utf8').length);
  r.push(fs.statSync('/bundle/data').isDirectory(), fs.statSync('/bundle/data/config.json').size);
  for (const f of [() => fs.writeFileSync('/bundle/x.txt', 'x'), () => fs.unlinkSync('/bundle/main.js'), () => fs.mkdirSync('/y')]) {
    try { f(); r.push('written'); } catch (e) { r.push(e.code); }
  }
  r.push(fs.existsSync('/tmp/mine'));
  fs.writeFileSync('/tmp/mine', 'kept for this request only');
  r.push(fs.readFileSync('/tmp/mine', 'utf8').length);
  return new Response(r.join(' | '));
} };";
    let mut bundle = (*modules_bundle(
        "t/fs-bundle",
        vec![
            es("main.js", main),
            Module::new("data/config.json", ModuleKind::Json, "{\"a\": 1}\n"),
        ],
    ))
    .clone();
    bundle.compat = Compat::node(NodeCompat::V1);
    let bundle = Arc::new(bundle);
    let (engine, _) = engine(1, PoolMode::Pinned);
    let first = run(&engine, 0, &bundle, "/").await;
    let second = run(&engine, 0, &bundle, "/").await;
    let want = "data,main.js | bundle,dev,tmp | {\"a\": 1} | 9 | true | 9 | EPERM | EPERM | EPERM | false | 26";
    assert_eq!(first, (200, want.to_owned()));
    assert_eq!(second, (200, want.to_owned()));
}

/// A Worker writing 1 MiB files into /tmp without end ends at its memory
/// limit; a neighbour on the same thread answers before, during and after.
#[tokio::test]
async fn endless_file_writes_end_at_the_memory_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let script = "import fs from 'node:fs';\nexport default { fetch() { const mib = new Uint8Array(1 << 20); for (let i = 0; ; i++) fs.writeFileSync(`/tmp/f${i}`, mib); } };";
    let mut hostile = (*node_worker("t/fs-fill", script, NodeCompat::V1)).clone();
    hostile.limits = memory_limits(64);
    let error = attack_beside(&engine, &neighbour, hostile).await;
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
        "{error:?}"
    );
}
