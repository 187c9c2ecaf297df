//! Expected failures of the model, as values: bad input names where and what was expected.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ModelError {
    #[error("unknown device allocation mode {0}: expected 0 (None) to 5 (Visibility)")]
    UnknownMode(u64),
    #[error("{field}: {problem}")]
    Invalid { field: String, problem: String },
}

impl ModelError {
    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        ModelError::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}
