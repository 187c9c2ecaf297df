//! The twin tier: a case's scenario is checked on the model (its expectations and the chain's
//! properties, as on the model tier) and written, step by step, through the kube-rs client
//! into an embedded twin whose reference operator (mutated, if asked) derives the chain; one
//! more row says whether every object the twin published equals the model's at every write
//! step (`fuzz::twin::TwinRunner::judge`). Expectations that hold on the model and a twin that
//! matches the model at every step hold on the twin.

use fuzz::twin::{TwinConfig, TwinRunner};
use model::mutants::Mutant;
use model::scenario::LiveGate;

use crate::library::LockedCase;
use crate::run::{run_on_model, verdict_of, CaseRun, Row, Status};
use crate::tier::{Tier, TierRunner};

/// The check the twin row names.
pub const TWIN_CHECK: &str = "the twin's objects equal the model's at every write step";

/// Cases on an embedded twin on 127.0.0.1 (one twin, reset between cases).
pub struct TwinTier {
    runner: TwinRunner,
    /// Mutates the twin's operator, never the model.
    pub mutant: Option<Mutant>,
}

impl TwinTier {
    pub fn start(mutant: Option<Mutant>) -> Result<Self, String> {
        let runner = TwinRunner::start(TwinConfig::default()).map_err(|e| e.to_string())?;
        Ok(TwinTier { runner, mutant })
    }
}

impl TierRunner for TwinTier {
    fn tier(&self) -> Tier {
        Tier::Twin
    }

    /// The twin mocks whatever hardware the case's own scenario builds.
    fn has_hardware(&self, _gate: &LiveGate) -> bool {
        true
    }

    fn run(&self, case: &LockedCase) -> CaseRun {
        let mut run = run_on_model(case, &case.scenario);
        if run.rows.iter().all(|r| r.status == Status::Skip) {
            // Nothing the model checks: the twin has nothing to agree on either.
            run.tier = Tier::Twin;
            return run;
        }
        let (status, object) = match self.runner.judge(&case.scenario, self.mutant) {
            Ok(None) => (Status::Pass, self.runner.describe()),
            Ok(Some(d)) => (Status::Fail, d.message()),
            Err(e) => (Status::Fail, format!("inconclusive: {e}")),
        };
        run.rows.push(Row {
            status,
            check: TWIN_CHECK.into(),
            object,
            expectation: None,
        });
        run.tier = Tier::Twin;
        run.verdict = verdict_of(&run.rows);
        run
    }
}
