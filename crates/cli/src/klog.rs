//! kubectl's `-v=N` log lines in klog's text format, on standard error:
//! `I1126 12:00:00.000000   12345 round_trippers.go:632] "Response" verb="GET" …`.
//! The request log follows client-go's `transport/round_trippers.go` (1.33): level 6 one
//! `Response` line per request (verb, url, status, milliseconds); 7 a `Request` line with
//! the (masked) request headers and a shorter `Response`; 8 adds the response headers and
//! the bodies (`rest/request.go`, truncated at 1024 characters); 9 a curl command line
//! instead of the `Request` line and bodies truncated at 10240.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// Where log lines go (standard error, or a buffer in tests).
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// A klog-style logger at a verbosity.
#[derive(Clone)]
pub struct Logger {
    level: u8,
    sink: Sink,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Logger(v={})", self.level)
    }
}

/// A value in a structured line.
pub enum Val<'a> {
    Str(&'a str),
    Int(i64),
    Raw(&'a str),
}

impl Logger {
    pub fn new(level: u8, sink: Sink) -> Self {
        Logger { level, sink }
    }

    /// A logger writing to this process's standard error.
    pub fn stderr(level: u8) -> Self {
        Logger::new(
            level,
            Arc::new(|line: &str| {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(line.as_bytes());
            }),
        )
    }

    pub fn level(&self) -> u8 {
        self.level
    }

    pub fn enabled(&self, v: u8) -> bool {
        self.level >= v
    }

    /// A structured line (`"msg" key=value …`) at verbosity `v`.
    pub fn info(&self, v: u8, file_line: &str, msg: &str, kvs: &[(&str, Val<'_>)]) {
        if !self.enabled(v) {
            return;
        }
        let mut line = header('I', file_line);
        line.push_str(&go_quote(msg));
        for (k, val) in kvs {
            line.push(' ');
            line.push_str(k);
            line.push('=');
            match val {
                Val::Str(s) => write_string_value(&mut line, s),
                Val::Int(i) => line.push_str(&i.to_string()),
                Val::Raw(s) => line.push_str(s),
            }
        }
        line.push('\n');
        (self.sink)(&line);
    }

    /// An unstructured line (klog's `Infoln`) at verbosity `v`.
    pub fn infoln(&self, v: u8, file_line: &str, text: &str) {
        if !self.enabled(v) {
            return;
        }
        let mut line = header('I', file_line);
        line.push_str(text);
        line.push('\n');
        (self.sink)(&line);
    }

    /// The `Request` line (levels 7–9).
    pub fn request(&self, verb: &str, url: &str, headers: &[(String, String)]) {
        if self.level >= 9 {
            let mut curl = format!("curl -v -X{verb} ");
            for (k, v) in sorted(headers) {
                curl.push_str(&format!(
                    " -H {}",
                    go_quote(&format!("{k}: {}", mask(&k, &v)))
                ));
            }
            curl.push_str(&format!(" '{url}'\n"));
            self.info(
                9,
                "round_trippers.go:527",
                "Request",
                &[("curlCommand", Val::Str(&curl))],
            );
        } else if self.level >= 7 {
            let h = headers_text(headers);
            self.info(
                7,
                "round_trippers.go:527",
                "Request",
                &[
                    ("verb", Val::Str(verb)),
                    ("url", Val::Str(url)),
                    ("headers", Val::Str(&h)),
                ],
            );
        }
    }

    /// The `Response` line (levels 6–9): `response` is `None` when the request failed.
    pub fn response<B>(
        &self,
        verb: &str,
        url: &str,
        response: Option<&http::Response<B>>,
        elapsed: Duration,
    ) {
        self.response_timed(verb, url, response, elapsed, &[]);
    }

    /// [`Logger::response`] with the connection timings level 9 adds.
    pub fn response_timed<B>(
        &self,
        verb: &str,
        url: &str,
        response: Option<&http::Response<B>>,
        elapsed: Duration,
        timings: &[(&str, i64)],
    ) {
        if self.level < 6 {
            return;
        }
        let status = response
            .map(|r| {
                let s = r.status();
                format!("{} {}", s.as_u16(), s.canonical_reason().unwrap_or(""))
                    .trim_end()
                    .to_string()
            })
            .unwrap_or_default();
        let ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        let headers = response
            .map(|r| {
                let pairs: Vec<(String, String)> = r
                    .headers()
                    .iter()
                    .map(|(k, v)| {
                        (
                            canonical_header(k.as_str()),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect();
                headers_text(&pairs)
            })
            .unwrap_or_default();
        let mut kvs: Vec<(&str, Val<'_>)> = Vec::new();
        if self.level == 6 || self.level >= 9 {
            kvs.push(("verb", Val::Str(verb)));
            kvs.push(("url", Val::Str(url)));
        }
        kvs.push(("status", Val::Str(&status)));
        if self.level >= 8 {
            kvs.push(("headers", Val::Str(&headers)));
        }
        kvs.push(("milliseconds", Val::Int(ms)));
        if self.level >= 9 {
            for (k, v) in timings {
                kvs.push((k, Val::Int(*v)));
            }
        }
        self.info(6, "round_trippers.go:632", "Response", &kvs);
    }

    /// `Request Body` / `Response Body` (level 8+), truncated as client-go does.
    pub fn body(&self, prefix: &str, body: &[u8]) {
        if self.level < 8 {
            return;
        }
        let text = if body.iter().any(|b| *b < 0x0a) {
            hex_dump(body)
        } else {
            String::from_utf8_lossy(body).into_owned()
        };
        let text = truncate_body(self.level, &text);
        self.info(8, "helper.go:105", prefix, &[("body", Val::Str(&text))]);
    }
}

/// client-go's `truncateBody`.
pub fn truncate_body(level: u8, body: &str) -> String {
    let max = match level {
        10.. => return body.to_string(),
        9 => 10240,
        _ => 1024,
    };
    if body.len() <= max {
        return body.to_string();
    }
    let mut cut = max;
    while !body.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{} [truncated {} chars]", &body[..cut], body.len() - max)
}

/// Go's `hex.Dump`.
fn hex_dump(data: &[u8]) -> String {
    let mut out = String::new();
    for (i, chunk) in data.chunks(16).enumerate() {
        out.push_str(&format!("{:08x}  ", i * 16));
        for j in 0..16 {
            match chunk.get(j) {
                Some(b) => out.push_str(&format!("{b:02x} ")),
                None => out.push_str("   "),
            }
            if j == 7 {
                out.push(' ');
            }
        }
        out.push_str(" |");
        for b in chunk {
            out.push(if (0x20..0x7f).contains(b) {
                *b as char
            } else {
                '.'
            });
        }
        out.push_str("|\n");
    }
    out
}

/// `Lmmdd hh:mm:ss.uuuuuu threadid file:line] `.
fn header(severity: char, file_line: &str) -> String {
    let now = jiff::Zoned::now();
    format!(
        "{severity}{:02}{:02} {:02}:{:02}:{:02}.{:06} {:>7} {file_line}] ",
        now.month(),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.subsec_nanosecond() / 1000,
        std::process::id()
    )
}

/// klog's string values: quoted, or as an indented block when they span lines.
fn write_string_value(out: &mut String, v: &str) {
    if !v.contains('\n') {
        out.push_str(&go_quote(v));
        return;
    }
    out.push_str("<\n");
    let mut rest = v;
    while let Some(i) = rest.find('\n') {
        out.push('\t');
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
    }
    if rest.is_empty() {
        out.push_str(" >");
    } else {
        out.push('\t');
        out.push_str(rest);
        out.push_str("\n >");
    }
}

/// Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                let n = c as u32;
                if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// client-go's `maskValue`: credentials in `Authorization` are never logged.
pub fn mask(key: &str, value: &str) -> String {
    if !key.eq_ignore_ascii_case("authorization") || value.is_empty() {
        return value.to_string();
    }
    let auth_type = value.split(' ').next().unwrap_or(value);
    let known = ["bearer", "basic", "negotiate"].contains(&auth_type.to_lowercase().as_str());
    if !known {
        return "<masked>".into();
    }
    if value.len() > auth_type.len() + 1 {
        format!("{auth_type} <masked>")
    } else {
        auth_type.to_string()
    }
}

fn sorted(headers: &[(String, String)]) -> Vec<(String, String)> {
    let mut v = headers.to_vec();
    // Stable: several values of one header keep their order.
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The `headers=<…>` block: sorted, masked, one `Key: value` per line.
pub fn headers_text(headers: &[(String, String)]) -> String {
    let mut out = String::new();
    for (k, v) in sorted(headers) {
        out.push_str(&k);
        out.push_str(": ");
        out.push_str(&mask(&k, &v));
        out.push('\n');
    }
    out
}

/// Go's canonical MIME header key (`content-type` → `Content-Type`).
pub fn canonical_header(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    let mut upper = true;
    for c in k.chars() {
        if upper {
            out.extend(c.to_uppercase());
        } else {
            out.extend(c.to_lowercase());
        }
        upper = c == '-';
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn capture(level: u8) -> (Logger, Arc<Mutex<String>>) {
        let buf = Arc::new(Mutex::new(String::new()));
        let b = Arc::clone(&buf);
        let log = Logger::new(
            level,
            Arc::new(move |l: &str| {
                if let Ok(mut s) = b.lock() {
                    s.push_str(l);
                }
            }),
        );
        (log, buf)
    }

    fn strip(line: &str) -> &str {
        line.split_once("] ").map(|(_, r)| r).unwrap_or(line)
    }

    #[test]
    fn header_format() {
        let h = header('I', "x.go:1");
        // I1126 12:00:00.000000   12345 x.go:1]
        assert_eq!(&h[0..1], "I");
        assert_eq!(&h[5..6], " ");
        assert_eq!(&h[14..15], ".");
        assert!(h.ends_with(" x.go:1] "));
        assert_eq!(
            h.len(),
            "I1126 12:00:00.000000 ".len() + 7 + " x.go:1] ".len()
        );
    }

    #[test]
    fn level6_one_line_per_response() {
        let (log, buf) = capture(6);
        let resp = http::Response::builder().status(200).body(()).unwrap();
        log.request("GET", "https://h/api", &[("Accept".into(), "x".into())]);
        log.response(
            "GET",
            "https://h/api",
            Some(&resp),
            Duration::from_millis(5),
        );
        log.response::<()>("GET", "https://h/api", None, Duration::from_millis(0));
        log.body("Response Body", b"{}");
        let out = buf.lock().unwrap().clone();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            strip(lines[0]),
            r#""Response" verb="GET" url="https://h/api" status="200 OK" milliseconds=5"#
        );
        assert!(lines[0].contains(" round_trippers.go:632] "));
        assert_eq!(
            strip(lines[1]),
            r#""Response" verb="GET" url="https://h/api" status="" milliseconds=0"#
        );
    }

    #[test]
    fn level7_headers_masked_and_sorted() {
        let (log, buf) = capture(7);
        log.request(
            "GET",
            "https://h/api",
            &[
                ("User-Agent".into(), "ua".into()),
                ("Authorization".into(), "Bearer secret".into()),
                ("Impersonate-Group".into(), "g2".into()),
                ("Accept".into(), "application/json".into()),
                ("Impersonate-Group".into(), "g1".into()),
            ],
        );
        let resp = http::Response::builder().status(404).body(()).unwrap();
        log.response(
            "GET",
            "https://h/api",
            Some(&resp),
            Duration::from_millis(3),
        );
        let out = buf.lock().unwrap().clone();
        let body = out
            .lines()
            .map(|l| if l.starts_with('I') { strip(l) } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            body,
            "\"Request\" verb=\"GET\" url=\"https://h/api\" headers=<\n\tAccept: application/json\n\tAuthorization: Bearer <masked>\n\tImpersonate-Group: g2\n\tImpersonate-Group: g1\n\tUser-Agent: ua\n >\n\"Response\" status=\"404 Not Found\" milliseconds=3"
        );
        assert!(!out.contains("secret"));
    }

    #[test]
    fn level9_curl() {
        let (log, buf) = capture(9);
        log.request(
            "GET",
            "https://h/api",
            &[("Authorization".into(), "Basic abc".into())],
        );
        let out = buf.lock().unwrap().clone();
        assert!(out.contains(
            "\"Request\" curlCommand=<\n\tcurl -v -XGET  -H \"Authorization: Basic <masked>\" 'https://h/api'\n >\n"
        ));
    }

    #[test]
    fn bodies_truncated() {
        let long = "x".repeat(2000);
        assert_eq!(
            truncate_body(8, &long),
            format!("{} [truncated 976 chars]", "x".repeat(1024))
        );
        assert_eq!(truncate_body(9, &long), long);
        let (log, buf) = capture(8);
        log.body("Request Body", b"");
        assert!(buf.lock().unwrap().contains("\"Request Body\" body=\"\""));
    }

    #[test]
    fn masks_and_quotes() {
        assert_eq!(mask("Authorization", "Bearer x"), "Bearer <masked>");
        assert_eq!(mask("authorization", "Weird x"), "<masked>");
        assert_eq!(mask("Authorization", "Basic"), "Basic");
        assert_eq!(mask("Accept", "a"), "a");
        assert_eq!(go_quote("a\"b\\c\u{1}"), "\"a\\\"b\\\\c\\x01\"");
        assert_eq!(
            canonical_header("x-kubernetes-pf-flowschema-uid"),
            "X-Kubernetes-Pf-Flowschema-Uid"
        );
    }
}
