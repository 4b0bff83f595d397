// node:url — the WHATWG URL and URLSearchParams (the runtime's own), the
// file: URL helpers, and the legacy `parse`/`format`/`resolve` built on the
// WHATWG parser (their common uses, not every quirk of Node's legacy
// parser). Runs as function (host, internal, require, module, exports).

const { invalidArgType: invalidArg } = require('node:internal/errors');

function fileURLToPath(input) {
  const url = typeof input === 'string' ? new URL(input) : input;
  if (!(url instanceof URL)) throw invalidArg('path', 'of type string or an instance of URL', input);
  if (url.protocol !== 'file:') {
    const error = new TypeError('The URL must be of scheme file');
    error.code = 'ERR_INVALID_URL_SCHEME';
    throw error;
  }
  if (url.hostname !== '') {
    const error = new TypeError('File URL host must be "localhost" or empty on linux');
    error.code = 'ERR_INVALID_FILE_URL_HOST';
    throw error;
  }
  if (/%2f/i.test(url.pathname)) {
    const error = new TypeError('File URL path must not include encoded / characters');
    error.code = 'ERR_INVALID_FILE_URL_PATH';
    throw error;
  }
  return decodeURIComponent(url.pathname);
}

// The characters of a path that a file: URL writes percent-encoded beyond
// what the URL parser encodes itself (a backslash is a separator on Windows).
const PATH_ESCAPES = { '%': '%25', '\\': '%5C', '\n': '%0A', '\r': '%0D', '\t': '%09',
  '?': '%3F', '#': '%23', '^': '%5E', '[': '%5B', ']': '%5D' };

function encodePath(path, windows) {
  const escaped = path.replace(windows ? /[%\n\r\t?#^[\]]/g : /[%\\\n\r\t?#^[\]]/g, (c) => PATH_ESCAPES[c]);
  return windows ? escaped.replace(/\\/g, '/') : escaped;
}

function invalidPath(path, reason) {
  const error = new TypeError(`The argument 'path' ${reason}. Received '${path.replace(/\\/g, '\\\\')}'`);
  error.code = 'ERR_INVALID_ARG_VALUE';
  return error;
}

// \\server\share\rest (or \\?\UNC\server\share\rest) as file://server/share/rest.
function uncToFileURL(path) {
  const start = path.startsWith('\\\\?\\UNC\\') ? 8 : 2;
  const end = path.indexOf('\\', start);
  if (end === -1) throw invalidPath(path, 'Missing UNC resource path');
  if (end === start) throw invalidPath(path, 'Empty UNC servername');
  return new URL(`file://${path.slice(start, end)}${encodePath(path.slice(end), true)}`);
}

function pathToFileURL(path, options) {
  if (typeof path !== 'string') throw invalidArg('path', 'of type string', path);
  const windows = options?.windows ?? false;
  if (windows && path.startsWith('\\\\?\\') && !path.startsWith('\\\\?\\UNC\\')) path = path.slice(4);
  if (windows && path.startsWith('\\\\')) return uncToFileURL(path);
  const paths = require('node:path');
  let absolute = (windows ? paths.win32 : paths.posix).resolve(path);
  const separator = windows ? /[\\/]$/ : /\/$/;
  if (separator.test(path) && !separator.test(absolute)) absolute += '/';
  return new URL(`file://${windows ? '/' : ''}${encodePath(absolute, windows)}`);
}

function Url() {
  this.protocol = null; this.slashes = null; this.auth = null; this.host = null; this.port = null;
  this.hostname = null; this.hash = null; this.search = null; this.query = null;
  this.pathname = null; this.path = null; this.href = null;
}

// Node's legacy parser ends a host at the first character a host cannot
// hold ('http://a.com" x' has host 'a.com') and makes the rest the path,
// percent-encoding what a path may not hold.
const HOST_END = /[\s"'<>^`{|}]/;

function cutHost(text) {
  const parts = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(text);
  if (!parts) return text;
  const [, scheme, authority, tail] = parts;
  const at = authority.lastIndexOf('@') + 1;
  const cut = authority.slice(at).search(HOST_END);
  if (cut === -1) return text;
  const rest = authority.slice(at + cut) + tail;
  return `${scheme}${authority.slice(0, at + cut)}/${rest.replace(/[\t\n\r "'<>^`{|}]/g, encodeURIComponent)}`;
}

// A hostname longer than DNS allows is dropped, as Node's legacy parser does.
const HOSTNAME_MAX = 255;

// The legacy parse, from the WHATWG parse of the same text.
function parse(text, parseQueryString = false) {
  if (typeof text !== 'string') throw invalidArg('url', 'of type string', text);
  const out = new Url();
  let url;
  try {
    url = new URL(cutHost(text));
  } catch {
    // A relative reference: only path, search and hash.
    const [beforeHash, hash] = text.split(/#(.*)/s);
    const [pathname, search] = beforeHash.split(/\?(.*)/s);
    out.pathname = pathname || null;
    out.search = search !== undefined ? `?${search}` : null;
    out.hash = hash !== undefined ? `#${hash}` : null;
  }
  if (url) {
    out.protocol = url.protocol;
    out.slashes = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) || null;
    out.auth = url.username ? decodeURIComponent(url.username + (url.password ? `:${url.password}` : '')) : null;
    const long = url.hostname.length > HOSTNAME_MAX;
    out.host = long ? '' : url.host || null;
    out.port = url.port || null;
    out.hostname = long ? '' : url.hostname || null;
    out.hash = url.hash || null;
    out.search = url.search || (text.split('#')[0].includes('?') ? '?' : null);
    out.pathname = url.pathname || null;
  }
  out.query = out.search ? out.search.slice(1) : null;
  if (parseQueryString) out.query = require('node:querystring').parse(out.query ?? '');
  out.path = (out.pathname ?? '') + (out.search ?? '') || null;
  out.href = url ? url.href : text;
  return out;
}

function format(input, options) {
  if (typeof input === 'string') input = parse(input);
  if (input instanceof URL) {
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw invalidArg('options', 'of type object', options);
    }
    // An option that is given and falsy turns its part off.
    const keep = (name) => options?.[name] === undefined || Boolean(options[name]);
    const url = new URL(input.href);
    if (!keep('fragment')) url.hash = '';
    if (!keep('search')) url.search = '';
    if (!keep('auth')) { url.username = ''; url.password = ''; }
    return url.href;
  }
  if (input === null || typeof input !== 'object') throw invalidArg('urlObject', 'one of type object or string', input);
  let protocol = input.protocol || '';
  if (protocol && !protocol.endsWith(':')) protocol += ':';
  const auth = input.auth ? `${encodeURIComponent(input.auth).replace(/%3A/i, ':')}@` : '';
  let host = '';
  if (input.host) host = auth + input.host;
  else if (input.hostname) host = auth + (input.hostname.includes(':') ? `[${input.hostname}]` : input.hostname) + (input.port ? `:${input.port}` : '');
  let pathname = input.pathname || '';
  let search = input.search || '';
  if (!search && input.query && typeof input.query === 'object') {
    const query = require('node:querystring').stringify(input.query);
    if (query) search = `?${query}`;
  } else if (!search && typeof input.query === 'string' && input.query) search = `?${input.query}`;
  if (search && !search.startsWith('?')) search = `?${search}`;
  let hash = input.hash || '';
  if (hash && !hash.startsWith('#')) hash = `#${hash}`;
  const special = /^(https?|ftp|gopher|file|wss?):$/.test(protocol);
  if (input.slashes || (special && host !== '') || (protocol === 'file:' && host === '')) {
    host = `//${host}`;
    if (pathname && !pathname.startsWith('/')) pathname = `/${pathname}`;
  }
  pathname = pathname.replace(/[?#]/g, encodeURIComponent);
  search = search.replace(/#/g, '%23');
  return `${protocol}${host}${pathname}${search}${hash}`;
}

function resolve(from, to) {
  return new URL(to, new URL(from, 'resolve://')).href.replace(/^resolve:\/\/\/?/, from.startsWith('/') ? '/' : '');
}

function urlToHttpOptions(url) {
  return {
    protocol: url.protocol,
    hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
    hash: url.hash,
    search: url.search,
    pathname: url.pathname,
    path: `${url.pathname || ''}${url.search || ''}`,
    href: url.href,
    ...(url.port !== '' ? { port: Number(url.port) } : {}),
    ...(url.username || url.password ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
  };
}

module.exports = {
  URL: globalThis.URL,
  URLSearchParams: globalThis.URLSearchParams,
  Url,
  parse,
  format,
  resolve,
  resolveObject: (from, to) => parse(resolve(from, to)),
  fileURLToPath,
  pathToFileURL,
  toPathIfFileURL: (value) => (value instanceof URL ? fileURLToPath(value) : value),
  urlToHttpOptions,
  domainToASCII: (domain) => { try { return new URL(`ws://${domain}`).hostname; } catch { return ''; } },
  domainToUnicode: (domain) => {
    try {
      const ascii = new URL(`ws://${domain}`).hostname;
      return ascii.split('.').map((label) => (label.startsWith('xn--') ? host.punycodeDecode(label.slice(4)) : label)).join('.');
    } catch {
      return '';
    }
  },
};
