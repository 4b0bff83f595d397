//! Encrypted PKCS#8 private keys against Node's answers
//! (`node_pkcs8_cases.mjs`, run in a Worker; what Node 20 answered for it,
//! and keys Node and the `openssl` command encrypted, are
//! `node_pkcs8_vectors.json`, written by `node_pkcs8_vectors.mjs`); an
//! attacker's key whose key derivation costs more than one call may is
//! refused at once, and a loop of keys at the bound meets the CPU limit while
//! a neighbour on the same thread answers.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;
use crate::node_crypto::{assert_answers_as_node, each_ends_at_the_cpu_limit, node_prints};

/// Node's keys and answers (see the module docs).
const VECTORS: &str = include_str!("node_pkcs8_vectors.json");

async fn run_pkcs8(body: &str) -> String {
    let cases = include_str!("node_pkcs8_cases.mjs").replace("export function", "function");
    let imports = format!(
        "import crypto from 'node:crypto'; import {{ Buffer }} from 'node:buffer';\nconst V = {VECTORS};\n{cases}"
    );
    answer(NodeCompat::V1, &imports, body).await
}

#[tokio::test]
async fn encrypted_keys_read_and_write_as_in_node() {
    let out = run_pkcs8("return JSON.stringify(pkcs8Cases(crypto, Buffer, V));").await;
    let ours: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let vectors: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
    assert_answers_as_node(&ours, &vectors["expected"]);
}

/// Keys whose key derivation costs more than one `pbkdf2Sync`/`scryptSync`
/// call may are refused before any work, saying why; a key without its
/// passphrase gets Node's error.
#[tokio::test]
async fn costly_or_locked_keys_are_refused_clearly() {
    let out = run_pkcs8(
        r#"
        const r = [];
        for (const name of ['hugePbkdf2', 'hugeScrypt']) {
          try { crypto.createPrivateKey({ key: V.keys[name], passphrase: 'correct horse' }); r.push('accepted'); } catch (e) { r.push(`${e.name}: ${e.message}`); }
        }
        try { crypto.createPrivateKey({ key: V.keys.pbes1, passphrase: 'correct horse' }); } catch (e) { r.push(`${e.name}: ${e.message}`); }
        try { crypto.createPrivateKey(V.keys.node); } catch (e) { r.push(`${e.code}: ${e.message}`); }
        try { crypto.createPrivateKey({ key: V.keys.node, passphrase: '' }); } catch (e) { r.push(e.code); }
        try { crypto.createPrivateKey({ key: V.keys.node, format: 'pem', passphrase: 'correct horse' }).export({ format: 'pem', type: 'sec1', cipher: 'aes-128-cbc', passphrase: 'x' }); } catch (e) { r.push(e.message); }
        return r.join(' | ');
        "#,
    )
    .await;
    assert_eq!(
        out,
        "NotSupportedError: Pbkdf2 failed: iteration counts above 100000 are not supported (requested 8388607) | \
         RangeError: scrypt: N × r × p above 1048576 is not supported | \
         DataError: Invalid or unsupported encrypted PKCS#8 key (PBES2 is supported): \
         malformed ASN.1 DER value for OBJECT IDENTIFIER at DER byte 30 | \
         ERR_MISSING_PASSPHRASE: Passphrase required for encrypted key | ERR_OSSL_BAD_DECRYPT | \
         Encrypting a sec1 key (legacy PEM encryption) is not supported; use type 'pkcs8'"
    );
}

/// A Worker reading keys at the cost bound (100 000 PBKDF2 iterations) in a
/// loop is stopped at its CPU limit; a benign Worker on the same thread
/// answers before, while the attack runs and after.
#[tokio::test]
async fn reading_costly_keys_without_end_ends_at_the_cpu_limit() {
    let vectors: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
    let key = serde_json::to_string(&vectors["keys"]["maxPbkdf2"]).unwrap();
    each_ends_at_the_cpu_limit(
        "pkcs8",
        &format!("const key = {key};"),
        &["for (;;) crypto.createPrivateKey({ key, passphrase: 'correct horse' });"],
    )
    .await;
}

/// Keys Isolane encrypts (each cipher, PEM and DER) open in Node with their
/// passphrase, as the same key.
#[tokio::test]
async fn our_encrypted_keys_open_in_node() {
    let out = run_pkcs8(
        r#"
        const key = crypto.createPrivateKey({ key: V.jwk, format: 'jwk' });
        const pem = ['aes-128-cbc', 'aes-192-cbc', 'aes-256-cbc'].map((cipher) => key.export({ format: 'pem', type: 'pkcs8', cipher, passphrase: 'from isolane' }));
        const der = key.export({ format: 'der', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: 'from isolane' }).toString('base64');
        return JSON.stringify({ pem, der });
        "#,
    )
    .await;
    let script = format!(
        "const c = require('crypto'); const V = {VECTORS}; const O = {out};
         const d = (k) => k.export({{ format: 'jwk' }}).d === V.jwk.d;
         const ok = O.pem.map((key) => d(c.createPrivateKey({{ key, passphrase: 'from isolane' }})));
         ok.push(d(c.createPrivateKey({{ key: Buffer.from(O.der, 'base64'), format: 'der', type: 'pkcs8', passphrase: 'from isolane' }})));
         console.log(ok.join(' '));"
    );
    assert_eq!(node_prints(&[], &script), "true true true true");
}
