//! `kubectl api-versions`: every group-version the server serves, always asked afresh.

use std::io::Write;

use crate::ctx::Ctx;
use crate::discovery::{ApiGroupList, DiscoveryClient};
use crate::error::{CliError, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(hide = true)]
    pub rest: Vec<String>,
}

/// `metav1.ExtractGroupVersions`, sorted.
pub fn versions(groups: &ApiGroupList) -> Vec<String> {
    let mut v: Vec<String> = groups
        .groups
        .iter()
        .flat_map(|g| g.versions.iter().map(|v| v.group_version.clone()))
        .collect();
    v.sort();
    v
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    if !args.rest.is_empty() {
        return Err(CliError::usage(
            "kubectl api-versions",
            format!("unexpected arguments: [{}]", args.rest.join(" ")),
        ));
    }
    let mut d = DiscoveryClient::for_ctx(ctx).await?;
    d.invalidate();
    let groups = d.server_groups().await.map_err(|e| match e {
        CliError::Api(s) => CliError::msg(format!(
            "couldn't get available api versions from server: {}",
            s.message
        )),
        other => other,
    })?;
    let text: String = versions(&ApiGroupList {
        groups,
        ..ApiGroupList::default()
    })
    .into_iter()
    .map(|v| v + "\n")
    .collect();
    ctx.out().write_all(text.as_bytes())?;
    Ok(())
}
