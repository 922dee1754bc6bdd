//! Reading deployment files (or stdin) into a deployment, with errors that name the place.

use std::io::Read;

use pdlaunch_core::deployment::Deployment;
use pdlaunch_core::load::{parse_deployment, LoadError, Syntax};

/// A deployment and the text it came from (to map field paths back to lines).
pub struct Loaded {
    /// The parsed deployment.
    pub deployment: Deployment,
    /// The file name as given (`<stdin>` for `-`).
    pub file: String,
    /// The text.
    pub text: String,
}

/// Why input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {file}: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{0}")]
    Load(#[from] Box<LoadError>),
}

/// Reads and parses `path` (`-` reads stdin, as YAML or JSON).
pub fn load(path: &str) -> Result<Loaded, InputError> {
    let (file, text) = if path == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|source| InputError::Io { file: "<stdin>".into(), source })?;
        ("<stdin>".to_owned(), s)
    } else {
        let text = std::fs::read(path).map_err(|source| InputError::Io { file: path.into(), source })?;
        let text = String::from_utf8(text).map_err(|e| {
            InputError::Load(Box::new(LoadError {
                file: path.into(),
                line: None,
                column: None,
                path: None,
                message: format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
                hint: Some("save the deployment as UTF-8 YAML or JSON".into()),
            }))
        })?;
        (path.to_owned(), text)
    };
    let deployment = parse_deployment(&text, &file, Syntax::from_name(&file)).map_err(Box::new)?;
    Ok(Loaded { deployment, file, text })
}
