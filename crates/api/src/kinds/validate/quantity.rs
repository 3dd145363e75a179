//! `resource.Quantity` as upstream parses, compares and prints it
//! (`k8s.io/apimachinery/pkg/api/resource`): values are kept exactly at nano precision
//! (upstream rounds finer values up), and printed in canonical form (`1000` → `1k`,
//! `0.5` → `500m`, `1024Mi` → `1Gi`).
//!
//! The lexing ([`split`], [`interpret_suffix`]) is public: the printers crate parses
//! quantities with it into its own exact representation.

use std::cmp::Ordering;

/// How a quantity was written, which decides how it is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantity {
    /// The value times 10^9, saturating far beyond anything int64 quantities can hold.
    nanos: i128,
    pub(crate) format: Format,
}

/// Upstream's `ErrFormatWrong`.
pub const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// Upstream's `ErrNumeric`.
pub(crate) const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
/// Upstream's `ErrSuffix`.
pub(crate) const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

const NANO: i128 = 1_000_000_000;
const LIMIT: i128 = i128::MAX / 1_000_000;

fn pow10(n: u32) -> i128 {
    10i128.checked_pow(n).unwrap_or(LIMIT)
}

fn sat_mul(a: i128, b: i128) -> i128 {
    a.checked_mul(b).map_or(LIMIT, |v| v.min(LIMIT))
}

/// Division rounding away from zero (upstream's `RoundUp`).
fn div_up(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 { q + a.signum() } else { q }
}

/// A quantity string's lexical parts: sign, integer digits (leading zeros dropped, `0` when
/// none), fraction digits, and suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts<'a> {
    pub positive: bool,
    pub num: &'a str,
    pub denom: &'a str,
    pub suffix: &'a str,
}

/// Upstream's `parseQuantityString`: splits a quantity into its [`Parts`], or
/// [`ERR_FORMAT_WRONG`].
pub fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    if pos < end {
        match b[0] {
            b'-' => {
                positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[start..pos];
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let ds = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[ds..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ERR_FORMAT_WRONG);
    }
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..end],
    })
}

/// The base (10 or 2), exponent and format of a suffix, as upstream's suffixer interprets it
/// (`None` for an unknown suffix).
pub fn interpret_suffix(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSi));
    let bin = |e| Some((2, e, Format::BinarySi));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            let e: i32 = rest.parse().ok()?;
            Some((10, e, Format::DecimalExponent))
        }
    }
}

impl Quantity {
    /// `resource.ParseQuantity` (after the JSON decoder's whitespace trim).
    pub fn parse(input: &str) -> Result<Quantity, &'static str> {
        let s = input.trim();
        if s.is_empty() {
            return Err(ERR_FORMAT_WRONG);
        }
        let parts = split(s)?;
        let (base, exp, format) = interpret_suffix(parts.suffix).ok_or(ERR_SUFFIX)?;
        let digits = format!("{}{}", parts.num, parts.denom);
        let digits = digits.trim_start_matches('0');
        let scale = parts.denom.len() as i32;
        // Keep at most 30 significant digits; beyond that the value saturates anyway.
        let mantissa: i128 = if digits.is_empty() {
            0
        } else if digits.len() > 30 {
            LIMIT
        } else {
            digits.parse().map_err(|_| ERR_NUMERIC)?
        };
        let nanos = if base == 10 {
            let e = exp - scale + 9;
            if e >= 0 {
                sat_mul(mantissa, pow10(e.unsigned_abs()))
            } else if e < -38 {
                i128::from(mantissa != 0)
            } else {
                div_up(mantissa, pow10(e.unsigned_abs()))
            }
        } else {
            let v = sat_mul(mantissa, 1i128 << exp);
            let e = 9 - scale;
            if e >= 0 {
                sat_mul(v, pow10(e.unsigned_abs()))
            } else if e < -38 {
                i128::from(v != 0)
            } else {
                div_up(v, pow10(e.unsigned_abs()))
            }
        };
        Ok(Quantity {
            nanos: if parts.positive { nanos } else { -nanos },
            format,
        })
    }

    pub fn zero() -> Quantity {
        Quantity {
            nanos: 0,
            format: Format::DecimalSi,
        }
    }

    pub fn from_int(v: i64) -> Quantity {
        Quantity {
            nanos: i128::from(v) * NANO,
            format: Format::DecimalSi,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// `RoundUp(-3)` as `SetDefaults_ResourceList` does.
    pub(crate) fn round_up_milli(&mut self) {
        self.nanos = div_up(self.nanos, 1_000_000) * 1_000_000;
    }

    /// `Value()`: rounded up (away from zero) to an integer.
    pub fn value(&self) -> i64 {
        i64::try_from(div_up(self.nanos, NANO)).unwrap_or(if self.nanos < 0 {
            i64::MIN
        } else {
            i64::MAX
        })
    }

    /// `MilliValue()`.
    pub fn milli_value(&self) -> i64 {
        i64::try_from(div_up(self.nanos, 1_000_000)).unwrap_or(if self.nanos < 0 {
            i64::MIN
        } else {
            i64::MAX
        })
    }

    /// `self + other` in `self`'s format, or `other`'s when `self` is zero (Go's
    /// `Quantity.Add`).
    pub fn add(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// `self - other`, with the format chosen as [`Quantity::add`] does.
    pub fn sub(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The canonical form upstream serializes (`Quantity.String()`).
    pub fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".to_string();
        }
        let mut format = self.format;
        if format == Format::BinarySi
            && ((-1024 * NANO < self.nanos && self.nanos < 1024 * NANO) || self.nanos % NANO != 0)
        {
            format = Format::DecimalSi;
        }
        if format == Format::BinarySi {
            let mut m = self.nanos / NANO;
            let mut e = 0;
            while m % 1024 == 0 && e < 6 {
                m /= 1024;
                e += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][e];
            return format!("{m}{suffix}");
        }
        let mut m = self.nanos;
        let mut e: i32 = -9;
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        match e.rem_euclid(3) {
            1 => {
                m *= 10;
                e -= 1;
            }
            2 => {
                m *= 100;
                e -= 2;
            }
            _ => {}
        }
        let suffix = match format {
            Format::DecimalExponent => {
                if e == 0 {
                    String::new()
                } else {
                    format!("e{e}")
                }
            }
            _ => match e {
                -9 => "n".to_string(),
                -6 => "u".to_string(),
                -3 => "m".to_string(),
                0 => String::new(),
                3 => "k".to_string(),
                6 => "M".to_string(),
                9 => "G".to_string(),
                12 => "T".to_string(),
                15 => "P".to_string(),
                18 => "E".to_string(),
                _ => format!("e{e}"),
            },
        };
        format!("{m}{suffix}")
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// Parses the quantity a JSON value holds (strings and numbers, as upstream's decoder
/// accepts both).
pub(crate) fn from_json(v: &serde_json::Value) -> Option<Result<Quantity, &'static str>> {
    match v {
        serde_json::Value::String(s) => Some(Quantity::parse(s)),
        serde_json::Value::Number(n) => Some(Quantity::parse(&n.to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> String {
        Quantity::parse(s).unwrap().canonical()
    }

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("0", "0"),
            ("1000", "1k"),
            ("0.5", "500m"),
            ("100m", "100m"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("1e3", "1e3"),
            ("1.5e3", "1500"),
            ("1E", "1E"),
            ("-1", "-1"),
            ("12345", "12345"),
            ("1Ki", "1Ki"),
            ("100Ki", "100Ki"),
            ("0.1Ki", "102400m"),
            ("1n", "1n"),
            ("0.0000000001", "1n"),
            ("5.", "5"),
            (" 2 ", "2"),
        ] {
            assert_eq!(c(input), want, "{input}");
        }
    }

    #[test]
    fn errors() {
        assert_eq!(Quantity::parse("abc"), Err(ERR_FORMAT_WRONG));
        assert_eq!(Quantity::parse("1.2.3"), Err(ERR_FORMAT_WRONG));
        assert_eq!(Quantity::parse("1K"), Err(ERR_SUFFIX));
        assert_eq!(Quantity::parse(""), Err(ERR_FORMAT_WRONG));
        assert_eq!(Quantity::parse("1e"), Err(ERR_SUFFIX));
    }

    #[test]
    fn ordering_and_values() {
        let a = Quantity::parse("500m").unwrap();
        let b = Quantity::parse("1").unwrap();
        assert!(a < b);
        assert_eq!(a.value(), 1);
        assert_eq!(a.milli_value(), 500);
        let mut x = Quantity::parse("1.0001m").unwrap();
        x.round_up_milli();
        assert_eq!(x.canonical(), "2m");
    }
}
