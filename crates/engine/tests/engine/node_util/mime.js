// node:util MIMEType/MIMEParams vectors: the body of an async function given `util`;
// node_util.rs compares its answer with mime.txt, what Node 20 answers (the WHATWG
// MIME Sniffing parse and serialize; workerd's answers differ where it strays from
// the standard: see node_util.rs).
const r = [];
const t = (f) => { try { const v = f(); r.push(typeof v === 'string' ? v : JSON.stringify(v) ?? String(v)); } catch (e) { r.push(`ERR ${e.name} ${e.code}: ${e.message}`); } };
const { MIMEType, MIMEParams } = util;
for (const s of ['text/html', ' Text/HTML ; Charset="utf-8" ; a=b ', 'text/plain;charset=utf-8;charset=x', 'a/b;c', 'a/b; c=', 'a/b;c="x\\"y\\\\z" ; d=e',
  'a/b;c="unterminated', '/b', 'a/', 'a', 'a b/c', 'a/b c', 'a/b;x=é', 'a/b;=v', 'a/b;x y=v', 'a/b;x="  "', 'a/b ;  X=Y', '\t a/b \n', 'a/b;c="x"junk;d=1',
  'a/b;c="\\', 'a/b;;;d=1', 'a/b;c=x\u0000', 'a/b;c=ÿ', 'a/b;c="a\\\\b"', 'a/b;c="a;b"', 'a/b;c="a=b"', 'a/b;c=\u0100', 'a/b;c="\u0100"', '', 'a/b;c=1;C=2', 'ÿ/b']) {
  t(() => { const m = new MIMEType(s); return [m.type, m.subtype, m.essence, [...m.params], String(m), JSON.stringify(m)]; });
}
t(() => { const m = new MIMEType('a/b;c=d'); m.type = 'X'; m.subtype = 'Y'; m.params.set('E', ''); m.params.set('f', 'g h'); m.params.delete('c'); return [String(m), m.params.has('E'), m.params.has('e'), m.params.get('nope'), [...m.params.keys()], [...m.params.values()], m.params.toJSON()]; });
t(() => { const m = new MIMEType('a/b'); m.type = ''; });
t(() => { const m = new MIMEType('a/b'); m.type = 'a b'; });
t(() => { const m = new MIMEType('a/b'); m.subtype = 'x/'; });
t(() => { const m = new MIMEType('a/b'); m.params.set('a b', 'x'); });
t(() => { const m = new MIMEType('a/b'); m.params.set('a', 'x\ny'); });
t(() => { const m = new MIMEType('a/b'); m.params.set('a', '\u0100'); });
t(() => { const m = new MIMEType('a/b'); m.type = ' x'; });
t(() => { const m = new MIMEType('a/b'); m.subtype = 'Y '; });
t(() => { const p = new MIMEParams(); p.set('k', 'v'); return [String(p), p.has('k'), p.get('k'), [...p]]; });
t(() => new MIMEType({ toString() { return 'x/y;Z=1'; } }).toString());
t(() => { const m = new MIMEType('a/b;c=1;d=2;e=3'); m.params.delete('c'); return String(m); });
t(() => { const m = new MIMEType('a/b;c=1;d=2;e=3'); m.params.delete('d'); m.params.set('c', '9'); return String(m); });
t(() => { const m = new MIMEType('a/b'); m.params.set('a', ''); m.params.set('b', 'x y'); m.params.set('q', '"\\'); return String(m); });
t(() => [typeof MIMEType.prototype.toString, Object.getOwnPropertyNames(MIMEParams.prototype).sort()]);
return r.join('\n---\n');
