// 01_dom_exception.js — DOMException (WebIDL).
'use strict';

const LEGACY_CODES = {
  IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
  NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InUseAttributeError: 10,
  InvalidStateError: 11, SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14,
  InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18, NetworkError: 19,
  AbortError: 20, URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23,
  InvalidNodeTypeError: 24, DataCloneError: 25,
};
const CONSTANTS = {
  INDEX_SIZE_ERR: 1, DOMSTRING_SIZE_ERR: 2, HIERARCHY_REQUEST_ERR: 3, WRONG_DOCUMENT_ERR: 4,
  INVALID_CHARACTER_ERR: 5, NO_DATA_ALLOWED_ERR: 6, NO_MODIFICATION_ALLOWED_ERR: 7, NOT_FOUND_ERR: 8,
  NOT_SUPPORTED_ERR: 9, INUSE_ATTRIBUTE_ERR: 10, INVALID_STATE_ERR: 11, SYNTAX_ERR: 12,
  INVALID_MODIFICATION_ERR: 13, NAMESPACE_ERR: 14, INVALID_ACCESS_ERR: 15, VALIDATION_ERR: 16,
  TYPE_MISMATCH_ERR: 17, SECURITY_ERR: 18, NETWORK_ERR: 19, ABORT_ERR: 20, URL_MISMATCH_ERR: 21,
  QUOTA_EXCEEDED_ERR: 22, TIMEOUT_ERR: 23, INVALID_NODE_TYPE_ERR: 24, DATA_CLONE_ERR: 25,
};

class DOMException extends Error {
  #name;
  #message;

  constructor(message = '', options = 'Error') {
    super();
    this.#message = internal.toDOMString(message);
    if (internal.isObject(options)) {
      this.#name = 'name' in options ? internal.toDOMString(options.name) : 'Error';
      if ('cause' in options) {
        Object.defineProperty(this, 'cause', { value: options.cause, writable: true, enumerable: false, configurable: true });
      }
    } else {
      this.#name = internal.toDOMString(options);
    }
    // The stack's first line was computed before the fields were set.
    if (typeof Error.captureStackTrace === 'function') Error.captureStackTrace(this, new.target);
  }

  static #check(self) {
    if (!(#name in self)) throw new TypeError('Illegal invocation');
  }

  get name() { DOMException.#check(this); return this.#name; }
  get message() { DOMException.#check(this); return this.#message; }
  get code() { DOMException.#check(this); return LEGACY_CODES[this.#name] ?? 0; }

  static isDOMException(v) { return internal.isObject(v) && #name in v; }
}

for (const [key, value] of Object.entries(CONSTANTS)) {
  const d = { value, writable: false, enumerable: true, configurable: false };
  Object.defineProperty(DOMException, key, d);
  Object.defineProperty(DOMException.prototype, key, d);
}
const isDOMException = DOMException.isDOMException;
delete DOMException.isDOMException;
internal.enumerableMembers(DOMException, ['name', 'message', 'code'], 'DOMException');
internal.isDOMException = isDOMException;
internal.DOMException = DOMException;
internal.defineGlobal('DOMException', DOMException);
