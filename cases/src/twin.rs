//! The twin tier: a case's scenario is checked on the model (its expectations and the chain's
//! properties, as on the model tier) and written, step by step, through the kube-rs client
//! into an embedded twin whose reference operator (mutated, if asked) derives the chain; one
//! more row says whether every object the twin published equals the model's at every write
//! step (`tier::ApiTarget::judge`). Expectations that hold on the model and a twin that
//! matches the model at every step hold on the twin. The live tier is the same target on a
//! cluster.

use std::cell::RefCell;

use model::events::Event;
use model::mutants::Mutant;
use model::scenario::{Expectation, Scenario};
use tier::ApiTarget;

use crate::hardware::{MigNode, HARDWARE_CHECK};
use crate::library::LockedCase;
use crate::run::{run_on_model, verdict_of, CaseRun, Row, Status};
use crate::tier::Tier;

/// The check the twin row names.
pub const TWIN_CHECK: &str = "the twin's objects equal the model's at every write step";

/// The check the live row names.
pub const LIVE_CHECK: &str = "the cluster's objects equal the model's at every write step";

/// What the twin and live tiers add to a case's run ([`crate::CaseTier::twin`],
/// [`crate::CaseTier::on_cluster`]): its API target, and on a cluster the MIG node and the
/// pool rows.
pub(crate) struct ApiCases {
    /// Judging a case steps the target (one run at a time).
    target: RefCell<ApiTarget>,
    /// On a cluster with `MIG_NODE_SSH`: the node whose cards the MIG cases toggle (dropped
    /// with the tier, which switches back whatever is still held).
    pub(crate) mig: Option<std::sync::Mutex<MigNode>>,
    /// On a cluster: each case's pool rows (`probe::pool_rows`), read before the run.
    pub(crate) pools: std::collections::BTreeMap<u32, Vec<Row>>,
}

impl ApiCases {
    pub(crate) fn new(target: ApiTarget) -> Self {
        ApiCases {
            target: RefCell::new(target),
            mig: None,
            pools: Default::default(),
        }
    }

    /// The hardware row of a gated case on a cluster: the real step for an NVIDIA partition
    /// case when a MIG node is set, else a SKIP naming what was not automated.
    fn hardware_row(&self, case: &LockedCase) -> Row {
        match &self.mig {
            Some(node) if case.toggles_mig() => node
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .case_step(case.header.number)
                .row(),
            _ => Row {
                status: Status::Skip,
                check: HARDWARE_CHECK.into(),
                object: "not automated by verify: the modelled part ran on mocked Devices in \
                         run-unique pools"
                    .into(),
                expectation: None,
            },
        }
    }
}

/// What a `joint` expectation asks: (its index, step, `namespace/name`, phase, words the
/// message must carry, words it must not, the check's label).
type JointAsk<'s> = (
    usize,
    usize,
    &'s str,
    &'s str,
    &'s [String],
    &'s [String],
    String,
);

fn joint_asks(s: &Scenario) -> Vec<JointAsk<'_>> {
    s.expect
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Expectation::Joint {
                step,
                workload,
                phase,
                contains,
                lacks,
                check,
            } => Some((
                i,
                *step,
                workload.as_str(),
                phase.as_str(),
                contains.as_slice(),
                lacks.as_slice(),
                if check.is_empty() {
                    format!("joint check on {workload}: {phase}")
                } else {
                    check.clone()
                },
            )),
            _ => None,
        })
        .collect()
}

/// Whether a phase and message read back answer a `joint` expectation: the same phase, every
/// `contains` word in the message and no `lacks` word (as the model's row judges it).
pub fn joint_answered(
    phase: &str,
    contains: &[String],
    lacks: &[String],
    got: &str,
    message: &str,
) -> bool {
    got == phase
        && contains.iter().all(|w| message.contains(w.as_str()))
        && !lacks.iter().any(|w| message.contains(w.as_str()))
}

/// On the live tier, where the rows stop: a cluster's clock cannot be moved, so a scenario
/// with a joint timeout is checked up to it (`ApiTarget::steppable`).
fn live_stop_note(s: &Scenario) -> String {
    match s
        .events
        .iter()
        .position(|e| matches!(e, Event::JointTimeout { .. }))
    {
        Some(k) => format!(
            "; checked up to event {k}: a joint timeout (30 min of the cluster's own clock) cannot be stepped on a cluster"
        ),
        None => String::new(),
    }
}

impl ApiCases {
    /// The scenario's `joint` expectations judged on the twin: its Workloads kept and read
    /// back at each expectation's step (`ApiTarget::workloads_at_steps`), the
    /// `gpustack-model-deployment-joint` entry's state and message and `spec.active` read as a
    /// phase (`live::wire::workload::joint_phase_on_wire`).
    fn joint_rows(&self, mutant: Option<Mutant>, s: &Scenario) -> Vec<Row> {
        let asks = joint_asks(s);
        if asks.is_empty() {
            return Vec::new();
        }
        let reads: Vec<(usize, String)> = asks.iter().map(|a| (a.1, a.2.to_string())).collect();
        let found = match self.target.borrow().workloads_at_steps(s, mutant, &reads) {
            Ok(found) => found,
            Err(e) => {
                return vec![Row {
                    status: Status::Fail,
                    check: format!("{JOINT_TWIN_CHECK}: the joint check's entries"),
                    object: format!("inconclusive: {e}"),
                    expectation: None,
                }]
            }
        };
        asks.iter()
            .zip(found)
            .map(
                |((index, step, workload, phase, contains, lacks, check), o)| {
                    let (got, message) = live::wire::workload::joint_phase_on_wire(o.as_ref());
                    let active = o.as_ref().map_or("no Workload".to_string(), |o| {
                        format!("spec.active={}", live::wire::workload::is_active(o))
                    });
                    let held = joint_answered(phase, contains, lacks, got, &message);
                    let read = if message.is_empty() {
                        format!("step {step}: {workload} {got} ({active})")
                    } else {
                        format!("step {step}: {workload} {got} ({active}): {message}")
                    };
                    Row {
                        status: if held { Status::Pass } else { Status::Fail },
                        check: format!("{JOINT_TWIN_CHECK}: {check}"),
                        object: read,
                        expectation: Some(*index),
                    }
                },
            )
            .collect()
    }
}

/// How the rows read back from the twin's Workloads begin.
pub const JOINT_TWIN_CHECK: &str = "on the twin";

impl ApiCases {
    /// Runs `case` on the model, then steps it on the target (its operator mutated by
    /// `mutant` on the twin) and adds the rows only a server answers.
    pub(crate) fn run(&self, tier: Tier, mutant: Option<Mutant>, case: &LockedCase) -> CaseRun {
        let mut run = run_on_model(case, &case.scenario);
        if run.rows.iter().all(|r| r.status == Status::Skip) {
            // Nothing the model checks: the twin has nothing to agree on either.
            run.tier = tier;
            return run;
        }
        let judged = self.target.borrow_mut().judge(&case.scenario, mutant);
        let (status, object) = match judged {
            Ok(None) => (Status::Pass, self.target.borrow().endpoint()),
            Ok(Some(d)) => (Status::Fail, d.message),
            Err(e) => (Status::Fail, format!("inconclusive: {e}")),
        };
        let check = match tier {
            Tier::Live => LIVE_CHECK,
            _ => TWIN_CHECK,
        };
        let object = match tier {
            Tier::Live => format!("{object}{}", live_stop_note(&case.scenario)),
            _ => object,
        };
        run.rows.push(Row {
            status,
            check: check.into(),
            object,
            expectation: None,
        });
        if tier == Tier::Twin {
            run.rows.extend(self.joint_rows(mutant, &case.scenario));
        }
        if tier == Tier::Live && case.header.gate.is_some() {
            run.rows.push(self.hardware_row(case));
        }
        if let Some(rows) = self.pools.get(&case.header.number) {
            run.rows.extend(rows.iter().cloned());
        }
        run.tier = tier;
        run.verdict = verdict_of(&run.rows);
        run
    }
}
