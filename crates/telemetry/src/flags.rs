//! Value parsers shared by the binaries' flags: durations and Kubernetes names.

use std::time::Duration;

/// Parses `1500ms`, `15s`, `2m`, `1h`, or a bare number of seconds; fractions are
/// allowed (`1.5s`). For `clap`'s `value_parser`.
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let value = value.trim();
    let split = value
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{value:?} is not a duration such as 15s or 500ms"))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "" | "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return Err(format!("{value:?} has an unknown unit (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|error| format!("{value:?}: {error}"))
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
        for bad in ["fast", "5d", "", "-1s", "1e9999s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
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
