//! `kubectl config`: viewing and modifying kubeconfig files with client-go's rules (see
//! [`crate::kubeconfig`]): every change is written to the file that defines the entry,
//! else to the default file (`--kubeconfig`, the first existing `$KUBECONFIG` file, or
//! `~/.kube/config`).

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::klog::Logger;
use crate::kubeconfig::{self, AuthInfo, Cluster, Config, Rules};
use crate::output::{Format, PrintFlags};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Display merged kubeconfig settings or a specified kubeconfig file.
    View(ViewArgs),
    /// Display the current-context.
    CurrentContext,
    /// Set the current-context in a kubeconfig file.
    #[command(alias = "use")]
    UseContext { name: Option<String> },
    /// Describe one or many contexts.
    GetContexts(GetContextsArgs),
    /// Display clusters defined in the kubeconfig.
    GetClusters,
    /// Display users defined in the kubeconfig.
    GetUsers,
    /// Set a context entry in kubeconfig.
    SetContext(SetContextArgs),
    /// Set a cluster entry in kubeconfig.
    SetCluster(SetClusterArgs),
    /// Set a user entry in kubeconfig.
    SetCredentials(SetCredentialsArgs),
    /// Set an individual value in a kubeconfig file.
    Set(SetArgs),
    /// Unset an individual value in a kubeconfig file.
    Unset { property: Option<String> },
    /// Delete the specified context from the kubeconfig.
    DeleteContext { name: Option<String> },
    /// Delete the specified cluster from the kubeconfig.
    DeleteCluster { name: Option<String> },
    /// Delete the specified user from the kubeconfig.
    DeleteUser { name: Option<String> },
    /// Rename a context from the kubeconfig file.
    RenameContext {
        old: Option<String>,
        new: Option<String>,
    },
}

#[derive(clap::Args, Debug)]
struct ViewArgs {
    /// Remove all information not used by current-context from the output.
    #[arg(long)]
    minify: bool,
    /// Flatten the resulting kubeconfig file into self-contained output.
    #[arg(long)]
    flatten: bool,
    /// Display raw byte data and sensitive data.
    #[arg(long)]
    raw: bool,
    /// Merge the full hierarchy of kubeconfig files.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    merge: bool,
    #[command(flatten)]
    print: PrintFlags,
}

#[derive(clap::Args, Debug)]
struct GetContextsArgs {
    names: Vec<String>,
    /// Output format. One of: (name).
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// When using the default or custom-column output format, don't print headers.
    #[arg(long)]
    no_headers: bool,
}

#[derive(clap::Args, Debug)]
struct SetContextArgs {
    name: Option<String>,
    /// Modify the current context.
    #[arg(long)]
    current: bool,
}

#[derive(clap::Args, Debug)]
struct SetClusterArgs {
    name: Option<String>,
    /// embed-certs for the cluster entry in kubeconfig.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    embed_certs: Option<bool>,
    /// proxy-url for the cluster entry in kubeconfig.
    #[arg(long)]
    proxy_url: Option<String>,
}

#[derive(clap::Args, Debug)]
struct SetCredentialsArgs {
    name: Option<String>,
    /// Auth provider for the user entry in kubeconfig.
    #[arg(long)]
    auth_provider: Option<String>,
    /// 'key=value' arguments for the auth provider ('key-' removes).
    #[arg(long, value_delimiter = ',')]
    auth_provider_arg: Vec<String>,
    /// Embed client cert/key for the user entry in kubeconfig.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    embed_certs: Option<bool>,
    /// Command for the exec credential plugin for the user entry in kubeconfig.
    #[arg(long)]
    exec_command: Option<String>,
    /// API version of the exec credential plugin for the user entry in kubeconfig.
    #[arg(long)]
    exec_api_version: Option<String>,
    /// New arguments for the exec credential plugin command.
    #[arg(long)]
    exec_arg: Option<Vec<String>>,
    /// 'key=value' environment values for the exec credential plugin ('key-' removes).
    #[arg(long)]
    exec_env: Vec<String>,
    /// InteractiveMode of the exec credentials plugin.
    #[arg(long)]
    exec_interactive_mode: Option<String>,
    /// ProvideClusterInfo of the exec credentials plugin.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    exec_provide_cluster_info: Option<bool>,
}

#[derive(clap::Args, Debug)]
struct SetArgs {
    property: Option<String>,
    value: Option<String>,
    /// When writing a []byte PROPERTY_VALUE, write the given string directly without
    /// base64 decoding.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    set_raw_bytes: Option<bool>,
}

/// The files and the merged starting configuration (`GetStartingConfig`).
struct Access {
    rules: Rules,
    start: Config,
}

impl Access {
    fn load(ctx: &Ctx) -> Result<Access> {
        let rules = Rules::from_process(&ctx.global);
        let log = Logger::stderr(ctx.global.verbosity);
        // `GetStartingConfig`: a missing `--kubeconfig` file is an empty configuration.
        let start = match &rules.explicit {
            Some(p) if !p.exists() => Config::default(),
            _ => kubeconfig::load_rules_opts(&rules, &log, false)?,
        };
        Ok(Access { rules, start })
    }

    /// The file named in `deleted … from FILE` messages.
    fn config_file(&self) -> String {
        self.rules.default_file().display().to_string()
    }

    fn save(&self, new: &Config, relativize: bool) -> Result<()> {
        kubeconfig::modify(&self.rules, &self.start, new, relativize)
    }
}

fn say(ctx: &Ctx, line: &str) -> Result<()> {
    writeln!(ctx.out(), "{line}")?;
    Ok(())
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    match args.command {
        Sub::View(a) => view(ctx, a),
        Sub::CurrentContext => {
            let acc = Access::load(ctx)?;
            if acc.start.current_context.is_empty() {
                return Err(CliError::msg("current-context is not set"));
            }
            say(ctx, &acc.start.current_context)
        }
        Sub::UseContext { name } => use_context(ctx, name),
        Sub::GetContexts(a) => get_contexts(ctx, a),
        Sub::GetClusters => {
            let acc = Access::load(ctx)?;
            let mut out = "NAME\n".to_string();
            for k in acc.start.clusters.keys() {
                out.push_str(&format!("{k}\n"));
            }
            ctx.out().write_all(out.as_bytes())?;
            Ok(())
        }
        Sub::GetUsers => {
            let acc = Access::load(ctx)?;
            let mut out = "NAME\n".to_string();
            for k in acc.start.users.keys() {
                out.push_str(&format!("{k}\n"));
            }
            ctx.out().write_all(out.as_bytes())?;
            Ok(())
        }
        Sub::SetContext(a) => set_context(ctx, a),
        Sub::SetCluster(a) => set_cluster(ctx, a),
        Sub::SetCredentials(a) => set_credentials(ctx, a),
        Sub::Set(a) => set_property(ctx, a),
        Sub::Unset { property } => unset_property(ctx, property),
        Sub::DeleteContext { name } => delete_entry(ctx, name, Entry::Context),
        Sub::DeleteCluster { name } => delete_entry(ctx, name, Entry::Cluster),
        Sub::DeleteUser { name } => delete_entry(ctx, name, Entry::User),
        Sub::RenameContext { old, new } => rename_context(ctx, old, new),
    }
}

// ---------------------------------------------------------------------------------------
// view

/// `DATA+OMITTED`: bytes whose base64 form reads so (upstream's trick).
fn data_omitted() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode("DATA+OMITTED")
        .unwrap_or_default()
}

/// `RedactSecrets` + `ShortenConfig`: tokens and passwords `REDACTED`, embedded
/// certificates and keys `DATA+OMITTED`.
pub fn shorten(c: &mut Config) {
    for u in c.users.values_mut() {
        if !u.client_key_data.is_empty() {
            u.client_key_data = data_omitted();
        }
        if !u.client_certificate_data.is_empty() {
            u.client_certificate_data = data_omitted();
        }
        if !u.token.is_empty() {
            u.token = "REDACTED".into();
        }
        if !u.password.is_empty() {
            u.password = "REDACTED".into();
        }
    }
    for cl in c.clusters.values_mut() {
        if !cl.certificate_authority_data.is_empty() {
            cl.certificate_authority_data = data_omitted();
        }
    }
}

/// `MinifyConfig`: only the current context, its cluster and user.
pub fn minify(c: &mut Config) -> std::result::Result<(), String> {
    if c.current_context.is_empty() {
        return Err("current-context must exist in order to minify".into());
    }
    let Some(cur) = c.contexts.get(&c.current_context).cloned() else {
        return Err(format!("cannot locate context {}", c.current_context));
    };
    let mut clusters = std::collections::BTreeMap::new();
    if !cur.cluster.is_empty() {
        let cl = c
            .clusters
            .get(&cur.cluster)
            .ok_or_else(|| format!("cannot locate cluster {}", cur.cluster))?;
        clusters.insert(cur.cluster.clone(), cl.clone());
    }
    let mut users = std::collections::BTreeMap::new();
    if !cur.user.is_empty() {
        let u = c
            .users
            .get(&cur.user)
            .ok_or_else(|| format!("cannot locate user {}", cur.user))?;
        users.insert(cur.user.clone(), u.clone());
    }
    c.contexts = [(c.current_context.clone(), cur)].into_iter().collect();
    c.clusters = clusters;
    c.users = users;
    Ok(())
}

/// `FlattenConfig`: referenced files embedded.
fn flatten(c: &mut Config) -> Result<()> {
    fn embed(path: &mut String, data: &mut Vec<u8>) -> Result<()> {
        if path.is_empty() {
            return Ok(());
        }
        if !data.is_empty() {
            return Err(CliError::msg(
                "cannot have values for both path and contents",
            ));
        }
        *data =
            std::fs::read(path.as_str()).map_err(|e| CliError::msg(format!("open {path}: {e}")))?;
        path.clear();
        Ok(())
    }
    let base = |origin: Option<&PathBuf>| {
        origin
            .and_then(|o| std::path::absolute(o).ok())
            .and_then(|o| o.parent().map(Path::to_path_buf))
            .unwrap_or_default()
    };
    let resolve = |p: &mut String, base: &Path| {
        if !p.is_empty() && !Path::new(p.as_str()).is_absolute() {
            *p = base.join(p.as_str()).to_string_lossy().into_owned();
        }
    };
    for (name, u) in c.users.iter_mut() {
        let b = base(c.origins.users.get(name));
        resolve(&mut u.client_certificate, &b);
        resolve(&mut u.client_key, &b);
        embed(&mut u.client_certificate, &mut u.client_certificate_data)?;
        embed(&mut u.client_key, &mut u.client_key_data)?;
    }
    for (name, cl) in c.clusters.iter_mut() {
        let b = base(c.origins.clusters.get(name));
        resolve(&mut cl.certificate_authority, &b);
        embed(
            &mut cl.certificate_authority,
            &mut cl.certificate_authority_data,
        )?;
    }
    Ok(())
}

fn view(ctx: &Ctx, a: ViewArgs) -> Result<()> {
    let format = a.print.format(false)?;
    let mut config = if a.merge {
        Access::load(ctx)?.start
    } else {
        let Some(file) = ctx.global.kubeconfig.clone() else {
            return Err(CliError::msg(
                "if merge==false a precise file must be specified",
            ));
        };
        kubeconfig::read_file(&file, false)?.ok_or_else(|| {
            CliError::msg(format!(
                "open {}: no such file or directory",
                file.display()
            ))
        })?
    };
    if a.minify {
        if let Some(c) = ctx.global.context.as_ref().filter(|c| !c.is_empty()) {
            config.current_context = c.clone();
        }
        minify(&mut config).map_err(CliError::Msg)?;
    }
    if a.flatten {
        flatten(&mut config)?;
    } else if !a.raw {
        shorten(&mut config);
    }
    let text = match &format {
        Format::Default | Format::Yaml => crate::output::yaml::to_yaml(&config.to_json()),
        Format::Json => config.to_json_text(),
        other => crate::output::render(&a.print, other, &config.to_json())?,
    };
    ctx.out().write_all(text.as_bytes())?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// contexts

fn use_context(ctx: &Ctx, name: Option<String>) -> Result<()> {
    let name = name.unwrap_or_default();
    if name.is_empty() {
        return Err(CliError::msg("empty context names are not allowed"));
    }
    let acc = Access::load(ctx)?;
    if !acc.start.contexts.contains_key(&name) {
        return Err(CliError::msg(format!(
            "no context exists with the name: {name:?}"
        )));
    }
    let mut new = acc.start.clone();
    new.current_context = name.clone();
    acc.save(&new, true)?;
    say(ctx, &format!("Switched to context {name:?}."))
}

/// The `get-contexts` table (tab-aligned as kubectl's printer: columns padded to the
/// widest cell plus three spaces).
pub fn contexts_table(c: &Config, names: &[String], headers: bool) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    if headers {
        rows.push(
            ["CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        );
    }
    for name in names {
        if let Some(cx) = c.contexts.get(name) {
            let cur = if *name == c.current_context { "*" } else { "" };
            rows.push(vec![
                cur.into(),
                name.clone(),
                cx.cluster.clone(),
                cx.user.clone(),
                cx.namespace.clone(),
            ]);
        }
    }
    tabwrite(&rows)
}

/// Go's `tabwriter` with padding 3: every cell but the last padded.
fn tabwrite(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            out.push_str(c);
            if i + 1 < r.len() {
                // Go's tabwriter as kubectl sets it up: padding 3, minimum width 6.
                out.push_str(&" ".repeat((widths[i] + 3).max(6) - c.chars().count()));
            }
        }
        out.push('\n');
    }
    out
}

fn get_contexts(ctx: &Ctx, a: GetContextsArgs) -> Result<()> {
    let name_only = match a.output.as_deref() {
        None | Some("") => false,
        Some("name") => true,
        Some(other) => {
            return Err(CliError::msg(format!(
                "--output {other} is not available in kubectl config get-contexts; resetting to default output format"
            )));
        }
    };
    let acc = Access::load(ctx)?;
    let c = &acc.start;
    let mut errs = Vec::new();
    let names: Vec<String> = if a.names.is_empty() {
        c.contexts.keys().cloned().collect()
    } else {
        let mut v = Vec::new();
        for n in &a.names {
            if c.contexts.contains_key(n) {
                v.push(n.clone());
            } else {
                errs.push(format!("context {n} not found"));
            }
        }
        v
    };
    let text = if name_only {
        names.iter().map(|n| format!("{n}\n")).collect::<String>()
    } else {
        contexts_table(c, &names, !a.no_headers)
    };
    ctx.out().write_all(text.as_bytes())?;
    match errs.len() {
        0 => Ok(()),
        1 => Err(CliError::msg(errs.remove(0))),
        _ => Err(CliError::msg(format!("[{}]", errs.join(", ")))),
    }
}

fn set_context(ctx: &Ctx, a: SetContextArgs) -> Result<()> {
    let name = a.name.clone().unwrap_or_default();
    if a.current && !name.is_empty() {
        return Err(CliError::msg(
            "you cannot specify both a context name and --current",
        ));
    }
    if !a.current && name.is_empty() {
        return Err(CliError::msg(
            "you must specify a non-empty context name or --current",
        ));
    }
    let acc = Access::load(ctx)?;
    let name = if a.current {
        if acc.start.current_context.is_empty() {
            return Err(CliError::msg("no current context is set"));
        }
        acc.start.current_context.clone()
    } else {
        name
    };
    let mut new = acc.start.clone();
    let exists = new.contexts.contains_key(&name);
    let mut cx = new.contexts.get(&name).cloned().unwrap_or_default();
    let g = &ctx.global;
    if let Some(c) = &g.cluster {
        cx.cluster = c.clone();
    }
    if let Some(u) = &g.user {
        cx.user = u.clone();
    }
    if let Some(n) = &g.namespace {
        cx.namespace = n.clone();
    }
    new.contexts.insert(name.clone(), cx);
    acc.save(&new, true)?;
    let verb = if exists { "modified" } else { "created" };
    say(ctx, &format!("Context {name:?} {verb}."))
}

fn rename_context(ctx: &Ctx, old: Option<String>, new_name: Option<String>) -> Result<()> {
    let (Some(old), Some(new_name)) = (old, new_name) else {
        return Err(CliError::usage(
            "kubectl config rename-context",
            "Unexpected args: []",
        ));
    };
    if new_name.is_empty() {
        return Err(CliError::msg(
            "You must specify a new non-empty context name",
        ));
    }
    let acc = Access::load(ctx)?;
    let file = acc.config_file();
    let Some(cx) = acc.start.contexts.get(&old).cloned() else {
        return Err(CliError::msg(format!(
            "cannot rename the context {old:?}, it's not in {file}"
        )));
    };
    if acc.start.contexts.contains_key(&new_name) {
        return Err(CliError::msg(format!(
            "cannot rename the context {old:?}, the context {new_name:?} already exists in {file}"
        )));
    }
    let mut new = acc.start.clone();
    new.contexts.remove(&old);
    new.contexts.insert(new_name.clone(), cx);
    if let Some(origin) = acc.start.origins.contexts.get(&old) {
        new.origins
            .contexts
            .insert(new_name.clone(), origin.clone());
    }
    if new.current_context == old {
        new.current_context = new_name.clone();
    }
    acc.save(&new, true)?;
    say(ctx, &format!("Context {old:?} renamed to {new_name:?}."))
}

// ---------------------------------------------------------------------------------------
// clusters and users

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

fn set_cluster(ctx: &Ctx, a: SetClusterArgs) -> Result<()> {
    let name = a.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(CliError::msg("you must specify a non-empty cluster name"));
    }
    let g = &ctx.global;
    if g.insecure_skip_tls_verify && g.certificate_authority.is_some() {
        return Err(CliError::msg(
            "you cannot specify a certificate authority and insecure mode at the same time",
        ));
    }
    let embed = a.embed_certs.unwrap_or(false);
    if embed {
        match &g.certificate_authority {
            None => {
                return Err(CliError::msg(
                    "you must specify a --certificate-authority to embed",
                ));
            }
            Some(p) => {
                if let Err(e) = std::fs::metadata(p) {
                    return Err(CliError::msg(format!(
                        "could not stat certificate-authority file {}: {}",
                        p.display(),
                        go_stat(p, &e)
                    )));
                }
            }
        }
    }
    let acc = Access::load(ctx)?;
    let mut new = acc.start.clone();
    let mut c: Cluster = new.clusters.get(&name).cloned().unwrap_or_default();
    if let Some(s) = &g.server {
        c.server = s.clone();
    }
    if let Some(t) = &g.tls_server_name {
        c.tls_server_name = t.clone();
    }
    if g.insecure_skip_tls_verify {
        c.insecure_skip_tls_verify = true;
        c.certificate_authority.clear();
        c.certificate_authority_data.clear();
    }
    if let Some(ca) = &g.certificate_authority {
        if embed {
            c.certificate_authority_data = std::fs::read(ca)?;
            c.certificate_authority.clear();
        } else {
            c.certificate_authority = absolute(ca);
            c.certificate_authority_data.clear();
        }
        c.insecure_skip_tls_verify = false;
    }
    if let Some(p) = &a.proxy_url {
        c.proxy_url = p.clone();
    }
    new.clusters.insert(name.clone(), c);
    acc.save(&new, true)?;
    say(ctx, &format!("Cluster {name:?} set."))
}

fn go_stat(p: &Path, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("stat {}: no such file or directory", p.display())
        }
        _ => format!("stat {}: {e}", p.display()),
    }
}

fn set_credentials(ctx: &Ctx, a: SetCredentialsArgs) -> Result<()> {
    let name = a.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(CliError::msg("you must specify a non-empty user name"));
    }
    let g = &ctx.global;
    let mut methods = Vec::new();
    if g.token.as_ref().is_some_and(|t| !t.is_empty()) {
        methods.push("--token");
    }
    if g.username.as_ref().is_some_and(|t| !t.is_empty())
        || g.password.as_ref().is_some_and(|t| !t.is_empty())
    {
        methods.push("--username/--password");
    }
    if methods.len() > 1 {
        return Err(CliError::msg(format!(
            "you cannot specify more than one authentication method at the same time: {}",
            methods.join(", ")
        )));
    }
    let embed = a.embed_certs.unwrap_or(false);
    if embed {
        if g.client_certificate.is_none() && g.client_key.is_none() {
            return Err(CliError::msg(
                "you must specify a --client-certificate or --client-key to embed",
            ));
        }
        for (flag, p) in [
            ("client-certificate", &g.client_certificate),
            ("client-key", &g.client_key),
        ] {
            if let Some(p) = p
                && let Err(e) = std::fs::metadata(p)
            {
                return Err(CliError::msg(format!(
                    "could not stat {flag} file {}: {}",
                    p.display(),
                    go_stat(p, &e)
                )));
            }
        }
    }
    if let Some(m) = &a.exec_interactive_mode
        && !["IfAvailable", "Never", "Always"].contains(&m.as_str())
    {
        return Err(CliError::msg(
            "invalid interactive mode type, can be only IfAvailable, Never, Always",
        ));
    }
    let acc = Access::load(ctx)?;
    let mut new = acc.start.clone();
    let mut u: AuthInfo = new.users.get(&name).cloned().unwrap_or_default();
    if let Some(p) = &g.client_certificate {
        if embed {
            u.client_certificate_data = std::fs::read(p)?;
            u.client_certificate.clear();
        } else {
            u.client_certificate = absolute(p);
            u.client_certificate_data.clear();
        }
    }
    if let Some(p) = &g.client_key {
        if embed {
            u.client_key_data = std::fs::read(p)?;
            u.client_key.clear();
        } else {
            u.client_key = absolute(p);
            u.client_key_data.clear();
        }
    }
    if let Some(t) = &g.token {
        u.token = t.clone();
    }
    if let Some(x) = &g.username {
        u.username = x.clone();
    }
    if let Some(x) = &g.password {
        u.password = x.clone();
    }
    if let Some(p) = &a.auth_provider
        && u.auth_provider.as_ref().is_none_or(|ap| ap.name != *p)
    {
        u.auth_provider = Some(kubeconfig::AuthProviderConfig {
            name: p.clone(),
            config: Default::default(),
        });
    }
    if let Some(ap) = &mut u.auth_provider {
        for arg in &a.auth_provider_arg {
            match arg.split_once('=') {
                Some((k, v)) => {
                    ap.config.insert(k.to_string(), v.to_string());
                }
                None => {
                    if let Some(k) = arg.strip_suffix('-') {
                        ap.config.remove(k);
                    }
                }
            }
        }
    }
    if let Some(cmd) = &a.exec_command {
        match &mut u.exec {
            None => {
                u.exec = Some(kubeconfig::ExecConfig {
                    command: cmd.clone(),
                    ..Default::default()
                })
            }
            Some(e) => {
                e.command = cmd.clone();
                e.args = None;
            }
        }
    }
    if let Some(e) = &mut u.exec {
        if let Some(v) = &a.exec_api_version {
            e.api_version = v.clone();
        }
        if let Some(args) = &a.exec_arg {
            e.args = Some(args.clone());
        }
        if let Some(m) = &a.exec_interactive_mode {
            e.interactive_mode = m.clone();
        }
        if let Some(p) = a.exec_provide_cluster_info {
            e.provide_cluster_info = p;
        }
        let mut env = e.env.clone().unwrap_or_default();
        for kv in &a.exec_env {
            match kv.split_once('=') {
                Some((k, v)) => {
                    if let Some(x) = env.iter_mut().find(|x| x.name == k) {
                        x.value = v.to_string();
                    } else {
                        env.push(kubeconfig::ExecEnvVar {
                            name: k.to_string(),
                            value: v.to_string(),
                        });
                    }
                }
                None => {
                    if let Some(k) = kv.strip_suffix('-') {
                        env.retain(|x| x.name != k);
                    }
                }
            }
        }
        if !a.exec_env.is_empty() {
            e.env = Some(env);
        }
    }
    new.users.insert(name.clone(), u);
    acc.save(&new, true)?;
    say(ctx, &format!("User {name:?} set."))
}

#[derive(Clone, Copy)]
enum Entry {
    Context,
    Cluster,
    User,
}

fn delete_entry(ctx: &Ctx, name: Option<String>, which: Entry) -> Result<()> {
    let Some(name) = name else {
        if let Entry::User = which {
            return Err(CliError::usage(
                "kubectl config delete-user",
                "user to delete is required",
            ));
        }
        return Ok(());
    };
    let acc = Access::load(ctx)?;
    let file = acc.config_file();
    let mut new = acc.start.clone();
    let (removed, what) = match which {
        Entry::Context => (new.contexts.remove(&name).is_some(), "context"),
        Entry::Cluster => (new.clusters.remove(&name).is_some(), "cluster"),
        Entry::User => (new.users.remove(&name).is_some(), "user"),
    };
    if !removed {
        return Err(CliError::msg(format!(
            "cannot delete {what} {name}, not in {file}"
        )));
    }
    if let Entry::Context = which
        && acc.start.current_context == name
    {
        let _ = ctx.err().write_all(
            b"warning: this removed your active context, use \"kubectl config use-context\" to select a different one\n",
        );
    }
    acc.save(&new, true)?;
    say(ctx, &format!("deleted {what} {name} from {file}"))
}

// ---------------------------------------------------------------------------------------
// set / unset

/// Splits `clusters.my.cluster.server` into the map, the entry name (the longest existing
/// dotted name, else one segment) and the field path.
fn locate<'a>(
    c: &Config,
    property: &'a str,
) -> std::result::Result<(String, String, Vec<&'a str>), String> {
    let parts: Vec<&str> = property.split('.').collect();
    let map = parts[0];
    let names: Vec<&String> = match map {
        "clusters" => c.clusters.keys().collect(),
        "users" => c.users.keys().collect(),
        "contexts" => c.contexts.keys().collect(),
        _ => return Ok((map.to_string(), String::new(), parts[1..].to_vec())),
    };
    if parts.len() < 2 {
        return Ok((map.to_string(), String::new(), Vec::new()));
    }
    for end in (2..=parts.len()).rev() {
        let candidate = parts[1..end].join(".");
        if names.iter().any(|n| **n == candidate) {
            return Ok((map.to_string(), candidate, parts[end..].to_vec()));
        }
    }
    Ok((map.to_string(), parts[1].to_string(), parts[2..].to_vec()))
}

fn entry_json(c: &Config, map: &str, name: &str) -> Value {
    match map {
        "clusters" => serde_json::to_value(c.clusters.get(name).cloned().unwrap_or_default()),
        "users" => serde_json::to_value(c.users.get(name).cloned().unwrap_or_default()),
        _ => serde_json::to_value(c.contexts.get(name).cloned().unwrap_or_default()),
    }
    .unwrap_or(Value::Null)
}

fn store_entry(c: &mut Config, map: &str, name: &str, v: Value) -> std::result::Result<(), String> {
    let e = |e: serde_json::Error| e.to_string();
    match map {
        "clusters" => {
            c.clusters
                .insert(name.into(), serde_json::from_value(v).map_err(e)?);
        }
        "users" => {
            c.users
                .insert(name.into(), serde_json::from_value(v).map_err(e)?);
        }
        _ => {
            c.contexts
                .insert(name.into(), serde_json::from_value(v).map_err(e)?);
        }
    }
    Ok(())
}

const BOOL_FIELDS: &[&str] = &[
    "insecure-skip-tls-verify",
    "disable-compression",
    "provideClusterInfo",
    "colors",
];
const BYTE_FIELDS: &[&str] = &[
    "certificate-authority-data",
    "client-certificate-data",
    "client-key-data",
];

fn set_in(v: &mut Value, path: &[&str], value: Option<Value>) -> Option<()> {
    let obj = v.as_object_mut()?;
    let (first, rest) = path.split_first()?;
    if rest.is_empty() {
        match value {
            None => {
                obj.remove(*first);
            }
            Some(x) => {
                obj.insert(first.to_string(), x);
            }
        }
        return Some(());
    }
    let next = obj
        .entry(first.to_string())
        .or_insert_with(|| Value::Object(Default::default()));
    if next.is_null() {
        *next = Value::Object(Default::default());
    }
    set_in(next, rest, value)
}

/// Sets (or unsets, `value = None`) `property` (`set`/`unset`'s dotted path).
pub fn set_path(
    c: &mut Config,
    property: &str,
    value: Option<&str>,
    raw_bytes: bool,
) -> std::result::Result<(), String> {
    let (map, name, path) = locate(c, property)?;
    let unable = || format!("unable to locate path {property:?}");
    match map.as_str() {
        "current-context" if path.is_empty() && name.is_empty() => {
            c.current_context = value.unwrap_or_default().to_string();
            return Ok(());
        }
        "preferences" => {
            if path == ["colors"] {
                c.preferences.colors = match value {
                    None => false,
                    Some(v) => v.parse::<bool>().map_err(|e| e.to_string())?,
                };
                return Ok(());
            }
            return Err(unable());
        }
        "clusters" | "users" | "contexts" => {}
        _ => return Err(unable()),
    }
    if name.is_empty() {
        if value.is_none() {
            match map.as_str() {
                "clusters" => c.clusters.clear(),
                "users" => c.users.clear(),
                _ => c.contexts.clear(),
            }
            return Ok(());
        }
        return Err("can't set a map to a value".into());
    }
    if path.is_empty() {
        if value.is_none() {
            match map.as_str() {
                "clusters" => {
                    c.clusters.remove(&name);
                }
                "users" => {
                    c.users.remove(&name);
                }
                _ => {
                    c.contexts.remove(&name);
                }
            }
            return Ok(());
        }
        return Err("can't set a map to a value".into());
    }
    let mut entry = entry_json(c, &map, &name);
    let leaf = path.last().copied().unwrap_or_default();
    let val = match value {
        None => None,
        Some(v) => Some(if BOOL_FIELDS.contains(&leaf) {
            Value::Bool(v.parse::<bool>().map_err(|e| e.to_string())?)
        } else if BYTE_FIELDS.contains(&leaf) {
            if raw_bytes {
                Value::String(base64::engine::general_purpose::STANDARD.encode(v))
            } else {
                base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(|e| format!("error decoding input value: {e}"))?;
                Value::String(v.to_string())
            }
        } else {
            Value::String(v.to_string())
        }),
    };
    set_in(&mut entry, &path, val).ok_or_else(unable)?;
    store_entry(c, &map, &name, entry)
}

fn set_property(ctx: &Ctx, a: SetArgs) -> Result<()> {
    let property = a.property.unwrap_or_default();
    if property.is_empty() {
        return Err(CliError::msg("you must specify a property"));
    }
    let Some(value) = a.value else {
        return Err(CliError::msg("you cannot use set to unset a property"));
    };
    let acc = Access::load(ctx)?;
    let mut new = acc.start.clone();
    set_path(
        &mut new,
        &property,
        Some(&value),
        a.set_raw_bytes.unwrap_or(false),
    )
    .map_err(CliError::Msg)?;
    acc.save(&new, false)?;
    say(ctx, &format!("Property {property:?} set."))
}

fn unset_property(ctx: &Ctx, property: Option<String>) -> Result<()> {
    let property = property.unwrap_or_default();
    if property.is_empty() {
        return Err(CliError::msg("you must specify a property"));
    }
    let acc = Access::load(ctx)?;
    let mut new = acc.start.clone();
    set_path(&mut new, &property, None, false).map_err(CliError::Msg)?;
    acc.save(&new, false)?;
    say(ctx, &format!("Property {property:?} unset."))
}

/// The path `config` commands would write new entries to (for tests and messages).
pub fn default_file(ctx: &Ctx) -> PathBuf {
    Rules::from_process(&ctx.global).default_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Config {
        kubeconfig::parse(
            r#"
current-context: a
clusters:
- name: c1
  cluster: {server: "https://one", certificate-authority-data: "Zm9v"}
- name: my.dotted
  cluster: {server: "https://two"}
users:
- name: u1
  user: {token: secret, client-key-data: "Zm9v", password: pw}
contexts:
- name: a
  context: {cluster: c1, user: u1, namespace: ns}
- name: b
  context: {cluster: my.dotted, user: nobody}
"#,
        )
        .unwrap()
    }

    #[test]
    fn shortened_view() {
        let mut c = sample();
        shorten(&mut c);
        let v = c.to_json();
        assert_eq!(
            v["clusters"][0]["cluster"]["certificate-authority-data"],
            "DATA+OMITTED"
        );
        assert_eq!(v["users"][0]["user"]["token"], "REDACTED");
        assert_eq!(v["users"][0]["user"]["password"], "REDACTED");
        assert_eq!(v["users"][0]["user"]["client-key-data"], "DATA+OMITTED");
    }

    #[test]
    fn minified() {
        let mut c = sample();
        minify(&mut c).unwrap();
        assert_eq!(c.contexts.len(), 1);
        assert_eq!(c.clusters.keys().collect::<Vec<_>>(), ["c1"]);
        let mut c = sample();
        c.current_context = "b".into();
        assert_eq!(minify(&mut c).unwrap_err(), "cannot locate user nobody");
        let mut c = sample();
        c.current_context.clear();
        assert_eq!(
            minify(&mut c).unwrap_err(),
            "current-context must exist in order to minify"
        );
    }

    #[test]
    fn contexts_table_marks_current() {
        let c = sample();
        let names: Vec<String> = c.contexts.keys().cloned().collect();
        assert_eq!(
            contexts_table(&c, &names, true),
            "CURRENT   NAME   CLUSTER     AUTHINFO   NAMESPACE\n*         a      c1          u1         ns\n          b      my.dotted   nobody     \n"
        );
    }

    #[test]
    fn set_and_unset_paths() {
        let mut c = sample();
        set_path(
            &mut c,
            "clusters.my.dotted.server",
            Some("https://x"),
            false,
        )
        .unwrap();
        assert_eq!(c.clusters["my.dotted"].server, "https://x");
        set_path(
            &mut c,
            "clusters.new.insecure-skip-tls-verify",
            Some("true"),
            false,
        )
        .unwrap();
        assert!(c.clusters["new"].insecure_skip_tls_verify);
        set_path(
            &mut c,
            "users.u1.client-certificate-data",
            Some("abc"),
            true,
        )
        .unwrap();
        assert_eq!(c.users["u1"].client_certificate_data, b"abc");
        set_path(&mut c, "contexts.a.namespace", None, false).unwrap();
        assert_eq!(c.contexts["a"].namespace, "");
        set_path(&mut c, "current-context", Some("b"), false).unwrap();
        assert_eq!(c.current_context, "b");
        set_path(&mut c, "users.u1.auth-provider.name", Some("oidc"), false).unwrap();
        set_path(
            &mut c,
            "users.u1.auth-provider.config.id-token",
            Some("t"),
            false,
        )
        .unwrap();
        assert_eq!(
            c.users["u1"].auth_provider.as_ref().unwrap().config["id-token"],
            "t"
        );
        set_path(&mut c, "contexts.b", None, false).unwrap();
        assert!(!c.contexts.contains_key("b"));
        assert!(set_path(&mut c, "nope.x", Some("1"), false).is_err());
    }
}
