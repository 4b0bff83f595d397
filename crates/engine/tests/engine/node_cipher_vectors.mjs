// Writes node_cipher_vectors.json: what Node answers for node_cipher_cases.mjs
// (node_crypto_ciphers.rs compares Isolane's answers).
// `node node_cipher_vectors.mjs > node_cipher_vectors.json` (Node 20, OpenSSL 3).
import * as crypto from 'node:crypto';
import { Buffer } from 'node:buffer';
import { Readable } from 'node:stream';
import { cipherCases, cipherStreams } from './node_cipher_cases.mjs';

const cases = cipherCases(crypto, Buffer);
const streams = await cipherStreams(crypto, Buffer, Readable);
console.log(JSON.stringify({ node: process.version, cases, streams }, null, 1));
