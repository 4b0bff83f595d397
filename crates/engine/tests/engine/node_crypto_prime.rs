//! `node:crypto`'s checkPrime, generatePrime, getCipherInfo and constants
//! against Node's answers (`node_prime_cases.mjs`, run in a Worker; Node
//! 20's answers are `node_prime_vectors.json`, written by
//! `node_prime_vectors.mjs`); workerd's extra exports (the KeyObject kinds,
//! the throwing createCipher, ...); a Worker searching primes without end
//! meets its CPU limit while a neighbour on the same thread answers.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;
use crate::node_crypto::{cases_answer_as_node, each_ends_at_the_cpu_limit};

/// Node's answers (see the module docs).
const VECTORS: &str = include_str!("node_prime_vectors.json");

#[tokio::test]
async fn primes_cipher_info_and_constants_answer_as_in_node() {
    cases_answer_as_node(include_str!("node_prime_cases.mjs"), "primeCases", VECTORS).await;
}

/// What workerd has beyond Node 20's exports: the KeyObject kinds,
/// CryptoKey, createCipher and setEngine throwing, crypto's constants in
/// node:constants; the callback forms answer later; numbers past 8192 bits
/// are refused.
#[tokio::test]
async fn workerd_extras_are_there() {
    let body = r#"
      const out = [];
      const t = (f) => { try { out.push(f()); } catch (e) { out.push(`${e.code}: ${e.message}`); } };
      const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const secret = crypto.createSecretKey(Buffer.alloc(16));
      t(() => [publicKey instanceof crypto.PublicKeyObject, privateKey instanceof crypto.PrivateKeyObject,
        secret instanceof crypto.SecretKeyObject, secret instanceof crypto.KeyObject, publicKey.constructor.name,
        secret instanceof crypto.PublicKeyObject].join());
      t(() => new crypto.SecretKeyObject());
      t(() => crypto.CryptoKey === CryptoKey);
      t(() => crypto.createCipher('aes-128-cbc', 'pw'));
      t(() => crypto.createDecipher('aes-128-cbc', 'pw'));
      t(() => crypto.Cipher('aes-128-cbc', 'pw'));
      t(() => crypto.setEngine('x'));
      t(() => crypto.Certificate.verifySpkac(Buffer.from('x')));
      t(() => [constants.RSA_PKCS1_OAEP_PADDING, constants.TLS1_3_VERSION, constants.ENOENT, crypto.fips].join());
      t(() => crypto.generatePrimeSync(8193));
      t(() => crypto.checkPrimeSync(2n ** 8200n + 1n));
      const late = await new Promise((resolve) => {
        let sync = true;
        crypto.checkPrime(7n, (error, prime) => resolve([sync, error, prime]));
        sync = false;
      });
      out.push(late.join());
      const made = await new Promise((resolve) => crypto.generatePrime(32, { bigint: true }, (e, p) => resolve(typeof p)));
      out.push(made);
      return out.join('\n');
    "#;
    let out = answer(
        NodeCompat::V1,
        "import crypto from 'node:crypto'; import constants from 'node:constants'; import { Buffer } from 'node:buffer';",
        body,
    )
    .await;
    let lines: Vec<&str> = out.lines().collect();
    let expected = [
        "true,true,true,true,PublicKeyObject,false",
        "ERR_ILLEGAL_CONSTRUCTOR: Illegal constructor",
        "true",
        "ERR_METHOD_NOT_IMPLEMENTED: crypto.createCipher is not implemented on Isolane",
        "ERR_METHOD_NOT_IMPLEMENTED: crypto.createDecipher is not implemented on Isolane",
        "ERR_METHOD_NOT_IMPLEMENTED: crypto.Cipher is not implemented on Isolane",
        "ERR_METHOD_NOT_IMPLEMENTED: crypto.setEngine is not implemented on Isolane",
        "ERR_METHOD_NOT_IMPLEMENTED: crypto.Certificate.verifySpkac is not implemented on Isolane",
        "4,772,2,0",
        "undefined: primes above 8192 bits are not supported",
        "undefined: primes above 8192 bits are not supported",
        "false,,true",
        "bigint",
    ];
    assert_eq!(lines, expected, "{out}");
}

/// An 8192-bit prime search (far past the CPU limit) is stopped with the
/// turn; so is a loop of 8192-bit primality tests and of small searches; a
/// neighbour on the same thread answers before, during and after.
#[tokio::test]
async fn endless_prime_searches_end_at_the_cpu_limit() {
    each_ends_at_the_cpu_limit(
        "prime",
        "",
        &[
            "crypto.generatePrimeSync(8192);",
            "crypto.generatePrimeSync(4096, { safe: true });",
            "const p = crypto.generatePrimeSync(64, { bigint: true }); const n = 2n ** 8191n - 1n; for (;;) crypto.checkPrimeSync(n, { checks: 64 }) || crypto.checkPrimeSync(p);",
            "for (;;) crypto.generatePrimeSync(256);",
        ],
    )
    .await;
}
