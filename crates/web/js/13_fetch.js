// 13_fetch.js — fetch() over host.fetch. The request body is buffered whole
// before the host call; the response body streams from host.bodyRead.
// data: URLs are answered here, from host.dataUrl.
'use strict';

function fetch(input, init = undefined) {
  let request;
  try {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'fetch'");
    request = new Request(input, init);
  } catch (e) {
    return Promise.reject(e);
  }
  const { method, url, headers, body, signal, redirect } = internal.requestParts(request);
  if (signal.aborted) return Promise.reject(signal.reason);
  if (url.startsWith('data:')) return fetchDataURL(url);
  // Code loaded with a service as its globalOutbound (docs/loader.md): that
  // Worker's fetch handler takes the request instead of the network.
  if (internal.globalOutbound !== undefined) return internal.globalOutbound.fetch(request);

  const result = internal.deferred();
  let settled = false;
  let response = null;
  let bodyId = 0;
  const removeAbort = internal.abortSignalAdd(signal, (reason) => {
    if (!settled) {
      settled = true;
      result.reject(reason);
    } else if (response !== null) {
      // aborted while the body streams: error the stream, stop the host side
      internal.streamError(response.body, reason);
    }
    if (bodyId) host.bodyCancel(bodyId);
  });

  (async () => {
    let bytes = null;
    if (body !== null) {
      const box = { bytes: null, shared: false };
      await body.consume(box);
      bytes = box.bytes;
    }
    if (settled) return;
    // A WebSocket handshake (workerd): the host's fetch path on an HTTP/1.1
    // connection; a 101 comes with `webSocket`, to accept().
    const upgrade = headers.get('upgrade');
    const res = upgrade !== null && upgrade.toLowerCase() === 'websocket'
      ? await host.webSocketConnect(url, internal.headersList(headers))
      : await host.fetch(method, url, internal.headersList(headers), bytes, redirect);
    if (settled) {
      if (res.bodyId) host.bodyCancel(res.bodyId);
      return;
    }
    bodyId = res.bodyId;
    response = internal.responseFromHost(res);
    settled = true;
    if (!bodyId) removeAbort();
    result.resolve(response);
  })().catch((e) => {
    removeAbort();
    if (!settled) {
      settled = true;
      result.reject(e);
    }
  });
  return result.promise;
}

// The Fetch Standard's scheme fetch for data: — no network, so no egress
// check and no subrequest; the host decodes it (bounded, see HOST.md) and a
// URL it cannot process is a network error (a TypeError).
function fetchDataURL(url) {
  try {
    const [type, bytes] = host.dataUrl(url);
    return Promise.resolve(internal.responseFromHost({
      status: 200, statusText: 'OK', headers: ['content-type', type], bodyId: 0, bytes, url, redirected: false,
    }));
  } catch (e) {
    return Promise.reject(e);
  }
}

internal.defineGlobal('fetch', fetch);
