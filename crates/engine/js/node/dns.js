// node:dns and node:dns/promises — importable only: lookups throw "not
// implemented" (workerd resolves over DNS-over-HTTPS; Isolane does not
// yet). The error codes are Node's. Runs as function (host, internal,
// require, module, exports).

const { stubs, stubClass } = require('node:internal/errors');

const NAMES = [
  'lookup', 'lookupService', 'resolve', 'resolve4', 'resolve6', 'resolveAny', 'resolveCaa',
  'resolveCname', 'resolveMx', 'resolveNaptr', 'resolveNs', 'resolvePtr', 'resolveSoa', 'resolveSrv',
  'resolveTxt', 'reverse', 'setServers', 'setDefaultResultOrder',
];

const CODES = {
  NODATA: 'ENODATA', FORMERR: 'EFORMERR', SERVFAIL: 'ESERVFAIL', NOTFOUND: 'ENOTFOUND',
  NOTIMP: 'ENOTIMP', REFUSED: 'EREFUSED', BADQUERY: 'EBADQUERY', BADNAME: 'EBADNAME',
  BADFAMILY: 'EBADFAMILY', BADRESP: 'EBADRESP', CONNREFUSED: 'ECONNREFUSED', TIMEOUT: 'ETIMEOUT',
  EOF: 'EOF', FILE: 'EFILE', NOMEM: 'ENOMEM', DESTRUCTION: 'EDESTRUCTION', BADSTR: 'EBADSTR',
  BADFLAGS: 'EBADFLAGS', NONAME: 'ENONAME', BADHINTS: 'EBADHINTS', NOTINITIALIZED: 'ENOTINITIALIZED',
  LOADIPHLPAPI: 'ELOADIPHLPAPI', ADDRGETNETWORKPARAMS: 'EADDRGETNETWORKPARAMS', CANCELLED: 'ECANCELLED',
};

const promises = {
  ...stubs('dns.promises', NAMES, true),
  getServers: () => [],
  getDefaultResultOrder: () => 'verbatim',
  Resolver: stubClass('dns.promises.Resolver'),
  ...CODES,
};

module.exports = {
  ...stubs('dns', NAMES),
  getServers: () => [],
  getDefaultResultOrder: () => 'verbatim',
  Resolver: stubClass('dns.Resolver'),
  ADDRCONFIG: 1024,
  ALL: 256,
  V4MAPPED: 2048,
  promises,
  ...CODES,
};
