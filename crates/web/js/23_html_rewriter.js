// 23_html_rewriter.js — HTMLRewriter (the Workers API) over Cloudflare's
// lol_html, which the host runs on a coroutine (HOST.md, host/html_rewriter).
// transform() returns a Response whose body is rewritten as it is read: each
// input chunk goes to the host in slices; when lol_html reaches a token a
// handler wants, the host returns a call, the worker's handler runs here
// (awaited when it returns a promise: the rewrite waits), its token methods
// act on the live token through host.htmlRewriterOp, and the rewrite goes
// on with host.htmlRewriterContinue.
'use strict';

const SLICE = 64 * 1024;
const kCreate = Symbol('create');
const INVALID = 'This content token is no longer valid: handlers may use a token only until they return (or their promise settles).';

// Inserts `content` with operation `op`. A string goes in at once; a
// ReadableStream or Response is read whole first, and the rewrite waits for
// it as for a handler's promise (inserts after it in the same handler wait
// their turn, so content lands in call order).
function insert(token, op, content, options) {
  Token.check(token);
  if (content === undefined) throw new TypeError(`Failed to execute '${op}': 1 argument required, but only 0 present.`);
  const html = Boolean(internal.toDictionary(options, 'ContentOptions').html);
  const session = Token.session(token);
  if (internal.isResponse(content) || internal.isReadableStream(content)) {
    const text = (internal.isResponse(content) ? content : new Response(content)).text();
    text.then(undefined, () => {}); // its failure is the chain's, below
    session.pending = Promise.resolve(session.pending).then(() => text).then((s) => Token.op(token, op, s, html));
  } else if (session.pending !== null) {
    const s = internal.toDOMString(content);
    session.pending = session.pending.then(() => Token.op(token, op, s, html));
  } else {
    Token.op(token, op, internal.toDOMString(content), html);
    return;
  }
  // Handled here; runCall awaits (and reports) it.
  session.pending.then(undefined, () => {});
}

// The base of every token: which session it belongs to, and whether its
// handler is still running.
class Token {
  #session;
  #live = true;
  constructor(key, session) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#session = session;
  }
  static check(self) {
    if (!internal.isObject(self) || !(#session in self)) throw new TypeError('Illegal invocation');
    if (!self.#live) throw new TypeError(INVALID);
  }
  static op(self, op, a = undefined, b = undefined) {
    Token.check(self);
    return host.htmlRewriterOp(self.#session.id, op, a, b);
  }
  static session(self) { return self.#session; }
  static invalidate(self) { self.#live = false; }
}

class Element extends Token {
  get tagName() { return Token.op(this, 'tagName'); }
  set tagName(name) { Token.op(this, 'setTagName', internal.toDOMString(name)); }
  get attributes() { return Token.op(this, 'attributes')[Symbol.iterator](); }
  get namespaceURI() { return Token.op(this, 'namespaceURI'); }
  get removed() { return Token.op(this, 'removed'); }
  get selfClosing() { return Token.op(this, 'selfClosing'); }
  get canHaveContent() { return Token.op(this, 'canHaveContent'); }
  getAttribute(name) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getAttribute' on 'Element'");
    return Token.op(this, 'getAttribute', internal.toDOMString(name));
  }
  hasAttribute(name) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'hasAttribute' on 'Element'");
    return Token.op(this, 'hasAttribute', internal.toDOMString(name));
  }
  setAttribute(name, value) {
    internal.requireArgs(arguments.length, 2, "Failed to execute 'setAttribute' on 'Element'");
    Token.op(this, 'setAttribute', internal.toDOMString(name), internal.toDOMString(value));
    return this;
  }
  removeAttribute(name) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'removeAttribute' on 'Element'");
    Token.op(this, 'removeAttribute', internal.toDOMString(name));
    return this;
  }
  before(content, options = undefined) { insert(this, 'before', content, options); return this; }
  after(content, options = undefined) { insert(this, 'after', content, options); return this; }
  prepend(content, options = undefined) { insert(this, 'prepend', content, options); return this; }
  append(content, options = undefined) { insert(this, 'append', content, options); return this; }
  replace(content, options = undefined) { insert(this, 'replace', content, options); return this; }
  setInnerContent(content, options = undefined) { insert(this, 'setInnerContent', content, options); return this; }
  remove() { Token.op(this, 'remove'); return this; }
  removeAndKeepContent() { Token.op(this, 'removeAndKeepContent'); return this; }
  onEndTag(handler) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'onEndTag' on 'Element'");
    if (typeof handler !== 'function') throw new TypeError("Failed to execute 'onEndTag' on 'Element': the handler is not a function.");
    const session = Token.session(this);
    const tag = ++session.lastTag;
    Token.op(this, 'onEndTag', tag);
    session.endTags.set(tag, handler);
  }
}

class EndTag extends Token {
  get name() { return Token.op(this, 'tagName'); }
  set name(name) { Token.op(this, 'setName', internal.toDOMString(name)); }
  before(content, options = undefined) { insert(this, 'before', content, options); return this; }
  after(content, options = undefined) { insert(this, 'after', content, options); return this; }
  remove() { Token.op(this, 'remove'); return this; }
}

class Text extends Token {
  #text;
  #last;
  constructor(key, session, text, last) {
    super(key, session);
    this.#text = text;
    this.#last = last;
  }
  get text() { Token.check(this); return this.#text; }
  get lastInTextNode() { Token.check(this); return this.#last; }
  get removed() { return Token.op(this, 'removed'); }
  before(content, options = undefined) { insert(this, 'before', content, options); return this; }
  after(content, options = undefined) { insert(this, 'after', content, options); return this; }
  replace(content, options = undefined) { insert(this, 'replace', content, options); return this; }
  remove() { Token.op(this, 'remove'); return this; }
}

class Comment extends Token {
  #text;
  constructor(key, session, text) {
    super(key, session);
    this.#text = text;
  }
  get text() { Token.check(this); return this.#text; }
  set text(value) {
    const text = internal.toDOMString(value);
    Token.op(this, 'setText', text);
    this.#text = text;
  }
  get removed() { return Token.op(this, 'removed'); }
  before(content, options = undefined) { insert(this, 'before', content, options); return this; }
  after(content, options = undefined) { insert(this, 'after', content, options); return this; }
  replace(content, options = undefined) { insert(this, 'replace', content, options); return this; }
  remove() { Token.op(this, 'remove'); return this; }
}

class Doctype extends Token {
  #name;
  #publicId;
  #systemId;
  constructor(key, session, name, publicId, systemId) {
    super(key, session);
    this.#name = name;
    this.#publicId = publicId;
    this.#systemId = systemId;
  }
  get name() { Token.check(this); return this.#name; }
  get publicId() { Token.check(this); return this.#publicId; }
  get systemId() { Token.check(this); return this.#systemId; }
  get removed() { return Token.op(this, 'removed'); }
  remove() { Token.op(this, 'remove'); return this; }
}

class DocumentEnd extends Token {
  append(content, options = undefined) { insert(this, 'append', content, options); return this; }
}

for (const [cls, name, members] of [
  [Element, 'Element', ['tagName', 'attributes', 'namespaceURI', 'removed', 'selfClosing', 'canHaveContent', 'getAttribute',
    'hasAttribute', 'setAttribute', 'removeAttribute', 'before', 'after', 'prepend', 'append', 'replace',
    'setInnerContent', 'remove', 'removeAndKeepContent', 'onEndTag']],
  [EndTag, 'EndTag', ['name', 'before', 'after', 'remove']],
  [Text, 'Text', ['text', 'lastInTextNode', 'removed', 'before', 'after', 'replace', 'remove']],
  [Comment, 'Comment', ['text', 'removed', 'before', 'after', 'replace', 'remove']],
  [Doctype, 'Doctype', ['name', 'publicId', 'systemId', 'removed', 'remove']],
  [DocumentEnd, 'DocumentEnd', ['append']],
]) {
  internal.enumerableMembers(cls, members);
  internal.setToStringTag(cls.prototype, name);
}

function errorText(e) {
  try {
    if (internal.isObject(e) && typeof e.message === 'string') return `${e.name || 'Error'}: ${e.message}`;
    return String(e);
  } catch {
    return 'a handler failed';
  }
}

// Runs the worker's handler for one call from the host; returns the host's
// next step. A handler's exception (or rejection) fails the rewrite with
// that very error.
async function runCall(session, call) {
  const kind = call[0];
  let handler, receiver, token;
  if (kind === 'endTag') {
    handler = session.endTags.get(call[1]);
    session.endTags.delete(call[1]);
    token = new EndTag(kCreate, session);
  } else {
    const registration = session.registrations[call[1]];
    handler = registration.handlers[kind];
    receiver = registration.receiver;
    if (kind === 'element') token = new Element(kCreate, session);
    else if (kind === 'comments') token = new Comment(kCreate, session, call[2]);
    else if (kind === 'text') token = new Text(kCreate, session, call[2], call[3]);
    else if (kind === 'doctype') token = new Doctype(kCreate, session, call[2], call[3], call[4]);
    else token = new DocumentEnd(kCreate, session);
  }
  try {
    const result = handler.call(receiver, token);
    if (internal.isObject(result) && typeof result.then === 'function') await result;
    // Content still being read for this token (a stream or Response).
    while (session.pending !== null) {
      const pending = session.pending;
      await pending;
      if (session.pending === pending) session.pending = null;
    }
  } catch (e) {
    session.pending = null;
    Token.invalidate(token);
    session.failure = { error: e };
    try {
      host.htmlRewriterContinue(session.id, errorText(e));
    } catch {
      // the rewrite fails with the handler's own error, thrown below
    }
    throw e;
  }
  Token.invalidate(token);
  return host.htmlRewriterContinue(session.id, null);
}

// Feeds one host step's output to the stream and runs its handler calls
// until the host wants more input (or the rewrite ended). Returns whether it
// enqueued anything.
async function drive(session, controller, step) {
  let produced = false;
  for (;;) {
    const [output, call] = step;
    if (output !== null) {
      controller.enqueue(output);
      produced = true;
    }
    if (call === null) return produced;
    step = await runCall(session, call);
  }
}

function toBytes(value) {
  const bytes = internal.chunkBytes(value, true);
  if (bytes === null) throw new TypeError('HTMLRewriter: the response body produced a chunk that is not bytes.');
  return bytes;
}

// The rewritten body: a pull source over the original body's reader.
function rewrittenBody(registrations, source, charset) {
  const session = { id: 0, registrations, endTags: new Map(), lastTag: 0, failure: null, pending: null };
  const reader = internal.acquireReader(source);
  let finished = false;
  const finish = () => {
    finished = true;
    if (session.id !== 0) host.htmlRewriterFree(session.id);
    reader.release();
  };
  return new ReadableStream({
    async pull(controller) {
      if (finished) return;
      try {
        if (session.id === 0) {
          session.id = host.htmlRewriterStart(registrations.map((r) => r.spec), charset);
        }
        // Until something comes out: lol_html may hold a chunk back (a tag
        // cut in two), and a pull that enqueues nothing is not repeated.
        for (;;) {
          await reader.read();
          if (reader.done) {
            await drive(session, controller, host.htmlRewriterEnd(session.id));
            finish();
            controller.close();
            return;
          }
          const bytes = toBytes(reader.value);
          let produced = false;
          for (let at = 0; at < bytes.byteLength; at += SLICE) {
            const step = host.htmlRewriterWrite(session.id, bytes.subarray(at, at + SLICE));
            if (await drive(session, controller, step)) produced = true;
          }
          if (produced) return;
        }
      } catch (e) {
        const error = session.failure !== null ? session.failure.error : e;
        reader.cancel(error).then(undefined, () => {});
        finish();
        throw error;
      }
    },
    cancel(reason) {
      if (finished) return undefined;
      const cancelled = reader.cancel(reason);
      finish();
      return cancelled;
    },
  });
}

function handlerSet(handlers, names, what) {
  if (!internal.isObject(handlers)) throw new TypeError(`${what}: the handlers must be an object.`);
  const picked = {};
  for (const name of names) {
    const fn = handlers[name];
    if (fn === undefined) continue;
    if (typeof fn !== 'function') throw new TypeError(`${what}: handlers.${name} is not a function.`);
    picked[name] = fn;
  }
  return picked;
}

class HTMLRewriter {
  #registrations = [];

  static #check(self) {
    if (!internal.isObject(self) || !(#registrations in self)) throw new TypeError('Illegal invocation');
  }

  on(selector, handlers) {
    HTMLRewriter.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'on' on 'HTMLRewriter'");
    const text = internal.toDOMString(selector);
    host.htmlRewriterSelector(text);
    const picked = handlerSet(handlers, ['element', 'comments', 'text'], "Failed to execute 'on' on 'HTMLRewriter'");
    this.#registrations.push({
      spec: [0, text, 'element' in picked, 'comments' in picked, 'text' in picked],
      handlers: picked,
      receiver: handlers,
    });
    return this;
  }

  onDocument(handlers) {
    HTMLRewriter.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'onDocument' on 'HTMLRewriter'");
    const picked = handlerSet(handlers, ['doctype', 'comments', 'text', 'end'], "Failed to execute 'onDocument' on 'HTMLRewriter'");
    this.#registrations.push({
      spec: [1, 'doctype' in picked, 'comments' in picked, 'text' in picked, 'end' in picked],
      handlers: picked,
      receiver: handlers,
    });
    return this;
  }

  transform(response) {
    HTMLRewriter.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'transform' on 'HTMLRewriter'");
    if (!internal.isResponse(response)) {
      throw new TypeError("Failed to execute 'transform' on 'HTMLRewriter': parameter 1 is not of type 'Response'.");
    }
    if (response.bodyUsed) throw new TypeError(`HTMLRewriter: ${internal.BODY_USED_MESSAGE}`);
    const init = { status: response.status, statusText: response.statusText, headers: response.headers };
    // Nothing to rewrite (a null-body status, or no body at all).
    if (response.body === null) return new Response(null, init);
    // The document's encoding, from Content-Type (UTF-8 without one).
    const type = response.headers.get('content-type');
    const charset = type === null ? null : (/;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type)?.[1] ?? null);
    const body = rewrittenBody(this.#registrations.slice(), response.body, charset);
    const out = new Response(body, init);
    // The rewritten body has a length of its own.
    out.headers.delete('content-length');
    return out;
  }
}
internal.enumerableMembers(HTMLRewriter, ['on', 'onDocument', 'transform']);
internal.setToStringTag(HTMLRewriter.prototype, 'HTMLRewriter');

internal.defineGlobal('HTMLRewriter', HTMLRewriter);
