// 30_service.js — service bindings: the `Fetcher` a Worker's service
// binding puts in its `env` (`internal.serviceBinding(binding)`, called by
// the engine as it builds `env`). `fetch(input, init)` makes a real Request
// and hands it to host.serviceFetch, which runs the called Worker's fetch
// handler on this thread, in its own isolate (the engine's src/host/service.rs),
// and resolves with its response's head; the body streams back. The
// request's body is read whole first. JavaScript passes only the binding's
// name: the host finds the Worker it calls.
'use strict';

const kService = Symbol('create');

class Fetcher {
  #binding;

  constructor(key, binding) {
    if (key !== kService) throw new TypeError('Illegal constructor');
    this.#binding = binding;
  }

  async fetch(input, init = undefined) {
    const request = new Request(input, init);
    const { method, url, headers, body } = internal.requestParts(request);
    const bytes = await internal.bodyBytes(body);
    const head = await host.serviceFetch(this.#binding, method, url, internal.headersList(headers), bytes);
    // A 101's socket, served by the called Worker on this thread.
    if (head.webSocket) head.passedWebSocket = internal.passedWebSocket(head.webSocket);
    return internal.responseFromHost(head);
  }
}
internal.enumerableMembers(Fetcher, ['fetch']);
internal.setToStringTag(Fetcher.prototype, 'Fetcher');

internal.serviceBinding = (binding) => new Fetcher(kService, binding);
