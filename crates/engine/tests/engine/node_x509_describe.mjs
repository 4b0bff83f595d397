// What node_x509.rs compares: every X509Certificate property and check over
// the vectors' certificates (`V`), as plain JSON values. The same function
// runs in Node (node_x509_vectors.mjs, which writes its answer into the
// vectors) and in a Worker (node_x509.rs, which includes this file).
export function describeAll({ X509Certificate, createPrivateKey }, Buffer, V) {
  const describe = (x) => ({
    subject: x.subject, issuer: x.issuer, subjectAltName: x.subjectAltName ?? null, infoAccess: x.infoAccess ?? null,
    validFrom: x.validFrom, validTo: x.validTo, serialNumber: x.serialNumber,
    fingerprint: x.fingerprint, fingerprint256: x.fingerprint256, fingerprint512: x.fingerprint512,
    ca: x.ca, keyUsage: x.keyUsage ?? null, raw: x.raw.toString('base64'),
    publicKeyType: x.publicKey.asymmetricKeyType, publicKeySpki: x.publicKey.export({ type: 'spki', format: 'pem' }),
    pem: x.toString(), json: x.toJSON(),
  });
  const ca = new X509Certificate(V.ca);
  const leaf = new X509Certificate(V.leaf);
  const ed = new X509Certificate(Buffer.from(V.ed));
  const big = new X509Certificate(V.big);
  const c = (v) => v ?? null;
  return {
    ca: describe(ca),
    leaf: describe(leaf),
    ed: describe(ed),
    host: ['www.example.com', 'WWW.Example.com', 'x.api.example.com', 'a.b.api.example.com', 'api.example.com', 'example.com', 'other.com', 'www.example.com.'].map((h) => c(leaf.checkHost(h))),
    hostNoWildcards: c(leaf.checkHost('x.api.example.com', { wildcards: false })),
    hostSubjectAlways: c(leaf.checkHost('www.example.com', { subject: 'always' })),
    hostEd: [c(ed.checkHost('ed.example.org')), c(ed.checkHost('ed.example.org', { subject: 'never' })), c(ed.checkHost('x.example.org'))],
    email: [c(leaf.checkEmail('ops@example.com')), c(leaf.checkEmail('OPS@EXAMPLE.COM')), c(leaf.checkEmail('ops@EXAMPLE.com')), c(leaf.checkEmail('admin@example.com')), c(leaf.checkEmail('admin@example.com', { subject: 'always' }))],
    emailEd: [c(ed.checkEmail('me@ed.example.org')), c(ed.checkEmail('me@ed.example.org', { subject: 'never' }))],
    ip: [c(leaf.checkIP('127.0.0.1')), c(leaf.checkIP('::1')), c(leaf.checkIP('0:0:0:0:0:0:0:1')), c(leaf.checkIP('127.0.0.2'))],
    verify: [leaf.verify(ca.publicKey), leaf.verify(leaf.publicKey), ca.verify(ca.publicKey), ed.verify(ed.publicKey), ca.verify(ed.publicKey)],
    issued: [leaf.checkIssued(ca), ca.checkIssued(ca), leaf.checkIssued(leaf), ed.checkIssued(ed), ca.checkIssued(leaf)],
    big: [big.raw.length, c(big.checkHost('host-999.big.example.com'))],
    privateKey: [leaf.checkPrivateKey(createPrivateKey(V.leafKey)), leaf.checkPrivateKey(createPrivateKey(V.caKey)), ca.checkPrivateKey(createPrivateKey(V.caKey))],
  };
}
