// apps/htmlrewriter.js
var page = `<!DOCTYPE html>
<html><head><title>Shop</title><!-- build 1234 --></head>
<body>
  <a href="http://old.example.com/a">A</a> <a href="/b" class="keep">B</a>
  <div class="ad">buy now</div>
  <p id="greet">Hello, NAME!</p>
  <img src="/logo.png">
</body></html>`;
var Links = class {
  element(el) {
    const href = el.getAttribute("href");
    if (href?.startsWith("http://old.example.com")) el.setAttribute("href", href.replace("http://old.example.com", "https://new.example.com"));
    el.setAttribute("data-seen", "1");
  }
};
var htmlrewriter_default = {
  async fetch(request, env) {
    const url = new URL(request.url);
    const comments = [];
    let doctype = null;
    const rewriter = new HTMLRewriter().on("a", new Links()).on("div.ad", { element: (el) => el.remove() }).on("head", { element: (el) => el.append('<script src="/inject.js"></script>', { html: true }) }).on("p#greet", {
      text(t) {
        if (t.text.includes("NAME")) t.replace(t.text.replace("NAME", "<Ada>"));
      }
    }).on("img", {
      async element(el) {
        await new Promise((r) => setTimeout(r, 1));
        el.setAttribute("loading", "lazy");
      }
    }).onDocument({
      doctype(d) {
        doctype = d.name;
      },
      comments(c) {
        comments.push(c.text);
        c.remove();
      }
    });
    if (url.pathname === "/") return rewriter.transform(new Response(page, { headers: { "content-type": "text/html" } }));
    if (url.pathname === "/upstream") return rewriter.transform(await fetch(`${env.UPSTREAM}/html`));
    if (url.pathname === "/collected") {
      await rewriter.transform(new Response(page)).text();
      return Response.json({ doctype, comments });
    }
    return new Response("not found", { status: 404 });
  }
};
export {
  htmlrewriter_default as default
};
