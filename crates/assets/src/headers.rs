//! The `_headers` file: its parser and how its rules change an answer's
//! headers.
//!
//! Source: developers.cloudflare.com/workers/static-assets/headers/ "Custom
//! headers". Blocks of a URL pattern line followed by indented
//! `Name: value` lines; `! Name` detaches a header; `#` comments; at most
//! 100 rules and 2,000 characters a line. A request inherits the headers of
//! every rule it matches, a header set twice is joined with `, `, and the
//! file's headers override Cloudflare's defaults. Lines Cloudflare would
//! ignore are skipped and listed in [`HeaderRules::skipped`]; a file over
//! the limits is refused whole.

use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::pattern::{Pattern, PatternError, substitute};

pub const MAX_RULES: usize = 100;
pub const MAX_LINE_CHARS: usize = 2_000;

/// A line that was skipped, or a file that was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum HeadersError {
    #[error("_headers line {line}: {chars} characters, over the {MAX_LINE_CHARS}-character limit")]
    LineTooLong { line: usize, chars: usize },
    #[error("_headers line {line}: a header before any URL pattern")]
    NoPattern { line: usize },
    #[error("_headers line {line}: expected `Name: value` or `! Name`")]
    NotAHeader { line: usize },
    #[error("_headers line {line}: {name:?} is not a valid header name")]
    BadName { line: usize, name: String },
    #[error("_headers line {line}: {source}")]
    Pattern { line: usize, source: PatternError },
    #[error("_headers has {count} rules, over the limit of {MAX_RULES}")]
    TooManyRules { count: usize },
}

impl HeadersError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::LineTooLong { .. } => "line_too_long",
            Self::NoPattern { .. } => "no_pattern",
            Self::NotAHeader { .. } => "not_a_header",
            Self::BadName { .. } => "bad_name",
            Self::Pattern { .. } => "pattern",
            Self::TooManyRules { .. } => "too_many_rules",
        }
    }
}

#[derive(Debug, Clone)]
struct Rule {
    pattern: Pattern,
    set: Vec<(HeaderName, String)>,
    detach: Vec<HeaderName>,
}

/// The rules of one `_headers` file.
#[derive(Debug, Clone, Default)]
pub struct HeaderRules {
    rules: Vec<Rule>,
    /// The lines that were ignored, and why.
    pub skipped: Vec<HeadersError>,
}

impl HeaderRules {
    pub fn parse(text: &str) -> Result<Self, HeadersError> {
        let mut rules = Self::default();
        // Whether the current block's pattern was refused (its headers are
        // then dropped with it rather than each reported).
        let mut in_bad_block = false;
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let chars = raw.chars().count();
            if chars > MAX_LINE_CHARS {
                rules
                    .skipped
                    .push(HeadersError::LineTooLong { line, chars });
                continue;
            }
            if trimmed.starts_with('/') || trimmed.starts_with("https://") {
                in_bad_block = rules.start_rule(line, trimmed).is_err();
            } else if !in_bad_block {
                rules.add_header(line, trimmed);
            }
        }
        if rules.rules.len() > MAX_RULES {
            return Err(HeadersError::TooManyRules {
                count: rules.rules.len(),
            });
        }
        Ok(rules)
    }

    fn start_rule(&mut self, line: usize, pattern: &str) -> Result<(), ()> {
        match Pattern::parse(pattern) {
            Ok(pattern) => {
                self.rules.push(Rule {
                    pattern,
                    set: Vec::new(),
                    detach: Vec::new(),
                });
                Ok(())
            }
            Err(source) => {
                self.skipped.push(HeadersError::Pattern { line, source });
                Err(())
            }
        }
    }

    fn add_header(&mut self, line: usize, text: &str) {
        let Some(rule) = self.rules.last_mut() else {
            self.skipped.push(HeadersError::NoPattern { line });
            return;
        };
        let (name, value) = if let Some(name) = text.strip_prefix('!') {
            (name.trim(), None)
        } else if let Some((name, value)) = text.split_once(':') {
            (name.trim(), Some(value.trim()))
        } else {
            self.skipped.push(HeadersError::NotAHeader { line });
            return;
        };
        let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
            self.skipped.push(HeadersError::BadName {
                line,
                name: name.to_owned(),
            });
            return;
        };
        match value {
            Some(value) => rule.set.push((header, value.to_owned())),
            None => rule.detach.push(header),
        }
    }

    /// Changes `headers` as the rules matching this host and path say, rule
    /// by rule in file order: a rule's `! Name` removes the header as it
    /// stands (a default, or an earlier rule's), then its `Name: value`
    /// replaces a default or joins an earlier rule's value with `, `.
    pub fn apply(&self, host: &str, path: &str, headers: &mut HeaderMap) {
        let mut set_here: Vec<HeaderName> = Vec::new();
        for rule in &self.rules {
            let Some(captures) = rule.pattern.captures(host, path) else {
                continue;
            };
            for name in &rule.detach {
                headers.remove(name);
            }
            for (name, value) in &rule.set {
                let mut value = substitute(value, &captures);
                if set_here.contains(name) {
                    if let Some(earlier) = headers.get(name).and_then(|v| v.to_str().ok()) {
                        value = format!("{earlier}, {value}");
                    }
                } else {
                    set_here.push(name.clone());
                }
                if let Ok(value) = HeaderValue::from_str(&value) {
                    headers.insert(name.clone(), value);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of developers.cloudflare.com/workers/static-assets/headers/.
    const EXAMPLE: &str = "# This is a comment
/secure/page
\tX-Frame-Options: DENY
\tX-Content-Type-Options: nosniff
\tReferrer-Policy: no-referrer

/static/*
\tAccess-Control-Allow-Origin: *
\tX-Robots-Tag: nosnippet

https://myworker.mysubdomain.workers.dev/*
\tX-Robots-Tag: noindex
";

    fn headers_for(rules: &HeaderRules, host: &str, path: &str) -> Vec<(String, String)> {
        let mut headers = HeaderMap::new();
        rules.apply(host, path, &mut headers);
        let mut out: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        out.sort();
        out
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = list
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_documented_table_holds() {
        // Each row of the page's table of requests and the headers applied.
        let r = HeaderRules::parse(EXAMPLE).unwrap();
        assert!(r.skipped.is_empty(), "{:?}", r.skipped);
        let secure = [
            ("x-frame-options", "DENY"),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "no-referrer"),
        ];
        assert_eq!(
            headers_for(&r, "custom.domain", "/secure/page"),
            pairs(&secure)
        );
        assert_eq!(
            headers_for(&r, "custom.domain", "/static/image.jpg"),
            pairs(&[
                ("access-control-allow-origin", "*"),
                ("x-robots-tag", "nosnippet")
            ])
        );
        let dev = "myworker.mysubdomain.workers.dev";
        assert_eq!(
            headers_for(&r, dev, "/home"),
            pairs(&[("x-robots-tag", "noindex")])
        );
        let mut both = secure.to_vec();
        both.push(("x-robots-tag", "noindex"));
        assert_eq!(headers_for(&r, dev, "/secure/page"), pairs(&both));
        assert_eq!(
            headers_for(&r, dev, "/static/styles.css"),
            pairs(&[
                ("access-control-allow-origin", "*"),
                ("x-robots-tag", "nosnippet, noindex")
            ])
        );
    }

    #[test]
    fn a_detached_header_is_removed() {
        // Same page, "Detach a header".
        let r = HeaderRules::parse(
            "/*\n  Content-Security-Policy: default-src 'self';\n\n/*.jpg\n  ! Content-Security-Policy\n",
        )
        .unwrap();
        assert_eq!(
            headers_for(&r, "h", "/a.html"),
            pairs(&[("content-security-policy", "default-src 'self';")])
        );
        assert_eq!(headers_for(&r, "h", "/a.jpg"), vec![]);
        // Rules apply in file order: a later rule may set it again.
        let r = HeaderRules::parse("/*.jpg\n  ! X-A\n/*\n  X-A: 1\n").unwrap();
        assert_eq!(headers_for(&r, "h", "/a.jpg"), pairs(&[("x-a", "1")]));
        let mut defaults = HeaderMap::new();
        defaults.insert("cache-control", HeaderValue::from_static("public"));
        let r = HeaderRules::parse("/*\n  ! Cache-Control\n").unwrap();
        r.apply("h", "/x", &mut defaults);
        assert!(defaults.is_empty());
    }

    #[test]
    fn file_headers_override_defaults() {
        // Same page: "Headers defined in the _headers file override what
        // Cloudflare ordinarily sends".
        let r =
            HeaderRules::parse("/static/*\n  Cache-Control: public, max-age=31556952, immutable\n")
                .unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            "cache-control",
            HeaderValue::from_static("public, max-age=0, must-revalidate"),
        );
        r.apply("h", "/static/app.js", &mut headers);
        assert_eq!(
            headers["cache-control"],
            "public, max-age=31556952, immutable"
        );
    }

    #[test]
    fn placeholders_fill_values() {
        // Same page, "Placeholders": `x-movie-name: You are watching ":title"`.
        let r = HeaderRules::parse("/movies/:title\n  x-movie-name: You are watching \":title\"\n")
            .unwrap();
        assert_eq!(
            headers_for(&r, "h", "/movies/jaws"),
            pairs(&[("x-movie-name", "You are watching \"jaws\"")])
        );
    }

    #[test]
    fn bad_lines_are_skipped_with_their_line_number() {
        let text = "  X-Early: 1\n/a\n  no colon here\n  Bad Name: 2\n/*/*\n  X-In-Bad: 3\n/b\n  X-Ok: 4\n";
        let r = HeaderRules::parse(text).unwrap();
        let kinds: Vec<&str> = r.skipped.iter().map(HeadersError::kind).collect();
        assert_eq!(kinds, ["no_pattern", "not_a_header", "bad_name", "pattern"]);
        assert!(r.skipped[1].to_string().contains("line 3"));
        assert_eq!(headers_for(&r, "h", "/b"), pairs(&[("x-ok", "4")]));
        let long = format!("/a\n  X-Long: {}\n", "v".repeat(MAX_LINE_CHARS));
        let r = HeaderRules::parse(&long).unwrap();
        assert_eq!(
            r.skipped[0],
            HeadersError::LineTooLong {
                line: 2,
                chars: 2010
            }
        );
    }

    #[test]
    fn files_over_100_rules_are_refused() {
        // Same page: "You may define up to 100 header rules."
        let ok: String = (0..MAX_RULES)
            .map(|i| format!("/r{i}\n  X-A: 1\n"))
            .collect();
        assert_eq!(HeaderRules::parse(&ok).unwrap().len(), MAX_RULES);
        let over: String = (0..=MAX_RULES)
            .map(|i| format!("/r{i}\n  X-A: 1\n"))
            .collect();
        let err = HeaderRules::parse(&over).unwrap_err();
        assert_eq!(err, HeadersError::TooManyRules { count: 101 });
        assert!(err.to_string().contains("limit of 100"));
    }
}
