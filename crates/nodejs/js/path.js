// node:path — POSIX paths, as Node's path.posix (and workerd's node:path,
// where the working directory is always '/'); `path.win32` is Windows paths
// (path_win32.js). Runs as function (host, internal, require, module, exports).

function checkString(value, name) {
  if (typeof value !== 'string') {
    const error = new TypeError(`The "${name}" argument must be of type string. Received ${value === null ? 'null' : typeof value}`);
    error.code = 'ERR_INVALID_ARG_TYPE';
    throw error;
  }
}

// Resolves '.' and '..' segments and collapses repeated separators; the
// result has no leading or trailing separator. '..' above the start is kept
// only when `aboveRoot`.
function normalizeSegments(path, aboveRoot, sep = '/') {
  const out = [];
  for (const segment of path.split(sep)) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (aboveRoot) out.push('..');
      continue;
    }
    out.push(segment);
  }
  return out.join(sep);
}

function resolve(...paths) {
  let resolved = '';
  let absolute = false;
  for (let i = paths.length - 1; i >= -1 && !absolute; i--) {
    const path = i >= 0 ? paths[i] : '/';
    checkString(path, `paths[${i}]`);
    if (path.length === 0) continue;
    resolved = `${path}/${resolved}`;
    absolute = path.charCodeAt(0) === 47;
  }
  const normal = normalizeSegments(resolved, !absolute);
  return absolute ? `/${normal}` : normal.length > 0 ? normal : '.';
}

function normalize(path) {
  checkString(path, 'path');
  if (path.length === 0) return '.';
  const absolute = path.charCodeAt(0) === 47;
  const trailing = path.charCodeAt(path.length - 1) === 47;
  let normal = normalizeSegments(path, !absolute);
  if (normal.length === 0) {
    if (absolute) return '/';
    return trailing ? './' : '.';
  }
  if (trailing) normal += '/';
  return absolute ? `/${normal}` : normal;
}

function isAbsolute(path) {
  checkString(path, 'path');
  return path.length > 0 && path.charCodeAt(0) === 47;
}

function join(...paths) {
  const parts = [];
  for (const path of paths) {
    checkString(path, 'path');
    if (path.length > 0) parts.push(path);
  }
  return parts.length === 0 ? '.' : normalize(parts.join('/'));
}

function relative(from, to) {
  checkString(from, 'from');
  checkString(to, 'to');
  if (from === to) return '';
  const a = resolve(from).split('/').filter(Boolean);
  const b = resolve(to).split('/').filter(Boolean);
  let common = 0;
  while (common < a.length && common < b.length && a[common] === b[common]) common++;
  return [...Array(a.length - common).fill('..'), ...b.slice(common)].join('/');
}

function dirname(path) {
  checkString(path, 'path');
  if (path.length === 0) return '.';
  const absolute = path.charCodeAt(0) === 47;
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  const slash = path.lastIndexOf('/', end - 1);
  if (slash === -1) return absolute ? '/' : '.';
  if (slash === 0) return '/';
  if (slash === 1 && absolute) return '//';
  return path.slice(0, slash);
}

function basename(path, suffix) {
  checkString(path, 'path');
  if (suffix !== undefined) checkString(suffix, 'suffix');
  // A suffix that is the whole path leaves nothing ('.js' of '.js').
  if (suffix !== undefined && suffix.length > 0 && suffix === path) return '';
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 47) end--;
  if (end === 0) return '';
  const base = path.slice(path.lastIndexOf('/', end - 1) + 1, end);
  if (suffix !== undefined && suffix.length > 0 && suffix !== base && base.endsWith(suffix)) {
    return base.slice(0, base.length - suffix.length);
  }
  return base;
}

function extname(path) {
  checkString(path, 'path');
  const base = basename(path);
  const dot = base.lastIndexOf('.');
  // A leading dot names a hidden file, not an extension ('.profile').
  if (dot <= 0 || base === '..') return '';
  return base.slice(dot);
}

// `format` for paths separated by `sep`.
function formatter(sep) {
  return function format(object) {
    if (object === null || typeof object !== 'object') {
      const error = new TypeError(`The "pathObject" argument must be of type object. Received ${object === null ? 'null' : typeof object}`);
      error.code = 'ERR_INVALID_ARG_TYPE';
      throw error;
    }
    const dir = object.dir || object.root;
    const ext = object.ext ? (object.ext.startsWith('.') ? object.ext : `.${object.ext}`) : '';
    const base = object.base || `${object.name || ''}${ext}`;
    if (!dir) return base;
    return dir === object.root ? `${dir}${base}` : `${dir}${sep}${base}`;
  };
}

const format = formatter('/');

function parse(path) {
  checkString(path, 'path');
  const root = path.charCodeAt(0) === 47 ? '/' : '';
  if (path.length === 0) return { root: '', dir: '', base: '', ext: '', name: '' };
  const base = basename(path);
  const ext = extname(path);
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  const slash = path.lastIndexOf('/', end - 1);
  const dir = slash === -1 ? '' : slash === 0 ? '/' : path.slice(0, slash);
  if (base === '') return { root, dir: root, base: '', ext: '', name: '' };
  return { root, dir, base, ext, name: ext ? base.slice(0, base.length - ext.length) : base };
}

const posix = {
  sep: '/',
  delimiter: ':',
  resolve,
  normalize,
  isAbsolute,
  join,
  relative,
  dirname,
  basename,
  extname,
  format,
  parse,
  toNamespacedPath: (path) => path,
  _makeLong: (path) => path,
  matchesGlob() {
    const error = new Error('path.matchesGlob is not implemented');
    error.code = 'ERR_METHOD_NOT_IMPLEMENTED';
    throw error;
  },
};

const win32 = {
  sep: '\\',
  delimiter: ';',
  ...require('node:internal/path_win32').make({ checkString, normalizeSegments, formatter, posix }),
  matchesGlob: posix.matchesGlob,
};
posix.posix = posix;
posix.win32 = win32;
win32.posix = posix;
win32.win32 = win32;

module.exports = posix;
