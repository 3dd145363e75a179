//! admissionregistration.k8s.io/v1 `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration` (`pkg/apis/admissionregistration/validation`), without
//! the CEL compilation of `matchConditions` (their names and presence are checked).

use std::collections::HashSet;

use serde_json::Value;

use super::util::*;
use crate::validation::{is_dns1035_label, is_fully_qualified_name, is_valid_port_num};

/// What an update relaxes, from the old object (`validationOptions`).
struct Opts {
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
    allow_invalid_label_values: bool,
}

const CREATE: Opts = Opts {
    require_no_side_effects: true,
    require_recognized_review_version: true,
    require_unique_names: true,
    allow_invalid_label_values: false,
};

const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const ALL_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];

fn has_wildcard(items: &[&str]) -> bool {
    items.contains(&"*")
}

fn resources(items: &[&str], p: &P) -> Errs {
    let mut errs = Vec::new();
    if items.is_empty() {
        errs.push(required(p, ""));
    }
    let mut res_with_wild_sub: HashSet<&str> = HashSet::new();
    let mut sub_with_wild_res: HashSet<&str> = HashSet::new();
    let (mut double_wild, mut single_wild, mut plain) = (false, false, false);
    for (i, rs) in items.iter().enumerate() {
        if rs.is_empty() {
            errs.push(required(&p.index(i), ""));
            continue;
        }
        double_wild |= *rs == "*/*";
        single_wild |= *rs == "*";
        let Some((res, sub)) = rs.split_once('/') else {
            plain = *rs != "*";
            continue;
        };
        if res_with_wild_sub.contains(res) {
            errs.push(invalid(
                &p.index(i),
                *rs,
                &format!("if '{res}/*' is present, must not specify {rs}"),
            ));
        }
        if sub_with_wild_res.contains(sub) {
            errs.push(invalid(
                &p.index(i),
                *rs,
                &format!("if '*/{sub}' is present, must not specify {rs}"),
            ));
        }
        if sub == "*" {
            res_with_wild_sub.insert(res);
        }
        if res == "*" {
            sub_with_wild_res.insert(sub);
        }
    }
    let list = || Value::from(items.to_vec());
    if items.len() > 1 && double_wild {
        errs.push(invalid(
            p,
            list(),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wild && plain {
        errs.push(invalid(
            p,
            list(),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

fn rule(r: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let ops = str_list(r, "operations");
    if ops.is_empty() {
        errs.push(required(&p.child("operations"), ""));
    }
    if ops.len() > 1 && has_wildcard(&ops) {
        errs.push(invalid(
            &p.child("operations"),
            jv(r, "operations"),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(not_supported(
                &p.child("operations").index(i),
                *op,
                OPERATIONS,
            ));
        }
    }
    let groups = str_list(r, "apiGroups");
    if groups.is_empty() {
        errs.push(required(&p.child("apiGroups"), ""));
    }
    if groups.len() > 1 && has_wildcard(&groups) {
        errs.push(invalid(
            &p.child("apiGroups"),
            jv(r, "apiGroups"),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = str_list(r, "apiVersions");
    if versions.is_empty() {
        errs.push(required(&p.child("apiVersions"), ""));
    }
    if versions.len() > 1 && has_wildcard(&versions) {
        errs.push(invalid(
            &p.child("apiVersions"),
            jv(r, "apiVersions"),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(required(&p.child("apiVersions").index(i), ""));
        }
    }
    errs.extend(resources(&str_list(r, "resources"), &p.child("resources")));
    if let Some(scope) = opt_s(r, "scope")
        && !SCOPES.contains(&scope)
    {
        errs.push(not_supported(&p.child("scope"), scope, SCOPES));
    }
    errs
}

/// `webhook.ValidateWebhookURL` with `forceHttps`.
fn webhook_url(url: &str, p: &P) -> Errs {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", url),
    };
    if scheme != "https" {
        errs.push(invalid(
            p,
            scheme,
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if scheme.is_empty() {
        ""
    } else {
        rest.split('/').next().unwrap_or_default()
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        errs.push(invalid(p, host, &format!("host must be specified{FORM}")));
    }
    if let Some(u) = user {
        errs.push(invalid(
            p,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(invalid(
            p,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(invalid(
            p,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// `webhook.ValidateWebhookService`.
fn webhook_service(svc: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    if s(svc, "name").is_empty() {
        errs.push(required(&p.child("name"), "service name is required"));
    }
    if s(svc, "namespace").is_empty() {
        errs.push(required(
            &p.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = int(svc, "port").unwrap_or(443);
    let port_errs = is_valid_port_num(port);
    if !port_errs.is_empty() {
        errs.push(invalid(
            &p.child("port"),
            port,
            &format!("port is not valid: {}", port_errs.join(", ")),
        ));
    }
    let path = s(svc, "path");
    if path.is_empty() || path == "/" {
        return errs;
    }
    let pp = p.child("path");
    if path == "//" {
        errs.push(invalid(&pp, path, "segment[0] may not be empty"));
        return errs;
    }
    if !path.starts_with('/') {
        errs.push(invalid(&pp, path, "must start with a '/'"));
    }
    let trimmed = path.trim_start_matches('/');
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, seg) in trimmed.split('/').enumerate() {
        if seg.is_empty() {
            errs.push(invalid(
                &pp,
                path,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for msg in crate::validation::is_dns1123_subdomain(seg) {
            errs.push(invalid(&pp, path, &format!("segment[{i}]: {msg}")));
        }
    }
    errs
}

fn webhook(w: &Value, mutating: bool, opts: &Opts, p: &P) -> Errs {
    let mut errs = is_fully_qualified_name(p.child("name").as_str(), s(w, "name"));
    for (i, r) in arr(w, "rules").iter().enumerate() {
        errs.extend(rule(r, &p.child("rules").index(i)));
    }
    if let Some(fp) = opt_s(w, "failurePolicy")
        && !FAILURE_POLICIES.contains(&fp)
    {
        errs.push(not_supported(
            &p.child("failurePolicy"),
            fp,
            FAILURE_POLICIES,
        ));
    }
    if let Some(mp) = opt_s(w, "matchPolicy")
        && !MATCH_POLICIES.contains(&mp)
    {
        errs.push(not_supported(&p.child("matchPolicy"), mp, MATCH_POLICIES));
    }
    let allowed = if opts.require_no_side_effects {
        NO_SIDE_EFFECTS
    } else {
        ALL_SIDE_EFFECTS
    };
    match opt_s(w, "sideEffects") {
        None => errs.push(required(
            &p.child("sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(se) if !allowed.contains(&se) => {
            errs.push(not_supported(&p.child("sideEffects"), se, allowed))
        }
        Some(_) => {}
    }
    if let Some(t) = int(w, "timeoutSeconds")
        && !(1..=30).contains(&t)
    {
        errs.push(invalid(
            &p.child("timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for sel in ["namespaceSelector", "objectSelector"] {
        errs.extend(validate_label_selector(
            get(w, sel),
            opts.allow_invalid_label_values,
            &p.child(sel),
        ));
    }
    if mutating
        && let Some(rp) = opt_s(w, "reinvocationPolicy")
        && !REINVOCATION_POLICIES.contains(&rp)
    {
        errs.push(not_supported(
            &p.child("reinvocationPolicy"),
            rp,
            REINVOCATION_POLICIES,
        ));
    }
    let cc = get(w, "clientConfig").unwrap_or(&Value::Null);
    let url = opt_s(cc, "url");
    let svc = get(cc, "service").filter(|v| !v.is_null());
    match (url, svc) {
        (Some(u), None) => errs.extend(webhook_url(u, &p.child("clientConfig").child("url"))),
        (None, Some(svc)) => errs.extend(webhook_service(
            svc,
            &p.child("clientConfig").child("service"),
        )),
        _ => errs.push(required(
            &p.child("clientConfig"),
            "exactly one of url or service is required",
        )),
    }
    let mut names = HashSet::new();
    for (i, mc) in arr(w, "matchConditions").iter().enumerate() {
        let mp = p.child("matchConditions").index(i);
        let name = s(mc, "name");
        if name.is_empty() {
            errs.push(required(&mp.child("name"), ""));
        } else {
            errs.extend(qualified_name(name, &mp.child("name")));
            if !names.insert(name) {
                errs.push(duplicate(&mp.child("name"), name));
            }
        }
        if s(mc, "expression").is_empty() {
            errs.push(required(&mp.child("expression"), ""));
        }
    }
    if arr(w, "matchConditions").len() > 64 {
        errs.push(too_many(
            &p.child("matchConditions"),
            arr(w, "matchConditions").len(),
            64,
        ));
    }
    errs
}

fn review_versions(w: &Value, require_recognized: bool, p: &P) -> Errs {
    let versions = str_list(w, "admissionReviewVersions");
    let mut errs = Vec::new();
    if versions.is_empty() {
        errs.push(required(
            p,
            &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        ));
        return errs;
    }
    let mut seen = HashSet::new();
    let mut recognized = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            errs.push(invalid(&p.index(i), *v, "duplicate version"));
            continue;
        }
        for msg in is_dns1035_label(v) {
            errs.push(invalid(&p.index(i), *v, &msg));
        }
        recognized |= REVIEW_VERSIONS.contains(v);
    }
    if require_recognized && !recognized {
        errs.push(invalid(
            p,
            jv(w, "admissionReviewVersions"),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

fn configuration(obj: &Value, mutating: bool, opts: &Opts) -> Errs {
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, w) in arr(obj, "webhooks").iter().enumerate() {
        let p = P::new("webhooks").index(i);
        errs.extend(webhook(w, mutating, opts, &p));
        errs.extend(review_versions(
            w,
            opts.require_recognized_review_version,
            &p.child("admissionReviewVersions"),
        ));
        let name = s(w, "name");
        if opts.require_unique_names && !name.is_empty() && !names.insert(name) {
            errs.push(duplicate(&p.child("name"), name));
        }
    }
    errs
}

/// Create validation of a webhook configuration beyond metadata.
pub(crate) fn webhook_configuration(obj: &Value, mutating: bool) -> Errs {
    configuration(obj, mutating, &CREATE)
}

/// Update validation: the create rules, relaxed where the old object already broke them.
pub(crate) fn webhook_configuration_update(new: &Value, old: &Value, mutating: bool) -> Errs {
    let old_hooks = arr(old, "webhooks");
    let mut names = HashSet::new();
    let opts = Opts {
        require_no_side_effects: old_hooks
            .iter()
            .all(|w| opt_s(w, "sideEffects").is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
        require_recognized_review_version: old_hooks.iter().all(|w| {
            let v = str_list(w, "admissionReviewVersions");
            v.is_empty() || v.iter().any(|v| REVIEW_VERSIONS.contains(v))
        }),
        require_unique_names: old_hooks.iter().all(|w| names.insert(s(w, "name"))),
        allow_invalid_label_values: old_hooks.iter().any(|w| {
            ["namespaceSelector", "objectSelector"]
                .iter()
                .any(|sel| !validate_label_selector(get(w, sel), false, &P::root()).is_empty())
        }),
    };
    configuration(new, mutating, &opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: &Errs) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn valid_configuration() {
        let o = json!({"webhooks": [{
            "name": "deny.example.com",
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps", "pods/status"], "scope": "*"}],
            "clientConfig": {"url": "https://127.0.0.1:8443/validate"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
            "namespaceSelector": {"matchLabels": {"a": "b"}},
        }]});
        assert!(webhook_configuration(&o, false).is_empty());
    }

    #[test]
    fn upstream_messages() {
        let o = json!({"webhooks": [
            {"name": "short", "clientConfig": {"url": "http://x/y?z=1"}, "sideEffects": "Some", "timeoutSeconds": 31,
             "rules": [{"operations": ["*", "CREATE"], "apiGroups": ["*", "apps"], "apiVersions": ["v1"], "resources": ["*", "pods"]}]},
            {"name": "short", "clientConfig": {}, "admissionReviewVersions": ["v2"]},
        ]});
        let m = msgs(&webhook_configuration(&o, true));
        for want in [
            "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
            "webhooks[0].rules[0].operations: Invalid value: [\"*\",\"CREATE\"]: if '*' is present, must not specify other operations",
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[0].clientConfig.url: Invalid value: \"z=1\": query parameters are not permitted in the URL",
            "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            "webhooks[1].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[1].clientConfig: Required value: exactly one of url or service is required",
            "webhooks[1].admissionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
            "webhooks[1].name: Duplicate value: \"short\"",
        ] {
            assert!(m.iter().any(|x| x == want), "missing {want}\nin {m:#?}");
        }
    }

    #[test]
    fn update_keeps_side_effects_of_old_objects() {
        let old = json!({"webhooks": [{"name": "a.b.c", "sideEffects": "Unknown", "admissionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}]});
        assert!(webhook_configuration_update(&old, &old, false).is_empty());
        assert!(!webhook_configuration(&old, false).is_empty());
    }
}
