// node:path's win32: Windows paths as Node's path.win32 handles them on
// any platform. A path starts with its root: a drive ('C:', 'C:\'), a UNC
// share ('\\server\share'), a lone separator ('\'), or nothing; either
// slash separates. The working directory is '/', as for posix paths in
// a Worker. Runs as function (host, internal, require, module, exports)
// and exports make({ checkString, normalizeSegments, formatter, posix }).

const isSep = (c) => c === '/' || c === '\\';
const isDriveLetter = (c) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');

// \\server\share at the start of `path`: [device, end], or undefined.
function uncRoot(path) {
  let j = 2;
  while (j < path.length && !isSep(path[j])) j++;
  if (j === 2 || j >= path.length) return undefined;
  const server = path.slice(2, j);
  while (j < path.length && isSep(path[j])) j++;
  const shareStart = j;
  while (j < path.length && !isSep(path[j])) j++;
  if (j === shareStart) return undefined;
  return [`\\\\${server}\\${path.slice(shareStart, j)}`, j];
}

/** The root of `path`: its device ('' when none), whether it is absolute, where the rest starts. */
function parseRoot(path) {
  if (path.length === 0) return { device: '', absolute: false, end: 0 };
  if (isSep(path[0])) {
    const unc = path.length > 1 && isSep(path[1]) ? uncRoot(path) : undefined;
    return unc ? { device: unc[0], absolute: true, end: unc[1], unc: true } : { device: '', absolute: true, end: 1 };
  }
  if (path.length > 1 && path[1] === ':' && isDriveLetter(path[0])) {
    const absolute = path.length > 2 && isSep(path[2]);
    return { device: path.slice(0, 2), absolute, end: absolute ? 3 : 2 };
  }
  return { device: '', absolute: false, end: 0 };
}

function make(shared) {
  const { checkString, normalizeSegments } = shared;
  const segments = (path, aboveRoot) => normalizeSegments(path.replace(/\//g, '\\'), aboveRoot, '\\');
  // As posix resolve: the working directory of a Worker's paths is '/'.
  const cwd = () => '/';

  // The working directory of `device` when a relative path on it is resolved.
  function deviceCwd(device) {
    const path = globalThis.process?.env?.[`=${device}`] || cwd();
    if (path.slice(0, 2).toLowerCase() !== device.toLowerCase() && path[2] === '\\') return `${device}\\`;
    return path;
  }

  function resolve(...paths) {
    let device = '';
    let tail = '';
    let absolute = false;
    for (let i = paths.length - 1; i >= -1; i--) {
      let path;
      if (i >= 0) {
        path = paths[i];
        checkString(path, `paths[${i}]`);
        if (path.length === 0) continue;
      } else {
        path = device.length === 0 ? cwd() : deviceCwd(device);
      }
      const root = parseRoot(path);
      if (root.device.length > 0) {
        if (device.length === 0) device = root.device;
        else if (root.device.toLowerCase() !== device.toLowerCase()) continue;
      }
      if (absolute) {
        if (device.length > 0) break;
      } else {
        tail = `${path.slice(root.end)}\\${tail}`;
        absolute = root.absolute;
        if (absolute && device.length > 0) break;
      }
    }
    tail = segments(tail, !absolute);
    return absolute ? `${device}\\${tail}` : `${device}${tail}` || '.';
  }

  function normalize(path) {
    checkString(path, 'path');
    if (path.length === 0) return '.';
    if (path.length === 1) return isSep(path) ? '\\' : path;
    const root = parseRoot(path);
    // A bare share ('\\server\share') gets its root separator.
    if (root.unc && root.end === path.length) return `${root.device}\\`;
    let tail = root.end < path.length ? segments(path.slice(root.end), !root.absolute) : '';
    if (tail.length === 0 && !root.absolute) tail = '.';
    if (tail.length > 0 && isSep(path[path.length - 1])) tail += '\\';
    return root.absolute ? `${root.device}\\${tail}` : `${root.device}${tail}`;
  }

  function isAbsolute(path) {
    checkString(path, 'path');
    return parseRoot(path).absolute;
  }

  function join(...paths) {
    const parts = [];
    for (const path of paths) {
      checkString(path, 'path');
      if (path.length > 0) parts.push(path);
    }
    if (parts.length === 0) return '.';
    let joined = parts.join('\\');
    // Leading separators make a UNC root only when the first part has
    // exactly two of them followed by a name; more are cut to one.
    const first = parts[0];
    const double = first.length > 1 && isSep(first[0]) && isSep(first[1]);
    if (!(double && first.length > 2 && !isSep(first[2]))) {
      let slashes = 0;
      while (slashes < joined.length && isSep(joined[slashes])) slashes++;
      if (slashes >= 2) joined = `\\${joined.slice(slashes)}`;
    }
    return normalize(joined);
  }

  return { resolve, normalize, isAbsolute, join, ...names(shared, resolve, parseRoot) };
}

// The end of the root that dirname and parse keep: a UNC share's with the
// separator after it.
function rootLength(path) {
  const { end, unc } = parseRoot(path);
  return unc && isSep(path[end]) ? end + 1 : end;
}

// Where the last name of `path` starts and ends (trailing separators cut);
// a drive is never part of it.
function lastName(path) {
  const start = path.length > 1 && path[1] === ':' && isDriveLetter(path[0]) ? 2 : 0;
  let end = path.length;
  while (end > start && isSep(path[end - 1])) end--;
  let nameStart = end;
  while (nameStart > start && !isSep(path[nameStart - 1])) nameStart--;
  return { end, nameStart };
}

// relative, dirname, basename, extname, parse, format and toNamespacedPath.
function names(shared, resolve, root) {
  const { checkString, posix } = shared;
  const lower = (path) => path.toLowerCase();

  // Names are compared without case; the first name is the drive or server,
  // so paths on different ones have no relative path (the target is
  // returned), while two driveless rooted paths ('\\a', '\\b') share their root.
  function relative(from, to) {
    checkString(from, 'from');
    checkString(to, 'to');
    if (from === to) return '';
    const a = resolve(from);
    const b = resolve(to);
    if (lower(a) === lower(b)) return '';
    const partsA = a.split('\\').filter(Boolean);
    const partsB = b.split('\\').filter(Boolean);
    let common = 0;
    while (common < partsA.length && common < partsB.length && lower(partsA[common]) === lower(partsB[common])) common++;
    const rooted = root(a).device === '' && root(b).device === '';
    if (common === 0 && !rooted) return b;
    return [...Array(partsA.length - common).fill('..'), ...partsB.slice(common)].join('\\');
  }

  function dirname(path) {
    checkString(path, 'path');
    if (path.length === 1 && isSep(path)) return path;
    const { end, unc } = root(path);
    if (unc && end === path.length) return path;
    const keep = rootLength(path);
    let i = path.length;
    while (i > keep && isSep(path[i - 1])) i--;
    while (i > keep && !isSep(path[i - 1])) i--;
    if (i > keep) return path.slice(0, i - 1);
    return keep > 0 ? path.slice(0, keep) : '.';
  }

  function basename(path, suffix) {
    checkString(path, 'path');
    if (suffix !== undefined) checkString(suffix, 'suffix');
    if (suffix !== undefined && suffix === path) return '';
    const { end, nameStart } = lastName(path);
    return posix.basename(path.slice(nameStart, end), suffix);
  }

  function extname(path) {
    checkString(path, 'path');
    const { end, nameStart } = lastName(path);
    return posix.extname(path.slice(nameStart, end));
  }

  return { relative, dirname, basename, extname, ...shapes(shared, resolve, basename, extname) };
}

function shapes({ checkString, formatter }, resolve, basename, extname) {
  function parse(path) {
    checkString(path, 'path');
    const keep = rootLength(path);
    const rootPart = path.slice(0, keep);
    const base = keep === path.length ? '' : basename(path);
    if (base === '') return { root: rootPart, dir: rootPart, base: '', ext: '', name: '' };
    const { nameStart } = lastName(path);
    const dir = nameStart - 1 > keep ? path.slice(0, nameStart - 1) : rootPart;
    const ext = extname(path);
    return { root: rootPart, dir, base, ext, name: ext ? base.slice(0, base.length - ext.length) : base };
  }

  const format = formatter('\\');

  // An absolute path in the \\?\ namespace (\\?\UNC\ for a share).
  function toNamespacedPath(path) {
    if (typeof path !== 'string' || path.length === 0) return path;
    const resolved = resolve(path);
    if (resolved.length <= 2) return path;
    if (resolved.startsWith('\\\\')) {
      return resolved[2] === '?' || resolved[2] === '.' ? path : `\\\\?\\UNC\\${resolved.slice(2)}`;
    }
    if (isDriveLetter(resolved[0]) && resolved[1] === ':' && resolved[2] === '\\') return `\\\\?\\${resolved}`;
    return path;
  }

  return { parse, format, toNamespacedPath, _makeLong: toNamespacedPath };
}

module.exports = { make, parseRoot };
