// Writes node_prime_vectors.json: what Node answers for node_prime_cases.mjs
// (node_crypto_prime.rs compares Isolane's answers).
// `node node_prime_vectors.mjs > node_prime_vectors.json` (Node 20, OpenSSL 3).
import * as crypto from 'node:crypto';
import { Buffer } from 'node:buffer';
import { primeCases } from './node_prime_cases.mjs';

console.log(JSON.stringify({ node: process.version, cases: primeCases(crypto, Buffer) }, null, 1));
