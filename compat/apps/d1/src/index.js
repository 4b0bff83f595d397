// Every method of the D1 API, and its errors, as one JSON answer per route
// (cli/tests/dev_d1.rs compares them with wrangler dev's). Drizzle ORM on
// D1 is compat/apps/drizzle.

// What `promise` gave, or the error it threw as {error, name}.
async function outcome(promise) {
  try {
    return await promise;
  } catch (e) {
    return { error: String(e && e.message), name: e && e.name, cause: e && e.cause ? String(e.cause.message) : undefined };
  }
}

function sync(fn) {
  try {
    return fn();
  } catch (e) {
    return { error: String(e && e.message), name: e && e.name };
  }
}

async function probe(db) {
  const out = {};
  out.reset = await outcome(db.exec('DROP TABLE IF EXISTS users;\nDROP TABLE IF EXISTS notes;'));
  out.exec = await outcome(db.exec(
    'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, score REAL, data BLOB, flag INTEGER);\n' +
    'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);'));
  const insert = db.prepare('INSERT INTO users (name, score, data, flag) VALUES (?1, ?2, ?3, ?4)');
  out.run = await outcome(insert.bind('ann', 1.5, new Uint8Array([1, 2, 3]), true).run());
  out.runBuffer = await outcome(insert.bind('bob', 2, new Uint8Array([9, 8]).buffer, false).run());
  out.runNull = await outcome(insert.bind('cy', null, null, null).run());
  out.all = await outcome(db.prepare('SELECT * FROM users ORDER BY id').all());
  out.typeofs = await outcome(db.prepare('SELECT typeof(score) AS s, typeof(data) AS d, typeof(flag) AS f FROM users ORDER BY id').all());
  out.first = await outcome(db.prepare('SELECT name, score FROM users WHERE id = ?').bind(2).first());
  out.firstColumn = await outcome(db.prepare('SELECT name, score FROM users WHERE id = ?').bind(1).first('name'));
  out.firstNone = await outcome(db.prepare('SELECT name FROM users WHERE id = 99').first());
  out.firstNoneColumn = await outcome(db.prepare('SELECT name FROM users WHERE id = 99').first('name'));
  out.firstMissingColumn = await outcome(db.prepare('SELECT name FROM users WHERE id = 1').first('nope'));
  out.raw = await outcome(db.prepare('SELECT id, name FROM users ORDER BY id').raw());
  out.rawNames = await outcome(db.prepare('SELECT id, name FROM users ORDER BY id').raw({ columnNames: true }));
  out.rawEmptyNames = await outcome(db.prepare('SELECT id, name FROM users WHERE id > 99').raw({ columnNames: true }));
  out.update = await outcome(db.prepare('UPDATE users SET score = score + 1').run());
  out.batch = await outcome(db.batch([
    db.prepare('INSERT INTO notes (body) VALUES (?)').bind('one'),
    db.prepare('INSERT INTO notes (body) VALUES (?)').bind('two'),
    db.prepare('SELECT count(*) AS n FROM notes'),
  ]));
  out.batchFails = await outcome(db.batch([
    db.prepare('INSERT INTO notes (body) VALUES (?)').bind('three'),
    db.prepare('INSERT INTO users (name) VALUES (?)').bind('ann'),
  ]));
  out.afterFailedBatch = await outcome(db.prepare('SELECT count(*) AS n FROM notes').first('n'));
  out.noTable = await outcome(db.prepare('SELECT * FROM nowhere').all());
  out.syntax = await outcome(db.prepare('SELEC 1').run());
  out.notNull = await outcome(db.prepare('INSERT INTO users (name) VALUES (NULL)').run());
  out.execError = await outcome(db.exec('SELECT * FROM nowhere'));
  out.begin = await outcome(db.prepare('BEGIN TRANSACTION').run());
  out.bindUndefined = sync(() => db.prepare('SELECT ?').bind(undefined));
  out.bindObject = sync(() => db.prepare('SELECT ?').bind({ a: 1 }));
  out.bindTooMany = await outcome(db.prepare('SELECT ?').bind(1, 2).all());
  out.bigStatement = await outcome(db.prepare(`SELECT '${'x'.repeat(100_001)}' AS big`).first('big').then((v) => v.length));
  out.bigValue = await outcome(db.prepare('SELECT length(?) AS n').bind('y'.repeat(2_000_001)).first('n'));
  out.bigRow = await outcome(db.prepare('SELECT length(zeroblob(2000001)) AS n').first('n'));
  const session = db.withSession();
  out.sessionFirst = await outcome(session.prepare('SELECT count(*) AS n FROM users').first());
  out.sessionBatch = await outcome(session.batch([session.prepare('SELECT 1 AS one')]));
  out.bookmarkType = typeof session.getBookmark();
  out.sessionFirstPrimary = await outcome(db.withSession('first-primary').prepare('SELECT 2 AS two').first('two'));
  return out;
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    switch (url.pathname) {
      case '/probe':
        return Response.json(await probe(env.DB));
      case '/put': {
        await env.DB.exec('CREATE TABLE IF NOT EXISTS kept (k TEXT PRIMARY KEY, v TEXT)');
        const meta = await env.DB.prepare('INSERT OR REPLACE INTO kept VALUES (?, ?)').bind(url.searchParams.get('k'), url.searchParams.get('v')).run();
        return Response.json(meta.success);
      }
      case '/get': {
        const row = await outcome(env.DB.prepare('SELECT v FROM kept WHERE k = ?').bind(url.searchParams.get('k')).first('v'));
        return Response.json(row);
      }
      case '/loop':
        return Response.json(await outcome(env.DB.prepare('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c').first()));
      default:
        return new Response('hello');
    }
  },
};
