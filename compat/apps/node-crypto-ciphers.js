// node:crypto as Node code uses it: AES-GCM/CBC/CTR round trips with fixed
// keys and IVs (so the ciphertexts are comparable), the other modes, 3DES and
// ChaCha20-Poly1305, what update() answers when fed in pieces, ciphers without
// padding and as streams, encrypted private keys, finite-field
// Diffie-Hellman, hashes, HMAC, key derivation, random bytes and
// constant-time comparison.
import crypto from "node:crypto";
import { Buffer } from "node:buffer";

const key256 = Buffer.alloc(32, 7);
const key128 = Buffer.from("000102030405060708090a0b0c0d0e0f", "hex");
const iv12 = Buffer.alloc(12, 1);
const iv16 = Buffer.alloc(16, 2);

function gcm(text) {
  const cipher = crypto.createCipheriv("aes-256-gcm", key256, iv12);
  cipher.setAAD(Buffer.from("header"));
  const sealed = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  const decipher = crypto.createDecipheriv("aes-256-gcm", key256, iv12);
  decipher.setAAD(Buffer.from("header"));
  decipher.setAuthTag(tag);
  const opened = Buffer.concat([decipher.update(sealed), decipher.final()]).toString("utf8");
  let forged;
  try {
    const bad = crypto.createDecipheriv("aes-256-gcm", key256, iv12);
    bad.setAAD(Buffer.from("header"));
    bad.setAuthTag(Buffer.alloc(16));
    Buffer.concat([bad.update(sealed), bad.final()]);
    forged = "accepted";
  } catch (error) {
    forged = "refused";
  }
  return { sealed: sealed.toString("hex"), tag: tag.toString("hex"), opened, forged };
}

function cbc(algorithm, key, text) {
  try {
    return roundTrip(algorithm, key, text);
  } catch (error) {
    return { error: `${error.name}: ${error.message}` };
  }
}

function roundTrip(algorithm, key, text) {
  const cipher = crypto.createCipheriv(algorithm, key, iv16);
  const sealed = Buffer.concat([cipher.update(Buffer.from(text)), cipher.final()]);
  const decipher = crypto.createDecipheriv(algorithm, key, iv16);
  const opened = Buffer.concat([decipher.update(sealed), decipher.final()]).toString("utf8");
  return { sealed: sealed.toString("base64"), opened };
}

const key = (n) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + 3) & 255));
const iv = (n) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 13 + 1) & 255));

// Each cipher's output, and the sizes update() answers for uneven pieces
// (encrypting, then decrypting), and whether decryption gives the text back.
function modes(text) {
  const data = Buffer.from(text);
  const out = {};
  const ciphers = [
    ["aes-128-ecb", 16, 0], ["aes-256-ecb", 32, 0], ["aes-128-ofb", 16, 16], ["aes-192-ofb", 24, 16], ["aes-256-ofb", 32, 16],
    ["aes-192-cbc", 24, 16], ["aes-256-ctr", 32, 16], ["des-ede3-cbc", 24, 8], ["des-ede-cbc", 16, 8],
    ["des-ede", 16, 0], ["des-cbc", 8, 8], ["des-ecb", 8, 0],
  ];
  for (const [name, k, v] of ciphers) {
    try {
      const c = crypto.createCipheriv(name, key(k), v ? iv(v) : null);
      const sizes = [];
      const parts = [];
      let at = 0;
      for (const n of [3, 13, 16, 1, 30, 1000]) {
        const piece = c.update(data.subarray(at, at + n));
        at += n;
        sizes.push(piece.length);
        parts.push(piece);
      }
      parts.push(c.final());
      const sealed = Buffer.concat(parts);
      const d = crypto.createDecipheriv(name, key(k), v ? iv(v) : null);
      const first = d.update(sealed.subarray(0, 20));
      const opened = Buffer.concat([first, d.update(sealed.subarray(20)), d.final()]).toString();
      out[name] = { sealed: sealed.toString("hex"), sizes: sizes.join(","), first: first.length, same: opened === text };
    } catch (error) {
      out[name] = { error: `${error.name}: ${error.message}` };
    }
  }
  return out;
}

function aead(text) {
  const data = Buffer.from(text);
  const out = {};
  for (const [name, k] of [["chacha20-poly1305", 32], ["aes-128-gcm", 16], ["aes-192-gcm", 24]]) {
    const c = crypto.createCipheriv(name, key(k), iv(12), { authTagLength: 16 });
    c.setAAD(Buffer.from("header"), { plaintextLength: data.length });
    // workerd's ChaCha20-Poly1305 takes one update() (Node's takes many).
    const split = name.startsWith("chacha") ? data.length : 7;
    const head = c.update(data.subarray(0, split));
    const sealed = Buffer.concat([head, split < data.length ? c.update(data.subarray(split)) : Buffer.alloc(0), c.final()]);
    const tag = c.getAuthTag();
    const d = crypto.createDecipheriv(name, key(k), iv(12), { authTagLength: 16 });
    d.setAAD(Buffer.from("header"), { plaintextLength: data.length });
    d.setAuthTag(tag);
    const opened = Buffer.concat([d.update(sealed), d.final()]).toString();
    let forged;
    try {
      const bad = crypto.createDecipheriv(name, key(k), iv(12), { authTagLength: 16 });
      bad.setAuthTag(Buffer.alloc(16));
      bad.update(sealed);
      bad.final();
      forged = "accepted";
    } catch (error) {
      forged = "refused";
    }
    out[name] = { sealed: sealed.toString("hex"), tag: tag.toString("hex"), head: head.length, same: opened === text, forged };
  }
  return out;
}

// setAutoPadding(false): whole blocks go through as they are; a partial one
// is refused at final().
function noPadding() {
  const c = crypto.createCipheriv("aes-256-cbc", key(32), iv(16));
  c.setAutoPadding(false);
  const sealed = Buffer.concat([c.update(Buffer.from("0123456789abcdef0123")), c.update(Buffer.from("456789abcdef")), c.final()]);
  const d = crypto.createDecipheriv("aes-256-cbc", key(32), iv(16));
  d.setAutoPadding(false);
  const opened = Buffer.concat([d.update(sealed), d.final()]).toString();
  let partial;
  try {
    const p = crypto.createCipheriv("aes-128-ecb", key(16), null);
    p.setAutoPadding(false);
    p.update(Buffer.from("seventeen bytes!!"));
    p.final();
    partial = "accepted";
  } catch (error) {
    partial = "refused";
  }
  return { sealed: sealed.toString("hex"), opened, partial };
}

// A cipher as a stream: the body piped through and collected.
async function streamed(body) {
  const { Readable } = await import("node:stream");
  const collect = async (stream) => {
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    return Buffer.concat(chunks);
  };
  const source = Readable.from([body.subarray(0, 5), body.subarray(5)]);
  const sealed = await collect(source.pipe(crypto.createCipheriv("aes-256-cbc", key(32), iv(16))));
  const opened = await collect(Readable.from([sealed]).pipe(crypto.createDecipheriv("aes-256-cbc", key(32), iv(16))));
  return { sealed: sealed.toString("base64"), same: opened.equals(body) };
}

// An EC key Node encrypted (PBES2: PBKDF2-HMAC-SHA256, AES-256-CBC).
const ENCRYPTED_KEY = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAjT6E7btl96CAICCAAw\nDAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEDrP6RDpNZOtFxwOz36D2ZsEgZBI\nY00ipJBSQJ0ObcfgRHTwRw3ced43VttOJ3BoqNL3DZqbR8Swq5nlat/hNlqKcTIC\nl3ckeMAhnRk4R1IZxqAvgCcNlAPUv+Ciikict87IdtVdTAMZSkB8QH7PLDMO87i9\nRWlFnP3gLEEmm0qlW/Sst1/djoaU5QSPMQUu+crh5VYFDp0CYEgPYhj7kyP/YMo=\n-----END ENCRYPTED PRIVATE KEY-----\n";

// Reads the encrypted key with its passphrase and a wrong one, and writes
// and reads back one of its own.
function keys() {
  const key = crypto.createPrivateKey({ key: ENCRYPTED_KEY, passphrase: "correct horse" });
  let wrong;
  try {
    crypto.createPrivateKey({ key: ENCRYPTED_KEY, passphrase: "wrong horse" });
    wrong = "accepted";
  } catch (error) {
    wrong = "refused";
  }
  const pem = key.export({ format: "pem", type: "pkcs8", cipher: "aes-128-cbc", passphrase: "again" });
  const back = crypto.createPrivateKey({ key: pem, passphrase: "again" });
  return { type: key.asymmetricKeyType, d: key.export({ format: "jwk" }).d, wrong, label: pem.split("\n")[0], same: back.equals(key) };
}

// Finite-field Diffie-Hellman over RFC 3526's 2048-bit group with fixed
// private keys: the public keys and the secret.
function dh() {
  const prime = crypto.getDiffieHellman("modp14").getPrime();
  const a = crypto.createDiffieHellman(prime, 2);
  a.setPrivateKey(Buffer.from("0123456789abcdef0123456789abcdef", "hex"));
  const b = crypto.createDiffieHellman(prime.toString("hex"), "hex", Buffer.from([2]));
  b.setPrivateKey(Buffer.from("fedcba9876543210fedcba9876543210", "hex"));
  const aPublic = a.generateKeys("hex");
  const bPublic = b.generateKeys();
  const secret = a.computeSecret(bPublic, undefined, "hex");
  return { aPublic, bPublic: bPublic.toString("base64"), secret, agree: secret === b.computeSecret(aPublic, "hex", "hex"), group: crypto.getDiffieHellman("modp15").getPrime().length };
}

function hashes(text) {
  const out = {};
  for (const name of ["md5", "sha1", "sha256", "sha384", "sha512"]) {
    out[name] = crypto.createHash(name).update(text).digest("hex");
  }
  out.base64 = crypto.createHash("sha256").update(Buffer.from(text)).digest("base64");
  out.chunked = crypto.createHash("sha256").update(text.slice(0, 3)).update(text.slice(3)).digest("hex");
  out.hmac = crypto.createHmac("sha256", "key").update(text).digest("hex");
  out.hmac512 = crypto.createHmac("sha512", Buffer.from("key")).update(text).digest("base64url");
  return out;
}

function derive() {
  return {
    pbkdf2: crypto.pbkdf2Sync("password", "salt", 1000, 32, "sha256").toString("hex"),
    scrypt: crypto.scryptSync("password", "salt", 32, { N: 1024 }).toString("hex"),
    hkdf: Buffer.from(crypto.hkdfSync("sha256", "key", "salt", "info", 32)).toString("hex"),
  };
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const text = url.searchParams.get("text") ?? "The quick brown fox jumps over the lazy dog";
    switch (url.pathname) {
      case "/gcm":
        return Response.json(gcm(text));
      case "/cbc":
        return Response.json({ cbc256: cbc("aes-256-cbc", key256, text), cbc128: cbc("aes-128-cbc", key128, text), ctr: cbc("aes-128-ctr", key128, text) });
      case "/modes":
        return Response.json(modes(text));
      case "/aead":
        return Response.json(aead(text));
      case "/no-padding":
        return Response.json(noPadding());
      case "/stream": {
        const body = Buffer.from(await request.arrayBuffer());
        return Response.json(await streamed(body));
      }
      case "/keys":
        return Response.json(keys());
      case "/dh":
        return Response.json(dh());
      case "/hashes":
        return Response.json(hashes(text));
      case "/derive":
        return Response.json(derive());
      case "/random": {
        const a = crypto.randomBytes(16);
        const n = crypto.randomInt(10, 20);
        return Response.json({
          bytes: a.length,
          uuid: /^[0-9a-f-]{36}$/.test(crypto.randomUUID()),
          int: n >= 10 && n < 20,
          equal: crypto.timingSafeEqual(a, Buffer.from(a)),
          differ: crypto.timingSafeEqual(Buffer.from("abc"), Buffer.from("abd")),
        });
      }
      case "/post": {
        const body = Buffer.from(await request.arrayBuffer());
        return Response.json({ length: body.length, sha256: crypto.createHash("sha256").update(body).digest("hex"), gcm: gcm(body.toString("utf8")).sealed });
      }
      default:
        return new Response("not found", { status: 404 });
    }
  },
};
