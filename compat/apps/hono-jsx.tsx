// Server-side rendering with hono/jsx: a layout through jsx-renderer,
// components, escaping, html`` templates, and a streamed page with Suspense.
import { Hono } from "hono";
import { jsxRenderer } from "hono/jsx-renderer";
import { Suspense, renderToReadableStream } from "hono/jsx/streaming";
import { html, raw } from "hono/html";
import type { FC } from "hono/jsx";

const posts = [
  { slug: "hello", title: "Hello <World>", body: "First post & more", tags: ["intro", "news"] },
  { slug: "second", title: "Second", body: "Another one", tags: [] },
];

const Layout: FC = ({ children, title }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <title>{title}</title>
    </head>
    <body>
      <nav>
        {posts.map((p) => (
          <a href={`/posts/${p.slug}`}>{p.title}</a>
        ))}
      </nav>
      <main>{children}</main>
    </body>
  </html>
);

const Tags: FC<{ tags: string[] }> = ({ tags }) =>
  tags.length ? <ul class="tags">{tags.map((t) => <li data-tag={t}>#{t}</li>)}</ul> : <p>No tags</p>;

const Slow: FC<{ ms: number }> = async ({ ms }) => {
  await new Promise((r) => setTimeout(r, ms));
  return <p>loaded after {ms} ms</p>;
};

const app = new Hono();
app.use("*", jsxRenderer(({ children, title }) => <Layout title={title}>{children}</Layout>, { docType: true }));

app.get("/", (c) => c.render(<h1>Blog</h1>, { title: "Home" }));
app.get("/posts/:slug", (c) => {
  const post = posts.find((p) => p.slug === c.req.param("slug"));
  if (!post) return c.render(<h1>Not found</h1>, { title: "404" }).then((r) => new Response(r.body, { status: 404, headers: r.headers }));
  return c.render(
    <article>
      <h1>{post.title}</h1>
      <p>{post.body}</p>
      <Tags tags={post.tags} />
    </article>,
    { title: post.title },
  );
});
app.get("/template", (c) => c.html(html`<p>${"<b>escaped</b>"} ${raw("<b>raw</b>")}</p>`));
app.get("/stream", (c) => {
  const stream = renderToReadableStream(
    <html>
      <body>
        <Suspense fallback={<p>loading…</p>}>
          <Slow ms={5} />
        </Suspense>
      </body>
    </html>,
  );
  return c.body(stream, { headers: { "content-type": "text/html; charset=UTF-8", "transfer-encoding": "chunked" } });
});

export default app;
