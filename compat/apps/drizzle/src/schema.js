// The schema drizzle/ was made for: authors and their posts.
import { relations, sql } from 'drizzle-orm';
import { check, index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export const authors = sqliteTable('authors', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  email: text('email').notNull().unique(),
});

export const posts = sqliteTable(
  'posts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    authorId: integer('author_id')
      .notNull()
      .references(() => authors.id, { onDelete: 'cascade' }),
    title: text('title').notNull(),
    likes: integer('likes').notNull().default(0),
    tag: text('tag'),
  },
  (t) => [index('posts_author_idx').on(t.authorId), check('likes_positive', sql`${t.likes} >= 0`)],
);

export const authorsRelations = relations(authors, ({ many, one }) => ({
  posts: many(posts),
  settings: one(settings),
}));

export const postsRelations = relations(posts, ({ one }) => ({
  author: one(authors, { fields: [posts.authorId], references: [authors.id] }),
}));

// Drizzle's column modes: JSON in text, booleans and timestamps in integers.
export const settings = sqliteTable('settings', {
  authorId: integer('author_id')
    .primaryKey()
    .references(() => authors.id, { onDelete: 'cascade' }),
  prefs: text('prefs', { mode: 'json' }).notNull(),
  public: integer('public', { mode: 'boolean' }).notNull().default(false),
  since: integer('since', { mode: 'timestamp' }).notNull(),
});

export const settingsRelations = relations(settings, ({ one }) => ({
  author: one(authors, { fields: [settings.authorId], references: [authors.id] }),
}));
