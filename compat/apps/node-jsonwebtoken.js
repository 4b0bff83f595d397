// jsonwebtoken (the npm package Node apps use, CommonJS over node:crypto,
// node:buffer, node:util and node:stream through jws/jwa): HMAC, and RS256
// and ES256 over node:crypto's KeyObjects, createSign and createVerify.
// (PS256 signs on Isolane; workerd's createSign refuses jwa's key options
// object with a KeyObject, so it cannot be compared.)
// Tokens carry no clock-dependent `iat`, so both runtimes mint the same bytes
// for the deterministic algorithms (HS*, RS256); each verifies the other's.
import { createPrivateKey, createPublicKey } from "node:crypto";
import jwt from "jsonwebtoken";
import { keys } from "../lib/keys.mjs";

const rsa = createPrivateKey({ key: keys.rsa.private, format: "jwk" });
const rsaPublic = createPublicKey(rsa);
const ec = createPrivateKey({ key: keys.ec.private, format: "jwk" });
const ecPublic = createPublicKey(ec);

function verifyWith(token, key, algorithm) {
  try {
    return Response.json({ ok: true, payload: jwt.verify(token, key, { algorithms: [algorithm] }) });
  } catch (error) {
    return Response.json({ ok: false, name: error.name, message: error.message }, { status: 401 });
  }
}

const SECRET = "compat-suite-secret";
const claims = { sub: "user-42", role: "admin", exp: 4102444800, aud: "compat", iss: "isolane" };

function verify(token, options) {
  try {
    const payload = jwt.verify(token, SECRET, { algorithms: ["HS256"], ...options });
    return Response.json({ ok: true, payload });
  } catch (error) {
    return Response.json({ ok: false, name: error.name, message: error.message }, { status: 401 });
  }
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const bearer = (request.headers.get("authorization") ?? "").replace(/^Bearer /, "");
    switch (url.pathname) {
      case "/mint":
        return new Response(jwt.sign(claims, SECRET, { noTimestamp: true, keyid: "k1" }));
      case "/mint-buffer-secret":
        return new Response(jwt.sign({ n: 1 }, Buffer.from(SECRET), { noTimestamp: true, algorithm: "HS512" }));
      case "/verify":
        return verify(bearer, { audience: "compat", issuer: "isolane" });
      case "/verify-wrong-audience":
        return verify(bearer, { audience: "other" });
      case "/expired":
        return verify(jwt.sign({ exp: 1000 }, SECRET, { noTimestamp: true }));
      case "/tampered":
        return verify(bearer.slice(0, -2) + (bearer.endsWith("AA") ? "BB" : "AA"));
      case "/none":
        return verify(jwt.sign({ a: 1 }, null, { algorithm: "none", noTimestamp: true }));
      case "/mint-rs256":
        return new Response(jwt.sign(claims, rsa, { algorithm: "RS256", noTimestamp: true, keyid: "r1" }));
      case "/mint-es256":
        return new Response(jwt.sign(claims, ec, { algorithm: "ES256", noTimestamp: true }));
      case "/verify-rs256":
        return verifyWith(bearer, rsaPublic, "RS256");
      case "/verify-es256":
        return verifyWith(bearer, ecPublic, "ES256");
      case "/decode":
        return Response.json(jwt.decode(bearer, { complete: true }));
      case "/callback":
        return new Promise((resolve) =>
          jwt.sign({ cb: true }, SECRET, { noTimestamp: true, expiresIn: "1h" }, (error, token) =>
            jwt.verify(token, SECRET, (e, payload) =>
              resolve(Response.json({ error: error ?? e ?? null, cb: payload?.cb, ttl: payload.exp - Math.floor(Date.now() / 1000) > 3500 })),
            ),
          ),
        );
      default:
        return new Response("not found", { status: 404 });
    }
  },
};
