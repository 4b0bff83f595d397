//! The URL patterns of `_redirects` and `_headers`: literal paths with at
//! most one splat (`*`, greedy, any characters) and named placeholders
//! (`:name`, `[A-Za-z]\w*`, matching up to the next `/`, or the next `.` or
//! `/` in a host). Source: developers.cloudflare.com/workers/static-assets/
//! redirects/ "Splats" and "Placeholders".

use regex::Regex;

/// Why a pattern was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PatternError {
    #[error("more than one splat (*) in {pattern:?}")]
    TwoSplats { pattern: String },
    #[error("placeholder :{name} appears twice in {pattern:?}")]
    RepeatedPlaceholder { pattern: String, name: String },
    #[error("{pattern:?} is neither a path (/…) nor an https:// URL")]
    NotAPath { pattern: String },
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    regex: Regex,
    names: Vec<String>,
    with_host: bool,
}

/// What a match captured: `splat` and each placeholder, by name.
pub type Captures = Vec<(String, String)>;

impl Pattern {
    pub fn parse(pattern: &str) -> Result<Self, PatternError> {
        let (host, path) = split_host(pattern)?;
        let mut names = Vec::new();
        let mut re = String::from("^");
        if let Some(host) = host {
            re.push_str("https://");
            compile(host, "[^./]+", pattern, &mut names, &mut re)?;
        }
        compile(path, "[^/]+", pattern, &mut names, &mut re)?;
        re.push('$');
        // Every piece is escaped or one of two fixed groups: it compiles.
        let regex = Regex::new(&re).map_err(|_| PatternError::NotAPath {
            pattern: pattern.to_owned(),
        })?;
        Ok(Self {
            regex,
            names,
            with_host: host.is_some(),
        })
    }

    /// Whether it has a splat or a placeholder (a "dynamic" rule).
    pub fn is_dynamic(&self) -> bool {
        !self.names.is_empty()
    }

    /// Matches a request's host and (decoded) path.
    pub fn captures(&self, host: &str, path: &str) -> Option<Captures> {
        let url;
        let subject = if self.with_host {
            url = format!("https://{host}{path}");
            url.as_str()
        } else {
            path
        };
        let found = self.regex.captures(subject)?;
        Some(
            self.names
                .iter()
                .filter_map(|n| Some((n.clone(), found.name(n)?.as_str().to_owned())))
                .collect(),
        )
    }
}

fn split_host(pattern: &str) -> Result<(Option<&str>, &str), PatternError> {
    if let Some(rest) = pattern.strip_prefix("https://") {
        let slash = rest.find('/').unwrap_or(rest.len());
        let (host, path) = rest.split_at(slash);
        return Ok((Some(host), if path.is_empty() { "/" } else { path }));
    }
    if pattern.starts_with('/') {
        return Ok((None, pattern));
    }
    Err(PatternError::NotAPath {
        pattern: pattern.to_owned(),
    })
}

fn compile(
    part: &str,
    placeholder: &str,
    pattern: &str,
    names: &mut Vec<String>,
    re: &mut String,
) -> Result<(), PatternError> {
    let mut rest = part;
    while let Some(c) = rest.chars().next() {
        if c == '*' {
            add_name(names, "splat", pattern)?;
            re.push_str("(?P<splat>.*)");
            rest = &rest[1..];
        } else if let Some(name) = placeholder_at(rest) {
            add_name(names, name, pattern)?;
            re.push_str(&format!("(?P<{name}>{placeholder})"));
            rest = &rest[1 + name.len()..];
        } else {
            re.push_str(&regex::escape(&rest[..c.len_utf8()]));
            rest = &rest[c.len_utf8()..];
        }
    }
    Ok(())
}

fn add_name(names: &mut Vec<String>, name: &str, pattern: &str) -> Result<(), PatternError> {
    if names.iter().any(|n| n == name) {
        return Err(if name == "splat" {
            PatternError::TwoSplats {
                pattern: pattern.to_owned(),
            }
        } else {
            PatternError::RepeatedPlaceholder {
                pattern: pattern.to_owned(),
                name: name.to_owned(),
            }
        });
    }
    names.push(name.to_owned());
    Ok(())
}

/// The name of a placeholder starting `text` (`:name…`), if one does.
fn placeholder_at(text: &str) -> Option<&str> {
    let body = text.strip_prefix(':')?;
    if !body.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    Some(&body[..end])
}

/// A destination or header value with `:splat` and `:name` replaced by what
/// was captured; a `:word` that names nothing captured is left as it is.
pub fn substitute(template: &str, captures: &Captures) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        let value = placeholder_at(rest)
            .and_then(|name| captures.iter().find(|(n, _)| n == name))
            .map(|(n, v)| (n.len(), v));
        if let Some((len, value)) = value {
            out.push_str(value);
            rest = &rest[1 + len..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(pattern: &str, path: &str) -> Option<Captures> {
        Pattern::parse(pattern)
            .unwrap()
            .captures("example.com", path)
    }

    #[test]
    fn a_literal_matches_only_itself() {
        assert_eq!(caps("/a/b", "/a/b"), Some(vec![]));
        assert_eq!(caps("/a/b", "/a/bc"), None);
        assert_eq!(caps("/a.b", "/axb"), None);
        assert!(!Pattern::parse("/a").unwrap().is_dynamic());
    }

    #[test]
    fn a_splat_is_greedy() {
        // Source: developers.cloudflare.com/workers/static-assets/redirects/
        // "Splats": a splat greedily matches all characters.
        let c = caps("/blog/*", "/blog/2024/01/post").unwrap();
        assert_eq!(c, vec![("splat".into(), "2024/01/post".into())]);
        assert_eq!(
            caps("/blog/*", "/blog/"),
            Some(vec![("splat".into(), String::new())])
        );
        assert_eq!(caps("/blog/*", "/blog"), None);
    }

    #[test]
    fn a_placeholder_stops_at_a_slash() {
        // Source: .../redirects/ "Placeholders" (`:[A-Za-z]\w*`, all
        // characters apart from the delimiter `/` in a path).
        let c = caps("/movies/:title", "/movies/jaws").unwrap();
        assert_eq!(c, vec![("title".into(), "jaws".into())]);
        assert_eq!(caps("/movies/:title", "/movies/jaws/2"), None);
        assert_eq!(caps("/movies/:title", "/movies/"), None);
    }

    #[test]
    fn a_host_pattern_matches_the_host() {
        let p = Pattern::parse("https://:sub.example.com/*").unwrap();
        let c = p.captures("docs.example.com", "/a").unwrap();
        assert_eq!(c[0], ("sub".into(), "docs".into()));
        assert!(p.captures("a.b.example.com", "/a").is_none());
        assert!(p.captures("example.org", "/a").is_none());
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(matches!(
            Pattern::parse("/*/*"),
            Err(PatternError::TwoSplats { .. })
        ));
        assert!(matches!(
            Pattern::parse("/:a/:a"),
            Err(PatternError::RepeatedPlaceholder { .. })
        ));
        assert!(matches!(
            Pattern::parse("blog"),
            Err(PatternError::NotAPath { .. })
        ));
    }

    #[test]
    fn substitution_replaces_known_names_only() {
        let c = vec![
            ("splat".to_owned(), "x/y".to_owned()),
            ("code".to_owned(), "7".to_owned()),
        ];
        assert_eq!(
            substitute("/n/:splat?c=:code&d=:dog", &c),
            "/n/x/y?c=7&d=:dog"
        );
        assert_eq!(
            substitute("https://h:8080/:splat", &c),
            "https://h:8080/x/y"
        );
    }
}
