//! Health endpoints (`/healthz`, `/livez`, `/readyz`) answered as upstream's `healthz`
//! package answers them: the endpoint runs its named checks (but those `?exclude=`d) and
//! answers `ok`, or with `?verbose` one line per check; any failure is a 500 listing every
//! check, the failures' reasons withheld (the endpoint is public; the reasons are for the
//! log). Each check is also served alone under the endpoint (`/healthz/etcd`).
//!
//! The checks themselves are the caller's; this module only names, selects and renders,
//! and keeps upstream's health-check SLIs (`k8s.io/component-base/metrics/prometheus/slis`,
//! served on `/metrics/slis`): each check an endpoint runs sets
//! `kubernetes_healthcheck{name,type}` (1 passed, 0 failed) and counts in
//! `kubernetes_healthchecks_total{name,status,type}`; `type` is the endpoint. As upstream's
//! registry they are process-wide ([`render_slis`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{LazyLock, Mutex};

/// A named check of a health endpoint. `group` lets one `?exclude=` skip several checks
/// (upstream's `GroupedHealthChecker`, e.g. the `etcd` group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub group: Option<String>,
}

impl Check {
    pub fn named(name: impl Into<String>) -> Self {
        Check {
            name: name.into(),
            group: None,
        }
    }

    pub fn grouped(name: impl Into<String>, group: impl Into<String>) -> Self {
        Check {
            name: name.into(),
            group: Some(group.into()),
        }
    }
}

/// The check every endpoint without checks of its own has (upstream's `PingHealthz`).
pub const PING: &str = "ping";

/// The check of a leader-elected component (upstream's `HealthzAdaptor`).
pub const LEADER_ELECTION: &str = "leaderElection";

/// The readiness check failing once the process shuts down (upstream's `shutdown`).
pub const SHUTDOWN: &str = "shutdown";

/// What a request asks of an endpoint: `?verbose`, and the checks `?exclude=`d.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub verbose: bool,
    pub exclude: BTreeSet<String>,
}

impl Query {
    /// From a query's decoded pairs: `verbose` present (any value), every `exclude` value.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut q = Query::default();
        for (k, v) in pairs {
            match k {
                "verbose" => q.verbose = true,
                "exclude" => {
                    q.exclude.insert(v.to_string());
                }
                _ => {}
            }
        }
        q
    }
}

/// An endpoint's answer: status code and `text/plain` body; `log` holds the failed
/// checks' reasons (for the component's log, never the body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    pub log: Option<String>,
}

/// A request's target among a component's health endpoints: the endpoint (`healthz`)
/// and, under it, one check (`/healthz/etcd`; names may hold `/`, as `poststarthook/…`).
pub fn route<'a>(path: &'a str, endpoints: &[&str]) -> Option<(&'a str, Option<&'a str>)> {
    let rest = path.strip_prefix('/')?;
    let (endpoint, check) = match rest.split_once('/') {
        Some((e, c)) => (e, Some(c)),
        None => (rest, None),
    };
    endpoints
        .contains(&endpoint)
        .then_some((&rest[..endpoint.len()], check))
}

/// The checks an endpoint with `checks` runs: its own, else `ping` alone (upstream
/// installs the ping check when an endpoint is given none).
pub fn or_ping(checks: Vec<Check>) -> Vec<Check> {
    if checks.is_empty() {
        vec![Check::named(PING)]
    } else {
        checks
    }
}

/// The answer of endpoint `name` (`healthz`) running `checks` for `query`: `run(i)` runs
/// check `i` (not called for excluded checks).
pub async fn answer<F, Fut>(name: &str, checks: &[Check], query: &Query, mut run: F) -> Answer
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut unknown: BTreeSet<&str> = query.exclude.iter().map(String::as_str).collect();
    let mut lines = String::new();
    let mut log = String::new();
    let mut failed = false;
    for (i, check) in checks.iter().enumerate() {
        if query.exclude.contains(&check.name) {
            unknown.remove(check.name.as_str());
            lines.push_str(&format!("[+]{} excluded: ok\n", check.name));
            continue;
        }
        if let Some(group) = check.group.as_ref().filter(|g| query.exclude.contains(*g)) {
            unknown.remove(group.as_str());
            lines.push_str(&format!("[+]{} excluded with {group}: ok\n", check.name));
            continue;
        }
        let result = run(i).await;
        observe(&check.name, name, result.is_ok());
        match result {
            Ok(()) => lines.push_str(&format!("[+]{} ok\n", check.name)),
            Err(reason) => {
                failed = true;
                lines.push_str(&format!("[-]{} failed: reason withheld\n", check.name));
                log.push_str(&format!("[-]{} failed: {reason}\n", check.name));
            }
        }
    }
    if !unknown.is_empty() {
        let quoted: Vec<String> = unknown.iter().map(|n| format!("{n:?}")).collect();
        lines.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    if failed {
        // Go's `http.Error` ends the body with a newline.
        return Answer {
            status: 500,
            body: format!("{lines}{name} check failed\n"),
            log: Some(log),
        };
    }
    let body = if query.verbose {
        format!("{lines}{name} check passed\n")
    } else {
        "ok".to_string()
    };
    Answer {
        status: 200,
        body,
        log: None,
    }
}

/// The answer to a request for endpoint `name` with `checks`: every check for `query`
/// (`one` is `None`), or the check named `one` alone; `None` when no check has that name
/// (a 404). `run(i)` runs check `i`.
pub async fn respond<F, Fut>(
    name: &str,
    checks: &[Check],
    one: Option<&str>,
    query: &Query,
    mut run: F,
) -> Option<Answer>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    match one {
        None => Some(answer(name, checks, query, run).await),
        Some(one) => {
            let i = checks.iter().position(|c| c.name == one)?;
            Some(single(run(i).await))
        }
    }
}

/// The answer of one check served alone (`/healthz/etcd`): `ok`, or a 500 with the
/// reason (this path is not public: whoever reads it was authorized to).
pub fn single(result: Result<(), String>) -> Answer {
    match result {
        Ok(()) => Answer {
            status: 200,
            body: "ok".into(),
            log: None,
        },
        Err(reason) => Answer {
            status: 500,
            body: format!("internal server error: {reason}\n"),
            log: None,
        },
    }
}

/// One check's SLI series: its last result and how many runs passed and failed.
#[derive(Clone, Copy, Default)]
struct Sli {
    healthy: bool,
    success: u64,
    error: u64,
}

/// `(check, endpoint)` → its series.
static SLIS: LazyLock<Mutex<BTreeMap<(String, String), Sli>>> = LazyLock::new(Mutex::default);

/// Records that check `name` of endpoint `endpoint` ran (upstream's `ObserveHealthcheck`).
fn observe(name: &str, endpoint: &str, ok: bool) {
    let mut slis = SLIS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let sli = slis
        .entry((name.to_string(), endpoint.to_string()))
        .or_default();
    sli.healthy = ok;
    if ok {
        sli.success += 1;
    } else {
        sli.error += 1;
    }
}

/// The health-check SLIs in the Prometheus text format (`/metrics/slis`): nothing until
/// an endpoint has run a check, as upstream's.
pub fn render_slis() -> String {
    let slis = SLIS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if slis.is_empty() {
        return String::new();
    }
    let label = crate::gofmt::label_value;
    let mut out = String::from(
        "# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.\n\
         # TYPE kubernetes_healthcheck gauge\n",
    );
    for ((name, endpoint), sli) in &slis {
        out.push_str(&format!(
            "kubernetes_healthcheck{{name=\"{}\",type=\"{}\"}} {}\n",
            label(name),
            label(endpoint),
            u8::from(sli.healthy)
        ));
    }
    out.push_str(
        "# HELP kubernetes_healthchecks_total [STABLE] This metric records the results of all healthcheck.\n\
         # TYPE kubernetes_healthchecks_total counter\n",
    );
    // Series in the order of their label values (name, status, type); a status never
    // seen has none.
    let mut totals: Vec<(&str, &str, &str, u64)> = slis
        .iter()
        .flat_map(|((name, endpoint), sli)| {
            [("error", sli.error), ("success", sli.success)]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(move |(status, n)| (name.as_str(), status, endpoint.as_str(), n))
        })
        .collect();
    totals.sort_unstable();
    for (name, status, endpoint, n) in totals {
        out.push_str(&format!(
            "kubernetes_healthchecks_total{{name=\"{}\",status=\"{status}\",type=\"{}\"}} {n}\n",
            label(name),
            label(endpoint)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_all(checks: &[Check], query: &Query, fail: &[&str]) -> Answer {
        let fail: Vec<String> = fail.iter().map(|s| s.to_string()).collect();
        let mut ran = Vec::new();
        let answer = block_on(answer("readyz", checks, query, |i| {
            ran.push(checks[i].name.clone());
            let r = if fail.contains(&checks[i].name) {
                Err(format!("{} is down", checks[i].name))
            } else {
                Ok(())
            };
            std::future::ready(r)
        }));
        for name in &ran {
            assert!(!query.exclude.contains(name), "{name} ran though excluded");
        }
        answer
    }

    /// Polls a future that never waits (the checks here are ready at once).
    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => unreachable!("the checks are ready at once"),
        }
    }

    fn checks() -> Vec<Check> {
        vec![
            Check::named(PING),
            Check::grouped("etcd", "etcd"),
            Check::grouped("etcd-readiness", "etcd-readiness"),
            Check::named("informer-sync"),
            Check::named(SHUTDOWN),
        ]
    }

    #[test]
    fn passing_checks_answer_ok_or_list_themselves_when_verbose() {
        let a = run_all(&checks(), &Query::default(), &[]);
        assert_eq!((a.status, a.body.as_str(), a.log), (200, "ok", None));
        let verbose = Query {
            verbose: true,
            ..Query::default()
        };
        let a = run_all(&checks(), &verbose, &[]);
        assert_eq!(
            a.body,
            "[+]ping ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n[+]shutdown ok\nreadyz check passed\n"
        );
    }

    #[test]
    fn each_run_of_a_check_counts_in_the_slis() {
        // An endpoint of its own: the series are process-wide.
        let checks = vec![
            Check::named("up"),
            Check::named("down"),
            Check::named("off"),
        ];
        let query = Query::from_pairs([("exclude", "off")]);
        let run = |i: usize| std::future::ready(if i == 1 { Err("no".into()) } else { Ok(()) });
        for _ in 0..2 {
            block_on(answer("slitest", &checks, &query, run));
        }
        // A check served alone is not counted, as upstream's.
        block_on(respond("slitest", &checks, Some("up"), &query, run));
        let text = render_slis();
        let mine: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("type=\"slitest\""))
            .collect();
        assert_eq!(
            mine,
            [
                "kubernetes_healthcheck{name=\"down\",type=\"slitest\"} 0",
                "kubernetes_healthcheck{name=\"up\",type=\"slitest\"} 1",
                "kubernetes_healthchecks_total{name=\"down\",status=\"error\",type=\"slitest\"} 2",
                "kubernetes_healthchecks_total{name=\"up\",status=\"success\",type=\"slitest\"} 2",
            ]
        );
        assert!(text.starts_with("# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.\n# TYPE kubernetes_healthcheck gauge\n"));
        assert!(text.contains("# TYPE kubernetes_healthchecks_total counter\n"));
    }

    #[test]
    fn a_failure_lists_every_check_withholding_reasons_which_go_to_the_log() {
        let a = run_all(&checks(), &Query::default(), &["etcd", "shutdown"]);
        assert_eq!(a.status, 500);
        assert_eq!(
            a.body,
            "[+]ping ok\n[-]etcd failed: reason withheld\n[+]etcd-readiness ok\n[+]informer-sync ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"
        );
        assert_eq!(
            a.log.as_deref(),
            Some("[-]etcd failed: etcd is down\n[-]shutdown failed: shutdown is down\n")
        );
    }

    #[test]
    fn excluded_checks_do_not_run_by_name_or_group_and_unknown_ones_warn() {
        let q = Query::from_pairs([
            ("exclude", "etcd"),
            ("exclude", "informer-sync"),
            ("exclude", "nope"),
            ("exclude", "also-not"),
            ("verbose", ""),
        ]);
        let a = run_all(&checks(), &q, &["etcd", "informer-sync"]);
        assert_eq!(a.status, 200);
        assert_eq!(
            a.body,
            "[+]ping ok\n[+]etcd excluded: ok\n[+]etcd-readiness ok\n[+]informer-sync excluded: ok\n[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for \"also-not\",\"nope\"\nreadyz check passed\n"
        );
        let grouped = vec![Check::grouped("etcd-override-0", "etcd")];
        let a = run_all(&grouped, &Query::from_pairs([("exclude", "etcd")]), &[]);
        assert_eq!(a.body, "ok");
        let q = Query::from_pairs([("exclude", "etcd"), ("verbose", "1")]);
        assert_eq!(
            run_all(&grouped, &q, &[]).body,
            "[+]etcd-override-0 excluded with etcd: ok\nreadyz check passed\n"
        );
    }

    #[test]
    fn routes_name_the_endpoint_and_the_check_under_it() {
        let eps = ["healthz", "livez", "readyz"];
        assert_eq!(route("/healthz", &eps), Some(("healthz", None)));
        assert_eq!(route("/readyz/etcd", &eps), Some(("readyz", Some("etcd"))));
        assert_eq!(
            route("/livez/poststarthook/x", &eps),
            Some(("livez", Some("poststarthook/x")))
        );
        assert_eq!(route("/healthz/", &eps), Some(("healthz", Some(""))));
        assert_eq!(route("/metrics", &eps), None);
        assert_eq!(route("/readyz", &["healthz"]), None);
        assert_eq!(route("healthz", &eps), None);
    }

    #[test]
    fn a_request_gets_every_check_or_one_by_name_or_nothing() {
        let checks = checks();
        let run = |i: usize| {
            std::future::ready(if checks[i].name == "etcd" {
                Err("etcd is down".to_string())
            } else {
                Ok(())
            })
        };
        let all = block_on(respond("readyz", &checks, None, &Query::default(), run)).unwrap();
        assert_eq!(all.status, 500);
        let one = block_on(respond(
            "readyz",
            &checks,
            Some("etcd"),
            &Query::default(),
            run,
        ));
        assert_eq!(one, Some(single(Err("etcd is down".into()))));
        let ok = block_on(respond(
            "readyz",
            &checks,
            Some("ping"),
            &Query::default(),
            run,
        ));
        assert_eq!(ok.map(|a| a.body), Some("ok".into()));
        assert_eq!(
            block_on(respond(
                "readyz",
                &checks,
                Some("nope"),
                &Query::default(),
                run
            )),
            None
        );
    }

    #[test]
    fn one_check_alone_answers_with_its_reason() {
        assert_eq!(single(Ok(())).body, "ok");
        let a = single(Err("etcd is down".into()));
        assert_eq!(
            (a.status, a.body.as_str()),
            (500, "internal server error: etcd is down\n")
        );
        assert_eq!(or_ping(vec![]), vec![Check::named(PING)]);
    }
}
