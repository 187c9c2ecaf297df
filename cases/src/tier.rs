//! Where a case runs. A tier is a parameter: a [`CaseTier`] runs a case on the model, or
//! steps it on a [`tier::ApiTarget`] (the embedded twin, a cluster: [`crate::twin`]). The
//! live gating of the hardware blocks (cases.md §2.4) is decided here, as data.

use model::mutants::Mutant;
use model::scenario::LiveGate;

use crate::library::LockedCase;
use crate::run::CaseRun;
use crate::twin::ApiCases;

pub use tier::Tier;

/// What the gate knows of a tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gate {
    pub tier: Tier,
    /// Whether the tier can run cases at all (a tier not built answers exit 2).
    pub available: bool,
    /// The hardware a cluster has (`probe::cluster_hardware`); `None` where the tier builds
    /// whatever a case's own scenario needs (the model, the twin's mocks).
    pub hardware: Option<Vec<String>>,
}

impl Gate {
    /// Whether the hardware a gated case needs is present.
    fn has_hardware(&self, gate: &LiveGate) -> bool {
        self.hardware
            .as_ref()
            .is_none_or(|h| h.contains(&gate.hardware))
    }
}

/// A tier cases run on: the model (optionally with an injected operator bug, to prove a case
/// catches it), the twin or live tier through an API target, or a tier not built.
pub struct CaseTier {
    gate: Gate,
    /// Mutates the model's rules on the model tier, the twin's operator on the twin tier;
    /// never the reference.
    pub mutant: Option<Mutant>,
    /// The twin and live tiers' target and what they add to a case's rows.
    api: Option<ApiCases>,
}

impl CaseTier {
    /// The model tier: the case's scenario replayed on the reference model, run under
    /// `mutant`, if any.
    pub fn model(mutant: Option<Mutant>) -> CaseTier {
        CaseTier {
            gate: Gate {
                tier: Tier::Model,
                available: true,
                hardware: None,
            },
            mutant,
            api: None,
        }
    }

    /// A tier that is not built: every case answers exit 2, "not available yet", after the
    /// input-required gate has had its say.
    pub fn unavailable(tier: Tier) -> CaseTier {
        CaseTier {
            gate: Gate {
                tier,
                available: false,
                hardware: Some(Vec::new()),
            },
            mutant: None,
            api: None,
        }
    }

    /// The twin tier: an embedded twin on 127.0.0.1 (one twin, reset between cases) whose
    /// operator runs `mutant`, if any.
    pub fn twin(mutant: Option<Mutant>) -> Result<CaseTier, tier::ApiError> {
        let target = tier::ApiTarget::start(tier::ApiConfig::default())?;
        Ok(CaseTier {
            gate: Gate {
                tier: Tier::Twin,
                available: true,
                hardware: None,
            },
            mutant,
            api: Some(ApiCases::new(target)),
        })
    }

    /// The live tier through `target` (`ApiTarget::connect`: the scenario localized so its
    /// pools are the run's own), on a cluster that has `hardware`.
    pub fn on_cluster(target: tier::ApiTarget, hardware: Vec<String>) -> CaseTier {
        CaseTier {
            gate: Gate {
                tier: Tier::Live,
                available: true,
                hardware: Some(hardware),
            },
            mutant: None,
            api: Some(ApiCases::new(target)),
        }
    }

    /// The live tier's MIG cases run their hardware step on `node`.
    pub fn with_mig_node(mut self, node: crate::hardware::MigNode) -> Self {
        if let Some(api) = &mut self.api {
            api.mig = Some(std::sync::Mutex::new(node));
        }
        self
    }

    /// The live tier's pool rows of each case (`probe::pool_rows`), appended to its run.
    pub fn with_pool_rows(
        mut self,
        pools: std::collections::BTreeMap<u32, Vec<crate::Row>>,
    ) -> Self {
        if let Some(api) = &mut self.api {
            api.pools = pools;
        }
        self
    }

    pub fn tier(&self) -> Tier {
        self.gate.tier
    }

    /// What the gate knows of this tier.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Runs `case` on this tier (ungated: [`run_gated`] asks the gate first).
    pub fn run(&self, case: &LockedCase) -> CaseRun {
        match &self.api {
            _ if !self.gate.available => CaseRun::not_run(
                case,
                self.tier(),
                crate::run::Verdict::Unavailable { tier: self.tier() },
            ),
            Some(api) => api.run(self.tier(), self.mutant, case),
            None => {
                let mut s = case.scenario.clone();
                s.cluster.settings.mutant = self.mutant;
                crate::run::run_on_model(case, &s)
            }
        }
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
    tier: &Gate,
    gate: Option<&LiveGate>,
    env: &dyn Fn(&str) -> Option<String>,
) -> GateVerdict {
    let Some(gate) = gate else {
        return GateVerdict::Run;
    };
    if tier.tier == Tier::Live {
        if let Some(var) = &gate.env {
            if env(var).is_none_or(|v| v.is_empty()) {
                return GateVerdict::InputRequired(var.clone());
            }
        }
    }
    if tier.available && !tier.has_hardware(gate) {
        return GateVerdict::Skip(format!("this cluster lacks {}", gate.hardware));
    }
    GateVerdict::Run
}

/// The run of a case its gate stops (`None`: the tier may run it): input required → exit 2
/// naming the variable; tier not built → exit 2; hardware absent → skipped, nothing verified.
pub fn gated(
    tier: &Gate,
    case: &LockedCase,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<CaseRun> {
    use crate::run::Verdict;
    let verdict = match gate_verdict(tier, case.header.gate.as_ref(), env) {
        GateVerdict::InputRequired(variable) => Verdict::InputRequired { variable },
        _ if !tier.available => Verdict::Unavailable { tier: tier.tier },
        GateVerdict::Skip(why) => Verdict::Skipped { why },
        GateVerdict::Run => return None,
    };
    Some(CaseRun::not_run(case, tier.tier, verdict))
}

/// Runs `case` on `tier` behind its gate ([`gated`]).
pub fn run_gated(
    tier: &CaseTier,
    case: &LockedCase,
    env: &dyn Fn(&str) -> Option<String>,
) -> CaseRun {
    gated(tier.gate(), case, env).unwrap_or_else(|| tier.run(case))
}
