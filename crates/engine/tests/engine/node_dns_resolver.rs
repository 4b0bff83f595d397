//! `node:dns` on the node's own resolver, the default (no DNS-over-HTTPS
//! server): here a DNS server on loopback that this test starts (a few
//! lines of the wire format, UDP, answering from a table and logging what it
//! was asked) and names through `EgressConfig::dns_resolver`, as
//! /etc/resolv.conf would. Records come back in Node's shapes; addresses the
//! egress policy refuses are dropped; the cluster's names, the search
//! domains and reverse names of refused addresses are refused without a
//! query; an opened policy is followed; each query is a subrequest; a
//! server that does not answer is Node's ETIMEOUT, and the wait holds no
//! thread. The node's real configuration (/etc/resolv.conf) is used for
//! `localhost` only, which the resolver answers itself: no test sends a
//! datagram anywhere but to loopback.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use isolane_engine::{DnsResolverConfig, EgressConfig, Limits};
use tokio::net::UdpSocket;

use super::worker;
use crate::egress::engine_with_egress;
use crate::support::*;

/// One record of an answer.
enum Rec {
    A(&'static str),
    Aaaa(&'static str),
    Cname(&'static str),
    Ns(&'static str),
    Ptr(&'static str),
    Mx(u16, &'static str),
    Srv(u16, u16, u16, &'static str),
    Txt(&'static [&'static str]),
    Soa,
}

impl Rec {
    fn kind(&self) -> u16 {
        match self {
            Rec::A(_) => 1,
            Rec::Ns(_) => 2,
            Rec::Cname(_) => 5,
            Rec::Soa => 6,
            Rec::Ptr(_) => 12,
            Rec::Mx(..) => 15,
            Rec::Txt(_) => 16,
            Rec::Aaaa(_) => 28,
            Rec::Srv(..) => 33,
        }
    }

    fn data(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Rec::A(ip) | Rec::Aaaa(ip) => match ip.parse::<IpAddr>().unwrap() {
                IpAddr::V4(v4) => out.extend(v4.octets()),
                IpAddr::V6(v6) => out.extend(v6.octets()),
            },
            Rec::Cname(name) | Rec::Ns(name) | Rec::Ptr(name) => encode(&mut out, name),
            Rec::Mx(preference, exchange) => {
                out.extend(preference.to_be_bytes());
                encode(&mut out, exchange);
            }
            Rec::Srv(priority, weight, port, target) => {
                for n in [priority, weight, port] {
                    out.extend(n.to_be_bytes());
                }
                encode(&mut out, target);
            }
            Rec::Txt(chunks) => {
                for chunk in *chunks {
                    out.push(u8::try_from(chunk.len()).unwrap());
                    out.extend(chunk.as_bytes());
                }
            }
            Rec::Soa => {
                encode(&mut out, "ns1.example.com");
                encode(&mut out, "hostmaster.example.com");
                for n in [2024010101u32, 7200, 3600, 1209600, 300] {
                    out.extend(n.to_be_bytes());
                }
            }
        }
        out
    }
}

/// A name in the wire format, uncompressed.
fn encode(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.').filter(|l| !l.is_empty()) {
        out.push(u8::try_from(label.len()).unwrap());
        out.extend(label.as_bytes());
    }
    out.push(0);
}

/// What the server answers.
enum Reply {
    /// NOERROR with these records (owner `None`: the name asked).
    Records(Vec<(Option<&'static str>, Rec)>),
    NxDomain,
    /// Nothing at all.
    Silent,
}

/// The zone: `name` lowercase, without the final dot.
fn reply(name: &str, kind: u16) -> Reply {
    use Rec::*;
    let own = |recs: Vec<Rec>| Reply::Records(recs.into_iter().map(|r| (None, r)).collect());
    // Only records of the type asked (a CNAME aside), as a server answers.
    let of = |recs: Vec<Rec>| own(recs.into_iter().filter(|r| r.kind() == kind).collect());
    match name {
        "example.com" => of(vec![
            A("93.184.216.34"),
            A("93.184.216.35"),
            Aaaa("2606:2800:220:1::1"),
            Mx(10, "mail.example.com"),
            Mx(20, "backup.example.com"),
            Txt(&["v=spf1 -all"]),
            Txt(&["part one", "part \"two\""]),
            Ns("ns1.example.com"),
            Soa,
        ]),
        "www.example.com" => own(vec![Cname("example.com")]),
        "_sip._tcp.example.com" => of(vec![Srv(5, 0, 5060, "sip.example.com")]),
        "34.216.184.93.in-addr.arpa" => of(vec![Ptr("example.com")]),
        "ipv4only.example.com" => of(vec![A("93.184.216.36")]),
        // Public and internal addresses together.
        "mixed.example.com" => of(vec![
            A("93.184.216.34"),
            A("10.0.0.7"),
            A("127.0.0.1"),
            Aaaa("2606:2800:220:1::1"),
            Aaaa("fd00::1"),
            Aaaa("::ffff:169.254.169.254"),
        ]),
        "private.example.com" => of(vec![A("10.1.2.3"), Aaaa("fd00::5")]),
        // A public name that points into the cluster's zone, with the
        // target's records (public addresses even) in the same answer.
        "into-cluster.example.com" => Reply::Records(vec![
            (None, Cname("secret.svc.cluster.local")),
            (Some("secret.svc.cluster.local"), A("93.184.216.40")),
        ]),
        // The same without the target's records: the resolver asks them.
        "chase.example.com" => own(vec![Cname("config.svc.cluster.local")]),
        "config.svc.cluster.local" => of(vec![Txt(&["cluster secret"])]),
        "kubernetes.default.svc.cluster.local" => {
            of(vec![A("10.96.0.1"), Txt(&["cluster secret"])])
        }
        "db.corp.test" => of(vec![A("10.0.0.5"), Txt(&["corp secret"])]),
        "5.0.0.10.in-addr.arpa" => of(vec![Ptr("db.corp.test")]),
        "slow.example.com" => Reply::Silent,
        _ => Reply::NxDomain,
    }
}

/// What the server was asked: `name type` (the name as sent, final dot
/// included) and when.
type Asked = Arc<Mutex<Vec<(String, Instant)>>>;

/// The question of a query: its id, its name (lowercase, as sent), its
/// type, and where the question ends.
fn question(packet: &[u8]) -> Option<(u16, String, u16, usize)> {
    let id = u16::from_be_bytes([*packet.first()?, *packet.get(1)?]);
    let mut at = 12;
    let mut name = String::new();
    loop {
        let len = usize::from(*packet.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        name.push_str(std::str::from_utf8(packet.get(at..at + len)?).ok()?);
        name.push('.');
        at += len;
    }
    let kind = u16::from_be_bytes([*packet.get(at)?, *packet.get(at + 1)?]);
    Some((id, name.to_ascii_lowercase(), kind, at + 4))
}

/// The server's answer to `packet`, `None` to stay silent.
fn respond(packet: &[u8], asked: &Asked) -> Option<Vec<u8>> {
    let (id, name, kind, end) = question(packet)?;
    asked
        .lock()
        .unwrap()
        .push((format!("{name} {kind}"), Instant::now()));
    let (rcode, records) = match reply(name.trim_end_matches('.'), kind) {
        Reply::Silent => return None,
        Reply::NxDomain => (3u16, Vec::new()),
        Reply::Records(records) => (0, records),
    };
    let mut out = Vec::new();
    out.extend(id.to_be_bytes());
    out.extend((0x8180u16 | rcode).to_be_bytes());
    out.extend(1u16.to_be_bytes());
    out.extend(u16::try_from(records.len()).unwrap().to_be_bytes());
    out.extend([0, 0, 0, 0]);
    out.extend(&packet[12..end]);
    for (owner, record) in records {
        match owner {
            // A pointer to the question's name.
            None => out.extend([0xc0, 12]),
            Some(owner) => encode(&mut out, owner),
        }
        out.extend(record.kind().to_be_bytes());
        out.extend(1u16.to_be_bytes());
        out.extend(300u32.to_be_bytes());
        let data = record.data();
        out.extend(u16::try_from(data.len()).unwrap().to_be_bytes());
        out.extend(data);
    }
    Some(out)
}

/// The DNS server on loopback, and what it was asked.
async fn dns_server() -> (SocketAddr, Asked) {
    let socket = UdpSocket::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = socket.local_addr().unwrap();
    let asked: Asked = Arc::default();
    let log = asked.clone();
    tokio::spawn(async move {
        let mut buffer = vec![0; 4096];
        while let Ok((len, from)) = socket.recv_from(&mut buffer).await {
            if let Some(answer) = respond(&buffer[..len], &log) {
                let _ = socket.send_to(&answer, from).await;
            }
        }
    });
    (addr, asked)
}

/// An engine whose `node:dns` asks `server` (search domain `corp.test`),
/// with the egress policy `egress`.
fn resolver_engine(server: SocketAddr, egress: EgressConfig) -> isolane_engine::Engine {
    engine_with_egress(EgressConfig {
        dns_resolver: Some(DnsResolverConfig {
            servers: vec![server],
            search: vec!["corp.test".to_owned()],
        }),
        ..egress
    })
    .0
}

/// The questions asked, sorted, each once.
fn questions(asked: &Asked) -> Vec<String> {
    let mut names: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|(q, _)| q.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[tokio::test]
async fn the_node_resolver_answers_in_nodes_shapes() {
    let (server, asked) = dns_server().await;
    let engine = resolver_engine(server, EgressConfig::default());
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
        r.push(await dnsp.lookup('example.com', { all: true }));
        r.push(await dnsp.lookup('ipv4only.example.com', { all: true }));
        r.push(await cb((done) => dns.lookup('example.com', done)));
        r.push(await cb((done) => dns.resolve('example.com', 'TXT', done)));
        r.push(await code(dnsp.resolve4('missing.example.com')));
        r.push(await code(dnsp.resolve6('ipv4only.example.com')));
        r.push(await code(dnsp.lookup('missing.example.com')));
        r.push(dns.getServers());
        "#;
    let (status, out) = run(
        &engine,
        0,
        &worker("t/dns-node", body, Limits::default()),
        "/",
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
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
            r#"[{"address":"93.184.216.34","family":4},{"address":"93.184.216.35","family":4},{"address":"2606:2800:220:1::1","family":6}]"#,
            r#"[{"address":"93.184.216.36","family":4}]"#,
            r#"["93.184.216.34",4]"#,
            r#"[[["v=spf1 -all"],["part one","part \"two\""]]]"#,
            r#""ENOTFOUND:queryA:queryA ENOTFOUND missing.example.com""#,
            r#""ENODATA:queryAaaa:queryAaaa ENODATA ipv4only.example.com""#,
            r#""ENOTFOUND:queryA:queryA ENOTFOUND missing.example.com""#,
            // The node's resolver is not named (the cluster's DNS service).
            "[]",
        ]
    );
    // Every name went out absolute, as the Worker wrote it.
    assert!(questions(&asked).contains(&"_sip._tcp.example.com. 33".to_owned()));
}

/// Under the default (closed) policy: internal addresses are dropped from
/// answers (a name left with none is ENOTFOUND, as a missing one); the
/// cluster's names, the search domain's (but for addresses) and reverse
/// names of refused addresses are refused before any query; a relative
/// name is asked as absolute, never with a search domain; an answer that
/// leads into the cluster's zone is refused whole.
#[tokio::test]
async fn internal_names_and_addresses_stay_hidden() {
    let (server, asked) = dns_server().await;
    let engine = resolver_engine(server, EgressConfig::default());
    let body = r#"
        r.push(await dnsp.resolve4('mixed.example.com'));
        r.push(await dnsp.resolve6('mixed.example.com'));
        r.push(await dnsp.lookup('mixed.example.com', { all: true }));
        r.push(await code(dnsp.resolve4('private.example.com')));
        r.push(await code(dnsp.lookup('private.example.com')));
        r.push(await code(dnsp.resolve4('kubernetes.default.svc.cluster.local')));
        r.push(await code(dnsp.resolveTxt('kubernetes.default.svc.cluster.local')));
        r.push(await code(dnsp.resolveSrv('_https._tcp.kubernetes.default.svc')));
        r.push(await code(dnsp.resolveTxt('metadata.google.internal')));
        r.push(await code(dnsp.lookup('localhost')));
        r.push(await code(dnsp.lookup('app.localhost')));
        r.push(await code(dnsp.resolve4('kubernetes.default')));
        r.push(await code(dnsp.resolveTxt('db.corp.test')));
        r.push(await code(dnsp.resolve4('db.corp.test')));
        r.push(await code(dnsp.resolveTxt('db')));
        r.push(await code(dnsp.reverse('10.0.0.5')));
        r.push(await code(dnsp.reverse('::1')));
        r.push(await code(dnsp.resolvePtr('10.in-addr.arpa')));
        r.push(await code(dnsp.resolve4('into-cluster.example.com')));
        r.push(await code(dnsp.resolveTxt('chase.example.com')));
        "#;
    let (status, out) = run(
        &engine,
        0,
        &worker("t/dns-hidden", body, Limits::default()),
        "/",
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let notfound =
        |syscall: &str, name: &str| format!(r#""ENOTFOUND:{syscall}:{syscall} ENOTFOUND {name}""#);
    let expected = [
        r#"["93.184.216.34"]"#.to_owned(),
        r#"["2606:2800:220:1::1"]"#.to_owned(),
        r#"[{"address":"93.184.216.34","family":4},{"address":"2606:2800:220:1::1","family":6}]"#
            .to_owned(),
        notfound("queryA", "private.example.com"),
        notfound("queryA", "private.example.com"),
        notfound("queryA", "kubernetes.default.svc.cluster.local"),
        notfound("queryTxt", "kubernetes.default.svc.cluster.local"),
        notfound("querySrv", "_https._tcp.kubernetes.default.svc"),
        notfound("queryTxt", "metadata.google.internal"),
        notfound("queryA", "localhost"),
        notfound("queryA", "app.localhost"),
        notfound("queryA", "kubernetes.default"),
        notfound("queryTxt", "db.corp.test"),
        notfound("queryA", "db.corp.test"),
        notfound("queryTxt", "db"),
        notfound("getHostByAddr", "10.0.0.5"),
        notfound("getHostByAddr", "::1"),
        notfound("queryPtr", "10.in-addr.arpa"),
        notfound("queryA", "into-cluster.example.com"),
        notfound("queryTxt", "chase.example.com"),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
    // Nothing under the cluster's names, the search domain (but its
    // addresses) or a refused reverse zone was asked, and no name with a
    // search domain appended. The one exception: the resolver follows the
    // CNAME of a public name into the cluster's zone, whose answer is then
    // refused.
    assert_eq!(
        questions(&asked),
        [
            "chase.example.com. 16",
            "config.svc.cluster.local. 16",
            "db. 16",
            "db.corp.test. 1",
            "into-cluster.example.com. 1",
            "kubernetes.default. 1",
            "mixed.example.com. 1",
            "mixed.example.com. 28",
            "private.example.com. 1",
            "private.example.com. 28",
        ]
    );
}

/// A node that opens destinations opens the names that lead to them: the
/// cluster's addresses it opened resolve (and loopback's, `localhost`),
/// while the cluster's other records stay refused; `isolane dev`'s open
/// policy refuses nothing.
#[tokio::test]
async fn an_opened_policy_is_followed() {
    let (server, asked) = dns_server().await;
    let opened = resolver_engine(
        server,
        EgressConfig {
            allow: vec![
                "127.0.0.1/32".parse().unwrap(),
                "10.96.0.0/12".parse().unwrap(),
            ],
            ..EgressConfig::default()
        },
    );
    let body = r#"
        r.push(await dnsp.lookup('localhost'));
        r.push(await dnsp.lookup('localhost', { all: true }));
        r.push(await dnsp.resolve4('mixed.example.com'));
        r.push(await dnsp.resolve4('kubernetes.default.svc.cluster.local'));
        r.push(await code(dnsp.resolveTxt('kubernetes.default.svc.cluster.local')));
        r.push(await code(dnsp.reverse('10.0.0.5')));
        "#;
    let (status, out) = run(
        &opened,
        0,
        &worker("t/dns-opened", body, Limits::default()),
        "/",
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#"{"address":"127.0.0.1","family":4}"#,
            r#"[{"address":"127.0.0.1","family":4}]"#,
            r#"["93.184.216.34","127.0.0.1"]"#,
            r#"["10.96.0.1"]"#,
            r#""ENOTFOUND:queryTxt:queryTxt ENOTFOUND kubernetes.default.svc.cluster.local""#,
            r#""ENOTFOUND:getHostByAddr:getHostByAddr ENOTFOUND 10.0.0.5""#,
        ]
    );
    assert!(!questions(&asked).contains(&"kubernetes.default.svc.cluster.local. 16".to_owned()));

    let dev = resolver_engine(server, EgressConfig::open());
    let body = r#"
        r.push(await dnsp.resolveTxt('kubernetes.default.svc.cluster.local'));
        r.push(await dnsp.resolveTxt('db.corp.test'));
        r.push(await dnsp.reverse('10.0.0.5'));
        r.push(await dnsp.resolve4('private.example.com'));
        "#;
    let (status, out) = run(&dev, 0, &worker("t/dns-dev", body, Limits::default()), "/").await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#"[["cluster secret"]]"#,
            r#"[["corp secret"]]"#,
            r#"["db.corp.test"]"#,
            r#"["10.1.2.3"]"#,
        ]
    );
}

/// Without a resolver of its own the engine reads /etc/resolv.conf;
/// `localhost` is answered by the resolver itself (no datagram leaves),
/// loopback dropped unless the node opens it.
#[tokio::test]
async fn the_system_resolver_is_the_default() {
    let body = "r.push(await code(dnsp.lookup('localhost'))); r.push(await dnsp.lookup('localhost', { family: 4 }).catch((e) => e.code));";
    let closed = engine_with_egress(EgressConfig::default()).0;
    let (status, out) = run(
        &closed,
        0,
        &worker("t/dns-system", body, Limits::default()),
        "/",
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#""ENOTFOUND:queryA:queryA ENOTFOUND localhost""#,
            r#""ENOTFOUND""#
        ]
    );
    let open = engine_with_egress(EgressConfig::open()).0;
    let (status, out) = run(
        &open,
        0,
        &worker("t/dns-system", body, Limits::default()),
        "/",
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [r#""resolved""#, r#"{"address":"127.0.0.1","family":4}"#]
    );
}

/// Each query takes one of the request's subrequests, as a fetch does:
/// past the limit it is EBADQUERY and nothing is asked.
#[tokio::test]
async fn queries_are_subrequests() {
    let (server, asked) = dns_server().await;
    let engine = resolver_engine(server, EgressConfig::default());
    let limits = Limits {
        subrequests: 3,
        ..Limits::default()
    };
    let body = "for (let i = 0; i < 5; i++) r.push(await code(dnsp.resolve4('example.com')));";
    let (status, out) = run(&engine, 0, &worker("t/dns-node-limit", body, limits), "/").await;
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
    assert_eq!(asked.lock().unwrap().len(), 3);
}

/// A server that never answers: ETIMEOUT once the query's 5 s are up
/// (the resolver alone would try on: three tries of 2.5 s), and the engine
/// thread went on meanwhile (a second query, made after the first, reached
/// the server at once).
#[tokio::test]
async fn a_silent_server_times_out() {
    let (server, asked) = dns_server().await;
    let engine = resolver_engine(server, EgressConfig::default());
    let body = r#"
        const slow = code(dnsp.resolve4('slow.example.com'));
        r.push(await dnsp.resolve4('example.com'));
        r.push(await slow);
        "#;
    let (status, out) = run(
        &engine,
        0,
        &worker("t/dns-slow", body, Limits::default()),
        "/",
    )
    .await;
    let done = Instant::now();
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#"["93.184.216.34","93.184.216.35"]"#,
            r#""ETIMEOUT:queryA:queryA ETIMEOUT slow.example.com""#,
        ]
    );
    let asked = asked.lock().unwrap();
    let first = |question: &str| {
        asked
            .iter()
            .find(|(q, _)| q == question)
            .map(|(_, at)| *at)
            .unwrap()
    };
    let slow = first("slow.example.com. 1");
    let took = done.duration_since(slow);
    // The 5 s cap, not the resolver's 7.5 s of tries: the margin above the
    // cap is what a loaded machine may add before the answer is read.
    assert!(
        took >= Duration::from_millis(4500) && took < Duration::from_millis(7000),
        "{took:?}"
    );
    // Far less than the slow query's 5 s: the thread did not wait on it.
    let gap = first("example.com. 1").duration_since(slow);
    assert!(gap < Duration::from_millis(2500), "{gap:?}");
}

/// A Worker with `egress.allowedHosts` asks only the names it may fetch
/// from (a query reaches the name's servers): EREFUSED for the others.
#[tokio::test]
async fn allowed_hosts_bound_the_names_asked() {
    let (server, asked) = dns_server().await;
    let engine = resolver_engine(server, EgressConfig::default());
    let body = "r.push(await dnsp.resolve4('example.com')); r.push(await code(dnsp.resolve4('ipv4only.example.com')));";
    let mut bundle = (*worker("t/dns-allowed", body, Limits::default())).clone();
    bundle.allowed_hosts = vec!["example.com".to_owned()];
    let (status, out) = run(&engine, 0, &Arc::new(bundle), "/").await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#"["93.184.216.34","93.184.216.35"]"#,
            r#""EREFUSED:queryA:queryA EREFUSED ipv4only.example.com""#,
        ]
    );
    assert_eq!(questions(&asked), ["example.com. 1"]);
}
