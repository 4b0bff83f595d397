//! `node:crypto`'s checkPrime, generatePrime, getCipherInfo and constants
//! against Node's answers (`node_prime_cases.mjs`, run in a Worker; Node
//! 20's answers are `node_prime_vectors.json`, written by
//! `node_prime_vectors.mjs`); `Certificate` (SPKAC) against Node run on the
//! same input; workerd's extra exports (the KeyObject kinds, the throwing
//! createCipher, ...); a Worker searching primes, verifying SPKACs or
//! running raw RSA without end meets its CPU limit while a neighbour on the
//! same thread answers.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;
use crate::node_crypto::{cases_answer_as_node, each_ends_at_the_cpu_limit, node_prints};

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
      t(() => [constants.RSA_PKCS1_OAEP_PADDING, constants.TLS1_3_VERSION, constants.ENOENT, crypto.fips].join());
      t(() => crypto.generatePrimeSync(1));
      t(() => crypto.generatePrimeSync(2, { safe: true }));
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
        "4,772,2,0",
        "0: Error while generating prime",
        "0: Error while generating prime",
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

/// An SPKAC `openssl spkac -digest sha256` wrote (a 1024-bit RSA key,
/// challenge "isolane challenge"). (`openssl spkac`'s default digest is
/// MD5, whose signatures AWS-LC, like workerd's BoringSSL, does not verify.)
const SPKAC: &str = "MIIBSzCBtTCBnzANBgkqhkiG9w0BAQEFAAOBjQAwgYkCgYEAvtg7ByTmrwck3FKgYFAJFOFgX/NxEdVQddbIRuK15KBf6VHK+wxuN6hDnoJYc3IhySxjR4ipASnUt7232onEIIgBhSh1D5SLdYO6+Ju8AEP3fc3qbwvbownR4pp+RCxL3zx/hII6CpNNWj1L6vdYhRkb6g4d1/pvCJHfMv6aNcMCAwEAARYRaXNvbGFuZSBjaGFsbGVuZ2UwDQYJKoZIhvcNAQELBQADgYEAK/7maDTLoxz7QVpwCJUrI5cCPuLDr2uspVoQYk8n2mnp8i2QSju0//llSpbXstQfbVrpWGZiPdO3UlrIputfd/QQfImmj02RWoiAztBRGc/jo7oWghFM3cehPOz0lTrKMqbFcOyyKS4mjy4urvzx5dcdhZjhc85en0HFLMIodI0=";

/// `Certificate` reads an SPKAC as Node does: its challenge, its public key
/// (PEM), whether its signature holds (not once a byte of it changes), ''
/// and false for what does not decode, Node's error for what is not text
/// or bytes.
#[tokio::test]
async fn spkac_answers_as_in_node() {
    let script = r#"
      const out = [];
      const t = (f) => { try { out.push(f()); } catch (e) { out.push(`${e.code}: ${e.message}`); } };
      const C = crypto.Certificate;
      const forged = S.slice(0, -8) + 'AAAAAAA=';
      t(() => [C.verifySpkac(Buffer.from(S)), C.verifySpkac(Buffer.from(S + '\n')), C.verifySpkac(Buffer.from(forged)), C.verifySpkac(Buffer.from('abc'))].join());
      t(() => [C.exportChallenge(S).toString(), new C().exportChallenge(Buffer.from(S)).toString('hex'), JSON.stringify(C.exportChallenge('abc'))].join());
      t(() => [C.exportPublicKey(S).toString(), JSON.stringify(C.exportPublicKey('abc'))].join());
      t(() => C.verifySpkac(5));
      return out.join('\n');
    "#;
    let ours = answer(
        NodeCompat::V1,
        &format!("import crypto from 'node:crypto'; import {{ Buffer }} from 'node:buffer'; const S = '{SPKAC}';"),
        script,
    )
    .await;
    let node = node_prints(
        &[],
        &format!(
            "const crypto = require('crypto'); const S = '{SPKAC}'; console.log(JSON.stringify((() => {{ {script} }})()));"
        ),
    );
    let node: String = serde_json::from_str(&node).unwrap();
    assert!(
        ours.contains("isolane challenge") && ours.contains("BEGIN PUBLIC KEY"),
        "{ours}"
    );
    assert_eq!(ours, node);
}

/// Loops of raw RSA operations (privateEncrypt) and of SPKAC
/// verifications meet the CPU limit between calls; a neighbour on the same
/// thread answers before, during and after.
#[tokio::test]
async fn endless_raw_rsa_and_spkac_end_at_the_cpu_limit() {
    each_ends_at_the_cpu_limit(
        "raw-rsa",
        &format!("import {{ Buffer }} from 'node:buffer'; const S = '{SPKAC}';"),
        &[
            "const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }); for (;;) crypto.privateEncrypt(privateKey, Buffer.from('x'));",
            "for (;;) crypto.Certificate.verifySpkac(Buffer.from(S)) && crypto.Certificate.exportPublicKey(S);",
        ],
    )
    .await;
}
