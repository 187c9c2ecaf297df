//! Every way a scenario, a run directory or the regression file can go wrong, as values that
//! name the file, the line (and column when known) and the field.

use std::fmt;
use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::path::FieldPath;

/// Where in a file something was found: `origin[:line[:column]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file name (or another label the caller chose for in-memory text).
    pub origin: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

impl Location {
    pub fn new(origin: &str, at: Option<(usize, usize)>) -> Self {
        Location {
            origin: origin.to_string(),
            line: at.map(|(l, _)| l),
            column: at.map(|(_, c)| c),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// `field PATH: ` when the path is known, nothing at the document root.
fn field_prefix(field: &FieldPath) -> String {
    if field.is_root() {
        String::new()
    } else {
        format!("field {field}: ")
    }
}

/// A failure of this crate.
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// A file or directory could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    /// The text is not YAML, or a value has the wrong shape, type or range.
    #[error("{at}: {}{message}", field_prefix(field))]
    Syntax {
        at: Location,
        field: FieldPath,
        message: String,
    },
    /// A key the scenario format does not know (a typo would otherwise be silently dropped).
    #[error("{at}: field {field}: unknown field: not part of the scenario format")]
    UnknownField { at: Location, field: FieldPath },
    /// The cluster parsed but `model::derive::validate` refused it.
    #[error("{at}: {}{problem}", field_prefix(field))]
    Invalid {
        at: Location,
        field: FieldPath,
        problem: String,
    },
    /// A scenario could not be rendered as YAML.
    #[error("cannot render the scenario as YAML: {0}")]
    Render(#[source] serde_norway::Error),
    /// A line of the regression file is not `<seed> [# note]`.
    #[error("{at}: {message}")]
    Regression { at: Location, message: String },
    /// A run id that cannot name a directory.
    #[error("bad run id `{id}`: {why}")]
    RunId { id: String, why: String },
}

impl ScenarioError {
    /// The field path the error names, if it names one.
    pub fn field(&self) -> Option<&FieldPath> {
        match self {
            ScenarioError::Syntax { field, .. }
            | ScenarioError::UnknownField { field, .. }
            | ScenarioError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The location the error names, if it names one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ScenarioError::Syntax { at, .. }
            | ScenarioError::UnknownField { at, .. }
            | ScenarioError::Invalid { at, .. }
            | ScenarioError::Regression { at, .. } => Some(at),
            _ => None,
        }
    }
}
