//! Label maps and label selectors rendered as upstream's printers render them:
//! `labels.FormatLabels`, `metav1.LabelSelectorAsSelector(…).String()` and
//! `metav1.FormatLabelSelector`.

use serde_json::{Map, Value};

/// `labels.FormatLabels`: `k=v` pairs sorted, joined by `,`; `<none>` when empty.
pub(crate) fn format_labels(map: Option<&Map<String, Value>>) -> String {
    let s = labels_string(map);
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

/// `labels.Set(m).String()`: `k=v` pairs sorted as strings, joined by `,`.
fn labels_string(map: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = map
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort_unstable();
    pairs.join(",")
}

/// `metav1.FormatLabelSelector`: the selector's string form, `<none>` when it selects
/// nothing or everything, `<error>` when it is invalid.
pub(crate) fn format_label_selector(selector: Option<&Value>) -> String {
    match selector_string(selector) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

enum Op {
    Equals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

struct Requirement<'a> {
    key: &'a str,
    op: Op,
    values: Vec<&'a str>,
}

impl Requirement<'_> {
    fn render(&self) -> String {
        let mut s = String::new();
        if matches!(self.op, Op::DoesNotExist) {
            s.push('!');
        }
        s.push_str(self.key);
        match self.op {
            Op::Exists | Op::DoesNotExist => return s,
            Op::Equals => s.push('='),
            Op::In => s.push_str(" in ("),
            Op::NotIn => s.push_str(" notin ("),
        }
        if self.values.len() == 1 {
            s.push_str(self.values[0]);
        } else {
            let mut sorted = self.values.clone();
            sorted.sort_unstable();
            s.push_str(&sorted.join(","));
        }
        if matches!(self.op, Op::In | Op::NotIn) {
            s.push(')');
        }
        s
    }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: `""` for a missing or empty selector,
/// `Err` for an invalid one (bad key, value or operator).
pub(crate) fn selector_string(selector: Option<&Value>) -> Result<String, ()> {
    let Some(sel) = selector.and_then(Value::as_object) else {
        return Ok(String::new());
    };
    let match_labels = sel.get("matchLabels").and_then(Value::as_object);
    let expressions = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if match_labels.map_or(0, Map::len) + expressions.len() == 0 {
        return Ok(String::new());
    }
    let mut reqs: Vec<Requirement<'_>> = Vec::new();
    for (k, v) in match_labels.into_iter().flatten() {
        let value = v.as_str().unwrap_or("");
        reqs.push(requirement(k, Op::Equals, vec![value])?);
    }
    for expr in expressions {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
        let op = match expr.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => Op::In,
            "NotIn" => Op::NotIn,
            "Exists" => Op::Exists,
            "DoesNotExist" => Op::DoesNotExist,
            _ => return Err(()),
        };
        let values: Vec<&str> = expr
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
            .unwrap_or_default();
        reqs.push(requirement(key, op, values)?);
    }
    reqs.sort_by(|a, b| a.key.cmp(b.key));
    Ok(reqs
        .iter()
        .map(Requirement::render)
        .collect::<Vec<_>>()
        .join(","))
}

fn requirement<'a>(key: &'a str, op: Op, values: Vec<&'a str>) -> Result<Requirement<'a>, ()> {
    if !is_qualified_name(key) || !values.iter().all(|v| is_label_value(v)) {
        return Err(());
    }
    let count_ok = match op {
        Op::In | Op::NotIn => !values.is_empty(),
        Op::Equals => values.len() == 1,
        Op::Exists | Op::DoesNotExist => values.is_empty(),
    };
    if !count_ok {
        return Err(());
    }
    Ok(Requirement { key, op, values })
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters, possibly empty.
fn is_label_value(v: &str) -> bool {
    v.is_empty() || is_qualified_name_part(v)
}

fn is_qualified_name_part(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: lower-case alphanumeric labels with inner `-`, joined by `.`, at
/// most 253 characters.
fn is_dns1123_subdomain(v: &str) -> bool {
    v.len() <= 253
        && v.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
                && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// `validation.IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name.
fn is_qualified_name(key: &str) -> bool {
    let mut parts = key.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => return false,
    };
    if let Some(p) = prefix
        && (p.is_empty() || !is_dns1123_subdomain(p))
    {
        return false;
    }
    is_qualified_name_part(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels() {
        assert_eq!(format_labels(None), "<none>");
        let m = json!({"b": "2", "a": "1", "a.b": "3"});
        assert_eq!(format_labels(m.as_object()), "a.b=3,a=1,b=2");
    }

    #[test]
    fn selectors() {
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        assert_eq!(selector_string(Some(&json!({}))), Ok(String::new()));
        let sel = json!({
            "matchLabels": {"app": "web", "tier": "fe"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "gone", "operator": "DoesNotExist"},
                {"key": "x.io/y", "operator": "NotIn", "values": ["a"]},
                {"key": "has", "operator": "Exists"}
            ]
        });
        assert_eq!(
            format_label_selector(Some(&sel)),
            "app=web,env in (dev,prod),!gone,has,tier=fe,x.io/y notin (a)"
        );
        for bad in [
            json!({"matchLabels": {"bad key": "x"}}),
            json!({"matchLabels": {"k": "bad value"}}),
            json!({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]}),
            json!({"matchExpressions": [{"key": "k", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a"]}]}),
            json!({"matchLabels": {"Upper.Case/x": "y"}}),
            json!({"matchLabels": {"/x": "y"}}),
        ] {
            assert_eq!(format_label_selector(Some(&bad)), "<error>", "{bad}");
        }
        assert_eq!(
            format_label_selector(Some(&json!({"matchLabels": {"controller-uid": "abc-1"}}))),
            "controller-uid=abc-1"
        );
    }
}
