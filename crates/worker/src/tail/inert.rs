//! Tenant text made inert for a reader's terminal. A pretty tail prints what
//! a Worker logged — and what its clients sent it — to somebody's terminal:
//! a raw `ESC[2J` would clear that screen, an OSC sequence set its title or
//! clipboard, a `\r` redraw a line so it reads as another namespace's event.
//! So [`Inert`] prints every character a terminal acts on, rather than
//! shows, as a visible escape:
//!
//! - C0 controls and DEL: `\n`, `\r` and `\t` by name, the others as `\x1b`.
//!   A newline too, so that one console line is one printed line and a
//!   tenant cannot forge a line that reads as another event; and a tab,
//!   which looks like spaces and could line text up as the printer's own.
//! - C1 controls (U+0080–U+009F; U+009B is a CSI to some terminals):
//!   `\u{9b}`.
//! - Bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069),
//!   which reorder what the reader sees, and the line and paragraph
//!   separators (U+2028, U+2029): `\u{202e}`.
//!
//! Everything else — accents, CJK, emoji, a backslash — prints as is, so
//! readable text reads the same. (A tenant can still log the four
//! characters `\x1b`: they print as an escaped ESC does, and do nothing.)

use std::fmt;

/// Tenant text as a pretty tail prints it: its `Display` writes `.0` with
/// every control character escaped (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Inert<'a>(pub &'a str);

impl fmt::Display for Inert<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Printable ASCII, nearly every field of nearly every event, has
        // nothing to escape: one pass over the bytes, no decoding.
        if self.0.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return f.write_str(self.0);
        }
        let mut rest = self.0;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| is_active(c)) {
            f.write_str(&rest[..at])?;
            escape(f, c)?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// Whether a terminal acts on `c` (or reorders text around it) rather than
/// showing it. `is_control` is Unicode's `Cc`: U+0000–U+001F, U+007F–U+009F.
fn is_active(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}'
        )
}

/// `c` as a visible escape, in Rust's notation.
fn escape(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    match c {
        '\n' => f.write_str("\\n"),
        '\r' => f.write_str("\\r"),
        '\t' => f.write_str("\\t"),
        c if c.is_ascii() => write!(f, "\\x{:02x}", u32::from(c)),
        c => write!(f, "\\u{{{:x}}}", u32::from(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character [`Inert`] must escape.
    fn active() -> Vec<char> {
        let mut all: Vec<char> = ('\u{0}'..='\u{1f}').collect();
        all.push('\u{7f}');
        all.extend('\u{80}'..='\u{9f}');
        all.extend('\u{202a}'..='\u{202e}');
        all.extend('\u{2066}'..='\u{2069}');
        all.extend(['\u{2028}', '\u{2029}']);
        all
    }

    #[test]
    fn every_control_character_comes_out_escaped() {
        let text: String = active().iter().flat_map(|c| ['.', *c]).collect();
        let out = Inert(&text).to_string();
        for c in out.chars() {
            assert!(
                c.is_ascii_graphic() || c == ' ',
                "{c:?} printed raw in {out:?}"
            );
        }
        for (c, escaped) in [
            ('\u{0}', ".\\x00"),
            ('\n', ".\\n"),
            ('\r', ".\\r"),
            ('\t', ".\\t"),
            ('\u{1b}', ".\\x1b"),
            ('\u{7f}', ".\\x7f"),
            ('\u{9b}', ".\\u{9b}"),
            ('\u{202e}', ".\\u{202e}"),
            ('\u{2069}', ".\\u{2069}"),
        ] {
            assert!(out.contains(escaped), "{c:?} is not {escaped:?} in {out:?}");
        }
        // One escape (a backslash and more) after each separator.
        let escapes: Vec<&str> = out.split('.').skip(1).collect();
        assert_eq!(escapes.len(), active().len(), "{out}");
        for escaped in escapes {
            assert!(escaped.starts_with('\\') && escaped.len() >= 2, "{out}");
        }
    }

    #[test]
    fn readable_text_is_unchanged() {
        for text in [
            "",
            "héllo 日本",
            "plain ascii { n: 1 } ~!@#$%^&*()",
            "C:\\temp \"quoted\" 'single' 🙂 ñ ß Ω",
            "עברית العربية",
        ] {
            assert_eq!(Inert(text).to_string(), text);
        }
    }

    #[test]
    fn an_attack_prints_as_text_on_one_line() {
        let out = Inert("\x1b[2J\x1b]0;pwned\x07\rfake\n[ns/other] GET /").to_string();
        assert_eq!(out, "\\x1b[2J\\x1b]0;pwned\\x07\\rfake\\n[ns/other] GET /");
    }
}
