// Writes node_pkcs8_vectors.json: encrypted PKCS#8 keys, as Node writes them
// (PBES2: PBKDF2-HMAC-SHA256, AES-256-CBC) and as the `openssl` command does
// with scrypt, with PBKDF2-HMAC-SHA1 and AES-128-CBC, with 3DES, under PBES1,
// and with a cost past
// one call's bound (PBKDF2 of 2^23 - 1 iterations, scrypt with r 127: the
// openssl command's keys with that one INTEGER rewritten); and what
// Node answers for node_pkcs8_cases.mjs (node_crypto_pkcs8.rs runs it in a
// Worker and compares).
// `node node_pkcs8_vectors.mjs > node_pkcs8_vectors.json` (Node 20, OpenSSL 3).
import * as crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pkcs8Cases } from './node_pkcs8_cases.mjs';

const dir = mkdtempSync(join(tmpdir(), 'pkcs8-vectors-'));
const at = (file) => join(dir, file);
const passphrase = 'correct horse';
const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
writeFileSync(at('ec.pem'), privateKey.export({ format: 'pem', type: 'pkcs8' }));
const openssl = (...args) => execFileSync('openssl', ['pkcs8', '-topk8', '-in', at('ec.pem'), '-passout', `pass:${passphrase}`, ...args]).toString();
const keys = {
  node: privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase }),
  nodeRsa: rsa.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-128-cbc', passphrase }),
  nodeDer: privateKey.export({ format: 'der', type: 'pkcs8', cipher: 'aes-192-cbc', passphrase }).toString('base64'),
  scrypt: openssl('-scrypt'),
  sha1: openssl('-v2', 'aes-128-cbc', '-v2prf', 'hmacWithSHA1'),
  des3: openssl('-v2', 'des3'),
  pbes1: openssl('-v1', 'PBE-SHA1-3DES'),
  maxPbkdf2: openssl('-v2', 'aes-256-cbc', '-iter', '100000'),
};
// The DER of `pem` with the first `from` bytes replaced by `to` (same length).
const patched = (pem, from, to) => {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const i = der.indexOf(Buffer.from(from));
  if (i < 0) throw new Error('pattern not found');
  Buffer.from(to).copy(der, i);
  return `-----BEGIN ENCRYPTED PRIVATE KEY-----\n${der.toString('base64').match(/.{1,64}/g).join('\n')}\n-----END ENCRYPTED PRIVATE KEY-----\n`;
};
keys.hugePbkdf2 = patched(keys.maxPbkdf2, [2, 3, 0x01, 0x86, 0xa0], [2, 3, 0x7f, 0xff, 0xff]);
keys.hugeScrypt = patched(keys.scrypt, [2, 2, 0x40, 0x00, 2, 1, 8], [2, 2, 0x40, 0x00, 2, 1, 0x7f]);
const jwk = privateKey.export({ format: 'jwk' });
const expected = pkcs8Cases(crypto, Buffer, { keys, jwk });
console.log(JSON.stringify({ node: process.version, jwk, keys, expected }, null, 1));
