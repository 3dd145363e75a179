//! Volume sources, PersistentVolume and PersistentVolumeClaim specs
//! (`pkg/apis/core/validation/validation.go`).

use serde_json::Value;

use super::quantity::Quantity;
use super::resources::{positive_quantity, resource_quantity_value, validate_node_selector};
use super::util::*;

const FILE_MODE_ERR: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const MORE_THAN_ONE: &str = "may not specify more than 1 volume type";

fn file_mode(obj: &Value, key: &str, p: &P) -> Errs {
    match int(obj, key) {
        Some(m) if !(0..=0o777).contains(&m) => vec![invalid(&p.child(key), m, FILE_MODE_ERR)],
        _ => Vec::new(),
    }
}

fn req_str(obj: &Value, key: &str, p: &P) -> Errs {
    if s(obj, key).is_empty() {
        vec![required(&p.child(key), "")]
    } else {
        Vec::new()
    }
}

/// `validatePathNoBacksteps`.
pub(crate) fn path_no_backsteps(target: &str, p: &P) -> Errs {
    if target.split(['/', '\\']).any(|part| part == "..") {
        vec![invalid(p, target, "must not contain '..'")]
    } else {
        Vec::new()
    }
}

/// `validateLocalDescendingPath`.
pub(crate) fn local_descending_path(target: &str, p: &P) -> Errs {
    let mut errs = Vec::new();
    if target.starts_with('/') {
        errs.push(invalid(p, target, "must be a relative path"));
    }
    errs.extend(path_no_backsteps(target, p));
    errs
}

/// `ValidateLocalNonReservedPath`.
pub(crate) fn local_non_reserved_path(target: &str, p: &P) -> Errs {
    let mut errs = local_descending_path(target, p);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(invalid(p, target, "must not start with '..'"));
    }
    errs
}

fn key_to_path(kp: &Value, p: &P) -> Errs {
    let mut errs = req_str(kp, "key", p);
    let path = s(kp, "path");
    if path.is_empty() {
        errs.push(required(&p.child("path"), ""));
    }
    errs.extend(local_non_reserved_path(path, &p.child("path")));
    errs.extend(file_mode(kp, "mode", p));
    errs
}

fn host_path(hp: &Value, p: &P) -> Errs {
    let path = s(hp, "path");
    if path.is_empty() {
        return vec![required(&p.child("path"), "")];
    }
    let mut errs = path_no_backsteps(path, &p.child("path"));
    if let Some(t) = opt_s(hp, "type") {
        const TYPES: &[&str] = &[
            "",
            "BlockDevice",
            "CharDevice",
            "Directory",
            "DirectoryOrCreate",
            "File",
            "FileOrCreate",
            "Socket",
        ];
        if !TYPES.contains(&t) {
            errs.push(not_supported(&p.child("type"), t, TYPES));
        }
    }
    errs
}

fn iqn_ok(v: &str) -> bool {
    if let Some(rest) = v.strip_prefix("eui.") {
        return rest.len() == 16 && rest.bytes().all(|c| c.is_ascii_alphanumeric());
    }
    if let Some(rest) = v.strip_prefix("naa.") {
        return rest.len() == 32 && rest.bytes().all(|c| c.is_ascii_alphanumeric());
    }
    if v.starts_with("eui") || v.starts_with("naa") {
        // The prefix is followed by any single character upstream ("eui.").
        let rest = &v[3..];
        let mut chars = rest.chars();
        chars.next();
        let tail = chars.as_str();
        let n = if v.starts_with("eui") { 16 } else { 32 };
        return tail.len() == n && tail.bytes().all(|c| c.is_ascii_alphanumeric());
    }
    // iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$ (unanchored at the start).
    v.match_indices("iqn.").any(|(i, _)| {
        let r = &v[i + 4..];
        let b = r.as_bytes();
        if b.len() < 8
            || !b[..4].iter().all(u8::is_ascii_digit)
            || b[4] != b'-'
            || !b[5..7].iter().all(u8::is_ascii_digit)
            || b[7] != b'.'
        {
            return false;
        }
        let rest = &r[8..];
        rest.char_indices().any(|(j, c)| {
            c == ':'
                && j > 0
                && rest[..j]
                    .bytes()
                    .all(|x| x.is_ascii_alphanumeric() || x == b'-' || x == b'.')
                && rest.len() > j + 1
                && rest[j + 1..]
                    .chars()
                    .all(|x| !",;*&$|".contains(x) && !x.is_whitespace())
        })
    })
}

fn iscsi(src: &Value, p: &P, persistent: bool, pv_name: &str) -> Errs {
    let mut errs = req_str(src, "targetPortal", p);
    if persistent && src.get("initiatorName").is_some() {
        let tp = s(src, "targetPortal");
        if pv_name.len() + 1 + tp.len() > 64 {
            errs.push(invalid(
                &p.child("targetportal"),
                tp,
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
            ));
        }
    }
    let iqn = s(src, "iqn");
    let prefixed = |v: &str| v.starts_with("iqn") || v.starts_with("eui") || v.starts_with("naa");
    if iqn.is_empty() {
        errs.push(required(&p.child("iqn"), ""));
    } else if !prefixed(iqn) {
        let msg = if persistent {
            "must be valid format"
        } else {
            "must be valid format starting with iqn, eui, or naa"
        };
        errs.push(invalid(&p.child("iqn"), iqn, msg));
    } else if !iqn_ok(iqn) {
        errs.push(invalid(&p.child("iqn"), iqn, "must be valid format"));
    }
    let lun = int(src, "lun").unwrap_or(0);
    if !(0..=255).contains(&lun) {
        errs.push(invalid(
            &p.child("lun"),
            lun,
            &inclusive_range_error(0, 255),
        ));
    }
    if (is_true(src, "chapAuthDiscovery") || is_true(src, "chapAuthSession"))
        && get(src, "secretRef").is_none()
    {
        errs.push(required(&p.child("secretRef"), ""));
    }
    if persistent
        && let Some(sr) = get(src, "secretRef")
        && s(sr, "name").is_empty()
    {
        errs.push(required(&p.child("secretRef").child("name"), ""));
    }
    if let Some(init) = opt_s(src, "initiatorName") {
        let ip = p.child("initiatorname");
        if !prefixed(init) {
            let msg = if persistent {
                "must be valid format"
            } else {
                "must be valid format starting with iqn, eui, or naa"
            };
            errs.push(invalid(&ip, init, msg));
        }
        if prefixed(init) && !iqn_ok(init) {
            errs.push(invalid(&ip, init, "must be valid format"));
        }
    }
    errs
}

fn fc(src: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let nw = len_of(src, "targetWWNs");
    let ni = len_of(src, "wwids");
    if nw < 1 && ni < 1 {
        errs.push(required(
            &p.child("targetWWNs"),
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if nw != 0 && ni != 0 {
        errs.push(invalid(
            &p.child("targetWWNs"),
            jv(src, "targetWWNs"),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if nw != 0 {
        match int(src, "lun") {
            None => errs.push(required(
                &p.child("lun"),
                "lun is required if targetWWNs is specified",
            )),
            Some(l) if !(0..=255).contains(&l) => {
                errs.push(invalid(&p.child("lun"), l, &inclusive_range_error(0, 255)))
            }
            _ => {}
        }
    }
    errs
}

fn partition(src: &Value, p: &P) -> Errs {
    let part = int(src, "partition").unwrap_or(0);
    if !(0..=255).contains(&part) {
        vec![invalid(
            &p.child("partition"),
            part,
            &inclusive_range_error(1, 255),
        )]
    } else {
        Vec::new()
    }
}

fn secret_source(src: &Value, p: &P) -> Errs {
    let mut errs = req_str(src, "secretName", p);
    errs.extend(file_mode(src, "defaultMode", p));
    for (i, kp) in arr(src, "items").iter().enumerate() {
        errs.extend(key_to_path(kp, &p.child("items").index(i)));
    }
    errs
}

fn config_map_source(src: &Value, p: &P) -> Errs {
    let mut errs = req_str(src, "name", p);
    errs.extend(file_mode(src, "defaultMode", p));
    for (i, kp) in arr(src, "items").iter().enumerate() {
        errs.extend(key_to_path(kp, &p.child("items").index(i)));
    }
    errs
}

fn nfs(src: &Value, p: &P) -> Errs {
    let mut errs = req_str(src, "server", p);
    errs.extend(req_str(src, "path", p));
    let path = s(src, "path");
    if !path.starts_with('/') {
        errs.push(invalid(&p.child("path"), path, "must be an absolute path"));
    }
    errs
}

fn quobyte(src: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let registry = s(src, "registry");
    const MSG: &str = "must be a host:port pair or multiple pairs separated by commas";
    if registry.is_empty() {
        errs.push(required(&p.child("registry"), MSG));
    } else if s(src, "tenant").len() >= 65 {
        errs.push(required(
            &p.child("tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            let ok = match pair.rsplit_once(':') {
                Some((host, _)) => {
                    if let Some(inner) = host.strip_prefix('[') {
                        inner.ends_with(']')
                    } else {
                        !host.contains(':')
                    }
                }
                None => false,
            };
            if !ok {
                errs.push(invalid(&p.child("registry"), registry, MSG));
            }
        }
    }
    errs.extend(req_str(src, "volume", p));
    errs
}

fn glusterfs(src: &Value, p: &P, persistent: bool) -> Errs {
    let mut errs = req_str(src, "endpoints", p);
    errs.extend(req_str(src, "path", p));
    if persistent && let Some(ns) = opt_s(src, "endpointsNamespace") {
        let np = p.child("endpointsNamespace");
        if ns.is_empty() {
            errs.push(invalid(
                &np,
                ns,
                "if the endpointnamespace is set, it must be a valid namespace name",
            ));
        } else {
            errs.extend(name_errs(&np, ns, name_is_dns_label(ns, false)));
        }
    }
    errs
}

fn flocker(src: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let name = s(src, "datasetName");
    let uuid = s(src, "datasetUUID");
    if name.is_empty() && uuid.is_empty() {
        errs.push(required(
            p,
            "one of datasetName and datasetUUID is required",
        ));
    }
    if !name.is_empty() && !uuid.is_empty() {
        errs.push(invalid(
            p,
            "resource",
            "datasetName and datasetUUID can not be specified simultaneously",
        ));
    }
    if name.contains('/') {
        errs.push(invalid(
            &p.child("datasetName"),
            name,
            "must not contain '/'",
        ));
    }
    errs
}

fn rbd(src: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    if len_of(src, "monitors") == 0 {
        errs.push(required(&p.child("monitors"), ""));
    }
    errs.extend(req_str(src, "image", p));
    errs
}

fn cinder(src: &Value, p: &P, persistent: bool) -> Errs {
    let mut errs = req_str(src, "volumeID", p);
    if let Some(sr) = get(src, "secretRef") {
        if s(sr, "name").is_empty() {
            errs.push(required(&p.child("secretRef").child("name"), ""));
        }
        if persistent && s(sr, "namespace").is_empty() {
            errs.push(required(&p.child("secretRef").child("namespace"), ""));
        }
    }
    errs
}

fn cephfs(src: &Value, p: &P) -> Errs {
    if len_of(src, "monitors") == 0 {
        vec![required(&p.child("monitors"), "")]
    } else {
        Vec::new()
    }
}

fn flex(src: &Value, p: &P) -> Errs {
    let mut errs = req_str(src, "driver", p);
    for k in str_map(src, "options").keys() {
        let ns = k.split_once('/').map_or(*k, |(n, _)| n);
        let norm = format!(".{}", ns.to_lowercase());
        if norm.ends_with(".kubernetes.io") || norm.ends_with(".k8s.io") {
            errs.push(invalid(
                &p.child("options").key(k),
                *k,
                "kubernetes.io and k8s.io namespaces are reserved",
            ));
        }
    }
    errs
}

fn azure_file(src: &Value, p: &P, persistent: bool) -> Errs {
    let mut errs = req_str(src, "secretName", p);
    errs.extend(req_str(src, "shareName", p));
    if persistent && opt_s(src, "secretNamespace") == Some("") {
        errs.push(required(&p.child("secretNamespace"), ""));
    }
    errs
}

fn azure_disk(src: &Value, p: &P) -> Errs {
    let mut errs = req_str(src, "diskName", p);
    errs.extend(req_str(src, "diskURI", p));
    if let Some(cm) = opt_s(src, "cachingMode")
        && !["None", "ReadOnly", "ReadWrite"].contains(&cm)
    {
        errs.push(not_supported(
            &p.child("cachingMode"),
            cm,
            &["None", "ReadOnly", "ReadWrite"],
        ));
    }
    let uri = s(src, "diskURI");
    if let Some(kind) = opt_s(src, "kind") {
        if !["Dedicated", "Managed", "Shared"].contains(&kind) {
            errs.push(not_supported(
                &p.child("kind"),
                kind,
                &["Dedicated", "Managed", "Shared"],
            ));
        }
        if kind == "Managed" && !uri.starts_with("/subscriptions/") {
            errs.push(not_supported(
                &p.child("diskURI"),
                uri,
                &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
            ));
        }
        if kind != "Managed" && !uri.starts_with("https://") {
            errs.push(not_supported(
                &p.child("diskURI"),
                uri,
                &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
            ));
        }
    }
    errs
}

fn scale_io(src: &Value, p: &P) -> Errs {
    let mut errs = req_str(src, "gateway", p);
    errs.extend(req_str(src, "system", p));
    errs.extend(req_str(src, "volumeName", p));
    errs
}

fn storage_os(src: &Value, p: &P, persistent: bool) -> Errs {
    let mut errs = Vec::new();
    let vn = s(src, "volumeName");
    if vn.is_empty() {
        errs.push(required(&p.child("volumeName"), ""));
    } else {
        errs.extend(dns_label(vn, &p.child("volumeName")));
    }
    let vns = s(src, "volumeNamespace");
    if !vns.is_empty() {
        errs.extend(dns_label(vns, &p.child("volumeNamespace")));
    }
    if let Some(sr) = get(src, "secretRef") {
        if s(sr, "name").is_empty() {
            errs.push(required(&p.child("secretRef").child("name"), ""));
        }
        if persistent && s(sr, "namespace").is_empty() {
            errs.push(required(&p.child("secretRef").child("namespace"), ""));
        }
    }
    errs
}

/// `ValidateCSIDriverName`.
pub(crate) fn csi_driver_name(name: &str, p: &P) -> Errs {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(required(p, ""));
    }
    if name.len() > 63 {
        errs.push(too_long(p, 63));
    }
    for m in is_dns1123_subdomain(&name.to_lowercase()) {
        errs.push(invalid(p, name, &m));
    }
    errs
}

fn pv_secret_ref(sr: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let name = s(sr, "name");
    if name.is_empty() {
        errs.push(required(&p.child("name"), ""));
    } else {
        errs.extend(dns_subdomain(name, &p.child("name")));
    }
    let ns = s(sr, "namespace");
    if ns.is_empty() {
        errs.push(required(&p.child("namespace"), ""));
    } else {
        errs.extend(dns_label(ns, &p.child("namespace")));
    }
    errs
}

fn csi(src: &Value, p: &P, persistent: bool) -> Errs {
    let mut errs = csi_driver_name(s(src, "driver"), &p.child("driver"));
    if persistent {
        errs.extend(req_str(src, "volumeHandle", p));
        for key in [
            "controllerPublishSecretRef",
            "controllerExpandSecretRef",
            "nodePublishSecretRef",
            "nodeExpandSecretRef",
        ] {
            if let Some(sr) = get(src, key) {
                errs.extend(pv_secret_ref(sr, &p.child(key)));
            }
        }
    } else if let Some(sr) = get(src, "nodePublishSecretRef") {
        let name = s(sr, "name");
        if name.is_empty() {
            errs.push(required(&p.child("nodePublishSecretRef").child("name"), ""));
        } else {
            errs.extend(name_errs(
                &p.child("name"),
                name,
                name_is_dns_subdomain(name, false),
            ));
        }
    }
    errs
}

/// `validateObjectFieldSelector` for downward API volume files.
fn downward_api_file(file: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let path = s(file, "path");
    if path.is_empty() {
        errs.push(required(&p.child("path"), ""));
    }
    errs.extend(local_non_reserved_path(path, &p.child("path")));
    if let Some(fr) = get(file, "fieldRef") {
        errs.extend(super::pod::object_field_selector(
            fr,
            super::pod::VOLUME_FIELD_PATHS,
            &p.child("fieldRef"),
        ));
        if get(file, "resourceFieldRef").is_some() {
            errs.push(invalid(
                p,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(rf) = get(file, "resourceFieldRef") {
        errs.extend(super::pod::resource_field_selector(
            rf,
            &p.child("resourceFieldRef"),
            true,
        ));
    } else {
        errs.push(required(
            p,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    errs.extend(file_mode(file, "mode", p));
    errs
}

fn downward_api(src: &Value, p: &P) -> Errs {
    let mut errs = file_mode(src, "defaultMode", p);
    for file in arr(src, "items") {
        errs.extend(downward_api_file(file, p));
    }
    errs
}

fn projected(src: &Value, p: &P) -> Errs {
    let mut errs = file_mode(src, "defaultMode", p);
    let mut all_paths: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (i, source) in arr(src, "sources").iter().enumerate() {
        let sp = p.child("sources").index(i);
        let mut num = 0;
        for kind in ["secret", "configMap"] {
            if let Some(sec) = get(source, kind) {
                num += 1;
                let pp = sp.child(kind);
                let name = s(sec, "name");
                if name.is_empty() {
                    errs.push(required(&pp.child("name"), ""));
                }
                for (j, kp) in arr(sec, "items").iter().enumerate() {
                    errs.extend(key_to_path(kp, &pp.child("items").index(j)));
                    let path = s(kp, "path");
                    if !path.is_empty() && !all_paths.insert(path.to_string()) {
                        errs.push(invalid(p, name, "conflicting duplicate paths"));
                    }
                }
            }
        }
        if let Some(d) = get(source, "downwardAPI") {
            num += 1;
            let pp = sp.child("downwardAPI");
            for file in arr(d, "items") {
                errs.extend(downward_api_file(file, &pp));
                let path = s(file, "path");
                if !path.is_empty() && !all_paths.insert(path.to_string()) {
                    errs.push(invalid(p, path, "conflicting duplicate paths"));
                }
            }
        }
        if let Some(t) = get(source, "serviceAccountToken") {
            num += 1;
            let pp = sp.child("serviceAccountToken");
            let exp = int(t, "expirationSeconds").unwrap_or(0);
            if exp < 600 {
                errs.push(invalid(
                    &pp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if exp > 1 << 32 {
                errs.push(invalid(
                    &pp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            let path = s(t, "path");
            if path.is_empty() {
                errs.push(required(&p.child("path"), ""));
            } else {
                errs.extend(local_non_reserved_path(path, &p.child("path")));
            }
        }
        if let Some(ctb) = get(source, "clusterTrustBundle") {
            num += 1;
            let pp = sp.child("clusterTrustBundle");
            let name = opt_s(ctb, "name");
            let signer = opt_s(ctb, "signerName");
            match (name, signer) {
                (Some(_), Some(_)) => errs.push(invalid(
                    &pp,
                    ctb.clone(),
                    "only one of name and signerName may be used",
                )),
                (Some(n), None) => {
                    if n.is_empty() {
                        errs.push(required(&pp.child("name"), "must be a valid object name"));
                    }
                    if get(ctb, "labelSelector").is_some() {
                        errs.push(invalid(
                            &pp.child("labelSelector"),
                            jv(ctb, "labelSelector"),
                            "labelSelector must be unset if name is specified",
                        ));
                    }
                }
                (None, Some(sn)) => {
                    if sn.is_empty() {
                        errs.push(required(
                            &pp.child("signerName"),
                            "must be a valid signer name",
                        ));
                    }
                    errs.extend(validate_label_selector(
                        get(ctb, "labelSelector"),
                        false,
                        &pp.child("labelSelector"),
                    ));
                }
                (None, None) => {
                    errs.push(required(&pp, "either name or signerName must be specified"))
                }
            }
            let path = s(ctb, "path");
            if path.is_empty() {
                errs.push(required(&pp.child("path"), ""));
            }
            errs.extend(local_non_reserved_path(path, &pp.child("path")));
            if !all_paths.insert(path.to_string()) {
                errs.push(invalid(p, path, "conflicting duplicate paths"));
            }
        }
        if num > 1 {
            errs.push(forbidden(
                &sp,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    errs
}

fn pull_policy(v: &str, p: &P) -> Errs {
    match v {
        "Always" | "IfNotPresent" | "Never" => Vec::new(),
        "" => vec![required(p, "")],
        other => vec![not_supported(
            p,
            other,
            &["Always", "IfNotPresent", "Never"],
        )],
    }
}

/// `validateVolumeSource`: exactly one source, each validated.
pub(crate) fn volume_source(
    vol: &Value,
    p: &P,
    vol_name: &str,
    pod_name: Option<&str>,
    resource_is_pod: bool,
) -> Errs {
    let mut errs = Vec::new();
    let mut num = 0;
    // (JSON key, path used in the "more than 1" error)
    const ORDER: &[(&str, &str)] = &[
        ("emptyDir", "emptyDir"),
        ("hostPath", "hostPath"),
        ("gitRepo", "gitRepo"),
        ("gcePersistentDisk", "gcePersistentDisk"),
        ("awsElasticBlockStore", "awsElasticBlockStore"),
        ("secret", "secret"),
        ("nfs", "nfs"),
        ("iscsi", "iscsi"),
        ("glusterfs", "glusterfs"),
        ("flocker", "flocker"),
        ("persistentVolumeClaim", "persistentVolumeClaim"),
        ("rbd", "rbd"),
        ("cinder", "cinder"),
        ("cephfs", "cephFS"),
        ("quobyte", "quobyte"),
        ("downwardAPI", "downwarAPI"),
        ("fc", "fc"),
        ("flexVolume", "flexVolume"),
        ("configMap", "configMap"),
        ("azureFile", "azureFile"),
        ("vsphereVolume", "vsphereVolume"),
        ("photonPersistentDisk", "photonPersistentDisk"),
        ("portworxVolume", "portworxVolume"),
        ("azureDisk", "azureDisk"),
        ("storageos", "storageos"),
        ("projected", "projected"),
        ("scaleIO", "scaleIO"),
        ("csi", "csi"),
        ("ephemeral", "ephemeral"),
        ("image", "image"),
    ];
    for (key, err_path) in ORDER {
        let Some(src) = get(vol, key) else { continue };
        if *key == "emptyDir" {
            num += 1;
            if let Some(sl) = src.get("sizeLimit")
                && let Some(Ok(q)) = super::quantity::from_json(sl)
                && q.is_negative()
            {
                errs.push(forbidden(
                    &p.child("emptyDir").child("sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                ));
            }
            continue;
        }
        if num > 0 {
            errs.push(forbidden(&p.child(err_path), MORE_THAN_ONE));
        } else {
            num += 1;
            let sp = p.child(key);
            errs.extend(match *key {
                "hostPath" => host_path(src, &sp),
                "gitRepo" => {
                    let mut e = req_str(src, "repository", &sp);
                    e.extend(local_descending_path(
                        s(src, "directory"),
                        &sp.child("directory"),
                    ));
                    e
                }
                "gcePersistentDisk" => {
                    let pp = p.child("persistentDisk");
                    let mut e = req_str(src, "pdName", &pp);
                    e.extend(partition(src, &pp));
                    e
                }
                "awsElasticBlockStore" => {
                    let mut e = req_str(src, "volumeID", &sp);
                    e.extend(partition(src, &sp));
                    e
                }
                "secret" => secret_source(src, &sp),
                "nfs" => nfs(src, &sp),
                "iscsi" => iscsi(src, &sp, false, ""),
                "glusterfs" => glusterfs(src, &sp, false),
                "flocker" => flocker(src, &sp),
                "persistentVolumeClaim" => req_str(src, "claimName", &sp),
                "rbd" => rbd(src, &sp),
                "cinder" => cinder(src, &sp, false),
                "cephfs" => cephfs(src, &sp),
                "quobyte" => quobyte(src, &sp),
                "downwardAPI" => downward_api(src, &sp),
                "fc" => fc(src, &sp),
                "flexVolume" => flex(src, &sp),
                "configMap" => config_map_source(src, &sp),
                "azureFile" => azure_file(src, &sp, false),
                "vsphereVolume" => req_str(src, "volumePath", &sp),
                "photonPersistentDisk" => req_str(src, "pdID", &sp),
                "portworxVolume" => req_str(src, "volumeID", &sp),
                "azureDisk" => azure_disk(src, &sp),
                "storageos" => storage_os(src, &sp, false),
                "projected" => projected(src, &sp),
                "scaleIO" => scale_io(src, &sp),
                "csi" => csi(src, &sp, false),
                "ephemeral" => {
                    let mut e = Vec::new();
                    match get(src, "volumeClaimTemplate") {
                        None => e.push(required(&sp.child("volumeClaimTemplate"), "")),
                        Some(t) => e.extend(pvc_template(t, &sp.child("volumeClaimTemplate"))),
                    }
                    if let Some(pod) = pod_name.filter(|n| !n.is_empty())
                        && !vol_name.is_empty()
                    {
                        let pvc_name = format!("{pod}-{vol_name}");
                        for m in name_is_dns_subdomain(&pvc_name, false) {
                            e.push(invalid(
                                &p.child("name"),
                                vol_name,
                                &format!("PVC name {pvc_name:?}: {m}"),
                            ));
                        }
                    }
                    e
                }
                "image" => {
                    let mut e = Vec::new();
                    if resource_is_pod && s(src, "reference").is_empty() {
                        e.push(required(&sp.child("reference"), ""));
                    }
                    e.extend(pull_policy(s(src, "pullPolicy"), &sp.child("pullPolicy")));
                    e
                }
                _ => Vec::new(),
            });
        }
        if *key == "iscsi"
            && src.get("initiatorName").is_some()
            && vol_name.len() + 1 + s(src, "targetPortal").len() > 64
        {
            errs.push(invalid(
                &p.child("name"),
                vol_name,
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
            ));
        }
    }
    if num == 0 {
        errs.push(required(p, "must specify a volume type"));
    }
    errs
}

/// `ValidatePersistentVolumeClaimTemplate`: only labels and annotations in the metadata.
fn pvc_template(t: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    if let Some(m) = get(t, "metadata") {
        let mp = p.child("metadata");
        errs.extend(super::meta_annotations(
            get(m, "annotations"),
            &mp.child("annotations"),
        ));
        errs.extend(validate_labels(get(m, "labels"), &mp.child("labels")));
        if let Some(mo) = m.as_object() {
            let mut keys: Vec<&String> = mo.keys().collect();
            keys.sort();
            for k in keys {
                if k != "labels" && k != "annotations" && !semantic_eq(mo.get(k.as_str()), None) {
                    errs.push(forbidden(&mp.child(k), "cannot be set"));
                }
            }
        }
    }
    let spec = get(t, "spec").cloned().unwrap_or(Value::Null);
    errs.extend(pvc_spec(&spec, &p.child("spec")));
    errs
}

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

fn access_modes(spec: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let (mut rwop, mut other) = (false, false);
    for m in str_list(spec, "accessModes") {
        if !ACCESS_MODES.contains(&m) {
            errs.push(not_supported(&p.child("accessModes"), m, ACCESS_MODES));
        }
        if m == "ReadWriteOncePod" {
            rwop = true;
        } else if ACCESS_MODES.contains(&m) {
            other = true;
        }
    }
    if rwop && other {
        errs.push(forbidden(
            &p.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

fn data_source(ds: &Value, p: &P, with_namespace: bool) -> Errs {
    let mut errs = req_str(ds, "name", p);
    errs.extend(req_str(ds, "kind", p));
    let group = s(ds, "apiGroup");
    let kind = s(ds, "kind");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        errs.push(invalid(
            p,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() {
        errs.extend(name_errs(
            &p.child("apiGroup"),
            group,
            is_dns1123_subdomain(group),
        ));
    }
    if with_namespace {
        let ns = s(ds, "namespace");
        if !ns.is_empty() {
            errs.extend(name_errs(
                &p.child("namespace"),
                ns,
                name_is_dns_label(ns, false),
            ));
        }
    }
    errs
}

/// `ValidatePersistentVolumeClaimSpec`.
pub(crate) fn pvc_spec(spec: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    if len_of(spec, "accessModes") == 0 {
        errs.push(required(
            &p.child("accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if let Some(sel) = get(spec, "selector") {
        errs.extend(validate_label_selector(
            Some(sel),
            false,
            &p.child("selector"),
        ));
    }
    errs.extend(access_modes(spec, p));
    let sp = p.child("resources").key("storage");
    match get_in(spec, &["resources", "requests", "storage"]).and_then(super::quantity::from_json) {
        None => errs.push(required(&sp, "")),
        Some(Err(_)) => {}
        Some(Ok(q)) => {
            let pos = positive_quantity(&q, &sp);
            if pos.is_empty() {
                errs.extend(resource_quantity_value("storage", &q, &sp));
            } else {
                errs.extend(pos);
            }
        }
    }
    if let Some(sc) = opt_s(spec, "storageClassName").filter(|s| !s.is_empty()) {
        errs.extend(name_errs(
            &p.child("storageClassName"),
            sc,
            name_is_dns_subdomain(sc, false),
        ));
    }
    if let Some(vm) = opt_s(spec, "volumeMode")
        && vm != "Block"
        && vm != "Filesystem"
    {
        errs.push(not_supported(
            &p.child("volumeMode"),
            vm,
            &["Block", "Filesystem"],
        ));
    }
    let ds = get(spec, "dataSource");
    let dsr = get(spec, "dataSourceRef");
    if let Some(ds) = ds {
        errs.extend(data_source(ds, &p.child("dataSource"), false));
    }
    if let Some(dsr) = dsr {
        errs.extend(data_source(dsr, &p.child("dataSourceRef"), true));
    }
    let dsr_ns = dsr.map(|d| s(d, "namespace")).unwrap_or("");
    if !dsr_ns.is_empty() {
        if ds.is_some() {
            errs.push(invalid(
                p,
                p.child("dataSource").as_str(),
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if let (Some(a), Some(b)) = (ds, dsr)
        && (opt_s(a, "apiGroup") != opt_s(b, "apiGroup")
            || s(a, "kind") != s(b, "kind")
            || s(a, "name") != s(b, "name"))
    {
        errs.push(invalid(
            p,
            p.child("dataSource").as_str(),
            "must match dataSourceRef",
        ));
    }
    if let Some(vac) = opt_s(spec, "volumeAttributesClassName").filter(|s| !s.is_empty()) {
        errs.extend(name_errs(
            &p.child("volumeAttributesClassName"),
            vac,
            name_is_dns_subdomain(vac, false),
        ));
    }
    errs
}

/// `ValidatePersistentVolumeClaimUpdate` beyond revalidation: the spec is immutable but
/// for `volumeName` (set once), storage requests of bound claims and the
/// volume attributes class.
pub(crate) fn pvc_update(new: &Value, old: &Value) -> Errs {
    let mut errs = Vec::new();
    let new_spec = get(new, "spec").cloned().unwrap_or(Value::Null);
    let old_spec = get(old, "spec").cloned().unwrap_or(Value::Null);
    let mut n = new_spec.clone();
    let mut o = old_spec.clone();
    if s(&old_spec, "volumeName").is_empty()
        && let (Some(om), Some(nv)) = (o.as_object_mut(), new_spec.get("volumeName"))
    {
        om.insert("volumeName".into(), nv.clone());
    }
    let old_ann = super::meta_str_map(old, "annotations");
    let new_ann = super::meta_str_map(new, "annotations");
    const BETA_SC: &str = "volume.beta.kubernetes.io/storage-class";
    let old_sc_ann = old_ann.get(BETA_SC).map(String::as_str);
    let new_sc_ann = new_ann.get(BETA_SC).map(String::as_str);
    let old_sc = opt_s(&old_spec, "storageClassName");
    let new_sc = opt_s(&new_spec, "storageClassName");
    let upgrade_from_ann = old_sc_ann.is_some()
        && old_sc.is_none()
        && new_sc.is_some()
        && new_sc == old_sc_ann
        && (new_sc_ann.is_none() || new_sc_ann == old_sc_ann);
    if upgrade_from_ann {
        if let Some(nm) = n.as_object_mut() {
            nm.remove("storageClassName");
        }
    } else {
        if new_sc_ann.unwrap_or("") != old_sc_ann.unwrap_or("") {
            errs.push(invalid(
                &P::new("metadata").child("annotations").child(BETA_SC),
                new_sc_ann.unwrap_or(""),
                FIELD_IMMUTABLE,
            ));
        }
        let upgrade_from_nil =
            new_sc.is_some() && old_sc.is_none() && (old_sc_ann.is_none() || new_sc == old_sc_ann);
        if upgrade_from_nil && let Some(nm) = n.as_object_mut() {
            nm.remove("storageClassName");
        }
    }
    let bound = get_in(new, &["status", "phase"]).and_then(Value::as_str) == Some("Bound");
    if bound {
        if let Some(reqs) = n
            .get_mut("resources")
            .and_then(|r| r.get_mut("requests"))
            .and_then(Value::as_object_mut)
        {
            match get_in(&old_spec, &["resources", "requests", "storage"]) {
                Some(v) => {
                    reqs.insert("storage".into(), v.clone());
                }
                None => {
                    reqs.remove("storage");
                }
            }
        }
        if n.get("volumeAttributesClassName").is_some()
            && let Some(nm) = n.as_object_mut()
        {
            match old_spec.get("volumeAttributesClassName") {
                Some(v) => {
                    nm.insert("volumeAttributesClassName".into(), v.clone());
                }
                None => {
                    nm.remove("volumeAttributesClassName");
                }
            }
        }
    }
    if !semantic_eq(Some(&n), Some(&o)) {
        errs.push(forbidden(
            &P::new("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let q = |spec: &Value| {
        get_in(spec, &["resources", "requests", "storage"])
            .and_then(super::quantity::from_json)
            .and_then(Result::ok)
            .unwrap_or_else(Quantity::zero)
    };
    let (new_size, old_size) = (q(&new_spec), q(&old_spec));
    if new_size < old_size {
        let status_size = get_in(old, &["status", "capacity", "storage"])
            .and_then(super::quantity::from_json)
            .and_then(Result::ok)
            .unwrap_or_else(Quantity::zero);
        if new_size <= status_size {
            errs.push(forbidden(
                &P::new("spec")
                    .child("resources")
                    .child("requests")
                    .child("storage"),
                "field can not be less than status.capacity",
            ));
        }
    }
    errs.extend(immutable(
        new_spec.get("volumeMode"),
        old_spec.get("volumeMode"),
        &P::new("volumeMode"),
    ));
    if let Some(old_vac) = old_spec
        .get("volumeAttributesClassName")
        .and_then(Value::as_str)
        && new_spec
            .get("volumeAttributesClassName")
            .and_then(Value::as_str)
            != Some(old_vac)
    {
        match new_spec
            .get("volumeAttributesClassName")
            .and_then(Value::as_str)
        {
            None => errs.push(forbidden(
                &P::new("spec").child("volumeAttributesClassName"),
                "update from non-nil value to nil is forbidden",
            )),
            Some("") => errs.push(forbidden(
                &P::new("spec").child("volumeAttributesClassName"),
                "update from non-nil value to an empty string is forbidden",
            )),
            Some(_) => {}
        }
    }
    errs
}

/// `ValidatePersistentVolumeSpec` (not inline).
pub(crate) fn pv_spec(spec: &Value, pv_name: &str, p: &P) -> Errs {
    let mut errs = Vec::new();
    if len_of(spec, "accessModes") == 0 {
        errs.push(required(&p.child("accessModes"), ""));
    }
    errs.extend(access_modes(spec, p));
    let cap = obj(spec, "capacity");
    if cap.is_none_or(|c| c.is_empty()) {
        errs.push(required(&p.child("capacity"), ""));
    }
    if cap.is_none_or(|c| !c.contains_key("storage") || c.len() > 1) {
        errs.push(not_supported(
            &p.child("capacity"),
            jv(spec, "capacity"),
            &["storage"],
        ));
    }
    if let Some(cap) = cap {
        let cp = p.child("capacity");
        let mut keys: Vec<&String> = cap.keys().collect();
        keys.sort();
        for k in keys {
            if let Some(Ok(q)) = cap.get(k.as_str()).and_then(super::quantity::from_json) {
                let kp = cp.key(k);
                if q.value() < 0 {
                    errs.push(invalid(&kp, q.value(), "must be a valid resource quantity"));
                }
                errs.extend(positive_quantity(&q, &kp));
            }
        }
    }
    let reclaim = s(spec, "persistentVolumeReclaimPolicy");
    if !reclaim.is_empty() && !["Delete", "Recycle", "Retain"].contains(&reclaim) {
        errs.push(not_supported(
            &p.child("persistentVolumeReclaimPolicy"),
            reclaim,
            &["Delete", "Recycle", "Retain"],
        ));
    }
    let mut node_affinity_set = false;
    if let Some(na) = get(spec, "nodeAffinity") {
        node_affinity_set = true;
        let np = p.child("nodeAffinity");
        match get(na, "required") {
            Some(r) => errs.extend(validate_node_selector(r, false, &np.child("required"))),
            None => errs.push(required(
                &np.child("required"),
                "must specify required node constraints",
            )),
        }
    }
    let mut num = 0;
    const ORDER: &[(&str, &str)] = &[
        ("hostPath", "hostPath"),
        ("gcePersistentDisk", "gcePersistentDisk"),
        ("awsElasticBlockStore", "awsElasticBlockStore"),
        ("glusterfs", "glusterfs"),
        ("flocker", "flocker"),
        ("nfs", "nfs"),
        ("rbd", "rbd"),
        ("quobyte", "quobyte"),
        ("cephfs", "cephFS"),
        ("iscsi", "iscsi"),
        ("cinder", "cinder"),
        ("fc", "fc"),
        ("flexVolume", "flexVolume"),
        ("azureFile", "azureFile"),
        ("vsphereVolume", "vsphereVolume"),
        ("photonPersistentDisk", "photonPersistentDisk"),
        ("portworxVolume", "portworxVolume"),
        ("azureDisk", "azureDisk"),
        ("scaleIO", "scaleIO"),
        ("local", "local"),
        ("storageos", "storageos"),
        ("csi", "csi"),
    ];
    for (key, err_path) in ORDER {
        let Some(src) = get(spec, key) else { continue };
        if num > 0 && *key != "flexVolume" {
            errs.push(forbidden(&p.child(err_path), MORE_THAN_ONE));
            continue;
        }
        num += 1;
        let sp = p.child(key);
        errs.extend(match *key {
            "hostPath" => host_path(src, &sp),
            "gcePersistentDisk" => {
                let pp = p.child("persistentDisk");
                let mut e = req_str(src, "pdName", &pp);
                e.extend(partition(src, &pp));
                e
            }
            "awsElasticBlockStore" => {
                let mut e = req_str(src, "volumeID", &sp);
                e.extend(partition(src, &sp));
                e
            }
            "glusterfs" => glusterfs(src, &sp, true),
            "flocker" => flocker(src, &sp),
            "nfs" => nfs(src, &sp),
            "rbd" => rbd(src, &sp),
            "quobyte" => quobyte(src, &sp),
            "cephfs" => cephfs(src, &sp),
            "iscsi" => iscsi(src, &sp, true, pv_name),
            "cinder" => cinder(src, &sp, true),
            "fc" => fc(src, &sp),
            "flexVolume" => flex(src, &sp),
            "azureFile" => azure_file(src, &sp, true),
            "vsphereVolume" => req_str(src, "volumePath", &sp),
            "photonPersistentDisk" => req_str(src, "pdID", &sp),
            "portworxVolume" => req_str(src, "volumeID", &sp),
            "azureDisk" => azure_disk(src, &sp),
            "scaleIO" => scale_io(src, &sp),
            "local" => {
                let path = s(src, "path");
                let mut e = if path.is_empty() {
                    vec![required(&sp.child("path"), "")]
                } else {
                    path_no_backsteps(path, &sp.child("path"))
                };
                if !node_affinity_set {
                    e.push(required(
                        &p.child("nodeAffinity"),
                        "Local volume requires node affinity",
                    ));
                }
                e
            }
            "storageos" => storage_os(src, &sp, true),
            "csi" => csi(src, &sp, true),
            _ => Vec::new(),
        });
    }
    if num == 0 {
        errs.push(required(p, "must specify a volume type"));
    }
    if let Some(hp) = get(spec, "hostPath")
        && clean_path(s(hp, "path")) == "/"
        && reclaim == "Recycle"
    {
        errs.push(forbidden(
            &p.child("persistentVolumeReclaimPolicy"),
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    let sc = s(spec, "storageClassName");
    if !sc.is_empty() {
        errs.extend(name_errs(
            &p.child("storageClassName"),
            sc,
            name_is_dns_subdomain(sc, false),
        ));
    }
    if let Some(vm) = opt_s(spec, "volumeMode")
        && vm != "Block"
        && vm != "Filesystem"
    {
        errs.push(not_supported(
            &p.child("volumeMode"),
            vm,
            &["Block", "Filesystem"],
        ));
    }
    if let Some(vac) = opt_s(spec, "volumeAttributesClassName") {
        if vac.is_empty() {
            errs.push(required(
                &p.child("volumeAttributesClassName"),
                "an empty string is disallowed",
            ));
        } else {
            errs.extend(name_errs(
                &p.child("volumeAttributesClassName"),
                vac,
                name_is_dns_subdomain(vac, false),
            ));
        }
        if get(spec, "csi").is_none() {
            errs.push(required(
                &p.child("csi"),
                "has to be specified when using volumeAttributesClassName",
            ));
        }
    }
    errs
}

/// Go's `path.Clean` for the only question asked of it here (is it the root?).
fn clean_path(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if rooted {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// `ValidatePersistentVolumeUpdate` beyond revalidation.
pub(crate) fn pv_update(new: &Value, old: &Value) -> Errs {
    const SOURCES: &[&str] = &[
        "hostPath",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "glusterfs",
        "flocker",
        "nfs",
        "rbd",
        "quobyte",
        "cephfs",
        "iscsi",
        "cinder",
        "fc",
        "flexVolume",
        "azureFile",
        "vsphereVolume",
        "photonPersistentDisk",
        "portworxVolume",
        "azureDisk",
        "scaleIO",
        "local",
        "storageos",
        "csi",
    ];
    let mut errs = Vec::new();
    let ns = get(new, "spec").cloned().unwrap_or(Value::Null);
    let os = get(old, "spec").cloned().unwrap_or(Value::Null);
    let pick = |spec: &Value, allow_expand: bool| -> Value {
        let mut m = serde_json::Map::new();
        for k in SOURCES {
            if let Some(v) = get(spec, k) {
                m.insert((*k).to_string(), v.clone());
            }
        }
        if allow_expand && let Some(csi) = m.get_mut("csi").and_then(Value::as_object_mut) {
            csi.remove("controllerExpandSecretRef");
        }
        Value::Object(m)
    };
    let old_csi_no_expand =
        get(&os, "csi").is_some_and(|c| get(c, "controllerExpandSecretRef").is_none());
    let new_has_expand =
        get(&ns, "csi").is_some_and(|c| get(c, "controllerExpandSecretRef").is_some());
    let allow = old_csi_no_expand && new_has_expand;
    if !semantic_eq(Some(&pick(&ns, allow)), Some(&pick(&os, false))) {
        errs.push(forbidden(
            &P::new("spec").child("persistentvolumesource"),
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    errs.extend(immutable(
        ns.get("volumeMode"),
        os.get("volumeMode"),
        &P::new("volumeMode"),
    ));
    if let Some(old_na) = get(&os, "nodeAffinity")
        && !semantic_eq(get(&ns, "nodeAffinity"), Some(old_na))
    {
        errs.push(invalid(
            &P::new("nodeAffinity"),
            jv(&ns, "nodeAffinity"),
            "field is immutable, except for updating from beta label to GA",
        ));
    }
    if os.get("volumeAttributesClassName").is_some()
        && ns.get("volumeAttributesClassName").is_none()
    {
        errs.push(forbidden(
            &P::new("spec").child("volumeAttributesClassName"),
            "update from non-nil value to nil is forbidden",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iqn_formats() {
        assert!(iqn_ok("iqn.2015-02.example.com:test"));
        assert!(!iqn_ok("iqn.2015-02.example.com"));
        assert!(iqn_ok("eui.02004567A425678D"));
        assert!(iqn_ok("naa.62004567BA64678D0123456789ABCDEF"));
        assert!(!iqn_ok("eui.1"));
    }

    #[test]
    fn clean() {
        assert_eq!(clean_path("/a/.."), "/");
        assert_eq!(clean_path("//"), "/");
        assert_eq!(clean_path("/a"), "/a");
    }
}
