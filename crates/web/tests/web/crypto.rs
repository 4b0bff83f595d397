//! Web Crypto (`crypto.subtle`) against real V8: published test vectors
//! (their source named beside each), round trips, JWK shapes, the error
//! cases the WPT WebCryptoAPI files check (our own tests, written from the
//! spec), `DigestStream`, and the CPU limit on the expensive operations with
//! a neighbour on the same thread checked before, during and after.

use std::sync::Arc;
use std::time::Duration;

use isolane_engine::{ExecuteError, Limits, PoolMode};

use crate::support::*;

/// Helpers every test worker starts with.
const PRELUDE: &str = r#"
const enc = (s) => new TextEncoder().encode(s);
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (h) => new Uint8Array(h.match(/../g).map((x) => parseInt(x, 16)));
const b64url = (u8) => btoa(String.fromCharCode(...u8)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const unb64url = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
const S = crypto.subtle;
// The name of what a promise rejects with ('resolved' if it does not).
const err = async (p) => { try { await p; return 'resolved'; } catch (e) { return e.name; } };
const serve = (checks) => ({ async fetch() {
  const out = {};
  for (const [name, f] of Object.entries(checks)) {
    try { out[name] = await f(); } catch (e) { out[name] = 'threw ' + e.name + ': ' + e.message; }
  }
  return new Response(JSON.stringify(out));
} });
"#;

fn generous() -> Limits {
    Limits {
        // Debug builds of the bignum code are slow; CPU is not what these test.
        cpu_ms: 120_000,
        wall_ms: 240_000,
        ..Limits::default()
    }
}

/// Runs `checks` (a JS object literal of async functions) and returns the
/// JSON object of their results.
async fn checks(id: &str, checks: &str) -> serde_json::Map<String, serde_json::Value> {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let script = format!("{PRELUDE}\nexport default serve({checks});");
    let worker = Arc::new(bundle_with(id, &script, generous(), &[]));
    let (status, body) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200, "{body}");
    match serde_json::from_str(&body).unwrap() {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn expect(
    results: &serde_json::Map<String, serde_json::Value>,
    name: &str,
    want: serde_json::Value,
) {
    assert_eq!(results.get(name), Some(&want), "{name}: {results:#?}");
}

#[tokio::test]
async fn published_vectors() {
    let r = checks(
        "t/crypto-vectors",
        r#"{
  // RFC 4231 §4.3 (test case 2): HMAC-SHA-256 and HMAC-SHA-512.
  async hmac256() {
    const key = await S.importKey('raw', enc('Jefe'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    const sig = await S.sign('HMAC', key, enc('what do ya want for nothing?'));
    const ok = await S.verify('HMAC', key, sig, enc('what do ya want for nothing?'));
    const bad = await S.verify('HMAC', key, sig, enc('what do ya want for nothing!'));
    return [hex(sig), ok, bad];
  },
  async hmac512() {
    const key = await S.importKey('raw', enc('Jefe'), { name: 'HMAC', hash: 'SHA-512' }, false, ['sign']);
    return hex(await S.sign('HMAC', key, enc('what do ya want for nothing?')));
  },
  // RFC 8032 §7.1 TEST 1 (empty message).
  async ed25519() {
    const d = unhex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
    const x = unhex('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    const priv = await S.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', d: b64url(d), x: b64url(x) }, 'Ed25519', true, ['sign']);
    const pub = await S.importKey('raw', x, 'Ed25519', true, ['verify']);
    const sig = await S.sign('Ed25519', priv, new Uint8Array());
    return [hex(sig), await S.verify('Ed25519', pub, sig, new Uint8Array()), await S.verify('Ed25519', pub, sig, enc('x'))];
  },
  // RFC 7748 §6.1: Alice and Bob.
  async x25519() {
    const a = { d: unhex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a'),
                x: unhex('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a') };
    const bobPub = unhex('de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f');
    const priv = await S.importKey('jwk', { kty: 'OKP', crv: 'X25519', d: b64url(a.d), x: b64url(a.x) }, 'X25519', false, ['deriveBits']);
    const pub = await S.importKey('raw', bobPub, 'X25519', true, []);
    return hex(await S.deriveBits({ name: 'X25519', public: pub }, priv, 256));
  },
  // RFC 6070: PBKDF2-HMAC-SHA1, c = 1, 2 and 4096.
  async pbkdf2() {
    const key = await S.importKey('raw', enc('password'), 'PBKDF2', false, ['deriveBits']);
    const out = [];
    for (const c of [1, 2, 4096]) {
      out.push(hex(await S.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt: enc('salt'), iterations: c }, key, 160)));
    }
    return out;
  },
  // RFC 5869 A.1 (test case 1): HKDF-SHA-256, L = 42.
  async hkdf() {
    const ikm = new Uint8Array(22).fill(0x0b);
    const key = await S.importKey('raw', ikm, 'HKDF', false, ['deriveBits']);
    return hex(await S.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: unhex('000102030405060708090a0b0c'),
      info: unhex('f0f1f2f3f4f5f6f7f8f9') }, key, 42 * 8));
  },
  // The GCM specification (McGrew & Viega), test case 2: zero key, IV and block.
  async aesGcm() {
    const key = await S.importKey('raw', new Uint8Array(16), 'AES-GCM', false, ['encrypt', 'decrypt']);
    const ct = await S.encrypt({ name: 'AES-GCM', iv: new Uint8Array(12) }, key, new Uint8Array(16));
    const pt = await S.decrypt({ name: 'AES-GCM', iv: new Uint8Array(12) }, key, ct);
    return [hex(ct), hex(pt)];
  },
  // WPT WebCryptoAPI/encrypt_decrypt/aes_gcm_vectors.js (made with Python's
  // cryptography): 128-bit key, 256-bit IV, 128-, 64- and 32-bit tags.
  async aesGcmLongIv() {
    const key = await S.importKey('raw', unhex('dec0d4fcbf3c4741c892dabd1cd4c04e'), 'AES-GCM', false, ['encrypt', 'decrypt']);
    const iv = unhex('3a92732aa6ea39bf3986e0c73fa92000202175385ef8adeac2c87335eb928dd4');
    const additionalData = enc('There are 7 further editorial notes in the document.');
    const text = 'This specification describes a JavaScript API for performing basic cryptographic operations in web applications, such as hashing, signature generation and verification, and encryption and decryption. Additionally, it describes an API for applications to generate and/or manage the keying material necessary to perform these operations. Uses for this API range from user or service authentication, document or code signing, and the confidentiality and integrity of communications.';
    const full = new Uint8Array(await S.encrypt({ name: 'AES-GCM', iv, additionalData }, key, enc(text)));
    const short = new Uint8Array(await S.encrypt({ name: 'AES-GCM', iv, additionalData, tagLength: 32 }, key, enc(text)));
    const noAd = new Uint8Array(await S.encrypt({ name: 'AES-GCM', iv, tagLength: 64 }, key, enc(text)));
    const back = new TextDecoder().decode(await S.decrypt({ name: 'AES-GCM', iv, additionalData, tagLength: 32 }, key, short));
    const bad = short.slice();
    bad[bad.length - 1] ^= 1;
    return [hex(full.slice(0, 16)), hex(full.slice(-16)), hex(short.slice(-4)), hex(noAd.slice(-8)), back === text,
            await err(S.decrypt({ name: 'AES-GCM', iv, additionalData, tagLength: 32 }, key, bad)),
            await err(S.encrypt({ name: 'AES-GCM', iv, tagLength: 72 }, key, enc(text)))];
  },
  // NIST SP 800-38A F.2.1 (CBC-AES128, block 1) and F.5.1 (CTR-AES128, block 1).
  async aesCbcCtr() {
    const k = unhex('2b7e151628aed2a6abf7158809cf4f3c');
    const p = unhex('6bc1bee22e409f96e93d7e117393172a');
    const cbc = await S.importKey('raw', k, 'AES-CBC', false, ['encrypt']);
    const ctr = await S.importKey('raw', k, 'AES-CTR', false, ['encrypt']);
    const c1 = await S.encrypt({ name: 'AES-CBC', iv: unhex('000102030405060708090a0b0c0d0e0f') }, cbc, p);
    const c2 = await S.encrypt({ name: 'AES-CTR', counter: unhex('f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff'), length: 64 }, ctr, p);
    return [hex(c1).slice(0, 32), hex(c1).length / 2, hex(c2)];
  },
  // RFC 3394 §4.1: wrap a 128-bit key with a 128-bit KEK.
  async aesKw() {
    const kek = await S.importKey('raw', unhex('000102030405060708090a0b0c0d0e0f'), 'AES-KW', false, ['wrapKey', 'unwrapKey']);
    const key = await S.importKey('raw', unhex('00112233445566778899aabbccddeeff'), 'AES-GCM', true, ['encrypt']);
    const wrapped = await S.wrapKey('raw', key, kek, 'AES-KW');
    const back = await S.unwrapKey('raw', wrapped, kek, 'AES-KW', 'AES-GCM', true, ['encrypt']);
    return [hex(wrapped), hex(await S.exportKey('raw', back))];
  },
  // RFC 6979 A.2.5: P-256, SHA-256, message "sample" (deterministic k).
  async ecdsa() {
    const jwk = { kty: 'EC', crv: 'P-256',
      d: b64url(unhex('c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721')),
      x: b64url(unhex('60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6')),
      y: b64url(unhex('7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299')) };
    const priv = await S.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
    const { d, ...pubJwk } = jwk;
    const pub = await S.importKey('jwk', pubJwk, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']);
    const sig = await S.sign({ name: 'ECDSA', hash: 'SHA-256' }, priv, enc('sample'));
    const rfc = unhex('efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716' +
                      'f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8');
    return [hex(sig), await S.verify({ name: 'ECDSA', hash: 'SHA-256' }, pub, rfc, enc('sample')),
            await S.verify({ name: 'ECDSA', hash: 'SHA-256' }, pub, rfc, enc('samplf'))];
  },
  // RFC 1321 A.5: MD5("abc"); FIPS 180-2: SHA-256("abc").
  async digests() {
    return [hex(await S.digest('MD5', enc('abc'))), hex(await S.digest('sha-256', enc('abc')))];
  },
  // The HS256 token of RFC 7515 A.1's shape, as jwt.io shows it (secret "your-256-bit-secret").
  async jwtHs256() {
    const token = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
    const [h, p, s] = token.split('.');
    const key = await S.importKey('raw', enc('your-256-bit-secret'), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    return [await S.verify('HMAC', key, unb64url(s), enc(h + '.' + p)), await S.verify('HMAC', key, unb64url(s), enc(h + '.x'))];
  },
}"#,
    )
    .await;
    use serde_json::json;
    expect(
        &r,
        "hmac256",
        json!([
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            true,
            false
        ]),
    );
    expect(
        &r,
        "hmac512",
        json!(
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        ),
    );
    expect(
        &r,
        "ed25519",
        json!([
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
            true,
            false
        ]),
    );
    expect(
        &r,
        "x25519",
        json!("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"),
    );
    expect(
        &r,
        "pbkdf2",
        json!([
            "0c60c80f961f0e71f3a9b524af6012062fe037a6",
            "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957",
            "4b007901b765489abead49d926f721d065a429c1"
        ]),
    );
    expect(
        &r,
        "hkdf",
        json!(
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
        ),
    );
    expect(
        &r,
        "aesGcm",
        json!([
            "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf",
            "00000000000000000000000000000000"
        ]),
    );
    expect(
        &r,
        "aesGcmLongIv",
        json!([
            "b4f128b7693493eee0afafeca8f4f179",
            "c2e2c6fdef1cc5f07bd8b097efc8b8b7",
            "c2e2c6fd",
            "de330b1724defaf8",
            true,
            "OperationError",
            "OperationError"
        ]),
    );
    expect(
        &r,
        "aesCbcCtr",
        json!([
            "7649abac8119b246cee98e9b12e9197d",
            32,
            "874d6191b620e3261bef6864990db6ce"
        ]),
    );
    expect(
        &r,
        "aesKw",
        json!([
            "1fa68b0a8112b447aef34bd8fb5a7b829d3e862371d2cfe5",
            "00112233445566778899aabbccddeeff"
        ]),
    );
    expect(
        &r,
        "ecdsa",
        json!([
            "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8",
            true,
            false
        ]),
    );
    expect(
        &r,
        "digests",
        json!([
            "900150983cd24fb0d6963f7d28e17f72",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        ]),
    );
    expect(&r, "jwtHs256", json!([true, false]));
}

#[tokio::test]
async fn round_trips_and_jwk_shapes() {
    let r = checks(
        "t/crypto-roundtrips",
        r#"{
  async hmacGenerated() {
    const key = await S.generateKey({ name: 'HMAC', hash: 'SHA-384' }, true, ['sign', 'verify']);
    const jwk = await S.exportKey('jwk', key);
    const back = await S.importKey('jwk', jwk, { name: 'HMAC', hash: 'SHA-384' }, true, ['verify']);
    const sig = await S.sign('HMAC', key, enc('m'));
    return [key.type, key.algorithm.length, key.algorithm.hash.name, jwk.kty, jwk.alg, jwk.ext, jwk.key_ops,
            unb64url(jwk.k).length, await S.verify('HMAC', back, sig, enc('m')), key instanceof CryptoKey,
            Object.prototype.toString.call(key)];
  },
  async ecdsaCurves() {
    const out = [];
    for (const [crv, hash, size] of [['P-256', 'SHA-256', 64], ['P-384', 'SHA-384', 96], ['P-521', 'SHA-512', 132]]) {
      const pair = await S.generateKey({ name: 'ECDSA', namedCurve: crv }, true, ['sign', 'verify']);
      const sig = await S.sign({ name: 'ECDSA', hash }, pair.privateKey, enc('m'));
      const spki = await S.exportKey('spki', pair.publicKey);
      const pub = await S.importKey('spki', spki, { name: 'ECDSA', namedCurve: crv }, true, ['verify']);
      const pkcs8 = await S.exportKey('pkcs8', pair.privateKey);
      const priv = await S.importKey('pkcs8', pkcs8, { name: 'ECDSA', namedCurve: crv }, true, ['sign']);
      const jwk = await S.exportKey('jwk', priv);
      const raw = new Uint8Array(await S.exportKey('raw', pub));
      out.push([sig.byteLength === size, await S.verify({ name: 'ECDSA', hash }, pub, sig, enc('m')),
                await S.verify({ name: 'ECDSA', hash }, pub, await S.sign({ name: 'ECDSA', hash }, priv, enc('m')), enc('m')),
                jwk.kty, jwk.crv, typeof jwk.d, raw[0], pair.publicKey.algorithm.namedCurve, pair.privateKey.usages]);
    }
    // Hashes shorter than half the field: SHA-1 on P-384, SHA-256 on P-521.
    for (const [crv, hash] of [['P-384', 'SHA-1'], ['P-521', 'SHA-256']]) {
      const pair = await S.generateKey({ name: 'ECDSA', namedCurve: crv }, false, ['sign', 'verify']);
      const sig = await S.sign({ name: 'ECDSA', hash }, pair.privateKey, enc('m'));
      out.push([crv, hash, await S.verify({ name: 'ECDSA', hash }, pair.publicKey, sig, enc('m')),
                await S.verify({ name: 'ECDSA', hash }, pair.publicKey, sig, enc('n'))]);
    }
    return out;
  },
  // WPT WebCryptoAPI/import_export/ec_importKey.js, P-256: pkcs8, spki and
  // jwk export give back the very bytes and members imported.
  async ecExportIsByteExact() {
    const spki = new Uint8Array([48, 89, 48, 19, 6, 7, 42, 134, 72, 206, 61, 2, 1, 6, 8, 42, 134, 72, 206, 61, 3, 1, 7, 3, 66, 0, 4, 210, 16, 176, 166, 249, 217, 240, 18, 134, 128, 88, 180, 63, 164, 244, 113, 1, 133, 67, 187, 160, 12, 146, 80, 223, 146, 87, 194, 172, 174, 93, 209, 206, 3, 117, 82, 212, 129, 69, 12, 227, 155, 77, 16, 149, 112, 27, 23, 91, 250, 179, 75, 142, 108, 9, 158, 24, 241, 193, 152, 53, 131, 97, 232]);
    const pkcs8 = new Uint8Array([48, 129, 135, 2, 1, 0, 48, 19, 6, 7, 42, 134, 72, 206, 61, 2, 1, 6, 8, 42, 134, 72, 206, 61, 3, 1, 7, 4, 109, 48, 107, 2, 1, 1, 4, 32, 19, 211, 58, 45, 90, 191, 156, 249, 235, 178, 31, 248, 96, 212, 174, 254, 110, 86, 231, 119, 144, 244, 222, 233, 180, 8, 132, 235, 211, 53, 68, 234, 161, 68, 3, 66, 0, 4, 210, 16, 176, 166, 249, 217, 240, 18, 134, 128, 88, 180, 63, 164, 244, 113, 1, 133, 67, 187, 160, 12, 146, 80, 223, 146, 87, 194, 172, 174, 93, 209, 206, 3, 117, 82, 212, 129, 69, 12, 227, 155, 77, 16, 149, 112, 27, 23, 91, 250, 179, 75, 142, 108, 9, 158, 24, 241, 193, 152, 53, 131, 97, 232]);
    const jwk = { kty: 'EC', crv: 'P-256', x: '0hCwpvnZ8BKGgFi0P6T0cQGFQ7ugDJJQ35JXwqyuXdE',
      y: 'zgN1UtSBRQzjm00QlXAbF1v6s0uObAmeGPHBmDWDYeg', d: 'E9M6LVq_nPnrsh_4YNSu_m5W53eQ9N7ptAiE69M1ROo' };
    const alg = { name: 'ECDH', namedCurve: 'P-256' };
    const pub = await S.importKey('spki', spki, alg, true, []);
    const priv = await S.importKey('pkcs8', pkcs8, alg, true, ['deriveBits']);
    const fromJwk = await S.importKey('jwk', jwk, alg, true, ['deriveBits']);
    const out = await S.exportKey('jwk', fromJwk);
    return [hex(await S.exportKey('spki', pub)) === hex(spki), hex(await S.exportKey('pkcs8', priv)) === hex(pkcs8),
            hex(await S.exportKey('pkcs8', fromJwk)) === hex(pkcs8), out.x === jwk.x && out.y === jwk.y && out.d === jwk.d,
            Object.keys(out).sort().join(',')];
  },
  async ed25519Formats() {
    const pair = await S.generateKey('Ed25519', true, ['sign', 'verify']);
    const pkcs8 = new Uint8Array(await S.exportKey('pkcs8', pair.privateKey));
    const spki = new Uint8Array(await S.exportKey('spki', pair.publicKey));
    const priv = await S.importKey('pkcs8', pkcs8, 'Ed25519', false, ['sign']);
    const sig = await S.sign('Ed25519', priv, enc('m'));
    return [pkcs8.length, spki.length, await S.verify('Ed25519', pair.publicKey, sig, enc('m')),
            (await S.exportKey('jwk', pair.privateKey)).crv];
  },
  async ecdhAndX25519() {
    const a = await S.generateKey({ name: 'ECDH', namedCurve: 'P-384' }, false, ['deriveBits', 'deriveKey']);
    const b = await S.generateKey({ name: 'ECDH', namedCurve: 'P-384' }, false, ['deriveBits']);
    const ab = hex(await S.deriveBits({ name: 'ECDH', public: b.publicKey }, a.privateKey, 384));
    const ba = hex(await S.deriveBits({ name: 'ECDH', public: a.publicKey }, b.privateKey, 384));
    const aes = await S.deriveKey({ name: 'ECDH', public: b.publicKey }, a.privateKey, { name: 'AES-GCM', length: 256 }, true, ['encrypt']);
    const x = await S.generateKey('X25519', false, ['deriveBits']);
    const y = await S.generateKey('X25519', false, ['deriveBits']);
    const xy = hex(await S.deriveBits({ name: 'X25519', public: y.publicKey }, x.privateKey, null));
    const yx = hex(await S.deriveBits({ name: 'X25519', public: x.publicKey }, y.privateKey, null));
    return [ab === ba, ab.length, aes.algorithm.length, xy === yx, xy.length];
  },
  async aesModes() {
    const out = [];
    for (const [name, params] of [['AES-GCM', { iv: new Uint8Array(12), additionalData: enc('aad'), tagLength: 96 }],
                                  ['AES-CBC', { iv: new Uint8Array(16) }],
                                  ['AES-CTR', { counter: new Uint8Array(16).fill(255), length: 8 }]]) {
      const key = await S.generateKey({ name, length: 192 }, true, ['encrypt', 'decrypt']);
      const data = enc('x'.repeat(100));
      const ct = await S.encrypt({ name, ...params }, key, data);
      const pt = new TextDecoder().decode(await S.decrypt({ name, ...params }, key, ct));
      out.push([pt === 'x'.repeat(100), ct.byteLength, (await S.exportKey('jwk', key)).alg]);
    }
    return out;
  },
  async pbkdf2DeriveKey() {
    const base = await S.importKey('raw', enc('pw'), 'PBKDF2', false, ['deriveKey']);
    const key = await S.deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt: enc('s'), iterations: 1000 }, base,
      { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);
    return [key.algorithm.name, key.algorithm.length, (await S.exportKey('raw', key)).byteLength];
  },
  async rsa() {
    const e = new Uint8Array([1, 0, 1]);
    const out = [];
    for (const [name, params, usages] of [['RSASSA-PKCS1-v1_5', {}, ['sign', 'verify']],
                                          ['RSA-PSS', { saltLength: 32 }, ['sign', 'verify']]]) {
      const pair = await S.generateKey({ name, modulusLength: 1024, publicExponent: e, hash: 'SHA-256' }, true, usages);
      const sig = await S.sign({ name, ...params }, pair.privateKey, enc('m'));
      const jwk = await S.exportKey('jwk', pair.privateKey);
      const priv = await S.importKey('jwk', jwk, { name, hash: 'SHA-256' }, false, ['sign']);
      const pub = await S.importKey('spki', await S.exportKey('spki', pair.publicKey), { name, hash: 'SHA-256' }, true, ['verify']);
      out.push([await S.verify({ name, ...params }, pub, sig, enc('m')),
                await S.verify({ name, ...params }, pub, await S.sign({ name, ...params }, priv, enc('m')), enc('m')),
                await S.verify({ name, ...params }, pub, sig, enc('n')),
                jwk.alg, Object.keys(jwk).sort().join(','), pair.publicKey.algorithm.modulusLength,
                hex(pair.publicKey.algorithm.publicExponent)]);
    }
    const oaep = await S.generateKey({ name: 'RSA-OAEP', modulusLength: 1024, publicExponent: e, hash: 'SHA-1' }, true,
      ['encrypt', 'decrypt', 'wrapKey', 'unwrapKey']);
    const ct = await S.encrypt({ name: 'RSA-OAEP', label: enc('l') }, oaep.publicKey, enc('secret'));
    const pt = new TextDecoder().decode(await S.decrypt({ name: 'RSA-OAEP', label: enc('l') }, oaep.privateKey, ct));
    const hmac = await S.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);
    const wrapped = await S.wrapKey('raw', hmac, oaep.publicKey, 'RSA-OAEP');
    const back = await S.unwrapKey('raw', wrapped, oaep.privateKey, 'RSA-OAEP', { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);
    const kek = await S.generateKey({ name: 'AES-GCM', length: 256 }, false, ['wrapKey', 'unwrapKey']);
    const gcm = { name: 'AES-GCM', iv: new Uint8Array(12) };
    const jwkBack = await S.unwrapKey('jwk', await S.wrapKey('jwk', oaep.privateKey, kek, gcm), kek, gcm,
      { name: 'RSA-OAEP', hash: 'SHA-1' }, false, ['decrypt']);
    out.push([pt, ct.byteLength, hex(await S.exportKey('raw', back)) === hex(await S.exportKey('raw', hmac)),
              new TextDecoder().decode(await S.decrypt({ name: 'RSA-OAEP', label: enc('l') }, jwkBack, ct)),
              (await S.exportKey('jwk', oaep.publicKey)).alg]);
    return out;
  },
  async digestStream() {
    const stream = new crypto.DigestStream('SHA-256');
    const writer = stream.getWriter();
    await writer.write(enc('a'));
    await writer.write('bc');
    await writer.close();
    return [hex(await stream.digest), stream instanceof WritableStream];
  },
  async timingSafeEqual() {
    return [S.timingSafeEqual(enc('abc'), enc('abc')), S.timingSafeEqual(enc('abc'), enc('abd')),
            (() => { try { S.timingSafeEqual(enc('a'), enc('ab')); return 'no'; } catch (e) { return e.name; } })()];
  },
}"#,
    )
    .await;
    use serde_json::json;
    expect(
        &r,
        "hmacGenerated",
        json!([
            "secret",
            1024,
            "SHA-384",
            "oct",
            "HS384",
            true,
            ["sign", "verify"],
            128,
            true,
            true,
            "[object CryptoKey]"
        ]),
    );
    let curves = json!([
        [
            true,
            true,
            true,
            "EC",
            "P-256",
            "string",
            4,
            "P-256",
            ["sign"]
        ],
        [
            true,
            true,
            true,
            "EC",
            "P-384",
            "string",
            4,
            "P-384",
            ["sign"]
        ],
        [
            true,
            true,
            true,
            "EC",
            "P-521",
            "string",
            4,
            "P-521",
            ["sign"]
        ],
        ["P-384", "SHA-1", true, false],
        ["P-521", "SHA-256", true, false]
    ]);
    expect(&r, "ecdsaCurves", curves);
    expect(
        &r,
        "ecExportIsByteExact",
        json!([true, true, true, true, "crv,d,ext,key_ops,kty,x,y"]),
    );
    expect(&r, "ed25519Formats", json!([48, 44, true, "Ed25519"]));
    expect(&r, "ecdhAndX25519", json!([true, 96, 256, true, 64]));
    expect(
        &r,
        "aesModes",
        json!([
            [true, 112, "A192GCM"],
            [true, 112, "A192CBC"],
            [true, 100, "A192CTR"]
        ]),
    );
    expect(&r, "pbkdf2DeriveKey", json!(["HMAC", 512, 64]));
    let jwk_members = "alg,d,dp,dq,e,ext,key_ops,kty,n,p,q,qi";
    expect(
        &r,
        "rsa",
        json!([
            [true, true, false, "RS256", jwk_members, 1024, "010001"],
            [true, true, false, "PS256", jwk_members, 1024, "010001"],
            ["secret", 128, true, "secret", "RSA-OAEP"]
        ]),
    );
    expect(
        &r,
        "digestStream",
        json!([
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            true
        ]),
    );
    expect(&r, "timingSafeEqual", json!([true, false, "RangeError"]));
}

/// The error cases of the WPT WebCryptoAPI files (failures.js, bad
/// parameters, usages), written as our own checks of the spec's names.
#[tokio::test]
async fn errors_are_named_as_the_spec_says() {
    let r = checks(
        "t/crypto-errors",
        r#"{
  async names() {
    const hmac = await S.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    const aes = await S.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt', 'decrypt']);
    const ec = await S.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits']);
    const ec384 = await S.generateKey({ name: 'ECDH', namedCurve: 'P-384' }, false, ['deriveBits']);
    const pbkdf2 = await S.importKey('raw', enc('pw'), 'PBKDF2', false, ['deriveBits']);
    const ct = new Uint8Array(await S.encrypt({ name: 'AES-GCM', iv: new Uint8Array(12) }, aes, enc('x')));
    ct[0] ^= 1;
    return {
      unknownDigest: await err(S.digest('SHA-0', enc('x'))),
      unknownAlgorithm: await err(S.generateKey({ name: 'NOPE' }, true, ['sign'])),
      missingHash: await err(S.generateKey({ name: 'HMAC' }, true, ['sign'])),
      badUsage: await err(S.importKey('raw', enc('k'), { name: 'HMAC', hash: 'SHA-256' }, true, ['encrypt'])),
      badUsageString: await err(S.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['fly'])),
      emptyUsages: await err(S.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, [])),
      aesLength: await err(S.generateKey({ name: 'AES-CBC', length: 100 }, true, ['encrypt'])),
      aesRawLength: await err(S.importKey('raw', new Uint8Array(20), 'AES-GCM', true, ['encrypt'])),
      wrongUsage: await err(S.sign('HMAC', hmac, enc('x'))),
      wrongAlgorithm: await err(S.sign({ name: 'ECDSA', hash: 'SHA-256' }, hmac, enc('x'))),
      notExtractable: await err(S.exportKey('raw', hmac)),
      badTag: await err(S.decrypt({ name: 'AES-GCM', iv: new Uint8Array(12) }, aes, ct)),
      badCbcIv: await err(S.importKey('raw', new Uint8Array(16), 'AES-CBC', false, ['encrypt']).then((k) => S.encrypt({ name: 'AES-CBC', iv: new Uint8Array(8) }, k, enc('x')))),
      jwkKty: await err(S.importKey('jwk', { kty: 'EC', k: 'AAAA' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign'])),
      jwkExt: await err(S.importKey('jwk', { kty: 'oct', k: 'AAAA', ext: false }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign'])),
      jwkAlg: await err(S.importKey('jwk', { kty: 'oct', k: 'AAAA', alg: 'HS512' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign'])),
      jwkAlgCase: await err(S.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: b64url(new Uint8Array(32).fill(1)), alg: 'ed25519' }, 'Ed25519', true, ['verify'])),
      jwkAlgEcdhIgnored: await err(S.importKey('jwk', { kty: 'EC', crv: 'P-256', alg: 'ECDH', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' }, { name: 'ECDH', namedCurve: 'P-256' }, true, [])),
      jwkMismatch: await err(S.importKey('jwk', { kty: 'EC', crv: 'P-256', d: 'jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a1' }, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign'])),
      jwkMissingY: await err(S.importKey('jwk', { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU' }, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify'])),
      publicWithUsage: await err(S.importKey('raw', unhex('de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f'), 'X25519', true, ['deriveBits'])),
      privateNoUsages: await err(S.generateKey('Ed25519', true, ['verify'])),
      badSpki: await err(S.importKey('spki', new Uint8Array([48, 3, 1, 2, 3]), { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify'])),
      badCurve: await err(S.generateKey({ name: 'ECDSA', namedCurve: 'P-999' }, true, ['sign'])),
      rawRsa: await err(S.importKey('raw', new Uint8Array(16), { name: 'RSA-PSS', hash: 'SHA-256' }, true, ['verify'])),
      pbkdf2Extractable: await err(S.importKey('raw', enc('pw'), 'PBKDF2', true, ['deriveBits'])),
      pbkdf2TooMany: await err(S.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: enc('s'), iterations: 100001 }, pbkdf2, 256)),
      pbkdf2TooLong: await err(S.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: enc('s'), iterations: 100000 }, pbkdf2, 8 * 1024 * 8)),
      hkdfTooLong: await err(S.importKey('raw', enc('k'), 'HKDF', false, ['deriveBits']).then((k) => S.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: enc('s'), info: enc('i') }, k, 0xfffffff8))),
      pbkdf2ZeroLength: await err(S.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: enc('s'), iterations: 1 }, pbkdf2, 0)),
      // WPT derived_bits_length_testcases.js: HKDF, ECDH and X25519 give empty bits for length 0.
      zeroLengths: await Promise.all([
        S.importKey('raw', enc('k'), 'HKDF', false, ['deriveBits']).then((k) => S.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: enc('s'), info: enc('i') }, k, 0)),
        S.deriveBits({ name: 'ECDH', public: ec.publicKey }, ec.privateKey, 0),
      ]).then((all) => all.map((b) => b.byteLength).join(',')),
      pbkdf2Zero: await err(S.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: enc('s'), iterations: 0 }, pbkdf2, 256)),
      pbkdf2NoLength: await err(S.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: enc('s'), iterations: 1 }, pbkdf2, null)),
      ecdhOtherCurve: await err(S.deriveBits({ name: 'ECDH', public: ec384.publicKey }, ec.privateKey, 256)),
      ecdhTooLong: await err(S.deriveBits({ name: 'ECDH', public: ec.publicKey }, ec.privateKey, 512)),
      rsaExponent: await err(S.generateKey({ name: 'RSA-OAEP', modulusLength: 1024, publicExponent: new Uint8Array([5]), hash: 'SHA-256' }, true, ['encrypt'])),
      rsaModulus: await err(S.generateKey({ name: 'RSA-OAEP', modulusLength: 512, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['encrypt'])),
      // As workerd: only multiples of 128 bits.
      rsaModulusNot128: await err(S.generateKey({ name: 'RSA-OAEP', modulusLength: 2056, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['encrypt'])),
      notAKey: await err(S.sign('HMAC', { type: 'secret' }, enc('x'))),
      newCryptoKey: (() => { try { new CryptoKey(); return 'no'; } catch (e) { return e.name; } })(),
      digestStreamName: (() => { try { new crypto.DigestStream('SHA-3'); return 'no'; } catch (e) { return e.name; } })(),
    };
  },
  // WPT generateKey/failures.js: a bad algorithm property rejects before the
  // next microtask, bad usages only in the generation steps after it.
  async ordering() {
    const order = [];
    const a = S.generateKey({ name: 'AES-GCM', length: 100 }, true, ['encrypt']).catch((e) => order.push('property ' + e.name));
    const b = S.generateKey({ name: 'AES-GCM', length: 128 }, true, ['sign']).catch((e) => order.push('usage ' + e.name));
    const c = S.generateKey({ name: 'ECDSA', namedCurve: 'P-512' }, true, ['sign']).catch((e) => order.push('curve ' + e.name));
    // Every other result comes "in parallel" too: never before the next microtask.
    const d = S.importKey('raw', enc('k'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']).then(() => order.push('import'));
    Promise.resolve().then(() => order.push('tick'));
    await Promise.all([a, b, c, d]);
    return order;
  },
}"#,
    )
    .await;
    expect(
        &r,
        "ordering",
        serde_json::json!([
            "property OperationError",
            "curve NotSupportedError",
            "tick",
            "usage SyntaxError",
            "import"
        ]),
    );
    let names = r.get("names").unwrap();
    let want = serde_json::json!({
        "unknownDigest": "NotSupportedError",
        "unknownAlgorithm": "NotSupportedError",
        "missingHash": "TypeError",
        "badUsage": "SyntaxError",
        "badUsageString": "TypeError",
        "emptyUsages": "SyntaxError",
        "aesLength": "OperationError",
        "aesRawLength": "DataError",
        "wrongUsage": "InvalidAccessError",
        "wrongAlgorithm": "InvalidAccessError",
        "notExtractable": "InvalidAccessError",
        "badTag": "OperationError",
        "badCbcIv": "OperationError",
        "jwkKty": "DataError",
        "jwkExt": "DataError",
        "jwkAlg": "DataError",
        "jwkAlgCase": "DataError",
        "jwkAlgEcdhIgnored": "resolved",
        "jwkMismatch": "DataError",
        "jwkMissingY": "DataError",
        "publicWithUsage": "SyntaxError",
        "privateNoUsages": "SyntaxError",
        "badSpki": "DataError",
        "badCurve": "NotSupportedError",
        "rawRsa": "NotSupportedError",
        "pbkdf2Extractable": "SyntaxError",
        "pbkdf2TooMany": "NotSupportedError",
        "pbkdf2TooLong": "NotSupportedError",
        "hkdfTooLong": "OperationError",
        "pbkdf2ZeroLength": "OperationError",
        "zeroLengths": "0,0",
        "pbkdf2Zero": "OperationError",
        "pbkdf2NoLength": "OperationError",
        "ecdhOtherCurve": "InvalidAccessError",
        "ecdhTooLong": "OperationError",
        "rsaExponent": "OperationError",
        "rsaModulus": "OperationError",
        "rsaModulusNot128": "OperationError",
        "notAKey": "TypeError",
        "newCryptoKey": "TypeError",
        "digestStreamName": "NotSupportedError",
    });
    assert_eq!(names, &want, "{names:#?}");
}

/// Keys live in each isolate's own table: two workers on one thread each use
/// their own keys, and an object that merely looks like a CryptoKey (no
/// handle inside) is refused with a TypeError instead of being looked up.
#[tokio::test]
async fn keys_do_not_cross_isolates() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let script = format!(
        "{PRELUDE}
        let kept;
        export default {{ async fetch(request) {{
          if (!kept) kept = await S.generateKey({{ name: 'HMAC', hash: 'SHA-256' }}, false, ['sign']);
          // A forged CryptoKey-like object is refused, not looked up.
          const forged = Object.create(CryptoKey.prototype);
          return new Response(JSON.stringify([await err(S.sign('HMAC', forged, enc('x'))),
            hex(await S.sign('HMAC', kept, enc('x'))).length]));
        }} }};"
    );
    let a = Arc::new(bundle_with("t/keys-a", &script, generous(), &[]));
    let b = Arc::new(bundle_with("t/keys-b", &script, generous(), &[]));
    for worker in [&a, &b, &a] {
        assert_eq!(
            run(&engine, 0, worker, "/").await,
            (200, "[\"TypeError\",64]".to_owned())
        );
    }
}

/// Expensive operations run off the isolate's thread and are charged to the
/// request: a worker generating RSA-2048 keys (or running PBKDF2 at the
/// iteration cap) in a loop ends at its CPU limit, and a benign worker on
/// the same thread answers before, during and after.
#[tokio::test]
async fn expensive_operations_are_cut_at_the_cpu_limit_without_stalling_the_thread() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let hostile = |id: &str, call: &str| {
        let script = format!(
            "export default {{ async fetch() {{ const S = crypto.subtle;
              const pw = await S.importKey('raw', new Uint8Array(8), 'PBKDF2', false, ['deriveBits']);
              for (;;) {{ await {call}; }} }} }};"
        );
        Arc::new(bundle_with(
            id,
            &script,
            Limits {
                cpu_ms: 50,
                wall_ms: 600_000,
                ..Limits::default()
            },
            &[],
        ))
    };
    let attacks = [
        hostile(
            "t/rsa-loop",
            "S.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign'])",
        ),
        hostile(
            "t/pbkdf2-loop",
            "S.deriveBits({ name: 'PBKDF2', hash: 'SHA-512', salt: new Uint8Array(16), iterations: 100000 }, pw, 512)",
        ),
    ];
    for attack in attacks {
        assert_eq!(
            run(&engine, 0, &neighbour, "/").await,
            (200, "hello".to_owned())
        );
        let task = tokio::spawn({
            let engine = engine.clone();
            async move { engine.execute(0, attack, get("/")).await.map(|_| ()) }
        });
        // During: the neighbour answers while the attack is still running.
        let mut answered_during = 0;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
        while !task.is_finished() {
            assert_eq!(
                run(&engine, 0, &neighbour, "/").await,
                (200, "hello".to_owned())
            );
            if !task.is_finished() {
                answered_during += 1;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the attack never ended"
            );
        }
        let error = task.await.unwrap().unwrap_err();
        assert!(
            matches!(error, ExecuteError::CpuLimit { limit_ms: 50 }),
            "{error:?}"
        );
        assert!(
            answered_during > 0,
            "the neighbour never answered during the attack"
        );
        assert_eq!(
            run(&engine, 0, &neighbour, "/").await,
            (200, "hello".to_owned())
        );
    }
    assert!(
        recorder
            .outcomes
            .lock()
            .unwrap()
            .iter()
            .filter(|o| **o == isolane_engine::Outcome::CpuLimit)
            .count()
            >= 2
    );
}

/// JWS/JWT tokens and keys published in RFC 7515 appendix A: A.2 (RS256,
/// deterministic, so signing with the private key must give the same
/// signature), A.3 (ES256) and A.4 (ES512, P-521 with SHA-512).
#[tokio::test]
async fn rfc_7515_tokens_verify() {
    let r = checks(
        "t/crypto-jws",
        r#"{
  async rs256() {
    const jwk = { kty: 'RSA',
      n: 'ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ',
      e: 'AQAB',
      d: 'Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97IjlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-pWJ1O0BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2QvXt4ehNYTCBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLhBOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuOopznQ',
      p: '4BzEEOtIpmVdVEZNCqS7baC4crd0pqnRH_5IB3jw3bcxGn6QLvnEtfdUdiYrqBdss1l58BQ3KhooKeQTa9AB0Hw_Py5PJdTJNPY8cQn7ouZ2KKDcmnPGBY5t7yLc1QlQ5xHdwW1VhvKn-nXqhJTBgIPgtldC-KDV5z-y2XDwGUc',
      q: 'uQPEfgmVtjL0Uyyx88GZFF1fOunH3-7cepKmtH4pxhtCoHqpWmT8YAmZxaewHgHAjLYsp1ZSe7zFYHj7C6ul7TjeLQeZD_YwD66t62wDmpe_HlB-TnBA-njbglfIsRLtXlnDzQkv5dTltRJ11BKBBypeeF6689rjcJIDEz9RWdc',
      dp: 'BwKfV3Akq5_MFZDFZCnW-wzl-CCo83WoZvnLQwCTeDv8uzluRSnm71I3QCLdhrqE2e9YkxvuxdBfpT_PI7Yz-FOKnu1R6HsJeDCjn12Sk3vmAktV2zb34MCdy7cpdTh_YVr7tss2u6vneTwrA86rZtu5Mbr1C1XsmvkxHQAdYo0',
      dq: 'h_96-mK1R_7glhsum81dZxjTnYynPbZpHziZjeeHcXYsXaaMwkOlODsWa7I9xXDoRwbKgB719rrmI2oKr6N3Do9U0ajaHF-NKJnwgjMd2w9cjz3_-kyNlxAr2v4IKhGNpmM5iIgOS1VZnOZ68m6_pbLBSp3nssTdlqvd0tIiTHU',
      qi: 'IYd7DHOhrWvxkwPQsRM2tOgrjbcrfvtQJipd-DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd_QJQ3ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW0ITrJReOgo1cq9SbsxYawBgfp_gh6A5603k2-ZQwVK0JKSHuLFkuQ3U' };
    const token = 'eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw';
    const [h, p, s] = token.split('.');
    const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    const priv = await S.importKey('jwk', jwk, alg, true, ['sign']);
    const pub = await S.importKey('jwk', { kty: 'RSA', n: jwk.n, e: jwk.e }, alg, true, ['verify']);
    const sig = await S.sign('RSASSA-PKCS1-v1_5', priv, enc(h + '.' + p));
    const exported = await S.exportKey('jwk', priv);
    const same = ['n', 'e', 'd', 'p', 'q', 'dp', 'dq', 'qi'].filter((m) => exported[m] !== jwk[m]);
    return [await S.verify('RSASSA-PKCS1-v1_5', pub, unb64url(s), enc(h + '.' + p)),
            await S.verify('RSASSA-PKCS1-v1_5', pub, unb64url(s), enc(h + '.' + p + 'x')),
            b64url(new Uint8Array(sig)) === s, same, pub.algorithm.modulusLength];
  },
  async es256() {
    const jwk = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
      y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' };
    const token = 'eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q';
    const [h, p, s] = token.split('.');
    const alg = { name: 'ECDSA', hash: 'SHA-256' };
    const pub = await S.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
    return [await S.verify(alg, pub, unb64url(s), enc(h + '.' + p)), await S.verify(alg, pub, unb64url(s), enc(h + '.' + p + 'x'))];
  },
  async es512() {
    const jwk = { kty: 'EC', crv: 'P-521',
      x: 'AekpBQ8ST8a8VcfVOTNl353vSrDCLLJXmPk06wTjxrrjcBpXp5EOnYG_NjFZ6OvLFV1jSfS9tsz4qUxcWceqwQGk',
      y: 'ADSmRA43Z1DSNx_RvcLI87cdL07l6jQyyBXMoxVg_l2Th-x3S1WDhjDly79ajL4Kkd0AZMaZmh9ubmf63e3kyMj2' };
    const token = 'eyJhbGciOiJFUzUxMiJ9.UGF5bG9hZA.AdwMgeerwtHoh-l192l60hp9wAHZFVJbLfD_UxMi70cwnZOYaRI1bKPWROc-mZZqwqT2SI-KGDKB34XO0aw_7XdtAG8GaSwFKdCAPZgoXD2YBJZCPEX3xKpRwcdOO8KpEHwJjyqOgzDO7iKvU8vcnwNrmxYbSW9ERBXukOXolLzeO_Jn';
    const [h, p, s] = token.split('.');
    const alg = { name: 'ECDSA', hash: 'SHA-512' };
    const pub = await S.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-521' }, false, ['verify']);
    return [await S.verify(alg, pub, unb64url(s), enc(h + '.' + p)), await S.verify(alg, pub, unb64url(s), enc(h + '.x'))];
  },
}"#,
    )
    .await;
    use serde_json::json;
    expect(&r, "rs256", json!([true, false, true, [], 2048]));
    expect(&r, "es256", json!([true, false]));
    expect(&r, "es512", json!([true, false]));
}

/// A key whose CryptoKey was garbage collected leaves the isolate's key
/// table (and the memory budget): 200 000 short-lived keys, each charged
/// about 300 bytes, fit in a 32 MiB budget only if they are freed.
#[tokio::test]
async fn collected_keys_are_freed() {
    // 200 000 imports take 3–5 s of CPU in a debug build: past the engine's
    // default 5 s cap on a busy machine. Memory is what this tests.
    let (engine, _) = uncapped_engine();
    let script = "export default { async fetch() {
        const raw = new Uint8Array(32);
        for (let i = 0; i < 200000; i++) {
          await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
        }
        return new Response('done');
      } };";
    let worker = Arc::new(bundle_with(
        "t/key-churn",
        script,
        Limits {
            memory_mib: 32,
            ..generous()
        },
        &[],
    ));
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "done".to_owned())
    );
}

/// A job whose request ended before it (the worker answered without
/// awaiting it) runs to its end and then frees its isolate's slot: later
/// requests of the same isolate still get their own jobs done.
#[tokio::test]
async fn abandoned_jobs_free_their_slot() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let script = "const S = crypto.subtle;
        export default { async fetch(request) {
          const pw = await S.importKey('raw', new TextEncoder().encode('password'), 'PBKDF2', false, ['deriveBits']);
          const salt = new TextEncoder().encode('salt');
          if (new URL(request.url).pathname === '/fire') {
            S.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations: 100000 }, pw, 256);
            return new Response('fired');
          }
          const bits = await S.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt, iterations: 2 }, pw, 160);
          return new Response([...new Uint8Array(bits)].map((b) => b.toString(16).padStart(2, '0')).join(''));
        } };";
    let worker = Arc::new(bundle_with("t/abandon", script, generous(), &[]));
    for _ in 0..4 {
        assert_eq!(
            run(&engine, 0, &worker, "/fire").await,
            (200, "fired".to_owned())
        );
    }
    // RFC 6070, c = 2.
    assert_eq!(
        run(&engine, 0, &worker, "/use").await,
        (200, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957".to_owned())
    );
}
