//! Leader election settings of the controller manager and the scheduler, as upstream's
//! `LeaderElectionConfiguration` (component-base): the `--leader-elect*` flags, and for
//! the scheduler the `leaderElection` section of its configuration file, with the flags
//! given on the command line overriding the file (kube-scheduler's
//! `ApplyLeaderElectionTo`).

use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use super::server::parse_duration;

/// The `--leader-elect*` flags; each one left out keeps the file's value or the default.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LeaderElectionFlags {
    /// Run only while holding the leader Lease (`kube-system/kube-controller-manager` or
    /// `kube-system/kube-scheduler` unless named otherwise), so several can run for HA
    /// [default: true].
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: Option<bool>,
    /// How long a follower waits after the leader's last renewal before taking over
    /// [default: 15s].
    #[arg(long, value_parser = parse_duration)]
    pub leader_elect_lease_duration: Option<Duration>,
    /// How long the leader keeps trying to renew before it gives leadership up
    /// [default: 10s].
    #[arg(long, value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Option<Duration>,
    /// The wait between tries to acquire or renew [default: 2s].
    #[arg(long, value_parser = parse_duration)]
    pub leader_elect_retry_period: Option<Duration>,
    /// The kind of lock object; only `leases` exists now [default: leases].
    #[arg(long)]
    pub leader_elect_resource_lock: Option<String>,
    /// The name of the Lease [default: the component's name].
    #[arg(long)]
    pub leader_elect_resource_name: Option<String>,
    /// The namespace of the Lease [default: kube-system].
    #[arg(long)]
    pub leader_elect_resource_namespace: Option<String>,
}

/// A component's leader election as it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElection {
    pub leader_elect: bool,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    pub resource_lock: String,
    pub resource_name: String,
    pub resource_namespace: String,
    /// The component (`kube-scheduler`, `kube-controller-manager`): the name its
    /// `leader_election_*` series carry, whatever Lease it locks.
    pub component: String,
}

impl LeaderElection {
    /// Upstream's defaults for `component`: elected, 15 s / 10 s / 2 s, the Lease
    /// `kube-system/<component>`.
    pub fn defaults(component: &str) -> LeaderElection {
        use runtime::leaderelection::{
            DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD,
        };
        LeaderElection {
            leader_elect: true,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            resource_lock: "leases".into(),
            resource_name: component.into(),
            resource_namespace: "kube-system".into(),
            component: component.into(),
        }
    }

    /// The settings of `component`: a configuration file's `leaderElection` section (v1
    /// field names; what it leaves out defaulted) with the flags given overriding it,
    /// checked as upstream checks them.
    pub fn resolve(
        component: &str,
        section: Option<&Value>,
        flags: &LeaderElectionFlags,
    ) -> anyhow::Result<LeaderElection> {
        let mut le = LeaderElection::defaults(component);
        if let Some(section) = section.filter(|s| !s.is_null()) {
            le.read_section(section)?;
        }
        le.apply(flags);
        le.check()?;
        Ok(le)
    }

    fn read_section(&mut self, section: &Value) -> anyhow::Result<()> {
        let Some(fields) = section.as_object() else {
            anyhow::bail!("leaderElection: must be an object");
        };
        for (key, value) in fields {
            let field = format!("leaderElection.{key}");
            let text = || {
                value
                    .as_str()
                    .map(str::to_string)
                    .with_context(|| format!("{field}: must be a string"))
            };
            let duration = || -> anyhow::Result<Duration> {
                let t = text()?;
                parse_duration(&t).map_err(|e| anyhow::anyhow!("{field}: {t:?}: {e}"))
            };
            match key.as_str() {
                "leaderElect" => {
                    self.leader_elect = value
                        .as_bool()
                        .with_context(|| format!("{field}: must be a boolean"))?;
                }
                "leaseDuration" => self.lease_duration = duration()?,
                "renewDeadline" => self.renew_deadline = duration()?,
                "retryPeriod" => self.retry_period = duration()?,
                "resourceLock" => self.resource_lock = text()?,
                "resourceName" => self.resource_name = text()?,
                "resourceNamespace" => self.resource_namespace = text()?,
                _ => anyhow::bail!("{field}: unknown field"),
            }
        }
        Ok(())
    }

    fn apply(&mut self, flags: &LeaderElectionFlags) {
        if let Some(v) = flags.leader_elect {
            self.leader_elect = v;
        }
        if let Some(v) = flags.leader_elect_lease_duration {
            self.lease_duration = v;
        }
        if let Some(v) = flags.leader_elect_renew_deadline {
            self.renew_deadline = v;
        }
        if let Some(v) = flags.leader_elect_retry_period {
            self.retry_period = v;
        }
        for (to, from) in [
            (&mut self.resource_lock, &flags.leader_elect_resource_lock),
            (&mut self.resource_name, &flags.leader_elect_resource_name),
            (
                &mut self.resource_namespace,
                &flags.leader_elect_resource_namespace,
            ),
        ] {
            if let Some(v) = from {
                to.clone_from(v);
            }
        }
    }

    /// Upstream's `ValidateLeaderElectionConfiguration` (nothing is checked when not
    /// elected), then what creating the lock and the elector refuses.
    fn check(&self) -> anyhow::Result<()> {
        if !self.leader_elect {
            return Ok(());
        }
        let d = api::gofmt::go_duration;
        let mut errs = Vec::new();
        for (field, value) in [
            ("leaseDuration", self.lease_duration),
            ("renewDeadline", self.renew_deadline),
            ("retryPeriod", self.retry_period),
        ] {
            if value.is_zero() {
                errs.push(format!(
                    "leaderElection.{field}: Invalid value: {:?}: must be greater than zero",
                    d(value)
                ));
            }
        }
        if self.lease_duration <= self.renew_deadline {
            errs.push(format!(
                "leaderElection.leaseDuration: Invalid value: {:?}: LeaseDuration must be greater than RenewDeadline",
                d(self.renew_deadline)
            ));
        }
        for (field, value) in [
            ("resourceLock", &self.resource_lock),
            ("resourceNamespace", &self.resource_namespace),
            ("resourceName", &self.resource_name),
        ] {
            if value.is_empty() {
                errs.push(format!(
                    "leaderElection.{field}: Invalid value: \"\": {field} is required"
                ));
            }
        }
        if !errs.is_empty() {
            anyhow::bail!("{}", errs.join(", "));
        }
        match self.resource_lock.as_str() {
            "leases" => {}
            removed @ ("endpoints" | "configmaps" | "endpointsleases" | "configmapsleases") => {
                anyhow::bail!(
                    "couldn't create resource lock: {removed} lock is removed, migrate to leases"
                )
            }
            other => anyhow::bail!("couldn't create resource lock: Invalid lock-type {other}"),
        }
        // (Any identity: each candidate gets its own when it runs.)
        self.elector_config("candidate".into())
            .validate()
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// The elector's configuration for the candidate `identity`.
    pub fn elector_config(
        &self,
        identity: String,
    ) -> runtime::leaderelection::LeaderElectionConfig {
        let mut c = runtime::leaderelection::LeaderElectionConfig::new(
            self.resource_namespace.as_str(),
            self.resource_name.as_str(),
            identity,
        );
        c.metrics_name.clone_from(&self.component);
        c.lease_duration = self.lease_duration;
        c.renew_deadline = self.renew_deadline;
        c.retry_period = self.retry_period;
        c
    }

    /// `leaderElection` as `/configz` shows it (v1 field names).
    pub fn to_json(&self) -> Value {
        let d = api::gofmt::go_duration;
        json!({
            "leaderElect": self.leader_elect,
            "leaseDuration": d(self.lease_duration),
            "renewDeadline": d(self.renew_deadline),
            "retryPeriod": d(self.retry_period),
            "resourceLock": self.resource_lock,
            "resourceName": self.resource_name,
            "resourceNamespace": self.resource_namespace,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn flags(args: &[&str]) -> LeaderElectionFlags {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            le: LeaderElectionFlags,
        }
        let mut all = vec!["x"];
        all.extend_from_slice(args);
        <Cli as clap::Parser>::try_parse_from(all).unwrap().le
    }

    #[test]
    fn defaults_are_upstreams() {
        let le = LeaderElection::resolve("kube-scheduler", None, &flags(&[])).unwrap();
        assert_eq!(le, LeaderElection::defaults("kube-scheduler"));
        assert_eq!(
            le.to_json(),
            json!({"leaderElect": true, "leaseDuration": "15s", "renewDeadline": "10s",
                "retryPeriod": "2s", "resourceLock": "leases", "resourceName": "kube-scheduler",
                "resourceNamespace": "kube-system"})
        );
    }

    #[test]
    fn the_file_is_read_and_flags_given_override_it() {
        let section = json!({"leaseDuration": "30s", "renewDeadline": "20s",
            "resourceName": "sched-lock", "resourceNamespace": "infra"});
        let le = LeaderElection::resolve("kube-scheduler", Some(&section), &flags(&[])).unwrap();
        assert_eq!(le.lease_duration, Duration::from_secs(30));
        assert_eq!(le.renew_deadline, Duration::from_secs(20));
        assert_eq!(le.retry_period, Duration::from_secs(2));
        assert_eq!(
            (le.resource_namespace.as_str(), le.resource_name.as_str()),
            ("infra", "sched-lock")
        );
        // Only the flags given override the file.
        let le = LeaderElection::resolve(
            "kube-scheduler",
            Some(&section),
            &flags(&[
                "--leader-elect-resource-name",
                "other",
                "--leader-elect",
                "false",
            ]),
        )
        .unwrap();
        assert_eq!(le.resource_name, "other");
        assert_eq!(le.resource_namespace, "infra");
        assert!(!le.leader_elect);
        // A bare --leader-elect is true.
        let off = json!({"leaderElect": false});
        assert!(
            LeaderElection::resolve("c", Some(&off), &flags(&["--leader-elect"]))
                .unwrap()
                .leader_elect
        );
        // The elector locks the named Lease and reports under the component's name.
        let c = le.elector_config("me".into());
        assert_eq!((c.namespace.as_str(), c.name.as_str()), ("infra", "other"));
        assert_eq!(c.metrics_name, "kube-scheduler");
        assert_eq!(c.lease_duration, Duration::from_secs(30));
    }

    #[test]
    fn bad_settings_are_refused_with_upstreams_messages() {
        let err = |section: Value, args: &[&str]| {
            LeaderElection::resolve("kube-scheduler", Some(&section), &flags(args))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"leaseDuration": "10s"}), &[]),
            "leaderElection.leaseDuration: Invalid value: \"10s\": LeaseDuration must be greater than RenewDeadline"
        );
        assert_eq!(
            err(json!({"retryPeriod": "0s"}), &[]),
            "leaderElection.retryPeriod: Invalid value: \"0s\": must be greater than zero"
        );
        assert_eq!(
            err(json!({"resourceName": ""}), &[]),
            "leaderElection.resourceName: Invalid value: \"\": resourceName is required"
        );
        assert_eq!(
            err(json!({}), &["--leader-elect-resource-lock", "endpoints"]),
            "couldn't create resource lock: endpoints lock is removed, migrate to leases"
        );
        assert_eq!(
            err(json!({"resourceLock": "nope"}), &[]),
            "couldn't create resource lock: Invalid lock-type nope"
        );
        assert!(
            err(json!({"leaseDuration": "soon"}), &[])
                .starts_with("leaderElection.leaseDuration: \"soon\"")
        );
        assert_eq!(
            err(json!({"leader": true}), &[]),
            "leaderElection.leader: unknown field"
        );
        // The elector's own rule: the renew deadline beyond the retry period's jitter.
        assert!(
            err(json!({"renewDeadline": "2s"}), &[]).contains("renewDeadline"),
            "{}",
            err(json!({"renewDeadline": "2s"}), &[])
        );
        // Not elected: nothing is checked.
        assert!(
            LeaderElection::resolve(
                "c",
                Some(&json!({"leaderElect": false, "resourceName": ""})),
                &flags(&[])
            )
            .is_ok()
        );
    }
}
