//! Apply conflicts and the messages upstream builds from them.

use std::collections::BTreeMap;
use std::fmt;

use api::status::Cause;
use serde_json::Value;

use crate::managed::ManagerId;
use crate::path::Path;
use api::gofmt::go_quote;

/// The `StatusCause.type` of an apply conflict.
pub const CAUSE_FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";

/// A field another manager owns with a different value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager identifier (upstream's JSON form, e.g.
    /// `{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"apps/v1"}`).
    pub manager: String,
    /// The conflicting field.
    pub path: Path,
}

impl Conflict {
    /// `conflict with "x" using apps/v1`, as in a cause message.
    pub fn cause_message(&self) -> String {
        format!("conflict with {}", print_manager(&self.manager))
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conflict with {}: {}",
            print_manager(&self.manager),
            self.path
        )
    }
}

/// The conflicts of one apply, in a stable order (managers by identifier, then each
/// manager's fields in field-set order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// The message upstream sends:
    /// `Apply failed with 1 conflict: conflict with "x" using apps/v1: .spec.replicas`, or for
    /// several, `Apply failed with 2 conflicts: conflicts with "x" using apps/v1:\n- .a\n- .b`.
    pub fn message(&self) -> String {
        if let [one] = self.0.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                print_manager(&one.manager),
                one.path
            );
        }
        let mut by_manager: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for c in &self.0 {
            by_manager
                .entry(c.manager.as_str())
                .or_default()
                .push(&c.path);
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {}:", print_manager(manager)));
            for p in paths {
                lines.push(format!("- {p}"));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }

    /// One `FieldManagerConflict` cause per conflict.
    pub fn causes(&self) -> Vec<Cause> {
        self.0
            .iter()
            .map(|c| Cause {
                reason: CAUSE_FIELD_MANAGER_CONFLICT.to_string(),
                message: c.cause_message(),
                field: c.path.to_string(),
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// A manager as upstream names it in conflicts: `"name"`, `"name" with subresource "status"`,
/// and for updaters ` using <apiVersion>`.
pub(crate) fn print_manager(identifier: &str) -> String {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(identifier) else {
        return go_quote(identifier);
    };
    let field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = go_quote(field("manager"));
    let subresource = field("subresource");
    if !subresource.is_empty() {
        out.push_str(" with subresource ");
        out.push_str(&go_quote(subresource));
    }
    if field("operation") == ManagerId::UPDATE {
        out.push_str(" using ");
        out.push_str(field("apiVersion"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::PathElement;
    use serde_json::json;

    fn id(manager: &str, op: &str, version: &str, sub: &str) -> String {
        ManagerId {
            manager: manager.into(),
            operation: op.into(),
            api_version: version.into(),
            subresource: sub.into(),
        }
        .identifier()
    }

    #[test]
    fn single_conflict_message() {
        let c = Conflicts(vec![Conflict {
            manager: id("kubectl-client-side-apply", "Update", "apps/v1", ""),
            path: Path::fields(&["spec", "replicas"]),
        }]);
        assert_eq!(
            c.message(),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
        );
        let causes = c.causes();
        assert_eq!(causes[0].reason, "FieldManagerConflict");
        assert_eq!(
            causes[0].message,
            "conflict with \"kubectl-client-side-apply\" using apps/v1"
        );
        assert_eq!(causes[0].field, ".spec.replicas");
    }

    #[test]
    fn several_conflicts_grouped_by_sorted_manager() {
        let image = Path(vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key([("name", json!("nginx"))]),
            PathElement::field("image"),
        ]);
        let c = Conflicts(vec![
            Conflict {
                manager: id("zeta", "Apply", "", ""),
                path: Path::fields(&["spec", "replicas"]),
            },
            Conflict {
                manager: id("alpha", "Update", "v1", "status"),
                path: image.clone(),
            },
            Conflict {
                manager: id("alpha", "Update", "v1", "status"),
                path: Path::fields(&["metadata", "labels", "a"]),
            },
        ]);
        assert_eq!(
            c.message(),
            "Apply failed with 3 conflicts: conflicts with \"alpha\" with subresource \"status\" using v1:\n- .spec.containers[name=\"nginx\"].image\n- .metadata.labels.a\nconflicts with \"zeta\":\n- .spec.replicas"
        );
    }

    #[test]
    fn unparsable_identifier_is_quoted() {
        assert_eq!(print_manager("plain"), "\"plain\"");
    }
}
