//! Cron schedules of `spec.triggers` ([`Triggers`]): the standard five
//! fields (minute, hour, day of month, month, day of week; POSIX semantics:
//! 0 or 7 is Sunday, a restricted day of month and day of week match
//! either), names such as `MON` and `JAN`, and the `@hourly`-style
//! nicknames, evaluated in an IANA time zone (UTC by default). A sixth,
//! leading field for seconds is accepted too (`*/10 * * * * *`), for
//! schedules finer than a minute. Parsed by `croner`; the webhook, the
//! router's scheduler and `isolane dev` all use this one function.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, TimeZone, Timelike, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The time zone schedules are evaluated in when the Worker names none.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Cron schedules for the Worker's `scheduled` handler.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Triggers {
    /// Standard five-field cron schedules (minute hour day-of-month month
    /// day-of-week, e.g. `*/5 * * * *` or `0 9 * * MON-FRI`; POSIX: 0 or 7 is
    /// Sunday; a leading sixth field for seconds is accepted) or nicknames
    /// such as `@hourly`. Each tick calls the Worker's
    /// `scheduled(controller, env, ctx)` once, on the node and thread where
    /// it is placed, under its limits; `controller.cron` is the schedule as
    /// written here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 128)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub crons: Vec<String>,

    /// The IANA time zone the schedules are read in (default `UTC`), e.g.
    /// `Europe/Paris`: `0 9 * * *` is then 09:00 Paris time, across DST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub time_zone: Option<String>,
}

/// A schedule that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// Not a valid five-field cron expression.
    #[error("invalid cron schedule {expr:?}: {reason}")]
    Cron { expr: String, reason: String },
    /// Not an IANA time zone name.
    #[error("unknown time zone {0:?} (expected an IANA name such as UTC or Europe/Paris)")]
    TimeZone(String),
}

/// One parsed schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    expr: String,
    cron: Cron,
    zone: chrono_tz::Tz,
}

impl Schedule {
    /// Parses `expr` for evaluation in `time_zone` (an IANA name; `None` is UTC).
    pub fn parse(expr: &str, time_zone: Option<&str>) -> Result<Self, ScheduleError> {
        let zone_name = time_zone.unwrap_or(DEFAULT_TIME_ZONE);
        let zone: chrono_tz::Tz = zone_name
            .parse()
            .map_err(|_| ScheduleError::TimeZone(zone_name.to_owned()))?;
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(expr)
            .map_err(|e| ScheduleError::Cron {
                expr: expr.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            expr: expr.to_owned(),
            cron,
            zone,
        })
    }

    /// The schedule as written (`controller.cron`).
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The first tick strictly after `after`, if the schedule has one.
    pub fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        // Ticks fall on whole seconds: search from the whole second (croner
        // keeps the start's fraction otherwise).
        let after = to_chrono(after)?
            .with_nanosecond(0)?
            .with_timezone(&self.zone);
        let next = self.cron.find_next_occurrence(&after, false).ok()?;
        from_chrono(next.with_timezone(&Utc))
    }
}

/// `t` in milliseconds since the Unix epoch (0 before it), as
/// `controller.scheduledTime` carries it.
pub fn unix_millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn to_chrono(t: SystemTime) -> Option<DateTime<Utc>> {
    let since = t.duration_since(UNIX_EPOCH).ok()?;
    let secs = i64::try_from(since.as_secs()).ok()?;
    Utc.timestamp_opt(secs, since.subsec_nanos()).single()
}

fn from_chrono(t: DateTime<Utc>) -> Option<SystemTime> {
    let millis = u64::try_from(t.timestamp_millis()).ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rfc3339: &str) -> SystemTime {
        let t = DateTime::parse_from_rfc3339(rfc3339).unwrap();
        from_chrono(t.with_timezone(&Utc)).unwrap()
    }

    #[test]
    fn five_fields_in_utc_by_default() {
        let s = Schedule::parse("*/15 * * * *", None).unwrap();
        assert_eq!(
            s.next_after(at("2026-11-22T10:07:00Z")),
            Some(at("2026-11-22T10:15:00Z"))
        );
        // Strictly after: a tick at the boundary is the next one.
        assert_eq!(
            s.next_after(at("2026-11-22T10:15:00Z")),
            Some(at("2026-11-22T10:30:00Z"))
        );
        let monday = Schedule::parse("0 9 * * MON", None).unwrap();
        assert_eq!(
            monday.next_after(at("2026-11-22T12:00:00Z")),
            Some(at("2026-11-23T09:00:00Z"))
        );
        // A fraction of a second in the start is not carried into the tick.
        let every_second = Schedule::parse("* * * * * *", None).unwrap();
        let start = at("2026-11-22T12:30:01Z") + Duration::from_millis(502);
        assert_eq!(
            every_second.next_after(start),
            Some(at("2026-11-22T12:30:02Z"))
        );
        let seconds = Schedule::parse("*/10 * * * * *", None).unwrap();
        assert_eq!(
            seconds.next_after(at("2026-11-22T12:30:01Z")),
            Some(at("2026-11-22T12:30:10Z"))
        );
        let hourly = Schedule::parse("@hourly", None).unwrap();
        assert_eq!(
            hourly.next_after(at("2026-11-22T12:30:00Z")),
            Some(at("2026-11-22T13:00:00Z"))
        );
    }

    #[test]
    fn a_time_zone_shifts_the_ticks() {
        // 09:00 in Paris is 08:00 UTC in November (CET, UTC+1).
        let s = Schedule::parse("0 9 * * *", Some("Europe/Paris")).unwrap();
        assert_eq!(
            s.next_after(at("2026-11-22T00:00:00Z")),
            Some(at("2026-11-22T08:00:00Z"))
        );
    }

    #[test]
    fn bad_schedules_and_zones_are_refused_with_the_reason() {
        for bad in [
            "",
            "* * * *",
            "* * * * * * * *",
            "61 * * * *",
            "* * 32 * *",
            "nonsense",
        ] {
            let error = Schedule::parse(bad, None).unwrap_err();
            assert!(
                matches!(error, ScheduleError::Cron { .. }),
                "{bad:?}: {error:?}"
            );
        }
        assert_eq!(
            Schedule::parse("* * * * *", Some("Mars/Olympus")).unwrap_err(),
            ScheduleError::TimeZone("Mars/Olympus".into())
        );
    }
}
