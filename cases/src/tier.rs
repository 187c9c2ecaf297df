//! Where a case runs. A tier is a parameter: the runner asks a [`TierRunner`] to run a case;
//! only the model tier exists today (the twin and live tiers need the kube-rs client).
//! The live gating of the hardware blocks (cases.md §2.4) is decided here, as data.

use model::mutants::Mutant;
use model::scenario::LiveGate;

use crate::library::LockedCase;
use crate::run::CaseRun;

pub use tier::Tier;

/// Runs a case on one tier.
pub trait TierRunner {
    fn tier(&self) -> Tier;
    /// Whether this tier can run cases at all yet.
    fn available(&self) -> bool {
        true
    }
    /// Whether the hardware a gated case needs is present (the model has whatever the case's
    /// own scenario builds).
    fn has_hardware(&self, gate: &LiveGate) -> bool;
    fn run(&self, case: &LockedCase) -> CaseRun;
}

/// The model tier: the case's scenario replayed on the reference model (optionally with an
/// injected operator bug, to prove the case catches it).
#[derive(Clone, Copy, Debug, Default)]
pub struct ModelTier {
    pub mutant: Option<Mutant>,
}

impl TierRunner for ModelTier {
    fn tier(&self) -> Tier {
        Tier::Model
    }

    fn has_hardware(&self, _gate: &LiveGate) -> bool {
        true
    }

    fn run(&self, case: &LockedCase) -> CaseRun {
        let mut s = case.scenario.clone();
        s.cluster.settings.mutant = self.mutant;
        crate::run::run_on_model(case, &s)
    }
}

/// What the gate says before a case may start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateVerdict {
    Run,
    /// Exit 2, naming the variable (`MIG_NODE_SSH`, `PPU_NODE_SSH`).
    InputRequired(String),
    /// Exit 0, `NOTHING WAS VERIFIED`, naming what is missing.
    Skip(String),
}

/// The input-required gate, then the hardware auto-skip (cases.md §2.4: hardware absence is
/// never exit 2). The model tier builds its own hardware and needs no address.
pub fn gate_verdict(
    tier: &dyn TierRunner,
    gate: Option<&LiveGate>,
    env: &dyn Fn(&str) -> Option<String>,
) -> GateVerdict {
    let Some(gate) = gate else {
        return GateVerdict::Run;
    };
    if tier.tier() == Tier::Live {
        if let Some(var) = &gate.env {
            if env(var).is_none_or(|v| v.is_empty()) {
                return GateVerdict::InputRequired(var.clone());
            }
        }
    }
    if tier.available() && !tier.has_hardware(gate) {
        return GateVerdict::Skip(format!("this cluster lacks {}", gate.hardware));
    }
    GateVerdict::Run
}

/// A tier that is not built yet (twin, live): every case answers exit 2, "not available yet",
/// after the input-required gate has had its say.
#[derive(Clone, Copy, Debug)]
pub struct UnavailableTier(pub Tier);

impl TierRunner for UnavailableTier {
    fn tier(&self) -> Tier {
        self.0
    }

    fn available(&self) -> bool {
        false
    }

    fn has_hardware(&self, _gate: &LiveGate) -> bool {
        false
    }

    fn run(&self, case: &LockedCase) -> CaseRun {
        CaseRun::not_run(
            case,
            self.0,
            crate::run::Verdict::Unavailable { tier: self.0 },
        )
    }
}

/// Runs `case` on `tier` behind its gate: input required → exit 2 naming the variable; tier
/// not built → exit 2; hardware absent → skipped, nothing verified; else the tier runs it.
pub fn run_gated(
    tier: &dyn TierRunner,
    case: &LockedCase,
    env: &dyn Fn(&str) -> Option<String>,
) -> CaseRun {
    use crate::run::Verdict;
    match gate_verdict(tier, case.header.gate.as_ref(), env) {
        GateVerdict::InputRequired(variable) => {
            CaseRun::not_run(case, tier.tier(), Verdict::InputRequired { variable })
        }
        _ if !tier.available() => tier.run(case),
        GateVerdict::Skip(why) => CaseRun::not_run(case, tier.tier(), Verdict::Skipped { why }),
        GateVerdict::Run => tier.run(case),
    }
}
