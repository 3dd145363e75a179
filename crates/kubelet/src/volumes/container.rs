//! What a container mounts (upstream's `makeMounts` in `kubelet_pods.go` and
//! `kuberuntime_container.go`): its `volumeMounts` resolved against the pod's volumes
//! (`subPath`, `subPathExpr`, read-only, propagation, recursive read-only), the
//! kubelet-managed `/etc/hosts` and the termination-message file.
//!
//! [`container_mounts`] is pure; [`prepare_container_mounts`] does the file-system work
//! just before the container is created (subPath directories, the two managed files).

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use api::gofmt::go_quote;
use cri::v1::MountPropagation;
use k8s_openapi::api::core::v1::{Container, HostAlias, Pod, Volume};

use crate::{Error, PodVolumes};

/// The file upstream writes as a pod's `/etc/hosts`: `pod_dir/etc-hosts`.
pub const ETC_HOSTS_FILE: &str = "etc-hosts";
/// Where the managed hosts file is mounted.
pub const ETC_HOSTS_PATH: &str = "/etc/hosts";
/// The API's default `terminationMessagePath`.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
pub const MANAGED_HOSTS_HEADER: &str = "# Kubernetes-managed hosts file.\n";
pub const MANAGED_HOSTS_HEADER_HOST_NETWORK: &str =
    "# Kubernetes-managed hosts file (host network).\n";

/// One bind mount of a container, ready for CRI once prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerMount {
    /// The volume's name (`k8s-managed-etc-hosts` / `termination-log` for the managed files).
    pub name: String,
    pub container_path: String,
    pub host_path: PathBuf,
    pub read_only: bool,
    pub recursive_read_only: bool,
    pub propagation: MountPropagation,
    /// What [`prepare_container_mounts`] does for it.
    pub prepare: Prepare,
}

/// The file-system work a mount needs before the container is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepare {
    Nothing,
    /// `host_path` is `volume_path/sub_path`: create what is missing (as directories, with
    /// the volume root's mode) and resolve it, refusing a path whose symlinks leave the
    /// volume.
    SubPath {
        volume_path: PathBuf,
        sub_path: String,
        container: String,
    },
    /// Write `host_path` with this content and mode (its directory created 0750).
    File {
        content: Vec<u8>,
        mode: u32,
    },
}

impl ContainerMount {
    /// The CRI mount.
    pub fn to_cri(&self) -> cri::v1::Mount {
        cri::v1::Mount {
            container_path: self.container_path.clone(),
            host_path: self.host_path.display().to_string(),
            readonly: self.read_only,
            recursive_read_only: self.recursive_read_only,
            propagation: self.propagation as i32,
            ..Default::default()
        }
    }
}

/// What [`container_mounts`] needs besides the pod, the container and its volumes.
#[derive(Debug, Clone, Copy)]
pub struct MountContext<'a> {
    /// `KubeletConfig::pod_dir(uid)`.
    pub pod_dir: &'a Path,
    /// The pod's IPs; with none, `/etc/hosts` is not managed (upstream `shouldMountHostsFile`).
    pub pod_ips: &'a [String],
    /// `clusterDomain`, for the FQDN of pods with a `subdomain`.
    pub cluster_domain: &'a str,
    /// The node's own `/etc/hosts` (copied for `hostNetwork` pods).
    pub node_etc_hosts: &'a str,
    /// The container's restart count: names its termination-message file.
    pub restart_count: u32,
    /// The container's environment as resolved for CRI, for `subPathExpr`; `None`: its
    /// literal `env` values.
    pub env: Option<&'a [(String, String)]>,
    /// Whether the runtime supports recursive read-only mounts (containerd 1.6: no).
    pub runtime_supports_recursive_read_only: bool,
}

/// Upstream's `third_party/forked/golang/expansion.Expand`: `$(VAR)` is replaced by
/// `mapping(VAR)`, `$$` is `$`, anything else is kept.
pub fn expand(input: &str, mut mapping: impl FnMut(&str) -> String) -> String {
    let b = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < b.len() {
        if b[cursor] == b'$' && cursor + 1 < b.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest.find(')') {
                    Some(i) => {
                        out.push_str(&mapping(&rest[1..i]));
                        i + 1
                    }
                    None => {
                        out.push_str("$(");
                        1
                    }
                },
                _ => {
                    let c = rest.chars().next().unwrap_or('$');
                    out.push('$');
                    out.push(c);
                    c.len_utf8()
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    if checkpoint < input.len() {
        out.push_str(&input[checkpoint..]);
    }
    out
}

/// Upstream's `ExpandContainerVolumeMounts`: `subPathExpr` with the container's
/// environment; a variable that is unset or empty is an error (`missing value for A, B`).
pub fn expand_sub_path_expr(expr: &str, env: &[(String, String)]) -> Result<String, String> {
    let map: BTreeMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut missing = BTreeSet::new();
    let out = expand(expr, |k| match map.get(k) {
        Some(v) if !v.is_empty() => v.to_string(),
        _ => {
            missing.insert(k.to_string());
            String::new()
        }
    });
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!(
            "missing value for {}",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        ))
    }
}

/// Upstream's `GeneratePodHostNameAndDomain`: `spec.hostname` or the pod's name (at most
/// 63 characters, no trailing `-`/`.`), and `<subdomain>.<namespace>.svc.<clusterDomain>`
/// when the pod has a `subdomain`.
pub fn pod_hostname_and_domain(
    pod: &Pod,
    cluster_domain: &str,
) -> Result<(String, String), String> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let mut hostname = name.clone();
    if let Some(h) = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty())
    {
        let errs = api::validation::is_dns1123_label(h);
        if !errs.is_empty() {
            return Err(format!(
                "pod Hostname {} is not a valid DNS label: {}",
                go_quote(h),
                errs.join(";")
            ));
        }
        hostname = h.to_string();
    }
    if hostname.len() > 63 {
        let truncated = hostname[..63].trim_end_matches(['-', '.']).to_string();
        if truncated.is_empty() {
            return Err(format!(
                "hostname for pod {} was invalid: {}",
                go_quote(&name),
                go_quote(&hostname)
            ));
        }
        hostname = truncated;
    }
    let mut domain = String::new();
    if let Some(sub) = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
    {
        let errs = api::validation::is_dns1123_label(sub);
        if !errs.is_empty() {
            return Err(format!(
                "pod Subdomain {} is not a valid DNS label: {}",
                go_quote(sub),
                errs.join(";")
            ));
        }
        domain = format!(
            "{sub}.{}.svc.{cluster_domain}",
            pod.metadata.namespace.as_deref().unwrap_or_default()
        );
    }
    Ok((hostname, domain))
}

fn host_aliases_entries(aliases: &[HostAlias]) -> String {
    if aliases.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n# Entries added by HostAliases.\n");
    for a in aliases {
        s.push_str(&format!(
            "{}\t{}\n",
            a.ip,
            a.hostnames.as_deref().unwrap_or_default().join("\t")
        ));
    }
    s
}

/// Upstream's `managedHostsFileContent`: the `/etc/hosts` of a pod on the pod network.
pub fn etc_hosts(
    pod_ips: &[String],
    hostname: &str,
    domain: &str,
    host_aliases: &[HostAlias],
) -> String {
    let mut s = String::from(MANAGED_HOSTS_HEADER);
    s.push_str("127.0.0.1\tlocalhost\n");
    s.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
    s.push_str("fe00::0\tip6-localnet\n");
    s.push_str("fe00::0\tip6-mcastprefix\n");
    s.push_str("fe00::1\tip6-allnodes\n");
    s.push_str("fe00::2\tip6-allrouters\n");
    for ip in pod_ips {
        if domain.is_empty() {
            s.push_str(&format!("{ip}\t{hostname}\n"));
        } else {
            s.push_str(&format!("{ip}\t{hostname}.{domain}\t{hostname}\n"));
        }
    }
    s.push_str(&host_aliases_entries(host_aliases));
    s
}

/// Upstream's `nodeHostsFileContent`: the `/etc/hosts` of a `hostNetwork` pod.
pub fn etc_hosts_host_network(node_etc_hosts: &str, host_aliases: &[HostAlias]) -> String {
    format!(
        "{MANAGED_HOSTS_HEADER_HOST_NETWORK}{node_etc_hosts}{}",
        host_aliases_entries(host_aliases)
    )
}

/// The `/etc/hosts` content for `pod`.
pub fn etc_hosts_for_pod(pod: &Pod, ctx: &MountContext<'_>) -> Result<String, String> {
    let spec = pod.spec.as_ref();
    let aliases = spec
        .and_then(|s| s.host_aliases.as_deref())
        .unwrap_or_default();
    if spec.and_then(|s| s.host_network).unwrap_or(false) {
        return Ok(etc_hosts_host_network(ctx.node_etc_hosts, aliases));
    }
    let (hostname, domain) = pod_hostname_and_domain(pod, ctx.cluster_domain)?;
    Ok(etc_hosts(ctx.pod_ips, &hostname, &domain, aliases))
}

/// Writes `content` as the pod's managed hosts file `pod_dir/etc-hosts` (0644) and returns
/// its path (upstream `ensureHostsFile`; [`prepare_container_mounts`] does the same for
/// the `/etc/hosts` mount).
pub fn write_etc_hosts(pod_dir: &Path, content: &str) -> Result<PathBuf, Error> {
    let path = pod_dir.join(ETC_HOSTS_FILE);
    std::fs::write(&path, content).map_err(io(&path))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).map_err(io(&path))?;
    Ok(path)
}

/// The host file mounted at a container's `terminationMessagePath`:
/// `pod_dir/containers/<container>/<restart count as 8 hex digits>`.
pub fn termination_log_path(pod_dir: &Path, container: &str, restart_count: u32) -> PathBuf {
    pod_dir
        .join("containers")
        .join(container)
        .join(format!("{restart_count:08x}"))
}

/// Whether a volume's plugin always mounts it read-only (configMap, secret, downwardAPI,
/// projected).
fn always_read_only(v: &Volume) -> bool {
    v.config_map.is_some()
        || v.secret.is_some()
        || v.downward_api.is_some()
        || v.projected.is_some()
}

fn propagation(mode: Option<&str>) -> Result<MountPropagation, String> {
    match mode {
        None | Some("None") => Ok(MountPropagation::PropagationPrivate),
        Some("HostToContainer") => Ok(MountPropagation::PropagationHostToContainer),
        Some("Bidirectional") => Ok(MountPropagation::PropagationBidirectional),
        Some(other) => Err(format!(
            "invalid MountPropagation mode: {}",
            go_quote(other)
        )),
    }
}

fn recursive_read_only(
    m: &k8s_openapi::api::core::v1::VolumeMount,
    supported: bool,
) -> Result<bool, String> {
    let mode = match m.recursive_read_only.as_deref() {
        None | Some("Disabled") => return Ok(false),
        Some(mode) => mode,
    };
    if !m.read_only.unwrap_or(false) {
        return Err(format!(
            "volume {} requested recursive read-only mode, but it is not read-only",
            go_quote(&m.name)
        ));
    }
    if let Some(p) = m.mount_propagation.as_deref()
        && p != "None"
    {
        return Err(format!(
            "volume {} requested recursive read-only mode, but it is not compatible with propagation {}",
            go_quote(&m.name),
            go_quote(p)
        ));
    }
    match mode {
        "IfPossible" => Ok(supported),
        "Enabled" if supported => Ok(true),
        "Enabled" => Err(format!(
            "volume {} requested recursive read-only mode, but it is not supported by the runtime",
            go_quote(&m.name)
        )),
        other => Err(format!(
            "unknown RecursiveReadOnly mode {}",
            go_quote(other)
        )),
    }
}

/// The mounts of `container` (upstream `makeMounts` + the termination-message mount):
/// each `volumeMount` from `volumes` (an error names a volume that is not set up, an
/// absolute subPath or one with `..`), then `/etc/hosts` unless the container mounts it
/// itself or the pod has no IP yet, then the termination-message file.
pub fn container_mounts(
    pod: &Pod,
    container: &Container,
    volumes: &PodVolumes,
    ctx: &MountContext<'_>,
) -> Result<Vec<ContainerMount>, Error> {
    let spec_volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default();
    let literal_env: Vec<(String, String)>;
    let env = match ctx.env {
        Some(e) => e,
        None => {
            literal_env = container
                .env
                .iter()
                .flatten()
                .filter_map(|e| e.value.clone().map(|v| (e.name.clone(), v)))
                .collect();
            &literal_env
        }
    };
    let mut mount_etc_hosts = !ctx.pod_ips.is_empty();
    let mut mounts = Vec::new();
    for m in container.volume_mounts.iter().flatten() {
        mount_etc_hosts &= m.mount_path != ETC_HOSTS_PATH;
        let Some(volume_path) = volumes.paths.get(&m.name) else {
            return Err(Error::Other(format!(
                "cannot find volume {} to mount into container {}",
                go_quote(&m.name),
                go_quote(&container.name)
            )));
        };
        let must_ro = spec_volumes
            .iter()
            .find(|v| v.name == m.name)
            .is_some_and(always_read_only);
        let mut sub_path = m.sub_path.clone().unwrap_or_default();
        if let Some(expr) = m.sub_path_expr.as_deref().filter(|e| !e.is_empty()) {
            sub_path = expand_sub_path_expr(expr, env).map_err(Error::Other)?;
        }
        let mut host_path = volume_path.clone();
        let mut prepare = Prepare::Nothing;
        if !sub_path.is_empty() {
            if sub_path.starts_with('/') {
                return Err(Error::Other(format!(
                    "error SubPath `{sub_path}` must not be an absolute path"
                )));
            }
            if sub_path.split('/').any(|p| p == "..") {
                return Err(Error::Other(format!(
                    "unable to provision SubPath `{sub_path}`: must not contain '..'"
                )));
            }
            host_path = volume_path.join(&sub_path);
            prepare = Prepare::SubPath {
                volume_path: volume_path.clone(),
                sub_path: sub_path.clone(),
                container: container.name.clone(),
            };
        }
        let prop = propagation(m.mount_propagation.as_deref()).map_err(Error::Other)?;
        let rro = recursive_read_only(m, ctx.runtime_supports_recursive_read_only)
            .map_err(Error::Other)?;
        mounts.push(ContainerMount {
            name: m.name.clone(),
            container_path: m.mount_path.clone(),
            host_path,
            read_only: m.read_only.unwrap_or(false) || must_ro,
            recursive_read_only: rro,
            propagation: prop,
            prepare,
        });
    }
    if mount_etc_hosts {
        let content = etc_hosts_for_pod(pod, ctx).map_err(Error::Other)?;
        mounts.push(ContainerMount {
            name: "k8s-managed-etc-hosts".into(),
            container_path: ETC_HOSTS_PATH.into(),
            host_path: ctx.pod_dir.join(ETC_HOSTS_FILE),
            read_only: false,
            recursive_read_only: false,
            propagation: MountPropagation::PropagationPrivate,
            prepare: Prepare::File {
                content: content.into_bytes(),
                mode: 0o644,
            },
        });
    }
    let tmp = container
        .termination_message_path
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(DEFAULT_TERMINATION_MESSAGE_PATH);
    mounts.push(ContainerMount {
        name: "termination-log".into(),
        container_path: tmp.into(),
        host_path: termination_log_path(ctx.pod_dir, &container.name, ctx.restart_count),
        read_only: false,
        recursive_read_only: false,
        propagation: MountPropagation::PropagationPrivate,
        prepare: Prepare::File {
            content: Vec::new(),
            mode: 0o666,
        },
    });
    Ok(mounts)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `sub_path` below `volume` (missing parts as directories with `perm`), never
/// following a symlink out of the volume; returns the resolved path.
fn safe_sub_path(volume: &Path, sub_path: &str) -> Result<PathBuf, String> {
    let root = std::fs::canonicalize(volume).map_err(|e| format!("{}: {e}", volume.display()))?;
    let perm = std::fs::metadata(&root)
        .map_err(|e| format!("{}: {e}", root.display()))?
        .permissions()
        .mode()
        & 0o777;
    let mut cur = root.clone();
    for part in sub_path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let next = cur.join(part);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                let r =
                    std::fs::canonicalize(&next).map_err(|e| format!("{}: {e}", next.display()))?;
                if !r.starts_with(&root) {
                    return Err(format!("{} is outside the volume", next.display()));
                }
                cur = r;
            }
            Ok(_) => cur = next,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                std::fs::create_dir(&next).map_err(|e| format!("{}: {e}", next.display()))?;
                std::fs::set_permissions(&next, std::fs::Permissions::from_mode(perm))
                    .map_err(|e| format!("{}: {e}", next.display()))?;
                cur = next;
            }
            Err(e) => return Err(format!("{}: {e}", next.display())),
        }
    }
    Ok(cur)
}

/// Does each mount's [`Prepare`] work; returns the mounts with subPaths resolved.
pub fn prepare_container_mounts(mounts: Vec<ContainerMount>) -> Result<Vec<ContainerMount>, Error> {
    let mut out = Vec::with_capacity(mounts.len());
    for mut m in mounts {
        match &m.prepare {
            Prepare::Nothing => {}
            Prepare::SubPath {
                volume_path,
                sub_path,
                container,
            } => match safe_sub_path(volume_path, sub_path) {
                Ok(p) => m.host_path = p,
                Err(e) => {
                    tracing::warn!(error = %e, volume = %m.name, container = %container, "subPath");
                    return Err(Error::Other(format!(
                        "failed to prepare subPath for volumeMount {} of container {}",
                        go_quote(&m.name),
                        go_quote(container)
                    )));
                }
            },
            Prepare::File { content, mode } => {
                if let Some(dir) = m.host_path.parent() {
                    let mut b = std::fs::DirBuilder::new();
                    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o750);
                    b.recursive(true).create(dir).map_err(io(dir))?;
                }
                std::fs::write(&m.host_path, content).map_err(io(&m.host_path))?;
                std::fs::set_permissions(&m.host_path, std::fs::Permissions::from_mode(*mode))
                    .map_err(io(&m.host_path))?;
            }
        }
        out.push(m);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn expansion_as_upstream() {
        let m = |k: &str| match k {
            "A" => "a".to_string(),
            "B" => "bb".to_string(),
            _ => format!("$({k})"),
        };
        assert_eq!(expand("$(A)/$(B)", m), "a/bb");
        assert_eq!(expand("$$(A)", m), "$(A)");
        assert_eq!(expand("$(A", m), "$(A");
        assert_eq!(expand("x$yz$", m), "x$yz$");
        assert_eq!(expand("$(Z)", m), "$(Z)");
        assert_eq!(expand("é$é", m), "é$é");
        assert_eq!(
            expand_sub_path_expr("logs/$(POD)/$(C)", &env(&[("POD", "p1"), ("C", "c")])).unwrap(),
            "logs/p1/c"
        );
        assert_eq!(
            expand_sub_path_expr("$(B)/$(A)/$(E)", &env(&[("E", "")])).unwrap_err(),
            "missing value for A, B, E"
        );
    }

    #[test]
    fn etc_hosts_format() {
        let aliases: Vec<HostAlias> = serde_json::from_value(json!([
            {"ip": "10.1.2.3", "hostnames": ["foo", "bar"]}
        ]))
        .unwrap();
        assert_eq!(
            etc_hosts(
                &["10.42.0.5".into()],
                "web-0",
                "web.default.svc.cluster.local",
                &aliases
            ),
            "# Kubernetes-managed hosts file.\n\
             127.0.0.1\tlocalhost\n\
             ::1\tlocalhost ip6-localhost ip6-loopback\n\
             fe00::0\tip6-localnet\n\
             fe00::0\tip6-mcastprefix\n\
             fe00::1\tip6-allnodes\n\
             fe00::2\tip6-allrouters\n\
             10.42.0.5\tweb-0.web.default.svc.cluster.local\tweb-0\n\
             \n\
             # Entries added by HostAliases.\n\
             10.1.2.3\tfoo\tbar\n"
        );
        assert!(etc_hosts(&["10.0.0.1".into()], "p", "", &[]).ends_with("10.0.0.1\tp\n"));
        assert_eq!(
            etc_hosts_host_network("127.0.0.1 localhost\n", &[]),
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n"
        );
    }

    #[test]
    fn hostname_and_domain() {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-0", "namespace": "ns"},
            "spec": {"containers": [], "hostname": "h", "subdomain": "web"}
        }))
        .unwrap();
        assert_eq!(
            pod_hostname_and_domain(&p, "cluster.local").unwrap(),
            ("h".into(), "web.ns.svc.cluster.local".into())
        );
        let long = format!("{}-{}", "a".repeat(62), "b".repeat(10));
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": long, "namespace": "ns"},
            "spec": {"containers": []}
        }))
        .unwrap();
        assert_eq!(pod_hostname_and_domain(&p, "c").unwrap().0, "a".repeat(62));
    }

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {
                "volumes": [
                    {"name": "data", "emptyDir": {}},
                    {"name": "cfg", "configMap": {"name": "c"}}
                ],
                "containers": [{
                    "name": "c",
                    "env": [{"name": "POD", "value": "p"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data", "subPathExpr": "$(POD)/x"},
                        {"name": "cfg", "mountPath": "/cfg", "mountPropagation": "HostToContainer"}
                    ]
                }]
            }
        }))
        .unwrap()
    }

    fn volumes() -> PodVolumes {
        PodVolumes {
            paths: [
                (
                    "data".to_string(),
                    PathBuf::from("/pods/u/volumes/kubernetes.io~empty-dir/data"),
                ),
                (
                    "cfg".to_string(),
                    PathBuf::from("/pods/u/volumes/kubernetes.io~configmap/cfg"),
                ),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn ctx<'a>(ips: &'a [String]) -> MountContext<'a> {
        MountContext {
            pod_dir: Path::new("/pods/u"),
            pod_ips: ips,
            cluster_domain: "cluster.local",
            node_etc_hosts: "",
            restart_count: 3,
            env: None,
            runtime_supports_recursive_read_only: false,
        }
    }

    #[test]
    fn mounts_of_a_container() {
        let p = pod();
        let c = &p.spec.as_ref().unwrap().containers[0];
        let ips = vec!["10.0.0.9".to_string()];
        let m = container_mounts(&p, c, &volumes(), &ctx(&ips)).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[0].host_path,
            Path::new("/pods/u/volumes/kubernetes.io~empty-dir/data/p/x")
        );
        assert!(!m[0].read_only);
        assert!(matches!(&m[0].prepare, Prepare::SubPath { sub_path, .. } if sub_path == "p/x"));
        assert!(m[1].read_only, "configMap volumes are always read-only");
        assert_eq!(
            m[1].propagation,
            MountPropagation::PropagationHostToContainer
        );
        assert_eq!(m[2].container_path, "/etc/hosts");
        assert_eq!(m[2].host_path, Path::new("/pods/u/etc-hosts"));
        assert_eq!(m[3].container_path, "/dev/termination-log");
        assert_eq!(m[3].host_path, Path::new("/pods/u/containers/c/00000003"));
        assert_eq!(m[3].to_cri().host_path, "/pods/u/containers/c/00000003");

        // No pod IP yet: no /etc/hosts.
        let m = container_mounts(&p, c, &volumes(), &ctx(&[])).unwrap();
        assert!(m.iter().all(|m| m.container_path != "/etc/hosts"));
    }

    #[test]
    fn mount_errors_as_upstream() {
        let mut p = pod();
        let ips: Vec<String> = vec![];
        let spec = p.spec.as_mut().unwrap();
        spec.containers[0].volume_mounts.as_mut().unwrap()[0].name = "nope".into();
        let c = spec.containers[0].clone();
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &ctx(&ips))
                .unwrap_err()
                .to_string(),
            "cannot find volume \"nope\" to mount into container \"c\""
        );
        let mut c = pod().spec.unwrap().containers[0].clone();
        let vm = &mut c.volume_mounts.as_mut().unwrap()[0];
        vm.sub_path_expr = None;
        vm.sub_path = Some("/abs".into());
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &ctx(&ips))
                .unwrap_err()
                .to_string(),
            "error SubPath `/abs` must not be an absolute path"
        );
        c.volume_mounts.as_mut().unwrap()[0].sub_path = Some("a/../../b".into());
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &ctx(&ips))
                .unwrap_err()
                .to_string(),
            "unable to provision SubPath `a/../../b`: must not contain '..'"
        );
        c.volume_mounts.as_mut().unwrap()[0].sub_path = None;
        c.volume_mounts.as_mut().unwrap()[0].sub_path_expr = Some("$(NOPE)".into());
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &ctx(&ips))
                .unwrap_err()
                .to_string(),
            "missing value for NOPE"
        );
        let e = env(&[("NOPE", "yes")]);
        let mut cx = ctx(&ips);
        cx.env = Some(&e);
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &cx).unwrap()[0].host_path,
            Path::new("/pods/u/volumes/kubernetes.io~empty-dir/data/yes")
        );
        let vm = &mut c.volume_mounts.as_mut().unwrap()[0];
        vm.sub_path_expr = None;
        vm.recursive_read_only = Some("Enabled".into());
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &ctx(&ips))
                .unwrap_err()
                .to_string(),
            "volume \"data\" requested recursive read-only mode, but it is not read-only"
        );
        let vm = &mut c.volume_mounts.as_mut().unwrap()[0];
        vm.read_only = Some(true);
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &ctx(&ips))
                .unwrap_err()
                .to_string(),
            "volume \"data\" requested recursive read-only mode, but it is not supported by the runtime"
        );
        c.volume_mounts.as_mut().unwrap()[0].recursive_read_only = Some("IfPossible".into());
        assert!(!container_mounts(&p, &c, &volumes(), &ctx(&ips)).unwrap()[0].recursive_read_only);
        c.volume_mounts.as_mut().unwrap()[1].mount_propagation = Some("Sideways".into());
        assert_eq!(
            container_mounts(&p, &c, &volumes(), &ctx(&ips))
                .unwrap_err()
                .to_string(),
            "invalid MountPropagation mode: \"Sideways\""
        );
    }

    #[test]
    fn own_etc_hosts_mount_wins() {
        let mut p = pod();
        let spec = p.spec.as_mut().unwrap();
        spec.containers[0].volume_mounts.as_mut().unwrap()[1].mount_path = "/etc/hosts".into();
        let c = spec.containers[0].clone();
        let ips = vec!["10.0.0.9".to_string()];
        let m = container_mounts(&p, &c, &volumes(), &ctx(&ips)).unwrap();
        assert_eq!(
            m.iter()
                .filter(|m| m.container_path == "/etc/hosts")
                .count(),
            1
        );
        assert_eq!(
            m.iter()
                .find(|m| m.container_path == "/etc/hosts")
                .unwrap()
                .name,
            "cfg"
        );
    }

    #[test]
    fn prepare_creates_sub_paths_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let vol = root.join("vol");
        std::fs::create_dir(&vol).unwrap();
        std::fs::set_permissions(&vol, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink("/etc", vol.join("out")).unwrap();
        std::fs::create_dir(vol.join("in")).unwrap();
        std::os::unix::fs::symlink("in", vol.join("link")).unwrap();
        let sub = |s: &str| ContainerMount {
            name: "v".into(),
            container_path: "/x".into(),
            host_path: vol.join(s),
            read_only: false,
            recursive_read_only: false,
            propagation: MountPropagation::PropagationPrivate,
            prepare: Prepare::SubPath {
                volume_path: vol.clone(),
                sub_path: s.into(),
                container: "c".into(),
            },
        };
        let out = prepare_container_mounts(vec![sub("a/b"), sub("link/z")]).unwrap();
        assert_eq!(out[0].host_path, vol.join("a/b"));
        assert!(vol.join("a/b").is_dir());
        assert_eq!(
            std::fs::metadata(vol.join("a/b"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o777
        );
        assert_eq!(out[1].host_path, vol.join("in/z"));
        assert_eq!(
            prepare_container_mounts(vec![sub("out/passwd")])
                .unwrap_err()
                .to_string(),
            "failed to prepare subPath for volumeMount \"v\" of container \"c\""
        );

        let file = ContainerMount {
            name: "termination-log".into(),
            container_path: "/dev/termination-log".into(),
            host_path: termination_log_path(&root, "c", 0),
            read_only: false,
            recursive_read_only: false,
            propagation: MountPropagation::PropagationPrivate,
            prepare: Prepare::File {
                content: Vec::new(),
                mode: 0o666,
            },
        };
        prepare_container_mounts(vec![file]).unwrap();
        let hosts = write_etc_hosts(&root, "127.0.0.1\tlocalhost\n").unwrap();
        assert_eq!(hosts, root.join("etc-hosts"));
        assert_eq!(
            std::fs::metadata(&hosts).unwrap().permissions().mode() & 0o777,
            0o644
        );
        let f = root.join("containers/c/00000000");
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o666
        );
    }
}
