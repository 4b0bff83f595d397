// What createPrivateKey/createPublicKey and KeyObject.export answer for the
// encrypted keys of node_pkcs8_vectors.json (`V`: its keys and the key's
// JWK), as { name: answer } (an error as "code: message"). Node's answers
// are the vectors' `expected`; node_crypto_pkcs8.rs runs this in a Worker.
export function pkcs8Cases(crypto, Buffer, V) {
  const passphrase = 'correct horse';
  const answer = (f) => { try { return f(); } catch (e) { return `${e.code}: ${e.message}`; } };
  const read = (key, options = {}) => answer(() => {
    const k = crypto.createPrivateKey({ key, passphrase, ...options });
    return `${k.asymmetricKeyType} ${k.export({ format: 'jwk' }).d === V.jwk.d}`;
  });
  const privateKey = crypto.createPrivateKey({ key: V.jwk, format: 'jwk' });
  return {
    node: read(V.keys.node),
    nodeRsa: answer(() => crypto.createPrivateKey({ key: V.keys.nodeRsa, passphrase }).asymmetricKeyDetails.modulusLength),
    nodeDer: read(Buffer.from(V.keys.nodeDer, 'base64'), { format: 'der', type: 'pkcs8' }),
    scrypt: read(V.keys.scrypt),
    sha1: read(V.keys.sha1),
    des3: read(V.keys.des3),
    bufferPassphrase: read(V.keys.node, { passphrase: Buffer.from(passphrase) }),
    wrong: read(V.keys.node, { passphrase: 'wrong horse' }),
    publicHalf: answer(() => crypto.createPublicKey({ key: V.keys.node, passphrase }).type),
    exportNoPassphrase: answer(() => privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc' })),
    exportNoCipher: answer(() => privateKey.export({ format: 'pem', type: 'pkcs8', passphrase })),
    exportUnknownCipher: answer(() => privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'nope', passphrase })),
    exportLabel: answer(() => privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'AES-128-CBC', passphrase }).split('\n')[0]),
    roundTrip: read(privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase })),
    roundTripDer: read(privateKey.export({ format: 'der', type: 'pkcs8', cipher: 'aes-128-cbc', passphrase }), { format: 'der', type: 'pkcs8' }),
    generated: answer(() => {
      const pair = crypto.generateKeyPairSync('ed25519', { privateKeyEncoding: { format: 'pem', type: 'pkcs8', cipher: 'aes-192-cbc', passphrase } });
      return `${pair.privateKey.split('\n')[0]} ${crypto.createPrivateKey({ key: pair.privateKey, passphrase }).asymmetricKeyType}`;
    }),
  };
}
