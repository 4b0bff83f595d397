// node:crypto's X509Certificate through what Node apps do with certificates:
// jsonwebtoken verifying RS256 tokens with the signer's X.509 certificate
// (as with an identity provider's `x5c`; jsonwebtoken hands the PEM to
// createPublicKey), and a certificate's fields and checks read as a TLS or
// mTLS app reads them. The certificate is self-signed, made with `openssl
// req -x509` for this app; its key signs the tokens.
import { X509Certificate, createPrivateKey } from "node:crypto";
import jwt from "jsonwebtoken";

const KEY = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDPIVpO+t4LWk1w
gF+opcF2VSvEngeXk3Wc4sIgQtoLUbpc9wRjDZwLbqmzU9iXSGJKmEEOzyb8HoI/
fKarIER1kZTpl7vP9y2aEJRPBSunBSsNMUKWCwDIHdbf/hYEfdfC+2O0PAnGugX1
XZ3qpZI2yA/G/oGWn7ahLDET08nDzvxNqHv/m/7EA26fEcoHH9VUbONm7EiSZxvZ
jw6WXxqeoKPs3az0TQz/TKchZ4cdfrCgoioFDTIFPLVIuPVONH7js5I5EgWlALUq
faii0kE4L2A2M8t+99qzxZwlYjVIpUVLNj9pyO5+1kfEteB/hNAN04YnC1gk0jJT
wewnalElAgMBAAECggEABM2jMyhXe6GxILROvHjoALgM6OU5RLyVHsCyifrC5QUx
R58QKWzE7PGcPkiUlz2E68dA/L+YmBCW1Rb0eSk3goisnrKUFta/dKPWOtbiTO5Z
FXSRbZ417N/e7/woNTg8FcYeMDuTTZLojj4XFPVDT2whKKVOtVgoJgw6vyASZ7tU
W6mAmSWQQOAgkBdvp5ZlJApXFYzRhlBzl+BRcjv7D/zRSyhtGtYVUmUPrWXzV4KS
1RqhFHWWE2wfx1vkh/ayW192FePQaM5Gzz7EhLttjHqNuMM58u68ucTJMVCNvN5L
+kt2mLVN7zr4vkiC0firmQdeB65ZcqHuNsKDHQtsKQKBgQD3Uq3uhRfyD0/fQsrs
eZr0s5zt8ZtWqeFPAB5XsIzc68QtivSsLioMuBtEE5blQ7KssDPA1LPZlrMaGMVG
EgSk20+sIsSydt0okznNyYo7KASk42YTsrVq28owDNn/f5xIr+8NBbQ6ieMnmu84
7u0UG/WEQeLIxRfRcFgcYYKjIwKBgQDWZa87d5s1ghDvoxlaXfi4Y89lIzS6IWLt
xadK7LFrQlwUA6pMBmUnprsNEbux9nJrYbesKMAU/vSSoKQow8jlZoadbYlQ55zu
q1zTHBHZYnal89PjAWkDKso5UhIohPCWiocX7079O/S9Wtz3LVVAgY6o2qahGei6
Fe/g147DFwKBgQC5FuEf/e7bsmXd+ciPjLpQoxKwZ/4Or3f0fWw3x+LDepYIV1Og
f7PsbOPK4LYuwak33237w7MNBeDniN4qAFYFYjOP6T03Kgl80iGSRl/ywZIoLB46
Y6WtYOtBZnzG3yOAqlnGbxxgKs0a2LJq8zPttrbY0c383rNihCcMplTz7QKBgBay
aRyoitvdSyGzaImyjRQoLNqOIZTa1/hIBm/eIuIyAkF0KeEmhCrwcbjueapbZr2L
eMBXCA6w9v9W1koif/AZLIMaB4FzI5/4sDkBLbqPu/PRnkrX6WAWdZYf5CA6AqZN
QAP+p6QTZtNs/RuFxxKvJIUnsKA5d/PLQrvQ1iI9AoGAI21LHAuh/ByNSScdVwW3
gKlaCayR/LIc2d/ab9OpOzKltN9qnWxkYvXnX6dTuuTxG64/hkdBzmlLO2h6/XiY
r7Z/v+seyl9LFAZosY4s+k4pnq8SM7R9jfxzj3SFyC7qdDZQCKH9+nVJuh5x2B2p
z3NMfLWXQvwXcsr4vcgSDYA=
-----END PRIVATE KEY-----
`;
const CERT = `-----BEGIN CERTIFICATE-----
MIIDkjCCAnqgAwIBAgICXu0wDQYJKoZIhvcNAQELBQAwPzELMAkGA1UEBhMCR0Ix
FTATBgNVBAoMDENvbXBhdCBTdWl0ZTEZMBcGA1UEAwwQYXV0aC5jb21wYXQudGVz
dDAgFw0yNjExMjQyMTIyNThaGA8yMTI2MTAzMTIxMjI1OFowPzELMAkGA1UEBhMC
R0IxFTATBgNVBAoMDENvbXBhdCBTdWl0ZTEZMBcGA1UEAwwQYXV0aC5jb21wYXQu
dGVzdDCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAM8hWk763gtaTXCA
X6ilwXZVK8SeB5eTdZziwiBC2gtRulz3BGMNnAtuqbNT2JdIYkqYQQ7PJvwegj98
pqsgRHWRlOmXu8/3LZoQlE8FK6cFKw0xQpYLAMgd1t/+FgR918L7Y7Q8Cca6BfVd
neqlkjbID8b+gZaftqEsMRPTycPO/E2oe/+b/sQDbp8Rygcf1VRs42bsSJJnG9mP
DpZfGp6go+zdrPRNDP9MpyFnhx1+sKCiKgUNMgU8tUi49U40fuOzkjkSBaUAtSp9
qKLSQTgvYDYzy3732rPFnCViNUilRUs2P2nI7n7WR8S14H+E0A3ThicLWCTSMlPB
7CdqUSUCAwEAAaOBlTCBkjAdBgNVHQ4EFgQUCHUf3laq580quOODuo47myJskI8w
HwYDVR0jBBgwFoAUCHUf3laq580quOODuo47myJskI8wDwYDVR0TAQH/BAUwAwEB
/zAqBgNVHREEIzAhghBhdXRoLmNvbXBhdC50ZXN0gg0qLmNvbXBhdC50ZXN0MBMG
A1UdJQQMMAoGCCsGAQUFBwMBMA0GCSqGSIb3DQEBCwUAA4IBAQC2bIHyfjiuWqa/
tnX0l1Xa/0nX9g8sc3MYhtJ52gQ+Taclk7IeDnxCF+YqoLYiP8eoqT+UoFuy+S5G
K5Fado/WUIVwWaKUT8ev/lFrVJVDBBgr0MKDxIoy93QZtBnIoDYID9IiRin0UZYz
Iun4ggtE21YWObqr41iajBI0hCw4eIxjPdHI74YmFZfonuvutIFcVhG5h/0TTotI
L8cxRaQw/sScUEJlFboGE5IBoZ291zCiZPk35x5RPKeROms2Z10pMIrcwUDmibkH
Tqyvrod7GN0GNWCGPZe30wIK1dCvNoH3kq8MsX6XDaY/o883lldcC0WGQUU52K9g
oaBMD279
-----END CERTIFICATE-----
`;

const claims = { sub: "user-7", scope: "read", exp: 4102444800, iss: "auth.compat.test" };

function verify(token) {
  try {
    return Response.json({ ok: true, payload: jwt.verify(token, CERT, { algorithms: ["RS256"], issuer: "auth.compat.test" }) });
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
        return new Response(jwt.sign(claims, createPrivateKey(KEY), { algorithm: "RS256", noTimestamp: true, keyid: "x5c-1" }));
      case "/verify":
        return verify(bearer);
      case "/tampered":
        return verify(bearer.slice(0, -2) + (bearer.endsWith("AA") ? "BB" : "AA"));
      case "/certificate": {
        const x = new X509Certificate(CERT);
        return Response.json({
          subject: x.subject,
          issuer: x.issuer,
          subjectAltName: x.subjectAltName,
          validFrom: x.validFrom,
          validTo: x.validTo,
          serialNumber: x.serialNumber,
          fingerprint256: x.fingerprint256,
          ca: x.ca,
          keyUsage: x.keyUsage,
          publicKey: [x.publicKey.type, x.publicKey.asymmetricKeyType, x.publicKey.asymmetricKeyDetails.modulusLength],
          selfSigned: [x.verify(x.publicKey), x.checkIssued(x)],
          hosts: ["auth.compat.test", "api.compat.test", "a.b.compat.test", "compat.test"].map((h) => x.checkHost(h) ?? null),
          pemRoundTrip: new X509Certificate(x.raw).toString() === x.toString(),
        });
      }
      case "/own-key": {
        const x = new X509Certificate(CERT);
        return Response.json({ own: x.checkPrivateKey(createPrivateKey(KEY)) });
      }
      default:
        return new Response("not found", { status: 404 });
    }
  },
};
