// node:dns and node:dns/promises. By default every query is asked of the
// node's own resolver (`host.nodeDnsQuery`, src/host/node/dns.rs: absolute
// names only, the cluster's names refused, addresses the egress policy
// refuses dropped; one subrequest each). When the node names a
// DNS-over-HTTPS server (`nodeDnsServer`, its `--dns-over-https`), a query
// is instead a request of that server's JSON API (`application/dns-json`)
// made with the Worker's own `fetch`, as workerd does, so its egress policy
// and subrequest limit hold. Both answer in the JSON API's record shape.
// lookup, resolve (A, AAAA, CNAME, MX, NS, PTR, SOA, SRV, TXT), reverse;
// lookupService, resolveAny, resolveCaa, resolveNaptr, setServers and
// Resolver throw "not implemented". Errors are Node's (`queryA ENOTFOUND
// name`). Runs as function (host, internal, require, module, exports).

const { codedError, invalidArgType, notImplemented, stubClass } = require('node:internal/errors');

const CODES = {
  NODATA: 'ENODATA', FORMERR: 'EFORMERR', SERVFAIL: 'ESERVFAIL', NOTFOUND: 'ENOTFOUND',
  NOTIMP: 'ENOTIMP', REFUSED: 'EREFUSED', BADQUERY: 'EBADQUERY', BADNAME: 'EBADNAME',
  BADFAMILY: 'EBADFAMILY', BADRESP: 'EBADRESP', CONNREFUSED: 'ECONNREFUSED', TIMEOUT: 'ETIMEOUT',
  EOF: 'EOF', FILE: 'EFILE', NOMEM: 'ENOMEM', DESTRUCTION: 'EDESTRUCTION', BADSTR: 'EBADSTR',
  BADFLAGS: 'EBADFLAGS', NONAME: 'ENONAME', BADHINTS: 'EBADHINTS', NOTINITIALIZED: 'ENOTINITIALIZED',
  LOADIPHLPAPI: 'ELOADIPHLPAPI', ADDRGETNETWORKPARAMS: 'EADDRGETNETWORKPARAMS', CANCELLED: 'ECANCELLED',
};

// DNS record types' numbers (RFC 1035 and successors).
const TYPES = { A: 1, NS: 2, CNAME: 5, SOA: 6, PTR: 12, MX: 15, TXT: 16, AAAA: 28, SRV: 33 };
const ORDERS = ['verbatim', 'ipv4first', 'ipv6first'];

let defaultOrder = 'verbatim';

function dnsError(syscall, code, hostname) {
  const error = codedError(Error, code, `${syscall} ${code} ${hostname}`);
  error.syscall = syscall;
  error.hostname = hostname;
  return error;
}

function invalidArgValue(name, value) {
  return codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument '${name}' is invalid. Received ${String(value)}`);
}

function checkName(name, what = 'name') {
  if (typeof name !== 'string') throw invalidArgType(what, 'of type string', name);
}

// `queryA`, `queryAaaa`, ...: the syscall Node names in its errors.
function syscallOf(type) {
  return `query${type[0]}${type.slice(1).toLowerCase()}`;
}

// The answers of `type` for `name`, as the JSON API gives them
// (`{name, type, TTL, data}`); rejects with Node's errors.
async function query(name, type) {
  const syscall = syscallOf(type);
  const server = host.nodeDnsServer();
  if (server === null) return nodeQuery(name, type, syscall);
  const url = new URL(server);
  url.searchParams.set('name', name);
  url.searchParams.set('type', type);
  let json;
  try {
    const response = await fetch(url, { headers: { accept: 'application/dns-json' } });
    if (!response.ok) throw dnsError(syscall, CODES.BADRESP, name);
    json = await response.json();
  } catch (error) {
    throw error?.syscall === syscall ? error : dnsError(syscall, CODES.BADQUERY, name);
  }
  if (json === null || typeof json !== 'object' || !Array.isArray(json.Question)) {
    throw dnsError(syscall, CODES.BADRESP, name);
  }
  // RCODE 3: the name does not exist.
  if (json.Status === 3) throw dnsError(syscall, CODES.NOTFOUND, name);
  if (json.Status !== 0) throw dnsError(syscall, json.Status === 2 ? CODES.SERVFAIL : CODES.BADRESP, name);
  const answers = (Array.isArray(json.Answer) ? json.Answer : []).filter((a) => a && a.type === TYPES[type]);
  if (answers.length === 0) throw dnsError(syscall, CODES.NODATA, name);
  return answers;
}

// A query of the node's resolver: `{code, answers}`, the answers already of
// `type` only. A rejection (past the subrequest limit) is EBADQUERY, as a
// failed DNS-over-HTTPS fetch is.
async function nodeQuery(name, type, syscall) {
  let result;
  try {
    result = await host.nodeDnsQuery(name, type);
  } catch {
    throw dnsError(syscall, CODES.BADQUERY, name);
  }
  if (result.code !== null) throw dnsError(syscall, result.code, name);
  return result.answers;
}

const withoutDot = (name) => (name.endsWith('.') ? name.slice(0, -1) : name);

// Record data (the JSON API's presentation form) as Node's records.
const READERS = {
  A: (a, options) => (options?.ttl ? { address: a.data, ttl: a.TTL } : a.data),
  AAAA: (a, options) => (options?.ttl ? { address: a.data, ttl: a.TTL } : a.data),
  CNAME: (a) => withoutDot(a.data),
  NS: (a) => withoutDot(a.data),
  PTR: (a) => withoutDot(a.data),
  MX: (a) => {
    const [priority, exchange = ''] = a.data.split(' ');
    return { exchange: withoutDot(exchange), priority: Number.parseInt(priority, 10) };
  },
  SRV: (a) => {
    const [priority, weight, port, name = ''] = a.data.split(' ');
    return { name: withoutDot(name), port: Number.parseInt(port, 10), priority: Number.parseInt(priority, 10), weight: Number.parseInt(weight, 10) };
  },
  TXT: (a) => {
    // One or more quoted strings: each becomes one chunk of the record.
    const chunks = [];
    const text = a.data;
    if (!text.startsWith('"')) return [text];
    let i = 0;
    while (i < text.length) {
      if (text[i] !== '"') { i += 1; continue; }
      let chunk = '';
      i += 1;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length) i += 1;
        chunk += text[i];
        i += 1;
      }
      chunks.push(chunk);
      i += 1;
    }
    return chunks;
  },
  SOA: (a) => {
    const [nsname, hostmaster, serial, refresh, retry, expire, minttl] = a.data.split(' ');
    const n = (s) => Number.parseInt(s, 10);
    return { nsname: withoutDot(nsname ?? ''), hostmaster: withoutDot(hostmaster ?? ''), serial: n(serial), refresh: n(refresh), retry: n(retry), expire: n(expire), minttl: n(minttl) };
  },
};

async function resolveType(name, type, options) {
  const answers = await query(name, type);
  if (type === 'SOA') return READERS.SOA(answers[0]);
  return answers.map((a) => READERS[type](a, options));
}

// The promise forms: each checks its arguments at once (a TypeError is
// thrown, not a rejection), as Node and workerd do.
function resolver(type) {
  return (name, options) => {
    checkName(name);
    return resolveType(name, type, options);
  };
}

const resolve4 = resolver('A');
const resolve6 = resolver('AAAA');
const resolveCname = resolver('CNAME');
const resolveMx = resolver('MX');
const resolveNs = resolver('NS');
const resolvePtr = resolver('PTR');
const resolveSoa = resolver('SOA');
const resolveSrv = resolver('SRV');
const resolveTxt = resolver('TXT');

function resolve(name, rrtype = 'A') {
  checkName(name);
  if (typeof rrtype !== 'string') throw invalidArgType('rrtype', 'of type string', rrtype);
  if (!(rrtype in READERS)) {
    if (['ANY', 'CAA', 'NAPTR'].includes(rrtype)) return Promise.reject(notImplementedError(`dns.resolve('${rrtype}')`));
    throw invalidArgValue('rrtype', rrtype);
  }
  return resolveType(name, rrtype);
}

// `1.2.3.4` → `4.3.2.1.in-addr.arpa`; IPv6 by nibbles under `ip6.arpa`.
function reverseName(ip) {
  const family = require('node:net').isIP(ip);
  if (family === 4) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  if (family === 6) {
    const [head, tail = ''] = ip.split('::');
    const groups = (s) => (s ? s.split(':') : []);
    const left = groups(head);
    const right = groups(tail);
    const missing = ip.includes('::') ? 8 - left.length - right.length : 0;
    const all = [...left, ...Array(missing).fill('0'), ...right].map((g) => g.padStart(4, '0'));
    return `${all.join('').split('').reverse().join('.')}.ip6.arpa`;
  }
  throw codedError(Error, 'EINVAL', `getHostByAddr EINVAL ${ip}`);
}

function reverse(ip) {
  checkName(ip, 'ip');
  return resolveType(reverseName(ip), 'PTR').catch((error) => {
    if (error.syscall) {
      error.syscall = 'getHostByAddr';
      error.hostname = ip;
      error.message = `getHostByAddr ${error.code} ${ip}`;
    }
    throw error;
  });
}

function notImplementedError(what) {
  return codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', `${what} is not implemented on Isolane`);
}

// lookup's options: `[family, all, order]`.
function lookupOptions(options) {
  if (options === undefined || options === null) return [0, false, defaultOrder];
  if (typeof options === 'number') options = { family: options };
  if (typeof options !== 'object') throw invalidArgType('options', 'of type integer or object', options);
  if (options.hints != null && options.hints !== 0) {
    throw codedError(TypeError, 'ERR_OPTION_NOT_IMPLEMENTED', 'The options.hints option is not implemented');
  }
  let family = options.family ?? 0;
  if (family === 'IPv4') family = 4;
  if (family === 'IPv6') family = 6;
  if (![0, 4, 6].includes(family)) throw invalidArgValue('options.family', family);
  let order = defaultOrder;
  if (options.verbatim != null) order = options.verbatim ? 'verbatim' : 'ipv4first';
  if (options.order != null) {
    if (!ORDERS.includes(options.order)) throw invalidArgValue('options.order', options.order);
    order = options.order;
  }
  return [family, Boolean(options.all), order];
}

// What lookup finds: `[{address, family}, ...]` in the order asked.
async function lookupAll(hostname, family, order) {
  const net = require('node:net');
  const literal = net.isIP(hostname);
  if (literal) return [{ address: hostname, family: literal }];
  const ask = (type, fam) =>
    query(hostname, type).then(
      (answers) => answers.map((a) => ({ address: a.data, family: fam })),
      (error) => (family === 0 ? [] : Promise.reject(error)),
    );
  const v4 = family === 6 ? [] : await ask('A', 4);
  const v6 = family === 4 ? [] : await ask('AAAA', 6);
  const found = order === 'ipv6first' ? [...v6, ...v4] : [...v4, ...v6];
  if (found.length === 0) throw dnsError('queryA', CODES.NOTFOUND, hostname);
  return found;
}

function lookupPromise(hostname, options) {
  if (hostname && typeof hostname !== 'string') throw invalidArgType('hostname', 'of type string', hostname);
  const [family, all, order] = lookupOptions(options);
  if (!hostname) return Promise.resolve(all ? [] : { address: null, family: family === 6 ? 6 : 4 });
  return lookupAll(hostname, family, order).then((found) => (all ? found : found[0]));
}

function lookup(hostname, options, callback) {
  if (typeof options === 'function') {
    callback = options;
    options = undefined;
  }
  if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
  const all = typeof options === 'object' && options !== null && Boolean(options.all);
  lookupPromise(hostname, options).then(
    (found) => (all ? callback(null, found) : callback(null, found.address, found.family)),
    (error) => callback(error),
  );
}

function setDefaultResultOrder(order) {
  if (!ORDERS.includes(order)) throw invalidArgValue('dnsOrder', order);
  defaultOrder = order;
}

function getServers() {
  // The node's resolver is not named: its address is the cluster's DNS
  // service, nothing a Worker may reach or should learn. A DNS-over-HTTPS
  // server's address cannot be known before it is resolved: workerd's
  // answer (Cloudflare's resolvers) for Cloudflare's server.
  return host.nodeDnsServer() === CLOUDFLARE ? ['1.1.1.1', '2606:4700:4700::1111', '1.0.0.1', '2606:4700:4700::1001'] : [];
}
const CLOUDFLARE = 'https://cloudflare-dns.com/dns-query';

// The callback form of a promise function: `(...args, callback)`.
function callbackForm(fn) {
  return function (...args) {
    const callback = args.pop();
    if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
    fn(...args).then((value) => callback(null, value), (error) => callback(error));
  };
}

const unsupported = ['lookupService', 'resolveAny', 'resolveCaa', 'resolveNaptr', 'setServers'];

const promises = {
  lookup: lookupPromise,
  resolve,
  resolve4,
  resolve6,
  resolveCname,
  resolveMx,
  resolveNs,
  resolvePtr,
  resolveSoa,
  resolveSrv,
  resolveTxt,
  reverse,
  getServers,
  getDefaultResultOrder: () => defaultOrder,
  setDefaultResultOrder,
  Resolver: stubClass('dns.promises.Resolver'),
  ADDRCONFIG: 1024,
  ALL: 256,
  V4MAPPED: 2048,
  ...CODES,
};
for (const name of unsupported) {
  const fail = notImplemented(`dns.promises.${name}`);
  promises[name] = name === 'setServers' ? fail : async () => fail();
}

module.exports = {
  lookup,
  resolve: callbackForm(resolve),
  resolve4: callbackForm(resolve4),
  resolve6: callbackForm(resolve6),
  resolveCname: callbackForm(resolveCname),
  resolveMx: callbackForm(resolveMx),
  resolveNs: callbackForm(resolveNs),
  resolvePtr: callbackForm(resolvePtr),
  resolveSoa: callbackForm(resolveSoa),
  resolveSrv: callbackForm(resolveSrv),
  resolveTxt: callbackForm(resolveTxt),
  reverse: callbackForm(reverse),
  getServers,
  getDefaultResultOrder: () => defaultOrder,
  setDefaultResultOrder,
  Resolver: stubClass('dns.Resolver'),
  ADDRCONFIG: 1024,
  ALL: 256,
  V4MAPPED: 2048,
  promises,
  ...CODES,
};
for (const name of unsupported) module.exports[name] = notImplemented(`dns.${name}`);
