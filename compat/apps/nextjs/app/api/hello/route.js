import { visitor } from "../../../lib/visitor.js";

export const dynamic = "force-dynamic";

export async function GET(request) {
  const url = new URL(request.url);
  return Response.json(
    { q: url.searchParams.get("q"), visitor: await visitor() },
    { headers: { "x-route": "hello" } },
  );
}
