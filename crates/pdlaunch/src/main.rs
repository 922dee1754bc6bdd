//! `pdlaunch`: render matched SGLang prefill, decode and router command lines from one deployment
//! file, check them against SGLang's own rules, explain SGLang errors, and publish the schema.
//!
//! The CLI is thin: reading files, writing files and printing live here; everything else is in
//! `pdlaunch-core`.
//!
//! The allocator is mimalloc: linting allocates many small strings, which glibc's malloc serves
//! slowly (the lint bench runs with the same allocator).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Lint and check allocate many small strings; mimalloc serves them about 1.6x faster than
/// glibc's malloc on the lint bench.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cmd;
mod input;
mod style;

/// Exit status for "the deployment has errors".
pub const EXIT_FINDINGS: u8 = 1;
/// Exit status for bad input or environment.
pub const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser)]
#[command(
    name = "pdlaunch",
    version,
    about = "Matched SGLang prefill/decode/router launch commands from one schema, checked before launch"
)]
struct Cli {
    /// When to use colour: auto, always or never (NO_COLOR is honoured).
    #[arg(long, global = true, default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render the launch commands of a deployment (validated first).
    Render(cmd::render::Args),
    /// Validate a deployment: exit 0 when clean, 1 when errors are found, 2 on bad input.
    Check(cmd::check::Args),
    /// Lint existing launch scripts, manifests, SLURM jobs or command lines (exit codes as `check`).
    Lint(cmd::lint::Args),
    /// Print the deployment JSON Schema.
    Schema(cmd::schema::Args),
    /// Explain an SGLang error message, or a rule code: cause and fix.
    Explain(cmd::explain::Args),
    /// Write a starting deployment from a named example.
    Init(cmd::init::Args),
    /// List the validation rules.
    Rules(cmd::rules::Args),
    /// KV transfer smoke test: move one request's KV pages with the deployment's layouts on the
    /// CPU or GPUs and prove where every slice lands (exit 0 pass, 1 fail, 2 bad input).
    Smoke(Box<cmd::smoke::Args>),
    /// One transfer agent of `smoke --transport` (started by the smoke test; plan on stdin).
    #[command(hide = true, name = "smoke-agent")]
    SmokeAgent(cmd::transport::AgentArgs),
    /// Print the geometry and KV bytes per token of a model's config.json (or a built-in preset).
    Model(cmd::model::Args),
    /// Ask running servers what they use (/server_info, bootstrap info, the router's workers) and
    /// check the live fleet, or its drift from a deployment (exit codes as `check`).
    Probe(cmd::probe::Args),
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so printing to a closed pipe (`pdlaunch explain … | head`) would panic;
    // the default action ends the process quietly, as `cat` or `grep` do.
    #[cfg(unix)]
    // SAFETY: restores the signal's default disposition before any thread or I/O starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let style = style::Style::new(&cli.color);
    let result = match cli.command {
        Command::Render(a) => cmd::render::run(a, &style),
        Command::Check(a) => cmd::check::run(a, &style),
        Command::Lint(a) => cmd::lint::run(a, &style),
        Command::Schema(a) => cmd::schema::run(a),
        Command::Explain(a) => cmd::explain::run(a, &style),
        Command::Init(a) => cmd::init::run(a),
        Command::Rules(a) => cmd::rules::run(a, &style),
        Command::Smoke(a) => cmd::smoke::run(*a, &style),
        Command::SmokeAgent(a) => cmd::transport::run_agent(a),
        Command::Model(a) => cmd::model::run(a, &style),
        Command::Probe(a) => cmd::probe::run(a, &style),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("{}: {e}", style.error("error"));
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
