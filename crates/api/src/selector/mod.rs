//! Label and field selectors: upstream's grammar, matching and error messages.
//!
//! - [`LabelSelector`] (`k8s.io/apimachinery/pkg/labels`): the `labelSelector` query
//!   parameter and `kubectl -l`, parsed by [`LabelSelector::parse`] exactly as upstream's
//!   lexer and parser do (same accepted strings, same sorted requirements, same error texts),
//!   matched against a label lookup ([`LabelSelector::matches`]) or map ([`Labels`]), printed
//!   in upstream's canonical form by `Display`, and built from a `metav1.LabelSelector` as
//!   JSON ([`LabelSelector::from_label_selector`]) or typed ([`LabelSelector::from_metav1`]);
//!   with [`validate_label_selector`] for `spec.selector` fields.
//! - [`FieldSelector`] (`k8s.io/apimachinery/pkg/fields`): the `fieldSelector` query
//!   parameter, with `\`-escaping, matched against a field lookup or [`Fields`], and the API
//!   server's checks
//!   for supported field labels ([`FieldSelector::check_supported_fields`]).
//!
//! Parsing never panics, whatever the input; errors are [`SelectorError`], whose `Display` is
//! upstream's message and which converts to a 400 [`ApiError`] as the API server returns it.
//!
//! Note: the parsed selector is named `LabelSelector` like `k8s-openapi`'s
//! `metav1::LabelSelector` struct, which is the API *type*; import one of them under an alias
//! where both are needed.

mod field;
mod label;

pub use field::{
    FieldFn, FieldOperator, FieldRequirement, FieldSelector, Fields, escape_value, unescape_value,
};
pub use label::{
    LabelSelector, LabelSelectorValidationOptions, Labels, Operator, Requirement,
    format_label_selector, label_selector_as_map, label_selector_has_invalid_label_value,
    parse_to_label_selector, validate_label_selector, validate_label_selector_json,
    validate_label_selector_requirement,
};

use crate::gofmt::go_quote;
use crate::status::ApiError;

/// Why a selector could not be parsed or built. `Display` gives upstream's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label selector string that does not parse (`found ',', expected: ...`,
    /// `unable to parse requirement: ...`).
    #[error("{0}")]
    LabelSyntax(String),
    /// A requirement with an invalid key, value count or value (`NewRequirement`'s aggregate,
    /// e.g. `values[0][app]: Invalid value: "-x": ...`).
    #[error("{0}")]
    InvalidRequirement(String),
    /// A `matchExpressions` operator other than In, NotIn, Exists, DoesNotExist.
    #[error("{} is not a valid label selector operator", go_quote(.0))]
    UnknownOperator(String),
    /// A selector that cannot be converted to the requested form
    /// (`LabelSelectorAsMap`, `ParseToLabelSelector`).
    #[error("{0}")]
    Conversion(String),
    /// A JSON value that is not shaped as a `metav1.LabelSelector` (the field errors).
    #[error("{0}")]
    Malformed(String),
    /// A field selector term without an operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm { selector: String, term: String },
    /// `\` followed by something other than `\`, `,` or `=`, or at the end.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscapeSequence(String),
    /// A `,` or `=` in a field selector value without `\` (upstream prints the code point).
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    UnescapedCharacter(char),
    /// A field the resource cannot be selected by (resources with field label conversion).
    #[error("field label not supported: {0}")]
    FieldLabelNotSupported(String),
    /// A field other than `metadata.name`/`metadata.namespace`, for resources without field
    /// label conversion (upstream's `DefaultMetaV1FieldSelectorConversion`).
    #[error(
        "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        go_quote(.0)
    )]
    UnknownFieldSelector(String),
}

impl From<SelectorError> for ApiError {
    /// The API server answers a bad `labelSelector` or `fieldSelector` with 400 and the
    /// parser's message.
    fn from(e: SelectorError) -> Self {
        ApiError::bad_request(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn errors_become_bad_requests() {
        let e: ApiError = SelectorError::UnescapedCharacter('=').into();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            SelectorError::UnknownOperator("Gt".into()).to_string(),
            "\"Gt\" is not a valid label selector operator"
        );
        let e: ApiError = LabelSelector::parse("a b")
            .err()
            .map(Into::into)
            .unwrap_or_else(|| ApiError::internal("parsed"));
        assert_eq!(e.to_status()["reason"], "BadRequest");
    }

    /// Strings built from the grammar's own pieces, to reach deep into the parser.
    fn selector_like() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("a".to_string()),
            Just("b.c/d-e".to_string()),
            Just("in".to_string()),
            Just("notin".to_string()),
            Just("=".to_string()),
            Just("==".to_string()),
            Just("!=".to_string()),
            Just("!".to_string()),
            Just(">".to_string()),
            Just("<".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just(",".to_string()),
            Just(" ".to_string()),
            Just("\t".to_string()),
            Just("\0".to_string()),
            Just("7".to_string()),
            Just("-1".to_string()),
            Just("é".to_string()),
            Just("\\".to_string()),
            "[a-zA-Z0-9._/-]{0,5}",
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn label_parse_never_panics(s in any::<String>()) {
            let _ = LabelSelector::parse(&s);
        }

        #[test]
        fn label_parse_display_round_trips(s in selector_like()) {
            if let Ok(sel) = LabelSelector::parse(&s) {
                let text = sel.to_string();
                let again = LabelSelector::parse(&text);
                prop_assert_eq!(again.as_ref(), Ok(&sel), "{:?} -> {:?}", s, text);
                prop_assert_eq!(again.map(|a| a.to_string()), Ok(text));
            }
        }

        #[test]
        fn label_matching_is_total(
            s in selector_like(),
            labels in proptest::collection::btree_map("[a-z]{1,2}", "[a-z0-9]{0,2}", 0..4),
        ) {
            if let Ok(sel) = LabelSelector::parse(&s) {
                let _ = sel.matches_labels(&labels);
                let _ = sel.requires_exact_match("a");
            }
        }

        #[test]
        fn field_parse_never_panics(s in any::<String>()) {
            let _ = FieldSelector::parse(&s);
            let _ = unescape_value(&s);
        }

        #[test]
        fn field_parse_display_round_trips(s in "[a-z.=!,\\\\ é]{0,16}") {
            if let Ok(sel) = FieldSelector::parse(&s) {
                let text = sel.to_string();
                let again = FieldSelector::parse(&text);
                prop_assert!(again.is_ok(), "{:?} -> {:?}", s, text);
                // Terms are re-sorted by their new text, so compare as multisets.
                let mut a: Vec<FieldRequirement> = sel.requirements().to_vec();
                let mut b: Vec<FieldRequirement> =
                    again.map(|x| x.requirements().to_vec()).unwrap_or_default();
                let key = |r: &FieldRequirement| (r.field.clone(), r.operator == FieldOperator::Equals, r.value.clone());
                a.sort_by_key(key);
                b.sort_by_key(key);
                prop_assert_eq!(a, b);
            }
        }

        #[test]
        fn escape_round_trips(s in any::<String>()) {
            prop_assert_eq!(unescape_value(&escape_value(&s)), Ok(s));
        }
    }
}
