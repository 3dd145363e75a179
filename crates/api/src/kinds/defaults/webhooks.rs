//! Defaults of the admissionregistration.k8s.io/v1 webhook configurations
//! (`pkg/apis/admissionregistration/v1/defaults.go`).

use serde_json::{Value, json};

use super::{default_if_absent, each_obj_mut, obj_mut};

/// `SetObjectDefaults_MutatingWebhookConfiguration` (`mutating`) and
/// `SetObjectDefaults_ValidatingWebhookConfiguration`: per webhook `failurePolicy: Fail`,
/// `matchPolicy: Equivalent`, empty namespace and object selectors, `timeoutSeconds: 10`,
/// `reinvocationPolicy: Never` (mutating only); per rule `scope: "*"`; a service
/// reference's `port: 443`.
pub(crate) fn webhook_configuration(obj: &mut Value, mutating: bool) {
    let Some(m) = obj_mut(obj) else {
        return;
    };
    each_obj_mut(m, "webhooks", |w| {
        default_if_absent(w, "failurePolicy", json!("Fail"));
        default_if_absent(w, "matchPolicy", json!("Equivalent"));
        default_if_absent(w, "namespaceSelector", json!({}));
        default_if_absent(w, "objectSelector", json!({}));
        default_if_absent(w, "timeoutSeconds", json!(10));
        if mutating {
            default_if_absent(w, "reinvocationPolicy", json!("Never"));
        }
        each_obj_mut(w, "rules", |r| default_if_absent(r, "scope", json!("*")));
        if let Some(svc) = w
            .get_mut("clientConfig")
            .and_then(Value::as_object_mut)
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            default_if_absent(svc, "port", json!(443));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_defaults() {
        let mut o = json!({"webhooks": [{
            "name": "a.b.c",
            "rules": [{"operations": ["CREATE"]}],
            "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
        }]});
        webhook_configuration(&mut o, true);
        let w = &o["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["namespaceSelector"], json!({}));
        assert_eq!(w["objectSelector"], json!({}));
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);
        let mut v = json!({"webhooks": [{"name": "a.b.c", "failurePolicy": "Ignore"}]});
        webhook_configuration(&mut v, false);
        assert_eq!(v["webhooks"][0]["failurePolicy"], "Ignore");
        assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
    }
}
