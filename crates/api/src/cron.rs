//! Cron schedules as `github.com/robfig/cron/v3`'s `ParseStandard` reads them (five
//! fields with names for months and weekdays, ranges, steps and lists, the `@yearly`/
//! `@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly` descriptors,
//! `@every <duration>`, and a `TZ=` or `CRON_TZ=` prefix), with its error messages, and
//! the activation times they give (`Schedule.Next`). Time zone names are checked as
//! `time.LoadLocation` checks them, against the IANA names of [`tz`]; turning a name into
//! a [`TimeZone`] (which reads the system's tz database) is left to the caller.

use jiff::Timestamp;
use jiff::civil::{DateTime, time};
use jiff::tz::TimeZone;

mod tz;

/// robfig/cron's `starBit`: the field was `*` or `?`.
const STAR: u64 = 1 << 63;

/// A parsed schedule (robfig/cron's `SpecSchedule` or `ConstantDelaySchedule`) and the
/// location its prefix names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    location: Option<String>,
    times: Times,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Times {
    /// One bit per allowed value (and [`STAR`]) for each field.
    Fields {
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
    },
    /// `@every <duration>`: whole seconds, at least one.
    Every { secs: i64 },
}

struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// Go's `strconv.Atoi` error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {s:?}: invalid syntax"));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {s:?}: value out of range"))
}

fn must_parse_int(expr: &str) -> Result<u64, String> {
    let n = atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    Ok(n.unsigned_abs())
}

fn parse_int_or_name(expr: &str, r: &Bounds) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    if let Some((_, v)) = r.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(expr)
}

/// `getBits`: the bits `min..=max` every `step`.
fn get_bits(min: u64, max: u64, step: u64) -> u64 {
    if step == 1 {
        return !(u64::MAX << (max + 1)) & (u64::MAX << min);
    }
    let mut b = 0;
    let mut i = min;
    while i <= max {
        b |= 1 << i;
        i += step;
    }
    b
}

/// `getRange`: one comma-separated part of a field.
fn get_range(expr: &str, r: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = r.min;
        end = r.max;
        extra = STAR;
    } else {
        start = parse_int_or_name(low_and_high[0], r)?;
        end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], r)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single {
                end = r.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < r.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            r.min
        ));
    }
    if end > r.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            r.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(get_bits(start, end, step) | extra)
}

/// `getField`: the comma-separated parts of a field (empty ones skipped).
fn get_field(field: &str, r: &Bounds) -> Result<u64, String> {
    let mut b = 0;
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        b |= get_range(expr, r)?;
    }
    Ok(b)
}

/// Go's `time.ParseDuration`, in nanoseconds (saturating), with its error texts.
fn parse_duration(s: &str) -> Result<i128, String> {
    let quoted = format!("{s:?}");
    let mut rest = s;
    let mut neg = false;
    if let Some(r) = rest.strip_prefix(['+', '-']) {
        neg = rest.starts_with('-');
        rest = r;
    }
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(format!("time: invalid duration {quoted}"));
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let b = rest.as_bytes();
        let mut i = 0;
        let mut n = 0.0_f64;
        while i < b.len() && b[i].is_ascii_digit() {
            n = n * 10.0 + f64::from(b[i] - b'0');
            i += 1;
        }
        let pre = i > 0;
        let mut post = false;
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let start = i;
            let mut scale = 1.0_f64;
            while i < b.len() && b[i].is_ascii_digit() {
                scale /= 10.0;
                n += f64::from(b[i] - b'0') * scale;
                i += 1;
            }
            post = i > start;
        }
        if !pre && !post {
            return Err(format!("time: invalid duration {quoted}"));
        }
        rest = &rest[i..];
        let unit_end = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(j, _)| j);
        if unit_end == 0 {
            return Err(format!("time: missing unit in duration {quoted}"));
        }
        let unit = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => return Err(format!("time: unknown unit {other:?} in duration {quoted}")),
        };
        total += n * unit;
        rest = &rest[unit_end..];
    }
    // Float to integer casts saturate.
    let ns = total as i128;
    Ok(if neg { -ns } else { ns })
}

fn parse_descriptor(spec: &str) -> Result<Times, String> {
    let fields = match spec {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => {
            let Some(d) = spec.strip_prefix("@every ") else {
                return Err(format!("unrecognized descriptor: {spec}"));
            };
            let ns =
                parse_duration(d).map_err(|e| format!("failed to parse duration {spec}: {e}"))?;
            // `Every`: under a second is a second, and sub-second parts are dropped.
            let secs = i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX).max(1);
            return Ok(Times::Every { secs });
        }
    };
    parse_fields(fields)
}

fn parse_fields(spec: &str) -> Result<Times, String> {
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    Ok(Times::Fields {
        minute: get_field(fields[0], &MINUTES)?,
        hour: get_field(fields[1], &HOURS)?,
        dom: get_field(fields[2], &DOM)?,
        month: get_field(fields[3], &MONTHS)?,
        dow: get_field(fields[4], &DOW)?,
    })
}

/// `cron.ParseStandard`: the schedule or upstream's error text.
pub fn parse_standard(spec: &str) -> Result<Schedule, String> {
    if spec.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut spec = spec;
    let mut location = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(i) = spec.find(' ') else {
            return Err(format!(
                "provided bad location {spec}: unknown time zone {spec}"
            ));
        };
        let eq = spec.find('=').unwrap_or(0);
        let loc = &spec[eq + 1..i];
        if let Err(e) = load_location(loc) {
            return Err(format!("provided bad location {loc}: {e}"));
        }
        location = Some(loc.to_string());
        spec = spec[i..].trim();
    }
    let times = if spec.starts_with('@') {
        parse_descriptor(spec)?
    } else {
        parse_fields(spec)?
    };
    Ok(Schedule { location, times })
}

/// `time.LoadLocation`'s check of a name: `Ok` or Go's error text. `""` and `"UTC"` are
/// UTC, `"Local"` the local zone.
pub fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" || tz::NAMES.contains(&name) {
        Ok(())
    } else {
        Err(format!("unknown time zone {name}"))
    }
}

impl Schedule {
    /// The location named by a `TZ=` or `CRON_TZ=` prefix (`None`: the local zone).
    pub fn location(&self) -> Option<&str> {
        self.location.as_deref()
    }

    /// The first activation strictly after `t` (`Schedule.Next`), the fields read in
    /// `tz` (the [`location`](Self::location) resolved), `None` when there is none within
    /// five years (an impossible date such as February 31st).
    pub fn next(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let (minute, hour, dom, month, dow) = match self.times {
            Times::Every { secs } => {
                return Timestamp::from_second(t.as_second().checked_add(secs)?).ok();
            }
            Times::Fields {
                minute,
                hour,
                dom,
                month,
                dow,
            } => (minute, hour, dom, month, dow),
        };
        let has = |b: u64, i: i64| (0..63).contains(&i) && b & (1 << i) != 0;
        let day_matches = |d: DateTime| {
            let dom_ok = has(dom, i64::from(d.day()));
            let dow_ok = has(dow, i64::from(d.weekday().to_sunday_zero_offset()));
            if dom & STAR != 0 || dow & STAR != 0 {
                dom_ok && dow_ok
            } else {
                dom_ok || dow_ok
            }
        };
        // Start at the next whole minute, in the schedule's zone.
        let start =
            Timestamp::from_second(t.as_second() - t.as_second().rem_euclid(60) + 60).ok()?;
        let mut d = start.to_zoned(tz.clone()).datetime();
        let limit_year = d.year() + 5;
        loop {
            if d.year() > limit_year {
                return None;
            }
            if !has(month, i64::from(d.month())) {
                d = d
                    .first_of_month()
                    .checked_add(jiff::Span::new().months(1))
                    .ok()?;
                d = d.date().to_datetime(time(0, 0, 0, 0));
                continue;
            }
            if !day_matches(d) {
                d = d.date().tomorrow().ok()?.to_datetime(time(0, 0, 0, 0));
                continue;
            }
            if !has(hour, i64::from(d.hour())) {
                d = d
                    .date()
                    .to_datetime(time(d.hour(), 0, 0, 0))
                    .checked_add(jiff::Span::new().hours(1))
                    .ok()?;
                continue;
            }
            if !has(minute, i64::from(d.minute())) {
                d = d.checked_add(jiff::Span::new().minutes(1)).ok()?;
                continue;
            }
            let at = tz.to_ambiguous_timestamp(d).compatible().ok()?;
            if at > t {
                return Some(at);
            }
            d = d.checked_add(jiff::Span::new().minutes(1)).ok()?;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn rfc3339(t: Timestamp) -> String {
        t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    fn next_utc(spec: &str, after: &str) -> String {
        let sched = parse_standard(spec).unwrap();
        rfc3339(sched.next(t(after), &TimeZone::UTC).unwrap())
    }

    fn check(spec: &str) -> Result<(), String> {
        parse_standard(spec).map(|_| ())
    }

    #[test]
    fn schedules() {
        for ok in [
            "* * * * *",
            "*/5 * * * *",
            "0 0 1 jan mon",
            "0 9-17 * * MON-FRI",
            "5,10,15 * * * *",
            "5,,10 * * * *",
            "@hourly",
            "@every 1h30m",
            "@every -5s",
            "? * * * *",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        assert_eq!(check(""), Err("empty spec string".into()));
        assert_eq!(
            check("* * *"),
            Err("expected exactly 5 fields, found 3: [* * *]".into())
        );
        assert_eq!(
            check("* * * *"),
            Err("expected exactly 5 fields, found 4: [* * * *]".into())
        );
        assert_eq!(
            check("60 * * * *"),
            Err("end of range (60) above maximum (59): 60".into())
        );
        assert_eq!(
            check("x * * * *"),
            Err("failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            check("@often"),
            Err("unrecognized descriptor: @often".into())
        );
        assert_eq!(
            check("@every 5"),
            Err("failed to parse duration @every 5: time: missing unit in duration \"5\"".into())
        );
        assert_eq!(
            check("@every 5x"),
            Err(
                "failed to parse duration @every 5x: time: unknown unit \"x\" in duration \"5x\""
                    .into()
            )
        );
        assert_eq!(
            check("* * 0 * *"),
            Err("beginning of range (0) below minimum (1): 0".into())
        );
        assert_eq!(
            check("5-1 * * * *"),
            Err("beginning of range (5) beyond end of range (1): 5-1".into())
        );
        assert_eq!(
            check("*/0 * * * *"),
            Err("step of range should be a positive number: */0".into())
        );
        assert_eq!(
            check("1-2-3 * * * *"),
            Err("too many hyphens: 1-2-3".into())
        );
        assert_eq!(
            check("1/2/3 * * * *"),
            Err("too many slashes: 1/2/3".into())
        );
        assert_eq!(
            check("-1 * * * *"),
            Err("failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax".into())
        );
    }

    #[test]
    fn zones() {
        assert!(load_location("Europe/Berlin").is_ok());
        assert_eq!(
            load_location("Mars/Base"),
            Err("unknown time zone Mars/Base".into())
        );
        let s = parse_standard("CRON_TZ=Europe/Berlin 0 9 * * *").unwrap();
        assert_eq!(s.location(), Some("Europe/Berlin"));
        assert_eq!(parse_standard("0 9 * * *").unwrap().location(), None);
        assert_eq!(
            check("TZ=Nowhere/Land * * * * *"),
            Err("provided bad location Nowhere/Land: unknown time zone Nowhere/Land".into())
        );
        assert_eq!(
            check("TZ=UTC"),
            Err("provided bad location TZ=UTC: unknown time zone TZ=UTC".into())
        );
    }

    #[test]
    fn next_times() {
        assert_eq!(
            next_utc("*/15 * * * *", "2024-03-01T10:07:30Z"),
            "2024-03-01T10:15:00Z"
        );
        assert_eq!(
            next_utc("*/1 * * * *", "2024-03-01T10:07:00Z"),
            "2024-03-01T10:08:00Z"
        );
        assert_eq!(
            next_utc("0 9 * * mon-fri", "2024-03-01T10:00:00Z"),
            "2024-03-04T09:00:00Z"
        );
        assert_eq!(
            next_utc("30 2 1 jan,jul *", "2024-03-01T00:00:00Z"),
            "2024-07-01T02:30:00Z"
        );
        assert_eq!(
            next_utc("5-10/5 * * * *", "2024-03-01T10:06:00Z"),
            "2024-03-01T10:10:00Z"
        );
        // "N/step" runs from N to the maximum.
        assert_eq!(
            next_utc("50/5 * * * *", "2024-03-01T10:51:00Z"),
            "2024-03-01T10:55:00Z"
        );
        // Both day fields restricted: either matches.
        assert_eq!(
            next_utc("0 0 13 * 5", "2024-03-01T01:00:00Z"),
            "2024-03-08T00:00:00Z"
        );
        // One of them `*` (or `*/1`): both must.
        assert_eq!(
            next_utc("0 0 * * 0", "2024-03-01T01:00:00Z"),
            "2024-03-03T00:00:00Z"
        );
        assert_eq!(
            next_utc("0 0 13 * */1", "2024-03-01T01:00:00Z"),
            "2024-03-13T00:00:00Z"
        );
        assert_eq!(
            next_utc("@hourly", "2024-03-01T10:07:00Z"),
            "2024-03-01T11:00:00Z"
        );
        assert_eq!(
            next_utc("@daily", "2024-03-01T10:07:00Z"),
            "2024-03-02T00:00:00Z"
        );
        assert_eq!(
            next_utc("@weekly", "2024-03-01T10:07:00Z"),
            "2024-03-03T00:00:00Z"
        );
        assert_eq!(
            next_utc("@monthly", "2024-03-01T10:07:00Z"),
            "2024-04-01T00:00:00Z"
        );
        assert_eq!(
            next_utc("@yearly", "2024-03-01T10:07:00Z"),
            "2025-01-01T00:00:00Z"
        );
        assert_eq!(
            next_utc("@every 5s", "2024-03-01T10:07:00Z"),
            "2024-03-01T10:07:05Z"
        );
        assert_eq!(
            next_utc("@every 1m30s", "2024-03-01T10:07:00Z"),
            "2024-03-01T10:08:30Z"
        );
        assert_eq!(
            next_utc("@every 1.5m", "2024-03-01T10:07:00Z"),
            "2024-03-01T10:08:30Z"
        );
        // Under a second is a second.
        assert_eq!(
            next_utc("@every 300ms", "2024-03-01T10:07:00Z"),
            "2024-03-01T10:07:01Z"
        );
        // February 31st never comes.
        assert!(
            parse_standard("0 0 31 2 *")
                .unwrap()
                .next(t("2024-01-01T00:00:00Z"), &TimeZone::UTC)
                .is_none()
        );
    }

    #[test]
    fn next_in_a_zone() {
        // 09:00 at UTC+1 (Berlin in winter), as a fixed offset so no tz database is read.
        let s = parse_standard("0 9 * * *").unwrap();
        let tz = TimeZone::fixed(jiff::tz::offset(1));
        assert_eq!(
            rfc3339(s.next(t("2024-01-10T00:00:00Z"), &tz).unwrap()),
            "2024-01-10T08:00:00Z"
        );
    }
}
