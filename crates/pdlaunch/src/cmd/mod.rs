//! One module per subcommand.

pub mod check;
pub mod explain;
pub mod hosts;
pub mod init;
pub mod lint;
pub mod model;
pub mod probe;
pub mod render;
pub mod rules;
pub mod schema;
pub mod smoke;
pub mod transport;

/// Errors a subcommand reports as bad input (exit 2).
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;
