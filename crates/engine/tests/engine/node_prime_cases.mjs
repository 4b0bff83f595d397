// What checkPrime, generatePrime, getCipherInfo and crypto.constants
// answer, and the errors of misuse, as { name: answer }. node_crypto_prime.rs
// runs it in a Worker and compares it with node_prime_vectors.json, which
// `node node_prime_vectors.mjs` wrote (Node 20).
export function primeCases(crypto, Buffer) {
  const out = {};
  const t = (name, f) => { try { out[name] = f(); } catch (e) { out[name] = `${e.name} ${e.code}: ${e.message}`; } };
  const known = [0n, 1n, 2n, 3n, 4n, 561n, 7919n, 65537n, 2n ** 61n - 1n, 2n ** 89n - 1n, 2n ** 127n - 1n, 2n ** 127n + 1n, 2n ** 521n - 1n, 3215031751n];
  for (const n of known) t(`checkPrime ${n}`, () => crypto.checkPrimeSync(n));
  t('checkPrime buffer', () => [crypto.checkPrimeSync(Buffer.from([0x1f])), crypto.checkPrimeSync(new Uint8Array([1, 0, 1]).buffer), crypto.checkPrimeSync(new DataView(new Uint8Array([0x0f]).buffer))]);
  t('checkPrime empty', () => crypto.checkPrimeSync(new Uint8Array(0)));
  t('checkPrime checks', () => crypto.checkPrimeSync(2n ** 127n - 1n, { checks: 40 }));
  t('checkPrime number', () => crypto.checkPrimeSync(7));
  t('checkPrime negative', () => crypto.checkPrimeSync(-7n));
  t('checkPrime bad checks', () => crypto.checkPrimeSync(7n, { checks: -1 }));
  t('checkPrime string checks', () => crypto.checkPrimeSync(7n, { checks: '1' }));
  t('checkPrime bad options', () => crypto.checkPrimeSync(7n, 5));
  t('checkPrime no callback', () => crypto.checkPrime(7n));
  const big = (p) => BigInt(`0x${Buffer.from(p).toString('hex')}`);
  for (const bits of [2, 3, 8, 16, 64, 256, 512]) {
    t(`generatePrime ${bits}`, () => {
      const p = crypto.generatePrimeSync(bits);
      return [p instanceof ArrayBuffer, big(p).toString(2).length, crypto.checkPrimeSync(p)];
    });
  }
  t('generatePrime bigint', () => { const p = crypto.generatePrimeSync(128, { bigint: true }); return [typeof p, p.toString(2).length, crypto.checkPrimeSync(p)]; });
  t('generatePrime safe', () => { const p = crypto.generatePrimeSync(64, { safe: true, bigint: true }); return [p.toString(2).length, crypto.checkPrimeSync(p), crypto.checkPrimeSync((p - 1n) / 2n)]; });
  t('generatePrime add rem', () => { const p = crypto.generatePrimeSync(32, { add: 12n, rem: 11n, bigint: true }); return [p % 12n === 11n, crypto.checkPrimeSync(p)]; });
  t('generatePrime add buffers', () => { const p = crypto.generatePrimeSync(48, { add: Buffer.from([100]), rem: Buffer.from([3]), bigint: true }); return [p % 100n === 3n, crypto.checkPrimeSync(p)]; });
  t('generatePrime safe add', () => { const p = crypto.generatePrimeSync(40, { safe: true, add: 12n, rem: 11n, bigint: true }); return [p % 12n === 11n, crypto.checkPrimeSync((p - 1n) / 2n)]; });
  t('generatePrime rem alone', () => { const p = crypto.generatePrimeSync(24, { rem: 3n, bigint: true }); return crypto.checkPrimeSync(p); });
  t('generatePrime add too long', () => crypto.generatePrimeSync(8, { add: 1000n }));
  t('generatePrime rem not below add', () => crypto.generatePrimeSync(32, { add: 12n, rem: 12n }));
  t('generatePrime 0', () => crypto.generatePrimeSync(0));
  t('generatePrime 1.5', () => crypto.generatePrimeSync(1.5));
  t('generatePrime string', () => crypto.generatePrimeSync('8'));
  t('generatePrime huge', () => crypto.generatePrimeSync(2 ** 31));
  t('generatePrime bad bigint', () => crypto.generatePrimeSync(16, { bigint: 1 }));
  t('generatePrime bad safe', () => crypto.generatePrimeSync(16, { safe: 'yes' }));
  t('generatePrime bad add', () => crypto.generatePrimeSync(16, { add: 5 }));
  t('generatePrime bad options', () => crypto.generatePrimeSync(16, 'x'));
  t('generatePrime no callback', () => crypto.generatePrime(16));
  const names = ['aes-128-cbc', 'AES-192-CBC', 'aes-256-cbc', 'aes-128-ctr', 'aes-256-ctr', 'aes-128-ecb', 'aes-256-ecb',
    'aes-128-ofb', 'aes-128-cfb', 'aes-256-cfb8', 'aes-128-gcm', 'aes-256-gcm', 'id-aes128-GCM', 'aes-128-ccm', 'aes-256-ccm',
    'des-cbc', 'des-ecb', 'des-ede', 'des-ede-cbc', 'des-ede3', 'des-ede3-cbc', 'aes128', 'des3', 'nope'];
  for (const name of names) t(`getCipherInfo ${name}`, () => crypto.getCipherInfo(name));
  t('getCipherInfo chacha20-poly1305', () => { const { nid, ...rest } = crypto.getCipherInfo('chacha20-poly1305'); return rest; });
  for (const nid of [419, 427, 895, 31, 44, 99999]) t(`getCipherInfo nid ${nid}`, () => crypto.getCipherInfo(nid));
  t('getCipherInfo keyLength', () => [crypto.getCipherInfo('aes-128-cbc', { keyLength: 16 }), crypto.getCipherInfo('aes-128-cbc', { keyLength: 32 })]);
  t('getCipherInfo ivLength', () => [16, 12, 8, 0].map((ivLength) => crypto.getCipherInfo('aes-128-cbc', { ivLength })));
  t('getCipherInfo gcm ivLength', () => [16, 12, 8, 1].map((ivLength) => crypto.getCipherInfo('aes-128-gcm', { ivLength })));
  t('getCipherInfo ccm ivLength', () => [6, 7, 13, 14].map((ivLength) => crypto.getCipherInfo('aes-128-ccm', { ivLength })));
  t('getCipherInfo bigint', () => crypto.getCipherInfo(5n));
  t('getCipherInfo bad options', () => crypto.getCipherInfo('aes-128-cbc', 5));
  t('getCipherInfo bad keyLength', () => crypto.getCipherInfo('aes-128-cbc', { keyLength: 'x' }));
  t('every listed cipher has info', () => crypto.getCiphers().filter((name) => ['aes', 'des', 'cha'].includes(name.slice(0, 3)) && crypto.getCipherInfo(name) === undefined));
  const { OPENSSL_VERSION_NUMBER, ...constants } = crypto.constants;
  t('constants', () => constants);
  t('secureHeapUsed', () => crypto.secureHeapUsed());
  t('getFips', () => crypto.getFips());
  return out;
}
