//! The text forms of Go values that have their own: `metav1.Time` and `metav1.MicroTime`
//! (RFC 3339 in UTC), `time.Duration` (`1h2m3.5s`), and the syntax `resource.Quantity`
//! accepts.

use serde_json::Value;

/// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix epoch.
const GO_ZERO_UNIX: i64 = -62_135_596_800;

/// (year, month, day) of a count of days since 1970-01-01 (proleptic Gregorian).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `time.Unix(seconds, nanos)` written as Go's `metav1.Time` (`2006-01-02T15:04:05Z`) or,
/// with `micro`, `metav1.MicroTime` (`2006-01-02T15:04:05.000000Z`); `null` for Go's zero
/// time.
pub(crate) fn rfc3339(seconds: i64, nanos: i64, micro: bool) -> Result<Value, String> {
    let seconds = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or_else(|| "timestamp out of range".to_string())?;
    let nanos = nanos.rem_euclid(1_000_000_000);
    if seconds == GO_ZERO_UNIX && nanos == 0 {
        return Ok(Value::Null);
    }
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (year, month, day) = civil(days);
    if !(0..=9999).contains(&year) {
        return Err(format!("timestamp year {year} outside of range [0,9999]"));
    }
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}");
    if micro {
        out.push_str(&format!(".{:06}", nanos / 1000));
    }
    out.push('Z');
    Ok(Value::String(out))
}

/// Go's `time.Duration.String()` of a count of nanoseconds.
pub(crate) fn go_duration(nanos: i64) -> String {
    let magnitude = api::gofmt::go_duration(std::time::Duration::from_nanos(nanos.unsigned_abs()));
    if nanos < 0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

/// Whether `s` matches `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`, the syntax upstream's
/// `ParseQuantity` requires first.
pub(crate) fn quantity_syntax(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let start = i;
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'.') {
        i += 1;
    }
    if i == start {
        return false;
    }
    while b.get(i).is_some_and(|c| b"eEinumkKMGTP".contains(c)) {
        i += 1;
    }
    if matches!(b.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(rfc3339(0, 0, false).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(1_700_000_000, 0, false).unwrap(),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            rfc3339(951_782_400, 123_456_000, true).unwrap(),
            "2000-02-29T00:00:00.123456Z"
        );
        assert_eq!(
            rfc3339(-1, 999_999_000, true).unwrap(),
            "1969-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            rfc3339(253_402_300_799, 0, false).unwrap(),
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(rfc3339(GO_ZERO_UNIX, 0, false).unwrap(), Value::Null);
        assert_eq!(
            rfc3339(GO_ZERO_UNIX + 1, 0, false).unwrap(),
            "0001-01-01T00:00:01Z"
        );
        assert!(rfc3339(253_402_300_800, 0, false).is_err());
        assert!(rfc3339(i64::MAX, 999_999_999, true).is_err());
        assert!(rfc3339(i64::MIN, -1, true).is_err());
    }

    #[test]
    fn durations_as_go_prints_them() {
        let s = 1_000_000_000i64;
        for (n, want) in [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3 * s, "3s"),
            (4 * 60 * s + 5 * s, "4m5s"),
            (3600 * s, "1h0m0s"),
            (3600 * s + 500_000_000, "1h0m0.5s"),
            (-90 * s, "-1m30s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (i64::MAX, "2562047h47m16.854775807s"),
        ] {
            assert_eq!(go_duration(n), want);
        }
    }

    #[test]
    fn quantities() {
        for ok in ["1", "1Gi", "100m", "-1.5e3", "0.5", "1e-3", "+2Ki", "."] {
            assert!(quantity_syntax(ok), "{ok}");
        }
        for bad in ["", "Gi", "1 Gi", "1x", "abc", "1e3e"] {
            assert!(!quantity_syntax(bad), "{bad}");
        }
    }
}
