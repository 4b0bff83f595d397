const r = [];
const T = '/tmp/isolane-fs-check';
r.push(fs.existsSync(T), fs.mkdirSync(`${T}/a/b`, { recursive: true }), fs.mkdirSync(`${T}/a/b`, { recursive: true }));
fs.writeFileSync(`${T}/a/one.txt`, 'hello');
fs.appendFileSync(`${T}/a/one.txt`, Buffer.from(' world'));
r.push(fs.readFileSync(`${T}/a/one.txt`, 'utf8'), fs.readFileSync(`${T}/a/one.txt`).length, fs.readFileSync(`${T}/a/one.txt`, { encoding: 'base64' }));
const st = fs.statSync(`${T}/a/one.txt`);
r.push(st.size, st.isFile(), st.isDirectory(), fs.statSync(`${T}/a`).isDirectory(), fs.statSync(`${T}/nope`, { throwIfNoEntry: false }));
r.push(fs.readdirSync(`${T}/a`).join(','), fs.readdirSync(`${T}/a`, { withFileTypes: true }).map((d) => `${d.name}:${d.isDirectory()}`).join(','));
fs.renameSync(`${T}/a/one.txt`, `${T}/a/b/two.txt`);
fs.copyFileSync(`${T}/a/b/two.txt`, `${T}/three.txt`);
r.push(fs.existsSync(`${T}/a/one.txt`), fs.readFileSync(`${T}/three.txt`, 'latin1'), fs.readdirSync(T, { recursive: true }).sort().join(','));
for (const f of [
  () => fs.readFileSync(`${T}/missing`), () => fs.mkdirSync(`${T}/a`), () => fs.rmdirSync(`${T}/a`),
  () => fs.readFileSync(`${T}/a`), () => fs.unlinkSync(`${T}/a`), () => fs.writeFileSync(`${T}/three.txt`, 'x', { flag: 'wx' }),
  () => fs.readdirSync(`${T}/three.txt`), () => fs.copyFileSync(`${T}/three.txt`, `${T}/a/b/two.txt`, fs.constants.COPYFILE_EXCL),
]) {
  try { f(); r.push('no error'); } catch (e) { r.push(`${e.code}/${e.syscall}/${e.errno}`); }
}
try { fs.readFileSync(`${T}/missing`); } catch (e) { r.push(e.message); }
fs.truncateSync(`${T}/three.txt`, 4);
r.push(fs.readFileSync(`${T}/three.txt`, 'utf8'));
r.push(await fsp.readFile(`${T}/a/b/two.txt`, 'utf8'), await fsp.stat(`${T}/nope`).catch((e) => e.code));
await fsp.writeFile(`${T}/p.txt`, 'promised'); r.push((await fsp.readdir(T)).join(','));
r.push(await new Promise((res) => fs.readFile(`${T}/p.txt`, 'utf8', (e, d) => res(e ? e.code : d))));
r.push(await new Promise((res) => fs.stat(`${T}/zz`, (e) => res(e.code))));
fs.writeFileSync('/dev/null', 'gone');
r.push(fs.readFileSync('/dev/null').length, fs.statSync('/dev/null').isCharacterDevice());
try { fs.writeFileSync('/dev/full', 'x'); } catch (e) { r.push(e.code); }
const fd = fs.openSync(`${T}/fd.txt`, 'w+');
r.push(fs.writeSync(fd, 'abcdef'), fs.writeSync(fd, Buffer.from('XY'), 0, 2, 1));
const got = Buffer.alloc(10);
r.push(fs.readSync(fd, got, 0, 10, 0), got.toString('utf8', 0, 6), fs.fstatSync(fd).size);
fs.closeSync(fd);
try { fs.closeSync(fd); } catch (e) { r.push(e.code); }
const z = fs.openSync('/dev/zero', 'r'); const zb = Buffer.alloc(4, 1); r.push(fs.readSync(z, zb), zb.join('')); fs.closeSync(z);
await new Promise((res, rej) => { const w = fs.createWriteStream(`${T}/s.txt`); w.on('finish', res).on('error', rej); w.write('one,'); w.end('two'); });
r.push(await new Promise((res, rej) => { let t = ''; fs.createReadStream(`${T}/s.txt`, { encoding: 'utf8', start: 1, highWaterMark: 2 }).on('data', (c) => { t += c + '/'; }).on('end', () => res(t)).on('error', rej); }));
const handle = await fsp.open(`${T}/h.txt`, 'w+');
r.push((await handle.write('handle text')).bytesWritten, (await handle.stat()).size);
const hb = Buffer.alloc(6); r.push((await handle.read(hb, 0, 6, 7)).bytesRead, hb.toString('utf8', 0, 4));
await handle.close();
r.push(await fsp.readFile(`${T}/h.txt`, 'utf8'));
fs.rmSync(T, { recursive: true });
r.push(fs.existsSync(T), fs.rmSync(`${T}/x`, { force: true }));
