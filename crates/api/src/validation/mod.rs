//! Validation of names, labels, annotations and object metadata, with upstream's messages.
//!
//! - [`names`]: `k8s.io/apimachinery/pkg/util/validation` string checks
//!   ([`is_dns1123_subdomain`], [`is_qualified_name`], ...) returning upstream's messages, and
//!   the per-resource name rules ([`name_is_dns_subdomain`], [`validate_path_segment_name`],
//!   ...) with their `generateName` (prefix) variants;
//! - [`ip`]: IP and CIDR checks ([`is_valid_ip`], [`is_valid_cidr`], ...) with upstream's
//!   two-parser semantics (legacy sloppy parsing, strict parsing, canonical forms);
//! - [`objectmeta`]: [`validate_object_meta`] / [`validate_object_meta_update`] on the JSON
//!   `metadata` object, and the label, annotation, finalizer, owner reference and managed
//!   fields rules;
//!
//! Checks return `Vec<String>` (messages) or `Vec<FieldError>`; an empty list means valid.
//! None of them panics, whatever the input.

pub mod ip;
pub mod names;
pub mod objectmeta;

pub use ip::{
    get_warnings_for_cidr, get_warnings_for_ip, is_valid_cidr, is_valid_cidr_for_legacy_field,
    is_valid_interface_address, is_valid_ip, is_valid_ip_for_legacy_field,
};
pub use names::{
    DNS1035_LABEL_MAX_LENGTH, DNS1123_LABEL_MAX_LENGTH, DNS1123_SUBDOMAIN_MAX_LENGTH,
    LABEL_VALUE_MAX_LENGTH, QUALIFIED_NAME_MAX_LENGTH, empty_error, inclusive_range_error,
    is_c_identifier, is_config_map_key, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain,
    is_dns1123_subdomain_with_underscore, is_domain_prefixed_path, is_env_var_name,
    is_fully_qualified_domain_name, is_fully_qualified_name, is_http_header_name, is_in_range,
    is_qualified_name, is_relaxed_env_var_name, is_valid_group_id, is_valid_label_value,
    is_valid_path_segment_name, is_valid_path_segment_prefix, is_valid_percent, is_valid_port_name,
    is_valid_port_num, is_valid_user_id, is_wildcard_dns1123_subdomain, max_len_error,
    name_is_dns_label, name_is_dns_subdomain, name_is_dns1035_label, regex_error,
    validate_namespace_name, validate_path_segment_name, validate_service_account_name,
};
pub use objectmeta::{
    FIELD_IMMUTABLE_ERROR_MSG, FIELD_MANAGER_MAX_LENGTH, IS_NEGATIVE_ERROR_MSG,
    STANDARD_FINALIZERS, TOTAL_ANNOTATION_SIZE_LIMIT_B, ValidateNameFn, annotations_size_ok,
    custom_resource_finalizer_warnings, validate_annotations, validate_annotations_map,
    validate_field_manager, validate_finalizer_name, validate_finalizers, validate_immutable_field,
    validate_kube_finalizer_name, validate_label_name, validate_labels, validate_labels_map,
    validate_managed_fields, validate_no_new_finalizers, validate_nonnegative_field,
    validate_object_meta, validate_object_meta_generic, validate_object_meta_update,
    validate_object_meta_update_generic, validate_owner_references,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::{
        LabelSelector, LabelSelectorValidationOptions, validate_label_selector_json,
    };
    use proptest::prelude::*;
    use serde_json::Value;

    /// JSON of any shape, with keys that often are metadata fields.
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
            Just(Value::from("2024-01-02T03:04:05Z")),
            Just(Value::from("orphan")),
            Just(Value::from("foregroundDeletion")),
        ];
        let key = prop_oneof![
            Just("name".to_string()),
            Just("generateName".to_string()),
            Just("namespace".to_string()),
            Just("uid".to_string()),
            Just("resourceVersion".to_string()),
            Just("generation".to_string()),
            Just("labels".to_string()),
            Just("annotations".to_string()),
            Just("finalizers".to_string()),
            Just("ownerReferences".to_string()),
            Just("managedFields".to_string()),
            Just("creationTimestamp".to_string()),
            Just("deletionTimestamp".to_string()),
            Just("deletionGracePeriodSeconds".to_string()),
            Just("controller".to_string()),
            Just("apiVersion".to_string()),
            Just("kind".to_string()),
            Just("manager".to_string()),
            Just("operation".to_string()),
            Just("matchLabels".to_string()),
            Just("matchExpressions".to_string()),
            Just("key".to_string()),
            Just("operator".to_string()),
            Just("values".to_string()),
            ".{0,6}",
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn metadata_validation_is_total(new in arb_json(), old in arb_json(), ns in any::<bool>()) {
            let _ = validate_object_meta(&new, ns, &name_is_dns_subdomain, "metadata");
            let _ = validate_object_meta_generic(&new, ns, &validate_path_segment_name, "metadata");
            let _ = validate_object_meta_update(&new, &old, "metadata");
            let _ = validate_object_meta_update_generic(&new, &old, "metadata");
            let _ = custom_resource_finalizer_warnings(&new, Some(&old));
            let _ = validate_label_selector_json(Some(&new), LabelSelectorValidationOptions::default(), "spec.selector");
            let _ = LabelSelector::from_label_selector(&new);
            for e in validate_object_meta(&new, ns, &name_is_dns_label, "metadata") {
                prop_assert!(e.field.starts_with("metadata"), "{}", e);
            }
        }

        #[test]
        fn string_checks_are_total(s in any::<String>(), prefix in any::<bool>()) {
            let _ = is_qualified_name(&s);
            let _ = is_valid_label_value(&s);
            let _ = is_dns1123_label(&s);
            let _ = is_dns1123_subdomain(&s);
            let _ = is_dns1123_subdomain_with_underscore(&s);
            let _ = is_dns1035_label(&s);
            let _ = is_wildcard_dns1123_subdomain(&s);
            let _ = is_c_identifier(&s);
            let _ = is_valid_port_name(&s);
            let _ = is_valid_percent(&s);
            let _ = is_http_header_name(&s);
            let _ = is_env_var_name(&s);
            let _ = is_relaxed_env_var_name(&s);
            let _ = is_config_map_key(&s);
            let _ = is_fully_qualified_name("p", &s);
            let _ = is_fully_qualified_domain_name("p", &s);
            let _ = is_domain_prefixed_path("p", &s);
            let _ = name_is_dns_subdomain(&s, prefix);
            let _ = name_is_dns_label(&s, prefix);
            let _ = name_is_dns1035_label(&s, prefix);
            let _ = validate_path_segment_name(&s, prefix);
            let _ = validate_field_manager(&s, "fieldManager");
            let _ = crate::gofmt::go_quote(&s);
        }

        #[test]
        fn ip_checks_are_total(s in "[0-9a-fA-F:.%/+-]{0,45}", t in any::<String>()) {
            for v in [&s, &t] {
                let _ = is_valid_ip(v);
                let _ = is_valid_ip_for_legacy_field(v, true, &[]);
                let _ = is_valid_cidr(v);
                let _ = is_valid_cidr_for_legacy_field(v, true, &[]);
                let _ = is_valid_interface_address(v);
                let _ = get_warnings_for_ip("p", v);
                let _ = get_warnings_for_cidr("p", v);
            }
        }

        /// Rust's `Display` for addresses is RFC 5952 too: every such text is canonical.
        #[test]
        fn std_addresses_are_canonical(v4 in any::<[u8; 4]>(), v6 in any::<[u16; 8]>(), bits in 0u32..=128) {
            let a4 = std::net::Ipv4Addr::from(v4).to_string();
            prop_assert!(is_valid_ip(&a4).is_empty(), "{}", a4);
            let a6 = std::net::Ipv6Addr::from(v6);
            let text = a6.to_string();
            if a6.to_ipv4_mapped().is_none() {
                prop_assert_eq!(is_valid_ip(&text), Vec::<String>::new(), "{}", text);
                let masked = u128::from(a6) & (!0u128).checked_shl(128 - bits).unwrap_or(0);
                let cidr = format!("{}/{bits}", std::net::Ipv6Addr::from(masked));
                if std::net::Ipv6Addr::from(masked).to_ipv4_mapped().is_none() {
                    prop_assert_eq!(is_valid_cidr(&cidr), Vec::<String>::new(), "{}", cidr);
                }
            } else {
                prop_assert_eq!(is_valid_ip(&text), vec!["must not be an IPv4-mapped IPv6 address".to_string()]);
            }
        }
    }

    #[test]
    fn config_map_key_message_as_kubectl_prints_it() {
        // `kubectl create configmap --from-literal='a b=c'` (v1.33) prints this after the key.
        assert_eq!(
            is_config_map_key("a b"),
            vec![
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
        assert_eq!(is_config_map_key("..x"), vec!["must not start with '..'"]);
        assert_eq!(is_config_map_key("."), vec!["must not be '.'"]);
        assert_eq!(
            is_config_map_key(&"a".repeat(254)),
            vec!["must be no more than 253 characters"]
        );
    }
}
