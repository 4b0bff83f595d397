//! `node:dns` over DNS-over-HTTPS, as workerd has it, when the node names a
//! server (`EgressConfig::dns_over_https`): queries are the Worker's own
//! fetches (`application/dns-json`, the JSON API) to it, here a loopback
//! server this test starts that answers from a table. Records come back in
//! Node's shapes and Node's error codes; the egress policy and the
//! subrequest limit hold for the queries as for any fetch. The default, the
//! node's own resolver, is tested in `node_dns_resolver.rs`.

#[path = "node_dns_resolver.rs"]
mod resolver;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use isolane_engine::{Compat, EgressConfig, EngineConfig, Limits, NodeCompat};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::egress::engine_with_egress;
use crate::support::*;

/// The JSON API's answer for `name` and `type`: the table's records, or
/// NXDOMAIN (`Status` 3) for a name it does not know.
fn answer(name: &str, kind: &str) -> Value {
    let number = |kind: &str| match kind {
        "A" => 1,
        "NS" => 2,
        "CNAME" => 5,
        "SOA" => 6,
        "PTR" => 12,
        "MX" => 15,
        "TXT" => 16,
        "AAAA" => 28,
        "SRV" => 33,
        _ => 0,
    };
    let records: &[&str] = match (name, kind) {
        ("example.com", "A") => &["93.184.216.34", "93.184.216.35"],
        ("example.com", "AAAA") => &["2606:2800:220:1::1"],
        ("example.com", "MX") => &["10 mail.example.com.", "20 backup.example.com."],
        ("example.com", "TXT") => &["\"v=spf1 -all\"", "\"part one\" \"part \\\"two\\\"\""],
        ("example.com", "NS") => &["ns1.example.com."],
        ("example.com", "SOA") => {
            &["ns1.example.com. hostmaster.example.com. 2024010101 7200 3600 1209600 300"]
        }
        ("www.example.com", "CNAME") => &["example.com."],
        ("_sip._tcp.example.com", "SRV") => &["5 0 5060 sip.example.com."],
        ("34.216.184.93.in-addr.arpa", "PTR") => &["example.com."],
        ("ipv4only.example.com", "A") => &["192.0.2.7"],
        ("ipv4only.example.com", _) => &[],
        _ => {
            return json!({ "Status": 3, "TC": false, "RD": true, "RA": true, "AD": false, "CD": false,
                           "Question": [{ "name": name, "type": number(kind) }] });
        }
    };
    let answers: Vec<Value> = records
        .iter()
        .map(|data| json!({ "name": name, "type": number(kind), "TTL": 300, "data": data }))
        .collect();
    json!({ "Status": 0, "TC": false, "RD": true, "RA": true, "AD": false, "CD": false,
            "Question": [{ "name": name, "type": number(kind) }], "Answer": answers })
}

/// A DNS-over-HTTPS JSON server on loopback (415 unless the request
/// accepts `application/dns-json`), and how many queries it answered.
async fn doh_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let queries = Arc::new(AtomicUsize::new(0));
    let counted = queries.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let counted = counted.clone();
                    async move {
                        counted.fetch_add(1, Ordering::SeqCst);
                        let query: Vec<(String, String)> = url::form_urlencoded::parse(
                            request.uri().query().unwrap_or("").as_bytes(),
                        )
                        .into_owned()
                        .collect();
                        let get = |key: &str| {
                            query
                                .iter()
                                .find(|(k, _)| k == key)
                                .map(|(_, v)| v.clone())
                                .unwrap_or_default()
                        };
                        let accepts = request
                            .headers()
                            .get("accept")
                            .is_some_and(|v| v.as_bytes() == b"application/dns-json");
                        let response = if request.uri().path() != "/dns-query" || !accepts {
                            http::Response::builder()
                                .status(415)
                                .body(Full::new(Bytes::new()))
                        } else {
                            let body = answer(&get("name"), &get("type")).to_string();
                            http::Response::builder()
                                .header("content-type", "application/dns-json")
                                .body(Full::new(Bytes::from(body)))
                        };
                        Ok::<_, std::convert::Infallible>(response.unwrap())
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, queries)
}

/// An engine whose `node:dns` asks `server`; the egress policy opens
/// loopback only when `open`.
fn dns_engine(server: SocketAddr, open: bool) -> isolane_engine::Engine {
    let allow = if open {
        vec!["127.0.0.1/32".parse().unwrap()]
    } else {
        Vec::new()
    };
    engine_with_egress(EgressConfig {
        allow,
        dns_over_https: Some(format!("http://{server}/dns-query")),
        ..EgressConfig::default()
    })
    .0
}

fn worker(id: &str, body: &str, limits: Limits) -> Arc<isolane_engine::WorkerBundle> {
    let source = format!(
        "import dns from 'node:dns'; import dnsp from 'node:dns/promises';\n\
         const cb = (f) => new Promise((resolve) => f((error, ...values) => resolve(error ? `${{error.code}}:${{error.syscall}}` : values)));\n\
         const code = (p) => p.then(() => 'resolved', (e) => `${{e.code}}:${{e.syscall}}:${{e.message}}`);\n\
         export default {{ async fetch() {{ const r = []; {body} return new Response(r.map((v) => JSON.stringify(v)).join('\\n')); }} }};"
    );
    let mut bundle = bundle_with(id, &source, limits, &[]);
    bundle.compat = Compat::node(NodeCompat::V1);
    Arc::new(bundle)
}

#[tokio::test]
async fn queries_answer_in_nodes_shapes() {
    let (server, queries) = doh_server().await;
    let engine = dns_engine(server, true);
    let body = r#"
        r.push(await dnsp.resolve4('example.com'));
        r.push(await dnsp.resolve4('example.com', { ttl: true }));
        r.push(await dnsp.resolve6('example.com'));
        r.push(await dnsp.resolveMx('example.com'));
        r.push(await dnsp.resolveTxt('example.com'));
        r.push(await dnsp.resolveNs('example.com'));
        r.push(await dnsp.resolveSoa('example.com'));
        r.push(await dnsp.resolveCname('www.example.com'));
        r.push(await dnsp.resolveSrv('_sip._tcp.example.com'));
        r.push(await dnsp.reverse('93.184.216.34'));
        r.push(await dnsp.resolve('example.com', 'MX'));
        r.push(await dnsp.lookup('example.com'));
        r.push(await dnsp.lookup('example.com', { all: true }));
        r.push(await dnsp.lookup('example.com', { family: 6 }));
        r.push(await dnsp.lookup('example.com', { all: true, order: 'ipv6first' }));
        r.push(await dnsp.lookup('ipv4only.example.com', { all: true }));
        r.push(await cb((done) => dns.lookup('example.com', done)));
        r.push(await cb((done) => dns.resolve4('example.com', done)));
        r.push(await cb((done) => dns.resolve('example.com', 'TXT', done)));
        r.push(await cb((done) => dns.resolve4('missing.example.com', done)));
        r.push(await code(dnsp.resolve4('missing.example.com')));
        r.push(await code(dnsp.resolve6('ipv4only.example.com')));
        r.push(await code(dnsp.lookup('missing.example.com')));
        r.push(await code(dnsp.reverse('192.0.2.1')));
        r.push(await code(dnsp.resolveCaa('example.com')));
        try { dnsp.resolve4(42); } catch (e) { r.push(e.code); }
        try { dnsp.resolve('example.com', 'BOGUS'); } catch (e) { r.push(e.code); }
        r.push(dns.getServers(), dns.getDefaultResultOrder(), typeof dns.Resolver, dns.NOTFOUND);
        "#;
    let (status, out) = run(&engine, 0, &worker("t/dns", body, Limits::default()), "/").await;
    assert_eq!(status, 200, "{out}");
    let expected = [
        r#"["93.184.216.34","93.184.216.35"]"#,
        r#"[{"address":"93.184.216.34","ttl":300},{"address":"93.184.216.35","ttl":300}]"#,
        r#"["2606:2800:220:1::1"]"#,
        r#"[{"exchange":"mail.example.com","priority":10},{"exchange":"backup.example.com","priority":20}]"#,
        r#"[["v=spf1 -all"],["part one","part \"two\""]]"#,
        r#"["ns1.example.com"]"#,
        r#"{"nsname":"ns1.example.com","hostmaster":"hostmaster.example.com","serial":2024010101,"refresh":7200,"retry":3600,"expire":1209600,"minttl":300}"#,
        r#"["example.com"]"#,
        r#"[{"name":"sip.example.com","port":5060,"priority":5,"weight":0}]"#,
        r#"["example.com"]"#,
        r#"[{"exchange":"mail.example.com","priority":10},{"exchange":"backup.example.com","priority":20}]"#,
        r#"{"address":"93.184.216.34","family":4}"#,
        r#"[{"address":"93.184.216.34","family":4},{"address":"93.184.216.35","family":4},{"address":"2606:2800:220:1::1","family":6}]"#,
        r#"{"address":"2606:2800:220:1::1","family":6}"#,
        r#"[{"address":"2606:2800:220:1::1","family":6},{"address":"93.184.216.34","family":4},{"address":"93.184.216.35","family":4}]"#,
        r#"[{"address":"192.0.2.7","family":4}]"#,
        r#"["93.184.216.34",4]"#,
        r#"[["93.184.216.34","93.184.216.35"]]"#,
        r#"[[["v=spf1 -all"],["part one","part \"two\""]]]"#,
        r#""ENOTFOUND:queryA""#,
        r#""ENOTFOUND:queryA:queryA ENOTFOUND missing.example.com""#,
        r#""ENODATA:queryAaaa:queryAaaa ENODATA ipv4only.example.com""#,
        r#""ENOTFOUND:queryA:queryA ENOTFOUND missing.example.com""#,
        r#""ENOTFOUND:getHostByAddr:getHostByAddr ENOTFOUND 192.0.2.1""#,
        r#""ERR_METHOD_NOT_IMPLEMENTED:undefined:dns.promises.resolveCaa is not implemented on Isolane""#,
        r#""ERR_INVALID_ARG_TYPE""#,
        r#""ERR_INVALID_ARG_VALUE""#,
        r#"[]"#,
        r#""verbatim""#,
        r#""function""#,
        r#""ENOTFOUND""#,
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
    let asked = queries.load(Ordering::SeqCst);
    // An IP literal asks nothing: lookup('127.0.0.1') adds no query.
    let (status, literal) = run(
        &engine,
        0,
        &worker(
            "t/dns-literal",
            "r.push(await dnsp.lookup('127.0.0.1'));",
            Limits::default(),
        ),
        "/",
    )
    .await;
    assert_eq!(
        (status, literal.as_str()),
        (200, r#"{"address":"127.0.0.1","family":4}"#)
    );
    assert_eq!(queries.load(Ordering::SeqCst), asked);
}

/// The queries are the Worker's fetches: a node whose egress policy refuses
/// the server's address refuses them (EBADQUERY, as workerd names a failed
/// fetch), and each takes one of the request's subrequests.
#[tokio::test]
async fn queries_obey_the_egress_policy_and_the_subrequest_limit() {
    let (server, queries) = doh_server().await;
    let closed = dns_engine(server, false);
    let body = "r.push(await code(dnsp.resolve4('example.com')));";
    let (status, out) = run(
        &closed,
        0,
        &worker("t/dns-closed", body, Limits::default()),
        "/",
    )
    .await;
    assert_eq!(
        (status, out.as_str()),
        (200, r#""EBADQUERY:queryA:queryA EBADQUERY example.com""#)
    );
    assert_eq!(queries.load(Ordering::SeqCst), 0);

    let open = dns_engine(server, true);
    let limits = Limits {
        subrequests: 3,
        ..Limits::default()
    };
    let body = "for (let i = 0; i < 5; i++) r.push(await code(dnsp.resolve4('example.com')));";
    let (status, out) = run(&open, 0, &worker("t/dns-limit", body, limits), "/").await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#""resolved""#,
            r#""resolved""#,
            r#""resolved""#,
            r#""EBADQUERY:queryA:queryA EBADQUERY example.com""#,
            r#""EBADQUERY:queryA:queryA EBADQUERY example.com""#,
        ]
    );
    assert_eq!(queries.load(Ordering::SeqCst), 3);
}

/// A bad server URL is refused when the engine starts.
#[test]
fn a_bad_server_is_refused_at_start() {
    let config = EngineConfig {
        families: isolane_runtime::families(),
        threads: 1,
        egress: EgressConfig {
            dns_over_https: Some("ftp://dns.example/".to_owned()),
            ..EgressConfig::default()
        },
        ..EngineConfig::default()
    };
    let Err(error) = isolane_engine::Engine::start(config, Arc::new(Recorder::default())) else {
        panic!("the engine started with an ftp:// DNS-over-HTTPS server");
    };
    assert!(error.to_string().contains("dns_over_https"), "{error}");
}
