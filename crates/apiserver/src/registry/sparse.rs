//! Decoding only some members of a JSON object.
//!
//! The watch cache decodes every object it takes in to index it (name, namespace, labels,
//! the fields selectors use), but keeps the object as bytes. Building the whole tree of a
//! 5 KB pod to read a dozen members of it is most of that cost; [`decode`] builds only the
//! members a [`Keep`] names and skips the rest as the parser reads past it.

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// What to keep of a JSON value.
#[derive(Debug)]
pub enum Keep {
    /// All of it.
    All,
    /// Of an object, only the members named, each with what to keep of it. Anything
    /// else where an object is expected is kept as `null`.
    Members(&'static [(&'static str, Keep)]),
}

/// The parts of `json` that `keep` names; an error if `json` is not one JSON value.
pub fn decode(json: &[u8], keep: &Keep) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = Seed(keep).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

struct Seed<'k>(&'k Keep);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match self.0 {
            Keep::All => Value::deserialize(d),
            Keep::Members(members) => d.deserialize_any(Members(members)),
        }
    }
}

struct Members(&'static [(&'static str, Keep)]);

impl<'de> Visitor<'de> for Members {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(member) = map.next_key_seed(MemberIndex(self.0))? {
            match member {
                Some(i) => {
                    let (name, keep) = &self.0[i];
                    let value = map.next_value_seed(Seed(keep))?;
                    out.insert((*name).to_string(), value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// A member's name, as its index among the kept members (`None`: not kept). The name is
/// compared where the parser holds it, never copied.
struct MemberIndex(&'static [(&'static str, Keep)]);

impl<'de> DeserializeSeed<'de> for MemberIndex {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for MemberIndex {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|(n, _)| *n == name))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const KEEP: Keep = Keep::Members(&[
        ("kind", Keep::All),
        (
            "metadata",
            Keep::Members(&[("name", Keep::All), ("labels", Keep::All)]),
        ),
        ("spec", Keep::Members(&[("nodeName", Keep::All)])),
    ]);

    #[test]
    fn keeps_only_the_named_members() {
        let obj = json!({
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"name": "web", "uid": "u1", "labels": {"app": "web", "x": "\"é\""},
                         "managedFields": [{"manager": "m", "fieldsV1": {"f:a": {}}}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"},
        });
        let bytes = serde_json::to_vec(&obj).unwrap();
        assert_eq!(
            decode(&bytes, &KEEP).unwrap(),
            json!({
                "kind": "Pod",
                "metadata": {"name": "web", "labels": {"app": "web", "x": "\"é\""}},
                "spec": {"nodeName": "n1"},
            })
        );
    }

    #[test]
    fn escaped_names_and_odd_shapes() {
        // An escaped member name is the name it spells; a later duplicate wins, as in
        // `serde_json::Value`; a non-object where an object is expected is null.
        let text = br#"{"k\u0069nd": "A", "kind": "B", "metadata": [1, {"a": 2}], "spec": "x"}"#;
        assert_eq!(
            decode(text, &KEEP).unwrap(),
            json!({"kind": "B", "metadata": null, "spec": null})
        );
        assert_eq!(decode(b"7", &KEEP).unwrap(), Value::Null);
    }

    #[test]
    fn malformed_json_is_an_error() {
        for bad in [&b"{\"kind\": "[..], b"{\"status\": {]}", b"{} {}", b""] {
            assert!(
                decode(bad, &KEEP).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
