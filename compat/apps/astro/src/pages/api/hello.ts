import type { APIRoute } from "astro";

// An API route: JSON from the Worker.
export const GET: APIRoute = ({ url, request }) =>
  Response.json({
    q: url.searchParams.get("q"),
    method: request.method,
  });
