//! Timestamps and ages as upstream reads and prints them.
//!
//! - [`parse_rfc3339`] accepts what Go's `time.Parse(time.RFC3339, …)` accepts (the form
//!   `metav1.Time` is decoded with): `YYYY-MM-DDTHH:MM:SS`, an optional fraction of a second
//!   (`.` or `,` then digits), then `Z` or `±hh:mm`.
//! - [`human_duration`] is `k8s.io/apimachinery/pkg/util/duration.HumanDuration`.
//! - [`since`] is the printers' `translateTimestampSince`: `<unknown>` for the zero time.
//!
//! Instants are nanoseconds since the Unix epoch ([`Nanos`]); Go's zero time
//! (`0001-01-01T00:00:00Z`, what a missing timestamp decodes to) is [`ZERO`].

use serde_json::Value;

/// An instant: nanoseconds since 1970-01-01T00:00:00Z.
pub(crate) type Nanos = i128;

const NANOS_PER_SEC: i128 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;

/// Go's zero `time.Time`, 0001-01-01T00:00:00Z.
pub(crate) const ZERO: Nanos = -62_135_596_800 * NANOS_PER_SEC;

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A cursor over the bytes of a timestamp.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn digit(&self, at: usize) -> Option<u32> {
        self.b
            .get(at)
            .filter(|c| c.is_ascii_digit())
            .map(|c| u32::from(c - b'0'))
    }

    /// Exactly `n` digits.
    fn fixed(&mut self, n: usize) -> Option<u32> {
        let mut v = 0u32;
        for i in 0..n {
            v = v * 10 + self.digit(self.pos + i)?;
        }
        self.pos += n;
        Some(v)
    }

    /// One or two digits (Go's `getnum(value, false)`, used for the `15` hour).
    fn one_or_two(&mut self) -> Option<u32> {
        let first = self.digit(self.pos)?;
        match self.digit(self.pos + 1) {
            Some(second) => {
                self.pos += 2;
                Some(first * 10 + second)
            }
            None => {
                self.pos += 1;
                Some(first)
            }
        }
    }

    fn byte(&mut self, want: u8) -> Option<()> {
        if self.b.get(self.pos) == Some(&want) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }
}

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, s)` does.
pub(crate) fn parse_rfc3339(s: &str) -> Option<Nanos> {
    let mut c = Cursor {
        b: s.as_bytes(),
        pos: 0,
    };
    let year = i64::from(c.fixed(4)?);
    c.byte(b'-')?;
    let month = c.fixed(2)?;
    c.byte(b'-')?;
    let day = c.fixed(2)?;
    c.byte(b'T')?;
    let hour = c.one_or_two()?;
    c.byte(b':')?;
    let minute = c.fixed(2)?;
    c.byte(b':')?;
    let second = c.fixed(2)?;
    let mut nanos: i128 = 0;
    if matches!(c.b.get(c.pos), Some(b'.' | b',')) && c.digit(c.pos + 1).is_some() {
        c.pos += 1;
        let mut scale = NANOS_PER_SEC;
        while let Some(d) = c.digit(c.pos) {
            // Digits past nanoseconds are read and ignored.
            if scale > 1 {
                scale /= 10;
                nanos += i128::from(d) * scale;
            }
            c.pos += 1;
        }
    }
    let offset_secs: i64 = match c.b.get(c.pos) {
        Some(b'Z') => {
            c.pos += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            let negative = *sign == b'-';
            c.pos += 1;
            let hh = c.fixed(2)?;
            c.byte(b':')?;
            let mm = c.fixed(2)?;
            if hh > 24 || mm > 60 {
                return None;
            }
            let secs = i64::from(hh) * 3600 + i64::from(mm) * 60;
            if negative { -secs } else { secs }
        }
        _ => return None,
    };
    if c.pos != c.b.len()
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * SECS_PER_DAY
        + i64::from(hour) * 3600
        + i64::from(minute) * 60
        + i64::from(second)
        - offset_secs;
    Some(i128::from(secs) * NANOS_PER_SEC + nanos)
}

/// A timestamp field: the zero time when missing, `null`, not a string, or unparsable.
pub(crate) fn timestamp(v: Option<&Value>) -> Nanos {
    v.and_then(Value::as_str)
        .and_then(parse_rfc3339)
        .unwrap_or(ZERO)
}

/// Formats an instant as Go's `t.UTC().Format(time.RFC3339)`: second precision, `Z`.
pub(crate) fn format_rfc3339(t: Nanos) -> String {
    let secs = t.div_euclid(NANOS_PER_SEC);
    let secs = i64::try_from(secs).unwrap_or(if secs < 0 { i64::MIN } else { i64::MAX });
    let days = secs.div_euclid(SECS_PER_DAY);
    let rem = secs.rem_euclid(SECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `later - earlier` as a Go `time.Duration` (saturating at the `int64` nanosecond range).
pub(crate) fn sub(later: Nanos, earlier: Nanos) -> i64 {
    let d = later - earlier;
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// A succinct, approximate rendering of a duration in nanoseconds (`5m`, `2d3h`, `3y45d`),
/// as upstream's `HumanDuration`: `<invalid>` below -1s, `0s` for small negatives.
pub fn human_duration(d: i64) -> String {
    let seconds = d / SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d / MINUTE;
    if minutes < 10 {
        let s = (d / SECOND) % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d / HOUR;
    if hours < 8 {
        let m = (d / MINUTE) % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{dy}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

/// The printers' `translateTimestampSince`: `<unknown>` for the zero time, else the age.
pub(crate) fn since(now: Nanos, t: Nanos) -> String {
    if t == ZERO {
        return "<unknown>".to_string();
    }
    human_duration(sub(now, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Nanos {
        parse_rfc3339(s).unwrap()
    }

    #[test]
    fn parses_like_go() {
        assert_eq!(at("1970-01-01T00:00:00Z"), 0);
        assert_eq!(at("1970-01-01T00:00:01.5Z"), 1_500_000_000);
        assert_eq!(at("1970-01-01T01:00:00+01:00"), 0);
        assert_eq!(at("1969-12-31T19:00:00-05:00"), 0);
        assert_eq!(at("0001-01-01T00:00:00Z"), ZERO);
        assert_eq!(
            at("2024-02-29T23:59:59.123456789123Z") % NANOS_PER_SEC,
            123_456_789
        );
        assert_eq!(at("2024-01-01T1:02:03Z"), at("2024-01-01T01:02:03Z"));
        assert_eq!(at("2024-01-01T00:00:00,5Z"), at("2024-01-01T00:00:00.5Z"));
        for bad in [
            "",
            "2024-01-01",
            "2024-01-01T00:00:00",
            "2024-01-01 00:00:00Z",
            "2024-01-01t00:00:00Z",
            "2024-01-01T00:00:00z",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:60:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00Zjunk",
            "24-01-01T00:00:00Z",
            "2024-01-01T00:00:00.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn formats_utc() {
        assert_eq!(format_rfc3339(ZERO), "0001-01-01T00:00:00Z");
        assert_eq!(
            format_rfc3339(at("2024-05-06T07:08:09.99+02:00")),
            "2024-05-06T05:08:09Z"
        );
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59Z");
        for days in [-800_000, -1, 0, 59, 365 * 30, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn human_durations() {
        let s = SECOND;
        let cases: &[(i64, &str)] = &[
            (-2 * s, "<invalid>"),
            (-s - 1, "0s"),
            (-s, "0s"),
            (0, "0s"),
            (s, "1s"),
            (119 * s, "119s"),
            (120 * s, "2m"),
            (121 * s, "2m1s"),
            (9 * MINUTE + 59 * s, "9m59s"),
            (10 * MINUTE, "10m"),
            (179 * MINUTE, "179m"),
            (3 * HOUR, "3h"),
            (3 * HOUR + 5 * MINUTE, "3h5m"),
            (8 * HOUR, "8h"),
            (47 * HOUR + 59 * MINUTE, "47h"),
            (48 * HOUR, "2d"),
            (51 * HOUR, "2d3h"),
            (8 * 24 * HOUR, "8d"),
            (729 * 24 * HOUR, "729d"),
            (730 * 24 * HOUR, "2y"),
            (731 * 24 * HOUR, "2y1d"),
            (8 * 365 * 24 * HOUR, "8y"),
            (i64::MAX, "292y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(*d), *want, "{d}");
        }
        assert_eq!(since(10 * NANOS_PER_SEC, ZERO), "<unknown>");
        assert_eq!(since(300 * NANOS_PER_SEC, 0), "5m");
        assert_eq!(since(0, 300 * NANOS_PER_SEC), "<invalid>");
        assert_eq!(
            since(at("2024-01-01T00:00:00Z"), at("0001-01-01T00:00:01Z")),
            "292y"
        );
    }
}
