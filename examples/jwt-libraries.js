// jose and hono/jwt on Isolane's Web Crypto: JWS with every algorithm jose
// signs (HS256/512, RS256, PS256, ES256/384/512, EdDSA; JWK, SPKI and PKCS#8
// round trips; an altered token refused), JWE (dir, A128KW, A256GCMKW,
// RSA-OAEP-256, ECDH-ES, ECDH-ES+A256KW, PBES2) and hono/jwt sign/verify.
// Answers a JSON map of check → true (or the error).
//
// Workers are single files, so bundle it first:
//   npm install jose@5 hono@4 esbuild
//   npx esbuild examples/jwt-libraries.js --bundle --format=esm --platform=neutral \
//     --main-fields=module,main --conditions=worker,browser --outfile=/tmp/jwt-libraries.js
//   isolane dev /tmp/jwt-libraries.js && curl localhost:8787
import * as jose from 'jose';
import { sign, verify } from 'hono/jwt';

export default {
  async fetch() {
    const out = {};
    const run = async (name, f) => {
      try { out[name] = await f(); } catch (e) { out[name] = 'ERR ' + (e && e.name) + ': ' + (e && e.message); }
    };
    const payload = { sub: 'u1', iat: 1700000000 };
    for (const alg of ['HS256', 'HS512', 'RS256', 'PS256', 'ES256', 'ES384', 'ES512', 'EdDSA']) {
      await run(alg, async () => {
        let signKey, verifyKey;
        if (alg.startsWith('HS')) {
          signKey = verifyKey = await jose.generateSecret(alg, { extractable: true });
        } else {
          const kp = await jose.generateKeyPair(alg, { extractable: true, crv: alg === 'EdDSA' ? 'Ed25519' : undefined });
          signKey = kp.privateKey; verifyKey = kp.publicKey;
        }
        const jwt = await new jose.SignJWT(payload).setProtectedHeader({ alg }).sign(signKey);
        const { payload: p } = await jose.jwtVerify(jwt, verifyKey);
        const jwk = await jose.exportJWK(verifyKey);
        const again = await jose.importJWK(jwk, alg);
        await jose.jwtVerify(jwt, again);
        if (!alg.startsWith('HS')) {
          const pem = await jose.exportSPKI(verifyKey);
          await jose.jwtVerify(jwt, await jose.importSPKI(pem, alg));
          const pk8 = await jose.exportPKCS8(signKey);
          const jwt2 = await new jose.SignJWT(payload).setProtectedHeader({ alg }).sign(await jose.importPKCS8(pk8, alg));
          await jose.jwtVerify(jwt2, verifyKey);
        }
        let tampered = false;
        try { await jose.jwtVerify(jwt.slice(0, -4) + (jwt.endsWith('AAAA') ? 'BBBB' : 'AAAA'), verifyKey); } catch { tampered = true; }
        return p.sub === 'u1' && tampered;
      });
    }
    for (const [alg, enc] of [['dir', 'A256GCM'], ['A128KW', 'A128GCM'], ['A256GCMKW', 'A256GCM'], ['RSA-OAEP-256', 'A256GCM'],
                              ['ECDH-ES', 'A256GCM'], ['ECDH-ES+A256KW', 'A128CBC-HS256'], ['PBES2-HS256+A128KW', 'A128GCM']]) {
      await run(`JWE ${alg} ${enc}`, async () => {
        let encKey, decKey;
        if (alg === 'dir') { encKey = decKey = await jose.generateSecret(enc); }
        else if (alg.startsWith('PBES2')) { encKey = decKey = new TextEncoder().encode('correct horse battery staple'); }
        else if (alg.startsWith('A')) { encKey = decKey = await jose.generateSecret(alg); }
        else { const kp = await jose.generateKeyPair(alg, alg.startsWith('ECDH') ? { crv: 'P-256' } : {}); encKey = kp.publicKey; decKey = kp.privateKey; }
        const jwe = await new jose.CompactEncrypt(new TextEncoder().encode('secret message'))
          .setProtectedHeader({ alg, enc }).encrypt(encKey);
        const { plaintext } = await jose.compactDecrypt(jwe, decKey, { keyManagementAlgorithms: [alg] });
        return new TextDecoder().decode(plaintext) === 'secret message';
      });
    }
    await run('hono/jwt HS256', async () => {
      const t = await sign(payload, 'a-secret');
      const v = await verify(t, 'a-secret', 'HS256');
      let bad = false;
      try { await verify(t, 'another-secret', 'HS256'); } catch { bad = true; }
      return v.sub === 'u1' && bad;
    });
    await run('hono/jwt RS256 and ES256 with JWKs', async () => {
      const res = [];
      for (const alg of ['RS256', 'ES256']) {
        const kp = await jose.generateKeyPair(alg, { extractable: true });
        const priv = await jose.exportJWK(kp.privateKey);
        const pub = await jose.exportJWK(kp.publicKey);
        const t = await sign(payload, priv, alg);
        const v = await verify(t, pub, alg);
        res.push(v.sub === 'u1');
      }
      return res.every(Boolean);
    });
    return Response.json(out);
  },
};
