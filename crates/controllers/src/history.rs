//! ControllerRevision helpers shared by the DaemonSet and StatefulSet controllers
//! (upstream's `pkg/controller/history` and the history parts of
//! `pkg/controller/daemon/update.go`), as pure functions over JSON objects:
//!
//! - [`template_patch`]: the revision's data, upstream's `getPatch` — a strategic merge
//!   patch replacing `spec.template`, which `kubectl rollout undo` applies as is;
//! - [`hash_revision`] / [`revision_name`] / [`new_revision`]: upstream's
//!   `HashControllerRevision` (FNV-1 32 of the data and the collision count, safe-encoded)
//!   and `NewControllerRevision` (template labels plus `controller.kubernetes.io/hash`,
//!   the parent as controller, `<parent>-<hash>`);
//! - [`sort_revisions`], [`equal_revision`], [`find_equal`], [`next_revision`];
//! - [`apply_revision`]: the parent as it was at a revision (`ApplyRevision`);
//! - [`truncate`]: which non-live revisions go beyond `revisionHistoryLimit`.

use std::cmp::Ordering;

use serde_json::{Value, json};

/// Upstream's `ControllerRevisionHashLabel`.
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// The default `revisionHistoryLimit` of DaemonSets and StatefulSets.
pub const DEFAULT_HISTORY_LIMIT: i64 = 10;

/// The characters of upstream's `rand.SafeEncodeString` (no vowels, no look-alikes).
pub(crate) const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream's `rand.SafeEncodeString`.
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// FNV-1 (not 1a) 32-bit, Go's `fnv.New32`.
pub fn fnv1_32(chunks: &[&[u8]]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for bytes in chunks {
        for b in *bytes {
            hash = hash.wrapping_mul(0x0100_0193);
            hash ^= u32::from(*b);
        }
    }
    hash
}

/// JSON with object keys sorted (as Go's `json.Marshal` of a map writes it), so equal
/// values always give equal bytes.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                write_canonical(&m[*k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Upstream's `getPatch` of DaemonSets and StatefulSets: `{"spec":{"template":{…,
/// "$patch":"replace"}}}`, the data of a revision.
pub fn template_patch(parent: &Value) -> Value {
    let mut template = parent["spec"]["template"].clone();
    if !template.is_object() {
        template = json!({});
    }
    template["$patch"] = json!("replace");
    json!({"spec": {"template": template}})
}

/// Upstream's `HashControllerRevision`: FNV-1 32 of the data and, when given, the
/// collision count in decimal, safe-encoded.
pub fn hash_revision(data: &Value, collision_count: Option<i64>) -> String {
    let text = canonical(data);
    let probe = collision_count.map(|c| c.to_string()).unwrap_or_default();
    safe_encode(&fnv1_32(&[text.as_bytes(), probe.as_bytes()]).to_string())
}

/// Upstream's `ControllerRevisionName`: `<prefix>-<hash>`, the prefix cut to 223
/// characters so the name stays a valid DNS subdomain.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let prefix: String = prefix.chars().take(223).collect();
    format!("{prefix}-{hash}")
}

/// A controller reference to `owner` of `kind` (`metav1.NewControllerRef`).
pub fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version, "kind": kind,
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// Upstream's `NewControllerRevision` (plus the parent's annotations, as the StatefulSet
/// controller's `newRevision` adds them): labelled with the template's labels and the
/// hash, controlled by `parent`, named `<parent>-<hash>`.
pub fn new_revision(
    parent: &Value,
    kind: &str,
    data: Value,
    revision: i64,
    collision_count: Option<i64>,
) -> Value {
    let hash = hash_revision(&data, collision_count);
    let mut labels = parent["spec"]["template"]["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels[HASH_LABEL] = json!(hash);
    let mut meta = json!({
        "name": revision_name(parent["metadata"]["name"].as_str().unwrap_or_default(), &hash),
        "namespace": parent["metadata"]["namespace"],
        "labels": labels,
        "ownerReferences": [controller_ref(parent, "apps/v1", kind)],
    });
    if let Some(a) = parent["metadata"]["annotations"]
        .as_object()
        .filter(|a| !a.is_empty())
    {
        meta["annotations"] = Value::Object(a.clone());
    }
    json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": meta, "data": data, "revision": revision})
}

/// The revision number of a ControllerRevision.
pub fn revision_number(rev: &Value) -> i64 {
    rev["revision"].as_i64().unwrap_or(0)
}

/// Upstream's `SortControllerRevisions`: by revision, then creation time, then name.
pub fn sort_revisions(revisions: &mut [&Value]) {
    revisions.sort_by(|a, b| compare(a, b));
}

fn compare(a: &Value, b: &Value) -> Ordering {
    revision_number(a)
        .cmp(&revision_number(b))
        .then_with(|| {
            let t = |v: &Value| crate::pods::time_ms(&v["metadata"]["creationTimestamp"]);
            t(a).cmp(&t(b))
        })
        .then_with(|| {
            a["metadata"]["name"]
                .as_str()
                .cmp(&b["metadata"]["name"].as_str())
        })
}

/// Upstream's `EqualRevision`: both hash labels (when both have one) agree and the data
/// are equal.
pub fn equal_revision(a: &Value, b: &Value) -> bool {
    let ha = a["metadata"]["labels"][HASH_LABEL].as_str();
    let hb = b["metadata"]["labels"][HASH_LABEL].as_str();
    if let (Some(x), Some(y)) = (ha, hb)
        && x != y
    {
        return false;
    }
    a["data"] == b["data"]
}

/// Upstream's `FindEqualRevisions`: the revisions equal to `needle`, in their order.
pub fn find_equal<'a>(revisions: &[&'a Value], needle: &Value) -> Vec<&'a Value> {
    revisions
        .iter()
        .copied()
        .filter(|r| equal_revision(r, needle))
        .collect()
}

/// The highest revision number (0 without revisions).
pub fn max_revision(revisions: &[&Value]) -> i64 {
    revisions
        .iter()
        .map(|r| revision_number(r))
        .max()
        .unwrap_or(0)
}

/// Upstream's `nextRevision`: one past the last of the sorted revisions (1 without).
pub fn next_revision(sorted: &[&Value]) -> i64 {
    sorted.last().map_or(1, |r| revision_number(r) + 1)
}

/// Upstream's `ApplyRevision`: `parent` with its template replaced by the one the
/// revision recorded.
pub fn apply_revision(parent: &Value, revision: &Value) -> Value {
    let mut out = parent.clone();
    let mut template = revision["data"]["spec"]["template"].clone();
    if let Some(t) = template.as_object_mut() {
        t.remove("$patch");
        out["spec"]["template"] = template;
    }
    out
}

/// The object's `spec.revisionHistoryLimit` (10 when unset).
pub fn history_limit(parent: &Value) -> i64 {
    parent["spec"]["revisionHistoryLimit"]
        .as_i64()
        .unwrap_or(DEFAULT_HISTORY_LIMIT)
        .max(0)
}

/// The names of the revisions to delete so that at most `limit` of the non-live ones
/// remain, the oldest first (`truncateHistory` / `cleanupHistory`). `candidates` are
/// the revisions that may go, `live` says which of them must stay.
pub fn truncate(candidates: &[&Value], live: impl Fn(&Value) -> bool, limit: i64) -> Vec<String> {
    let mut history: Vec<&Value> = candidates.iter().copied().filter(|r| !live(r)).collect();
    let limit = usize::try_from(limit).unwrap_or(0);
    if history.len() <= limit {
        return Vec::new();
    }
    sort_revisions(&mut history);
    let excess = history.len() - limit;
    history
        .iter()
        .take(excess)
        .filter_map(|r| r["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The revisions of `namespace` that `owner` controls or that are orphans matching its
/// selector (upstream's `ListControllerRevisions` + `ClaimControllerRevisions`), with
/// the orphans to adopt.
pub fn claim<'a>(owner: &Value, revisions: &'a [Value]) -> crate::replicaset::Claim<'a> {
    crate::replicaset::claim(owner, revisions)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn set(image: &str) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "uid": "u1",
            "annotations": {"kubernetes.io/change-cause": "x"}},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    #[test]
    fn fnv1_matches_go() {
        // Go: fnv.New32(); Write([]byte("hello")); Sum32() == 0xb6fa7167.
        assert_eq!(fnv1_32(&[b"hello"]), 0xb6fa_7167);
        assert_eq!(fnv1_32(&[b""]), 0x811c_9dc5);
    }

    #[test]
    fn patch_replaces_the_template() {
        let p = template_patch(&set("a"));
        assert_eq!(p["spec"]["template"]["$patch"], "replace");
        assert_eq!(p["spec"]["template"]["spec"]["containers"][0]["image"], "a");
        assert_eq!(p.as_object().unwrap().len(), 1);
    }

    #[test]
    fn new_revision_is_named_labelled_and_owned() {
        let s = set("a");
        let r = new_revision(&s, "StatefulSet", template_patch(&s), 3, None);
        let hash = r["metadata"]["labels"][HASH_LABEL].as_str().unwrap();
        assert_eq!(r["metadata"]["name"], format!("web-{hash}"));
        assert_eq!(r["metadata"]["labels"]["app"], "web");
        assert_eq!(r["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        assert_eq!(r["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            r["metadata"]["annotations"]["kubernetes.io/change-cause"],
            "x"
        );
        assert_eq!(r["revision"], 3);
        // Stable, and the collision count changes it.
        let again = new_revision(&s, "StatefulSet", template_patch(&s), 3, None);
        assert_eq!(again["metadata"]["name"], r["metadata"]["name"]);
        let probed = new_revision(&s, "StatefulSet", template_patch(&s), 3, Some(1));
        assert_ne!(probed["metadata"]["name"], r["metadata"]["name"]);
        let other = new_revision(&set("b"), "StatefulSet", template_patch(&set("b")), 3, None);
        assert_ne!(other["metadata"]["name"], r["metadata"]["name"]);
        assert!(
            hash.bytes().all(|b| ALPHANUMS.contains(&b)),
            "{hash} is safe-encoded"
        );
    }

    #[test]
    fn equality_sorting_and_application() {
        let a = new_revision(&set("a"), "StatefulSet", template_patch(&set("a")), 1, None);
        let b = new_revision(&set("b"), "StatefulSet", template_patch(&set("b")), 2, None);
        let a2 = new_revision(&set("a"), "StatefulSet", template_patch(&set("a")), 3, None);
        assert!(equal_revision(&a, &a2));
        assert!(!equal_revision(&a, &b));
        let mut all = vec![&a2, &b, &a];
        sort_revisions(&mut all);
        assert_eq!(
            all.iter().map(|r| revision_number(r)).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(next_revision(&all), 4);
        assert_eq!(next_revision(&[]), 1);
        assert_eq!(find_equal(&all, &a).len(), 2);
        let applied = apply_revision(&set("z"), &b);
        assert_eq!(
            applied["spec"]["template"]["spec"]["containers"][0]["image"],
            "b"
        );
        assert!(applied["spec"]["template"].get("$patch").is_none());
    }

    #[test]
    fn truncation_keeps_live_and_newest() {
        let revs: Vec<Value> = (1..=6)
            .map(|i| json!({"metadata": {"name": format!("r{i}")}, "revision": i}))
            .collect();
        let refs: Vec<&Value> = revs.iter().collect();
        // r2 is live: of the five others, keep the newest 2.
        let gone = truncate(&refs, |r| r["metadata"]["name"] == "r2", 2);
        assert_eq!(gone, ["r1", "r3", "r4"]);
        assert!(truncate(&refs, |_| false, 10).is_empty());
        assert_eq!(truncate(&refs, |_| false, 0).len(), 6);
        assert_eq!(history_limit(&json!({"spec": {}})), 10);
        assert_eq!(
            history_limit(&json!({"spec": {"revisionHistoryLimit": 2}})),
            2
        );
    }
}
