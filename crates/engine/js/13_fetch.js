// 13_fetch.js — fetch() over host.fetch. The request body is buffered whole
// before the host call; the response body streams from host.bodyRead.
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
    if (body !== null) bytes = await body.consume();
    if (settled) return;
    const res = await host.fetch(method, url, internal.headersList(headers), bytes, redirect);
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

internal.defineGlobal('fetch', fetch);
