// 24_form_data.js — FormData (XHR Standard) and the form bodies of the
// Fetch Standard: `multipart/form-data` serialisation for `new Response(fd)`
// (HTML's multipart/form-data encoding algorithm) and `formData()` parsing.
// Multipart bodies are parsed by the host (host.formDataParse: the `multer`
// crate); urlencoded ones by the URLSearchParams parser (06_url.js).
'use strict';

// A Blob value becomes a File (named "blob" unless a filename is given); a
// File is renamed when a filename is given (XHR, "create an entry").
function entryValue(value, filename) {
  if (!internal.isBlob(value)) return internal.toUSVString(value);
  const bytes = internal.blobBytes(value);
  if (!internal.isFile(value)) {
    return internal.newFile(bytes, filename === undefined ? 'blob' : internal.toUSVString(filename), value.type, undefined);
  }
  if (filename === undefined) return value;
  return internal.newFile(bytes, internal.toUSVString(filename), value.type, value.lastModified);
}

// The (name, value[, filename]) overloads of append and set: with three
// arguments only the Blob one applies.
function entryArgs(args, what) {
  internal.requireArgs(args.length, 2, `Failed to execute '${what}' on 'FormData'`);
  if (args.length > 2 && !internal.isBlob(args[1])) {
    throw new TypeError(`Failed to execute '${what}' on 'FormData': parameter 2 is not of type 'Blob'.`);
  }
  const name = internal.toUSVString(args[0]);
  return [name, entryValue(args[1], args.length > 2 ? args[2] : undefined)];
}

class FormData {
  #list = []; // [name, string | File], in order

  constructor(form = undefined, submitter = undefined) {
    // There are no form elements here: any form argument fails the
    // HTMLFormElement conversion.
    if (form !== undefined) {
      throw new TypeError("Failed to construct 'FormData': parameter 1 is not of type 'HTMLFormElement'.");
    }
    void submitter;
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#list in self)) throw new TypeError('Illegal invocation');
  }

  append(name, value) {
    FormData.#check(this);
    this.#list.push(entryArgs(arguments, 'append'));
  }

  delete(name) {
    FormData.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'FormData'");
    name = internal.toUSVString(name);
    this.#list = this.#list.filter((e) => e[0] !== name);
  }

  get(name) {
    FormData.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'get' on 'FormData'");
    name = internal.toUSVString(name);
    const e = this.#list.find((e) => e[0] === name);
    return e === undefined ? null : e[1];
  }

  getAll(name) {
    FormData.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getAll' on 'FormData'");
    name = internal.toUSVString(name);
    return this.#list.filter((e) => e[0] === name).map((e) => e[1]);
  }

  has(name) {
    FormData.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'has' on 'FormData'");
    name = internal.toUSVString(name);
    return this.#list.some((e) => e[0] === name);
  }

  set(name, value) {
    FormData.#check(this);
    const entry = entryArgs(arguments, 'set');
    const i = this.#list.findIndex((e) => e[0] === entry[0]);
    if (i < 0) {
      this.#list.push(entry);
    } else {
      this.#list[i] = entry;
      this.#list = this.#list.filter((e, j) => j <= i || e[0] !== entry[0]);
    }
  }

  static {
    internal.isFormData = (v) => internal.isObject(v) && #list in v;
    internal.formDataList = (fd) => fd.#list;
    internal.newFormData = (list) => {
      const fd = new FormData();
      fd.#list = list;
      return fd;
    };
  }
}
internal.makePairIterable(FormData, 'FormData', internal.formDataList, (self) => {
  if (!internal.isFormData(self)) throw new TypeError('Illegal invocation');
});
internal.enumerableMembers(FormData, ['append', 'delete', 'get', 'getAll', 'has', 'set']);
internal.setToStringTag(FormData.prototype, 'FormData');
internal.defineGlobal('FormData', FormData);

// ---- multipart/form-data encoding (HTML Standard) ----

// Lone CR and lone LF become CRLF (names and string values).
const normalizeNewlines = (s) => s.replace(/\r\n|\r|\n/g, '\r\n');
// Names and filenames in the Content-Disposition header.
const escapeHeaderName = (s) => s.replace(/[\n\r"]/g, (c) => (c === '\n' ? '%0A' : c === '\r' ? '%0D' : '%22'));

// `{ bytes, type }` for a FormData body; the entry list is read now (a
// snapshot: later changes to the FormData do not change the body).
internal.serializeFormData = function serializeFormData(fd) {
  const boundary = '----IsolaneFormBoundary' + host.randomUUID().replaceAll('-', '');
  const chunks = [];
  let text = '';
  for (const [name, value] of internal.formDataList(fd)) {
    text += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeHeaderName(normalizeNewlines(name))}"`;
    if (typeof value === 'string') {
      text += `\r\n\r\n${normalizeNewlines(value)}\r\n`;
      continue;
    }
    const type = value.type === '' ? 'application/octet-stream' : value.type;
    text += `; filename="${escapeHeaderName(value.name)}"\r\nContent-Type: ${type}\r\n\r\n`;
    chunks.push(host.utf8Encode(text), internal.blobBytes(value));
    text = '\r\n';
  }
  text += `--${boundary}--\r\n`;
  chunks.push(host.utf8Encode(text));
  let total = 0;
  for (const c of chunks) total += c.byteLength;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) { bytes.set(c, offset); offset += c.byteLength; }
  return { bytes, type: `multipart/form-data; boundary=${boundary}` };
};

// ---- formData(): parsing a body ----

// The body's bytes and its Content-Type header value ('' when none) → a
// FormData; TypeError for another type or a malformed body.
internal.parseFormDataBody = function parseFormDataBody(bytes, type) {
  const entries = host.formDataParse(bytes, type);
  if (entries === null) {
    // The urlencoded parser decodes UTF-8 "without BOM": a BOM stays.
    return internal.newFormData(internal.parseForm(host.utf8Decode(bytes, false, true)));
  }
  const list = [];
  for (const e of entries) {
    // Parsed file parts have no modification time (lastModified 0).
    list.push(e.length === 2 ? e : [e[0], internal.newFile(e[1], e[2], e[3], 0)]);
  }
  return internal.newFormData(list);
};
