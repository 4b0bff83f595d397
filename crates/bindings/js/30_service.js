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
//
// A dispatch namespace binding (`env.DISPATCHER`, Workers for Platforms)
// is a DispatchNamespace whose `get(name, args, {limits, outbound})` returns the same
// kind of Fetcher, carrying the Worker's name and the limits the caller
// lowers (`to`): the host checks the namespace agreed, finds the Worker in
// it, and only ever lowers the Worker's own limits with them.
'use strict';

const kService = Symbol('create');

// The host's trailing arguments for a call: a dispatch stub's Worker and
// lowered limits (0: the Worker's own), nothing for a service binding.
// A dispatch stub's `props` is its `options.outbound` (JSON), the outbound
// Worker's params. A Worker Loader's stub (39_loader.js) adds the entrypoint and props of
// the code loaded as `worker`, and `load`, which loads it before a call.
internal.serviceTarget = (to) =>
  to === undefined
    ? [undefined, 0, 0, undefined, undefined]
    : [to.worker, to.cpuMs, to.subrequests, to.entrypoint, to.props];

class Fetcher {
  #binding;
  #to;

  constructor(key, binding, to) {
    if (key !== kService) throw new TypeError('Illegal constructor');
    this.#binding = binding;
    this.#to = to;
  }

  async fetch(input, init = undefined) {
    const request = new Request(input, init);
    const { method, url, headers, body } = internal.requestParts(request);
    const bytes = await internal.bodyBytes(body);
    if (this.#to?.load) await this.#to.load();
    const head = await host.serviceFetch(
      this.#binding, method, url, internal.headersList(headers), bytes, ...internal.serviceTarget(this.#to));
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
// A service binding's Fetcher (not a dispatch or loader stub's) to its
// binding's name: what a Worker Loader may hand on to loaded code.
const serviceBindings = new WeakMap();
internal.serviceBindingName = (value) =>
  (typeof value === 'object' && value !== null) ? serviceBindings.get(value) : undefined;

internal.serviceBinding = (binding, to = undefined) => {
  const fetcher = new Fetcher(kService, binding, to);
  const members = new Map();
  const proxy = internal.proxy(fetcher, {
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
        member = internal.rpcProperty(binding, name, to);
      }
      members.set(name, member);
      return member;
    },
    has(target, name) { return name in target; },
    set() { return false; },
  });
  if (to === undefined) serviceBindings.set(proxy, binding);
  return proxy;
};

// A per-call limit: a positive whole number (at most 2^32 - 1), or 0 for
// none given.
function callLimit(value, name) {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 0xffffffff) {
    throw new TypeError(`limits.${name} must be a positive whole number`);
  }
  return value;
}

// `get()`'s `options.outbound`: an object, as JSON text (undefined for none).
function outboundParams(outbound) {
  if (outbound === undefined || outbound === null) return undefined;
  if (typeof outbound !== 'object' || Array.isArray(outbound)) {
    throw new TypeError("options.outbound must be an object of the binding's outbound params");
  }
  return JSON.stringify(outbound);
}

class DispatchNamespace {
  #binding;

  constructor(key, binding) {
    if (key !== kService) throw new TypeError('Illegal constructor');
    this.#binding = binding;
  }

  // `args` is not used (Cloudflare's too). `options.outbound`: the values
  // the binding's outbound Worker sees as env.<param> in the calls this
  // stub makes (its declared `params` pick them), as JSON.
  get(name, args = undefined, options = undefined) {
    const limits = options?.limits ?? {};
    const to = {
      worker: String(name),
      cpuMs: callLimit(limits.cpuMs, 'cpuMs'),
      subrequests: callLimit(limits.subRequests ?? limits.subrequests, 'subRequests'),
      props: outboundParams(options?.outbound),
    };
    return internal.serviceBinding(this.#binding, to);
  }
}
internal.enumerableMembers(DispatchNamespace, ['get']);
internal.setToStringTag(DispatchNamespace.prototype, 'DispatchNamespace');

internal.callLimit = callLimit;

internal.dispatchBinding = (binding) => new DispatchNamespace(kService, binding);
