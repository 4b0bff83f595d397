//! The JavaScript syntax check: a real parser (oxc), never a pattern.
//!
//! A Worker's script is either an ES module (`export default { fetch }`) or a
//! service-worker script (`addEventListener('fetch', …)`). The parser decides
//! which, as runtimes do for unambiguous sources: a script that uses `import` or
//! `export` is parsed as a module, anything else as a classic script. Only the
//! first error is reported, with a 1-based `line:column` (columns count Unicode
//! scalar values), because that is what a person fixes first.

use std::fmt;

use oxc_allocator::Allocator;
use oxc_parser::Parser;
use oxc_span::SourceType;

/// How the script was parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptKind {
    /// An ES module: it has `import` or `export` declarations.
    Module,
    /// A classic (service-worker style) script.
    Script,
}

/// The first syntax error of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in Unicode scalar values.
    pub column: u32,
    /// The parser's message.
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for SyntaxError {}

/// Parses `source` and returns its kind, or its first syntax error.
pub fn check(source: &str) -> Result<ScriptKind, SyntaxError> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::unambiguous()).parse();
    let first = parsed.diagnostics.errors().next();
    match first {
        None if parsed.panicked => Err(SyntaxError {
            line: 1,
            column: 1,
            message: "the parser gave up on this script".to_owned(),
        }),
        None if parsed.program.source_type.is_module() => Ok(ScriptKind::Module),
        None => Ok(ScriptKind::Script),
        Some(error) => {
            let offset = error
                .labels
                .iter()
                .find(|label| label.primary())
                .or_else(|| error.labels.first())
                .map_or(0, |label| label.offset());
            let (line, column) = line_column(source, offset as usize);
            Err(SyntaxError {
                line,
                column,
                message: error.message.to_string(),
            })
        }
    }
}

/// The 1-based line and column of a byte offset; offsets past the end or inside
/// a character are clamped to the end of the preceding character.
fn line_column(source: &str, offset: usize) -> (u32, u32) {
    let mut end = offset.min(source.len());
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let before = &source[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let column = before[line_start..].chars().count() + 1;
    (saturate(line), saturate(column))
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_and_scripts_are_told_apart() {
        assert_eq!(
            check("export default { fetch() { return new Response('hi') } }"),
            Ok(ScriptKind::Module)
        );
        assert_eq!(
            check("import x from './x.js';\nx();"),
            Ok(ScriptKind::Module)
        );
        assert_eq!(
            check("addEventListener('fetch', e => e.respondWith(new Response('hi')));"),
            Ok(ScriptKind::Script)
        );
        let error = check("export default {};\nconst = 1;").unwrap_err();
        assert_eq!((error.line, error.column), (2, 7), "{error}");
    }

    #[test]
    fn errors_carry_line_and_column() {
        let error =
            check("export default {\n  fetch(request) {\n    return new Response('x'\n  }\n}")
                .unwrap_err();
        assert_eq!((error.line, error.column), (4, 3), "{error}");
        assert!(!error.message.is_empty());
        assert_eq!(error.to_string(), format!("4:3: {}", error.message));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let error = check("const é = 'ü'; }").unwrap_err();
        assert_eq!((error.line, error.column), (1, 16), "{error}");
    }

    #[test]
    fn line_column_clamps() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 3), (2, 1));
        assert_eq!(line_column("ab\ncd", 99), (2, 3));
        assert_eq!(line_column("é", 1), (1, 1));
    }
}
