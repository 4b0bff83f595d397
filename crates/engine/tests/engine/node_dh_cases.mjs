// What finite-field Diffie-Hellman answers with fixed private keys (so the
// public keys and secrets are comparable), and the errors of misuse, as
// { name: answer }. node_crypto_dh.rs runs it in a Worker and compares it
// with node_dh_vectors.json, which `node node_dh_vectors.mjs` wrote.
export function dhCases(crypto, Buffer) {
  const out = {};
  const t = (name, f) => { try { out[name] = f(); } catch (e) { out[name] = `${e.code}: ${e.message}`; } };
  const x = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
  const y = Buffer.from('fedcba9876543210fedcba9876543210', 'hex');
  for (const group of ['modp5', 'modp14', 'modp15', 'modp16']) {
    t(group, () => {
      const a = crypto.getDiffieHellman(group);
      const p = a.getPrime();
      const b = crypto.createDiffieHellman(p, a.getGenerator());
      b.setPrivateKey(y);
      const bPub = b.generateKeys();
      const c = crypto.createDiffieHellman(p.toString('hex'), 'hex', 2);
      c.setPrivateKey(x);
      const cPub = c.generateKeys('base64');
      const s1 = c.computeSecret(bPub).toString('hex');
      const s2 = b.computeSecret(cPub, 'base64', 'hex');
      return [p.length, a.getGenerator('hex'), bPub.toString('hex').slice(0, 32), cPub.slice(0, 24), s1 === s2, s1.slice(0, 32), s1.length].join(' ');
    });
  }
  t('generated pair agrees', () => { const a = crypto.getDiffieHellman('modp14'); const b = crypto.getDiffieHellman('modp14'); a.generateKeys(); b.generateKeys(); return a.computeSecret(b.getPublicKey()).equals(b.computeSecret(a.getPublicKey())); });
  t('public key length', () => { const a = crypto.getDiffieHellman('modp14'); return a.generateKeys().length > 250; });
  t('too small', () => { const a = crypto.getDiffieHellman('modp14'); a.generateKeys(); return a.computeSecret(Buffer.from([1])); });
  t('unknown group', () => crypto.getDiffieHellman('modp99'));
  t('no keys', () => crypto.getDiffieHellman('modp14').getPublicKey());
  t('group setter', () => typeof crypto.getDiffieHellman('modp14').setPrivateKey);
  t('classes', () => [typeof crypto.DiffieHellman, typeof crypto.DiffieHellmanGroup, crypto.createDiffieHellmanGroup('modp5') instanceof crypto.DiffieHellmanGroup].join(' '));
  return out;
}
