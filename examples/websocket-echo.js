// A WebSocket echo Worker (the Workers API): `isolane dev examples/websocket-echo.js`,
// then connect a WebSocket client to ws://127.0.0.1:8787/.
export default {
  fetch(request) {
    if (request.headers.get('upgrade') !== 'websocket') {
      return new Response('Expected a WebSocket upgrade.\n', { status: 426 });
    }
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => server.send(event.data));
    return new Response(null, { status: 101, webSocket: client });
  },
};
