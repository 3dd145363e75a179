//! `/metrics`: Prometheus text with upstream's request metrics.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::catalog::ResourceInfo;

use crate::registry::Registry;
use crate::registry::cache::CacheSizes;
use crate::requestinfo::RequestInfo;

/// Upstream's `apiserver_request_duration_seconds` buckets.
const BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// One request series: its counts by response code and its latencies.
#[derive(Default)]
struct Series {
    codes: Vec<(u16, u64)>,
    /// Empty for watches (upstream does not time them).
    latency: Histogram,
}

#[derive(Default)]
struct Inner {
    /// Series by their labels as printed (component, dry_run, group, resource, scope,
    /// subresource, verb, version): a request finds its series with one string built and
    /// one hash lookup.
    requests: HashMap<String, Series>,
    /// (group, version, kind) → open watches.
    watches: BTreeMap<(String, String, String), i64>,
}

/// Another component's metrics text, appended to `/metrics` (the scheduler and
/// controllers running in the same process).
pub type Source = Arc<dyn Fn() -> String + Send + Sync>;

/// Request counters and latency histograms.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
    sources: Mutex<Vec<Source>>,
}

/// One gauge without labels, in the text format.
pub fn gauge(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    out.push_str(&format!(
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
    ));
}

fn scope(info: &RequestInfo) -> &'static str {
    if !info.is_resource_request {
        ""
    } else if !info.name.is_empty() {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    }
}

/// The verb a request is counted under, as upstream's `cleanVerb`: the HTTP method, with
/// LIST told from GET and WATCH from both, APPLY from PATCH (`apply` says whether the
/// body is an apply patch), and CONNECT for the streaming subresources.
pub fn reported_verb(info: &RequestInfo, apply: bool) -> &'static str {
    if info.is_resource_request
        && matches!(
            info.subresource.as_str(),
            "log" | "exec" | "portforward" | "attach" | "proxy"
        )
    {
        return "CONNECT";
    }
    match info.verb.as_str() {
        "watch" => "WATCH",
        "list" => "LIST",
        "get" | "head" => "GET",
        "create" | "post" => "POST",
        "update" | "put" => "PUT",
        "patch" if apply => "APPLY",
        "patch" => "PATCH",
        "delete" | "deletecollection" => "DELETE",
        _ => "other",
    }
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Counts and times a request; `verb` is its [`reported_verb`].
    pub fn observe(&self, info: &RequestInfo, verb: &str, code: u16, elapsed: Duration) {
        let labels = format!(
            "component=\"apiserver\",dry_run=\"\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
            info.api_group,
            info.resource,
            scope(info),
            info.subresource,
            verb,
            info.api_version,
        );
        let mut inner = self.lock();
        let series = inner.requests.entry(labels).or_default();
        match series.codes.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += 1,
            None => series.codes.push((code, 1)),
        }
        if info.verb != "watch" {
            let h = &mut series.latency;
            if h.counts.is_empty() {
                h.counts = vec![0; BUCKETS.len()];
            }
            let secs = elapsed.as_secs_f64();
            for (i, b) in BUCKETS.iter().enumerate() {
                if secs <= *b {
                    h.counts[i] += 1;
                }
            }
            h.sum += secs;
            h.count += 1;
        }
    }

    pub fn watch_started(&self, info: &ResourceInfo) {
        *self
            .lock()
            .watches
            .entry((info.group.clone(), info.version.clone(), info.kind.clone()))
            .or_default() += 1;
    }

    pub fn watch_ended(&self, info: &ResourceInfo) {
        *self
            .lock()
            .watches
            .entry((info.group.clone(), info.version.clone(), info.kind.clone()))
            .or_default() -= 1;
    }

    /// Appends another component's metrics to the exposition.
    pub fn add_source(&self, source: Source) {
        match self.sources.lock() {
            Ok(mut g) => g.push(source),
            Err(p) => p.into_inner().push(source),
        }
    }

    fn sources_text(&self) -> String {
        let sources = match self.sources.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        sources.iter().map(|s| s()).collect()
    }

    /// The exposition text.
    pub fn render(&self, registry: &Registry) -> String {
        let mut out = self.sources_text();
        let inner = self.lock();
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        let mut series: Vec<(&String, &Series)> = inner.requests.iter().collect();
        series.sort_unstable_by_key(|(labels, _)| *labels);
        for (labels, s) in &series {
            let mut codes = s.codes.clone();
            codes.sort_unstable();
            for (code, n) in codes {
                out.push_str(&format!(
                    "apiserver_request_total{{code=\"{code}\",{labels}}} {n}\n"
                ));
            }
        }
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        for (labels, h) in series.iter().map(|(l, s)| (l, &s.latency)) {
            if h.count == 0 {
                continue;
            }
            for (i, b) in BUCKETS.iter().enumerate() {
                out.push_str(&format!(
                    "apiserver_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} {}\n",
                    h.counts.get(i).copied().unwrap_or(0)
                ));
            }
            out.push_str(&format!(
                "apiserver_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\n",
                h.count
            ));
            out.push_str(&format!(
                "apiserver_request_duration_seconds_sum{{{labels}}} {}\n",
                h.sum
            ));
            out.push_str(&format!(
                "apiserver_request_duration_seconds_count{{{labels}}} {}\n",
                h.count
            ));
        }
        out.push_str("# HELP apiserver_longrunning_requests Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component.\n# TYPE apiserver_longrunning_requests gauge\n");
        out.push_str("# HELP apiserver_registered_watchers Number of currently registered watchers for a given resources\n# TYPE apiserver_registered_watchers gauge\n");
        for ((group, version, kind), n) in &inner.watches {
            out.push_str(&format!(
                "apiserver_registered_watchers{{group=\"{group}\",kind=\"{kind}\",version=\"{version}\"}} {n}\n"
            ));
        }
        drop(inner);
        out.push_str("# HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind.\n# TYPE apiserver_storage_objects gauge\n");
        let mut seen = std::collections::HashSet::new();
        let mut caches = Vec::new();
        for r in registry.all().iter() {
            if r.info.storage_prefix.is_empty() || !seen.insert(r.info.storage_prefix.clone()) {
                continue;
            }
            if !r.cacher.is_cached() {
                continue;
            }
            let sizes = r.cacher.sizes();
            let resource = r.info.qualified_resource();
            out.push_str(&format!(
                "apiserver_storage_objects{{resource=\"{resource}\"}} {}\n",
                sizes.objects
            ));
            caches.push((resource, sizes));
        }
        for (help, name, get) in [
            (
                "Bytes of current objects (JSON, compressed in big caches, and selector index) in the watch cache.",
                "rkube_watch_cache_object_bytes",
                (|s: &CacheSizes| s.object_bytes) as fn(&CacheSizes) -> usize,
            ),
            (
                "Current objects the watch cache holds uncompressed.",
                "rkube_watch_cache_plain_objects",
                |s| s.plain_objects,
            ),
            (
                "Size of the dictionary the watch cache compresses objects with (0: plain).",
                "rkube_watch_cache_dictionary_bytes",
                |s| s.dict_bytes,
            ),
            (
                "Events in the watch cache's history.",
                "rkube_watch_cache_history_events",
                |s| s.events,
            ),
            (
                "Bytes held by the watch cache's history: objects, their indexes, the events.",
                "rkube_watch_cache_history_bytes",
                |s| s.history_bytes,
            ),
            (
                "Watchers the watch cache feeds.",
                "rkube_watch_cache_watchers",
                |s| s.watchers,
            ),
            (
                "Messages queued in the watch cache for its watchers.",
                "rkube_watch_cache_queued_messages",
                |s| s.queued,
            ),
        ] {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
            for (resource, sizes) in &caches {
                out.push_str(&format!(
                    "{name}{{resource=\"{resource}\"}} {}\n",
                    get(sizes)
                ));
            }
        }
        let (versions, bytes) = crate::registry::cache::live_versions();
        for (help, name, value) in [
            (
                "Cached object versions alive anywhere in the process (caches, histories, watch queues, responses being written).",
                "rkube_watch_cache_live_versions",
                versions,
            ),
            (
                "Bytes of the bodies of the cached object versions alive in the process.",
                "rkube_watch_cache_live_body_bytes",
                bytes,
            ),
        ] {
            gauge(&mut out, name, help, value);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::*;

    fn reported(method: Method, path: &str, query: &[(&str, &str)], apply: bool) -> &'static str {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        reported_verb(&RequestInfo::parse(&method, path, &query), apply)
    }

    #[test]
    fn verbs_are_reported_as_upstreams_clean_verb() {
        let pods = "/api/v1/namespaces/default/pods";
        let pod = "/api/v1/namespaces/default/pods/p";
        for (method, path, query, apply, want) in [
            (Method::POST, pods, &[][..], false, "POST"),
            (Method::GET, pods, &[], false, "LIST"),
            (Method::GET, pods, &[("watch", "true")], false, "WATCH"),
            (Method::GET, pod, &[], false, "GET"),
            (Method::HEAD, pod, &[], false, "GET"),
            (Method::PUT, pod, &[], false, "PUT"),
            (Method::PATCH, pod, &[], false, "PATCH"),
            (Method::PATCH, pod, &[], true, "APPLY"),
            (Method::DELETE, pod, &[], false, "DELETE"),
            (Method::DELETE, pods, &[], false, "DELETE"),
            (
                Method::POST,
                "/api/v1/namespaces/default/pods/p/binding",
                &[],
                false,
                "POST",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/default/pods/p/exec",
                &[],
                false,
                "CONNECT",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/default/pods/p/log",
                &[],
                false,
                "CONNECT",
            ),
            (Method::GET, "/healthz", &[], false, "GET"),
            (Method::OPTIONS, "/healthz", &[], false, "other"),
        ] {
            assert_eq!(
                reported(method.clone(), path, query, apply),
                want,
                "{method} {path}"
            );
        }
    }
}
