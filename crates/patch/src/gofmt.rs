//! Go semantics of the `interface{}` values upstream's patch code decodes JSON into, beyond
//! the shared renderings of [`api::gofmt`] (re-exported here): `==` between them, `%v` of a
//! `[][]interface{}` and a `[]string`, `strings.EqualFold`, the size `json.Marshal` gives a
//! value, and nesting depth.

use api::gofmt::{GoNumber, JsonEncoder, go_number, json_string_len};
pub(crate) use api::gofmt::{GoType, go_quote, s, v_list, v_map};
use serde_json::Value;

/// Go's `==` on two decoded values: `None` where Go panics (both are maps, or both are
/// slices: "comparing uncomparable type").
pub(crate) fn go_eq(a: &Value, b: &Value) -> Option<bool> {
    let (ta, tb) = (GoType::of(a), GoType::of(b));
    if ta != tb {
        return Some(false);
    }
    Some(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => match (go_number(x), go_number(y)) {
            (GoNumber::Int(i), GoNumber::Int(j)) => i == j,
            (GoNumber::Float(f), GoNumber::Float(g)) => f == g,
            _ => false,
        },
        _ => return None,
    })
}

/// `%v` of a list of lists (`fmt.Sprint` of `[][]interface{}`).
pub(crate) fn v_lists(lists: &[&[Value]]) -> String {
    let parts: Vec<String> = lists.iter().map(|list| v_list(list)).collect();
    format!("[{}]", parts.join(" "))
}

/// `%v` of a `[]string`.
pub(crate) fn v_strings(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// The length of Go's `json.Marshal` of a value (which escapes `<`, `>`, `&`, U+2028 and
/// U+2029), as upstream's JSON patch counts the bytes a `copy` adds.
pub(crate) fn go_json_len(value: &Value) -> u64 {
    let mut total: u64 = 0;
    let mut stack: Vec<&Value> = vec![value];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(match v {
            Value::Null => 4,
            Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => n.to_string().len() as u64,
            Value::String(s) => string_len(s),
            Value::Array(items) => {
                stack.extend(items.iter());
                // brackets and commas
                2 + items.len().saturating_sub(1) as u64
            }
            Value::Object(map) => {
                stack.extend(map.values());
                let keys: u64 = map.keys().map(|k| string_len(k) + 1).sum();
                2 + keys + map.len().saturating_sub(1) as u64
            }
        });
    }
    total
}

fn string_len(s: &str) -> u64 {
    json_string_len(s, JsonEncoder::Std) as u64
}

/// Go's `strings.EqualFold`-style comparison of JSON field names, as the JSON decoder
/// matches a key to a struct field when no field has exactly that name.
pub(crate) fn equal_fold(a: &str, b: &str) -> bool {
    let mut x = a.chars();
    let mut y = b.chars();
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some(c), Some(d)) => {
                if c != d && !c.to_lowercase().eq(d.to_lowercase()) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// The nesting depth of a value: 0 for scalars, 1 + the deepest member for containers.
/// Iterative, so any value can be measured.
pub(crate) fn depth(value: &Value) -> usize {
    let mut max = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                max = max.max(d + 1);
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                max = max.max(d + 1);
                stack.extend(map.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_like_go() {
        assert_eq!(v_lists(&[&[json!("a"), json!("b")], &[]]), "[[a b] []]");
        assert_eq!(v_strings(&["a".into(), "b c".into()]), "[a b c]");
    }

    #[test]
    fn go_equality() {
        assert_eq!(go_eq(&json!(1), &json!(1)), Some(true));
        assert_eq!(go_eq(&json!(1), &json!(1.0)), Some(false));
        assert_eq!(go_eq(&json!("a"), &json!({"a": 1})), Some(false));
        assert_eq!(go_eq(&json!({}), &json!({})), None);
        assert_eq!(go_eq(&Value::Null, &Value::Null), Some(true));
    }

    #[test]
    fn json_len_matches_go_marshal() {
        assert_eq!(go_json_len(&json!({"a": [1, "x<y"], "b": null})), 29);
        assert_eq!(go_json_len(&json!([])), 2);
        assert_eq!(go_json_len(&json!({})), 2);
        assert_eq!(go_json_len(&json!("é")), 4);
    }

    #[test]
    fn depth_of_values() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!([])), 1);
        assert_eq!(depth(&json!({"a": [{"b": 1}]})), 3);
    }
}
