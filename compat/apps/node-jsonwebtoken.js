// jsonwebtoken (the npm package Node apps use, CommonJS over node:crypto,
// node:buffer, node:util and node:stream through jws/jwa), HS256 only: its
// RS256 needs node:crypto's createSign/createPrivateKey, which Isolane lacks
// today (issue 30). Tokens carry no clock-dependent `iat`, so both runtimes
// mint the same bytes; each verifies the other's.
import jwt from "jsonwebtoken";

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
