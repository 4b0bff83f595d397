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
    // Answers the client's close with its code: before the compatibility
    // date 2026-04-07 (web_socket_auto_reply_to_close) this is the reply;
    // from it the runtime has answered already and close() does nothing.
    server.addEventListener('close', (event) => {
      if (event.code === 1005 || event.code === 1006) server.close();
      else server.close(event.code, event.reason);
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};
