//! Path elements and paths: how a field, a list item or a map entry is named, ordered,
//! serialized into fieldsV1 keys (`f:`, `k:`, `v:`, `i:`) and printed in conflict messages.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use crate::error::Error;
use crate::value;

/// One step into a value.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a map or struct: `f:<name>`, printed `.name`.
    Field(String),
    /// The item of an associative list whose key fields have these values, sorted by name:
    /// `k:{"name":"x"}`, printed `[name="x"]`.
    Key(Vec<(String, Value)>),
    /// The item of a set with this value: `v:<json>`, printed `[=value]`.
    Value(Value),
    /// The item at this index of a list: `i:<n>`, printed `[n]`.
    Index(i64),
}

impl PathElement {
    /// A field element.
    pub fn field(name: impl Into<String>) -> Self {
        PathElement::Field(name.into())
    }

    /// A key element; the fields are sorted by name as upstream keeps them.
    pub fn key<I, K>(fields: I) -> Self
    where
        I: IntoIterator<Item = (K, Value)>,
        K: Into<String>,
    {
        let mut list: Vec<(String, Value)> =
            fields.into_iter().map(|(k, v)| (k.into(), v)).collect();
        sort_key_fields(&mut list);
        PathElement::Key(list)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The element as a fieldsV1 key (`f:name`, `k:{...}`, `v:...`, `i:3`).
    pub fn serialize(&self) -> String {
        let mut out = String::new();
        match self {
            PathElement::Field(name) => {
                out.push_str("f:");
                out.push_str(name);
            }
            PathElement::Key(fields) => {
                out.push_str("k:{");
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    value::write_json_string(&mut out, name);
                    out.push(':');
                    value::write_json(&mut out, v);
                }
                out.push('}');
            }
            PathElement::Value(v) => {
                out.push_str("v:");
                value::write_json(&mut out, v);
            }
            PathElement::Index(i) => {
                out.push_str("i:");
                out.push_str(&i.to_string());
            }
        }
        out
    }

    /// Parses a fieldsV1 key. `Ok(None)` for a prefix this version does not know (upstream
    /// drops those rather than fail).
    pub fn parse(s: &str) -> Result<Option<PathElement>, Error> {
        let bytes = s.as_bytes();
        if bytes.len() < 2 {
            return Err(Error::InvalidFields(
                "key must be 2 characters long:".to_string(),
            ));
        }
        if bytes[1] != b':' {
            return Err(Error::InvalidFields(format!("missing colon: {s}")));
        }
        let rest = s.get(2..).unwrap_or("");
        match bytes[0] {
            b'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            b'v' => {
                let v: Value = serde_json::from_str(rest)
                    .map_err(|e| Error::InvalidFields(format!("parsing {s:?}: {e}")))?;
                Ok(Some(PathElement::Value(v)))
            }
            b'k' => {
                let v: Value = serde_json::from_str(rest)
                    .map_err(|e| Error::InvalidFields(format!("parsing {s:?}: {e}")))?;
                match v {
                    Value::Object(m) => Ok(Some(PathElement::key(m))),
                    Value::Null => Ok(Some(PathElement::Key(Vec::new()))),
                    _ => Err(Error::InvalidFields(format!(
                        "parsing {s:?}: expect {{ or n"
                    ))),
                }
            }
            b'i' => rest
                .parse::<i64>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| Error::InvalidFields(format!("parsing {s:?}: {e}"))),
            _ => Ok(None),
        }
    }
}

pub(crate) fn sort_key_fields(fields: &mut [(String, Value)]) {
    fields.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
}

fn key_compare(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((na, va), (nb, vb)) in a.iter().zip(b) {
        let c = na.as_bytes().cmp(nb.as_bytes());
        if c != Ordering::Equal {
            return c;
        }
        let c = value::compare(va, vb);
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.as_bytes().cmp(b.as_bytes()),
            (PathElement::Key(a), PathElement::Key(b)) => key_compare(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => value::compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// As upstream prints path elements: `.name`, `[name="x",port=80]`, `[=value]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value::to_display(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value::to_display(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A sequence of path elements naming a field from the root of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// A path of field names, e.g. `Path::fields(&["spec", "replicas"])`.
    pub fn fields(names: &[&str]) -> Path {
        Path(names.iter().map(|n| PathElement::field(*n)).collect())
    }

    /// The elements of the path.
    pub fn elements(&self) -> &[PathElement] {
        &self.0
    }

    /// The path extended by one element.
    pub fn child(&self, pe: PathElement) -> Path {
        let mut v = self.0.clone();
        v.push(pe);
        Path(v)
    }
}

impl From<Vec<PathElement>> for Path {
    fn from(v: Vec<PathElement>) -> Self {
        Path(v)
    }
}

impl fmt::Display for Path {
    /// As upstream prints paths in conflicts: `.spec.template.spec.containers[name="nginx"].image`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialize_and_parse() {
        let cases = [
            (PathElement::field("spec"), "f:spec"),
            (
                PathElement::key([("protocol", json!("TCP")), ("containerPort", json!(80))]),
                "k:{\"containerPort\":80,\"protocol\":\"TCP\"}",
            ),
            (PathElement::Value(json!("a<b")), "v:\"a\\u003cb\""),
            (PathElement::Value(json!(3)), "v:3"),
            (PathElement::Index(4), "i:4"),
        ];
        for (pe, s) in cases {
            assert_eq!(pe.serialize(), s);
            assert_eq!(PathElement::parse(s).unwrap(), Some(pe));
        }
        assert_eq!(
            PathElement::parse("k:{ \"protocol\":\"udp\",\"port\":443}").unwrap(),
            Some(PathElement::key([
                ("port", json!(443)),
                ("protocol", json!("udp"))
            ]))
        );
        assert_eq!(PathElement::parse("x:whatever").unwrap(), None);
        assert!(PathElement::parse("f").is_err());
        assert!(PathElement::parse("fx").is_err());
        assert!(PathElement::parse("i:x").is_err());
        assert!(PathElement::parse("k:[1]").is_err());
        assert!(PathElement::parse("v:1 2").is_err());
    }

    #[test]
    fn ordering_and_display() {
        let mut v = [
            PathElement::Index(1),
            PathElement::Value(json!("aa")),
            PathElement::Value(json!(3)),
            PathElement::key([("name", json!("b"))]),
            PathElement::key([("name", json!("a"))]),
            PathElement::field("b"),
            PathElement::field("a"),
        ];
        v.sort();
        let shown: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                ".a",
                ".b",
                "[name=\"a\"]",
                "[name=\"b\"]",
                "[=3]",
                "[=\"aa\"]",
                "[1]"
            ]
        );
        let p = Path(vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key([("name", json!("nginx"))]),
            PathElement::field("image"),
        ]);
        assert_eq!(p.to_string(), ".spec.containers[name=\"nginx\"].image");
        let ports = PathElement::key([("containerPort", json!(80)), ("protocol", json!("TCP"))]);
        assert_eq!(ports.to_string(), "[containerPort=80,protocol=\"TCP\"]");
    }
}
