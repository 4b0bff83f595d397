// The real `pg` client (node-postgres) in a Worker: on workerd and Isolane
// it finds `navigator.userAgent === "Cloudflare-Workers"` and connects
// through pg-cloudflare, i.e. `connect()` from cloudflare:sockets (imported
// with `import()`). `?db=` names the database (cli/tests/dev_pg.rs starts
// one). `?ssl=require` asks for TLS through STARTTLS with `sslmode=require`
// in the connection string; a POST's body is a CA certificate (PEM), given
// as `ssl: { ca }` (the runtime's trusted roots decide either way: Workers'
// `startTls()` takes no CA). Answers what a few queries returned, as JSON;
// 502 with the reason when the connection cannot be made.
import pg from "pg";
import { Buffer } from "node:buffer";

export default {
  async fetch(request) {
    const params = new URL(request.url).searchParams;
    const db = new URL(params.get("db"));
    if (params.get("ssl")) db.searchParams.set("sslmode", params.get("ssl"));
    const options = { connectionString: db.href };
    if (request.method === "POST") options.ssl = { ca: await request.text() };
    const client = new pg.Client(options);
    try {
      await client.connect();
    } catch (e) {
      // Refused (the TLS handshake, say): 502 with the reason.
      return new Response(`connect failed: ${e?.message ?? e}`, { status: 502 });
    }
    try {
      const first = await client.query("select 1 + 1 as two, $1::text as echo, version() like $2 as postgres", [
        "hi",
        "PostgreSQL%",
      ]);
      await client.query("create temp table t (id int primary key, name text)");
      await client.query("insert into t values ($1, $2), ($3, $4)", [1, "one", 2, "two"]);
      const names = await client.query("select name from t order by id");
      let failed;
      try {
        await client.query("select * from missing_table");
      } catch (e) {
        failed = `${e.code} ${e.message}`;
      }
      const bytes = await client.query("select $1::bytea as bytes", [Buffer.from([1, 2, 3])]);
      const big = await client.query("select repeat('x', 200000) as text");
      const tls = await client.query("select ssl from pg_stat_ssl where pid = pg_backend_pid()");
      return Response.json({
        row: first.rows[0],
        names: names.rows.map((r) => r.name),
        failed,
        bytes: [...bytes.rows[0].bytes],
        big: big.rows[0].text.length,
        tls: tls.rows[0].ssl,
      });
    } finally {
      await client.end();
    }
  },
};
