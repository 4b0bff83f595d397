// Drizzle ORM's D1 driver on env.DB and its Durable Object driver on a
// SQLite-backed object run the same queries; each route answers one JSON
// (cli/tests/dev_drizzle.rs compares them with wrangler dev's).
import { DurableObject } from 'cloudflare:workers';
import { count, eq, sql, sum } from 'drizzle-orm';
import { drizzle as onD1 } from 'drizzle-orm/d1';
import { drizzle as onObject } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import migrations from '../drizzle/migrations.js';
import * as schema from './schema.js';

const { authors, posts, settings } = schema;

// What `run` gave, or the error it threw with its cause's.
async function outcome(run) {
  try {
    return await run();
  } catch (e) {
    const shape = (e) => e && { name: e.name, type: e.constructor && e.constructor.name, message: String(e.message) };
    return { error: shape(e), cause: shape(e.cause) };
  }
}

const likesBy = (db) =>
  db.select({ likes: sum(posts.likes) }).from(posts).get();

// Writes the rows, then reads them every way; `atomically` runs its
// statements as one unit (D1's batch, the object's transaction).
async function write(db, atomically, transaction) {
  const out = {};
  out.authors = await db.insert(authors).values([
    { name: 'Ada', email: 'ada@example.com' },
    { name: 'Brian', email: 'brian@example.com' },
    { name: 'Cy', email: 'cy@example.com' },
  ]).returning();
  out.posts = await db.insert(posts).values([
    { authorId: 1, title: 'Engines', likes: 3, tag: 'history' },
    { authorId: 1, title: 'Notes', likes: 5 },
    { authorId: 2, title: 'Unix', likes: 7, tag: 'history' },
  ]).returning({ id: posts.id, title: posts.title, likes: posts.likes });
  out.atomic = await outcome(() => atomically([
    db.update(posts).set({ likes: sql`${posts.likes} + 10` }).where(eq(posts.authorId, 1)).returning({ id: posts.id, likes: posts.likes }),
    db.insert(posts).values({ authorId: 2, title: 'Draft', tag: 'draft' }).returning({ id: posts.id, likes: posts.likes }),
  ]));
  const before = await likesBy(db);
  out.duplicate = await outcome(() => db.insert(authors).values({ name: 'Ada again', email: 'ada@example.com' }));
  out.atomicFails = await outcome(() => atomically([
    db.update(posts).set({ likes: 1000 }),
    db.insert(authors).values({ name: 'Brian again', email: 'brian@example.com' }),
  ]));
  out.orphan = await outcome(() => db.insert(posts).values({ authorId: 99, title: 'Orphan' }));
  out.negative = await outcome(() => db.update(posts).set({ likes: -1 }).where(eq(posts.id, 1)));
  out.likesKept = [before, await likesBy(db)];
  out.transaction = await outcome(() => transaction(db));
  out.deleted = await db.delete(posts).where(eq(posts.tag, 'draft')).returning({ id: posts.id, title: posts.title });
  out.upsert = await db.insert(authors).values({ name: 'Ada L.', email: 'ada@example.com' })
    .onConflictDoUpdate({ target: authors.email, set: { name: sql`excluded.name` } }).returning();
  out.settings = await db.insert(settings).values([
    { authorId: 1, prefs: { theme: 'dark', langs: ['en', 'fr'] }, public: true, since: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)) },
    { authorId: 2, prefs: { theme: 'light' }, since: new Date(Date.UTC(2025, 5, 6)) },
  ]).returning();
  const byId = db.select().from(authors).where(eq(authors.id, sql.placeholder('id'))).prepare();
  out.prepared = [await byId.get({ id: 2 }), await byId.all({ id: 9 })];
  out.renamed = await db.update(authors).set({ name: 'Cyril' }).where(eq(authors.email, 'cy@example.com')).returning();
  return { ...out, ...(await read(db)) };
}

async function read(db) {
  const out = {};
  out.join = await db.select({ author: authors.name, title: posts.title, likes: posts.likes, tag: posts.tag })
    .from(posts).innerJoin(authors, eq(posts.authorId, authors.id)).orderBy(posts.id);
  out.aggregate = await db.select({ author: authors.name, posts: count(posts.id), likes: sum(posts.likes) })
    .from(authors).leftJoin(posts, eq(posts.authorId, authors.id)).groupBy(authors.id).orderBy(authors.name);
  out.relational = await db.query.authors.findMany({
    columns: { email: false },
    with: { posts: { columns: { title: true, likes: true }, orderBy: (p, { desc }) => [desc(p.likes)] } },
    orderBy: (a, { asc }) => [asc(a.id)],
  });
  out.count = await db.$count(posts, eq(posts.authorId, 1));
  out.withSettings = await db.query.authors.findMany({
    columns: { name: true },
    with: { settings: true },
    where: (a, { lt }) => lt(a.id, 3),
    orderBy: (a, { desc }) => [desc(a.id)],
  });
  out.first = await db.query.posts.findFirst({ where: (p, { eq }) => eq(p.title, 'Unix'), with: { author: true } });
  out.values = await db.values(sql`SELECT ${authors.email}, ${authors.id}, ${authors.name} FROM ${authors} ORDER BY ${authors.id} DESC`);
  out.one = await db.get(sql`SELECT count(*) AS n, max(${posts.likes}) AS top FROM ${posts}`);
  out.numbers = await db.get(sql`SELECT 9007199254740993 AS big, -0.0 AS negativeZero, 1e308 * 10 AS inf, 7 / 2 AS div, typeof(${posts.likes} / 2.0) AS t FROM ${posts} LIMIT 1`);
  // Not the servers' own tables (workerd's _cf_*, miniflare's __miniflare_do_name).
  out.tables = await db.all(sql`SELECT name FROM sqlite_master WHERE type = 'table'
    AND name NOT LIKE '!_cf!_%' ESCAPE '!' AND name NOT LIKE '!_!_miniflare!_%' ESCAPE '!' ORDER BY name`);
  return out;
}

// Drizzle's interactive transaction on D1: it sends BEGIN, which D1 refuses.
const interactive = (db) =>
  db.transaction(async (tx) => {
    await tx.insert(posts).values({ authorId: 3, title: 'Never' });
  });

// A transaction with one nested in it (a savepoint) that fails: the outer
// one keeps its row, the nested one's is rolled back.
const nested = (db) =>
  db.transaction((tx) => {
    tx.insert(posts).values({ authorId: 3, title: 'Outer', tag: 'draft' }).run();
    let inner;
    try {
      tx.transaction((nestedTx) => {
        nestedTx.insert(posts).values({ authorId: 3, title: 'Inner', tag: 'draft' }).run();
        nestedTx.rollback();
      });
    } catch (e) {
      inner = `${e.name}: ${e.message}`;
    }
    const titles = tx.select({ title: posts.title }).from(posts).where(eq(posts.authorId, 3)).all();
    return { inner, titles };
  });

export class Blog extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.db = onObject(ctx.storage, { schema });
    ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
    });
  }

  async fetch(request) {
    const db = this.db;
    const { pathname } = new URL(request.url);
    let answer;
    if (pathname === '/do/write') {
      answer = await outcome(() => write(db, (queries) => db.transaction((tx) => queries.map((q) => q.all())), nested));
    } else {
      answer = await outcome(async () => ({
        ...(await read(db)),
        migrations: db.values(sql`SELECT hash, created_at FROM __drizzle_migrations ORDER BY id`),
      }));
    }
    return Response.json(answer);
  }
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    const db = onD1(env.DB, { schema });
    switch (pathname) {
      case '/d1/write':
        return Response.json(await outcome(() => write(db, (queries) => db.batch(queries), interactive)));
      case '/d1/read':
        return Response.json(await outcome(async () => ({
          ...(await read(db)),
          migrations: await db.values(sql`SELECT id, name FROM d1_migrations ORDER BY id`),
          batch: await db.batch([
            db.query.posts.findMany({ with: { author: { columns: { name: true } } }, orderBy: (p, { asc }) => [asc(p.id)] }),
            db.select({ n: count() }).from(authors),
          ]),
        })));
      case '/do/write':
      case '/do/read':
        return env.BLOG.get(env.BLOG.idFromName('blog')).fetch(request);
      default:
        return new Response('hello');
    }
  },
};
