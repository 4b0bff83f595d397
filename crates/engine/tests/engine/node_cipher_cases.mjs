// What createCipheriv/createDecipheriv answer for one case each: the output
// of every cipher on fixed keys and IVs, streamed in uneven pieces, and the
// errors of misuse, as { name: answer } (an error as "code: message").
// node_crypto_ciphers.rs runs it in a Worker and compares it with
// node_cipher_vectors.json, which `node node_cipher_vectors.mjs` wrote.
export function cipherCases(crypto, Buffer) {
  const out = {};
  const t = (name, f) => {
    try { out[name] = f(); } catch (e) { out[name] = `${e.code}: ${e.message}`; }
  };
  const key = (n) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + 3) & 255));
  const iv = (n) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 13 + 1) & 255));
  const text = Buffer.from('The quick brown fox jumps over the lazy dog, twice over: 0123456789');
  const pieces = (c, data) => [3, 13, 16, 1, 30].reduce((acc, n) => {
    const at = acc.at;
    acc.sizes.push(c.update(data.subarray(at, at + n)).length);
    acc.at += n;
    return acc;
  }, { at: 0, sizes: [] });
  const streamed = (c, data) => {
    const p = pieces(c, data);
    const rest = c.update(data.subarray(p.at));
    return { sizes: p.sizes.concat(rest.length), final: c.final().length };
  };
  const plain = [
    ['aes-128-cbc', 16, 16], ['aes-192-cbc', 24, 16], ['aes-256-cbc', 32, 16],
    ['aes-128-ctr', 16, 16], ['aes-192-ctr', 24, 16], ['aes-256-ctr', 32, 16],
    ['aes-128-ecb', 16, 0], ['aes-192-ecb', 24, 0], ['aes-256-ecb', 32, 0],
    ['aes-128-ofb', 16, 16], ['aes-192-ofb', 24, 16], ['aes-256-ofb', 32, 16],
    ['aes-128-cfb', 16, 16], ['aes-192-cfb', 24, 16], ['aes-256-cfb', 32, 16],
    ['aes-128-cfb8', 16, 16], ['aes-192-cfb8', 24, 16], ['aes-256-cfb8', 32, 16],
    ['des-ede3-cbc', 24, 8], ['des-ede-cbc', 16, 8], ['des-ede3', 24, 0], ['des-ede', 16, 0],
  ];
  for (const [name, k, v] of plain) {
    t(name, () => {
      const c = crypto.createCipheriv(name, key(k), v ? iv(v) : null);
      const sealed = Buffer.concat([c.update(text.subarray(0, 5)), c.update(text.subarray(5)), c.final()]);
      const d = crypto.createDecipheriv(name, key(k), v ? iv(v) : null);
      const s = streamed(d, sealed);
      const opened = Buffer.concat([crypto.createDecipheriv(name, key(k), v ? iv(v) : null).update(sealed)]);
      return [sealed.toString('hex'), s.sizes.join(','), s.final, opened.length].join(' ');
    });
    t(`${name} encrypt pieces`, () => { const s = streamed(crypto.createCipheriv(name, key(k), v ? iv(v) : null), text); return s.sizes.join(',') + ' ' + s.final; });
  }
  for (const [name, k] of [['aes-128-gcm', 16], ['aes-192-gcm', 24], ['aes-256-gcm', 32], ['chacha20-poly1305', 32]]) {
    for (const tagLength of [undefined, 8, 16]) {
      t(`${name} tag ${tagLength}`, () => {
        const options = tagLength === undefined ? undefined : { authTagLength: tagLength };
        const c = crypto.createCipheriv(name, key(k), iv(12), options);
        c.setAAD(Buffer.from('header'), { plaintextLength: text.length });
        const s = pieces(c, text);
        const sealed = Buffer.concat([crypto.createCipheriv(name, key(k), iv(12), options).setAAD(Buffer.from('header'), { plaintextLength: text.length }).update(text)]);
        c.update(text.subarray(s.at)); c.final();
        const tag = c.getAuthTag();
        const d = crypto.createDecipheriv(name, key(k), iv(12), options);
        d.setAAD(Buffer.from('header'), { plaintextLength: text.length }); d.setAuthTag(tag);
        const opened = Buffer.concat([d.update(sealed), d.final()]).toString();
        const bad = crypto.createDecipheriv(name, key(k), iv(12), options);
        bad.setAuthTag(tag); bad.update(sealed);
        let forged; try { bad.final(); forged = 'accepted'; } catch (e) { forged = e.message; }
        return [sealed.toString('hex'), tag.toString('hex'), s.sizes.join(','), opened === text.toString(), forged].join(' ');
      });
    }
  }
  t('gcm large aad', () => { const aad = Buffer.alloc(3 * 1024 * 1024 + 5, 7); const c = crypto.createCipheriv('aes-128-gcm', key(16), iv(12)); c.setAAD(aad); c.update(text); c.final(); const tag = c.getAuthTag(); const d = crypto.createDecipheriv('aes-128-gcm', key(16), iv(12)); d.setAAD(aad); d.setAuthTag(tag); d.update(crypto.createCipheriv('aes-128-gcm', key(16), iv(12)).setAAD(aad).update(text)); d.final(); return tag.toString('hex'); });
  t('chacha large aad', () => { const c = crypto.createCipheriv('chacha20-poly1305', key(32), iv(12)); c.setAAD(Buffer.alloc(2 * 1024 * 1024 + 3, 9)); c.update(text); c.final(); return c.getAuthTag().toString('hex'); });
  const ccmKey = Buffer.alloc(16, 3), nonce = Buffer.alloc(12, 4), ccmText = Buffer.from('ccm text here');
  t('ccm no tag length', () => crypto.createCipheriv('aes-128-ccm', ccmKey, nonce));
  t('ccm tag length 5', () => crypto.createCipheriv('aes-128-ccm', ccmKey, nonce, { authTagLength: 5 }));
  t('ccm nonce 6', () => crypto.createCipheriv('aes-128-ccm', ccmKey, Buffer.alloc(6), { authTagLength: 8 }));
  t('ccm aad without length', () => crypto.createCipheriv('aes-128-ccm', ccmKey, nonce, { authTagLength: 8 }).setAAD(Buffer.from('aad')));
  for (const [name, k, n, tagLength] of [['aes-128-ccm', 16, 12, 8], ['aes-192-ccm', 24, 7, 16], ['aes-256-ccm', 32, 13, 4]]) {
    t(name, () => {
      const c = crypto.createCipheriv(name, key(k), iv(n), { authTagLength: tagLength });
      c.setAAD(Buffer.from('aad'), { plaintextLength: ccmText.length });
      const sealed = Buffer.concat([c.update(ccmText), c.final()]);
      const tag = c.getAuthTag();
      const d = crypto.createDecipheriv(name, key(k), iv(n), { authTagLength: tagLength });
      d.setAuthTag(tag); d.setAAD(Buffer.from('aad'), { plaintextLength: sealed.length });
      const opened = Buffer.concat([d.update(sealed), d.final()]).toString();
      const b = crypto.createDecipheriv(name, key(k), iv(n), { authTagLength: tagLength });
      b.setAuthTag(Buffer.alloc(tagLength)); b.setAAD(Buffer.from('aad'), { plaintextLength: sealed.length });
      const bad = b.update(sealed);
      let forged; try { b.final(); forged = 'accepted'; } catch (e) { forged = e.message; }
      return [sealed.toString('hex'), tag.toString('hex'), opened, bad.length, forged].join(' ');
    });
  }
  t('ccm no aad', () => { const c = crypto.createCipheriv('aes-128-ccm', ccmKey, nonce, { authTagLength: 16 }); const ct = Buffer.concat([c.update(ccmText), c.final()]); return ct.toString('hex') + ' ' + c.getAuthTag().toString('hex'); });
  t('ccm two updates', () => { const c = crypto.createCipheriv('aes-128-ccm', ccmKey, nonce, { authTagLength: 16 }); c.update(ccmText); return c.update(ccmText); });
  t('ccm wrong length', () => { const c = crypto.createCipheriv('aes-128-ccm', ccmKey, nonce, { authTagLength: 8 }); c.setAAD(Buffer.from('aad'), { plaintextLength: 3 }); return c.update(ccmText); });
  t('ccm decrypt without tag', () => { const d = crypto.createDecipheriv('aes-128-ccm', ccmKey, nonce, { authTagLength: 8 }); const out = d.update(ccmText); try { d.final(); return 'accepted'; } catch (e) { return out.length + ' ' + e.message; } });
  t('gcm iv 16', () => { const c = crypto.createCipheriv('aes-128-gcm', key(16), iv(16)); c.update(text); c.final(); return c.getAuthTag().toString('hex'); });
  t('gcm iv 1', () => { const c = crypto.createCipheriv('aes-128-gcm', key(16), iv(1)); c.update(text); c.final(); return c.getAuthTag().toString('hex'); });
  t('gcm no tag', () => { const d = crypto.createDecipheriv('aes-128-gcm', key(16), iv(12)); d.update(text); return d.final(); });
  t('gcm tag 3', () => crypto.createDecipheriv('aes-128-gcm', key(16), iv(12)).setAuthTag(Buffer.alloc(3)));
  t('gcm authTagLength 5', () => crypto.createCipheriv('aes-128-gcm', key(16), iv(12), { authTagLength: 5 }));
  t('gcm tag before final', () => crypto.createCipheriv('aes-128-gcm', key(16), iv(12)).getAuthTag());
  t('gcm tag twice', () => crypto.createDecipheriv('aes-128-gcm', key(16), iv(12)).setAuthTag(Buffer.alloc(16)).setAuthTag(Buffer.alloc(16)));
  t('cbc getAuthTag', () => { const c = crypto.createCipheriv('aes-128-cbc', key(16), iv(16)); c.final(); return c.getAuthTag(); });
  t('cbc setAAD', () => crypto.createCipheriv('aes-128-cbc', key(16), iv(16)).setAAD(Buffer.alloc(1)));
  t('cipher setAuthTag', () => crypto.createCipheriv('aes-128-gcm', key(16), iv(12)).setAuthTag(Buffer.alloc(16)));
  t('no padding', () => { const c = crypto.createCipheriv('aes-256-cbc', key(32), iv(16)); c.setAutoPadding(false); return Buffer.concat([c.update(text.subarray(0, 20)), c.update(text.subarray(20, 32)), c.final()]).toString('hex'); });
  t('no padding decrypt', () => { const d = crypto.createDecipheriv('aes-256-cbc', key(32), iv(16)); d.setAutoPadding(false); return [d.update(text.subarray(0, 20)).length, d.update(text.subarray(20, 32)).length, d.final().length].join(','); });
  t('no padding partial', () => { const c = crypto.createCipheriv('aes-256-cbc', key(32), iv(16)); c.setAutoPadding(false); c.update(text.subarray(0, 20)); return c.final(); });
  t('no padding partial decrypt', () => { const d = crypto.createDecipheriv('aes-128-ecb', key(16), null); d.setAutoPadding(false); d.update(text.subarray(0, 17)); return d.final(); });
  t('partial decrypt', () => { const d = crypto.createDecipheriv('aes-128-cbc', key(16), iv(16)); d.update(text.subarray(0, 17)); return d.final(); });
  t('bad padding', () => { const d = crypto.createDecipheriv('aes-128-cbc', key(16), iv(16)); d.update(text.subarray(0, 32)); return d.final(); });
  t('des-ede3-cbc bad padding', () => { const d = crypto.createDecipheriv('des-ede3-cbc', key(24), iv(8)); d.update(text.subarray(0, 16)); return d.final(); });
  t('update after final', () => { const c = crypto.createCipheriv('aes-128-ctr', key(16), iv(16)); c.final(); return c.update(text); });
  t('final twice', () => { const c = crypto.createCipheriv('aes-128-ctr', key(16), iv(16)); c.final(); return c.final(); });
  t('padding after final', () => { const c = crypto.createCipheriv('aes-128-cbc', key(16), iv(16)); c.final(); return c.setAutoPadding(false); });
  t('ecb with iv', () => crypto.createCipheriv('aes-128-ecb', key(16), iv(16)));
  t('ecb empty iv', () => crypto.createCipheriv('aes-128-ecb', key(16), Buffer.alloc(0)).final().toString('hex'));
  t('cbc null iv', () => crypto.createCipheriv('aes-128-cbc', key(16), null));
  t('cbc short iv', () => crypto.createCipheriv('aes-128-cbc', key(16), iv(8)));
  t('chacha iv 8', () => crypto.createCipheriv('chacha20-poly1305', key(32), iv(8)));
  t('short key', () => crypto.createCipheriv('aes-256-ctr', key(16), iv(16)));
  t('des3 short key', () => crypto.createCipheriv('des-ede3-cbc', key(16), iv(8)));
  t('unknown', () => crypto.createCipheriv('aes-128-xyz', key(16), iv(16)));
  t('not a string', () => crypto.createCipheriv(7, key(16), iv(16)));
  t('aliases', () => ['AES256', 'aes128', 'id-aes128-GCM', 'des3'].map((n) => { const c = crypto.createCipheriv(n, key(n === 'aes128' || n.includes('128') ? 16 : n === 'des3' ? 24 : 32), iv(n.includes('GCM') ? 12 : n === 'des3' ? 8 : 16)); return c.update('x', 'utf8', 'hex') + c.final('hex'); }).join(' '));
  t('encodings', () => { const c = crypto.createCipheriv('aes-128-ctr', key(16), iv(16)); return [c.update('abcd', 'utf8', 'base64'), c.update('6566', 'hex', 'base64'), c.update('Zg==', 'base64', 'base64'), c.final('base64')].join('|'); });
  t('latin1 out', () => { const c = crypto.createCipheriv('aes-128-cbc', key(16), iv(16)); const s = c.update(text, undefined, 'latin1') + c.final('latin1'); return Buffer.from(s, 'latin1').toString('hex'); });
  t('utf8 split', () => { const d = crypto.createDecipheriv('aes-128-ctr', key(16), iv(16)); const sealed = crypto.createCipheriv('aes-128-ctr', key(16), iv(16)).update('€€€', 'utf8'); return [d.update(sealed.subarray(0, 4), undefined, 'utf8'), d.update(sealed.subarray(4), undefined, 'utf8'), d.final('utf8')].join('|'); });
  t('key object', () => { const k = crypto.createSecretKey(key(16)); const c = crypto.createCipheriv('aes-128-cbc', k, iv(16)); return Buffer.concat([c.update(text), c.final()]).toString('base64'); });
  t('classes', () => [typeof crypto.Cipheriv, typeof crypto.Decipheriv, crypto.createCipheriv('aes-128-ctr', key(16), iv(16)) instanceof crypto.Cipheriv, crypto.createDecipheriv('aes-128-ctr', key(16), iv(16)) instanceof crypto.Decipheriv].join(' '));
  t('getCiphers', () => ['aes-128-cbc', 'aes-256-gcm', 'aes-192-ofb', 'aes-128-ecb', 'aes-256-cfb8', 'aes-128-ccm', 'chacha20-poly1305', 'des-ede3-cbc'].every((n) => crypto.getCiphers().includes(n)));
  return out;
}

// The stream form: text piped through a cipher and back.
export async function cipherStreams(crypto, Buffer, Readable) {
  const key = Buffer.alloc(32, 5), iv = Buffer.alloc(16, 6);
  const collect = async (stream) => { const chunks = []; for await (const c of stream) chunks.push(c); return Buffer.concat(chunks); };
  const sealed = await collect(Readable.from([Buffer.from('stream '), Buffer.from('me through a cipher, '), Buffer.from('please')]).pipe(crypto.createCipheriv('aes-256-cbc', key, iv)));
  const opened = await collect(Readable.from([sealed.subarray(0, 10), sealed.subarray(10)]).pipe(crypto.createDecipheriv('aes-256-cbc', key, iv)));
  const c = crypto.createCipheriv('aes-256-ctr', key, iv); c.setEncoding('hex'); c.write('abc'); c.end('def');
  let hex = ""; for await (const s of c) hex += s;
  let error;
  try { await collect(Readable.from([sealed.subarray(0, 16)]).pipe(crypto.createDecipheriv('aes-256-cbc', Buffer.alloc(32), iv))); } catch (e) { error = e.code; }
  return [sealed.toString('hex'), opened.toString(), hex.toString(), error].join(' ');
}
