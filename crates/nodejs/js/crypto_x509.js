// node:internal/crypto_x509 — node:crypto's X509Certificate. The
// certificate is read and described by `nodeX509Parse`
// (host/node/crypto_x509.rs, the x509-parser crate: subject, issuer, names,
// times, serial and fingerprints in Node's formats) once, at construction;
// `checkHost`/`checkEmail`/`checkIP` and `checkIssued` are host functions
// too (OpenSSL's matching rules); `verify` checks the signature with
// node:crypto's own `verify` over the signed part, and the fingerprints are
// its `createHash`'s, made when first asked. Exports a function of
// node:crypto's functions (createHash, createPublicKey, verify, KeyObject),
// which node:crypto calls once. Runs as function (host, internal, require,
// module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType } = require('node:internal/errors');

const SUBJECTS = ['default', 'always', 'never'];

function invalidArgValue(name, value) {
  return codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument '${name}' is invalid. Received ${String(value)}`);
}

// The certificate's bytes from what Node's constructor takes.
function certificateBytes(buffer) {
  if (typeof buffer === 'string') return Buffer.from(buffer);
  if (ArrayBuffer.isView(buffer)) return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  throw invalidArgType('buffer', 'of type string or an instance of ArrayBuffer, Buffer, TypedArray or DataView', buffer);
}

// Node's checkHost/checkEmail options as nodeX509Check's subject and flags.
function checkOptions(options) {
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object') throw invalidArgType('options', 'of type object', options);
  const { subject = 'default', wildcards = true, partialWildcards = true } = options;
  const { multiLabelWildcards = false, singleLabelSubdomains = false } = options;
  if (!SUBJECTS.includes(subject)) throw invalidArgValue('options.subject', subject);
  const flags = (wildcards ? 1 : 0) | (partialWildcards ? 2 : 0) | (multiLabelWildcards ? 4 : 0) | (singleLabelSubdomains ? 8 : 0);
  return [subject, flags];
}

function checkString(value, name) {
  if (typeof value !== 'string') throw invalidArgType(name, 'of type string', value);
}

module.exports = function x509({ createHash, createPublicKey, verify, KeyObject }) {
  // `AB:CD:...`, the digest's bytes in uppercase hex.
  const fingerprint = (algorithm, raw) =>
    createHash(algorithm).update(raw).digest('hex').toUpperCase().match(/../g).join(':');

  class X509Certificate {
    #info;
    #raw;
    #spki;
    #tbs;
    #signature;
    #publicKey;
    #fingerprints = {};

    constructor(buffer) {
      const data = certificateBytes(buffer);
      let parsed;
      try {
        parsed = host.nodeX509Parse(data);
      } catch (error) {
        // A DataError from the parser: Node throws a plain Error.
        throw new Error(error.message);
      }
      [this.#info, this.#raw, this.#spki, this.#tbs, this.#signature] = parsed;
    }

    get subject() { return this.#info.subject; }
    get issuer() { return this.#info.issuer; }
    get subjectAltName() { return this.#info.subjectAltName ?? undefined; }
    get infoAccess() { return this.#info.infoAccess ?? undefined; }
    get validFrom() { return this.#info.validFrom; }
    get validTo() { return this.#info.validTo; }
    get validFromDate() { return new Date(this.#info.validFromMs); }
    get validToDate() { return new Date(this.#info.validToMs); }
    get serialNumber() { return this.#info.serialNumber; }
    get fingerprint() { return (this.#fingerprints.sha1 ??= fingerprint('sha1', this.#raw)); }
    get fingerprint256() { return (this.#fingerprints.sha256 ??= fingerprint('sha256', this.#raw)); }
    get fingerprint512() { return (this.#fingerprints.sha512 ??= fingerprint('sha512', this.#raw)); }
    get ca() { return this.#info.ca; }
    get keyUsage() { return this.#info.keyUsage?.slice() ?? undefined; }
    get issuerCertificate() { return undefined; }
    get raw() { return Buffer.from(this.#raw); }

    get publicKey() {
      this.#publicKey ??= createPublicKey({ key: Buffer.from(this.#spki), format: 'der', type: 'spki' });
      return this.#publicKey;
    }

    checkHost(name, options) {
      checkString(name, 'name');
      const [subject, flags] = checkOptions(options);
      return host.nodeX509Check(this.#raw, 'host', name, subject, flags);
    }

    checkEmail(email, options) {
      checkString(email, 'email');
      const [subject, flags] = checkOptions(options);
      return host.nodeX509Check(this.#raw, 'email', email, subject, flags) ? email : undefined;
    }

    checkIP(ip) {
      checkString(ip, 'ip');
      const matched = host.nodeX509Check(this.#raw, 'ip', ip, 'default', 0);
      if (matched === undefined) throw invalidArgValue('ip', ip);
      return matched ? ip : undefined;
    }

    checkIssued(otherCert) {
      if (!(otherCert instanceof X509Certificate)) throw invalidArgType('otherCert', 'an instance of X509Certificate', otherCert);
      return host.nodeX509Issued(this.#raw, otherCert.#raw);
    }

    checkPrivateKey(pkey) {
      if (!(pkey instanceof KeyObject)) throw invalidArgType('pkey', 'an instance of KeyObject', pkey);
      if (pkey.type !== 'private') throw invalidArgValue('pkey', pkey);
      const spki = createPublicKey(pkey).export({ type: 'spki', format: 'der' });
      return Buffer.from(this.#spki).equals(spki);
    }

    verify(publicKey) {
      if (!(publicKey instanceof KeyObject)) throw invalidArgType('pkey', 'an instance of KeyObject', publicKey);
      if (publicKey.type !== 'public') throw invalidArgValue('pkey', publicKey);
      const { signatureHash, signatureKey } = this.#info;
      if (signatureKey === null || publicKey.asymmetricKeyType !== signatureKey) return false;
      try {
        return verify(signatureHash, this.#tbs, publicKey, this.#signature);
      } catch {
        return false;
      }
    }

    toString() {
      const base64 = Buffer.from(this.#raw).toString('base64');
      const lines = base64.match(/.{1,64}/g) ?? [];
      return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
    }

    toJSON() {
      return this.toString();
    }

    toLegacyObject() {
      throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', 'The X509Certificate.toLegacyObject method is not implemented');
    }
  }
  return { X509Certificate };
};
