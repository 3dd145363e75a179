//! Generates `src/generated.rs`, the decoding table, from two inputs:
//!
//! - the Rust sources of the `k8s-pb` crate (kube-rs's prost bindings of upstream's
//!   `generated.proto` files, Apache-2.0), for the structure of every message: field numbers,
//!   wire types, message types, repeated and map fields, which Go slice types are wrapped in a
//!   message (`+protobuf.nullable=true`), and which kinds exist (`impl Resource`);
//! - `data/go-json.tsv`, for what the protobuf sources do not say: each field's JSON name and
//!   how Go's encoding/json writes it (pointer, `omitempty`, inlined).
//!
//! Run it by hand after changing either input (it is ignored otherwise), pointing at the
//! unpacked crate (`cargo fetch` of any crate that depends on `k8s-pb` puts it in the cargo
//! registry; the directory is found there by default):
//!
//! ```text
//! K8S_PB_SRC=~/.cargo/registry/src/index.crates.io-*/k8s-pb-0.9.0 \
//!   cargo test -p kubeproto --test generate_table -- --ignored
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The packages whose every message is decoded (and whatever they reference).
const PACKAGES: &[&str] = &[
    "k8s.io.api.admissionregistration.v1",
    "k8s.io.api.apps.v1",
    "k8s.io.api.authentication.v1",
    "k8s.io.api.authorization.v1",
    "k8s.io.api.autoscaling.v1",
    "k8s.io.api.autoscaling.v2",
    "k8s.io.api.batch.v1",
    "k8s.io.api.certificates.v1",
    "k8s.io.api.coordination.v1",
    "k8s.io.api.core.v1",
    "k8s.io.api.discovery.v1",
    "k8s.io.api.events.v1",
    "k8s.io.api.flowcontrol.v1",
    "k8s.io.api.networking.v1",
    "k8s.io.api.node.v1",
    "k8s.io.api.policy.v1",
    "k8s.io.api.rbac.v1",
    "k8s.io.api.scheduling.v1",
    "k8s.io.api.storage.v1",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1",
    "k8s.io.apimachinery.pkg.apis.meta.v1",
];

/// Kinds of subresources, which `k8s-pb` does not mark as resources: (package, kind,
/// apiVersion).
const SUBRESOURCE_KINDS: &[(&str, &str, &str)] = &[
    (
        "k8s.io.api.authentication.v1",
        "TokenRequest",
        "authentication.k8s.io/v1",
    ),
    ("k8s.io.api.autoscaling.v1", "Scale", "autoscaling/v1"),
    ("k8s.io.api.policy.v1", "Eviction", "policy/v1"),
];

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// meta/v1 kinds that every group version registers (`metav1.AddToGroupVersion`) or that
/// are unversioned: looked up by kind alone.
const META_KINDS: &[&str] = &[
    "APIGroup",
    "APIGroupList",
    "APIResourceList",
    "APIVersions",
    "CreateOptions",
    "DeleteOptions",
    "GetOptions",
    "ListOptions",
    "PartialObjectMetadata",
    "PartialObjectMetadataList",
    "PatchOptions",
    "Status",
    "UpdateOptions",
    "WatchEvent",
];

#[derive(Debug, Clone)]
struct PbField {
    rust_name: String,
    tag: u32,
    /// `string`, `bytes`, `bool`, `int32`, `int64`, `double`, `float`, `message`.
    kind: String,
    /// `single`, `repeated`, `map`.
    label: &'static str,
    /// (package, rust struct name) of a message type.
    target: Option<(String, String)>,
}

#[derive(Debug, Default)]
struct PbMessage {
    nullable: bool,
    fields: Vec<PbField>,
}

#[derive(Debug, Default)]
struct PbPackage {
    messages: BTreeMap<String, PbMessage>,
    /// (apiVersion, kind, rust struct name)
    resources: Vec<(String, String, String)>,
}

fn k8s_pb_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("K8S_PB_SRC") {
        return PathBuf::from(dir);
    }
    let home = PathBuf::from(std::env::var_os("CARGO_HOME").unwrap_or_else(|| {
        let mut h = std::env::var_os("HOME").expect("HOME");
        h.push("/.cargo");
        h
    }));
    for entry in std::fs::read_dir(home.join("registry/src")).expect("cargo registry") {
        let candidate = entry.unwrap().path().join("k8s-pb-0.9.0");
        if candidate.is_dir() {
            return candidate;
        }
    }
    panic!("k8s-pb-0.9.0 not found in the cargo registry; set K8S_PB_SRC");
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.file_name().is_some_and(|n| n == "mod.rs") {
            out.push(path);
        }
    }
}

fn resolve(module: &[String], path: &str) -> (String, String) {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let (base, rest): (Vec<String>, &[&str]) = if segs.first() == Some(&"crate") {
        (Vec::new(), &segs[1..])
    } else {
        let ups = segs.iter().take_while(|s| **s == "super").count();
        (module[..module.len() - ups].to_vec(), &segs[ups..])
    };
    let (name, modpath) = rest.split_last().unwrap();
    let mut full = base;
    full.extend(modpath.iter().map(|s| s.to_string()));
    (format!("k8s.io.{}", full.join(".")), name.to_string())
}

fn message_path(ty: &str) -> &str {
    let mut t = ty;
    for prefix in [
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
        "::prost::alloc::collections::BTreeMap<::prost::alloc::string::String,",
    ] {
        if let Some(rest) = t.strip_prefix(prefix) {
            t = rest;
        }
    }
    if let Some(rest) = t.strip_prefix("::prost::alloc::boxed::Box<") {
        t = rest;
    }
    t.trim_end_matches('>')
}

fn parse_package(file: &Path, root: &Path) -> (String, Vec<String>, PbPackage) {
    let rel = file.parent().unwrap().strip_prefix(root).unwrap();
    let module: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let package = format!("k8s.io.{}", module.join("."));
    let text = std::fs::read_to_string(file).unwrap();
    let mut pkg = PbPackage::default();
    let mut docs = String::new();
    let mut current: Option<(String, PbMessage)> = None;
    let mut attr: Option<String> = None;
    let mut decl = String::new();
    let mut resource: Option<(String, Option<String>, Option<String>)> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some((ref name, ref mut api_version, ref mut kind)) = resource {
            if let Some(v) = t.strip_prefix("const API_VERSION: &'static str = \"") {
                *api_version = Some(v.trim_end_matches("\";").to_string());
            } else if let Some(v) = t.strip_prefix("const KIND: &'static str = \"") {
                *kind = Some(v.trim_end_matches("\";").to_string());
            } else if line == "}" {
                if let (Some(a), Some(k)) = (api_version.clone(), kind.clone()) {
                    pkg.resources.push((a, k, name.clone()));
                }
                resource = None;
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("impl crate::Resource for ") {
            resource = Some((rest.trim_end_matches(" {").to_string(), None, None));
            continue;
        }
        if let Some(doc) = t.strip_prefix("///") {
            docs.push_str(doc);
            docs.push('\n');
            continue;
        }
        if let Some(rest) = t.strip_prefix("pub struct ") {
            let name = rest
                .trim_end_matches(" {")
                .trim_end_matches(" {}")
                .to_string();
            let msg = PbMessage {
                nullable: docs.contains("+protobuf.nullable=true"),
                fields: Vec::new(),
            };
            if rest.ends_with("{}") {
                pkg.messages.insert(name, msg);
            } else {
                current = Some((name, msg));
            }
            docs.clear();
            continue;
        }
        if current.is_none() {
            if !t.starts_with("#[") {
                docs.clear();
            }
            continue;
        }
        if line == "}" {
            let (name, msg) = current.take().unwrap();
            pkg.messages.insert(name, msg);
            docs.clear();
            continue;
        }
        if let Some(a) = t.strip_prefix("#[prost(") {
            attr = Some(a.trim_end_matches(")]").to_string());
            continue;
        }
        if attr.is_some() {
            decl.push_str(t);
            let balanced = decl.matches('<').count() == decl.matches('>').count();
            if !decl.ends_with(',') || !balanced {
                continue;
            }
            let a = attr.take().unwrap();
            let d = std::mem::take(&mut decl);
            docs.clear();
            let (name, ty) = d.strip_prefix("pub ").unwrap().split_once(':').unwrap();
            let ty: String = ty.trim_end_matches(',').split_whitespace().collect();
            let ty = ty.replace(",>", ">");
            let tag: u32 = a
                .split("tag = \"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let (kind, label) = if let Some(m) = a.strip_prefix("btree_map = \"string, ") {
                (m.split('"').next().unwrap().to_string(), "map")
            } else {
                let kind = a
                    .split([',', ' '])
                    .next()
                    .unwrap()
                    .trim_end_matches(" = \"vec\"")
                    .to_string();
                let label = if a.contains("repeated") {
                    "repeated"
                } else {
                    "single"
                };
                (kind, label)
            };
            let target = (kind == "message").then(|| resolve(&module, message_path(&ty)));
            let (_, msg) = current.as_mut().unwrap();
            msg.fields.push(PbField {
                rust_name: name.trim().trim_start_matches("r#").to_string(),
                tag,
                kind,
                label,
                target,
            });
        }
    }
    (package, module, pkg)
}

struct Overlay {
    /// message → tag → (json, flags)
    fields: BTreeMap<String, BTreeMap<u32, (String, String)>>,
}

fn read_overlay() -> Overlay {
    let text = std::fs::read_to_string(
        std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(
                || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
                std::path::PathBuf::from,
            )
            .join("data/go-json.tsv"),
    )
    .unwrap();
    let mut fields: BTreeMap<String, BTreeMap<u32, (String, String)>> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "bad overlay line {line:?}");
        fields.entry(cols[0].to_string()).or_default().insert(
            cols[1].parse().unwrap(),
            (cols[2].to_string(), cols[3].to_string()),
        );
    }
    Overlay { fields }
}

fn special(name: &str, nullable: bool) -> &'static str {
    const APIEXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";
    match name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => "Time",
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => "MicroTime",
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => "Duration",
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => "FieldsV1",
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => "Quantity",
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => "IntOrString",
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => "RawExtension",
        _ => match name.strip_prefix(APIEXT) {
            Some("JSON") => "Json",
            Some("JSONSchemaPropsOrArray") => "SchemaOrArray",
            Some("JSONSchemaPropsOrBool") => "SchemaOrBool",
            Some("JSONSchemaPropsOrStringArray") => "SchemaOrStringArray",
            _ if nullable => "List",
            _ => "None",
        },
    }
}

#[test]
#[ignore = "regenerates src/generated.rs from the k8s-pb sources; run by hand"]
fn generate() {
    let root = k8s_pb_dir().join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut packages: BTreeMap<String, PbPackage> = BTreeMap::new();
    for f in &files {
        let (name, _module, pkg) = parse_package(f, &root);
        if !pkg.messages.is_empty() {
            packages.insert(name, pkg);
        }
    }
    let overlay = read_overlay();
    // (package, rust name) → proto message name.
    let proto_name = |package: &str, rust: &str| -> String {
        let prefix = format!("{package}.");
        overlay
            .fields
            .keys()
            .find(|k| {
                k.strip_prefix(&prefix)
                    .is_some_and(|n| !n.contains('.') && n.eq_ignore_ascii_case(rust))
            })
            .cloned()
            .unwrap_or_else(|| format!("{package}.{rust}"))
    };

    // Messages reachable from the chosen packages.
    let mut included: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut queue: VecDeque<(String, String)> = VecDeque::new();
    for p in PACKAGES {
        let pkg = packages.get(*p).unwrap_or_else(|| panic!("no package {p}"));
        for name in pkg.messages.keys() {
            queue.push_back((p.to_string(), name.clone()));
        }
    }
    while let Some((p, rust)) = queue.pop_front() {
        let full = proto_name(&p, &rust);
        if included.contains_key(&full) {
            continue;
        }
        let msg = packages
            .get(&p)
            .and_then(|pkg| pkg.messages.get(&rust))
            .unwrap_or_else(|| panic!("unresolved message {p}.{rust}"));
        for f in &msg.fields {
            if let Some(t) = &f.target {
                queue.push_back(t.clone());
            }
        }
        included.insert(full, (p, rust));
    }
    let index: BTreeMap<&str, usize> = included
        .keys()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    assert!(index.len() < u16::MAX as usize);

    let mut problems = Vec::new();
    let mut out = String::new();
    out.push_str(
        "//! @generated by `tests/generate_table.rs` from the `k8s-pb` 0.9.0 crate's sources\n\
         //! (field numbers, wire types, message types, labels, kinds) and `data/go-json.tsv`\n\
         //! (JSON names, Go JSON semantics). Do not edit by hand.\n\n\
         use crate::table::Label::{Map as M, Repeated as R, Single as S};\n\
         use crate::table::Special as X;\n\
         #[allow(unused_imports)]\n\
         use crate::table::Ty::{Bool, Bytes, Double, Int32, Int64, Message as Msg, String as Str};\n\
         use crate::table::{F, Kind, Message};\n\n\
         pub(crate) static MESSAGES: &[Message] = &[\n",
    );
    for (i, (full, (p, rust))) in included.iter().enumerate() {
        let msg = &packages[p].messages[rust];
        let sp = special(full, msg.nullable);
        if sp == "List" {
            let ok = matches!(msg.fields.as_slice(), [f] if f.tag == 1 && f.label == "repeated");
            assert!(ok, "{full}: nullable wrapper without one repeated field");
        }
        let go = overlay.fields.get(full);
        writeln!(out, "    // {i}").unwrap();
        writeln!(
            out,
            "    Message {{ name: {full:?}, special: X::{sp}, fields: &["
        )
        .unwrap();
        let mut fields = msg.fields.clone();
        fields.sort_by_key(|f| f.tag);
        for f in &fields {
            let (json, flags) = match go.and_then(|g| g.get(&f.tag)) {
                Some((j, fl)) => (j.clone(), fl.clone()),
                None => {
                    if sp == "None" {
                        problems.push(format!(
                            "{full} field {} ({}) has no JSON name in data/go-json.tsv",
                            f.tag, f.rust_name
                        ));
                    }
                    (f.rust_name.clone(), "X".to_string())
                }
            };
            let mut bits = 0u8;
            for c in flags.chars() {
                bits |= match c {
                    'P' => 1,
                    'R' => 2,
                    'I' => 4,
                    'X' => 8,
                    '-' => 0,
                    other => panic!("{full}: unknown flag {other}"),
                };
            }
            let label = match f.label {
                "single" => "S",
                "repeated" => "R",
                _ => "M",
            };
            let ty = match f.kind.as_str() {
                "string" => "Str".to_string(),
                "bytes" => "Bytes".to_string(),
                "bool" => "Bool".to_string(),
                "int32" => "Int32".to_string(),
                "int64" => "Int64".to_string(),
                "double" => "Double".to_string(),
                "message" => {
                    let (tp, tr) = f.target.clone().unwrap();
                    format!("Msg({})", index[proto_name(&tp, &tr).as_str()])
                }
                other => panic!("{full}: unsupported field type {other}"),
            };
            writeln!(
                out,
                "        F({}, {json:?}, {label}, {ty}, {bits}),",
                f.tag
            )
            .unwrap();
        }
        if let Some(g) = go {
            for tag in g.keys() {
                if !fields.iter().any(|f| f.tag == *tag) {
                    problems.push(format!(
                        "{full}: field {tag} of the Go type is not in k8s-pb"
                    ));
                }
            }
        }
        out.push_str("    ]},\n");
    }
    out.push_str("];\n\n");

    // Kinds: resources and their lists.
    let mut kinds: BTreeSet<(String, String, usize)> = BTreeSet::new();
    for p in PACKAGES {
        let pkg = &packages[*p];
        for (api_version, kind, rust) in &pkg.resources {
            kinds.insert((
                api_version.clone(),
                kind.clone(),
                index[proto_name(p, rust).as_str()],
            ));
            let list = format!("{rust}List");
            if pkg.messages.contains_key(&list) {
                kinds.insert((
                    api_version.clone(),
                    format!("{kind}List"),
                    index[proto_name(p, &list).as_str()],
                ));
            }
        }
    }
    for (p, kind, api_version) in SUBRESOURCE_KINDS {
        kinds.insert((
            api_version.to_string(),
            kind.to_string(),
            index[proto_name(p, kind).as_str()],
        ));
    }
    out.push_str(
        "/// `(apiVersion, kind, message)`, sorted.\npub(crate) static KINDS: &[Kind] = &[\n",
    );
    for (a, k, i) in &kinds {
        writeln!(out, "    ({a:?}, {k:?}, {i}),").unwrap();
    }
    out.push_str("];\n\n");
    out.push_str(
        "/// meta/v1 kinds every group version registers (or unversioned ones): `(kind, message)`, sorted.\n\
         pub(crate) static META_KINDS: &[(&str, u16)] = &[\n",
    );
    for k in META_KINDS {
        let i = index
            .get(format!("{META}.{k}").as_str())
            .unwrap_or_else(|| panic!("no meta kind {k}"));
        writeln!(out, "    ({k:?}, {i}),").unwrap();
    }
    out.push_str("];\n");

    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let dest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(
            || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            std::path::PathBuf::from,
        )
        .join("src/generated.rs");
    std::fs::write(&dest, out).unwrap();
    eprintln!(
        "wrote {} ({} messages, {} kinds)",
        dest.display(),
        included.len(),
        kinds.len()
    );
}
