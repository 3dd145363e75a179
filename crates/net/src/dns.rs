//! A pod's DNS settings, as upstream kubelet's `pkg/kubelet/network/dns` forms them: the
//! nameservers, search paths and options the runtime writes into the pod's resolv.conf
//! (CRI `DNSConfig`).
//!
//! - `ClusterFirst` (not host network) and `ClusterFirstWithHostNet`: the cluster DNS
//!   servers only, searches `<ns>.svc.<domain> svc.<domain> <domain>` then the host's,
//!   options `ndots:5`. Without cluster DNS servers: as `Default`, with a
//!   `MissingClusterDNS` warning.
//! - `ClusterFirst` with host network, and `Default`: the host's resolv.conf.
//! - `None`: nothing but the pod's `dnsConfig`.
//!
//! Then the pod's `dnsConfig` is merged (nameservers and searches appended without
//! duplicates, options overriding by name) and the result cut to upstream's limits
//! (3 nameservers; 32 search paths, none over 253 characters, 2048 characters in all),
//! each cut reported as a `DNSConfigForming` warning.

use std::net::IpAddr;

use crate::Error;

/// `validation.MaxDNSNameservers`.
pub const MAX_NAMESERVERS: usize = 3;
/// `validation.MaxDNSSearchPathsExpanded` (ExpandedDNSConfig is GA).
pub const MAX_SEARCH_PATHS: usize = 32;
/// `validation.MaxDNSSearchListCharsExpanded`.
pub const MAX_SEARCH_LIST_CHARS: usize = 2048;
/// `DNS1123SubdomainMaxLength`: longer search paths make some resolvers abort.
pub const MAX_SEARCH_PATH_LEN: usize = 253;
/// Upstream's `maxResolveConfLength` (10 MiB): a longer host resolv.conf is refused.
pub const MAX_RESOLV_CONF_LEN: usize = 10 << 20;

/// The parsed lines of a resolv.conf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvConf {
    /// `nameserver` lines, accumulated.
    pub servers: Vec<String>,
    /// The last `search` line (trailing dots removed, `.` dropped).
    pub searches: Vec<String>,
    /// The last `options` line, one entry per option.
    pub options: Vec<String>,
}

/// Parses a resolv.conf as upstream's `parseResolvConf`: `#` comment lines skipped;
/// nameservers accumulate; the last `search` and `options` lines win. A `nameserver`
/// line without an address is an error (as upstream, which then fails the pod).
pub fn parse_resolv_conf(text: &str) -> Result<ResolvConf, Error> {
    if text.len() > MAX_RESOLV_CONF_LEN {
        return Err(Error::Invalid(format!(
            "resolv.conf is longer than {MAX_RESOLV_CONF_LEN} bytes"
        )));
    }
    let mut rc = ResolvConf::default();
    let mut errors = Vec::new();
    for line in text.split('\n') {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [] => {}
            ["nameserver", server, ..] => rc.servers.push((*server).to_string()),
            ["nameserver"] => errors.push("nameserver list is empty ".to_string()),
            ["search", rest @ ..] => {
                rc.searches = rest
                    .iter()
                    .filter(|s| **s != ".")
                    .map(|s| s.strip_suffix('.').unwrap_or(s).to_string())
                    .collect();
            }
            ["options", rest @ ..] => {
                rc.options = rest.iter().map(|s| (*s).to_string()).collect();
            }
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(rc)
    } else {
        Err(Error::Invalid(aggregate(&errors)))
    }
}

/// utilerrors' aggregate message: one error as is, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A pod's `spec.dnsConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodDnsConfig {
    pub nameservers: Vec<String>,
    pub searches: Vec<String>,
    /// `(name, value)` per option.
    pub options: Vec<(String, Option<String>)>,
}

/// Everything a pod's DNS settings depend on.
#[derive(Debug, Clone, Copy)]
pub struct DnsInputs<'a> {
    /// The pod's namespace.
    pub namespace: &'a str,
    /// `spec.dnsPolicy` (`ClusterFirst`, `ClusterFirstWithHostNet`, `Default`, `None`).
    pub dns_policy: &'a str,
    /// `spec.hostNetwork`.
    pub host_network: bool,
    /// `spec.dnsConfig`.
    pub dns_config: Option<&'a PodDnsConfig>,
    /// The kubelet's `clusterDNS`.
    pub cluster_dns: &'a [IpAddr],
    /// The kubelet's `clusterDomain` (may be empty).
    pub cluster_domain: &'a str,
    /// The text of the kubelet's `resolvConf`; `None` when it is configured as `""`
    /// (then host-DNS pods get `127.0.0.1`/`::1` per node IP and search `.`).
    pub resolv_conf: Option<&'a str>,
    /// The node's IPs (only used when `resolv_conf` is `None`).
    pub node_ips: &'a [IpAddr],
}

/// Something the caller should record as a Warning event on the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsWarning {
    /// `DNSConfigForming` or `MissingClusterDNS`.
    pub reason: &'static str,
    pub message: String,
}

/// A pod's DNS settings (CRI `DNSConfig`), and the warnings forming them gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsSettings {
    pub servers: Vec<String>,
    pub searches: Vec<String>,
    pub options: Vec<String>,
    pub warnings: Vec<DnsWarning>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DnsType {
    Cluster,
    Host,
    None,
}

/// `getPodDNSType`: an unknown policy is treated as `ClusterFirst` (the API server
/// rejects them, so this does not happen).
fn dns_type(policy: &str, host_network: bool) -> DnsType {
    match policy {
        "None" => DnsType::None,
        "ClusterFirstWithHostNet" => DnsType::Cluster,
        "ClusterFirst" if !host_network => DnsType::Cluster,
        "ClusterFirst" | "Default" => DnsType::Host,
        other => {
            tracing::error!(
                policy = other,
                "invalid DNSPolicy; falling back to ClusterFirst"
            );
            DnsType::Cluster
        }
    }
}

fn omit_duplicates(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for s in items {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// `mergeDNSOptions`: options by name, the pod's overriding. Upstream goes through a Go
/// map (random order); here the first appearance of a name keeps its place.
fn merge_options(existing: &[String], pod: &[(String, Option<String>)]) -> Vec<String> {
    let mut merged: Vec<(String, String)> = Vec::new();
    let mut set = |name: &str, value: &str| match merged.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) => *v = value.to_string(),
        None => merged.push((name.to_string(), value.to_string())),
    };
    for op in existing {
        match op.split_once(':') {
            Some((name, value)) => set(name, value),
            None => set(op, ""),
        }
    }
    for (name, value) in pod {
        set(name, value.as_deref().unwrap_or(""));
    }
    merged
        .into_iter()
        .map(|(n, v)| if v.is_empty() { n } else { format!("{n}:{v}") })
        .collect()
}

/// `formDNSSearchFitsLimits`.
fn fit_searches(mut searches: Vec<String>, warnings: &mut Vec<DnsWarning>) -> Vec<String> {
    let mut exceeded = false;
    if searches.len() > MAX_SEARCH_PATHS {
        searches.truncate(MAX_SEARCH_PATHS);
        exceeded = true;
    }
    let before = searches.len();
    searches.retain(|s| s.len() <= MAX_SEARCH_PATH_LEN);
    exceeded |= searches.len() != before;
    let line_len = searches.join(" ").len();
    if line_len > MAX_SEARCH_LIST_CHARS {
        let mut cut_len = 0;
        let mut cut_num = 0;
        for s in searches.iter().rev() {
            cut_len += s.len() + 1;
            cut_num += 1;
            if line_len.saturating_sub(cut_len) <= MAX_SEARCH_LIST_CHARS {
                break;
            }
        }
        searches.truncate(searches.len() - cut_num);
        exceeded = true;
    }
    if exceeded {
        let message = format!(
            "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: {}",
            searches.join(" ")
        );
        tracing::warn!(%message, "search line limits exceeded");
        warnings.push(DnsWarning {
            reason: "DNSConfigForming",
            message,
        });
    }
    searches
}

/// `formDNSNameserversFitsLimits`.
fn fit_servers(mut servers: Vec<String>, warnings: &mut Vec<DnsWarning>) -> Vec<String> {
    if servers.len() > MAX_NAMESERVERS {
        servers.truncate(MAX_NAMESERVERS);
        let message = format!(
            "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: {}",
            servers.join(" ")
        );
        tracing::warn!(%message, "nameserver limits exceeded");
        warnings.push(DnsWarning {
            reason: "DNSConfigForming",
            message,
        });
    }
    servers
}

/// The pod's DNS settings (upstream's `GetPodDNS`). Fails only when the host
/// resolv.conf cannot be parsed.
pub fn pod_dns(inputs: &DnsInputs<'_>) -> Result<DnsSettings, Error> {
    let host = match inputs.resolv_conf {
        Some(text) => parse_resolv_conf(text)?,
        None => ResolvConf::default(),
    };
    let mut warnings = Vec::new();
    let (mut servers, mut searches, mut options) = (host.servers, host.searches, host.options);
    let mut kind = dns_type(inputs.dns_policy, inputs.host_network);
    match kind {
        DnsType::None => {
            servers.clear();
            searches.clear();
            options.clear();
        }
        DnsType::Cluster if !inputs.cluster_dns.is_empty() => {
            servers = inputs.cluster_dns.iter().map(IpAddr::to_string).collect();
            if !inputs.cluster_domain.is_empty() {
                let domain = inputs.cluster_domain;
                let mut s = vec![
                    format!("{}.svc.{domain}", inputs.namespace),
                    format!("svc.{domain}"),
                    domain.to_string(),
                ];
                s.append(&mut searches);
                searches = omit_duplicates(s);
            }
            options = vec!["ndots:5".to_string()];
        }
        DnsType::Cluster => {
            warnings.push(DnsWarning {
                reason: "MissingClusterDNS",
                message: "kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy.".to_string(),
            });
            kind = DnsType::Host;
        }
        DnsType::Host => {}
    }
    if kind == DnsType::Host && inputs.resolv_conf.is_none() {
        for ip in inputs.node_ips {
            servers.push(if ip.is_ipv6() { "::1" } else { "127.0.0.1" }.to_string());
        }
        if servers.is_empty() {
            servers.push("127.0.0.1".to_string());
        }
        searches = vec![".".to_string()];
    }
    if let Some(pod) = inputs.dns_config {
        servers.extend(pod.nameservers.iter().cloned());
        servers = omit_duplicates(servers);
        searches.extend(pod.searches.iter().cloned());
        searches = omit_duplicates(searches);
        options = merge_options(&options, &pod.options);
    }
    Ok(DnsSettings {
        servers: fit_servers(servers, &mut warnings),
        searches: fit_searches(searches, &mut warnings),
        options,
        warnings,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parse_resolv_conf_as_upstream() {
        // (text, servers, searches, options, error) — upstream's TestParseResolvConf.
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str], bool);
        let cases: &[Case<'_>] = &[
            ("", &[], &[], &[], false),
            (" ", &[], &[], &[], false),
            ("\n", &[], &[], &[], false),
            ("\t\n\t", &[], &[], &[], false),
            ("#comment\n", &[], &[], &[], false),
            (" #comment\n", &[], &[], &[], false),
            ("#comment\n#comment", &[], &[], &[], false),
            ("#comment\nnameserver", &[], &[], &[], true),
            ("#comment\nnameserver\nsearch", &[], &[], &[], true),
            ("nameserver 1.2.3.4", &["1.2.3.4"], &[], &[], false),
            (" nameserver 1.2.3.4", &["1.2.3.4"], &[], &[], false),
            ("\tnameserver 1.2.3.4", &["1.2.3.4"], &[], &[], false),
            ("nameserver\t1.2.3.4", &["1.2.3.4"], &[], &[], false),
            ("nameserver \t 1.2.3.4", &["1.2.3.4"], &[], &[], false),
            (
                "nameserver 1.2.3.4\nnameserver 5.6.7.8",
                &["1.2.3.4", "5.6.7.8"],
                &[],
                &[],
                false,
            ),
            ("nameserver 1.2.3.4 #comment", &["1.2.3.4"], &[], &[], false),
            ("search ", &[], &[], &[], false),
            ("search .", &[], &[], &[], false),
            ("search foo", &[], &["foo"], &[], false),
            ("search foo bar", &[], &["foo", "bar"], &[], false),
            ("search foo. bar", &[], &["foo", "bar"], &[], false),
            (
                "search foo bar bat\n",
                &[],
                &["foo", "bar", "bat"],
                &[],
                false,
            ),
            ("search foo\nsearch bar", &[], &["bar"], &[], false),
            (
                "nameserver 1.2.3.4\nsearch foo bar",
                &["1.2.3.4"],
                &["foo", "bar"],
                &[],
                false,
            ),
            (
                "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar",
                &["1.2.3.4", "5.6.7.8"],
                &["bar"],
                &[],
                false,
            ),
            (
                "#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment",
                &["1.2.3.4"],
                &["foo"],
                &[],
                false,
            ),
            ("options ", &[], &[], &[], false),
            (
                "options ndots:5 attempts:2",
                &[],
                &[],
                &["ndots:5", "attempts:2"],
                false,
            ),
            (
                "options ndots:1\noptions ndots:5 attempts:3",
                &[],
                &[],
                &["ndots:5", "attempts:3"],
                false,
            ),
            (
                "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4",
                &["1.2.3.4", "5.6.7.8"],
                &["bar"],
                &["ndots:5", "attempts:4"],
                false,
            ),
        ];
        for (text, servers, searches, options, error) in cases {
            match parse_resolv_conf(text) {
                Ok(rc) => {
                    assert!(!error, "{text:?} parsed");
                    assert_eq!(rc.servers, strs(servers), "{text:?}");
                    assert_eq!(rc.searches, strs(searches), "{text:?}");
                    assert_eq!(rc.options, strs(options), "{text:?}");
                }
                Err(e) => {
                    assert!(error, "{text:?}: {e}");
                    assert_eq!(e.to_string(), "nameserver list is empty ");
                }
            }
        }
    }

    const HOST: &str = "nameserver 10.0.0.2\nsearch example.com corp.example.com\noptions edns0\n";

    fn inputs<'a>(policy: &'a str, cluster_dns: &'a [IpAddr]) -> DnsInputs<'a> {
        DnsInputs {
            namespace: "ns1",
            dns_policy: policy,
            host_network: false,
            dns_config: None,
            cluster_dns,
            cluster_domain: "cluster.local",
            resolv_conf: Some(HOST),
            node_ips: &[],
        }
    }

    const DNS: &[IpAddr] = &[IpAddr::V4(std::net::Ipv4Addr::new(10, 43, 0, 10))];

    #[test]
    fn cluster_first() {
        let s = pod_dns(&inputs("ClusterFirst", DNS)).unwrap();
        assert_eq!(s.servers, strs(&["10.43.0.10"]));
        assert_eq!(
            s.searches,
            strs(&[
                "ns1.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "example.com",
                "corp.example.com"
            ])
        );
        assert_eq!(s.options, strs(&["ndots:5"]));
        assert!(s.warnings.is_empty());
        // Same with host network and WithHostNet.
        let mut i = inputs("ClusterFirstWithHostNet", DNS);
        i.host_network = true;
        assert_eq!(pod_dns(&i).unwrap(), s);
        // Without a cluster domain: the host's searches only.
        let mut i = inputs("ClusterFirst", DNS);
        i.cluster_domain = "";
        let s = pod_dns(&i).unwrap();
        assert_eq!(s.searches, strs(&["example.com", "corp.example.com"]));
        // Duplicates of the host's searches are dropped.
        let host = "search cluster.local other\n";
        let mut i = inputs("ClusterFirst", DNS);
        i.resolv_conf = Some(host);
        assert_eq!(
            pod_dns(&i).unwrap().searches,
            strs(&[
                "ns1.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "other"
            ])
        );
    }

    #[test]
    fn host_dns_and_fallbacks() {
        let host = DnsSettings {
            servers: strs(&["10.0.0.2"]),
            searches: strs(&["example.com", "corp.example.com"]),
            options: strs(&["edns0"]),
            warnings: vec![],
        };
        assert_eq!(pod_dns(&inputs("Default", DNS)).unwrap(), host);
        // ClusterFirst on the host network falls back to Default.
        let mut i = inputs("ClusterFirst", DNS);
        i.host_network = true;
        assert_eq!(pod_dns(&i).unwrap(), host);
        // ClusterFirst without cluster DNS: Default, with a warning.
        let s = pod_dns(&inputs("ClusterFirst", &[])).unwrap();
        assert_eq!(s.servers, host.servers);
        assert_eq!(s.warnings.len(), 1);
        assert_eq!(s.warnings[0].reason, "MissingClusterDNS");
        // No resolv.conf configured: localhost per node IP, search ".".
        let mut i = inputs("Default", DNS);
        i.resolv_conf = None;
        let ips: Vec<IpAddr> = vec!["10.0.0.5".parse().unwrap(), "fd00::5".parse().unwrap()];
        i.node_ips = &ips;
        let s = pod_dns(&i).unwrap();
        assert_eq!(s.servers, strs(&["127.0.0.1", "::1"]));
        assert_eq!(s.searches, strs(&["."]));
        i.node_ips = &[];
        assert_eq!(pod_dns(&i).unwrap().servers, strs(&["127.0.0.1"]));
        // A broken host resolv.conf fails the pod.
        let mut i = inputs("Default", DNS);
        i.resolv_conf = Some("nameserver\n");
        assert!(pod_dns(&i).is_err());
    }

    #[test]
    fn none_and_dns_config_merge() {
        let cfg = PodDnsConfig {
            nameservers: strs(&["203.0.113.1", "10.43.0.10"]),
            searches: strs(&["my.dns.search.suffix", "svc.cluster.local"]),
            options: vec![("ndots".into(), Some("2".into())), ("edns0".into(), None)],
        };
        let mut i = inputs("None", DNS);
        i.dns_config = Some(&cfg);
        let s = pod_dns(&i).unwrap();
        assert_eq!(s.servers, strs(&["203.0.113.1", "10.43.0.10"]));
        assert_eq!(
            s.searches,
            strs(&["my.dns.search.suffix", "svc.cluster.local"])
        );
        assert_eq!(s.options, strs(&["ndots:2", "edns0"]));
        // None without dnsConfig is empty.
        let s = pod_dns(&inputs("None", DNS)).unwrap();
        assert_eq!(s, DnsSettings::default());
        // ClusterFirst + dnsConfig: appended, deduplicated, options overridden.
        let mut i = inputs("ClusterFirst", DNS);
        i.dns_config = Some(&cfg);
        let s = pod_dns(&i).unwrap();
        assert_eq!(s.servers, strs(&["10.43.0.10", "203.0.113.1"]));
        assert_eq!(
            s.searches,
            strs(&[
                "ns1.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "example.com",
                "corp.example.com",
                "my.dns.search.suffix"
            ])
        );
        assert_eq!(s.options, strs(&["ndots:2", "edns0"]));
    }

    #[test]
    fn merge_options_overrides_by_name() {
        let merged = merge_options(
            &strs(&["ndots:5", "attempts:2", "rotate"]),
            &[
                ("attempts".into(), Some("3".into())),
                ("rotate".into(), Some("1".into())),
                ("timeout".into(), None),
            ],
        );
        assert_eq!(
            merged,
            strs(&["ndots:5", "attempts:3", "rotate:1", "timeout"])
        );
    }

    #[test]
    fn limits() {
        // Nameservers: 3.
        let cfg = PodDnsConfig {
            nameservers: strs(&["1.1.1.1", "2.2.2.2", "3.3.3.3"]),
            ..Default::default()
        };
        let mut i = inputs("ClusterFirst", DNS);
        i.dns_config = Some(&cfg);
        let s = pod_dns(&i).unwrap();
        assert_eq!(s.servers, strs(&["10.43.0.10", "1.1.1.1", "2.2.2.2"]));
        assert_eq!(s.warnings.len(), 1);
        assert_eq!(
            s.warnings[0].message,
            "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.43.0.10 1.1.1.1 2.2.2.2"
        );

        let mut w = Vec::new();
        // Count: 32.
        let many: Vec<String> = (0..40).map(|n| format!("s{n}.example")).collect();
        let got = fit_searches(many.clone(), &mut w);
        assert_eq!(got, many[..32].to_vec());
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].reason, "DNSConfigForming");
        // Over-long paths are dropped.
        let mut w = Vec::new();
        let long = "a".repeat(254);
        let got = fit_searches(vec!["x".into(), long, "y".into()], &mut w);
        assert_eq!(got, strs(&["x", "y"]));
        assert_eq!(w.len(), 1);
        // Total length: 2048, cut from the end.
        let mut w = Vec::new();
        let paths: Vec<String> = (0..10).map(|n| format!("{n}{}", "b".repeat(249))).collect();
        let got = fit_searches(paths.clone(), &mut w);
        // 8 paths of 250 plus 7 spaces = 2007 ≤ 2048; 9 would be 2258.
        assert_eq!(got, paths[..8].to_vec());
        assert!(w[0].message.starts_with(
            "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: 0b"
        ));
        // Within limits: untouched, no warning.
        let mut w = Vec::new();
        assert_eq!(fit_searches(strs(&["a", "b"]), &mut w), strs(&["a", "b"]));
        assert!(w.is_empty());
    }
}
