//! Scenario files on disk: the YAML format of `model::scenario::Scenario` (strict reading with
//! file:line:column and field-path errors, stable writing), counterexample run directories and
//! the regression-seed file (DESIGN.md "Rules of the house": a case, a counterexample and a
//! checkpoint are all scenario files).
//!
//! This crate owns bytes on disk only. It makes no rule decision and checks no property: the
//! model decides, the generators and the oracle judge, this crate stores what they produced.

mod atomic;
mod case;
mod error;
mod format;
mod locate;
pub mod nesting;
mod path;
mod regressions;
mod rundir;

pub use case::{case_from_yaml, case_to_yaml, load_case, CaseFile};
pub use error::{Location, ScenarioError};
pub use format::{from_yaml, load, save, to_yaml, try_to_yaml};
pub use locate::locate;
pub use path::{FieldPath, Segment};
pub use regressions::{Regression, Regressions, DEFAULT_REGRESSIONS_FILE};
pub use rundir::{run_id, run_id_now, RunDir, COUNTEREXAMPLES_DIR, DEFAULT_RUNS_DIR};

pub use model::scenario::{CaseHeader, Expectation, Scenario};
