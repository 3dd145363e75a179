//! `kubectl run NAME --image=…`: kubectl 1.33's run, which always generates a Pod (the
//! `--restart` policy becomes its `restartPolicy`; see [`crate::generators`] for the
//! seed's older inference table), and with `--expose --port` also the Service.
//!
//! Client-side validation happens first, in kubectl's order, and sends nothing: NAME,
//! `--image` (required, then `distribution/reference`'s grammar), `-t` without `-i`,
//! `--expose` without `--port`, `--restart`, `--rm`, attach with `--dry-run`,
//! `--image-pull-policy`, `--labels`, `--env`, `--annotations`, `--port` as a number,
//! `--overrides` as JSON. Then the REST mapping (discovery, as kubectl does even for
//! `--dry-run=client`), the Service first (printed as it is created, as 1.33 does), then
//! the Pod.

use std::io::Write;

use serde_json::{Value, json};

use crate::cmd::create::{Creation, Wrap, send_create};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::generators::{self, RunParams};
use crate::output::{DryRun, DryRunFlag, Format, PrintFlags, print_operation};
use crate::validate;

const CMD: &str = "kubectl run";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// NAME, then the container's arguments.
    #[arg(value_name = "NAME")]
    pub args: Vec<String>,
    /// The command or arguments after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub after_dash: Vec<String>,
    #[command(flatten)]
    pub print: PrintFlags,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    /// The image for the container to run.
    #[arg(long)]
    pub image: Option<String>,
    /// The image pull policy for the container.
    #[arg(long, default_value = "")]
    pub image_pull_policy: String,
    /// Environment variables to set in the container (repeatable).
    #[arg(long)]
    pub env: Vec<String>,
    /// Annotations to apply to the pod (repeatable).
    #[arg(long)]
    pub annotations: Vec<String>,
    /// The port that this container exposes.
    #[arg(long, default_value = "")]
    pub port: String,
    /// Comma separated labels to apply to the pod.
    #[arg(short = 'l', long, default_value = "")]
    pub labels: String,
    /// Keep stdin open on the container in the pod.
    #[arg(short = 'i', long)]
    pub stdin: bool,
    /// Allocate a TTY for the container in the pod.
    #[arg(short = 't', long)]
    pub tty: bool,
    /// Wait for the Pod to start running, then attach to it.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub attach: Option<bool>,
    /// Leave stdin open after the first attach completes.
    #[arg(long)]
    pub leave_stdin_open: bool,
    /// The restart policy for this Pod. Legal values [Always, OnFailure, Never].
    #[arg(long, default_value = "Always")]
    pub restart: String,
    /// Use the extra arguments as the container's 'command' rather than 'args'.
    #[arg(long)]
    pub command: bool,
    /// Also create a ClusterIP service associated with the pod. Requires `--port`.
    #[arg(long)]
    pub expose: bool,
    /// Suppress prompt messages.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Run the container in privileged mode.
    #[arg(long)]
    pub privileged: bool,
    /// Delete the pod after it exits (only with --attach / -i).
    #[arg(long)]
    pub rm: bool,
    /// An inline JSON override for the generated object.
    #[arg(long, default_value = "")]
    pub overrides: String,
    /// The method used to override the generated object: json, merge, or strategic.
    #[arg(long, default_value = "merge")]
    pub override_type: String,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-run")]
    pub field_manager: String,
    /// Save the configuration of the object in its annotation.
    #[arg(long)]
    pub save_config: bool,
    /// The length of time to wait for the pod to be running (attach).
    #[arg(long, default_value = "1m0s")]
    pub pod_running_timeout: String,
    /// rkube extension, the seeds' (kubectl ≤ 1.17) generators: `run-pod/v1` (a Pod, the
    /// default and kubectl 1.33's only behaviour), `deployment/apps.v1`, `job/v1`, or
    /// `infer` for the seeds' table by `--restart` (Always → Deployment, OnFailure → Job,
    /// Never → Pod).
    #[arg(long, default_value = "run-pod/v1")]
    pub generator: String,
    /// Number of replicas of a `deployment/apps.v1` generator's Deployment.
    #[arg(long, default_value_t = 1)]
    pub replicas: i32,
    /// Service account of the pod (rkube extension of kubectl's generator parameter).
    #[arg(long = "serviceaccount", default_value = "", hide = true)]
    pub service_account: String,
}

/// Parses and checks the command line into the generator's parameters (pure: no request,
/// kubectl's messages). The usage errors carry `See 'kubectl run -h'`.
pub fn params(a: &Args, dry_run: DryRun) -> Result<RunParams> {
    let image = a
        .image
        .clone()
        .ok_or_else(|| CliError::msg("required flag(s) \"image\" not set"))?;
    // `run NAME …` / `run NAME -- args`; `run -- x` has no NAME.
    let Some(name) = a.args.first() else {
        return Err(CliError::usage(CMD, "NAME is required for run"));
    };
    validate::image_for_run(&image)?;
    if a.tty && !a.stdin {
        return Err(CliError::usage(
            CMD,
            "-i/--stdin is required for containers with -t/--tty=true",
        ));
    }
    if a.expose && a.port.is_empty() {
        return Err(CliError::usage(
            CMD,
            "--port must be set when exposing a service",
        ));
    }
    let restart =
        validate::restart_policy(&a.restart, a.stdin).map_err(|m| CliError::usage(CMD, m))?;
    let attach = a.attach.unwrap_or(a.stdin);
    if !attach && a.rm {
        return Err(CliError::usage(
            CMD,
            "--rm should only be used for attached containers",
        ));
    }
    if attach && dry_run != DryRun::None {
        return Err(CliError::usage(
            CMD,
            "--dry-run=[server|client] can't be used with attached containers options (--attach, --stdin, or --tty)",
        ));
    }
    validate::image_pull_policy(&a.image_pull_policy).map_err(|m| CliError::usage(CMD, m))?;
    let mut args: Vec<String> = a.args[1..].to_vec();
    args.extend(a.after_dash.iter().cloned());
    let env = validate::parse_envs(&a.env)?;
    let annotations = validate::parse_pairs(&a.annotations, "annotations")?;
    let labels = if a.labels.is_empty() {
        Default::default()
    } else {
        validate::parse_labels(&a.labels)?
    };
    let port = if a.port.is_empty() {
        None
    } else {
        Some(validate::atoi(&a.port)?)
    };
    Ok(RunParams {
        name: name.clone(),
        image,
        labels,
        annotations,
        env,
        port,
        restart: restart.to_string(),
        image_pull_policy: a.image_pull_policy.clone(),
        stdin: a.stdin,
        leave_stdin_open: a.leave_stdin_open,
        tty: a.tty,
        command: a.command,
        args,
        privileged: a.privileged,
        service_account: a.service_account.clone(),
    })
}

/// `--overrides` on the generated object (merge patch by default, as kubectl).
pub fn apply_overrides(obj: &Value, overrides: &str, override_type: &str) -> Result<Value> {
    if overrides.is_empty() {
        return Ok(obj.clone());
    }
    match override_type {
        "json" => {
            let ops: Value =
                serde_json::from_str(overrides).map_err(|_| CliError::msg("Invalid JSON Patch"))?;
            patch::json_patch(obj, &ops).map_err(|e| CliError::msg(e.to_string()))
        }
        "merge" | "" => {
            let p: Value =
                serde_json::from_str(overrides).map_err(|_| CliError::msg("Invalid JSON Patch"))?;
            Ok(patch::merge_patch(obj, &p))
        }
        "strategic" => {
            let p: Value =
                serde_json::from_str(overrides).map_err(|_| CliError::msg("Invalid JSON Patch"))?;
            let api_version = obj["apiVersion"].as_str().unwrap_or_default();
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let kind = obj["kind"].as_str().unwrap_or_default();
            let schema = crate::twoway::builtin_schema(group, version, kind).unwrap_or(Value::Null);
            patch::strategic_merge_patch(obj, &p, &schema, api::schema::builtin())
                .map_err(|e| CliError::msg(e.to_string()))
        }
        other => Err(CliError::msg(format!("invalid override type: {other}"))),
    }
}

/// The kind the `--generator` makes (`infer`: the seeds' table by restart policy).
pub fn generator_kind(generator: &str, restart: &str) -> Result<(&'static str, &'static str)> {
    match generator {
        "run-pod/v1" | "" => Ok(("v1", "Pod")),
        "deployment/apps.v1" => Ok(("apps/v1", "Deployment")),
        "job/v1" => Ok(("batch/v1", "Job")),
        "infer" => generators::legacy_run_inference(restart)
            .ok_or_else(|| CliError::msg(format!("invalid restart policy: {restart}"))),
        other => Err(CliError::msg(format!(
            "generator {other:?} not found (run-pod/v1, deployment/apps.v1, job/v1 or infer)"
        ))),
    }
}

/// The generated Pod wrapped as a Deployment or Job (the seeds' generators: the pod's
/// labels select it; a Job's pods restart `OnFailure` unless `Never` was asked).
pub fn wrap_pod(pod: &Value, kind: &str, replicas: i32) -> Value {
    let meta = &pod["metadata"];
    let labels = meta.get("labels").cloned().unwrap_or_else(|| json!({}));
    let mut template_meta = json!({"creationTimestamp": null, "labels": labels});
    if let Some(a) = meta.get("annotations") {
        template_meta["annotations"] = a.clone();
    }
    let mut spec = pod["spec"].clone();
    let mut top = json!({"name": meta["name"], "creationTimestamp": null, "labels": labels});
    if kind == "Deployment" {
        spec["restartPolicy"] = json!("Always");
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": top,
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                "strategy": {}, "template": {"metadata": template_meta, "spec": spec}},
            "status": {}})
    } else {
        if spec["restartPolicy"] != json!("Never") {
            spec["restartPolicy"] = json!("OnFailure");
        }
        top.as_object_mut().map(|m| m.remove("labels"));
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": top,
            "spec": {"template": {"metadata": template_meta, "spec": spec}},
            "status": {}})
    }
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let dry_run = a.dry_run.resolve(ctx)?;
    let p = params(&a, dry_run)?;
    let format = a.print.format(false)?;
    if a.stdin || a.attach == Some(true) {
        return Err(CliError::msg(
            "attaching to the pod (-i/--attach) is not supported by rkube kubectl run yet",
        ));
    }
    let (api_version, kind) = generator_kind(&a.generator, &a.restart)?;
    if a.replicas < 0 {
        return Err(CliError::msg("--replicas must be non-negative"));
    }
    let generated = match kind {
        "Pod" => generators::run_pod(&p),
        other => wrap_pod(&generators::run_pod(&p), other, a.replicas),
    };
    let mut pod = apply_overrides(&generated, &a.overrides, &a.override_type)?;
    // kubectl maps the generated kinds through discovery even for a client dry run.
    let mapper = ctx.mapper().await?;
    let pod_mapping = mapper.for_kind(api_version, kind)?;
    let namespace = ctx.namespace().await?;
    let mut printed_service: Option<Value> = None;
    let mut errors = Vec::new();
    let creation = |mapping| Creation {
        mapping,
        namespace: namespace.clone(),
        dry_run,
        field_manager: &a.field_manager,
        field_validation: None,
        wrap: Wrap::Raw,
    };
    // The Pod is created first …
    let pod_result = if dry_run == DryRun::Client {
        if ctx.namespace_explicit() {
            generators::set_namespace(&mut pod, &namespace);
        }
        pod
    } else {
        if a.save_config {
            generators::add_last_applied(&mut pod);
        }
        send_create(ctx, &creation(pod_mapping), &pod).await?
    };
    // … then the Service, printed as soon as it exists (kubectl 1.33 prints it before the
    // Pod, with a `---` after it for YAML).
    if a.expose {
        let mut svc = generators::run_service(&p);
        let svc_mapping = mapper.for_kind("v1", "Service")?;
        let result = if dry_run == DryRun::Client {
            if ctx.namespace_explicit() {
                generators::set_namespace(&mut svc, &namespace);
            }
            Ok(svc)
        } else {
            if a.save_config {
                generators::add_last_applied(&mut svc);
            }
            send_create(ctx, &creation(svc_mapping), &svc).await
        };
        match result {
            Ok(s) => {
                print_operation(ctx, &a.print, &s, "created", dry_run)?;
                if format == Format::Yaml {
                    writeln!(ctx.out(), "---")?;
                }
                printed_service = Some(s);
            }
            Err(e) => errors.push(e),
        }
    }
    if printed_service.is_some() && format == Format::Yaml {
        // kubectl's YAML printer separates its second object once more.
        writeln!(ctx.out(), "---")?;
    }
    print_operation(ctx, &a.print, &pod_result, "created", dry_run)?;
    match errors.len() {
        0 => Ok(()),
        _ => Err(errors.remove(0)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }

    fn parse(args: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
            .unwrap()
            .a
    }

    fn err(args: &[&str]) -> String {
        params(&parse(args), DryRun::None).unwrap_err().to_string()
    }

    #[test]
    fn validation_in_kubectl_order() {
        assert_eq!(err(&["x"]), "error: required flag(s) \"image\" not set");
        assert_eq!(
            err(&["--image=nginx"]),
            "error: NAME is required for run\nSee 'kubectl run -h' for help and examples"
        );
        assert_eq!(err(&["x", "--image="]), "error: --image is required");
        assert_eq!(
            err(&["x", "--image=NGINX"]),
            "error: Invalid image name \"NGINX\": invalid reference format"
        );
        assert_eq!(
            err(&["x", "--image=nginx:"]),
            "error: Invalid image name \"nginx:\": invalid reference format"
        );
        assert!(err(&["x", "--image=nginx", "-t"]).starts_with("error: -i/--stdin is required"));
        assert!(err(&["x", "--image=nginx", "--expose"]).starts_with("error: --port must be set"));
        assert_eq!(
            err(&["x", "--image=nginx", "--restart=Sometimes"]),
            "error: invalid restart policy: Sometimes\nSee 'kubectl run -h' for help and examples"
        );
        assert!(err(&["x", "--image=nginx", "--rm"]).starts_with("error: --rm should only"));
        assert_eq!(
            err(&["x", "--image=nginx", "--image-pull-policy=Foo"]),
            "error: invalid image pull policy: Foo\nSee 'kubectl run -h' for help and examples"
        );
        assert_eq!(
            err(&["x", "--image=nginx", "--labels=a"]),
            "error: unexpected label spec: a"
        );
        assert_eq!(
            err(&["x", "--image=nginx", "--env=1A=b"]),
            "error: invalid env: 1A=b"
        );
        assert_eq!(
            err(&["x", "--image=nginx", "--annotations=foo"]),
            "error: invalid annotations format: foo"
        );
        assert_eq!(
            err(&["x", "--image=nginx", "--port=abc"]),
            "error: strconv.Atoi: parsing \"abc\": invalid syntax"
        );
        let e = params(&parse(&["x", "--image=nginx", "-i"]), DryRun::Client).unwrap_err();
        assert!(
            e.to_string()
                .contains("can't be used with attached containers")
        );
    }

    #[test]
    fn arguments_and_command() {
        let p = params(
            &parse(&["x", "--image=busybox", "--", "sleep", "10"]),
            DryRun::None,
        )
        .unwrap();
        assert_eq!(p.args, vec!["sleep", "10"]);
        assert!(!p.command);
        let p = params(
            &parse(&[
                "x",
                "--image=busybox",
                "--command",
                "--",
                "sh",
                "-c",
                "true",
            ]),
            DryRun::None,
        )
        .unwrap();
        assert_eq!(p.args, vec!["sh", "-c", "true"]);
        assert!(p.command);
        let pod = generators::run_pod(&p);
        assert_eq!(
            pod["spec"]["containers"][0]["command"],
            serde_json::json!(["sh", "-c", "true"])
        );
        let p = params(
            &parse(&["x", "--image=busybox", "--restart=Never"]),
            DryRun::None,
        )
        .unwrap();
        assert_eq!(generators::run_pod(&p)["spec"]["restartPolicy"], "Never");
    }

    #[test]
    fn overrides() {
        let p = params(&parse(&["x", "--image=busybox"]), DryRun::None).unwrap();
        let pod = generators::run_pod(&p);
        let o = apply_overrides(&pod, r#"{"spec":{"nodeName":"n1"}}"#, "merge").unwrap();
        assert_eq!(o["spec"]["nodeName"], "n1");
        assert_eq!(
            apply_overrides(&pod, "{bad", "merge")
                .unwrap_err()
                .to_string(),
            "error: Invalid JSON Patch"
        );
        // Strategic: containers merge by name instead of being replaced.
        let o = apply_overrides(
            &pod,
            r#"{"spec":{"containers":[{"name":"x","stdin":true}]}}"#,
            "strategic",
        )
        .unwrap();
        assert_eq!(o["spec"]["containers"][0]["image"], "busybox");
        assert_eq!(o["spec"]["containers"][0]["stdin"], true);
        let o = apply_overrides(
            &pod,
            r#"[{"op":"add","path":"/spec/hostNetwork","value":true}]"#,
            "json",
        )
        .unwrap();
        assert_eq!(o["spec"]["hostNetwork"], true);
    }

    #[test]
    fn seed_generators_infer_the_kind_from_the_restart_policy() {
        let kind = |g: &str, r: &str| generator_kind(g, r).unwrap().1;
        assert_eq!(kind("run-pod/v1", "Always"), "Pod");
        assert_eq!(kind("infer", "Always"), "Deployment");
        assert_eq!(kind("infer", "OnFailure"), "Job");
        assert_eq!(kind("infer", "Never"), "Pod");
        assert_eq!(kind("deployment/apps.v1", "Never"), "Deployment");
        assert_eq!(kind("job/v1", "Always"), "Job");
        assert!(generator_kind("cronjob/v2", "Always").is_err());
    }

    #[test]
    fn wrapped_pods_keep_their_spec_and_are_selected_by_their_labels() {
        let a = parse(&["web", "--image=nginx", "--port=80"]);
        let pod = generators::run_pod(&params(&a, DryRun::None).unwrap());
        let d = wrap_pod(&pod, "Deployment", 3);
        assert_eq!(d["kind"], "Deployment");
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(d["spec"]["selector"]["matchLabels"], json!({"run": "web"}));
        assert_eq!(
            d["spec"]["template"]["metadata"]["labels"],
            json!({"run": "web"})
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"],
            pod["spec"]["containers"]
        );
        let j = wrap_pod(&pod, "Job", 1);
        assert_eq!(j["apiVersion"], "batch/v1");
        assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "OnFailure");
        assert!(j["metadata"].get("labels").is_none());
    }
}
