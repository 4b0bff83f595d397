// Next.js as OpenNext for Cloudflare builds it: the server output that
// `opennextjs-cloudflare build` turns into a Worker.
/** @type {import("next").NextConfig} */
const nextConfig = {};

export default nextConfig;
