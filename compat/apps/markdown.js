// Markdown rendered on the server with marked: built-in pages, a custom
// renderer (heading anchors, external links), GFM tables, and a POST that
// renders the request body.
import { Marked } from "marked";

const pages = {
  index: "# Welcome\n\nThis is **compat**. See [the guide](/guide) or [elsewhere](https://example.com).\n\n- one\n- two\n  - nested\n",
  guide:
    "## Install\n\n```sh\nnpm ci\n```\n\n| flag | meaning |\n| --- | :---: |\n| `-v` | verbose |\n| `-q` | quiet & calm |\n\n> a quote with <tags> & entities\n\n1. first\n2. second\n\n~~gone~~ and _emphasis_ and `code <b>`.\n",
};

const marked = new Marked({ gfm: true });
marked.use({
  renderer: {
    heading({ tokens, depth }) {
      const text = this.parser.parseInline(tokens);
      const id = text.toLowerCase().replace(/[^a-z0-9]+/g, "-");
      return `<h${depth} id="${id}">${text}</h${depth}>\n`;
    },
    link({ href, text }) {
      const external = /^https?:/.test(href) ? ' rel="noopener" target="_blank"' : "";
      return `<a href="${href}"${external}>${text}</a>`;
    },
  },
});

const page = (title, body) =>
  new Response(`<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`, {
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "public, max-age=300" },
  });

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/render") {
      const source = await request.text();
      return new Response(await marked.parse(source), { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    const name = url.pathname === "/" ? "index" : url.pathname.slice(1);
    if (!Object.hasOwn(pages, name)) return new Response("not found", { status: 404 });
    return page(name, await marked.parse(pages[name]));
  },
};
