//! The URL parser against the Web Platform Tests' URL data (the data files
//! in `tests/wpt/url/`, see its README): every `urltestdata.json` case through
//! `new URL(input, base)` (the parsed components and `origin`, or the
//! failure), every `setters_tests.json` case through the setter, and every
//! `toascii.json` host, as WPT's url-constructor, url-origin, url-setters
//! and toascii tests do.

use isolane_engine::PoolMode;

use crate::support::*;

/// Runs the cases of one kind in a worker; answers `{total, fails}`.
const CHECKER: &str = r#"
const PARTS = ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
function parse(input, base) {
  try { return base === null || base === undefined ? new URL(input) : new URL(input, base); } catch { return null; }
}
export default {
  async fetch(request) {
    const { kind, cases } = await request.json();
    let total = 0;
    const fails = [];
    const fail = (what) => fails.push(what);
    if (kind === 'parse') {
      for (const c of cases) {
        if (typeof c === 'string') continue;
        total++;
        const url = parse(c.input, c.base);
        const where = JSON.stringify(c.input) + (c.base === null || c.base === undefined ? '' : ` against ${JSON.stringify(c.base)}`);
        const canParse = c.base === null || c.base === undefined ? URL.canParse(c.input) : URL.canParse(c.input, c.base);
        if (c.failure) {
          if (url !== null) fail(`${where}: parsed as ${url.href}, expected failure`);
          else if (canParse) fail(`${where}: URL.canParse true, expected false`);
          continue;
        }
        if (url === null) { fail(`${where}: threw`); continue; }
        if (!canParse) fail(`${where}: URL.canParse false`);
        const diffs = [];
        for (const p of PARTS) if (url[p] !== c[p]) diffs.push(`${p} ${JSON.stringify(url[p])} != ${JSON.stringify(c[p])}`);
        if ('origin' in c && url.origin !== c.origin) diffs.push(`origin ${JSON.stringify(url.origin)} != ${JSON.stringify(c.origin)}`);
        if (diffs.length) fail(`${where}: ${diffs.join(', ')}`);
      }
    } else if (kind === 'setters') {
      for (const [attr, list] of Object.entries(cases)) {
        if (attr === 'comment') continue;
        for (const c of list) {
          total++;
          const url = new URL(c.href);
          url[attr] = c.new_value;
          const diffs = [];
          for (const [p, v] of Object.entries(c.expected)) {
            if (url[p] !== v) diffs.push(`${p} ${JSON.stringify(url[p])} != ${JSON.stringify(v)}`);
          }
          if (diffs.length) fail(`<${c.href}> set ${attr} to <${JSON.stringify(c.new_value)}>: ${diffs.join(', ')}`);
        }
      }
    } else if (kind === 'toascii') {
      for (const c of cases) {
        if (typeof c === 'string') continue;
        total++;
        const url = parse(`https://${c.input}/x`);
        if (c.output === null) {
          if (url !== null) fail(`host <${c.input}>: parsed as ${url.host}, expected failure`);
        } else if (url === null) {
          fail(`host <${c.input}>: threw`);
        } else if (url.host !== c.output) {
          fail(`host <${c.input}>: ${JSON.stringify(url.host)} != ${JSON.stringify(c.output)}`);
        }
      }
    }
    return Response.json({ total, fails });
  }
};
"#;

async fn check(kind: &str, data: &str) -> (u64, Vec<String>) {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("wpt/url", CHECKER);
    let body = format!("{{\"kind\":\"{kind}\",\"cases\":{data}}}");
    let (status, text) = text(engine.execute(0, worker, post("/", body.into())).await).await;
    assert_eq!(status, 200, "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    let total = answer["total"].as_u64().unwrap();
    let fails = answer["fails"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    (total, fails)
}

fn report(kind: &str, total: u64, fails: &[String]) {
    eprintln!(
        "WPT url {kind}: {} of {total} pass",
        total - fails.len() as u64
    );
    for f in fails {
        eprintln!("  FAIL {f}");
    }
}

#[tokio::test]
async fn wpt_url_constructor_and_origin() {
    for (name, data) in [
        ("urltestdata", include_str!("../wpt/url/urltestdata.json")),
        (
            "urltestdata-javascript-only",
            include_str!("../wpt/url/urltestdata-javascript-only.json"),
        ),
    ] {
        let (total, fails) = check("parse", data).await;
        report(name, total, &fails);
        assert!(total > 0);
        assert!(fails.is_empty(), "{name}: {} failures", fails.len());
    }
}

#[tokio::test]
async fn wpt_url_setters() {
    let (total, fails) = check("setters", include_str!("../wpt/url/setters_tests.json")).await;
    report("setters", total, &fails);
    assert!(total > 200);
    assert!(fails.is_empty(), "{} failures", fails.len());
}

#[tokio::test]
async fn wpt_url_toascii() {
    let (total, fails) = check("toascii", include_str!("../wpt/url/toascii.json")).await;
    report("toascii", total, &fails);
    assert!(total > 0);
    assert!(fails.is_empty(), "{} failures", fails.len());
}
