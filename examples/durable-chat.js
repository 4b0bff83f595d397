// Chat rooms of hibernatable WebSockets: one Durable Object per room, as on
// Cloudflare.
//
//   isolane dev examples/durable-chat.js --durable-object ROOMS=ChatRoom
//
//   websocat 'ws://127.0.0.1:8787/rooms/lobby?name=ada'
//
// Each line a client sends goes to everyone in the room. The room accepts
// its sockets with `ctx.acceptWebSocket`, so it may leave memory while its
// clients are quiet (--object-idle-secs, 70 s by default): the sockets stay
// open, and the next message makes the room again (its constructor runs,
// each socket's name comes back from its attachment). `ping` is answered
// `pong` without waking the room; `/who` answers how many times the room
// was made and who is in it.
import { DurableObject } from 'cloudflare:workers';

export class ChatRoom extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
    ctx.blockConcurrencyWhile(async () => {
      this.generation = ((await ctx.storage.get('generation')) ?? 0) + 1;
      await ctx.storage.put('generation', this.generation);
    });
  }

  async fetch(request) {
    const name = new URL(request.url).searchParams.get('name') || 'anonymous';
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server, [name]);
    server.serializeAttachment({ name });
    this.broadcast(`${name} joined`);
    return new Response(null, { status: 101, webSocket: client });
  }

  webSocketMessage(ws, message) {
    const { name } = ws.deserializeAttachment();
    if (message === '/who') {
      const names = this.ctx.getWebSockets().map((peer) => peer.deserializeAttachment().name);
      ws.send(JSON.stringify({ generation: this.generation, names }));
      return;
    }
    this.broadcast(`${name}: ${message}`);
  }

  webSocketClose(ws, code) {
    this.broadcast(`${ws.deserializeAttachment().name} left (${code})`);
  }

  broadcast(line) {
    for (const peer of this.ctx.getWebSockets()) {
      try {
        peer.send(line);
      } catch {
        // Closing meanwhile.
      }
    }
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const room = url.pathname.replace(/^\/rooms\/?/, '') || 'lobby';
    if (request.headers.get('upgrade') !== 'websocket') {
      return new Response('connect with a WebSocket to /rooms/<room>?name=<you>\n', { status: 426 });
    }
    return env.ROOMS.getByName(room).fetch(request);
  },
};
