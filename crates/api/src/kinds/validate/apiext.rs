//! apiextensions.k8s.io/v1 CustomResourceDefinition (`apiextensions/validation`, with the
//! structural-schema rules of `apiserver/schema` that CRDs most often trip over).

use std::collections::HashSet;

use serde_json::Value;

use super::util::*;

const APPROVAL: &str = "api-approved.kubernetes.io";

fn protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Approval {
    Missing,
    Invalid,
    Approved,
    Bypassed,
}

fn approval_state(ann: &std::collections::BTreeMap<String, String>) -> (Approval, String) {
    let Some(v) = ann.get(APPROVAL) else {
        return (
            Approval::Missing,
            format!(
                "protected groups must have approval annotation {APPROVAL:?}, see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        );
    };
    if v.starts_with("unapproved") {
        return (Approval::Bypassed, String::new());
    }
    let is_url = v.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/')
    });
    if is_url {
        return (Approval::Approved, String::new());
    }
    (
        Approval::Invalid,
        format!(
            "protected groups must have approval annotation {APPROVAL:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        ),
    )
}

fn api_approval(new: &Value, old: Option<&Value>) -> Errs {
    let group = get(new, "spec").map(|sp| s(sp, "group")).unwrap_or("");
    if !protected_group(group) {
        return Vec::new();
    }
    let ann = super::meta_str_map(new, "annotations");
    let (state, reason) = approval_state(&ann);
    if let Some(old) = old
        && approval_state(&super::meta_str_map(old, "annotations")).0 == state
    {
        return Vec::new();
    }
    let p = P::new("metadata").child("annotations").key(APPROVAL);
    match state {
        Approval::Missing => vec![required(&p, &reason)],
        Approval::Invalid => vec![invalid(
            &p,
            ann.get(APPROVAL).cloned().unwrap_or_default(),
            &reason,
        )],
        _ => Vec::new(),
    }
}

fn names(names: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    for key in ["plural", "singular"] {
        let v = s(names, key);
        let e = is_dns1035_label(v);
        if !v.is_empty() && !e.is_empty() {
            errs.push(invalid(&p.child(key), v, &e.join(",")));
        }
    }
    for key in ["kind", "listKind"] {
        let v = s(names, key);
        let e = is_dns1035_label(&v.to_lowercase());
        if !v.is_empty() && !e.is_empty() {
            errs.push(invalid(
                &p.child(key),
                v,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    for (i, sn) in str_list(names, "shortNames").iter().enumerate() {
        let e = is_dns1035_label(sn);
        if !e.is_empty() {
            errs.push(invalid(&p.child("shortNames").index(i), *sn, &e.join(",")));
        }
    }
    let kind = s(names, "kind");
    if !kind.is_empty() && kind == s(names, "listKind") {
        errs.push(invalid(
            &p.child("listKind"),
            kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in str_list(names, "categories").iter().enumerate() {
        let e = is_dns1035_label(c);
        if !e.is_empty() {
            errs.push(invalid(&p.child("categories").index(i), *c, &e.join(",")));
        }
    }
    errs
}

fn simple_json_path(v: &str, p: &P) -> Errs {
    if v.is_empty() {
        vec![invalid(p, v, "must not be empty")]
    } else if !v.starts_with('.') {
        vec![invalid(p, v, "must be a simple json path starting with .")]
    } else {
        Vec::new()
    }
}

fn subresources(sr: Option<&Value>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let Some(scale) = sr.and_then(|s| get(s, "scale")) else {
        return errs;
    };
    for (key, prefix, msg) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let v = s(scale, key);
        let kp = p.child(&format!("scale.{key}"));
        if v.is_empty() {
            errs.push(required(&kp, ""));
        } else {
            let e = simple_json_path(v, &kp);
            if !e.is_empty() {
                errs.extend(e);
            } else if !v.starts_with(prefix) {
                errs.push(invalid(&kp, v, msg));
            }
        }
    }
    if let Some(ls) = opt_s(scale, "labelSelectorPath").filter(|v| !v.is_empty()) {
        let kp = p.child("scale.labelSelectorPath");
        let e = simple_json_path(ls, &kp);
        if !e.is_empty() {
            errs.extend(e);
        } else if !ls.starts_with(".spec.") && !ls.starts_with(".status.") {
            errs.push(invalid(
                &kp,
                ls,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

fn printer_column(col: &Value, p: &P) -> Errs {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    let mut errs = Vec::new();
    if s(col, "name").is_empty() {
        errs.push(required(&p.child("name"), ""));
    }
    let t = s(col, "type");
    if t.is_empty() {
        errs.push(required(
            &p.child("type"),
            &format!("must be one of {TYPES}"),
        ));
    } else if !TYPES.split(',').any(|x| x == t) {
        errs.push(invalid(
            &p.child("type"),
            t,
            &format!("must be one of {TYPES}"),
        ));
    }
    let f = s(col, "format");
    if !f.is_empty() && !FORMATS.split(',').any(|x| x == f) {
        errs.push(invalid(
            &p.child("format"),
            f,
            &format!("must be one of {FORMATS}"),
        ));
    }
    let jp = s(col, "jsonPath");
    if jp.is_empty() {
        errs.push(required(&p.child("JSONPath"), ""));
    } else {
        errs.extend(simple_json_path(jp, &p.child("JSONPath")));
    }
    errs
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The OpenAPI rules (`specStandardValidatorV3`, `ValidateCustomResourceDefinitionOpenAPISchema`)
/// and the structural invariants (`validateStructuralInvariants`) in one walk.
fn schema(sch: &Value, p: &P, lvl: Level, errs: &mut Errs, depth: usize) {
    if depth > 64 || !sch.is_object() {
        return;
    }
    const TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
    let t = s(sch, "type");
    if !t.is_empty() && !TYPES.contains(&t) {
        errs.push(not_supported(&p.child("type"), t, TYPES));
    }
    for (key, msg) in [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if !semantic_eq(sch.get(key), None) {
            errs.push(forbidden(&p.child(key), msg));
        }
    }
    if t == "null" {
        errs.push(forbidden(
            &p.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if sch.get("items").is_some_and(Value::is_array) {
        errs.push(forbidden(
            &p.child("items"),
            "items must be a schema object and not an array",
        ));
    }
    if is_true(sch, "uniqueItems") {
        errs.push(forbidden(
            &p.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if boolean(sch, "x-kubernetes-preserve-unknown-fields") == Some(false) {
        errs.push(invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let props = obj(sch, "properties");
    if let Some(ap) = sch.get("additionalProperties") {
        if props.is_some_and(|m| !m.is_empty()) && (ap == &Value::Bool(false) || ap.is_object()) {
            errs.push(forbidden(
                &p.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if ap.is_object() {
            schema(
                ap,
                &p.child("additionalProperties"),
                Level::Field,
                errs,
                depth + 1,
            );
        }
    }
    let embedded = is_true(sch, "x-kubernetes-embedded-resource");
    let int_or_string = is_true(sch, "x-kubernetes-int-or-string");
    let preserve = is_true(sch, "x-kubernetes-preserve-unknown-fields");
    if t == "array" && sch.get("items").is_none() {
        errs.push(required(&p.child("items"), "must be specified"));
    }
    if let Some(items) = sch.get("items").filter(|i| i.is_object()) {
        schema(items, &p.child("items"), Level::Item, errs, depth + 1);
    }
    if let Some(props) = props {
        let mut keys: Vec<&String> = props.keys().collect();
        keys.sort();
        for k in keys {
            if let Some(v) = props.get(k.as_str()) {
                schema(
                    v,
                    &p.child("properties").key(k),
                    Level::Field,
                    errs,
                    depth + 1,
                );
            }
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in arr(sch, key).iter().enumerate() {
            schema_junctor(sub, &p.child(key).index(i), errs, depth + 1);
        }
    }
    if let Some(not) = get(sch, "not") {
        schema_junctor(not, &p.child("not"), errs, depth + 1);
    }
    if embedded && t != "object" {
        if t.is_empty() {
            errs.push(required(
                &p.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(invalid(
                &p.child("type"),
                t,
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if t.is_empty() && !embedded && !int_or_string {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(required(&p.child("type"), msg));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        errs.push(invalid(&p.child("type"), t, "must be object at the root"));
    }
    let check_meta = lvl == Level::Root || embedded;
    if let Some(props) = props
        && check_meta
    {
        for key in ["kind", "apiVersion"] {
            if let Some(k) = props.get(key)
                && s(k, "type") != "string"
            {
                errs.push(invalid(
                    &p.child("properties").key(key).child("type"),
                    s(k, "type"),
                    "must be string",
                ));
            }
        }
        if let Some(meta) = props.get("metadata") {
            let mp = p.child("properties").key("metadata");
            let mt = s(meta, "type");
            if !mt.is_empty() && mt != "object" {
                errs.push(invalid(&mp.child("type"), mt, "must be object"));
            }
            if lvl == Level::Root
                && let Some(mprops) = obj(meta, "properties")
            {
                for (k, v) in mprops {
                    if k != "name" && k != "generateName" {
                        errs.push(forbidden(
                            &mp.child("properties").key(k),
                            "must not specify anything other than name and generateName, but metadata is implicitly specified",
                        ));
                    } else if !s(v, "type").is_empty() && s(v, "type") != "string" {
                        errs.push(invalid(
                            &mp.child("properties").key(k).child("type"),
                            s(v, "type"),
                            "must be string",
                        ));
                    }
                }
            }
        }
    }
    if embedded && !preserve && props.is_none_or(|m| m.is_empty()) {
        errs.push(required(
            &p.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Junctors (`allOf`, `anyOf`, `oneOf`, `not`) only get the OpenAPI rules; their types may
/// be left out.
fn schema_junctor(sch: &Value, p: &P, errs: &mut Errs, depth: usize) {
    if depth > 64 || !sch.is_object() {
        return;
    }
    const TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
    let t = s(sch, "type");
    if !t.is_empty() && !TYPES.contains(&t) {
        errs.push(not_supported(&p.child("type"), t, TYPES));
    }
    if is_true(sch, "uniqueItems") {
        errs.push(forbidden(
            &p.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
}

fn conversion(conv: Option<&Value>, preserve_unknown: bool, p: &P) -> Errs {
    let mut errs = Vec::new();
    let Some(conv) = conv else { return errs };
    let strategy = s(conv, "strategy");
    let sp = p.child("strategy");
    if strategy != "None" && !strategy.is_empty() && preserve_unknown {
        errs.push(invalid(
            &sp,
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match strategy {
        "" => errs.push(required(&sp, "")),
        "None" | "Webhook" => {}
        other => errs.push(not_supported(&sp, other, &["None", "Webhook"])),
    }
    // Upstream reports the internal field names (`webhookClientConfig`,
    // `conversionReviewVersions` directly under `conversion`).
    let cp = p.child("webhookClientConfig");
    if strategy == "Webhook" {
        match get(conv, "webhook") {
            None => errs.push(required(&cp, "required when strategy is set to Webhook")),
            Some(wh) => {
                match get(wh, "clientConfig") {
                    None => errs.push(required(&cp, "required when strategy is set to Webhook")),
                    Some(cc) => {
                        let url = opt_s(cc, "url");
                        let svc = get(cc, "service");
                        match (url, svc) {
                            (Some(_), Some(_)) | (None, None) => errs
                                .push(required(&cp, "exactly one of url or service is required")),
                            (Some(u), None) => errs.extend(webhook_url(u, &cp.child("url"))),
                            (None, Some(sv)) => {
                                errs.extend(webhook_service(sv, &cp.child("service")))
                            }
                        }
                    }
                }
                let vp = p.child("conversionReviewVersions");
                let versions = str_list(wh, "conversionReviewVersions");
                if versions.is_empty() {
                    errs.push(required(&vp, ""));
                } else {
                    let mut seen = HashSet::new();
                    let mut accepted = false;
                    for (i, v) in versions.iter().enumerate() {
                        if !seen.insert(*v) {
                            errs.push(invalid(&vp.index(i), *v, "duplicate version"));
                            continue;
                        }
                        for m in is_dns1035_label(v) {
                            errs.push(invalid(&vp.index(i), *v, &m));
                        }
                        accepted |= *v == "v1" || *v == "v1beta1";
                    }
                    if !accepted {
                        errs.push(invalid(
                            &vp,
                            jv(wh, "conversionReviewVersions"),
                            "must include at least one of v1, v1beta1",
                        ));
                    }
                }
            }
        }
    } else if let Some(wh) = get(conv, "webhook") {
        if get(wh, "clientConfig").is_some() {
            errs.push(forbidden(
                &cp,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if len_of(wh, "conversionReviewVersions") > 0 {
            errs.push(forbidden(
                &p.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn webhook_url(u: &str, p: &P) -> Errs {
    let mut errs = Vec::new();
    let Some((scheme, rest)) = u.split_once("://") else {
        return vec![invalid(p, u, "url must be a valid URL")];
    };
    if scheme != "https" {
        errs.push(invalid(p, u, "'https' is the only allowed URL scheme"));
    }
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..host_end];
    if host.is_empty() {
        errs.push(invalid(p, u, "host must be specified"));
    }
    if host.contains('@') {
        errs.push(invalid(
            p,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if rest.contains('#') {
        errs.push(invalid(p, u, "fragments are not permitted in the URL"));
    }
    if rest.contains('?') {
        errs.push(invalid(
            p,
            u,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

fn webhook_service(sv: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    if s(sv, "name").is_empty() {
        errs.push(required(&p.child("name"), "service name is required"));
    }
    if s(sv, "namespace").is_empty() {
        errs.push(required(
            &p.child("namespace"),
            "service namespace is required",
        ));
    }
    if let Some(port) = int(sv, "port") {
        for m in is_valid_port_num(port) {
            errs.push(invalid(
                &p.child("port"),
                port,
                &format!("port is not valid: {m}"),
            ));
        }
    }
    if let Some(path) = opt_s(sv, "path") {
        let pp = p.child("path");
        if path == "/" {
            return errs;
        }
        if !path.starts_with('/') {
            errs.push(invalid(&pp, path, "must start with a '/'"));
        }
        let trimmed = path.trim_start_matches('/');
        for (i, step) in trimmed.split('/').enumerate() {
            if i == 0 && step.is_empty() {
                errs.push(invalid(&pp, path, "segment[0] may not be empty"));
            } else if !step.is_empty() && !is_dns1123_subdomain(step).is_empty() {
                errs.push(invalid(
                    &pp,
                    path,
                    &format!("segment[{i}]: {}", is_dns1123_subdomain(step).join(", ")),
                ));
            }
        }
    }
    errs
}

fn crd_spec(spec: &Value, p: &P, require_schema: bool) -> Errs {
    let mut errs = Vec::new();
    let group = s(spec, "group");
    let gp = p.child("group");
    if group.is_empty() {
        errs.push(required(&gp, ""));
    } else {
        let e = is_dns1123_subdomain(group);
        if !e.is_empty() {
            errs.push(invalid(&gp, group, &e.join(",")));
        } else if group.split('.').count() < 2 {
            errs.push(invalid(
                &gp,
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    match s(spec, "scope") {
        "" => errs.push(required(&p.child("scope"), "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(not_supported(
            &p.child("scope"),
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    let preserve = is_true(spec, "preserveUnknownFields");
    let versions = arr(spec, "versions");
    let vp = p.child("versions");
    if require_schema {
        for (i, v) in versions.iter().enumerate() {
            if get_in(v, &["schema", "openAPIV3Schema"]).is_none() {
                errs.push(required(
                    &vp.index(i).child("schema").child("openAPIV3Schema"),
                    "schemas are required",
                ));
            }
        }
    } else if !preserve {
        for (i, v) in versions.iter().enumerate() {
            if is_true(v, "served") && get_in(v, &["schema", "openAPIV3Schema"]).is_none() {
                errs.push(required(
                    &vp.index(i).child("schema").child("openAPIV3Schema"),
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    let mut storage = 0;
    let mut seen = HashSet::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let ip = vp.index(i);
        if is_true(v, "storage") {
            storage += 1;
        }
        let name = s(v, "name");
        if !seen.insert(name) {
            unique = false;
        }
        let e = is_dns1035_label(name);
        if !e.is_empty() {
            errs.push(invalid(&ip.child("name"), name, &e.join(",")));
        }
        let deprecated = is_true(v, "deprecated");
        if let Some(w) = opt_s(v, "deprecationWarning") {
            let wp = ip.child("deprecationWarning");
            if !deprecated {
                errs.push(invalid(&wp, w, "can only be set for deprecated versions"));
            } else {
                if w.len() > 256 {
                    errs.push(invalid(&wp, w, "must be <= 256 characters long"));
                }
                if w.is_empty() {
                    errs.push(invalid(&wp, w, "must not be an empty string"));
                }
                if let Some((idx, _)) = w.char_indices().find(|(_, c)| c.is_control()) {
                    errs.push(invalid(
                        &wp,
                        w,
                        &format!("must only contain printable UTF-8 characters; non-printable character found at index {idx}"),
                    ));
                }
            }
        }
        if let Some(sch) = get_in(v, &["schema", "openAPIV3Schema"]) {
            let sp = ip.child("schema").child("openAPIV3Schema");
            if is_true(sch, "nullable") {
                errs.push(forbidden(
                    &ip.child("schema").child("openAPIV3Schema.nullable"),
                    "nullable cannot be true at the root",
                ));
            }
            if get_in(v, &["subresources", "status"]).is_some() {
                let t = s(sch, "type");
                if !t.is_empty() && t != "object" {
                    errs.push(invalid(
                        &ip.child("schema").child("openAPIV3Schema.type"),
                        t,
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                }
            }
            schema(sch, &sp, Level::Root, &mut errs, 0);
        }
        errs.extend(subresources(
            get(v, "subresources"),
            &ip.child("subresources"),
        ));
        for (j, col) in arr(v, "additionalPrinterColumns").iter().enumerate() {
            errs.extend(printer_column(
                col,
                &ip.child("additionalPrinterColumns").index(j),
            ));
        }
    }
    if !unique {
        errs.push(invalid(
            &vp,
            jv(spec, "versions"),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(invalid(
            &vp,
            jv(spec, "versions"),
            "must have exactly one version marked as storage version",
        ));
    }
    let np = p.child("names");
    let n = get(spec, "names").cloned().unwrap_or(Value::Null);
    for key in ["plural", "singular", "kind", "listKind"] {
        if s(&n, key).is_empty() {
            errs.push(required(&np.child(key), ""));
        }
    }
    errs.extend(names(&n, &np));
    errs.extend(conversion(
        get(spec, "conversion"),
        preserve,
        &p.child("conversion"),
    ));
    errs
}

fn stored_versions(obj: &Value) -> Errs {
    let sp = P::new("status").child("storedVersions");
    let stored = get(obj, "status")
        .map(|s| str_list(s, "storedVersions"))
        .unwrap_or_default();
    let versions = get(obj, "spec")
        .map(|s| arr(s, "versions").to_vec())
        .unwrap_or_default();
    if stored.is_empty() {
        return vec![invalid(
            &sp,
            Value::Array(Vec::new()),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    let mut remaining: Vec<(usize, &str)> = stored.iter().copied().enumerate().collect();
    for v in &versions {
        let name = s(v, "name");
        let present = remaining.iter().any(|(_, n)| *n == name);
        if is_true(v, "storage") && !present {
            errs.push(invalid(
                &sp,
                get_in(obj, &["status", "storedVersions"])
                    .cloned()
                    .unwrap_or(Value::Null),
                &format!("must have the storage version {name}"),
            ));
        }
        remaining.retain(|(_, n)| *n != name);
    }
    for (i, v) in remaining {
        errs.push(invalid(
            &sp.index(i),
            v,
            &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
    errs
}

fn with_stored_versions(obj: &Value) -> Value {
    let mut o = obj.clone();
    let has = get_in(&o, &["status", "storedVersions"])
        .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()));
    if !has {
        let storage: Vec<Value> = get(obj, "spec")
            .map(|s| arr(s, "versions"))
            .unwrap_or_default()
            .iter()
            .filter(|v| is_true(v, "storage"))
            .map(|v| Value::String(s(v, "name").to_string()))
            .take(1)
            .collect();
        if let Some(m) = o.as_object_mut() {
            let status = m.entry("status").or_insert_with(|| serde_json::json!({}));
            if let Some(sm) = status.as_object_mut() {
                sm.insert("storedVersions".into(), Value::Array(storage));
            }
        }
    }
    o
}

/// `ValidateCustomResourceDefinition` (v1 request).
pub(crate) fn crd_create(obj: &Value) -> Errs {
    let obj = with_stored_versions(obj);
    let spec = get(&obj, "spec").cloned().unwrap_or(Value::Null);
    let mut errs = Vec::new();
    let name = super::meta_s(&obj, "name");
    let plural = get(&spec, "names").map(|n| s(n, "plural")).unwrap_or("");
    if name != format!("{plural}.{}", s(&spec, "group")) {
        errs.push(invalid(
            &P::new("metadata").child("name"),
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    errs.extend(crd_spec(&spec, &P::new("spec"), true));
    if let Some(status) = get(&obj, "status")
        && let Some(an) = get(status, "acceptedNames")
    {
        errs.extend(names(an, &P::new("status").child("acceptedNames")));
    }
    errs.extend(stored_versions(&obj));
    errs.extend(api_approval(&obj, None));
    if is_true(&spec, "preserveUnknownFields") {
        errs.push(invalid(
            &P::new("spec").child("preserveUnknownFields"),
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

fn established(obj: &Value) -> bool {
    get(obj, "status")
        .map(|s| arr(s, "conditions"))
        .unwrap_or_default()
        .iter()
        .any(|c| s(c, "type") == "Established" && s(c, "status") == "True")
}

/// `ValidateCustomResourceDefinitionUpdate` (v1 request).
pub(crate) fn crd_update(new: &Value, old: &Value) -> Errs {
    let new = with_stored_versions(new);
    let ns = get(&new, "spec").cloned().unwrap_or(Value::Null);
    let os = get(old, "spec").cloned().unwrap_or(Value::Null);
    let sp = P::new("spec");
    let old_requires_schema = arr(&os, "versions")
        .iter()
        .all(|v| get_in(v, &["schema", "openAPIV3Schema"]).is_some());
    let mut errs = crd_spec(&ns, &sp, old_requires_schema);
    if established(old) {
        errs.extend(immutable(
            ns.get("scope"),
            os.get("scope"),
            &sp.child("scope"),
        ));
        errs.extend(immutable(
            get_in(&ns, &["names", "kind"]),
            get_in(&os, &["names", "kind"]),
            &sp.child("names").child("kind"),
        ));
    }
    errs.extend(immutable(
        ns.get("group"),
        os.get("group"),
        &sp.child("group"),
    ));
    errs.extend(immutable(
        get_in(&ns, &["names", "plural"]),
        get_in(&os, &["names", "plural"]),
        &sp.child("names").child("plural"),
    ));
    if let Some(an) = get_in(&new, &["status", "acceptedNames"]) {
        errs.extend(names(an, &P::new("status").child("acceptedNames")));
    }
    errs.extend(stored_versions(&new));
    errs.extend(api_approval(&new, Some(old)));
    if is_true(&ns, "preserveUnknownFields") && !is_true(&os, "preserveUnknownFields") {
        errs.push(invalid(
            &sp.child("preserveUnknownFields"),
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structural_basics() {
        let mut errs = Vec::new();
        let sch = json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "array"}}}}});
        schema(&sch, &P::new("s"), Level::Root, &mut errs, 0);
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(
            msgs.contains(
                &"s.properties[spec].properties[a].items: Required value: must be specified"
                    .to_string()
            ),
            "{msgs:?}"
        );
        assert!(msgs.contains(&"s.properties[spec].type: Required value: must not be empty for specified object fields".to_string()), "{msgs:?}");
    }

    #[test]
    fn approval() {
        let crd = json!({"metadata": {"name": "a.x.k8s.io"}, "spec": {"group": "x.k8s.io"}});
        assert_eq!(
            api_approval(&crd, None)[0].field,
            "metadata.annotations[api-approved.kubernetes.io]"
        );
        let ok = json!({"metadata": {"annotations": {APPROVAL: "https://github.com/kubernetes/kubernetes/pull/1"}}, "spec": {"group": "x.k8s.io"}});
        assert!(api_approval(&ok, None).is_empty());
    }
}
