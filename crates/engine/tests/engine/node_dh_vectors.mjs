// Writes node_dh_vectors.json: what Node answers for node_dh_cases.mjs
// (node_crypto_dh.rs compares Isolane's answers).
// `node node_dh_vectors.mjs > node_dh_vectors.json` (Node 20, OpenSSL 3).
import * as crypto from 'node:crypto';
import { Buffer } from 'node:buffer';
import { dhCases } from './node_dh_cases.mjs';

console.log(JSON.stringify({ node: process.version, cases: dhCases(crypto, Buffer) }, null, 1));
