//! Resource quantities (`1Gi`, `500m`, `1e3`) printed as upstream prints them:
//! `resource.Quantity.String()`, the canonical form. `1024Mi` prints `1Gi`, `1.5Gi` prints
//! `1536Mi`, `0.5` prints `500m`, `1000M` prints `1G`.
//!
//! Parsing follows `resource.ParseQuantity`, with the api crate's lexing (sign, digits,
//! optional fraction, then a decimal SI suffix, a binary SI suffix or a decimal exponent);
//! values are exact decimals, rounded away from zero to nanounits, binary ones capped at
//! 2^63-1. Canonicalization follows
//! `CanonicalizeBytes`: binary quantities of at least 1024 in magnitude that are integers
//! keep a binary suffix (factors of 1024 moved into it); everything else is printed with
//! the exponent lowered to a multiple of 3 and the matching decimal suffix.

use api::kinds::validate::quantity::{Format, Parts, interpret_suffix, split};
use serde_json::Value;

/// A parsed quantity: `mantissa × 10^exponent`.
#[derive(Debug, PartialEq, Eq)]
struct Quantity {
    mantissa: i128,
    exponent: i32,
    format: Format,
}

/// Values whose mantissa would exceed this are not handled exactly (they are far beyond
/// anything a quantity holds in practice); their text is printed as given.
const LIMIT: i128 = 10i128.pow(36);

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

fn digits_value(digits: &str) -> Option<i128> {
    let mut v: i128 = 0;
    for d in digits.bytes() {
        v = v.checked_mul(10)?.checked_add(i128::from(d - b'0'))?;
        if v > LIMIT {
            return None;
        }
    }
    Some(v)
}

fn parse(s: &str) -> Option<Quantity> {
    if s.is_empty() {
        return None;
    }
    let Parts {
        positive,
        num,
        denom,
        suffix,
    } = split(s).ok()?;
    let (base, exp, mut format) = interpret_suffix(suffix)?;
    // Drop trailing zeros of the fraction: they change nothing but the digit count.
    let denom = denom.trim_end_matches('0');
    let mut mantissa = digits_value(&format!("{num}{denom}"))?;
    let mut exponent = -i32::try_from(denom.len()).ok()?;
    if base == 10 {
        exponent = exponent.checked_add(exp)?;
    } else {
        mantissa = mantissa.checked_mul(1i128 << exp)?;
        if mantissa > LIMIT {
            return None;
        }
    }
    // Round away from zero to nanounits.
    if exponent < -9 {
        let shift = u32::try_from(-9 - exponent).ok()?;
        mantissa = match pow10(shift) {
            Some(div) => {
                let q = mantissa / div;
                if mantissa % div != 0 { q + 1 } else { q }
            }
            // Smaller than any representable step: the smallest non-zero value.
            None => i128::from(mantissa != 0),
        };
        exponent = -9;
    }
    if format == Format::BinarySi {
        let max = i128::from(i64::MAX);
        if exponent >= 0 && mantissa.checked_mul(pow10(exponent as u32)?)? > max {
            mantissa = max;
            exponent = 0;
        }
        // Between 0 and 1: shown in decimal.
        let one = if exponent >= 0 {
            mantissa != 0
        } else {
            pow10((-exponent) as u32).is_some_and(|d| mantissa >= d)
        };
        if mantissa != 0 && !one {
            format = Format::DecimalSi;
        }
    }
    if !positive {
        mantissa = -mantissa;
    }
    Some(Quantity {
        mantissa,
        exponent,
        format,
    })
}

/// Moves factors of `base` from `value` into the returned count.
fn remove_factors(value: i128, base: i128) -> (i128, i32) {
    let mut v = value.abs();
    let mut times = 0;
    while v >= base && v % base == 0 {
        v /= base;
        times += 1;
    }
    (if value < 0 { -v } else { v }, times)
}

fn canonical(q: &Quantity) -> Option<String> {
    if q.mantissa == 0 {
        return Some("0".to_string());
    }
    let mut format = q.format;
    let mut integer: Option<i128> = None;
    if format == Format::BinarySi {
        let value = if q.exponent >= 0 {
            q.mantissa.checked_mul(pow10(q.exponent as u32)?)
        } else {
            let div = pow10((-q.exponent) as u32)?;
            (q.mantissa % div == 0).then_some(q.mantissa / div)
        };
        match value {
            Some(v) if v.abs() >= 1024 => integer = Some(v),
            _ => format = Format::DecimalSi,
        }
    }
    if let Some(v) = integer {
        let (number, times) = remove_factors(v, 1024);
        let suffix = match times {
            0 => "",
            1 => "Ki",
            2 => "Mi",
            3 => "Gi",
            4 => "Ti",
            5 => "Pi",
            6 => "Ei",
            _ => "",
        };
        return Some(format!("{number}{suffix}"));
    }
    let (mut number, times) = remove_factors(q.mantissa, 10);
    let mut exponent = q.exponent + times;
    let lower = exponent.rem_euclid(3);
    number = number.checked_mul(pow10(lower as u32)?)?;
    exponent -= lower;
    let suffix = match format {
        Format::DecimalExponent if exponent == 0 => String::new(),
        Format::DecimalExponent => format!("e{exponent}"),
        _ => match exponent {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        }
        .to_string(),
    };
    Some(format!("{number}{suffix}"))
}

/// The canonical form of a quantity string, or `None` if it does not parse.
pub(crate) fn canonicalize(s: &str) -> Option<String> {
    canonical(&parse(s)?)
}

/// A quantity field as upstream prints it: `0` when missing (the zero quantity), the
/// canonical form when it parses, else the text as given.
pub(crate) fn format(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "0".to_string(),
        Some(Value::String(s)) => {
            let trimmed = s.trim();
            if trimmed == "0" {
                return "0".to_string();
            }
            canonicalize(trimmed).unwrap_or_else(|| s.clone())
        }
        Some(Value::Number(n)) => {
            let text = n.to_string();
            canonicalize(&text).unwrap_or(text)
        }
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        let cases = [
            ("0", "0"),
            ("0Gi", "0"),
            ("-0", "0"),
            ("1", "1"),
            ("100m", "100m"),
            ("0.1", "100m"),
            (".5", "500m"),
            ("1.5", "1500m"),
            ("1000", "1k"),
            ("1000M", "1G"),
            ("1500M", "1500M"),
            ("10Gi", "10Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("1023", "1023"),
            ("2048", "2048"),
            ("1Ki", "1Ki"),
            ("1000Ki", "1000Ki"),
            ("1e3", "1e3"),
            ("1.5e3", "1500"),
            ("1E6", "1e6"),
            ("12e-1", "1200e-3"),
            ("1n", "1n"),
            ("0.0000000001", "1n"),
            ("-0.0000000001", "-1n"),
            ("1.0000000001", "1000000001n"),
            ("-1500m", "-1500m"),
            ("+2k", "2k"),
            ("-2Ki", "-2Ki"),
            ("100Mi", "100Mi"),
            ("5Gi", "5Gi"),
            ("250m", "250m"),
            ("4", "4"),
            ("1.", "1"),
            ("123456789012", "123456789012"),
            ("4Ei", "4Ei"),
            ("Gi", "0"),
        ];
        for (input, want) in cases {
            assert_eq!(canonicalize(input).as_deref(), Some(want), "{input}");
        }
        // Binary quantities are capped at 2^63-1, which has no factor of 1024; decimal ones
        // are not capped.
        assert_eq!(canonicalize("8Ei").as_deref(), Some("9223372036854775807"));
        assert_eq!(canonicalize("16Ei").as_deref(), Some("9223372036854775807"));
        assert_eq!(
            canonicalize("9223372036854775808").as_deref(),
            Some("9223372036854775808")
        );
        for bad in ["", "abc", "1Gb", "1.2.3", "--1", "1e", "1ee3"] {
            assert_eq!(canonicalize(bad), None, "{bad}");
        }
    }

    #[test]
    fn fields() {
        use serde_json::json;
        assert_eq!(format(None), "0");
        assert_eq!(format(Some(&json!("2048Mi"))), "2Gi");
        assert_eq!(format(Some(&json!(5))), "5");
        assert_eq!(format(Some(&json!("lots"))), "lots");
    }
}
