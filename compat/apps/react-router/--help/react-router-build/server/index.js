import { jsx, jsxs } from "react/jsx-runtime";
import { ServerRouter, UNSAFE_withComponentProps, Outlet, UNSAFE_withErrorBoundaryProps, isRouteErrorResponse, Meta, Links, Scripts, useLoaderData, Link, useActionData, Form, data } from "react-router";
import { renderToReadableStream } from "react-dom/server";
async function handleRequest(request, status, headers, context) {
  const body = await renderToReadableStream(/* @__PURE__ */ jsx(ServerRouter, { context, url: request.url }), { signal: request.signal });
  await body.allReady;
  headers.set("Content-Type", "text/html");
  return new Response(body, { headers, status });
}
const entryServer = /* @__PURE__ */ Object.freeze(/* @__PURE__ */ Object.defineProperty({
  __proto__: null,
  default: handleRequest
}, Symbol.toStringTag, { value: "Module" }));
function Layout({
  children
}) {
  return /* @__PURE__ */ jsxs("html", {
    lang: "en",
    children: [/* @__PURE__ */ jsxs("head", {
      children: [/* @__PURE__ */ jsx("meta", {
        charSet: "utf-8"
      }), /* @__PURE__ */ jsx(Meta, {}), /* @__PURE__ */ jsx(Links, {})]
    }), /* @__PURE__ */ jsxs("body", {
      children: [children, /* @__PURE__ */ jsx(Scripts, {})]
    })]
  });
}
const root = UNSAFE_withComponentProps(function App() {
  return /* @__PURE__ */ jsx(Outlet, {});
});
const ErrorBoundary = UNSAFE_withErrorBoundaryProps(function ErrorBoundary2({
  error
}) {
  return /* @__PURE__ */ jsx("main", {
    children: /* @__PURE__ */ jsx("h1", {
      children: isRouteErrorResponse(error) ? `${error.status} ${error.statusText}` : "Error"
    })
  });
});
const route0 = /* @__PURE__ */ Object.freeze(/* @__PURE__ */ Object.defineProperty({
  __proto__: null,
  ErrorBoundary,
  Layout,
  default: root
}, Symbol.toStringTag, { value: "Module" }));
function meta() {
  return [{
    title: "Home"
  }, {
    name: "description",
    content: "SSR on Workers"
  }];
}
async function loader$1({
  request
}) {
  const url = new URL(request.url);
  return {
    greeting: `Hello, ${url.searchParams.get("name") ?? "world"}`,
    items: ["a", "b", "<c>"]
  };
}
const home = UNSAFE_withComponentProps(function Home() {
  const {
    greeting,
    items
  } = useLoaderData();
  return /* @__PURE__ */ jsxs("main", {
    children: [/* @__PURE__ */ jsx("h1", {
      children: greeting
    }), /* @__PURE__ */ jsx("ul", {
      children: items.map((i) => /* @__PURE__ */ jsx("li", {
        children: i
      }, i))
    }), /* @__PURE__ */ jsx(Link, {
      to: "/users/7",
      children: "user 7"
    })]
  });
});
const route1 = /* @__PURE__ */ Object.freeze(/* @__PURE__ */ Object.defineProperty({
  __proto__: null,
  default: home,
  loader: loader$1,
  meta
}, Symbol.toStringTag, { value: "Module" }));
async function loader({
  params
}) {
  if (!/^\d+$/.test(params.id)) throw data("no such user", {
    status: 404
  });
  return {
    id: Number(params.id)
  };
}
async function action({
  request
}) {
  const form = await request.formData();
  return {
    saved: String(form.get("nickname") ?? "").toUpperCase()
  };
}
const user = UNSAFE_withComponentProps(function User() {
  const {
    id
  } = useLoaderData();
  const saved = useActionData();
  return /* @__PURE__ */ jsxs("main", {
    children: [/* @__PURE__ */ jsxs("h1", {
      children: ["User ", id]
    }), saved ? /* @__PURE__ */ jsxs("p", {
      children: ["saved ", saved.saved]
    }) : null, /* @__PURE__ */ jsx(Form, {
      method: "post",
      children: /* @__PURE__ */ jsx("input", {
        name: "nickname"
      })
    })]
  });
});
const route2 = /* @__PURE__ */ Object.freeze(/* @__PURE__ */ Object.defineProperty({
  __proto__: null,
  action,
  default: user,
  loader
}, Symbol.toStringTag, { value: "Module" }));
const serverManifest = { "entry": { "module": "/assets/entry.client-collA88G.js", "imports": ["/assets/jsx-runtime-DwmkJpIA.js"], "css": [] }, "routes": { "root": { "id": "root", "parentId": void 0, "path": "", "index": void 0, "caseSensitive": void 0, "hasAction": false, "hasLoader": false, "hasClientAction": false, "hasClientLoader": false, "hasClientMiddleware": false, "hasDefaultExport": true, "hasErrorBoundary": true, "module": "/assets/root-DvygDWzD.js", "imports": ["/assets/jsx-runtime-DwmkJpIA.js"], "css": [], "clientActionModule": void 0, "clientLoaderModule": void 0, "clientMiddlewareModule": void 0, "hydrateFallbackModule": void 0 }, "routes/home": { "id": "routes/home", "parentId": "root", "path": void 0, "index": true, "caseSensitive": void 0, "hasAction": false, "hasLoader": true, "hasClientAction": false, "hasClientLoader": false, "hasClientMiddleware": false, "hasDefaultExport": true, "hasErrorBoundary": false, "module": "/assets/home-DGI7LGxP.js", "imports": ["/assets/jsx-runtime-DwmkJpIA.js"], "css": [], "clientActionModule": void 0, "clientLoaderModule": void 0, "clientMiddlewareModule": void 0, "hydrateFallbackModule": void 0 }, "routes/user": { "id": "routes/user", "parentId": "root", "path": "users/:id", "index": void 0, "caseSensitive": void 0, "hasAction": true, "hasLoader": true, "hasClientAction": false, "hasClientLoader": false, "hasClientMiddleware": false, "hasDefaultExport": true, "hasErrorBoundary": false, "module": "/assets/user-DgX40WHj.js", "imports": ["/assets/jsx-runtime-DwmkJpIA.js"], "css": [], "clientActionModule": void 0, "clientLoaderModule": void 0, "clientMiddlewareModule": void 0, "hydrateFallbackModule": void 0 } }, "url": "/assets/manifest-4a263ff0.js", "version": "4a263ff0", "sri": void 0 };
const assetsBuildDirectory = "--help/react-router-build/client";
const basename = "/";
const future = { "unstable_optimizeDeps": false, "v8_passThroughRequests": false, "v8_trailingSlashAwareDataRequests": false, "unstable_previewServerPrerendering": false, "v8_middleware": false, "v8_splitRouteModules": false, "v8_viteEnvironmentApi": false };
const ssr = true;
const isSpaMode = false;
const prerender = [];
const routeDiscovery = { "mode": "lazy", "manifestPath": "/__manifest" };
const publicPath = "/";
const entry = { module: entryServer };
const routes = {
  "root": {
    id: "root",
    parentId: void 0,
    path: "",
    index: void 0,
    caseSensitive: void 0,
    module: route0
  },
  "routes/home": {
    id: "routes/home",
    parentId: "root",
    path: void 0,
    index: true,
    caseSensitive: void 0,
    module: route1
  },
  "routes/user": {
    id: "routes/user",
    parentId: "root",
    path: "users/:id",
    index: void 0,
    caseSensitive: void 0,
    module: route2
  }
};
const allowedActionOrigins = false;
export {
  allowedActionOrigins,
  serverManifest as assets,
  assetsBuildDirectory,
  basename,
  entry,
  future,
  isSpaMode,
  prerender,
  publicPath,
  routeDiscovery,
  routes,
  ssr
};
