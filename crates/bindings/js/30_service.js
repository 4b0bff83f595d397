// 30_service.js — service bindings: the `Fetcher` a Worker's service
// binding puts in its `env` (`internal.serviceBinding(binding)`, called by
// the engine as it builds `env`). `fetch(input, init)` makes a real Request
// and hands it to host.serviceFetch, which runs the called Worker's fetch
// handler on this thread, in its own isolate (the engine's src/host/service.rs),
// and resolves with its response's head; the body streams back. The
// request's body is read whole first. JavaScript passes only the binding's
// name: the host finds the Worker it calls.
//
// Every other property name is a JS RPC method of the called Worker's
// entrypoint (31_rpc.js), as workerd's Fetcher: `env.SVC.method(...args)`
// calls it, `await env.SVC.prop` reads a property. `then` is not one, so a
// Fetcher is not a thenable.
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

// What `env.SVC` is: the Fetcher, whose own members (fetch, toString...)
// answer as they are, bound to it, and whose other string properties are
// RPC properties, made once each.
internal.serviceBinding = (binding) => {
  const fetcher = new Fetcher(kService, binding);
  const members = new Map();
  return internal.proxy(fetcher, {
    get(target, name) {
      let member = members.get(name);
      if (member !== undefined) return member;
      if (typeof name !== 'string' || name in target) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== 'function' || name === 'constructor') return value;
        member = value.bind(target);
      } else if (name === 'then') {
        return undefined;
      } else {
        member = internal.rpcProperty(binding, name);
      }
      members.set(name, member);
      return member;
    },
    has(target, name) { return name in target; },
    set() { return false; },
  });
};
