//! Go's `time.Duration` as kubectl's flags read it and as Go prints it: the one parser and
//! the one formatter the commands share.

use std::time::Duration;

use api::gofmt::go_quote;

/// Go's `time.ParseDuration` (`30s`, `1m30s`, `1.5h`, `500ms`, `0`, `-1s`): the sign
/// (`true` when negative) and the magnitude, or Go's error message.
pub fn parse_go_duration(s: &str) -> Result<(bool, Duration), String> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let bad = || format!("time: invalid duration {}", go_quote(s));
    if body == "0" {
        return Ok((false, Duration::ZERO));
    }
    if body.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    let mut rest = body;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("time: missing unit in duration {}", go_quote(s))),
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_quote(unit),
                    go_quote(s)
                ));
            }
        };
        total += n * scale;
    }
    Ok((neg, Duration::from_secs_f64(total)))
}

/// Formats a duration as Go's `Duration.String` does (`12s`, `1m0s`, `1.5s`, `500ms`).
pub use api::gofmt::go_duration as format_duration;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn parses() {
        let ok = |s: &str| parse_go_duration(s).unwrap();
        assert_eq!(ok("30s"), (false, Duration::from_secs(30)));
        assert_eq!(ok("1m30s"), (false, Duration::from_secs(90)));
        assert_eq!(ok("500ms"), (false, Duration::from_millis(500)));
        assert_eq!(ok("1.5s"), (false, Duration::from_millis(1500)));
        assert_eq!(ok("0"), (false, Duration::ZERO));
        assert_eq!(ok("-0"), (false, Duration::ZERO));
        assert_eq!(ok("2h"), (false, Duration::from_secs(7200)));
        assert_eq!(ok("-1s"), (true, Duration::from_secs(1)));
        let err = |s: &str| parse_go_duration(s).unwrap_err();
        assert_eq!(err("x"), "time: invalid duration \"x\"");
        assert_eq!(err(""), "time: invalid duration \"\"");
        assert_eq!(err("10"), "time: missing unit in duration \"10\"");
        assert_eq!(err("5d"), "time: unknown unit \"d\" in duration \"5d\"");
    }

    #[test]
    fn formats() {
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_duration(Duration::from_secs(12)), "12s");
        assert_eq!(format_duration(Duration::from_secs(60)), "1m0s");
        assert_eq!(format_duration(Duration::from_secs(3661)), "1h1m1s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(
            format_duration(Duration::from_nanos(i64::MAX as u64)),
            "2562047h47m16.854775807s"
        );
    }
}
