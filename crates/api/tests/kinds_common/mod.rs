//! Helpers shared by the `kinds_*` integration tests.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use api::kinds::{defaults, validate};
use serde_json::Value;

/// The version every built-in kind is served at here.
pub const V1: &str = "v1";

/// What the server does on create before storing: defaults, the strategy's
/// `PrepareForCreate`, then validation. Returns the messages as upstream prints them.
pub fn create_errors(group: &str, kind: &str, obj: &Value) -> Vec<String> {
    let mut obj = obj.clone();
    defaults::apply(group, V1, kind, &mut obj);
    defaults::prepare_for_create(group, V1, kind, &mut obj);
    validate::create(group, V1, kind, &obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Update: defaults on the new object, `PrepareForUpdate` against the (defaulted) old
/// object, then update validation.
pub fn update_errors(group: &str, kind: &str, new: &Value, old: &Value) -> Vec<String> {
    let mut old = old.clone();
    defaults::apply(group, V1, kind, &mut old);
    defaults::prepare_for_create(group, V1, kind, &mut old);
    let mut new = new.clone();
    defaults::apply(group, V1, kind, &mut new);
    defaults::prepare_for_update(group, V1, kind, &mut new, &old);
    validate::update(group, V1, kind, &new, &old)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The object after defaulting.
pub fn defaulted(group: &str, kind: &str, obj: &Value) -> Value {
    let mut obj = obj.clone();
    defaults::apply(group, V1, kind, &mut obj);
    obj
}

/// The object after defaulting and `PrepareForCreate`.
pub fn created(group: &str, kind: &str, obj: &Value) -> Value {
    let mut obj = defaulted(group, kind, obj);
    defaults::prepare_for_create(group, V1, kind, &mut obj);
    obj
}

fn step<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match v {
        Value::Object(m) => Some(m.entry(key.to_string()).or_insert(Value::Null)),
        Value::Array(a) => {
            let i = key.parse::<usize>().ok()?;
            if i == a.len() {
                a.push(Value::Null);
            }
            a.get_mut(i)
        }
        _ => None,
    }
}

/// Sets the value at a `/`-separated path, creating objects on the way.
pub fn set(v: &mut Value, path: &str, x: Value) {
    let mut cur = v;
    for key in path.split('/') {
        if cur.is_null() {
            *cur = Value::Object(Default::default());
        }
        cur = step(cur, key).expect("path exists");
    }
    *cur = x;
}

/// Removes the value at a `/`-separated path.
pub fn del(v: &mut Value, path: &str) {
    let (parent, last) = path.rsplit_once('/').unwrap_or(("", path));
    let mut cur = v;
    if !parent.is_empty() {
        for key in parent.split('/') {
            cur = step(cur, key).expect("path exists");
        }
    }
    match cur {
        Value::Object(m) => {
            m.remove(last);
        }
        Value::Array(a) => {
            let i: usize = last.parse().expect("index");
            a.remove(i);
        }
        _ => panic!("no parent at {path}"),
    }
}

/// A copy of `base` with `edits` applied (`None` deletes).
pub fn edit(base: &Value, edits: &[(&str, Option<Value>)]) -> Value {
    let mut v = base.clone();
    for (path, x) in edits {
        match x {
            Some(x) => set(&mut v, path, x.clone()),
            None => del(&mut v, path),
        }
    }
    v
}

/// Asserts that `expected` is one of the messages.
#[track_caller]
pub fn assert_has(errs: &[String], expected: &str) {
    assert!(
        errs.iter().any(|e| e == expected),
        "expected error\n  {expected}\nnot among\n  {}",
        errs.join("\n  ")
    );
}

/// Asserts that some message contains `fragment`.
#[track_caller]
pub fn assert_contains(errs: &[String], fragment: &str) {
    assert!(
        errs.iter().any(|e| e.contains(fragment)),
        "no error containing\n  {fragment}\namong\n  {}",
        errs.join("\n  ")
    );
}

/// Reads a `/`-separated path.
pub fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for key in path.split('/') {
        cur = match cur {
            Value::Object(m) => m.get(key).unwrap_or(&Value::Null),
            Value::Array(a) => key
                .parse::<usize>()
                .ok()
                .and_then(|i| a.get(i))
                .unwrap_or(&Value::Null),
            _ => &Value::Null,
        };
    }
    cur
}
