// node:fs and node:fs/promises — workerd's in-memory file system: `/bundle`
// holds the Worker's modules, read-only (`fsBundleList`/`fsBundleRead`);
// `/tmp` is writable and each request's own (`fsContext` says which request
// a call belongs to), dropped when the request ends; `/dev` has null, zero,
// random and full. File bytes are Uint8Arrays, so they count against the
// Worker's memory limit. Path calls in sync, callback and promise forms;
// file descriptors (open/read/write/close, dropped with their request),
// fs/promises' FileHandle, and read/write streams; links and watching throw
// "not implemented". Runs as function (host, internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType, stubs, stubClass } = require('node:internal/errors');

const constants = Object.freeze({
  F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1,
  O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128, O_NOCTTY: 256, O_TRUNC: 512,
  O_APPEND: 1024, O_DIRECTORY: 65536, O_NOFOLLOW: 131072, O_SYNC: 1052672, O_DSYNC: 4096,
  O_NONBLOCK: 2048,
  S_IFMT: 61440, S_IFREG: 32768, S_IFDIR: 16384, S_IFCHR: 8192, S_IFBLK: 24576, S_IFIFO: 4096,
  S_IFLNK: 40960, S_IFSOCK: 49152,
  COPYFILE_EXCL: 1, COPYFILE_FICLONE: 2, COPYFILE_FICLONE_FORCE: 4,
  UV_FS_COPYFILE_EXCL: 1, UV_FS_COPYFILE_FICLONE: 2, UV_FS_COPYFILE_FICLONE_FORCE: 4,
});

const ERRNO = { EPERM: -1, ENOENT: -2, EEXIST: -17, ENOTDIR: -20, EISDIR: -21, EINVAL: -22, ENOSPC: -28, ENOTEMPTY: -39 };
const MESSAGES = {
  EPERM: 'operation not permitted', ENOENT: 'no such file or directory', EEXIST: 'file already exists',
  ENOTDIR: 'not a directory', EISDIR: 'illegal operation on a directory', EINVAL: 'invalid argument',
  ENOSPC: 'no space left on device', ENOTEMPTY: 'directory not empty',
};

// Node's error for a failed system call on `path`.
function fsError(code, syscall, path, dest) {
  const error = new Error(`${code}: ${MESSAGES[code]}, ${syscall} '${path}'${dest ? ` -> '${dest}'` : ''}`);
  Object.assign(error, { errno: ERRNO[code], code, syscall, path });
  if (dest) error.dest = dest;
  return error;
}

// === the tree ===

const dir = () => ({ type: 'dir', children: new Map(), mtime: Date.now(), birth: Date.now() });
const file = (data) => ({ type: 'file', data, mtime: Date.now(), birth: Date.now() });

// Each request's /tmp by its id; dropped when the request ends.
const tmps = new Map();
internal.requestEndHooks.add((ctx) => tmps.delete(ctx));

function tmp() {
  const ctx = host.fsContext();
  let root = tmps.get(ctx);
  if (root === undefined) tmps.set(ctx, (root = dir()));
  return root;
}

let bundleRoot;
function bundle() {
  if (bundleRoot !== undefined) return bundleRoot;
  bundleRoot = dir();
  const list = host.fsBundleList();
  for (let i = 0; i < list.length; i += 2) {
    const parts = list[i].split('/').filter(Boolean);
    let at = bundleRoot;
    for (const part of parts.slice(0, -1)) {
      if (!at.children.has(part)) at.children.set(part, dir());
      at = at.children.get(part);
    }
    at.children.set(parts[parts.length - 1], { type: 'file', bundled: list[i], size: list[i + 1], mtime: 0, birth: 0 });
  }
  return bundleRoot;
}

const devRoot = { ...dir(), children: new Map(['null', 'zero', 'random', 'full'].map((name) => [name, { type: 'dev', name, mtime: 0, birth: 0 }])) };

function toPath(path, name = 'path') {
  if (typeof path === 'string') return path;
  if (path instanceof URL) return require('node:url').fileURLToPath(path);
  if (ArrayBuffer.isView(path)) return Buffer.from(path.buffer, path.byteOffset, path.byteLength).toString();
  throw invalidArgType(name, 'of type string or an instance of Buffer or URL', path);
}

// The normalised absolute path (relative paths from /bundle, the working
// directory) and its segments.
function resolve(path, name) {
  const text = toPath(path, name);
  if (text.includes('\0')) throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument '${name || 'path'}' must be a string without null bytes. Received ${JSON.stringify(text)}`);
  const absolute = require('node:path').posix.resolve('/bundle', text);
  return [absolute, absolute.split('/').filter(Boolean)];
}

// The node at `segments`, or undefined; ENOTDIR when a file is in the way.
function lookup(segments, syscall, path) {
  let node = { type: 'dir', children: new Map([['bundle', null], ['tmp', null], ['dev', devRoot]]), mtime: 0, birth: 0 };
  for (let i = 0; i < segments.length; i++) {
    if (node.type !== 'dir') throw fsError('ENOTDIR', syscall, path);
    const name = segments[i];
    if (i === 0 && name === 'bundle') node = bundle();
    else if (i === 0 && name === 'tmp') node = tmp();
    else node = node.children.get(name);
    if (node === undefined) return undefined;
  }
  return node;
}

// The directory a new entry at `segments` goes in (under /tmp only).
function parentFor(segments, syscall, path) {
  if (segments[0] !== 'tmp' || segments.length < 2) throw fsError('EPERM', syscall, path);
  const parent = lookup(segments.slice(0, -1), syscall, path);
  if (parent === undefined) throw fsError('ENOENT', syscall, path);
  if (parent.type !== 'dir') throw fsError('ENOTDIR', syscall, path);
  return parent;
}

function existing(path, syscall) {
  const [absolute, segments] = resolve(path);
  const node = lookup(segments, syscall, absolute);
  if (node === undefined) throw fsError('ENOENT', syscall, absolute);
  return [node, absolute, segments];
}

function contents(node, syscall, path) {
  if (node.type === 'dir') throw fsError('EISDIR', syscall, path);
  if (node.type === 'dev') {
    if (node.name === 'null') return new Uint8Array(0);
    throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', `Reading /dev/${node.name} whole is not implemented on Isolane`);
  }
  if (node.bundled !== undefined) return host.fsBundleRead(node.bundled) ?? new Uint8Array(0);
  return node.data;
}

// === Stats and Dirent ===

const MODES = { dir: constants.S_IFDIR | 0o755, file: constants.S_IFREG | 0o644, dev: constants.S_IFCHR | 0o666 };

class Stats {
  constructor(node) {
    const size = node.type === 'file' ? (node.data ? node.data.length : node.size) : 0;
    Object.assign(this, {
      dev: 0, ino: 0, mode: MODES[node.type], nlink: 1, uid: 0, gid: 0, rdev: 0, size,
      blksize: 4096, blocks: Math.ceil(size / 512),
      atimeMs: node.mtime, mtimeMs: node.mtime, ctimeMs: node.mtime, birthtimeMs: node.birth,
      atime: new Date(node.mtime), mtime: new Date(node.mtime), ctime: new Date(node.mtime), birthtime: new Date(node.birth),
    });
  }

  isFile() { return (this.mode & constants.S_IFMT) === constants.S_IFREG; }

  isDirectory() { return (this.mode & constants.S_IFMT) === constants.S_IFDIR; }

  isCharacterDevice() { return (this.mode & constants.S_IFMT) === constants.S_IFCHR; }

  isSymbolicLink() { return false; }

  isBlockDevice() { return false; }

  isFIFO() { return false; }

  isSocket() { return false; }
}

class Dirent {
  constructor(name, parentPath, node) {
    this.name = name;
    this.parentPath = parentPath;
    this.path = parentPath;
    this._type = node.type;
  }

  isFile() { return this._type === 'file'; }

  isDirectory() { return this._type === 'dir'; }

  isCharacterDevice() { return this._type === 'dev'; }

  isSymbolicLink() { return false; }

  isBlockDevice() { return false; }

  isFIFO() { return false; }

  isSocket() { return false; }
}

// === the calls, synchronous ===

const encodingOf = (options) => (typeof options === 'string' ? options : options && options.encoding);
const flagOf = (options, fallback) => (options && typeof options === 'object' && options.flag) || fallback;

function dataBytes(data, options) {
  if (typeof data === 'string') return Buffer.from(data, encodingOf(options) || 'utf8');
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw invalidArgType('data', 'of type string or an instance of Buffer, TypedArray, or DataView', data);
}

function existsSync(path) {
  try {
    const [, segments] = resolve(path);
    return lookup(segments, 'access', '') !== undefined;
  } catch {
    return false;
  }
}

function statSync(path, options) {
  const [absolute, segments] = resolve(path);
  const node = lookup(segments, 'stat', absolute);
  if (node === undefined) {
    if (options && options.throwIfNoEntry === false) return undefined;
    throw fsError('ENOENT', 'stat', absolute);
  }
  return new Stats(node);
}

function accessSync(path, mode = constants.F_OK) {
  const [node, absolute, segments] = existing(path, 'access');
  if ((mode & constants.W_OK) && segments[0] !== 'tmp' && node.type !== 'dev') throw fsError('EPERM', 'access', absolute);
}

function readFileSync(path, options) {
  const [node, absolute] = existing(path, 'open');
  const bytes = contents(node, 'read', absolute);
  const encoding = encodingOf(options);
  const buffer = Buffer.from(bytes.slice());
  return encoding && encoding !== 'buffer' ? buffer.toString(encoding) : buffer;
}

function writeFileSync(path, data, options) {
  const [absolute, segments] = resolve(path);
  const flag = flagOf(options, 'w');
  const bytes = dataBytes(data, options);
  const node = lookup(segments, 'open', absolute);
  if (node !== undefined && node.type === 'dev') {
    if (node.name === 'full') throw fsError('ENOSPC', 'write', absolute);
    return;
  }
  if (node !== undefined && flag.includes('x')) throw fsError('EEXIST', 'open', absolute);
  if (node !== undefined && node.type === 'dir') throw fsError('EISDIR', 'open', absolute);
  const parent = parentFor(segments, 'open', absolute);
  if (node !== undefined && flag.startsWith('a')) {
    const joined = new Uint8Array(node.data.length + bytes.length);
    joined.set(node.data);
    joined.set(bytes, node.data.length);
    node.data = joined;
    node.mtime = Date.now();
    return;
  }
  parent.children.set(segments[segments.length - 1], file(bytes.slice()));
  parent.mtime = Date.now();
}

function appendFileSync(path, data, options) {
  const flag = flagOf(options, 'a');
  writeFileSync(path, data, typeof options === 'object' && options !== null ? { ...options, flag } : { encoding: options, flag });
}

function mkdirSync(path, options) {
  const [absolute, segments] = resolve(path);
  const recursive = Boolean(options && typeof options === 'object' && options.recursive);
  if (!recursive) {
    if (lookup(segments, 'mkdir', absolute) !== undefined) throw fsError('EEXIST', 'mkdir', absolute);
    parentFor(segments, 'mkdir', absolute).children.set(segments[segments.length - 1], dir());
    return undefined;
  }
  let first;
  for (let i = 1; i <= segments.length; i++) {
    const part = segments.slice(0, i);
    const node = lookup(part, 'mkdir', absolute);
    if (node !== undefined) {
      if (node.type !== 'dir') throw fsError(i === segments.length ? 'EEXIST' : 'ENOTDIR', 'mkdir', absolute);
      continue;
    }
    parentFor(part, 'mkdir', absolute).children.set(part[part.length - 1], dir());
    first ??= `/${part.join('/')}`;
  }
  return first;
}

function mkdtempSync(prefix) {
  const chars = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const random = Array.from(globalThis.crypto.getRandomValues(new Uint8Array(6)), (b) => chars[b % chars.length]).join('');
  const path = `${toPath(prefix, 'prefix')}${random}`;
  mkdirSync(path);
  return path;
}

function readdirSync(path, options) {
  const [node, absolute] = existing(path, 'scandir');
  if (node.type !== 'dir') throw fsError('ENOTDIR', 'scandir', absolute);
  const withTypes = Boolean(options && options.withFileTypes);
  const out = [];
  const walk = (at, where, prefix) => {
    const children = at === node && absolute === '/' ? [['bundle', bundle()], ['dev', devRoot], ['tmp', tmp()]] : [...at.children];
    for (const [name, child] of children.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      out.push(withTypes ? new Dirent(name, where, child) : `${prefix}${name}`);
      if (options && options.recursive && child.type === 'dir') walk(child, `${where}/${name}`, `${prefix}${name}/`);
    }
  };
  walk(node, absolute, '');
  return out;
}

// Removes the entry at `path`: a file (`unlink`), an empty directory
// (`rmdir`), or anything (`rm` with recursive).
function remove(path, syscall, { directory = false, recursive = false, force = false } = {}) {
  const [absolute, segments] = resolve(path);
  const node = lookup(segments, syscall, absolute);
  if (node === undefined) {
    if (force) return;
    throw fsError('ENOENT', syscall, absolute);
  }
  const parent = parentFor(segments, syscall, absolute);
  if (node.type === 'dir') {
    if (!directory && !recursive) throw fsError('EISDIR', syscall, absolute);
    if (!recursive && node.children.size > 0) throw fsError('ENOTEMPTY', syscall, absolute);
  } else if (directory) {
    throw fsError('ENOTDIR', syscall, absolute);
  }
  parent.children.delete(segments[segments.length - 1]);
  parent.mtime = Date.now();
}

const unlinkSync = (path) => remove(path, 'unlink');
const rmdirSync = (path, options) => remove(path, 'rmdir', { directory: true, recursive: Boolean(options && options.recursive) });
const rmSync = (path, options = {}) => remove(path, 'rm', { recursive: Boolean(options.recursive), force: Boolean(options.force) });

function renameSync(from, to) {
  const [source, fromSegments] = resolve(from, 'oldPath');
  const [target, toSegments] = resolve(to, 'newPath');
  const node = lookup(fromSegments, 'rename', source);
  if (node === undefined) throw fsError('ENOENT', 'rename', source, target);
  const oldParent = parentFor(fromSegments, 'rename', source);
  const newParent = parentFor(toSegments, 'rename', target);
  if (node.type === 'dir' && `${target}/`.startsWith(`${source}/`)) throw fsError('EINVAL', 'rename', source, target);
  oldParent.children.delete(fromSegments[fromSegments.length - 1]);
  newParent.children.set(toSegments[toSegments.length - 1], node);
}

function copyFileSync(src, dest, mode = 0) {
  const [node, source] = existing(src, 'copyfile');
  if ((mode & constants.COPYFILE_EXCL) && existsSync(dest)) {
    throw fsError('EEXIST', 'copyfile', source, resolve(dest, 'dest')[0]);
  }
  writeFileSync(dest, contents(node, 'copyfile', source));
}

function truncateSync(path, len = 0) {
  const [node, absolute, segments] = existing(path, 'open');
  if (node.type === 'dir') throw fsError('EISDIR', 'open', absolute);
  parentFor(segments, 'open', absolute);
  const data = new Uint8Array(len);
  data.set(node.data.subarray(0, len));
  node.data = data;
  node.mtime = Date.now();
}

function realpathSync(path) {
  return existing(path, 'realpath')[1];
}

// === file descriptors and streams ===

// Open files by descriptor: {node, path, position, read, write, append, ctx}.
const fds = new Map();
let nextFd = 3;
internal.requestEndHooks.add((ctx) => {
  for (const [fd, open] of fds) if (open.ctx === ctx) fds.delete(fd);
});

const FLAGS = {
  r: [true, false], rs: [true, false], 'r+': [true, true], 'rs+': [true, true],
  w: [false, true], wx: [false, true], 'w+': [true, true], 'wx+': [true, true],
  a: [false, true], ax: [false, true], 'a+': [true, true], 'ax+': [true, true],
};

function openSync(path, flags = 'r') {
  const [absolute, segments] = resolve(path);
  const mode = FLAGS[flags];
  if (mode === undefined) throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument 'flags' is invalid. Received '${flags}'`);
  let node = lookup(segments, 'open', absolute);
  if (node === undefined && flags.startsWith('r')) throw fsError('ENOENT', 'open', absolute);
  if (node !== undefined && flags.includes('x')) throw fsError('EEXIST', 'open', absolute);
  if (node !== undefined && node.type === 'dir' && mode[1]) throw fsError('EISDIR', 'open', absolute);
  if (mode[1] && node?.type !== 'dev') {
    const parent = parentFor(segments, 'open', absolute);
    if (node === undefined || flags.startsWith('w')) {
      node = file(new Uint8Array(0));
      parent.children.set(segments[segments.length - 1], node);
    }
  } else if (node.bundled !== undefined) {
    node = { ...node, data: contents(node, 'open', absolute) };
  }
  const fd = nextFd++;
  fds.set(fd, { node, path: absolute, position: 0, read: mode[0], write: mode[1], append: flags.startsWith('a'), ctx: host.fsContext() });
  return fd;
}

function openFile(fd, syscall) {
  const open = fds.get(fd);
  if (open === undefined) throw Object.assign(new Error(`EBADF: bad file descriptor, ${syscall}`), { errno: -9, code: 'EBADF', syscall });
  return open;
}

// readSync(fd, buffer, offset?, length?, position?) or (fd, buffer, {…}).
function readSync(fd, buffer, offset = 0, length, position = null) {
  if (offset !== null && typeof offset === 'object') ({ offset = 0, length, position = null } = offset);
  const open = openFile(fd, 'read');
  if (open.node.type === 'dir') throw fsError('EISDIR', 'read', open.path);
  const target = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  length ??= target.length - offset;
  const at = position ?? open.position;
  const { node } = open;
  let count;
  if (node.type === 'dev') {
    count = node.name === 'null' ? 0 : Math.min(length, 65536);
    const span = target.subarray(offset, offset + count);
    if (node.name === 'random') globalThis.crypto.getRandomValues(span);
    else span.fill(0);
  } else {
    const source = node.data.subarray(at, at + length);
    target.set(source, offset);
    count = source.length;
  }
  if (position === null) open.position += count;
  return count;
}

// writeSync(fd, buffer, offset?, length?, position?) or (fd, string,
// position?, encoding?).
function writeSync(fd, data, offset, length, position = null) {
  const open = openFile(fd, 'write');
  if (!open.write) throw Object.assign(new Error('EBADF: bad file descriptor, write'), { errno: -9, code: 'EBADF', syscall: 'write' });
  let bytes;
  if (typeof data === 'string') {
    bytes = Buffer.from(data, typeof length === 'string' ? length : 'utf8');
    position = typeof offset === 'number' ? offset : null;
  } else {
    const view = dataBytes(data);
    const start = offset ?? 0;
    bytes = view.subarray(start, start + (length ?? view.length - start));
  }
  const { node } = open;
  if (node.type === 'dev') {
    if (node.name === 'full') throw fsError('ENOSPC', 'write', open.path);
    return bytes.length;
  }
  const at = open.append ? node.data.length : (position ?? open.position);
  if (at + bytes.length > node.data.length) {
    const grown = new Uint8Array(at + bytes.length);
    grown.set(node.data);
    node.data = grown;
  }
  node.data.set(bytes, at);
  node.mtime = Date.now();
  if (position === null) open.position = at + bytes.length;
  return bytes.length;
}

const closeSync = (fd) => { openFile(fd, 'close'); fds.delete(fd); };
const fstatSync = (fd) => new Stats(openFile(fd, 'fstat').node);
const fsyncSync = (fd) => { openFile(fd, 'fsync'); };
function ftruncateSync(fd, len = 0) {
  const open = openFile(fd, 'ftruncate');
  const data = new Uint8Array(len);
  data.set(open.node.data.subarray(0, len));
  open.node.data = data;
}

// A Readable of a file's bytes (`start`, `end` inclusive, `highWaterMark`).
function createReadStream(path, options = {}) {
  const { Readable } = require('node:stream');
  const opts = typeof options === 'string' ? { encoding: options } : options;
  const [node, absolute] = existing(path, 'open');
  const bytes = contents(node, 'read', absolute);
  const start = opts.start ?? 0;
  const end = Math.min(opts.end ?? Infinity, bytes.length - 1);
  const step = opts.highWaterMark ?? 65536;
  let at = start;
  const stream = new Readable({
    encoding: opts.encoding,
    highWaterMark: step,
    read() {
      if (at > end) { this.push(null); return; }
      const chunk = Buffer.from(bytes.slice(at, Math.min(at + step, end + 1)));
      at += chunk.length;
      this.push(chunk);
    },
  });
  stream.path = absolute;
  return stream;
}

// A Writable into a file (`flags` `w` or `a`).
function createWriteStream(path, options = {}) {
  const { Writable } = require('node:stream');
  const opts = typeof options === 'string' ? { encoding: options } : options;
  const fd = openSync(path, opts.flags ?? 'w');
  const stream = new Writable({
    write(chunk, encoding, callback) {
      try {
        stream.bytesWritten += writeSync(fd, typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
        callback();
      } catch (e) {
        callback(e);
      }
    },
    final(callback) { closeSync(fd); callback(); },
  });
  stream.path = resolve(path)[0];
  stream.bytesWritten = 0;
  return stream;
}

// fs/promises' open: a FileHandle on a descriptor.
class FileHandle {
  constructor(fd) { this.fd = fd; }

  async read(buffer, offset, length, position) {
    const bytesRead = readSync(this.fd, buffer, offset, length, position);
    return { bytesRead, buffer };
  }

  async write(data, ...rest) {
    const bytesWritten = writeSync(this.fd, data, ...rest);
    return { bytesWritten, buffer: data };
  }

  async readFile(options) {
    const open = openFile(this.fd, 'read');
    const buffer = Buffer.from(open.node.data.slice(open.position));
    open.position = open.node.data.length;
    const encoding = encodingOf(options);
    return encoding && encoding !== 'buffer' ? buffer.toString(encoding) : buffer;
  }

  async writeFile(data, options) { writeSync(this.fd, dataBytes(data, options)); }

  async appendFile(data, options) { writeSync(this.fd, dataBytes(data, options)); }

  async stat() { return fstatSync(this.fd); }

  async truncate(len) { ftruncateSync(this.fd, len); }

  async sync() {}

  async datasync() {}

  async close() { if (fds.has(this.fd)) closeSync(this.fd); }

  async [Symbol.asyncDispose]() { await this.close(); }
}

const SYNC = {
  access: accessSync, appendFile: appendFileSync, copyFile: copyFileSync,
  lstat: statSync, mkdir: mkdirSync, mkdtemp: mkdtempSync, readdir: readdirSync,
  readFile: readFileSync, realpath: realpathSync, rename: renameSync, rm: rmSync, rmdir: rmdirSync,
  stat: statSync, truncate: truncateSync, unlink: unlinkSync, writeFile: writeFileSync,
  open: openSync, close: closeSync, read: readSync, write: writeSync, fstat: fstatSync,
  fsync: fsyncSync, fdatasync: fsyncSync, ftruncate: ftruncateSync,
};
realpathSync.native = realpathSync;

// The callback form: the sync call's answer in a later microtask.
function callbackForm(sync) {
  return function (...args) {
    const callback = args.pop();
    if (typeof callback !== 'function') throw invalidArgType('cb', 'of type function', callback);
    let value;
    let error = null;
    try { value = sync(...args); } catch (e) { error = e; }
    queueMicrotask(() => callback(error, value));
  };
}

const NOT_THERE = [
  'chmod', 'chown', 'cp', 'lchown', 'link', 'lutimes', 'opendir', 'readlink', 'statfs', 'symlink',
  'utimes', 'glob',
];
const FD_ONLY = ['fchmod', 'fchown', 'futimes', 'readv', 'writev'];

const promises = { constants, ...stubs('fs.promises', NOT_THERE, true) };
const fs = {
  constants,
  promises,
  ...constants,
  ...stubs('fs', NOT_THERE),
  ...stubs('fs', NOT_THERE.map((name) => `${name}Sync`)),
  ...stubs('fs', FD_ONLY),
  ...stubs('fs', FD_ONLY.map((name) => `${name}Sync`)),
  ...stubs('fs', ['watch', 'watchFile', 'unwatchFile']),
  createReadStream,
  createWriteStream,
  existsSync,
  exists: (path, callback) => { const found = existsSync(path); queueMicrotask(() => callback(found)); },
  Stats,
  Dirent,
  Dir: stubClass('fs.Dir'),
  ReadStream: stubClass('fs.ReadStream'),
  WriteStream: stubClass('fs.WriteStream'),
};
const FD_CALLS = ['open', 'close', 'read', 'write', 'fstat', 'fsync', 'fdatasync', 'ftruncate'];
for (const [name, sync] of Object.entries(SYNC)) {
  fs[`${name}Sync`] = sync;
  fs[name] = callbackForm(sync);
  // fs/promises' open gives a FileHandle (below); the others have no promise form.
  if (!FD_CALLS.includes(name)) promises[name] = async (...args) => sync(...args);
}
promises.open = async (path, flags, mode) => new FileHandle(openSync(path, flags, mode));

module.exports = fs;
