// 33_assets.js — the static assets' binding: the `Fetcher` a Worker with
// `assets.binding` gets in its `env` (`internal.assetsBinding()`, called by
// the engine as it builds `env`). `fetch(input, init)` makes a real Request
// and asks host.assetsFetch, which answers from the Worker's own assets as
// the asset server does with no Worker in front (src/assets.rs); the body
// of the request is not read (assets answer GET and HEAD, 405 the rest).
'use strict';

const kAssets = Symbol('create');

class AssetsFetcher {
  constructor(key) {
    if (key !== kAssets) throw new TypeError('Illegal constructor');
  }

  async fetch(input, init = undefined) {
    const request = new Request(input, init);
    const { method, url, headers } = internal.requestParts(request);
    return internal.responseFromHost(host.assetsFetch(method, url, internal.headersList(headers)));
  }
}
internal.enumerableMembers(AssetsFetcher, ['fetch']);
internal.setToStringTag(AssetsFetcher.prototype, 'Fetcher');

internal.assetsBinding = () => new AssetsFetcher(kAssets);
