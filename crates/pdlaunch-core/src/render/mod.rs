//! Output formats, all views of one [`Plan`]: `shell` (one bash script per process), `json` (argv
//! and environment per process, for other tools), `sglang-config` (one SGLang `--config` YAML
//! per role plus the short command lines that load it), `kubernetes` (LeaderWorkerSets and the
//! router, from the plan of the deployment placed on pods), `rbg` (one RoleBasedGroup of the
//! same pods), `dynamo` (one DynamoGraphDeployment of Dynamo's SGLang workers), `slurm` (one
//! `sbatch` script for the whole deployment, from the plan of the deployment placed on the job's
//! nodes) and `srtctl` (an srt-slurm recipe that srtctl starts as the same processes). `pods`
//! holds what the formats on pods share. `agents` renders the smoke-test agent pair to run where
//! the servers will, on pods, in a SLURM job or by hand.

mod agents;
pub(crate) mod cluster;
mod config;
mod dynamo;
mod json;
mod kubernetes;
mod pods;
mod rbg;
mod shell;
mod slurm;
mod srtctl;

pub use agents::{render_agents, AgentFiles, AgentFormat};
pub use config::render_config;
pub use dynamo::render_dynamo;
pub(crate) use dynamo::{refusal as dynamo_refusal, runtime_image as dynamo_runtime_image};
pub use json::render_json;
pub use kubernetes::render_kubernetes;
pub(crate) use kubernetes::{refusal as kubernetes_refusal, EXCLUSIVE_TOPOLOGY};
pub(crate) use pods::{
    default_image, default_router_image, BOOTSTRAP_ANNOTATION, INSTANCE_LABEL, RBG_INDEX_LABEL, WORKER_INDEX_LABEL,
};
pub(crate) use rbg::refusal as rbg_refusal;
pub use rbg::render_rbg;
pub use shell::{quote, render_shell};
pub use slurm::{render_slurm, HEALTH_TIMEOUT_VAR};
pub use srtctl::render_srtctl;
#[cfg(test)]
pub(crate) use srtctl::tests::assert_recipe_runs_the_plan;
/// The server options srtctl writes itself (what the tests leave out of a recipe's servers).
#[cfg(test)]
pub(crate) use srtctl::SERVER_OWNED as SRTCTL_SERVER_OWNED;

use crate::deployment::Deployment;
use crate::plan::{plan, Plan};

/// One generated file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RenderedFile {
    /// Relative file name, e.g. `prefill-0-node-0.sh`.
    pub name: String,
    /// Contents.
    pub contents: String,
    /// True for scripts that should be executable.
    pub executable: bool,
}

/// The output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One runnable bash script per process.
    Shell,
    /// One JSON document with argv and env per process.
    Json,
    /// SGLang `--config` YAML per role, plus scripts that load it.
    SglangConfig,
    /// Kubernetes manifests: a LeaderWorkerSet per side (or per instance), the router's
    /// Deployment and Service.
    Kubernetes,
    /// One RoleBasedGroup (SGLang's RBG controller): a leader-worker role per side (or per
    /// instance) and a router role that starts after them, and the router's Service.
    Rbg,
    /// One DynamoGraphDeployment (NVIDIA Dynamo's operator): Dynamo's Frontend and a
    /// `dynamo.sglang` worker service per side (or per instance).
    Dynamo,
    /// One `sbatch` script: every process an `srun` step on the job's nodes, the router last.
    Slurm,
    /// An srt-slurm recipe that `srtctl` turns into the same processes.
    Srtctl,
    /// A picture of the processes, their links and the findings on them, as SVG
    /// (`deployment.svg`); drawn by [`crate::picture::render`].
    Svg,
    /// The same picture as a Mermaid flowchart (`deployment.mmd`); drawn by
    /// [`crate::picture::render`].
    Mermaid,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 10] = [
        Format::Shell,
        Format::Json,
        Format::SglangConfig,
        Format::Kubernetes,
        Format::Rbg,
        Format::Dynamo,
        Format::Slurm,
        Format::Srtctl,
        Format::Svg,
        Format::Mermaid,
    ];
    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Shell => "shell",
            Format::Json => "json",
            Format::SglangConfig => "sglang-config",
            Format::Kubernetes => "kubernetes",
            Format::Rbg => "rbg",
            Format::Dynamo => "dynamo",
            Format::Slurm => "slurm",
            Format::Srtctl => "srtctl",
            Format::Svg => "svg",
            Format::Mermaid => "mermaid",
        }
    }
    /// True for the picture formats, which show the rules' findings and so are drawn above the
    /// rules, by [`crate::picture::render`].
    pub fn is_picture(self) -> bool {
        matches!(self, Format::Svg | Format::Mermaid)
    }
    /// Why this format cannot target `release`, if it cannot.
    pub fn unsupported_reason(self, release: crate::release::Release) -> Option<String> {
        (self == Format::SglangConfig && !crate::flags::CONFIG.in_release(release)).then(|| {
            format!(
                "SGLang {release} has no `--config` option (it exists in {}); render the `shell` or `json` format",
                crate::flags::CONFIG.release_list()
            )
        })
    }
    /// Parses a format name.
    pub fn parse(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// Why a format cannot render a deployment. A refusal that one field causes carries that field's
/// path, so that `check` (PD050), the CLI and the app place it beside the field without reading
/// the sentence; the message names the field first all the same, for whoever reads only the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderError {
    /// The deployment field to change, as [`crate::plan::Origin::Field`] writes paths
    /// (`kubernetes.tolerations[0]`); `None` when no one field is to blame.
    pub field: Option<String>,
    /// What is wrong and what to do, the field (when there is one) quoted first.
    pub message: String,
}

impl RenderError {
    /// A refusal of `field`: the message is the field, quoted, then `rest`.
    pub(crate) fn at(field: impl Into<String>, rest: std::fmt::Arguments) -> RenderError {
        let field = field.into();
        RenderError { message: format!("`{field}` {rest}"), field: Some(field) }
    }
    /// A refusal no one field causes.
    fn general(message: String) -> RenderError {
        RenderError { field: None, message }
    }
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Renders a deployment in a text format, or says why the format cannot render it. The picture
/// formats show the rules' findings, which sit a layer above the renderer (the rules read the
/// Kubernetes placement here): [`crate::picture::render`] draws them, and renders every other
/// format through this function.
pub fn render(d: &Deployment, format: Format) -> Result<Vec<RenderedFile>, RenderError> {
    if let Some(reason) = format.unsupported_reason(d.sglang_version) {
        return Err(RenderError::general(reason));
    }
    Ok(match format {
        Format::Shell => render_shell(&plan(d)),
        Format::Json => vec![render_json(&plan(d))],
        Format::SglangConfig => render_config(&plan(d)),
        Format::Kubernetes => vec![render_kubernetes(d)?],
        Format::Rbg => vec![render_rbg(d)?],
        Format::Dynamo => vec![render_dynamo(d)?],
        Format::Slurm => vec![render_slurm(d)?],
        Format::Srtctl => vec![render_srtctl(d)?],
        Format::Svg | Format::Mermaid => {
            return Err(RenderError::general(format!(
                "the {} picture is drawn with the rules' findings by `picture::render`",
                format.as_str()
            )))
        }
    })
}

/// Concatenates files for a single stream (stdout): each preceded by a `# ==> name <==` line.
pub fn bundle(files: &[RenderedFile]) -> String {
    if let [one] = files {
        return one.contents.clone();
    }
    let mut s = String::new();
    for f in files {
        s.push_str(&format!("# ==> {} <==\n", f.name));
        s.push_str(&f.contents);
        if !f.contents.ends_with('\n') {
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

fn header(plan: &Plan) -> String {
    format!(
        "# Generated by pdlaunch {} from deployment \"{}\" for SGLang {} (router {}).\n# Edit the deployment and render again; do not edit this file.\n",
        env!("CARGO_PKG_VERSION"),
        plan.name.replace('\n', " "),
        plan.release,
        plan.router_release
    )
}
