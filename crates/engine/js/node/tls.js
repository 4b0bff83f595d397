// node:tls — importable only: connections and contexts throw "not
// implemented". Runs as function (host, internal, require, module, exports).

const { stubs, stubClass } = require('node:internal/errors');

module.exports = {
  DEFAULT_MIN_VERSION: 'TLSv1.2',
  DEFAULT_MAX_VERSION: 'TLSv1.3',
  DEFAULT_ECDH_CURVE: 'auto',
  DEFAULT_CIPHERS: '',
  rootCertificates: Object.freeze([]),
  ...stubs('tls', ['connect', 'createServer', 'createSecureContext', 'checkServerIdentity', 'getCiphers', 'convertALPNProtocols']),
  TLSSocket: stubClass('tls.TLSSocket'),
  Server: stubClass('tls.Server'),
  SecureContext: stubClass('tls.SecureContext'),
};
