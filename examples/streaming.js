// Streams in both directions. GET streams ten lines, one every 100 ms;
// POST echoes the upload chunk by chunk (never buffered whole):
//   curl -N localhost:8787/
//   curl -s -T big.file localhost:8787/ | wc -c
export default {
  fetch(request) {
    if (request.method === "POST" || request.method === "PUT") {
      return new Response(request.body, {
        headers: { "content-type": request.headers.get("content-type") ?? "application/octet-stream" },
      });
    }
    const encoder = new TextEncoder();
    let i = 0;
    const body = new ReadableStream({
      async pull(controller) {
        if (i === 10) {
          controller.close();
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
        controller.enqueue(encoder.encode(`line ${++i}\n`));
      },
    });
    return new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
  },
};
