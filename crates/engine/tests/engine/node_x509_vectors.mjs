// Writes node_x509_vectors.json: three certificates made by the `openssl`
// command (an RSA CA, an EC P-256 leaf it signed with alternative names of
// every common kind, key usages and authority information access, and a
// self-signed Ed25519 certificate with only a subject), and what Node's own
// X509Certificate answers for them (node_x509.rs compares Isolane's); and a
// big one, of a thousand names, for node_x509.rs's memory attack.
// `node node_x509_vectors.mjs > node_x509_vectors.json` (Node 20, OpenSSL 3).
import * as crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeAll } from './node_x509_describe.mjs';

const dir = mkdtempSync(join(tmpdir(), 'x509-vectors-'));
const at = (file) => join(dir, file);
const openssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'inherit'] });
openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '3650',
  '-sha256', '-subj', '/C=US/ST=California/O=Isolane Test, Inc./CN=Isolane Test CA', '-set_serial', '0x0102',
  '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', at('leaf.key'),
  '-out', at('leaf.csr'), '-subj', '/C=DE/L=Berlin/O=Example Co/OU=Web/CN=www.example.com/emailAddress=admin@example.com');
writeFileSync(at('leaf.ext'), [
  'subjectAltName=DNS:www.example.com,DNS:*.api.example.com,DNS:example.com,IP:127.0.0.1,IP:::1,email:ops@example.com,URI:https://example.com/',
  'basicConstraints=CA:FALSE',
  'keyUsage=digitalSignature,keyEncipherment',
  'extendedKeyUsage=serverAuth,clientAuth',
  'authorityInfoAccess=OCSP;URI:http://ocsp.example.com/,caIssuers;URI:http://ca.example.com/ca.pem',
].join('\n'));
openssl('x509', '-req', '-in', at('leaf.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-out', at('leaf.pem'),
  '-days', '825', '-sha384', '-set_serial', '0x00ABCDEF0123456789', '-extfile', at('leaf.ext'));
openssl('req', '-x509', '-newkey', 'ed25519', '-nodes', '-keyout', at('ed.key'), '-out', at('ed.pem'), '-days', '30',
  '-subj', '/CN=ed.example.org/emailAddress=me@ed.example.org', '-set_serial', '7');

// A big certificate (1000 names) for node_x509.rs's memory attack.
const names = Array.from({ length: 1000 }, (_, i) => `DNS:host-${i}.big.example.com`).join(',');
openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', at('big.key'),
  '-out', at('big.pem'), '-days', '30', '-subj', '/CN=big.example.com', '-addext', `subjectAltName=${names}`);

const read = (file) => readFileSync(at(file), 'utf8');
const out = { ca: read('ca.pem'), leaf: read('leaf.pem'), ed: read('ed.pem'), big: read('big.pem'), leafKey: read('leaf.key'), caKey: read('ca.key') };
out.expected = describeAll(crypto, Buffer, out);
console.log(JSON.stringify(out, null, 1));
