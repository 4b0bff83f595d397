//! `node:buffer`'s argument checks and edge cases as Node 20 has them (what
//! Node's own test/parallel files found different): each line is one call's
//! result or its error's code and message, compared with what Node prints
//! for the same call.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;

/// The body's helper: `out` collects `check(f)` lines, returned joined.
const CHECK: &str = "const out = [];
    const check = (f) => { try { out.push('ok ' + String(f())); } catch (e) { out.push(`${e.code ?? e.name}: ${e.message}`); } };";

async fn lines(body: &str) -> String {
    let imports = "import { Buffer } from 'node:buffer'; import * as buffer from 'node:buffer'; import util from 'node:util';";
    answer(
        NodeCompat::V2,
        imports,
        &format!("{CHECK}\n{body}\nreturn out.join('\\n');"),
    )
    .await
}

#[tokio::test]
async fn messages_name_the_value_received() {
    let out = lines(
        "check(() => Buffer.concat(undefined));
        check(() => Buffer.concat([42]));
        check(() => Buffer.concat([Buffer.from('a')], 3.5));
        check(() => Buffer.concat([Buffer.from('a')], -2));
        check(() => Buffer.alloc('12'));
        check(() => Buffer.alloc(4).readUIntLE(0, '2'));
        check(() => buffer.isAscii('x'));",
    )
    .await;
    assert_eq!(
        out,
        [
            r#"ERR_INVALID_ARG_TYPE: The "list" argument must be an instance of Array. Received undefined"#,
            r#"ERR_INVALID_ARG_TYPE: The "list[0]" argument must be an instance of Buffer or Uint8Array. Received type number (42)"#,
            r#"ERR_OUT_OF_RANGE: The value of "length" is out of range. It must be an integer. Received 3.5"#,
            r#"ERR_OUT_OF_RANGE: The value of "length" is out of range. It must be >= 0 && <= 4294967296. Received -2"#,
            r#"ERR_INVALID_ARG_TYPE: The "size" argument must be of type number. Received type string ('12')"#,
            r#"ERR_INVALID_ARG_TYPE: The "byteLength" argument must be of type number. Received type string ('2')"#,
            r#"ERR_INVALID_ARG_TYPE: The "input" argument must be an instance of ArrayBuffer, Buffer, or TypedArray. Received type string ('x')"#,
        ]
        .join("\n")
    );
}

#[tokio::test]
async fn copy_and_compare_check_their_positions() {
    let out = lines(
        "const b = () => Buffer.from('abcd');
        const copy = (...args) => { const t = Buffer.alloc(4); const n = b().copy(t, ...args); return n + ' ' + t.toString('hex'); };
        check(() => copy(0, -1));
        check(() => copy(-1));
        check(() => copy(0, 0, -1));
        check(() => copy(0, 5));
        check(() => copy(0, 1.5));
        check(() => copy(1.5));
        check(() => copy(0, 0, 9));
        check(() => copy(9));
        check(() => b().copy(new Uint16Array(2)));
        check(() => Buffer.from('ab').compare(Buffer.from('ab'), '0'));
        check(() => Buffer.from('ab').compare(Buffer.from('ab'), 0, 3));
        check(() => Buffer.from('ab').compare(Buffer.from('ab'), 0, 2, 1, 1));
        check(() => Buffer.from('ab').compare(Buffer.from('ab'), 1, 1));",
    )
    .await;
    assert_eq!(
        out,
        [
            // Node 20 says ">= 0 && <= 4" here; workerd (and Node's
            // test-buffer-copy.js) say ">= 0".
            r#"ERR_OUT_OF_RANGE: The value of "sourceStart" is out of range. It must be >= 0. Received -1"#,
            r#"ERR_OUT_OF_RANGE: The value of "targetStart" is out of range. It must be >= 0. Received -1"#,
            r#"ERR_OUT_OF_RANGE: The value of "sourceEnd" is out of range. It must be >= 0. Received -1"#,
            r#"ERR_OUT_OF_RANGE: The value of "sourceStart" is out of range. It must be >= 0 && <= 4. Received 5"#,
            "ok 3 62636400",
            "ok 3 00616263",
            "ok 4 61626364",
            "ok 0 00000000",
            r#"ERR_INVALID_ARG_TYPE: The "target" argument must be an instance of Buffer or Uint8Array. Received an instance of Uint16Array"#,
            r#"ERR_INVALID_ARG_TYPE: The "targetStart" argument must be of type number. Received type string ('0')"#,
            r#"ERR_OUT_OF_RANGE: The value of "targetEnd" is out of range. It must be >= 0 && <= 2. Received 3"#,
            "ok -1",
            "ok 1",
        ]
        .join("\n")
    );
}

#[tokio::test]
async fn to_string_swap_and_views_as_node() {
    let out = lines(
        "check(() => Buffer.from('ab').toString(null));
        check(() => Buffer.from('ab').toString(''));
        check(() => Buffer.alloc(3).fill(0, 1, 2, 5).length);
        check(() => Buffer.alloc(3).fill('a', 0, 3, 5));
        check(() => Buffer.alloc(4).write('abcd', 1, 2) + ' ' + Buffer.from('ab').write('x', 'hex'));
        check(() => Buffer.from('ab').toString({ toString() { return 'hex'; } }));
        check(() => Buffer.from('abcd').toString('utf8', '1', 3));
        check(() => Buffer.from('abcd').toString('ascii', 'x', 2.9));
        check(() => Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]).swap32().toString('hex'));
        check(() => Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]).swap64().toString('hex'));
        check(() => Buffer.alloc(6).swap32());
        check(() => { const ab = new ArrayBuffer(8); const b = Buffer.from(ab, 2, 4); return [b.offset, b.parent === ab, Buffer.prototype.parent]; });
        check(() => Buffer.from(new ArrayBuffer(8), 'x').length);
        check(() => Buffer.from(new ArrayBuffer(8), 9));
        check(() => Buffer.from(new ArrayBuffer(8), 0, 9));",
    )
    .await;
    assert_eq!(
        out,
        [
            "ERR_UNKNOWN_ENCODING: Unknown encoding: null",
            "ERR_UNKNOWN_ENCODING: Unknown encoding: ",
            "ok 3",
            r#"ERR_INVALID_ARG_TYPE: The "encoding" argument must be of type string. Received type number (5)"#,
            "ok 2 0",
            "ok 6162",
            "ok bc",
            "ok ab",
            "ok 0403020108070605",
            "ok 0807060504030201",
            "ERR_INVALID_BUFFER_SIZE: Buffer size must be a multiple of 32-bits",
            "ok 2,true,",
            "ok 8",
            r#"ERR_BUFFER_OUT_OF_BOUNDS: "offset" is outside of buffer bounds"#,
            r#"ERR_BUFFER_OUT_OF_BOUNDS: "length" is outside of buffer bounds"#,
        ]
        .join("\n")
    );
}

#[tokio::test]
async fn numbers_offsets_and_bigints_are_checked() {
    let out = lines(
        "check(() => Buffer.alloc(8).writeBigInt64LE(2n ** 63n));
        check(() => Buffer.alloc(8).writeBigUInt64BE(2n ** 64n - 1n));
        check(() => { try { Buffer.alloc(8).writeBigUInt64BE(1); } catch (e) { return e.name; } });
        check(() => Buffer.alloc(4).readUInt16LE(1.5));
        check(() => Buffer.alloc(1).readUInt32LE(0));
        check(() => Buffer.alloc(1).readUInt8(Infinity));
        check(() => Buffer.alloc(4).readUIntLE(0, 7));
        check(() => Buffer.alloc(4).write('a', -1));
        check(() => Buffer.alloc(4).fill(1, 0, 5));",
    )
    .await;
    assert_eq!(
        out,
        [
            r#"ERR_OUT_OF_RANGE: The value of "value" is out of range. It must be >= -(2n ** 63n) and < 2n ** 63n. Received 9_223_372_036_854_775_808n"#,
            "ok 8",
            "ok TypeError",
            r#"ERR_OUT_OF_RANGE: The value of "offset" is out of range. It must be an integer. Received 1.5"#,
            "ERR_BUFFER_OUT_OF_BOUNDS: Attempt to access memory outside buffer bounds",
            r#"ERR_OUT_OF_RANGE: The value of "offset" is out of range. It must be >= 0 and <= 0. Received Infinity"#,
            r#"ERR_OUT_OF_RANGE: The value of "byteLength" is out of range. It must be >= 1 and <= 6. Received 7"#,
            r#"ERR_OUT_OF_RANGE: The value of "offset" is out of range. It must be >= 0 && <= 4. Received -1"#,
            r#"ERR_OUT_OF_RANGE: The value of "end" is out of range. It must be >= 0 && <= 4. Received 5"#,
        ]
        .join("\n")
    );
}

#[tokio::test]
async fn inspect_and_the_ascii_utf8_checks() {
    let out = lines(
        "check(() => util.inspect(Buffer.alloc(0)));
        check(() => { buffer.default.INSPECT_MAX_BYTES = 3; try { return util.inspect(Buffer.from([1, 2, 3, 4, 5])) + util.inspect(Buffer.from([1, 2, 3, 4])); } finally { buffer.default.INSPECT_MAX_BYTES = 50; } });
        check(() => { const ab = new ArrayBuffer(2); new Uint8Array(ab)[0] = 200; const v = new Uint8Array(ab); const before = buffer.isAscii(v); structuredClone(ab, { transfer: [ab] }); return [before, buffer.isAscii(v)]; });
        check(() => { const ab = new ArrayBuffer(2); structuredClone(ab, { transfer: [ab] }); return buffer.isUtf8(ab); });
        check(() => [buffer.isUtf8(new Uint8Array([0xe2, 0x82, 0xac])), buffer.isUtf8(new Uint8Array([0xe2, 0x82]))]);",
    )
    .await;
    assert_eq!(
        out,
        [
            "ok <Buffer >",
            "ok <Buffer 01 02 03 ... 2 more bytes><Buffer 01 02 03 ... 1 more byte>",
            "ok false,true",
            "ERR_INVALID_STATE: Cannot validate on a detached buffer",
            "ok true,false",
        ]
        .join("\n")
    );
}

/// A utf16le search (of a string or a Buffer) moves by whole 16-bit units;
/// a needle or haystack shorter than one unit is never found.
#[tokio::test]
async fn utf16le_searches_move_by_units() {
    let out = lines(
        "const b = Buffer.from('\\u039a\\u0391abc\\u03a3\\u03a3\\u0395', 'ucs2');
        check(() => [
          Buffer.from('ff').includes(Buffer.from('f'), 1, 'ucs2'),
          b.indexOf('bc', 0, 'ucs2'),
          b.indexOf('\\u03a3', 0, 'ucs2'),
          b.lastIndexOf('\\u03a3', undefined, 'ucs2'),
          b.indexOf(Buffer.from('\\u03a3', 'ucs2'), 7, 'ucs2'),
          Buffer.from('aXbX', 'latin1').indexOf('X', 0, 'latin1'),
          Buffer.from([0, 0x61, 0x62]).indexOf('\\u6261', 0, 'utf16le'),
          Buffer.from('abc').lastIndexOf('b'),
        ].join(' '));",
    )
    .await;
    assert_eq!(out, "ok false 6 10 12 10 1 -1 1");
}

/// An object holding an ArrayBuffer as `buffer` and no length is an empty
/// array-like to Buffer.from; INSPECT_MAX_BYTES takes only a number >= 0.
/// (A Worker has no SharedArrayBuffer, so Node's test of those cannot run.)
#[tokio::test]
async fn array_buffer_holders_and_inspect_max_bytes() {
    let out = lines(
        "check(() => [typeof SharedArrayBuffer, Buffer.from({ buffer: new ArrayBuffer(4) }).length].join(' '));
        check(() => { buffer.default.INSPECT_MAX_BYTES = -1; });
        check(() => { buffer.default.INSPECT_MAX_BYTES = 'x'; });
        check(() => buffer.default.INSPECT_MAX_BYTES);",
    )
    .await;
    let expected = [
        "ok undefined 0",
        r#"ERR_OUT_OF_RANGE: The value of "INSPECT_MAX_BYTES" is out of range. It must be >= 0. Received -1"#,
        r#"ERR_INVALID_ARG_TYPE: The "INSPECT_MAX_BYTES" argument must be of type number. Received type string ('x')"#,
        "ok 50",
    ];
    assert_eq!(out, expected.join("\n"));
}
