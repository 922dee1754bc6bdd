//! `pdlaunch init`: write a starting deployment from a named example.

use std::io::Write;
use std::path::PathBuf;

use pdlaunch_core::examples::EXAMPLES;

#[derive(clap::Args)]
pub struct Args {
    /// Example name (see --list).
    #[arg(default_value = "llama-1p1d")]
    pub example: String,
    /// File to create (never overwritten); prints to stdout when omitted.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// List the examples.
    #[arg(long)]
    pub list: bool,
}

pub fn run(args: Args) -> super::Result<u8> {
    if args.list {
        for e in EXAMPLES {
            println!("{:<24} {}", e.name, e.summary);
        }
        return Ok(0);
    }
    let Some(e) = EXAMPLES.iter().find(|e| e.name == args.example) else {
        let names: Vec<_> = EXAMPLES.iter().map(|e| e.name).collect();
        return Err(format!("no example named `{}`; choose one of: {}", args.example, names.join(", ")).into());
    };
    // Point the modeline at the published schema rather than the repository-relative one.
    let text = e.yaml.replacen(
        "$schema=../schema/deployment.schema.json",
        "$schema=https://pdlaunch.dev/schema/deployment.schema.json",
        1,
    );
    match args.out {
        None => print!("{text}"),
        Some(path) => {
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(|err| {
                if err.kind() == std::io::ErrorKind::AlreadyExists {
                    format!("{} already exists; pdlaunch init never overwrites a file", path.display())
                } else {
                    format!("cannot create {}: {err}", path.display())
                }
            })?;
            f.write_all(text.as_bytes())?;
            eprintln!(
                "wrote {} (from example `{}`); check it with `pdlaunch check {}`",
                path.display(),
                e.name,
                path.display()
            );
        }
    }
    Ok(0)
}
