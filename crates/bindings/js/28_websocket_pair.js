// workerd's auto-response pair of a Durable Object's hibernating sockets
// (ctx.setWebSocketAutoResponse, 28_durable_object.js).
class WebSocketRequestResponsePair {
  #request;
  #response;

  constructor(request, response) {
    internal.requireArgs(arguments.length, 2, "Failed to construct 'WebSocketRequestResponsePair'");
    this.#request = String(request);
    this.#response = String(response);
  }

  get request() { return this.#request; }
  get response() { return this.#response; }
}
internal.enumerableMembers(WebSocketRequestResponsePair, ['request', 'response'], 'WebSocketRequestResponsePair');
internal.defineGlobal('WebSocketRequestResponsePair', WebSocketRequestResponsePair);

