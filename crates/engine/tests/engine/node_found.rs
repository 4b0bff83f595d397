//! What Node's own test/parallel files found in `node:events`,
//! `node:string_decoder` and `node:url` (legacy parse and format), with our
//! own vectors, against what Node 20 prints for the same calls.

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;

const CHECK: &str = "const out = [];
    const check = (f) => { try { out.push('ok ' + JSON.stringify(f())); } catch (e) { out.push(`${e.code ?? e.name}: ${e.message}`); } };";

async fn lines(imports: &str, body: &str) -> String {
    let body = [CHECK, body, "return out.join('\\n');"].join("\n");
    answer(NodeCompat::V2, imports, &body).await
}

/// A newListener listener that adds to the same event before the listener
/// being added, and EventEmitter's methods borrowed by a plain object.
#[tokio::test]
async fn events_added_from_new_listener_and_by_plain_objects() {
    let out = lines(
        "import { EventEmitter } from 'node:events';",
        "check(() => { const ee = new EventEmitter(); const seen = [];
            ee.once('newListener', () => { ee.on('x', () => seen.push('b')); });
            ee.on('x', () => seen.push('a')); ee.emit('x'); return [seen, ee.listenerCount('x')]; });
        check(() => { const o = {}; EventEmitter.prototype.on.call(o, 'e', () => {}); EventEmitter.prototype.on.call(o, 'e', () => {}); return EventEmitter.prototype.listenerCount.call(o, 'e'); });",
    )
    .await;
    assert_eq!(out, "ok [[\"b\",\"a\"],2]\nok 2");
}

/// A UTF-8 character cut short at end() reads as Buffer's toString reads
/// the same bytes: one U+FFFD for each broken piece.
#[tokio::test]
async fn string_decoder_end_reads_the_rest_as_to_string() {
    let out = lines(
        "import { StringDecoder } from 'node:string_decoder'; import { Buffer } from 'node:buffer';",
        "for (const hex of ['e080', 'f09f98', 'eda0', 'f4', 'c0', 'f09f']) {
            check(() => { const d = new StringDecoder('utf8'); const bytes = Buffer.from(hex, 'hex'); return [d.write(bytes), d.end(), bytes.toString()]; });
        }
        check(() => { const d = new StringDecoder('utf8'); return [d.write(Buffer.from('e0', 'hex')), d.write(Buffer.from('8041', 'hex')), d.end()]; });",
    )
    .await;
    let (one, two) = ("\u{fffd}", "\u{fffd}\u{fffd}");
    let expected = [
        format!("ok [\"\",\"{two}\",\"{two}\"]"),
        format!("ok [\"\",\"{one}\",\"{one}\"]"),
        format!("ok [\"\",\"{two}\",\"{two}\"]"),
        format!("ok [\"\",\"{one}\",\"{one}\"]"),
        format!("ok [\"\",\"{one}\",\"{one}\"]"),
        format!("ok [\"\",\"{one}\",\"{one}\"]"),
        format!("ok [\"\",\"{two}A\",\"\"]"),
    ];
    assert_eq!(out, expected.join("\n"));
}

/// The legacy parser: a '?' in the fragment is no query, a host ends at a
/// character a host cannot hold, an over-long hostname is dropped; format
/// of a WHATWG URL takes falsy options as off and rejects a non-object.
#[tokio::test]
async fn legacy_url_parse_and_format() {
    let out = lines(
        "import url from 'node:url';",
        "check(() => url.format('http://a.com#x=?y'));
        check(() => url.format('http://h.com\" x=\"y/z'));
        check(() => url.parse('http://' + 'a'.repeat(256) + '.com/p').hostname);
        check(() => url.format(new URL('http://u:p@h.com/p?q#f'), { fragment: 0, search: '', auth: false }));
        check(() => url.format(new URL('http://h.com/'), true));",
    )
    .await;
    let expected = [
        r#"ok "http://a.com/#x=?y""#,
        r#"ok "http://h.com/%22%20x=%22y/z""#,
        r#"ok """#,
        r#"ok "http://h.com/p""#,
        r#"ERR_INVALID_ARG_TYPE: The "options" argument must be of type object. Received type boolean (true)"#,
    ];
    assert_eq!(out, expected.join("\n"));
}
