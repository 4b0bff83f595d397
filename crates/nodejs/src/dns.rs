//! `node:dns`'s host functions. By default a query goes to the node's own
//! resolver: the name servers /etc/resolv.conf names (hickory-resolver over
//! UDP, and TCP for a truncated answer), asked by the engine thread, not by
//! a `fetch`. With `--dns-over-https` (`EgressConfig::dns_over_https`) the
//! queries are instead the Worker's own `fetch`es to that server, made in
//! JavaScript (`js/dns.js`), and nothing here is asked.
//!
//! The node's resolver sees what the cluster's DNS serves: its services
//! (`*.svc.cluster.local`), the search domains, reverse zones of private
//! ranges. Every Worker is hostile, so a query is held to the egress policy
//! (`isolane-egress`) as a connection is:
//!
//! - A name is always absolute (`name` is asked as `name.`): no search
//!   domain is ever appended, so `kubernetes.default` is not the cluster's
//!   API server.
//! - Names under the special-use and private-use suffixes ([`INTERNAL`]:
//!   `localhost`, `local` (so `cluster.local`), `svc`, `internal`,
//!   `home.arpa`, and the private TLDs RFC 6762 lists) are refused without
//!   a query (`ENOTFOUND`), unless the node opens destinations: then their
//!   address queries go out, their answers filtered as below; every type
//!   only when the node opens every address (`isolane dev`).
//! - Names under the node's own domain and search domains are refused for
//!   every type but A and AAAA (whose answers are filtered), unless the
//!   node opens every address: their SRV, TXT, MX, … records are the
//!   site's own.
//! - Reverse names (`….in-addr.arpa`, `….ip6.arpa`) are asked only for an
//!   address the policy allows (so no PTR of a pod or service); a partial
//!   one (a zone of addresses) only when the node opens every address.
//! - A/AAAA answers keep only the addresses the policy allows
//!   ([`EgressPolicy::check`], the one every connection passes). A name
//!   whose addresses were all dropped answers `ENOTFOUND`, as a name that
//!   does not exist does: a Worker cannot tell a cluster name from none.
//! - An answer any of whose records is owned by a refused name (the
//!   resolver follows CNAMEs: a public name may point into the cluster's
//!   zone) answers `ENOTFOUND` whole.
//! - The Worker's `egress.allowedHosts`, when it has one, bounds the names
//!   it may ask (`EREFUSED`): a query is a way out too, its name reaching
//!   the name's authoritative servers.
//!
//! Each query is one of the request's subrequests (as a `fetch` is), runs on
//! the thread's runtime (the promise settles later; nothing blocks), and
//! answers within [`QUERY_TIMEOUT`] or rejects as Node's `ETIMEOUT`. Each
//! isolate has its own resolver, without a cache (the node's resolver has
//! one): nothing one Worker asked is seen by another's timing, and nothing
//! a Worker asks piles up outside its memory budget.

use std::cell::OnceCell;
use std::net::IpAddr;
use std::rc::Rc;
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::rdata::{A, AAAA, CNAME, NS, PTR};
use hickory_resolver::proto::rr::{Name, RData, RecordType};

use isolane_engine::DnsResolverConfig;
use isolane_engine::api::EgressPolicy;
use isolane_engine::api::{HostError, HostResult};
use isolane_engine::api::{HostState, Settlement, begin_op, js_string};
use isolane_engine::api::{holder, set};

/// How long one query may take, all its tries together (Node's `ETIMEOUT`
/// past it).
pub(crate) const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one try of a query waits for its servers (at most; a shorter
/// `options timeout:` in resolv.conf stands): two tries fit in
/// [`QUERY_TIMEOUT`], so an answer lost once is asked for again in time.
const TRY_TIMEOUT: Duration = Duration::from_millis(2500);

/// Suffixes that name no public host: special-use names (RFC 6761
/// `localhost`, RFC 6762 `local` with Kubernetes' `cluster.local`, RFC 8375
/// `home.arpa`), ICANN's private-use `internal`, Kubernetes' `svc`, and the
/// private TLDs RFC 6762 (appendix G) finds in use.
const INTERNAL: [&str; 10] = [
    "localhost.",
    "local.",
    "svc.",
    "internal.",
    "home.arpa.",
    "intranet.",
    "private.",
    "corp.",
    "home.",
    "lan.",
];

/// Node's error codes a query answers with.
const ENOTFOUND: &str = "ENOTFOUND";
const ENODATA: &str = "ENODATA";
const ETIMEOUT: &str = "ETIMEOUT";
const ECONNREFUSED: &str = "ECONNREFUSED";
const EREFUSED: &str = "EREFUSED";
const EBADNAME: &str = "EBADNAME";
const EBADRESP: &str = "EBADRESP";

/// The isolate's resolver, made on its first query (the unit's state).
#[derive(Default)]
pub(crate) struct DnsState {
    node: OnceCell<Option<NodeResolver>>,
}

/// The node's resolver and the domains that are its own.
#[derive(Clone)]
struct NodeResolver {
    resolver: TokioResolver,
    /// The resolver's domain and search domains, absolute.
    own: Rc<[Name]>,
}

/// What a query settles with.
pub(crate) enum Answer {
    /// The records of the type asked (at least one), as `{type, TTL, data}`
    /// with `data` in the presentation form of DNS-over-HTTPS's JSON API,
    /// which `dns.js` reads either way.
    Records(Vec<Found>),
    /// Node's error code (`ENOTFOUND`, `ENODATA`, `ETIMEOUT`, …).
    Failed(&'static str),
}

pub(crate) struct Found {
    kind: u16,
    ttl: u32,
    data: String,
}

host_fn! {
/// `nodeDnsServer()` → the DNS-over-HTTPS server's URL (its JSON API), or
/// null when `node:dns` asks the node's resolver (`nodeDnsQuery`).
pub(super) fn server<'s>(
    scope,
    host: Rc<HostState>,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    Ok(match host.egress().dns_over_https() {
        Some(url) => js_string(scope, url),
        None => Some(v8::null(scope).into()),
    })
}
}

host_fn! {
/// `nodeDnsQuery(name, type)` → Promise of `{code, answers}`: `code` null
/// and `answers` the records of `type` (`A`, `AAAA`, `CNAME`, `MX`, `NS`,
/// `PTR`, `SOA`, `SRV`, `TXT`), or `code` Node's error code. Rejects with a
/// TypeError outside a request, for another type, and past the request's
/// `subrequests`.
pub(super) fn query<'s>(
    scope,
    host: Rc<HostState>,
    name: String,
    kind: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    let early = admit(&host, ctx, &kind).map(|kind| {
        let node = host.state::<DnsState>().and_then(|state| {
            state
                .node
                .get_or_init(|| node_resolver(host.egress()))
                .clone()
        });
        (kind, node)
    });
    let (resolver, promise, (kind, node)) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let policy = host.egress().clone();
    let allowed = host.worker().is_none_or(|worker| worker.may_fetch(&name));
    let task = tokio::task::spawn_local(async move {
        let answer = match node {
            _ if !allowed => Answer::Failed(EREFUSED),
            Some(node) => ask(&policy, &node, &name, kind).await,
            None => Answer::Failed(ECONNREFUSED),
        };
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, Settlement::custom(answer));
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

/// The checks a query passes before it is made: within a request, a type
/// `node:dns` asks, one of the request's subrequests.
fn admit(host: &HostState, ctx: u32, kind: &str) -> HostResult<RecordType> {
    if !host.request_live(ctx) {
        return Err(HostError::type_error(
            "node:dns queries can only be made while handling a request",
        ));
    }
    let kind = match kind {
        "A" => RecordType::A,
        "AAAA" => RecordType::AAAA,
        "CNAME" => RecordType::CNAME,
        "MX" => RecordType::MX,
        "NS" => RecordType::NS,
        "PTR" => RecordType::PTR,
        "SOA" => RecordType::SOA,
        "SRV" => RecordType::SRV,
        "TXT" => RecordType::TXT,
        other => {
            return Err(HostError::type_error(format!(
                "node:dns cannot query {other} records"
            )));
        }
    };
    host.take_call(ctx)?;
    Ok(kind)
}

/// The node's resolver: the servers of /etc/resolv.conf (or of
/// `EgressConfig::dns_resolver`), never its hosts file (the node's own
/// names) nor a cache. `None` when there is none to ask.
fn node_resolver(policy: &EgressPolicy) -> Option<NodeResolver> {
    let (config, options) = match policy.dns_resolver() {
        Some(own) => (configured(own), ResolverOpts::default()),
        None => match hickory_resolver::system_conf::read_system_conf() {
            Ok(system) => system,
            Err(error) => {
                tracing::warn!(%error, "node:dns: no name server to ask (/etc/resolv.conf)");
                return None;
            }
        },
    };
    let own: Vec<Name> = config
        .domain()
        .into_iter()
        .chain(config.search())
        .filter(|name| !name.is_root())
        .map(|name| {
            let mut name = name.clone();
            name.set_fqdn(true);
            name
        })
        .collect();
    let mut options = options;
    options.use_hosts_file = ResolveHosts::Never;
    options.cache_size = 0;
    options.timeout = options.timeout.min(TRY_TIMEOUT);
    let resolver = TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
        .with_options(options)
        .build();
    match resolver {
        Ok(resolver) => Some(NodeResolver {
            resolver,
            own: own.into(),
        }),
        Err(error) => {
            tracing::warn!(%error, "node:dns: the node's resolver could not be made");
            None
        }
    }
}

/// A resolver configuration of `own`'s servers and search domains.
fn configured(own: &DnsResolverConfig) -> ResolverConfig {
    let servers = own
        .servers
        .iter()
        .map(|server| {
            let mut config = NameServerConfig::udp_and_tcp(server.ip());
            for connection in &mut config.connections {
                connection.port = server.port();
            }
            config
        })
        .collect();
    let search = own
        .search
        .iter()
        .filter_map(|domain| Name::from_str_relaxed(domain).ok())
        .collect();
    ResolverConfig::from_parts(None, search, servers)
}

/// One query, refused, filtered and timed as the module docs say.
async fn ask(policy: &EgressPolicy, node: &NodeResolver, name: &str, kind: RecordType) -> Answer {
    let Ok(mut name) = Name::from_str_relaxed(name) else {
        return Answer::Failed(EBADNAME);
    };
    name.set_fqdn(true);
    if refused(policy, &node.own, &name, kind) {
        return Answer::Failed(ENOTFOUND);
    }
    let lookup = match tokio::time::timeout(QUERY_TIMEOUT, node.resolver.lookup(name, kind)).await {
        Err(_) => return Answer::Failed(ETIMEOUT),
        Ok(Err(error)) => return Answer::Failed(code(&error)),
        Ok(Ok(lookup)) => lookup,
    };
    let mut found = Vec::new();
    let mut dropped = false;
    for record in lookup.answers() {
        if refused(policy, &node.own, &record.name, kind) {
            return Answer::Failed(ENOTFOUND);
        }
        if record.record_type() != kind {
            continue;
        }
        let address = match &record.data {
            RData::A(A(ip)) => Some(IpAddr::V4(*ip)),
            RData::AAAA(AAAA(ip)) => Some(IpAddr::V6(*ip)),
            _ => None,
        };
        if address.is_some_and(|ip| policy.check(ip).is_err()) {
            dropped = true;
            continue;
        }
        if let Some(data) = presentation(&record.data) {
            found.push(Found {
                kind: u16::from(kind),
                ttl: record.ttl,
                data,
            });
        }
    }
    match (found.is_empty(), dropped) {
        (false, _) => Answer::Records(found),
        (true, true) => Answer::Failed(ENOTFOUND),
        (true, false) => Answer::Failed(ENODATA),
    }
}

/// Whether a query of `kind` for `name` (absolute) is refused: see the
/// module docs. `own`: the node's domain and search domains.
fn refused(policy: &EgressPolicy, own: &[Name], name: &Name, kind: RecordType) -> bool {
    let addresses = matches!(kind, RecordType::A | RecordType::AAAA);
    if let Some(reverse) = reverse_address(name) {
        return match reverse {
            Some(ip) => policy.check(ip).is_err(),
            None => !policy.opens_all(),
        };
    }
    let under = |zone: &Name| zone.zone_of(name);
    if INTERNAL
        .iter()
        .filter_map(|zone| Name::from_ascii(zone).ok())
        .any(|zone| under(&zone))
    {
        return !(policy.opens_all() || (addresses && policy.opens_some()));
    }
    if own.iter().any(under) {
        return !(addresses || policy.opens_all());
    }
    false
}

/// For a name under `in-addr.arpa.` or `ip6.arpa.`: `Some` with the address
/// it names, written as a resolver writes it, else `Some(None)` (a zone of
/// addresses, or not an address at all). `None` for every other name.
fn reverse_address(name: &Name) -> Option<Option<IpAddr>> {
    let arpa = ["in-addr.arpa.", "ip6.arpa."]
        .iter()
        .filter_map(|zone| Name::from_ascii(zone).ok())
        .any(|zone| zone.zone_of(name));
    if !arpa {
        return None;
    }
    let address = name.parse_arpa_name().ok().and_then(|net| {
        let full = match net.addr() {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        let ip = net.addr();
        // `010` is read as 10, but the server sees another label.
        (net.prefix_len() == full && Name::from(ip).eq_ignore_root(name)).then_some(ip)
    });
    Some(address)
}

/// Record data in the presentation form of the JSON API (names absolute).
fn presentation(data: &RData) -> Option<String> {
    Some(match data {
        RData::A(A(ip)) => ip.to_string(),
        RData::AAAA(AAAA(ip)) => ip.to_string(),
        RData::CNAME(CNAME(name)) | RData::NS(NS(name)) | RData::PTR(PTR(name)) => name.to_ascii(),
        RData::MX(mx) => format!("{} {}", mx.preference, mx.exchange.to_ascii()),
        RData::SRV(srv) => format!(
            "{} {} {} {}",
            srv.priority,
            srv.weight,
            srv.port,
            srv.target.to_ascii()
        ),
        RData::SOA(soa) => format!(
            "{} {} {} {} {} {} {}",
            soa.mname.to_ascii(),
            soa.rname.to_ascii(),
            soa.serial,
            soa.refresh,
            soa.retry,
            soa.expire,
            soa.minimum
        ),
        RData::TXT(txt) => txt
            .txt_data
            .iter()
            .map(|chunk| {
                let text = String::from_utf8_lossy(chunk);
                format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    })
}

/// Node's code for a failed query.
fn code(error: &NetError) -> &'static str {
    let rcode = |code: ResponseCode| match code {
        ResponseCode::NXDomain => ENOTFOUND,
        ResponseCode::NoError => ENODATA,
        ResponseCode::ServFail => "ESERVFAIL",
        ResponseCode::Refused => EREFUSED,
        ResponseCode::FormErr => "EFORMERR",
        ResponseCode::NotImp => "ENOTIMP",
        _ => EBADRESP,
    };
    match error {
        NetError::Dns(DnsError::NoRecordsFound(none)) => rcode(none.response_code),
        NetError::Dns(DnsError::ResponseCode(code)) => rcode(*code),
        NetError::Timeout => ETIMEOUT,
        NetError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => ETIMEOUT,
        NetError::Io(_) | NetError::NoConnections => ECONNREFUSED,
        _ => EBADRESP,
    }
}

/// `{code, answers}` (objects without a prototype, see `holder`).
pub(crate) fn answer_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    answer: Answer,
) -> v8::Local<'s, v8::Value> {
    let object = holder(scope);
    let (code, found) = match answer {
        Answer::Records(found) => (None, found),
        Answer::Failed(code) => (Some(code), Vec::new()),
    };
    let code = match code {
        Some(code) => js_string(scope, code),
        None => Some(v8::null(scope).into()),
    };
    set(scope, object, "code", code);
    let answers: Vec<v8::Local<'s, v8::Value>> = found
        .into_iter()
        .map(|found| {
            let record = holder(scope);
            let kind = v8::Integer::new(scope, i32::from(found.kind)).into();
            set(scope, record, "type", Some(kind));
            let ttl = v8::Integer::new_from_unsigned(scope, found.ttl).into();
            set(scope, record, "TTL", Some(ttl));
            let data = js_string(scope, &found.data);
            set(scope, record, "data", data);
            record.into()
        })
        .collect();
    let answers = v8::Array::new_with_elements(scope, &answers).into();
    set(scope, object, "answers", Some(answers));
    object.into()
}

impl isolane_engine::api::Settle for Answer {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        Ok(answer_js(scope, *self))
    }
}
