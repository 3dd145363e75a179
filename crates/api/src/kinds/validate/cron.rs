//! Cron schedules as `github.com/robfig/cron/v3`'s `ParseStandard` accepts them (five
//! fields, names for months and weekdays, `@hourly`-style descriptors and `@every
//! <duration>`), with its error messages, and time zone names as `time.LoadLocation`.

use super::tz;

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

fn get_range(expr: &str, r: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = r.min;
        end = r.max;
    } else {
        start = parse_int_or_name(low_and_high[0], r)?;
        end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], r)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = r.max;
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
    Ok(())
}

fn get_field(field: &str, r: &Bounds) -> Result<(), String> {
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        get_range(expr, r)?;
    }
    Ok(())
}

/// Go's `time.ParseDuration`, validation only.
fn parse_duration(s: &str) -> Result<(), String> {
    let orig = s;
    let quoted = format!("{orig:?}");
    let mut rest = s;
    if let Some(r) = rest.strip_prefix(['+', '-']) {
        rest = r;
    }
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(format!("time: invalid duration {quoted}"));
    }
    while !rest.is_empty() {
        let b = rest.as_bytes();
        let mut i = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let pre = i > 0;
        let mut post = false;
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
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
        let unit = &rest[..unit_end];
        if !["ns", "us", "µs", "μs", "ms", "s", "m", "h"].contains(&unit) {
            return Err(format!("time: unknown unit {unit:?} in duration {quoted}"));
        }
        rest = &rest[unit_end..];
    }
    Ok(())
}

fn parse_descriptor(spec: &str) -> Result<(), String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => {
            if let Some(d) = spec.strip_prefix("@every ") {
                parse_duration(d).map_err(|e| format!("failed to parse duration {spec}: {e}"))
            } else {
                Err(format!("unrecognized descriptor: {spec}"))
            }
        }
    }
}

/// `cron.ParseStandard`: `Ok` or upstream's error text.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut spec = spec;
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
        spec = spec[i..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    get_field(fields[0], &MINUTES)?;
    get_field(fields[1], &HOURS)?;
    get_field(fields[2], &DOM)?;
    get_field(fields[3], &MONTHS)?;
    get_field(fields[4], &DOW)?;
    Ok(())
}

/// `time.LoadLocation`: `Ok` or Go's error text.
pub(crate) fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(());
    }
    if tz::NAMES.contains(&name) {
        Ok(())
    } else {
        Err(format!("unknown time zone {name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        for ok in [
            "* * * * *",
            "*/5 * * * *",
            "0 0 1 jan mon",
            "0 9-17 * * MON-FRI",
            "5,10,15 * * * *",
            "@hourly",
            "@every 1h30m",
            "? * * * *",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
        assert_eq!(parse_standard(""), Err("empty spec string".into()));
        assert_eq!(
            parse_standard("* * *"),
            Err("expected exactly 5 fields, found 3: [* * *]".into())
        );
        assert_eq!(
            parse_standard("60 * * * *"),
            Err("end of range (60) above maximum (59): 60".into())
        );
        assert_eq!(
            parse_standard("x * * * *"),
            Err("failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            parse_standard("@often"),
            Err("unrecognized descriptor: @often".into())
        );
        assert_eq!(
            parse_standard("@every 5"),
            Err("failed to parse duration @every 5: time: missing unit in duration \"5\"".into())
        );
        assert_eq!(
            parse_standard("* * 0 * *"),
            Err("beginning of range (0) below minimum (1): 0".into())
        );
        assert_eq!(
            parse_standard("5-1 * * * *"),
            Err("beginning of range (5) beyond end of range (1): 5-1".into())
        );
        assert_eq!(
            parse_standard("*/0 * * * *"),
            Err("step of range should be a positive number: */0".into())
        );
    }

    #[test]
    fn zones() {
        assert!(load_location("Europe/Berlin").is_ok());
        assert_eq!(
            load_location("Mars/Base"),
            Err("unknown time zone Mars/Base".into())
        );
    }
}
