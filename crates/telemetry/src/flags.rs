//! Value parsers shared by the binaries' flags: durations and Kubernetes names.

use std::time::Duration;

/// Parses a duration as [`humantime`] does (`1500ms`, `15s`, `2m`, `1h`,
/// `1.5s`, `1m 30s`, `2min`, `1d`…), or as the flags always accepted: a bare
/// number of seconds (`3`, `0.5`), or one decimal number with `ms`, `s`, `m`
/// or `h` (`.5s`). For `clap`'s `value_parser`.
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let value = value.trim();
    humantime::parse_duration(value).or_else(|error| {
        decimal(value)
            .ok_or_else(|| format!("{value:?} is not a duration such as 15s or 500ms: {error}"))
    })
}

/// One decimal number of seconds, or of the unit after it (`ms`, `s`, `m`, `h`).
fn decimal(value: &str) -> Option<Duration> {
    let (number, scale) = [
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
        ("", 1.0),
    ]
    .into_iter()
    .find_map(|(unit, scale)| Some((value.strip_suffix(unit)?, scale)))?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let number: f64 = number.parse().ok()?;
    Duration::try_from_secs_f64(number * scale).ok()
}

/// Whether `value` is a DNS label (RFC 1123): what a namespace name must be.
pub fn is_dns_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

/// Whether `value` is a DNS subdomain (RFC 1123): what most object names must be.
pub fn is_dns_subdomain(value: &str) -> bool {
    !value.is_empty() && value.len() <= 253 && value.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration(" 3 "), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5.m"), Ok(Duration::from_secs(300)));
        // humantime's syntax too: several units, long names, days.
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        for bad in [
            "fast",
            "5x",
            "",
            "-1s",
            "1e9999s",
            "1..5s",
            "9".repeat(400).as_str(),
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        let error = parse_duration("5x").unwrap_err();
        assert!(
            error.contains("\"5x\" is not a duration such as 15s or 500ms")
                && error.contains("unknown time unit \"x\""),
            "{error}"
        );
    }

    #[test]
    fn names() {
        assert!(is_dns_label("isolane-system"));
        for bad in ["", "-a", "a-", "A", "a_b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad:?}");
        }
        assert!(is_dns_subdomain("node-1.example"));
        assert!(!is_dns_subdomain("node..1"));
        assert!(!is_dns_subdomain(""));
    }
}
