// node:net — importable: isIP, isIPv4 and isIPv6 work (IPv6 by the
// runtime's URL parser); sockets and servers throw "not implemented".
// Runs as function (host, internal, require, module, exports).

const { stubs, stubClass } = require('node:internal/errors');

const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);

function isIPv4(input) {
  return typeof input === 'string' && IPV4.test(input);
}

function isIPv6(input) {
  if (typeof input !== 'string' || !input.includes(':')) return false;
  const address = input.replace(/%[0-9A-Za-z._~-]+$/, '');
  if (/[^0-9A-Fa-f:.]/.test(address)) return false;
  try {
    return new URL(`http://[${address}]/`).hostname.startsWith('[');
  } catch {
    return false;
  }
}

function isIP(input) {
  if (isIPv4(input)) return 4;
  if (isIPv6(input)) return 6;
  return 0;
}

module.exports = {
  isIP,
  isIPv4,
  isIPv6,
  ...stubs('net', ['connect', 'createConnection', 'createServer', 'getDefaultAutoSelectFamily', 'setDefaultAutoSelectFamily']),
  Socket: stubClass('net.Socket'),
  Server: stubClass('net.Server'),
  Stream: stubClass('net.Stream'),
  BlockList: stubClass('net.BlockList'),
  SocketAddress: stubClass('net.SocketAddress'),
};
