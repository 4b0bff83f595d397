import type { EntryContext } from "react-router";
import { ServerRouter } from "react-router";
import { renderToReadableStream } from "react-dom/server";
export default async function handleRequest(request: Request, status: number, headers: Headers, context: EntryContext) {
  const body = await renderToReadableStream(<ServerRouter context={context} url={request.url} />, { signal: request.signal });
  await body.allReady;
  headers.set("Content-Type", "text/html");
  return new Response(body, { headers, status });
}
