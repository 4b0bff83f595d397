// node:crypto as Node code uses it: AES-GCM/CBC/CTR round trips with fixed
// keys and IVs (so the ciphertexts are comparable), hashes, HMAC, key
// derivation, random bytes and constant-time comparison.
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
