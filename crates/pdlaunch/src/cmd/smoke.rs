//! `pdlaunch smoke`: the KV transfer smoke test. Static layout checks, then the transfer of
//! one request for every prefill-rank -> decode-rank pair the deployment implies, on the CPU or
//! on GPUs, with canaries proving where every slice landed; optionally the negative controls.
//! Exit 0 pass, 1 fail, 2 bad input or environment.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pdlaunch_core::deployment::{Deployment, Geometry};
use pdlaunch_kv::agent::{self, Memory, Transport};
use pdlaunch_kv::case::Case;
use pdlaunch_kv::geometry::KvGeometry;
use pdlaunch_kv::memory::parse_bytes;
use pdlaunch_kv::sides::from_deployment;
use pdlaunch_kv::smoke::{self, BackendChoice, Event, Input, Options, Verdict};
use pdlaunch_kv::transfer::TransferBackend;

use crate::input::load;
use crate::style::Style;

/// Model geometry given on the command line (overrides `model.geometry`).
#[derive(clap::Args, Debug, Default)]
pub struct GeometryArgs {
    /// Attention kind: mha, gqa or mla.
    #[arg(long, value_parser = ["mha", "gqa", "mla"])]
    pub attention: Option<String>,
    /// Hidden layers.
    #[arg(long)]
    pub layers: Option<u32>,
    /// KV heads of the model (MHA/GQA).
    #[arg(long)]
    pub kv_heads: Option<u32>,
    /// Head dimension (MHA/GQA).
    #[arg(long)]
    pub head_dim: Option<u32>,
    /// MLA latent rank (`kv_lora_rank`).
    #[arg(long)]
    pub kv_lora_rank: Option<u32>,
    /// MLA rotary dimension (`qk_rope_head_dim`).
    #[arg(long)]
    pub qk_rope_head_dim: Option<u32>,
}

impl GeometryArgs {
    fn given(&self) -> bool {
        self.attention.is_some()
            || self.layers.is_some()
            || self.kv_heads.is_some()
            || self.head_dim.is_some()
            || self.kv_lora_rank.is_some()
            || self.qk_rope_head_dim.is_some()
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// Deployment file (YAML or JSON), or `-` for stdin.
    #[arg(required_unless_present = "report")]
    pub file: Option<String>,
    /// Read the reports of agents that ran on the deployment's nodes (`--across hosts`) back: the
    /// prefill's and the decode's logs (`kubectl logs`, SLURM step output, the shell's log).
    #[arg(long, num_args = 1.., value_name = "LOG", conflicts_with = "file")]
    pub report: Vec<PathBuf>,
    #[command(flatten)]
    pub geometry: GeometryArgs,
    /// A Hugging Face `config.json` whose geometry replaces `model.geometry` (the geometry flags
    /// above still override it).
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
    /// Tokens in the test request; the pools are sized from it.
    #[arg(long, default_value_t = 1024)]
    pub tokens: u32,
    /// Engine: auto (CUDA when a GPU is usable, else CPU), cpu or cuda.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cpu", "cuda"])]
    pub backend: String,
    /// Transfer engine whose descriptors to reproduce (default: the deployment's).
    #[arg(long, value_parser = ["mooncake", "nixl"])]
    pub transfer: Option<String>,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also run deliberately broken variants (decode page size x4 and /4, another KV dtype
    /// width, decode TP x2, K/V swapped) and show that each is caught.
    #[arg(long)]
    pub negative_control: bool,
    /// Most memory to use on the host and on each GPU, e.g. 8G (default: half of what is free).
    #[arg(long, value_parser = parse_bytes)]
    pub max_memory: Option<u64>,
    /// Timed repetitions of the clean transfer (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub iterations: u32,
    /// Seconds any GPU wait, and a run on a GPU as a whole, may take (the CPU has no limit).
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Seed for canary keys and page shuffling.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub transport: super::transport::TransportArgs,
}

/// Where the geometry comes from, in order: the command-line flags, then the deployment's
/// `model.geometry`, which `--model-config` has replaced when given; `base` names the latter.
fn resolve_geometry(args: &GeometryArgs, d: &Deployment, base: &str) -> Result<(Geometry, String), String> {
    let from_deployment = d.model.geometry.as_ref();
    if !args.given() {
        return match from_deployment {
            Some(g) => Ok((g.clone(), base.to_owned())),
            None => Err(
                "no model geometry: give --attention mha|gqa|mla and --layers, with --kv-heads and --head-dim (MHA/GQA) \
                 or --kv-lora-rank and --qk-rope-head-dim (MLA), or --model-config config.json, or set model.geometry \
                 in the deployment"
                    .into(),
            ),
        };
    }
    // Start from the deployment's geometry (same attention kind) and override with the flags.
    // Built through serde so that fields the schema gains later keep their defaults.
    let mut v = match (from_deployment, args.attention.as_deref()) {
        (Some(g), Some(kind))
            if serde_json::to_value(g.attention).ok().and_then(|a| a.as_str().map(str::to_owned)).as_deref()
                != Some(kind) =>
        {
            serde_json::json!({})
        }
        (Some(g), _) => serde_json::to_value(g).map_err(|e| e.to_string())?,
        (None, _) => serde_json::json!({}),
    };
    let set = |v: &mut serde_json::Value, key: &str, val: serde_json::Value| {
        v.as_object_mut().expect("geometry is an object").insert(key.into(), val);
    };
    if let Some(a) = &args.attention {
        set(&mut v, "attention", a.as_str().into());
    }
    for (key, val) in [
        ("layers", args.layers),
        ("kv_heads", args.kv_heads),
        ("head_dim", args.head_dim),
        ("kv_lora_rank", args.kv_lora_rank),
        ("qk_rope_head_dim", args.qk_rope_head_dim),
    ] {
        if let Some(x) = val {
            set(&mut v, key, x.into());
        }
    }
    for (key, flag) in [("attention", "--attention mha|gqa|mla"), ("layers", "--layers")] {
        if v.get(key).is_none() {
            return Err(format!("model geometry: {key} is missing (give {flag})"));
        }
    }
    let g: Geometry = serde_json::from_value(v).map_err(|e| format!("model geometry: {e}"))?;
    let source =
        if from_deployment.is_some() { format!("command-line flags over {base}") } else { "command-line flags".into() };
    Ok((g, source))
}

/// Writes `text` to `path` through a temporary file in the same folder.
pub(super) fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| format!("--json {}: not a file name", path.display()))?;
    let tmp = dir.join(format!(".{}.tmp", name.to_string_lossy()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Gives up the whole run after `limit` seconds: the last line of defence against a hung GPU.
/// Every GPU wait is polled with the same limit, but cudarc calls that block inside the driver
/// cannot be interrupted otherwise.
fn arm_watchdog(limit: u64) {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(limit));
        eprintln!(
            "error: pdlaunch smoke: no result after {limit} s on the GPU (a wait did not return); giving up. Raise --timeout, or use --backend cpu."
        );
        std::process::exit(i32::from(crate::EXIT_BAD_INPUT));
    });
}

/// Progress on stderr: a bar redrawn in place on a terminal, plain lines otherwise. Arms the
/// watchdog when the CUDA engine is chosen.
fn progress(tty: bool, limit: u64) -> impl Fn(Event<'_>) {
    move |e| match e {
        Event::Engine(backend) => {
            if backend == "cuda" {
                arm_watchdog(limit);
            }
        }
        Event::Stage(s) => {
            if tty {
                eprint!("\r\x1b[2K");
            }
            eprintln!("smoke: {s}");
        }
        Event::Pairs { case, engine, done, total } => {
            if tty {
                let width = 30;
                let fill = done * width / total.max(1);
                eprint!(
                    "\r\x1b[2K  [{}{}] {done}/{total} pairs ({case}, {engine})",
                    "#".repeat(fill),
                    ".".repeat(width - fill)
                );
                if done == total {
                    eprintln!();
                }
                let _ = std::io::stderr().flush();
            } else if done == total {
                eprintln!("smoke:   {total} pair(s) transferred ({case}, {engine})");
            }
        }
    }
}

pub fn run(args: Args, style: &Style) -> super::Result<u8> {
    if !args.report.is_empty() {
        return super::hosts::report(&args.report, args.json.as_deref(), style);
    }
    let Some(file) = args.file.as_deref() else {
        return Err("give a deployment file, or --report with the agents' logs".into());
    };
    if args.transport.across != "hosts" && (args.transport.render.is_some() || args.transport.all) {
        eprintln!("{}: --render and --all go with --across hosts", style.error("error"));
        return Ok(crate::EXIT_BAD_INPUT);
    }
    let mut loaded = load(file)?;
    super::model::apply_model_config(&mut loaded.deployment, args.model_config.as_deref())?;
    let base = match &args.model_config {
        Some(p) => format!("--model-config {}", p.display()),
        None => "model.geometry".into(),
    };
    let mut deployment = loaded.deployment.clone();
    let (geometry, source) = match resolve_geometry(&args.geometry, &deployment, &base) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{}: {e}", style.error("error"));
            return Ok(crate::EXIT_BAD_INPUT);
        }
    };
    let kv_geometry = match KvGeometry::from_core(&geometry) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{}: {e}", style.error("error"));
            return Ok(crate::EXIT_BAD_INPUT);
        }
    };
    deployment.model.geometry = Some(geometry);
    let sides = match from_deployment(&deployment) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {}: {e}", style.error("error"), loaded.file);
            return Ok(crate::EXIT_BAD_INPUT);
        }
    };
    let backend = match args.backend.as_str() {
        "cpu" => BackendChoice::Cpu,
        "cuda" => BackendChoice::Cuda,
        _ => BackendChoice::Auto,
    };
    let opts = Options {
        tokens: args.tokens,
        backend,
        transfer: args.transfer.as_deref().map(|t| {
            if t == "nixl" {
                TransferBackend::Nixl
            } else {
                TransferBackend::Mooncake
            }
        }),
        negative_controls: args.negative_control,
        max_memory: args.max_memory,
        iterations: args.iterations.max(1),
        seed: args.seed.unwrap_or(Options::default().seed),
        wait_limit: Duration::from_secs(args.timeout.max(1)),
        threads: None,
        transport: None,
        hosts: None,
    };
    if args.transport.across == "hosts" {
        let (transport, model) =
            match super::hosts::transport(args.transport.transport.as_deref(), &sides.prefill.transfer_backend) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("{}: {e}", style.error("error"));
                    return Ok(crate::EXIT_BAD_INPUT);
                }
            };
        let Some(format) = args.transport.render.as_deref() else {
            eprintln!("{}: --across hosts needs --render kubernetes|slurm|shell", style.error("error"));
            return Ok(crate::EXIT_BAD_INPUT);
        };
        let context = pdlaunch_kv::agent::hosts::Context {
            name: deployment.name.clone(),
            geometry: kv_geometry,
            geometry_source: source,
            sides,
            tokens: opts.tokens,
            seed: opts.seed,
            transfer: opts.transfer.unwrap_or(model),
            negative_controls: opts.negative_controls,
            iterations: opts.iterations,
            transport,
            ib_device: super::hosts::ib_devices(&deployment),
        };
        return super::hosts::render(super::hosts::Render {
            deployment: &deployment,
            context,
            format,
            all: args.transport.all,
            out: args.transport.out.as_deref(),
            timeout: args.timeout.max(1),
            memory: if backend == BackendChoice::Cuda { Memory::Vram } else { Memory::Dram },
        });
    }
    let (transport, note) = super::transport::choose(&args.transport, &sides.prefill.transfer_backend);
    if let Some(n) = note {
        eprintln!("smoke: note: {n}");
    }
    let mut opts = opts;
    let memory = if backend == BackendChoice::Cuda { Memory::Vram } else { Memory::Dram };
    if args.transport.gpus.is_some() && (memory != Memory::Vram || transport == Transport::Memcpy) {
        eprintln!(
            "{}: --gpus places the agents' GPU pools: it needs --backend cuda and --transport nixl or mooncake",
            style.error("error")
        );
        return Ok(crate::EXIT_BAD_INPUT);
    }
    if transport != Transport::Memcpy && memory == Memory::Vram {
        // Refused before any library is looked for, so that the refusal names the GPU (NIXL's
        // pools are this process's; Mooncake's agent opens the driver itself and says so).
        if let Err(e) = agent::vram_refusal(transport) {
            eprintln!("{}: {e}", style.error("error"));
            return Ok(crate::EXIT_BAD_INPUT);
        }
    }
    if let Some(model) = transport.modelled() {
        opts.transfer = opts.transfer.or(Some(model));
        let bootstrap = super::transport::deployment_bootstrap(&deployment);
        let timeout = Duration::from_secs(args.timeout.max(1));
        if let Some(side) = &args.transport.side {
            let case = Case {
                geometry: kv_geometry,
                prefill: sides.prefill.config,
                decode: sides.decode.config,
                backend: opts.transfer.unwrap_or(model),
                tokens: opts.tokens,
                seed: opts.seed,
            };
            return Ok(super::transport::run_side(
                &args.transport,
                side,
                transport,
                case,
                &bootstrap,
                super::transport::SideRun { timeout, iterations: opts.iterations, memory },
            ));
        }
        match super::transport::launcher(&args.transport, transport, &bootstrap, timeout) {
            Ok(l) => opts.transport = Some(l),
            Err(e) => {
                eprintln!("{}: {e}", style.error("error"));
                return Ok(crate::EXIT_BAD_INPUT);
            }
        }
    } else if args.transport.side.is_some() {
        eprintln!("{}: --side needs --transport nixl or mooncake", style.error("error"));
        return Ok(crate::EXIT_BAD_INPUT);
    }
    let input = Input { name: deployment.name.clone(), geometry: kv_geometry, geometry_source: source, sides };
    let report = match smoke::run(&input, &opts, &progress(std::io::stderr().is_terminal(), args.timeout.max(1))) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", style.error("error"));
            return Ok(crate::EXIT_BAD_INPUT);
        }
    };
    let text = smoke::render_text(&report);
    let verdict_line = match report.verdict {
        Verdict::Pass => style.ok("verdict: PASS"),
        Verdict::Fail => style.error("verdict: FAIL"),
    };
    print!("{}", text.replace("verdict: PASS", &verdict_line).replace("verdict: FAIL", &verdict_line));
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)?;
        write_atomic(path, &(json + "\n"))?;
        eprintln!("smoke: report written to {}", path.display());
    }
    Ok(match report.verdict {
        Verdict::Pass => 0,
        Verdict::Fail => crate::EXIT_FINDINGS,
    })
}
