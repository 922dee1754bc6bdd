//! `pdlaunch schema`: print the deployment JSON Schema.

use pdlaunch_core::schema::{schema_text, Dialect};

#[derive(clap::Args)]
pub struct Args {
    /// JSON Schema dialect.
    #[arg(long, default_value = "draft-07", value_parser = ["draft-07", "2020-12"])]
    pub dialect: String,
}

pub fn run(args: Args) -> super::Result<u8> {
    let dialect = if args.dialect == "2020-12" { Dialect::Draft2020_12 } else { Dialect::Draft07 };
    print!("{}", schema_text(dialect));
    Ok(0)
}
