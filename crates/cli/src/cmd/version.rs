//! `kubectl version`: the client version, and the server's from `/version`.

use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::transport::CLIENT_VERSION;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// If true, shows client version only (no server required).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    client: Option<bool>,
    /// One of 'yaml' or 'json'.
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
}

/// Our `version.Info` (the fields upstream's client prints).
pub fn client_info() -> Value {
    let (major, minor) = major_minor(CLIENT_VERSION);
    serde_json::json!({
        "major": major,
        "minor": minor,
        "gitVersion": CLIENT_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": api::platform::platform(),
    })
}

/// `v1.33.0-rkube` → ("1", "33").
fn major_minor(v: &str) -> (String, String) {
    let mut it = v.trim_start_matches('v').split(['.', '-', '+']);
    (
        it.next().unwrap_or_default().to_string(),
        it.next().unwrap_or_default().to_string(),
    )
}

/// Keys in upstream's `version.Info` order (`-o json` keeps struct order).
fn ordered_json(v: &Value, indent: usize) -> String {
    const ORDER: &[&str] = &[
        "clientVersion",
        "kustomizeVersion",
        "serverVersion",
        "major",
        "minor",
        "emulationMajor",
        "emulationMinor",
        "minCompatibilityMajor",
        "minCompatibilityMinor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ];
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by_key(|k| ORDER.iter().position(|o| o == k).unwrap_or(usize::MAX));
            let pad = "  ".repeat(indent + 1);
            let inner: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{pad}{}: {}",
                        Value::String((*k).clone()),
                        ordered_json(&m[k.as_str()], indent + 1)
                    )
                })
                .collect();
            if inner.is_empty() {
                "{}".into()
            } else {
                format!("{{\n{}\n{}}}", inner.join(",\n"), "  ".repeat(indent))
            }
        }
        other => other.to_string(),
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    let format = args.output.clone().unwrap_or_default();
    if !format.is_empty() && format != "yaml" && format != "json" {
        return Err(CliError::msg("--output must be 'yaml' or 'json'"));
    }
    let client_only = args.client.unwrap_or(false);
    let mut doc = serde_json::json!({ "clientVersion": client_info() });
    let mut failure = None;
    if !client_only {
        let server = async {
            let client = ctx.client().await?;
            client.get_json("/version?timeout=32s").await
        };
        match server.await {
            Ok(v) => {
                if let Value::Object(m) = &mut doc {
                    m.insert("serverVersion".into(), v);
                }
            }
            Err(e) if e.status_code() == Some(401) => {
                failure = Some(CliError::msg(
                    "You must be logged in to the server (the server has asked for the client to provide credentials)",
                ))
            }
            Err(e) => failure = Some(e),
        }
    }
    let text = match format.as_str() {
        "json" => format!("{}\n", ordered_json(&doc, 0)),
        "yaml" => crate::output::yaml::to_yaml(&doc),
        _ => {
            let mut s = format!("Client Version: {CLIENT_VERSION}\n");
            if let Some(sv) = doc.get("serverVersion") {
                let git = sv.get("gitVersion").and_then(Value::as_str).unwrap_or("");
                s.push_str(&format!("Server Version: {git}\n"));
                if let Some(w) = skew_warning(sv) {
                    s.push_str(&w);
                }
            }
            s
        }
    };
    ctx.out().write_all(text.as_bytes())?;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// kubectl's warning when client and server are more than one minor version apart.
fn skew_warning(server: &Value) -> Option<String> {
    let (_, cmin) = major_minor(CLIENT_VERSION);
    let smin = server
        .get("minor")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim_end_matches('+')
        .to_string();
    let (c, s) = (cmin.parse::<i64>().ok()?, smin.parse::<i64>().ok()?);
    ((c - s).abs() > 1).then(|| {
        format!(
            "WARNING: version difference between client (1.{c}) and server (1.{s}) exceeds the supported minor version skew of +/-1\n"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(major_minor("v1.33.0-rkube"), ("1".into(), "33".into()));
        assert_eq!(client_info()["gitVersion"], CLIENT_VERSION);
        assert!(skew_warning(&serde_json::json!({"minor": "33"})).is_none());
        assert!(
            skew_warning(&serde_json::json!({"minor": "30"}))
                .unwrap()
                .contains("(1.30)")
        );
    }

    #[test]
    fn json_in_struct_order() {
        let v = serde_json::json!({"clientVersion": {"platform": "p", "major": "1"}});
        assert_eq!(
            ordered_json(&v, 0),
            "{\n  \"clientVersion\": {\n    \"major\": \"1\",\n    \"platform\": \"p\"\n  }\n}"
        );
    }
}
