// JSON Web Tokens as Workers apps use them: hono/jwt (sign, verify and its
// middleware), jose (JWS and JWE) and @tsndr/cloudflare-worker-jwt, with
// HS256, RS256, PS256, ES256 and EdDSA. Tokens minted here are verified by
// the other runtime in the suite (the {{other:…}} requests), both ways.
import { Hono } from "hono";
import { jwt, sign as honoSign, verify as honoVerify } from "hono/jwt";
import { HTTPException } from "hono/http-exception";
import * as jose from "jose";
import tsndr from "@tsndr/cloudflare-worker-jwt";
import { keys, hmacSecret } from "../lib/keys.mjs";

// Fixed claims (iat/exp fixed) so deterministic algorithms mint identical tokens.
const claims = { sub: "user-42", role: "admin", iat: 1767225600, exp: 4102444800 };
const hmacKey = new TextEncoder().encode(hmacSecret);

const joseKeys = {
  HS256: async () => ({ sign: hmacKey, verify: hmacKey }),
  RS256: async () => ({ sign: await jose.importJWK(keys.rsa.private, "RS256"), verify: await jose.importJWK(keys.rsa.public, "RS256") }),
  PS256: async () => ({ sign: await jose.importJWK(keys.rsa.private, "PS256"), verify: await jose.importJWK(keys.rsa.public, "PS256") }),
  ES256: async () => ({ sign: await jose.importJWK(keys.ec.private, "ES256"), verify: await jose.importJWK(keys.ec.public, "ES256") }),
  EdDSA: async () => ({ sign: await jose.importJWK(keys.ed.private, "EdDSA"), verify: await jose.importJWK(keys.ed.public, "EdDSA") }),
};
const honoKeys = {
  HS256: { sign: hmacSecret, verify: hmacSecret },
  RS256: { sign: keys.rsa.private, verify: keys.rsa.public },
  ES256: { sign: keys.ec.private, verify: keys.ec.public },
  EdDSA: { sign: keys.ed.private, verify: keys.ed.public },
};
const tsndrKeys = {
  HS256: { sign: hmacSecret, verify: hmacSecret },
  RS256: { sign: keys.rsa.private, verify: keys.rsa.public },
  ES256: { sign: keys.ec.private, verify: keys.ec.public },
};

const bearer = (c) => (c.req.header("authorization") ?? "").replace(/^Bearer /, "");
const rejected = (c, e) => c.json({ valid: false, error: e?.name ?? "Error" }, 401);

const app = new Hono();
app.get("/", (c) => c.text("jwt"));

app.get("/mint/hono/:alg", async (c) => {
  const alg = c.req.param("alg");
  return c.text(await honoSign(claims, honoKeys[alg].sign, alg));
});
app.get("/verify/hono/:alg", async (c) => {
  const alg = c.req.param("alg");
  try {
    return c.json({ valid: true, payload: await honoVerify(bearer(c), honoKeys[alg].verify, alg) });
  } catch (e) {
    return rejected(c, e);
  }
});
app.use("/protected/*", jwt({ secret: hmacSecret, alg: "HS256" }));
app.get("/protected/me", (c) => c.json({ me: c.get("jwtPayload").sub }));

app.get("/mint/jose/:alg", async (c) => {
  const alg = c.req.param("alg");
  const { sign } = await joseKeys[alg]();
  return c.text(await new jose.SignJWT(claims).setProtectedHeader({ alg, typ: "JWT" }).sign(sign));
});
app.get("/verify/jose/:alg", async (c) => {
  const alg = c.req.param("alg");
  const { verify } = await joseKeys[alg]();
  try {
    const { payload, protectedHeader } = await jose.jwtVerify(bearer(c), verify, { algorithms: [alg] });
    return c.json({ valid: true, payload, protectedHeader });
  } catch (e) {
    return rejected(c, e);
  }
});
app.get("/jwe/encrypt", async (c) => {
  const key = jose.base64url.decode("q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80");
  return c.text(await new jose.EncryptJWT(claims).setProtectedHeader({ alg: "dir", enc: "A256GCM" }).encrypt(key));
});
app.get("/jwe/decrypt", async (c) => {
  const key = jose.base64url.decode("q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80");
  try {
    const { payload } = await jose.jwtDecrypt(bearer(c), key);
    return c.json({ valid: true, payload });
  } catch (e) {
    return rejected(c, e);
  }
});
app.get("/jwks/thumbprint", async (c) => c.json({ rsa: await jose.calculateJwkThumbprint(keys.rsa.public), ed: await jose.calculateJwkThumbprint(keys.ed.public) }));

app.get("/mint/tsndr/:alg", async (c) => {
  const alg = c.req.param("alg");
  return c.text(await tsndr.sign(claims, tsndrKeys[alg].sign, { algorithm: alg }));
});
app.get("/verify/tsndr/:alg", async (c) => {
  const alg = c.req.param("alg");
  try {
    const decoded = await tsndr.verify(bearer(c), tsndrKeys[alg].verify, { algorithm: alg, throwError: true });
    return c.json({ valid: true, payload: decoded.payload });
  } catch (e) {
    return rejected(c, e);
  }
});

app.onError((err, c) => (err instanceof HTTPException ? err.getResponse() : c.json({ error: err.name, message: err.message }, 500)));
export default app;
