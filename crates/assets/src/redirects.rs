//! The `_redirects` file: its parser and its rules' lookup.
//!
//! Source: developers.cloudflare.com/workers/static-assets/redirects/. One
//! rule a line, `[source] [destination] [code?]`, `#` comments; codes 301,
//! 302 (the default), 303, 307, 308, and 200 for proxying to another path of
//! the site; at most 2,000 static and 100 dynamic rules, 1,000 characters a
//! line; the top-most rule for a source wins. Cloudflare ignores a line it
//! cannot read; so does this parser, and it says why in
//! [`Redirects::skipped`]. A file over the limits is refused whole.

use std::collections::HashMap;

use http::StatusCode;

use crate::pattern::{Pattern, PatternError, substitute};

pub const MAX_STATIC: usize = 2_000;
pub const MAX_DYNAMIC: usize = 100;
pub const MAX_LINE_CHARS: usize = 1_000;

/// A line that was skipped, or a file that was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RedirectsError {
    #[error(
        "_redirects line {line}: {chars} characters, over the {MAX_LINE_CHARS}-character limit"
    )]
    LineTooLong { line: usize, chars: usize },
    #[error("_redirects line {line}: expected `source destination [code]`, found {fields} fields")]
    Fields { line: usize, fields: usize },
    #[error("_redirects line {line}: status {code:?} is not one of 200, 301, 302, 303, 307, 308")]
    Status { line: usize, code: String },
    #[error("_redirects line {line}: {source}")]
    Pattern { line: usize, source: PatternError },
    #[error(
        "_redirects line {line}: domain-level redirects (a source with a host) are not supported"
    )]
    DomainLevel { line: usize },
    #[error("_redirects line {line}: a 200 (proxying) rule must point to a path of the site")]
    ProxyElsewhere { line: usize },
    #[error("_redirects has {count} static rules, over the limit of {MAX_STATIC}")]
    TooManyStatic { count: usize },
    #[error("_redirects has {count} dynamic rules, over the limit of {MAX_DYNAMIC}")]
    TooManyDynamic { count: usize },
}

impl RedirectsError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::LineTooLong { .. } => "line_too_long",
            Self::Fields { .. } => "fields",
            Self::Status { .. } => "status",
            Self::Pattern { .. } => "pattern",
            Self::DomainLevel { .. } => "domain_level",
            Self::ProxyElsewhere { .. } => "proxy_elsewhere",
            Self::TooManyStatic { .. } => "too_many_static",
            Self::TooManyDynamic { .. } => "too_many_dynamic",
        }
    }
}

#[derive(Debug, Clone)]
struct Rule {
    from: Pattern,
    to: String,
    status: StatusCode,
}

/// The rules of one `_redirects` file.
#[derive(Debug, Clone, Default)]
pub struct Redirects {
    /// Static rules by their exact source; the top-most one kept.
    exact: HashMap<String, Rule>,
    /// Dynamic rules in file order.
    dynamic: Vec<Rule>,
    /// The lines that were ignored, and why.
    pub skipped: Vec<RedirectsError>,
}

/// What a rule says of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectMatch {
    /// 200 for a rewrite (proxying); otherwise the redirect's status.
    pub status: StatusCode,
    /// The destination with its splat and placeholders filled in.
    pub to: String,
}

impl Redirects {
    pub fn parse(text: &str) -> Result<Self, RedirectsError> {
        let mut redirects = Self::default();
        let mut statics = 0;
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            match parse_line(line, raw, trimmed) {
                Ok(rule) if rule.from.is_dynamic() => redirects.dynamic.push(rule),
                Ok(rule) => {
                    statics += 1;
                    let source = trimmed.split_whitespace().next().unwrap_or_default();
                    redirects.exact.entry(source.to_owned()).or_insert(rule);
                }
                Err(error) => redirects.skipped.push(error),
            }
        }
        if statics > MAX_STATIC {
            return Err(RedirectsError::TooManyStatic { count: statics });
        }
        if redirects.dynamic.len() > MAX_DYNAMIC {
            return Err(RedirectsError::TooManyDynamic {
                count: redirects.dynamic.len(),
            });
        }
        Ok(redirects)
    }

    /// The rule for a request path (as it arrived, still percent-encoded):
    /// a static rule first, then the first dynamic one that matches.
    pub fn find(&self, host: &str, path: &str) -> Option<RedirectMatch> {
        if let Some(rule) = self.exact.get(path) {
            return Some(RedirectMatch {
                status: rule.status,
                to: rule.to.clone(),
            });
        }
        self.dynamic.iter().find_map(|rule| {
            let captures = rule.from.captures(host, path)?;
            Some(RedirectMatch {
                status: rule.status,
                to: substitute(&rule.to, &captures),
            })
        })
    }

    pub fn len(&self) -> usize {
        self.exact.len() + self.dynamic.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn parse_line(line: usize, raw: &str, trimmed: &str) -> Result<Rule, RedirectsError> {
    let chars = raw.chars().count();
    if chars > MAX_LINE_CHARS {
        return Err(RedirectsError::LineTooLong { line, chars });
    }
    let fields: Vec<&str> = trimmed.split_whitespace().collect();
    let (from, to, code) = match fields.as_slice() {
        [from, to] => (*from, *to, None),
        [from, to, code] => (*from, *to, Some(*code)),
        _ => {
            return Err(RedirectsError::Fields {
                line,
                fields: fields.len(),
            });
        }
    };
    let status = status(line, code)?;
    if !from.starts_with('/') {
        return Err(if from.contains("://") {
            RedirectsError::DomainLevel { line }
        } else {
            RedirectsError::Pattern {
                line,
                source: PatternError::NotAPath {
                    pattern: from.to_owned(),
                },
            }
        });
    }
    if status == StatusCode::OK && !to.starts_with('/') {
        return Err(RedirectsError::ProxyElsewhere { line });
    }
    let from = Pattern::parse(from).map_err(|source| RedirectsError::Pattern { line, source })?;
    Ok(Rule {
        from,
        to: to.to_owned(),
        status,
    })
}

fn status(line: usize, code: Option<&str>) -> Result<StatusCode, RedirectsError> {
    let Some(code) = code else {
        return Ok(StatusCode::FOUND);
    };
    match code.parse::<u16>() {
        Ok(n @ (200 | 301 | 302 | 303 | 307 | 308)) => {
            StatusCode::from_u16(n).map_err(|_| RedirectsError::Status {
                line,
                code: code.to_owned(),
            })
        }
        _ => Err(RedirectsError::Status {
            line,
            code: code.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(r: &Redirects, path: &str) -> Option<(u16, String)> {
        r.find("example.com", path)
            .map(|m| (m.status.as_u16(), m.to))
    }

    /// The complete example of developers.cloudflare.com/workers/static-assets/redirects/.
    const EXAMPLE: &str = "\
/home301 / 301
/home302 / 302
/querystrings /?query=string 301
/twitch https://twitch.tv
/trailing /trailing/ 301
/notrailing/ /nottrailing 301
/page/ /page2/#fragment 301
/blog/* https://blog.my.domain/:splat
/products/:code/:name /products?code=:code&name=:name
";

    #[test]
    fn the_documented_example_reads() {
        let r = Redirects::parse(EXAMPLE).unwrap();
        assert!(r.skipped.is_empty(), "{:?}", r.skipped);
        assert_eq!(r.len(), 9);
        assert_eq!(find(&r, "/home301"), Some((301, "/".into())));
        assert_eq!(find(&r, "/home302"), Some((302, "/".into())));
        // 302 is the default status code (same page, "code").
        assert_eq!(find(&r, "/twitch"), Some((302, "https://twitch.tv".into())));
        assert_eq!(find(&r, "/trailing"), Some((301, "/trailing/".into())));
        assert_eq!(find(&r, "/trailing/"), None);
        assert_eq!(
            find(&r, "/blog/a/b"),
            Some((302, "https://blog.my.domain/a/b".into()))
        );
        assert_eq!(
            find(&r, "/products/42/shoe"),
            Some((302, "/products?code=42&name=shoe".into()))
        );
    }

    #[test]
    fn the_top_most_rule_wins() {
        // Same page: "If there are multiple redirects for the same source
        // path, the top-most redirect is applied."
        let r = Redirects::parse("/a /b 301\n/a /c 302\n/d/* /e\n/d/* /f\n").unwrap();
        assert_eq!(find(&r, "/a"), Some((301, "/b".into())));
        assert_eq!(find(&r, "/d/x"), Some((302, "/e".into())));
    }

    #[test]
    fn proxying_is_a_200_to_a_path() {
        // Same page, "Proxying": `/blog/* /news/:splat 200`.
        let r = Redirects::parse("/blog/* /news/:splat 200\n/x https://else.where 200\n").unwrap();
        assert_eq!(find(&r, "/blog/a"), Some((200, "/news/a".into())));
        assert_eq!(r.skipped, vec![RedirectsError::ProxyElsewhere { line: 2 }]);
    }

    #[test]
    fn bad_lines_are_skipped_with_their_line_number() {
        // Same page: unsupported rewrites (404), query parameters and
        // domain-level redirects; a line not of the format is ignored.
        let text = "# comment\n\n/a\n/b /c 404\n/shop id=:id /blog/:id 301\nexample.com/* /x 301\n/ok /fine\n/*/* /x\n";
        let r = Redirects::parse(text).unwrap();
        let kinds: Vec<(&str, String)> = r
            .skipped
            .iter()
            .map(|e| (e.kind(), e.to_string()))
            .collect();
        assert_eq!(kinds.len(), 5, "{kinds:?}");
        assert_eq!(kinds[0].0, "fields");
        assert!(kinds[0].1.contains("line 3"));
        assert_eq!(kinds[1].0, "status");
        assert!(kinds[1].1.contains("line 4"));
        assert_eq!(kinds[2].0, "fields");
        assert_eq!(kinds[3].0, "pattern");
        assert_eq!(kinds[4].0, "pattern");
        assert!(kinds[4].1.contains("line 8"));
        assert_eq!(find(&r, "/ok"), Some((302, "/fine".into())));
        let r = Redirects::parse("https://a.com/* /x 301\n").unwrap();
        assert_eq!(r.skipped[0].kind(), "domain_level");
    }

    #[test]
    fn every_documented_status_is_taken() {
        for code in [200, 301, 302, 303, 307, 308] {
            let r = Redirects::parse(&format!("/a /b {code}")).unwrap();
            assert_eq!(find(&r, "/a"), Some((code, "/b".into())));
        }
    }

    #[test]
    fn long_lines_are_skipped() {
        let long = format!("/a /{} 301", "x".repeat(MAX_LINE_CHARS));
        let r = Redirects::parse(&long).unwrap();
        assert_eq!(r.skipped[0].kind(), "line_too_long");
    }

    #[test]
    fn files_over_the_limits_are_refused() {
        // Same page, "Per file": 2,000 static and 100 dynamic redirects.
        let statics: String = (0..=MAX_STATIC).map(|i| format!("/s{i} /t\n")).collect();
        let err = Redirects::parse(&statics).unwrap_err();
        assert_eq!(err, RedirectsError::TooManyStatic { count: 2001 });
        assert!(err.to_string().contains("2000"));
        let ok: String = (0..MAX_STATIC).map(|i| format!("/s{i} /t\n")).collect();
        assert_eq!(Redirects::parse(&ok).unwrap().len(), MAX_STATIC);
        let dynamic: String = (0..=MAX_DYNAMIC).map(|i| format!("/d{i}/* /t\n")).collect();
        assert_eq!(
            Redirects::parse(&dynamic).unwrap_err(),
            RedirectsError::TooManyDynamic { count: 101 }
        );
    }
}
