//! IP address and CIDR validation as upstream's `k8s.io/apimachinery/pkg/util/validation`
//! (`ip.go`) does it.
//!
//! Upstream parses in two passes: `netutils.ParseIPSloppy` (Go 1.16's `net.ParseIP`, which
//! accepts leading zeros in IPv4 octets and long zero-padded IPv6 groups) decides whether the
//! value is an IP at all, and `netip.ParseAddr` (strict) decides whether it has "leading
//! 0s". Both are reproduced here: the sloppy parser returns the address and whether the strict
//! parser would also have accepted the text. Canonical forms are Go's `net.IP.String()`.

use std::fmt::Write as _;

use crate::gofmt::go_quote;

/// An address as the sloppy parser returns it, with what the strict parser would say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parsed {
    /// The 16-byte form (IPv4 as `::ffff:a.b.c.d`, as Go stores it).
    bytes: [u8; 16],
    /// Written in dotted-quad syntax (as opposed to IPv6 syntax).
    v4_syntax: bool,
    /// `netip.ParseAddr` would accept the same text.
    strict_ok: bool,
}

impl Parsed {
    /// `netip.Addr.Is4In6`: written as IPv6 but with the IPv4-mapped prefix.
    fn is_4in6(&self) -> bool {
        !self.v4_syntax && has_v4_prefix(&self.bytes)
    }
}

fn has_v4_prefix(b: &[u8; 16]) -> bool {
    b[..10].iter().all(|&x| x == 0) && b[10] == 0xff && b[11] == 0xff
}

const BIG: u32 = 0x00FF_FFFF;

/// Go's `dtoi`: leading decimal digits; `None` when there are none or the value gets big.
fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n * 10 + u32::from(s[i] - b'0');
        if n >= BIG {
            return None;
        }
        i += 1;
    }
    if i == 0 { None } else { Some((n, i)) }
}

/// Go's `xtoi`: leading hexadecimal digits.
fn xtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() {
        let d = match s[i] {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        n = n * 16 + u32::from(d);
        if n >= BIG {
            return None;
        }
        i += 1;
    }
    if i == 0 { None } else { Some((n, i)) }
}

/// Go 1.16's `parseIPv4` (leading zeros allowed). Returns the octets and whether every
/// octet is free of leading zeros (what `netip` requires).
fn parse_ipv4(mut s: &[u8]) -> Option<([u8; 4], bool)> {
    let mut out = [0u8; 4];
    let mut strict = true;
    for (i, slot) in out.iter_mut().enumerate() {
        if s.is_empty() {
            return None;
        }
        if i > 0 {
            if s[0] != b'.' {
                return None;
            }
            s = &s[1..];
        }
        let (n, c) = dtoi(s)?;
        let octet = u8::try_from(n).ok()?;
        if c > 1 && s[0] == b'0' {
            strict = false;
        }
        s = &s[c..];
        *slot = octet;
    }
    if !s.is_empty() {
        return None;
    }
    Some((out, strict))
}

/// Go 1.16's `parseIPv6` (groups may have more than four hex digits when zero-padded).
/// Returns the bytes and whether `netip` would accept the text too.
fn parse_ipv6(mut s: &[u8]) -> Option<([u8; 16], bool)> {
    let mut ip = [0u8; 16];
    let mut strict = true;
    let mut ellipsis: Option<usize> = None;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Some((ip, true));
        }
    }
    let mut i = 0;
    while i < 16 {
        let (n, c) = xtoi(s)?;
        if n > 0xFFFF {
            return None;
        }
        if c < s.len() && s[c] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return None;
            }
            if i + 4 > 16 {
                return None;
            }
            let (v4, v4_strict) = parse_ipv4(s)?;
            strict &= v4_strict;
            ip[i..i + 4].copy_from_slice(&v4);
            s = &[];
            i += 4;
            break;
        }
        if c > 4 {
            strict = false;
        }
        ip[i] = (n >> 8) as u8;
        ip[i + 1] = n as u8;
        i += 2;
        s = &s[c..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' || s.len() == 1 {
            return None;
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return None;
    }
    if i < 16 {
        let e = ellipsis?;
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in &mut ip[e..e + n] {
            *b = 0;
        }
    } else if ellipsis.is_some() {
        return None;
    }
    Some((ip, strict))
}

fn v4_in_v6(o: [u8; 4]) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[10] = 0xff;
    b[11] = 0xff;
    b[12..].copy_from_slice(&o);
    b
}

/// `netutils.ParseIPSloppy`: the first `.` or `:` decides the family.
fn parse_sloppy(s: &str) -> Option<Parsed> {
    let bytes = s.as_bytes();
    for &c in bytes {
        match c {
            b'.' => {
                let (o, strict_ok) = parse_ipv4(bytes)?;
                return Some(Parsed {
                    bytes: v4_in_v6(o),
                    v4_syntax: true,
                    strict_ok,
                });
            }
            b':' => {
                let (b, strict_ok) = parse_ipv6(bytes)?;
                return Some(Parsed {
                    bytes: b,
                    v4_syntax: false,
                    strict_ok,
                });
            }
            _ => {}
        }
    }
    None
}

/// RFC 5952 text of 16 bytes as IPv6 (`netip.Addr.String` for a non-mapped address).
fn format_v6(b: &[u8; 16]) -> String {
    let groups: Vec<u16> = (0..8)
        .map(|i| u16::from_be_bytes([b[2 * i], b[2 * i + 1]]))
        .collect();
    // The first longest run of at least two zero groups becomes "::".
    let (mut best_start, mut best_len) = (usize::MAX, 0usize);
    let mut i = 0;
    while i < 8 {
        let mut j = i;
        while j < 8 && groups[j] == 0 {
            j += 1;
        }
        let run = j - i;
        if run >= 2 && run > best_len {
            best_start = i;
            best_len = run;
        }
        i = if j > i { j } else { i + 1 };
    }
    let mut out = String::new();
    let mut i = 0;
    while i < 8 {
        if i == best_start {
            out.push_str("::");
            i += best_len;
            if i >= 8 {
                break;
            }
        } else if i > 0 {
            out.push(':');
        }
        let _ = write!(out, "{:x}", groups[i]);
        i += 1;
    }
    out
}

fn format_v4(o: &[u8]) -> String {
    let mut out = String::new();
    for (i, b) in o.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        let _ = write!(out, "{b}");
    }
    out
}

/// Go's `net.IP.String()` of a 16-byte address: dotted quad when IPv4-mapped.
fn go_ip_string(b: &[u8; 16]) -> String {
    if has_v4_prefix(b) {
        format_v4(&b[12..])
    } else {
        format_v6(b)
    }
}

const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

fn ip_errors(value: &str, strict: bool) -> (Option<Parsed>, Vec<String>) {
    let Some(p) = parse_sloppy(value) else {
        return (None, vec![INVALID_IP.to_string()]);
    };
    let mut errs = Vec::new();
    if strict {
        if !p.strict_ok {
            errs.push("must not have leading 0s".to_string());
        } else if p.is_4in6() {
            errs.push("must not be an IPv4-mapped IPv6 address".to_string());
        }
    }
    (Some(p), errs)
}

/// `IsValidIP`: an IP address in canonical form, without leading zeros and not
/// IPv4-mapped IPv6 (the rule for new fields).
pub fn is_valid_ip(value: &str) -> Vec<String> {
    let (parsed, errs) = ip_errors(value, true);
    let Some(p) = parsed else { return errs };
    if !errs.is_empty() {
        return errs;
    }
    let canonical = go_ip_string(&p.bytes);
    if value != canonical {
        return vec![format!(
            "must be in canonical form ({})",
            go_quote(&canonical)
        )];
    }
    Vec::new()
}

/// `IsValidIPForLegacyField`: any IP the old parser accepted; with `strict`, no leading
/// zeros and no IPv4-mapped IPv6. Values in `valid_old` (from the old object) always pass.
pub fn is_valid_ip_for_legacy_field(value: &str, strict: bool, valid_old: &[&str]) -> Vec<String> {
    if valid_old.contains(&value) {
        return Vec::new();
    }
    ip_errors(value, strict).1
}

/// `GetWarningsForIP`: warnings for a legacy IP field in a non-standard form.
pub fn get_warnings_for_ip(path: &str, value: &str) -> Vec<String> {
    let Some(p) = parse_sloppy(value) else {
        return Vec::new();
    };
    if !p.strict_ok || p.is_4in6() {
        return vec![format!(
            "{path}: non-standard IP address {} will be considered invalid in a future Kubernetes release: use {}",
            go_quote(value),
            go_quote(&go_ip_string(&p.bytes))
        )];
    }
    if !p.v4_syntax {
        let canonical = format_v6(&p.bytes);
        if canonical != value {
            return vec![format!(
                "{path}: IPv6 address {} should be in RFC 5952 canonical format ({})",
                go_quote(value),
                go_quote(&canonical)
            )];
        }
    }
    Vec::new()
}

/// A CIDR value as `netutils.ParseCIDRSloppy` returns it.
#[derive(Clone, Copy, Debug)]
struct ParsedCidr {
    ip: Parsed,
    bits: u32,
    /// 32 for IPv4 syntax, 128 for IPv6.
    addr_bits: u32,
    /// `netip.ParsePrefix` would accept the same text.
    strict_ok: bool,
}

impl ParsedCidr {
    fn masked(&self) -> [u8; 16] {
        // IPv4: the mask covers the last 32 bits only (the `::ffff:` prefix is kept).
        let total = if self.addr_bits == 32 {
            96 + self.bits
        } else {
            self.bits
        };
        let mut out = self.ip.bytes;
        for (i, b) in out.iter_mut().enumerate() {
            let start = (i as u32) * 8;
            if start >= total {
                *b = 0;
            } else if start + 8 > total {
                let keep = total - start;
                *b &= 0xffu8 << (8 - keep);
            }
        }
        out
    }

    /// Go's `net.IPNet.String()` of the masked network.
    fn network_string(&self) -> String {
        let net = self.masked();
        if self.addr_bits == 32 {
            format!("{}/{}", format_v4(&net[12..]), self.bits)
        } else if has_v4_prefix(&net) {
            // A 16-byte mask shown against the IPv4 form: only its last 32 bits count.
            format!("{}/{}", format_v4(&net[12..]), self.bits.saturating_sub(96))
        } else {
            format!("{}/{}", format_v6(&net), self.bits)
        }
    }
}

/// `netutils.ParseCIDRSloppy`.
fn parse_cidr_sloppy(s: &str) -> Option<ParsedCidr> {
    let (addr, mask) = s.split_once('/')?;
    let (ip, addr_bits) = if let Some((o, strict_ok)) = parse_ipv4(addr.as_bytes()) {
        (
            Parsed {
                bytes: v4_in_v6(o),
                v4_syntax: true,
                strict_ok,
            },
            32,
        )
    } else {
        let (b, strict_ok) = parse_ipv6(addr.as_bytes())?;
        (
            Parsed {
                bytes: b,
                v4_syntax: false,
                strict_ok,
            },
            128,
        )
    };
    let (bits, used) = dtoi(mask.as_bytes())?;
    if used != mask.len() || bits > addr_bits {
        return None;
    }
    let mask_strict = !(mask.len() > 1 && mask.starts_with('0'));
    Some(ParsedCidr {
        ip,
        bits,
        addr_bits,
        strict_ok: ip.strict_ok && mask_strict,
    })
}

const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

fn cidr_errors(value: &str, strict: bool) -> (Option<ParsedCidr>, Vec<String>) {
    let Some(c) = parse_cidr_sloppy(value) else {
        return (None, vec![INVALID_CIDR.to_string()]);
    };
    let mut errs = Vec::new();
    if strict {
        if !c.strict_ok {
            errs.push("must not have leading 0s in IP or prefix length".to_string());
        } else if c.ip.is_4in6() {
            errs.push("must not have an IPv4-mapped IPv6 address".to_string());
        } else if c.masked() != c.ip.bytes {
            errs.push("must not have bits set beyond the prefix length".to_string());
        }
    }
    (Some(c), errs)
}

/// `IsValidCIDR`: a subnet (`192.168.1.0/24`, no bits beyond the prefix) in canonical form.
pub fn is_valid_cidr(value: &str) -> Vec<String> {
    let (parsed, errs) = cidr_errors(value, true);
    let Some(c) = parsed else { return errs };
    if !errs.is_empty() {
        return errs;
    }
    let canonical = c.network_string();
    if value != canonical {
        return vec![format!(
            "must be in canonical form ({})",
            go_quote(&canonical)
        )];
    }
    Vec::new()
}

/// `IsValidCIDRForLegacyField`.
pub fn is_valid_cidr_for_legacy_field(
    value: &str,
    strict: bool,
    valid_old: &[&str],
) -> Vec<String> {
    if valid_old.contains(&value) {
        return Vec::new();
    }
    cidr_errors(value, strict).1
}

/// `GetWarningsForCIDR`.
pub fn get_warnings_for_cidr(path: &str, value: &str) -> Vec<String> {
    let Some(c) = parse_cidr_sloppy(value) else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    let network = c.network_string();
    if c.masked() != c.ip.bytes {
        let single = format!("{}/{}", go_ip_string(&c.ip.bytes), c.addr_bits);
        warnings.push(format!(
            "{path}: CIDR value {} is ambiguous in this context (should be {} or {}?)",
            go_quote(value),
            go_quote(&network),
            go_quote(&single)
        ));
    }
    if !c.strict_ok || c.ip.is_4in6() {
        warnings.push(format!(
            "{path}: non-standard CIDR value {} will be considered invalid in a future Kubernetes release: use {}",
            go_quote(value),
            go_quote(&network)
        ));
    }
    if warnings.is_empty() && !c.ip.v4_syntax {
        let prefix = format!("{}/{}", format_v6(&c.ip.bytes), c.bits);
        if prefix != value {
            warnings.push(format!(
                "{path}: IPv6 CIDR value {} should be in RFC 5952 canonical format ({})",
                go_quote(value),
                go_quote(&prefix)
            ));
        }
    }
    warnings
}

/// `IsValidInterfaceAddress`: an address with its subnet length (`192.168.1.5/24`) in
/// canonical form.
pub fn is_valid_interface_address(value: &str) -> Vec<String> {
    let Some(c) = parse_cidr_sloppy(value) else {
        return vec![
            "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"
                .to_string(),
        ];
    };
    let mut mask_size = i64::from(c.bits);
    if has_v4_prefix(&c.ip.bytes) && mask_size > 32 {
        mask_size -= 96;
    }
    let canonical = format!("{}/{mask_size}", go_ip_string(&c.ip.bytes));
    if value != canonical {
        return vec![format!(
            "must be in canonical form ({})",
            go_quote(&canonical)
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, IsValidIP, legacy non-strict, legacy strict); "" = valid.
    const IP_CASES: &[(&str, &str, &str, &str)] = &[
        ("1.2.3.4", "", "", ""),
        ("0.0.0.0", "", "", ""),
        ("255.255.255.255", "", "", ""),
        ("1234::abcd", "", "", ""),
        ("::", "", "", ""),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "", "", ""),
        (
            "0:0:0:0:0:0:0:0",
            "must be in canonical form (\"::\")",
            "",
            "",
        ),
        (
            "0001:002:03:4::",
            "must be in canonical form (\"1:2:3:4::\")",
            "",
            "",
        ),
        (
            "1234::ABCD",
            "must be in canonical form (\"1234::abcd\")",
            "",
            "",
        ),
        (
            "1.1.1.01",
            "must not have leading 0s",
            "",
            "must not have leading 0s",
        ),
        (
            "::ffff:1.1.1.1",
            "must not be an IPv4-mapped IPv6 address",
            "",
            "must not be an IPv4-mapped IPv6 address",
        ),
        ("", INVALID_IP, INVALID_IP, INVALID_IP),
        ("aaaaaaa", INVALID_IP, INVALID_IP, INVALID_IP),
        ("myhost.mydomain", INVALID_IP, INVALID_IP, INVALID_IP),
        ("1.2.3.0/24", INVALID_IP, INVALID_IP, INVALID_IP),
        ("1.2.3.400", INVALID_IP, INVALID_IP, INVALID_IP),
        ("-1.0.0.0", INVALID_IP, INVALID_IP, INVALID_IP),
        ("2001:db8::10005", INVALID_IP, INVALID_IP, INVALID_IP),
        ("1.2.3.4:80", INVALID_IP, INVALID_IP, INVALID_IP),
        ("[2001:db8::1]", INVALID_IP, INVALID_IP, INVALID_IP),
        ("[2001:db8::1]:80", INVALID_IP, INVALID_IP, INVALID_IP),
        ("example.com:80", INVALID_IP, INVALID_IP, INVALID_IP),
        ("1234::abcd%eth0", INVALID_IP, INVALID_IP, INVALID_IP),
        ("169.254.0.0%eth0", INVALID_IP, INVALID_IP, INVALID_IP),
    ];

    #[test]
    fn ip_upstream_cases() {
        let bad_ips: Vec<&str> = IP_CASES
            .iter()
            .filter(|c| !c.3.is_empty())
            .map(|c| c.0)
            .collect();
        for &(input, err, legacy, legacy_strict) in IP_CASES {
            let want = |e: &str| {
                if e.is_empty() {
                    Vec::new()
                } else {
                    vec![e.to_string()]
                }
            };
            assert_eq!(is_valid_ip(input), want(err), "{input}");
            assert_eq!(
                is_valid_ip_for_legacy_field(input, false, &[]),
                want(legacy),
                "{input}"
            );
            assert_eq!(
                is_valid_ip_for_legacy_field(input, true, &[]),
                want(legacy_strict),
                "{input}"
            );
            assert!(is_valid_ip_for_legacy_field(input, true, &bad_ips).is_empty());
        }
    }

    #[test]
    fn ip_parser_edges() {
        // Zero-padded IPv6 groups: accepted by the old parser, "leading 0s" for netip.
        assert!(is_valid_ip_for_legacy_field("00001::", false, &[]).is_empty());
        assert_eq!(is_valid_ip("00001::"), vec!["must not have leading 0s"]);
        assert_eq!(is_valid_ip("::1.2.3.04"), vec!["must not have leading 0s"]);
        assert_eq!(
            is_valid_ip("::1.2.3.4"),
            vec!["must be in canonical form (\"::102:304\")"]
        );
        assert_eq!(is_valid_ip("1::2::3"), vec![INVALID_IP]);
        assert_eq!(is_valid_ip("1:2:3:4:5:6:7:8::"), vec![INVALID_IP]);
        assert_eq!(
            is_valid_ip("1:2:3:4:5:6:7::"),
            vec!["must be in canonical form (\"1:2:3:4:5:6:7:0\")"]
        );
        assert_eq!(is_valid_ip("1:"), vec![INVALID_IP]);
        assert_eq!(is_valid_ip("1.2.3"), vec![INVALID_IP]);
        assert_eq!(is_valid_ip("1.2.3.4.5"), vec![INVALID_IP]);
        assert_eq!(
            format_v6(
                &parse_ipv6(b"1:0:0:1:0:0:0:1")
                    .map(|x| x.0)
                    .unwrap_or([0; 16])
            ),
            "1:0:0:1::1"
        );
        assert_eq!(
            format_v6(
                &parse_ipv6(b"1:0:0:2:0:0:3:4")
                    .map(|x| x.0)
                    .unwrap_or([0; 16])
            ),
            "1::2:0:0:3:4"
        );
        assert_eq!(
            format_v6(
                &parse_ipv6(b"1:0:2:3:4:5:6:7")
                    .map(|x| x.0)
                    .unwrap_or([0; 16])
            ),
            "1:0:2:3:4:5:6:7"
        );
    }

    #[test]
    fn ip_warnings_upstream_cases() {
        assert!(get_warnings_for_ip("spec.clusterIPs[0]", "192.12.2.2").is_empty());
        assert!(get_warnings_for_ip("spec.clusterIPs[0]", "2001:db8::2").is_empty());
        assert_eq!(
            get_warnings_for_ip("spec.clusterIPs[0]", "192.012.2.2"),
            vec![
                "spec.clusterIPs[0]: non-standard IP address \"192.012.2.2\" will be considered invalid in a future Kubernetes release: use \"192.12.2.2\""
            ]
        );
        assert_eq!(
            get_warnings_for_ip("spec.clusterIPs[0]", "::ffff:192.12.2.2"),
            vec![
                "spec.clusterIPs[0]: non-standard IP address \"::ffff:192.12.2.2\" will be considered invalid in a future Kubernetes release: use \"192.12.2.2\""
            ]
        );
        assert_eq!(
            get_warnings_for_ip("spec.loadBalancerIP", "2001:db8:0:0::2"),
            vec![
                "spec.loadBalancerIP: IPv6 address \"2001:db8:0:0::2\" should be in RFC 5952 canonical format (\"2001:db8::2\")"
            ]
        );
        assert!(get_warnings_for_ip("x", "junk").is_empty());
    }

    #[test]
    fn cidr_upstream_cases() {
        for v in [
            "1.0.0.0/8",
            "0.0.0.0/0",
            "1.1.1.1/32",
            "2001:4860:4860::/48",
            "::/0",
            "::1/128",
        ] {
            assert!(is_valid_cidr(v).is_empty(), "{v}: {:?}", is_valid_cidr(v));
        }
        assert_eq!(
            is_valid_cidr("2a00:79e0:2:0::/64"),
            vec!["must be in canonical form (\"2a00:79e0:2::/64\")"]
        );
        assert_eq!(
            is_valid_cidr("2001:DB8::/64"),
            vec!["must be in canonical form (\"2001:db8::/64\")"]
        );
        assert_eq!(
            is_valid_cidr("1.1.01.0/24"),
            vec!["must not have leading 0s in IP or prefix length"]
        );
        assert!(is_valid_cidr_for_legacy_field("1.1.01.0/24", false, &[]).is_empty());
        assert_eq!(
            is_valid_cidr("1.1.1.0/024"),
            vec!["must not have leading 0s in IP or prefix length"]
        );
        for v in ["::ffff:1.1.1.0/24", "::ffff:1.1.1.0/120"] {
            assert_eq!(
                is_valid_cidr(v),
                vec!["must not have an IPv4-mapped IPv6 address"],
                "{v}"
            );
            assert!(is_valid_cidr_for_legacy_field(v, false, &[]).is_empty());
        }
        assert_eq!(
            is_valid_cidr("1.2.3.4/24"),
            vec!["must not have bits set beyond the prefix length"]
        );
        assert!(is_valid_cidr_for_legacy_field("1.2.3.4/24", false, &[]).is_empty());
        assert_eq!(
            is_valid_cidr("2001:db8::1/64"),
            vec!["must not have bits set beyond the prefix length"]
        );
        for v in [
            "",
            "aaaaaaa",
            "1.2.3.4",
            "192.168.0.1/healthz",
            "192.168.0.1/0/99",
            "192.168.0.0/-16",
            "192.168.0.0/+16",
            "1.2.3.0/33",
            "::/129",
            "1.2.3.0/",
        ] {
            assert_eq!(is_valid_cidr(v), vec![INVALID_CIDR], "{v}");
            assert_eq!(
                is_valid_cidr_for_legacy_field(v, false, &[]),
                vec![INVALID_CIDR]
            );
        }
        assert!(is_valid_cidr_for_legacy_field("junk", true, &["junk"]).is_empty());
    }

    #[test]
    fn cidr_warnings_upstream_cases() {
        let p = "spec.loadBalancerSourceRanges[0]";
        assert!(get_warnings_for_cidr(p, "192.12.2.0/24").is_empty());
        assert!(get_warnings_for_cidr(p, "2001:db8::/64").is_empty());
        assert_eq!(
            get_warnings_for_cidr(p, "192.012.2.0/24"),
            vec![format!(
                "{p}: non-standard CIDR value \"192.012.2.0/24\" will be considered invalid in a future Kubernetes release: use \"192.12.2.0/24\""
            )]
        );
        assert_eq!(
            get_warnings_for_cidr(p, "192.12.2.0/024"),
            vec![format!(
                "{p}: non-standard CIDR value \"192.12.2.0/024\" will be considered invalid in a future Kubernetes release: use \"192.12.2.0/24\""
            )]
        );
        assert_eq!(
            get_warnings_for_cidr(p, "::ffff:192.12.2.0/120"),
            vec![format!(
                "{p}: non-standard CIDR value \"::ffff:192.12.2.0/120\" will be considered invalid in a future Kubernetes release: use \"192.12.2.0/24\""
            )]
        );
        assert_eq!(
            get_warnings_for_cidr(p, "192.12.2.8/24"),
            vec![format!(
                "{p}: CIDR value \"192.12.2.8/24\" is ambiguous in this context (should be \"192.12.2.0/24\" or \"192.12.2.8/32\"?)"
            )]
        );
        assert_eq!(
            get_warnings_for_cidr(p, "192.012.2.8/24"),
            vec![
                format!(
                    "{p}: CIDR value \"192.012.2.8/24\" is ambiguous in this context (should be \"192.12.2.0/24\" or \"192.12.2.8/32\"?)"
                ),
                format!(
                    "{p}: non-standard CIDR value \"192.012.2.8/24\" will be considered invalid in a future Kubernetes release: use \"192.12.2.0/24\""
                ),
            ]
        );
        assert_eq!(
            get_warnings_for_cidr(p, "2001:db8:0:0::/64"),
            vec![format!(
                "{p}: IPv6 CIDR value \"2001:db8:0:0::/64\" should be in RFC 5952 canonical format (\"2001:db8::/64\")"
            )]
        );
    }

    #[test]
    fn interface_addresses() {
        for v in [
            "1.2.3.4/24",
            "1.1.1.1/32",
            "2001:4860:4860::1/48",
            "::1/128",
        ] {
            assert!(is_valid_interface_address(v).is_empty(), "{v}");
        }
        for v in [
            "",
            "aaaaaaa",
            "1.2.3.4",
            "192.168.0.1/healthz",
            "192.168.0.1/0/99",
        ] {
            assert_eq!(
                is_valid_interface_address(v),
                vec!["must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"]
            );
        }
        assert_eq!(
            is_valid_interface_address("::ffff:1.2.3.4/120"),
            vec!["must be in canonical form (\"1.2.3.4/24\")"]
        );
        assert_eq!(
            is_valid_interface_address("2001:DB8::1/64"),
            vec!["must be in canonical form (\"2001:db8::1/64\")"]
        );
        assert_eq!(
            is_valid_interface_address("1.2.3.4/024"),
            vec!["must be in canonical form (\"1.2.3.4/24\")"]
        );
    }
}
