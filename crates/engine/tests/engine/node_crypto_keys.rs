//! `node:crypto`'s keys: KeyObjects read from what Node wrote (PEM, DER,
//! JWK; `node_keys_vectors.json`, made by Node 20's `generateKeyPairSync`
//! and `sign`), signatures Node made verified here and deterministic ones
//! made here equal to Node's, random ones (ECDSA, RSA-PSS) verified by
//! `node` itself; and a hostile Worker generating RSA keys without end meets
//! the CPU limit while a neighbour on the same thread answers.

use std::sync::Arc;

use isolane_engine::{ExecuteError, Limits, NodeCompat, PoolMode};

use crate::node_buffer::{answer, node_worker};
use crate::node_crypto::{attack_beside, node_prints};
use crate::support::*;

/// Node's keys and signatures (see the module docs).
const VECTORS: &str = include_str!("node_keys_vectors.json");

/// `body`'s answer in a Worker that has node:crypto, Buffer and `V`, the
/// vectors.
async fn run_keys(body: &str) -> String {
    let imports = format!(
        "import crypto from 'node:crypto'; import {{ Buffer }} from 'node:buffer';\nconst V = {VECTORS};"
    );
    answer(NodeCompat::V1, &imports, body).await
}

#[tokio::test]
async fn keys_read_from_node_sign_and_verify_as_in_node() {
    let out = run_keys(
        r#"
        const r = [];
        const rsa = crypto.createPrivateKey(V.rsaPkcs1);
        const rsaPub = crypto.createPublicKey(V.rsaSpki);
        r.push(rsa.type, rsa.asymmetricKeyType, rsa.asymmetricKeyDetails.modulusLength, String(rsa.asymmetricKeyDetails.publicExponent));
        r.push(crypto.sign('sha256', Buffer.from('hello'), rsa).toString('base64') === V.rsaSig);
        r.push(crypto.verify('sha256', Buffer.from('hello'), rsaPub, Buffer.from(V.rsaSig, 'base64')));
        r.push(crypto.verify('sha256', Buffer.from('hellO'), rsaPub, Buffer.from(V.rsaSig, 'base64')));
        r.push(crypto.verify('sha256', Buffer.from('hello'), { key: rsaPub, padding: crypto.constants.RSA_PKCS1_PSS_PADDING }, Buffer.from(V.rsaPss, 'base64')));
        r.push(crypto.createPublicKey(V.rsaPkcs1).export({ type: 'spki', format: 'pem' }) === V.rsaSpki);
        r.push(rsaPub.export({ format: 'jwk' }).n.slice(0, 16) === V.rsaJwkN);
        r.push(rsa.export({ type: 'pkcs8', format: 'der' }).toString('base64').slice(0, 40) === V.rsaPkcs8Der);
        r.push(rsa.export({ type: 'pkcs1', format: 'pem' }) === V.rsaPkcs1);
        r.push(crypto.privateDecrypt(rsa, Buffer.from(V.oaep, 'base64')).toString());
        const ec = crypto.createPrivateKey(V.ecSec1);
        const ecPub = crypto.createPublicKey(V.ecSpki);
        r.push(ec.asymmetricKeyType, ec.asymmetricKeyDetails.namedCurve);
        r.push(crypto.verify('sha256', Buffer.from('hello'), ecPub, Buffer.from(V.ecSig, 'base64')));
        r.push(crypto.verify('sha384', Buffer.from('hello'), { key: V.ecSpki, dsaEncoding: 'ieee-p1363' }, Buffer.from(V.ecP1363, 'base64')));
        r.push(ecPub.export({ type: 'spki', format: 'der' }).length === V.ecSpkiDerLen);
        r.push(crypto.createPublicKey(ec).equals(ecPub), ec.equals(ecPub));
        const ed = crypto.createPrivateKey({ key: Buffer.from(V.edPkcs8), format: 'pem' });
        r.push(ed.asymmetricKeyType, crypto.sign(null, Buffer.from('hello'), ed).toString('base64') === V.edSig);
        r.push(crypto.verify(null, Buffer.from('hello'), V.edSpki, Buffer.from(V.edSig, 'base64')));
        r.push(ed.export({ type: 'pkcs8', format: 'pem' }) === V.edPkcs8);
        const jwk = ed.export({ format: 'jwk' });
        r.push(jwk.kty, jwk.crv, crypto.createPrivateKey({ key: jwk, format: 'jwk' }).equals(ed));
        const signer = crypto.createSign('RSA-SHA256'); signer.update('hel'); signer.update('lo');
        r.push(signer.sign(V.rsaPkcs1, 'base64') === V.rsaSig);
        r.push(crypto.createVerify('sha256').update('hello').verify(V.ecSpki, V.ecSig, 'base64'));
        try { crypto.createPrivateKey(V.rsaSpki); } catch (e) { r.push(e.name); }
        try { crypto.createPrivateKey('-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n'); } catch (e) { r.push(e.name); }
        r.push(JSON.stringify({
          ecdsa: crypto.sign('sha256', Buffer.from('hello'), ec).toString('base64'),
          pss: crypto.sign('sha256', Buffer.from('hello'), { key: rsa, padding: 6 }).toString('base64'),
          oaep: crypto.publicEncrypt(rsaPub, Buffer.from('from isolane')).toString('base64'),
        }));
        return r.join(' ');
        "#,
    )
    .await;
    let (head, ours) = out.split_at(out.find('{').expect("our signatures"));
    assert_eq!(
        head.trim_end(),
        "private rsa 1024 65537 true true false true true true true true secret \
         ec prime256v1 true true true true false \
         ed25519 true true true OKP Ed25519 true true true DataError DataError"
    );
    node_accepts(ours);
}

/// `node` verifies our ECDSA and RSA-PSS signatures (random, so not equal
/// to Node's) and decrypts our OAEP ciphertext with Node's keys.
fn node_accepts(ours: &str) {
    let script = format!(
        "const c = require('crypto'); const V = {VECTORS}; const O = {ours}; const h = Buffer.from('hello');
         const ok = [
           c.verify('sha256', h, V.ecSpki, Buffer.from(O.ecdsa, 'base64')),
           c.verify('sha256', h, {{ key: V.rsaSpki, padding: 6 }}, Buffer.from(O.pss, 'base64')),
           c.privateDecrypt(V.rsaPkcs1, Buffer.from(O.oaep, 'base64')).toString() === 'from isolane',
         ];
         console.log(ok.join(' '));"
    );
    let output = std::process::Command::new("node")
        .args(["-e", &script])
        .output()
        .expect("node runs (the test compares with Node)");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "true true true",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn generated_keys_sign_derive_and_meet_web_crypto() {
    let out = run_keys(
        r#"
        const r = [];
        const data = Buffer.from('data');
        for (const [type, options, algorithm] of [
          ['rsa', { modulusLength: 1024 }, 'sha256'],
          ['rsa-pss', { modulusLength: 1024 }, 'sha256'],
          ['ec', { namedCurve: 'P-384' }, 'sha384'],
          ['ec', { namedCurve: 'prime256v1' }, 'sha256'],
          ['ed25519', undefined, null],
        ]) {
          const { publicKey, privateKey } = crypto.generateKeyPairSync(type, options);
          const sig = crypto.sign(algorithm, data, privateKey);
          r.push(`${privateKey.asymmetricKeyType}:${crypto.verify(algorithm, data, publicKey, sig)}:${crypto.verify(algorithm, data, privateKey, sig)}`);
        }
        const pss = crypto.generateKeyPairSync('rsa-pss', { modulusLength: 1024 });
        const pssPem = pss.publicKey.export({ type: 'spki', format: 'pem' });
        r.push(crypto.createPublicKey(pssPem).asymmetricKeyType, crypto.createPrivateKey(pss.privateKey.export({ type: 'pkcs8', format: 'pem' })).asymmetricKeyType);
        const pem = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256', publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
        r.push(pem.publicKey.startsWith('-----BEGIN PUBLIC KEY-----\n'), pem.privateKey.endsWith('-----END PRIVATE KEY-----\n'));
        const a = crypto.generateKeyPairSync('x25519');
        const b = crypto.generateKeyPairSync('x25519');
        r.push(crypto.diffieHellman({ privateKey: a.privateKey, publicKey: b.publicKey }).equals(crypto.diffieHellman({ privateKey: b.privateKey, publicKey: a.publicKey })));
        const alice = crypto.createECDH('prime256v1'); const bob = crypto.createECDH('prime256v1');
        const ak = alice.generateKeys(); const bk = bob.generateKeys();
        r.push(ak.length, alice.computeSecret(bk).equals(bob.computeSecret(ak)), alice.getPrivateKey().length);
        const pair = await new Promise((res, rej) => crypto.generateKeyPair('rsa', { modulusLength: 2048, publicExponent: 3 }, (e, pub, priv) => (e ? rej(e) : res([pub, priv]))));
        r.push(pair[0].asymmetricKeyDetails.modulusLength, String(pair[1].asymmetricKeyDetails.publicExponent));
        r.push(crypto.privateDecrypt({ key: pair[1], oaepHash: 'sha256' }, crypto.publicEncrypt({ key: pair[0], oaepHash: 'sha256' }, Buffer.from('x'))).toString());
        const web = await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']);
        const k = crypto.KeyObject.from(web.privateKey);
        const sig = crypto.sign(null, data, k);
        r.push(k.type, k.asymmetricKeyType, await crypto.subtle.verify('Ed25519', web.publicKey, sig, data));
        const back = crypto.KeyObject.from(web.publicKey).toCryptoKey('Ed25519', true, ['verify']);
        r.push(back.type, back.algorithm.name, await crypto.subtle.verify('Ed25519', back, sig, data));
        const secret = crypto.createSecretKey(Buffer.from('0123456789abcdef'));
        const hmac = secret.toCryptoKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
        r.push(Buffer.from(await crypto.subtle.sign('HMAC', hmac, data)).equals(crypto.createHmac('sha256', secret).update(data).digest()));
        r.push(secret.export({ format: 'jwk' }).k, crypto.generateKeySync('aes', { length: 256 }).symmetricKeySize);
        try { crypto.generateKeyPairSync('rsa', { modulusLength: 8192 }); } catch (e) { r.push(e.name); }
        r.push(JSON.stringify({ pss: pssPem }));
        return r.join(' ');
        "#,
    )
    .await;
    let (out, pss) = out.split_at(out.find('{').expect("the RSA-PSS key"));
    // Node reads our RSA-PSS key as one.
    let script =
        format!("console.log(require('crypto').createPublicKey({pss}.pss).asymmetricKeyType)");
    let output = std::process::Command::new("node")
        .args(["-e", &script])
        .output()
        .expect("node runs (the test compares with Node)");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "rsa-pss");
    assert_eq!(
        out.trim_end(),
        "rsa:true:true rsa-pss:true:true ec:true:true ec:true:true ed25519:true:true \
         rsa-pss rsa-pss true true true 65 true 32 2048 3 x private ed25519 true public Ed25519 true true \
         MDEyMzQ1Njc4OWFiY2RlZg 32 OperationError"
    );
}

/// A Worker generating RSA-4096 keys without end (`generateKeyPairSync`,
/// on the isolate's thread) ends at its CPU limit; a neighbour on the same
/// thread answers before, during and after.
#[tokio::test]
async fn endless_rsa_generation_ends_at_the_cpu_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let engine = Arc::new(engine);
    let neighbour = bundle("web/neighbour", HELLO);
    let script = "import crypto from 'node:crypto';\nexport default { fetch() { for (;;) crypto.generateKeyPairSync('rsa', { modulusLength: 4096 }); } };";
    let mut hostile = (*node_worker("t/rsa-gen", script, NodeCompat::V1)).clone();
    hostile.limits = Limits {
        cpu_ms: 200,
        ..memory_limits(512)
    };
    let error = attack_beside(&engine, &neighbour, hostile).await;
    assert!(
        matches!(error, ExecuteError::CpuLimit { limit_ms: 200 }),
        "{error:?}"
    );
}

/// RSA PKCS#1 v1.5 encryption (`RSA_PKCS1_PADDING`): ours decrypts in Node
/// (run with `--security-revert=CVE-2023-46809`), and decryption here is
/// refused with Node 20's error, as Node refuses it by default (its timing
/// leaks the key; workerd decrypts, a documented difference).
#[tokio::test]
async fn pkcs1_encryption_meets_node() {
    let out = run_keys(
        r#"
        const r = [];
        try { crypto.privateDecrypt({ key: V.rsaPkcs1, padding: crypto.constants.RSA_PKCS1_PADDING }, Buffer.from(V.pkcs1v15, 'base64')); } catch (e) { r.push(e.name, e.code); }
        const ours = crypto.publicEncrypt({ key: V.rsaSpki, padding: crypto.constants.RSA_PKCS1_PADDING }, Buffer.from('from isolane'));
        r.push(ours.length);
        try { crypto.privateDecrypt({ key: V.rsaPkcs1, padding: crypto.constants.RSA_PKCS1_PADDING }, Buffer.alloc(128, 1)); } catch (e) { r.push(e.code); }
        try { crypto.publicEncrypt({ key: V.rsaSpki, padding: crypto.constants.RSA_PKCS1_PADDING }, Buffer.alloc(118)); } catch (e) { r.push(e.name); }
        r.push(ours.toString('base64'));
        return r.join(' ');
        "#,
    )
    .await;
    let (answers, ours) = out.rsplit_once(' ').unwrap();
    assert_eq!(
        answers,
        "TypeError ERR_INVALID_ARG_VALUE 128 ERR_INVALID_ARG_VALUE OperationError"
    );
    let script = format!(
        "const c = require('crypto'); const V = {VECTORS};
         console.log(c.privateDecrypt({{ key: V.rsaPkcs1, padding: 1 }}, Buffer.from('{ours}', 'base64')).toString());"
    );
    // Node prints a security warning first.
    assert_eq!(
        node_prints(&["--security-revert=CVE-2023-46809"], &script),
        "from isolane"
    );
}

/// privateEncrypt (PKCS#1 v1.5 type 1 padding, deterministic) answers
/// Node's bytes and publicDecrypt reads Node's; without padding,
/// publicEncrypt answers Node's bytes and privateDecrypt reverses it; a
/// forged or too long input is refused.
#[tokio::test]
async fn raw_rsa_meets_node() {
    let out = run_keys(
        r#"
        const r = [];
        const NONE = crypto.constants.RSA_NO_PADDING;
        const signed = crypto.privateEncrypt(V.rsaPkcs1, Buffer.from('from isolane'));
        r.push(crypto.publicDecrypt(V.rsaSpki, signed).toString(), crypto.publicDecrypt(V.rsaPkcs1, signed).toString());
        const block = Buffer.alloc(128, 7);
        const raw = crypto.publicEncrypt({ key: V.rsaSpki, padding: NONE }, block);
        r.push(crypto.privateDecrypt({ key: V.rsaPkcs1, padding: NONE }, raw).equals(block));
        r.push(crypto.privateEncrypt({ key: V.rsaPkcs1, padding: NONE }, block).length);
        try { crypto.publicDecrypt(V.rsaSpki, Buffer.alloc(128, 1)); } catch (e) { r.push(e.name); }
        try { crypto.privateEncrypt(V.rsaPkcs1, Buffer.alloc(118)); } catch (e) { r.push(e.name); }
        try { crypto.privateEncrypt(V.rsaSpki, Buffer.from('x')); } catch (e) { r.push(e.name); }
        try { crypto.privateEncrypt(crypto.createPublicKey(V.rsaSpki), Buffer.from('x')); } catch (e) { r.push(e.code); }
        try { crypto.privateEncrypt({ key: V.rsaPkcs1, padding: 6 }, Buffer.from('x')); } catch (e) { r.push(e.name); }
        r.push(signed.toString('base64'), raw.toString('base64'));
        return r.join(' ');
        "#,
    )
    .await;
    let mut parts: Vec<&str> = out.rsplitn(3, ' ').collect();
    parts.reverse();
    let [answers, signed, raw] = parts[..] else {
        panic!("{out}")
    };
    assert_eq!(
        answers,
        "from isolane from isolane true 128 OperationError OperationError DataError ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE TypeError"
    );
    let script = format!(
        "const c = require('crypto'); const V = {VECTORS};
         const block = Buffer.alloc(128, 7);
         console.log([c.privateEncrypt(V.rsaPkcs1, Buffer.from('from isolane')).toString('base64') === '{signed}',
           c.publicEncrypt({{ key: V.rsaSpki, padding: 3 }}, block).toString('base64') === '{raw}',
           c.publicDecrypt(V.rsaSpki, Buffer.from('{signed}', 'base64')).toString()].join());"
    );
    assert_eq!(node_prints(&[], &script), "true,true,from isolane");
}
