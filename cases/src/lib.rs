//! The operator's locked end-to-end cases (research/cases.md) as data, and their runner.
//!
//! - [`index`]: every case number with its locked title, scope tags, Needs, mutation posture
//!   and whether `verify` models it (and why not, when it does not).
//! - [`library`]: the modelled cases, each a scenario file (`scenarios/NN.yaml`) carrying the
//!   case header contract and expectations with the original's numbers.
//! - [`tier`]: where a case runs ([`CaseTier`]: the model, or an API target for the twin and
//!   live tiers, [`twin`]) and the live gating (input-required variables, hardware
//!   auto-skips).
//! - [`run`]: a case's `STATUS | CHECK | OBJECT` rows and verdict, from the oracle's replay.
//! - [`block`]: the MIG block (order 27, 24, then the rest; restore only toggled cards) and
//!   the RDMA block (`--report-only` requirement matrix).
//! - [`hardware`]: the MIG block's hardware step on the live tier: mode toggles over SSH on
//!   `MIG_NODE_SSH`, restoring exactly the cards it switched.
//! - [`render`]: the table, the verdict line, JUnit XML.
//!
//! No rule lives here: expectations are checked by `oracle::replay`, which asks the model.

pub mod block;
pub mod hardware;
pub mod index;
pub mod library;
pub mod probe;
pub mod render;
pub mod run;
pub mod tier;
pub mod twin;

pub use index::{index, IndexEntry, Scope};
pub use library::{case, cases, LockedCase};
pub use run::{CaseRun, Row, Status, Verdict};
pub use tier::{run_gated, CaseTier, Tier};
pub use twin::TWIN_CHECK;

/// A block of hardware cases, run in the block runner's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    Mig,
    Rdma,
}

impl Block {
    pub fn order(self) -> &'static [u32] {
        match self {
            Block::Mig => &block::MIG_ORDER,
            Block::Rdma => &block::RDMA_ORDER,
        }
    }
}

/// Why a case could not be run (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error(transparent)]
    CaseFile(#[from] library::CaseFileError),
    #[error("no case {0} in the index (numbers 1-32, 34-45, 47-91, 93-115; 33, 46 and 92 were never used)")]
    NotInIndex(u32),
}

/// Runs case `n` on `tier`. A number the index lacks, or a library file that does not parse,
/// is an error (exit 2); a case the index lists as not modelled is a skip naming the reason.
pub fn run_case(
    n: u32,
    tier: &CaseTier,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<CaseRun, CaseError> {
    match library::case(n) {
        Some(Ok(case)) => Ok(run_gated(tier, &case, env)),
        Some(Err(e)) => Err(e.into()),
        None => {
            let e = index::entry(n).ok_or(CaseError::NotInIndex(n))?;
            let why = e.not_modelled.clone().unwrap_or_else(|| {
                "the index marks it modelled but no scenario file carries it".into()
            });
            Ok(CaseRun {
                number: n,
                title: e.title.clone(),
                tier: tier.tier(),
                rows: Vec::new(),
                verdict: Verdict::Skipped {
                    why: format!("not modelled by verify: {why}"),
                },
            })
        }
    }
}

/// Runs a block's cases in order; a failure is recorded and the block goes on (each case
/// restores its own baseline). An input-required gate stops the block at once (exit 2).
pub fn run_block(
    b: Block,
    tier: &CaseTier,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<CaseRun>, CaseError> {
    let mut runs = Vec::new();
    for &n in b.order() {
        let run = run_case(n, tier, env)?;
        let stop = matches!(run.verdict, Verdict::InputRequired { .. });
        runs.push(run);
        if stop {
            break;
        }
    }
    Ok(runs)
}
