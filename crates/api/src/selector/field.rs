//! Field selectors as upstream's `k8s.io/apimachinery/pkg/fields`: `field=value`,
//! `field==value` and `field!=value` terms joined by `,`, values escaped with `\` (`\,`, `\=`,
//! `\\`), terms sorted, and matching where a missing field reads as `""`.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

use serde_json::Value;

use super::SelectorError;

/// `=` (also written `==`) or `!=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    Equals,
    NotEquals,
}

/// One `field op value` term (upstream's `fields.Requirement`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

impl FieldRequirement {
    fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        let actual = fields.get_field(&self.field);
        let actual = actual.as_deref().unwrap_or("");
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

/// `field=escaped` or `field!=escaped` (upstream's term `String()`; the field is not escaped).
impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// The values a field selector is matched against (upstream's `fields.Fields`, usually a
/// `fields.Set` built from an object). A field that is absent reads as `""`.
pub trait Fields {
    fn get_field(&self, field: &str) -> Option<Cow<'_, str>>;
}

impl<T: Fields + ?Sized> Fields for &T {
    fn get_field(&self, field: &str) -> Option<Cow<'_, str>> {
        (**self).get_field(field)
    }
}

impl Fields for BTreeMap<String, String> {
    fn get_field(&self, field: &str) -> Option<Cow<'_, str>> {
        self.get(field).map(|v| Cow::Borrowed(v.as_str()))
    }
}

impl<S: BuildHasher> Fields for HashMap<String, String, S> {
    fn get_field(&self, field: &str) -> Option<Cow<'_, str>> {
        self.get(field).map(|v| Cow::Borrowed(v.as_str()))
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Fields for [(K, V)] {
    fn get_field(&self, field: &str) -> Option<Cow<'_, str>> {
        self.iter()
            .find(|(k, _)| k.as_ref() == field)
            .map(|(_, v)| Cow::Borrowed(v.as_ref()))
    }
}

/// Fields computed on demand: `FieldFn(|name| ...)`.
pub struct FieldFn<F>(pub F);

impl<F: Fn(&str) -> Option<String>> Fields for FieldFn<F> {
    fn get_field(&self, field: &str) -> Option<Cow<'_, str>> {
        (self.0)(field).map(Cow::Owned)
    }
}

/// A parsed field selector: terms ANDed, in upstream's (sorted) order. The default (no terms)
/// matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// `fields.Everything()`.
    pub fn everything() -> Self {
        Self::default()
    }

    /// `fields.ParseSelector`: terms split on unescaped `,`, sorted, each split at its first
    /// operator (`!=`, `==`, `=`), values unescaped; terms with an empty field and value are
    /// dropped.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, operator, rhs)) = split_term(part) else {
                return Err(SelectorError::FieldTerm {
                    selector: selector.to_string(),
                    term: part.to_string(),
                });
            };
            let value = unescape_value(rhs)?;
            if lhs.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field: lhs.to_string(),
                operator,
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// `SelectorFromSet`: `field=value` for each pair, in the given order.
    pub fn from_set<'a>(set: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        FieldSelector {
            requirements: set
                .into_iter()
                .map(|(f, v)| FieldRequirement {
                    field: f.to_string(),
                    operator: FieldOperator::Equals,
                    value: v.to_string(),
                })
                .collect(),
        }
    }

    /// `OneTermEqualSelector`.
    pub fn one_term_equal(field: &str, value: &str) -> Self {
        Self::from_set([(field, value)])
    }

    /// `AndSelectors`: all terms of all selectors.
    pub fn and(selectors: impl IntoIterator<Item = FieldSelector>) -> Self {
        FieldSelector {
            requirements: selectors.into_iter().flat_map(|s| s.requirements).collect(),
        }
    }

    /// `Empty`: no term.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The field names the terms use, in order (with repeats).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    /// `Matches`: every term holds, a missing field (`None`) reading as `""`.
    pub fn matches<'v>(&self, fields: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = fields(&r.field).unwrap_or("");
            match r.operator {
                FieldOperator::Equals => actual == r.value,
                FieldOperator::NotEquals => actual != r.value,
            }
        })
    }

    /// [`FieldSelector::matches`] against a field set (upstream's `fields.Set`) or computed
    /// fields ([`FieldFn`]).
    pub fn matches_fields<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        self.requirements.iter().all(|r| r.matches(fields))
    }

    /// `RequiresExactMatch`: the value the first `=` term on `field` demands.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.operator == FieldOperator::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// `Transform`: each `(field, value)` through `f` (to rename fields or normalise values);
    /// terms that become an empty field and value are dropped; the first error is returned.
    pub fn transform<E>(
        &self,
        mut f: impl FnMut(&str, &str) -> Result<(String, String), E>,
    ) -> Result<FieldSelector, E> {
        let mut requirements = Vec::with_capacity(self.requirements.len());
        for r in &self.requirements {
            let (field, value) = f(&r.field, &r.value)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field,
                operator: r.operator,
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// The API server's check for a resource with field label conversion: every field must be
    /// one of `supported`, else `field label not supported: <field>` (for the first one; a
    /// 400 once converted to [`ApiError`](crate::ApiError)).
    pub fn check_supported_fields(&self, supported: &[&str]) -> Result<(), SelectorError> {
        match self.fields().find(|name| !supported.contains(name)) {
            Some(name) => Err(SelectorError::FieldLabelNotSupported(name.to_string())),
            None => Ok(()),
        }
    }

    /// The check for a resource without its own conversion (upstream's
    /// `DefaultMetaV1FieldSelectorConversion`): only `metadata.name` and
    /// `metadata.namespace`, else `"x" is not a known field selector: only "metadata.name",
    /// "metadata.namespace"` (a 400 once converted to [`ApiError`](crate::ApiError)).
    pub fn check_metadata_fields(&self) -> Result<(), SelectorError> {
        match self
            .fields()
            .find(|name| *name != "metadata.name" && *name != "metadata.namespace")
        {
            Some(name) => Err(SelectorError::UnknownFieldSelector(name.to_string())),
            None => Ok(()),
        }
    }

    /// `metadata.name` and `metadata.namespace` of an object, the fields every resource
    /// supports (upstream's `DefaultClusterScopedAttr` / `DefaultNamespaceScopedAttr`): for
    /// cluster-scoped resources the namespace field is absent.
    pub fn object_meta_fields(object: &Value, namespaced: bool) -> BTreeMap<String, String> {
        let meta = |f: &str| {
            object
                .get("metadata")
                .and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut fields = BTreeMap::new();
        fields.insert("metadata.name".to_string(), meta("name"));
        if namespaced {
            fields.insert("metadata.namespace".to_string(), meta("namespace"));
        }
        fields
    }
}

/// Upstream's `String()`: the terms joined by `,`, values escaped.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldSelector::parse(s)
    }
}

/// `EscapeValue`: `\` as `\\`, then `,` as `\,` and `=` as `\=`.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `UnescapeValue`: the literal value; unknown escapes, a trailing `\` and unescaped `,` or
/// `=` are errors.
pub fn unescape_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => return Err(SelectorError::InvalidEscapeSequence(format!("\\{c}"))),
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(SelectorError::UnescapedCharacter(c)),
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::InvalidEscapeSequence("\\".to_string()));
    }
    Ok(out)
}

/// `splitTerms`: split on `,` not preceded by an escaping `\` (escapes are kept).
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// `splitTerm`: at the first position where `!=`, `==` or `=` starts (checked in that order).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, value));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn upstream_parse_cases() {
        let good = [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=a||y\\=b",
            "x=a,y=b\\,c",
            "x=a,y=b\\\\,c=d",
        ];
        for s in good {
            assert!(FieldSelector::parse(s).is_ok(), "{s}");
        }
        // Canonical strings.
        let canon = [
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("", ""),
            ("x!=a,y=b", "x!=a,y=b"),
            ("x==a", "x=a"),
            ("z=c,x=a", "x=a,z=c"),
            ("x=a\\,b", "x=a\\,b"),
            ("x=a\\=b", "x=a\\=b"),
            ("x=a\\\\b", "x=a\\\\b"),
            ("=", ""),
            ("!=", ""),
            (",,x=a,", "x=a"),
        ];
        for (input, want) in canon {
            let got = FieldSelector::parse(input).map(|s| s.to_string());
            assert_eq!(got.as_deref(), Ok(want), "{input}");
        }
        let bad = [
            (
                "x=a||y=b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "x==a==b",
                "invalid field selector: unescaped character in value: 61",
            ),
            ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
            (
                "x in (a)",
                "invalid selector: 'x in (a)'; can't understand 'x in (a)'",
            ),
            (
                "x in (a,b,c)",
                "invalid selector: 'x in (a,b,c)'; can't understand 'b'",
            ),
            (
                "x=a\\q",
                "invalid field selector: invalid escape sequence: \\q",
            ),
            (
                "x=a\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
        ];
        for (input, want) in bad {
            let got = FieldSelector::parse(input).map_err(|e| e.to_string());
            assert_eq!(got, Err(want.to_string()), "{input}");
        }
    }

    #[test]
    fn escaping_upstream_cases() {
        let cases = [
            ("", ""),
            ("a", "a"),
            ("=", "\\="),
            (",", "\\,"),
            ("\\", "\\\\"),
            ("\\=\\,\\", "\\\\\\=\\\\\\,\\\\"),
        ];
        for (raw, escaped) in cases {
            assert_eq!(escape_value(raw), escaped);
            assert_eq!(unescape_value(escaped).as_deref(), Ok(raw));
        }
        assert_eq!(
            unescape_value("foo=bar").map_err(|e| e.to_string()),
            Err("invalid field selector: unescaped character in value: 61".to_string())
        );
        assert_eq!(
            unescape_value("foo,bar").map_err(|e| e.to_string()),
            Err("invalid field selector: unescaped character in value: 44".to_string())
        );
        assert_eq!(
            unescape_value("foo\\é").map_err(|e| e.to_string()),
            Err("invalid field selector: invalid escape sequence: \\é".to_string())
        );
    }

    #[test]
    fn upstream_matching() {
        let yes = |s: &str, f: &[(&str, &str)]| {
            let sel = FieldSelector::parse(s).unwrap_or_default();
            assert!(sel.matches_fields(&fields(f)), "{s} should match {f:?}");
        };
        let no = |s: &str, f: &[(&str, &str)]| {
            let sel = FieldSelector::parse(s).unwrap_or_default();
            assert!(
                !sel.matches_fields(&fields(f)),
                "{s} should not match {f:?}"
            );
        };
        yes("", &[("x", "y")]);
        yes("x=y", &[("x", "y")]);
        yes("x=y,z=w", &[("x", "y"), ("z", "w")]);
        yes("x!=y,z!=w", &[("x", "z"), ("z", "a")]);
        yes("x=", &[]);
        yes("x!=y", &[]);
        no("x=y", &[]);
        no("x=y", &[("x", "z")]);
        no("x=y,z=w", &[("x", "w"), ("z", "w")]);
        no("x!=y,z!=w", &[("x", "z"), ("z", "w")]);
        let set = [("foo", "bar"), ("baz", "blah"), ("complex", "=value\\,\\")];
        yes("foo=bar", &set);
        yes("baz=blah", &set);
        yes("foo=bar,baz=blah", &set);
        yes("foo=bar,baz=blah,complex=\\=value\\\\\\,\\\\", &set);
        no("foo=blah", &set);
        no("baz=bar", &set);
        no("foo=bar,foobar=bar,baz=blah", &set);
    }

    #[test]
    fn exact_match_transform_and_checks() {
        let sel = FieldSelector::parse("spec.nodeName!=a,metadata.name=web,spec.host=n1")
            .unwrap_or_default();
        assert_eq!(sel.requires_exact_match("metadata.name"), Some("web"));
        assert_eq!(sel.requires_exact_match("spec.nodeName"), None);
        assert_eq!(
            sel.fields().collect::<Vec<_>>(),
            vec!["metadata.name", "spec.host", "spec.nodeName"]
        );
        let renamed = sel
            .transform(|f, v| -> Result<(String, String), String> {
                Ok(match f {
                    "spec.host" => ("spec.nodeName".to_string(), v.to_string()),
                    "metadata.name" => (String::new(), String::new()),
                    _ => (f.to_string(), v.to_string()),
                })
            })
            .unwrap_or_default();
        assert_eq!(renamed.to_string(), "spec.nodeName=n1,spec.nodeName!=a");
        let e = sel
            .check_supported_fields(&["metadata.name", "spec.nodeName"])
            .map_err(crate::ApiError::from);
        assert_eq!(
            e.map_err(|e| (e.code, e.message)),
            Err((400, "field label not supported: spec.host".to_string()))
        );
        assert!(
            sel.check_supported_fields(&["metadata.name", "spec.nodeName", "spec.host"])
                .is_ok()
        );
        let e = sel.check_metadata_fields().map_err(|e| e.to_string());
        assert_eq!(
            e,
            Err("\"spec.host\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"".to_string())
        );
        assert!(
            FieldSelector::parse("metadata.namespace=a,metadata.name=b")
                .map(|s| s.check_metadata_fields().is_ok())
                .unwrap_or(false)
        );
    }

    #[test]
    fn field_sources() {
        let obj = json!({"metadata": {"name": "web", "namespace": "default"}});
        let f = FieldSelector::object_meta_fields(&obj, true);
        assert!(
            FieldSelector::parse("metadata.name=web,metadata.namespace=default")
                .unwrap_or_default()
                .matches_fields(&f)
        );
        let cluster = FieldSelector::object_meta_fields(&obj, false);
        assert!(!cluster.contains_key("metadata.namespace"));
        let computed =
            FieldFn(|name: &str| (name == "status.phase").then(|| "Running".to_string()));
        assert!(
            FieldSelector::parse("status.phase=Running")
                .unwrap_or_default()
                .matches_fields(&computed)
        );
        assert!(
            FieldSelector::parse("status.phase!=Pending")
                .unwrap_or_default()
                .matches_fields(&computed)
        );
        assert!(
            FieldSelector::parse("spec.x=")
                .unwrap_or_default()
                .matches_fields(&computed)
        );
        assert!(
            FieldSelector::parse("a=b")
                .unwrap_or_default()
                .matches_fields([("a", "b")].as_slice())
        );
        assert!(
            FieldSelector::parse("a=b,c!=d")
                .unwrap_or_default()
                .matches(|k| (k == "a").then_some("b"))
        );
        let hm: HashMap<String, String> = [("a".to_string(), "b".to_string())].into();
        assert!(
            FieldSelector::parse("a!=c")
                .unwrap_or_default()
                .matches_fields(&hm)
        );
        let both = FieldSelector::and([
            FieldSelector::one_term_equal("a", "b"),
            FieldSelector::from_set([("c", "d,e")]),
        ]);
        assert_eq!(both.to_string(), "a=b,c=d\\,e");
        assert!(FieldSelector::everything().is_empty());
    }
}
