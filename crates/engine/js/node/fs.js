// node:fs and node:fs/promises — importable, not functional: a Worker has
// no file system here (workerd's in-memory one is not built yet), so every
// function throws "not implemented"; `constants` are Linux's. Runs as
// function (host, internal, require, module, exports).

const { stubs, stubClass } = require('node:internal/errors');

const NAMES = [
  'access', 'appendFile', 'chmod', 'chown', 'copyFile', 'cp', 'lchown', 'link', 'lstat', 'lutimes',
  'mkdir', 'mkdtemp', 'open', 'opendir', 'readdir', 'readFile', 'readlink', 'realpath', 'rename',
  'rm', 'rmdir', 'stat', 'statfs', 'symlink', 'truncate', 'unlink', 'utimes', 'writeFile', 'glob',
];
const CALLBACK_ONLY = [
  'close', 'exists', 'fchmod', 'fchown', 'fdatasync', 'fstat', 'fsync', 'ftruncate', 'futimes',
  'read', 'readv', 'write', 'writev', 'createReadStream', 'createWriteStream', 'watch', 'watchFile',
  'unwatchFile',
];

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

const promises = { constants, ...stubs('fs.promises', NAMES, true) };

module.exports = {
  constants,
  promises,
  ...constants,
  ...stubs('fs', NAMES),
  ...stubs('fs', NAMES.map((name) => `${name}Sync`)),
  ...stubs('fs', CALLBACK_ONLY),
  ...stubs('fs', CALLBACK_ONLY.filter((n) => !n.startsWith('create') && !n.includes('atch')).map((n) => `${n}Sync`)),
  Stats: stubClass('fs.Stats'),
  Dirent: stubClass('fs.Dirent'),
  Dir: stubClass('fs.Dir'),
  ReadStream: stubClass('fs.ReadStream'),
  WriteStream: stubClass('fs.WriteStream'),
};
