import { defineConfig } from "vite";

// React's JSX without @vitejs/plugin-react (no fast refresh needed for a
// production build): esbuild's automatic runtime. Source maps are built
// for the error tracker and left out of the assets by public/.assetsignore.
export default defineConfig({
  esbuild: { jsx: "automatic" },
  build: { sourcemap: true },
  logLevel: "error",
});
