//! Two scenarios replayed side by side through `model::events::World`: the first step at
//! which their published objects or an event's effect differ. The mutant check is
//! `compare_runs(s, s')` where `s'` is `s` with `cluster.settings.mutant = Some(m)`.

use model::events::{Effect, World};
use model::scenario::Scenario;
use serde::Serialize;

use crate::diff::{diff, render, Difference, ObjectKind};
use crate::properties::Violation;

/// Where two runs first part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// 0 = the initial derivation; k = after event k-1.
    pub step: usize,
    pub differences: Vec<Difference>,
}

/// The first step at which `a` and `b` differ (objects via [`diff`], plus each event's
/// [`Effect`]); `None` when they agree throughout. A run with more events than the other
/// diverges at the first event only it has.
pub fn compare_runs(a: &Scenario, b: &Scenario) -> Option<Divergence> {
    let mut wa = World::new(a.cluster.clone());
    let mut wb = World::new(b.cluster.clone());
    let initial = diff(&wa.observe(), &wb.observe());
    if !initial.is_empty() {
        return Some(Divergence {
            step: 0,
            differences: initial,
        });
    }
    for k in 0..a.events.len().max(b.events.len()) {
        let ea = a.events.get(k).map(|e| wa.apply(e));
        let eb = b.events.get(k).map(|e| wb.apply(e));
        let mut differences = effect_difference(k, ea.as_ref(), eb.as_ref());
        differences.extend(diff(&wa.observe(), &wb.observe()));
        if !differences.is_empty() {
            return Some(Divergence {
                step: k + 1,
                differences,
            });
        }
    }
    None
}

/// The objects `s` publishes at `step` (0 = initially; k = after event k-1), as
/// [`compare_runs`] numbers its steps; a step past the last event is the end state.
pub fn observe_at(s: &Scenario, step: usize) -> model::derive::Derived {
    let mut world = World::new(s.cluster.clone());
    for event in s.events.iter().take(step) {
        world.apply(event);
    }
    world.observe()
}

/// The effect of event `k` as a difference, when the two runs' effects disagree.
fn effect_difference(k: usize, a: Option<&Effect>, b: Option<&Effect>) -> Vec<Difference> {
    if a == b {
        return Vec::new();
    }
    let show = |e: Option<&Effect>| e.map(|e| render(&serde_json::to_value(e).unwrap_or_default()));
    vec![Difference {
        kind: ObjectKind::Effect,
        name: format!("event[{k}]"),
        field: "effect".into(),
        expected: show(a),
        observed: show(b),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::events::Event;
    use model::examples;

    fn scenario(events: Vec<Event>) -> Scenario {
        Scenario {
            name: "walkthrough".into(),
            cluster: examples::walkthrough(),
            events,
            ..Scenario::default()
        }
    }

    #[test]
    fn a_run_agrees_with_itself() {
        let s = scenario(vec![Event::AwarenessFlip]);
        assert_eq!(compare_runs(&s, &s), None);
    }

    #[test]
    fn observe_at_the_divergent_step_shows_the_difference() {
        let a = scenario(vec![]);
        let b = scenario(vec![Event::AwarenessFlip]);
        assert_eq!(observe_at(&b, 0), observe_at(&a, 0));
        let d = compare_runs(&a, &b).unwrap();
        let objects = diff(&observe_at(&a, d.step), &observe_at(&b, d.step));
        let in_divergence: Vec<_> = d
            .differences
            .iter()
            .filter(|x| x.kind != ObjectKind::Effect)
            .cloned()
            .collect();
        assert!(!objects.is_empty());
        assert_eq!(objects, in_divergence);
    }

    #[test]
    fn a_mixing_flip_replays_its_drain_and_every_property_holds() {
        // A CPU Workload on the walkthrough's CPU pool, then `instance-type-mixed-on-node`
        // off: the pool's flavors are recreated or retired, its queue migrates and evicts the
        // Workload (chain.md §10.3(b)); on again, nothing is left to drain.
        let cluster = examples::walkthrough();
        let pool = model::derive::derive(&cluster)
            .instance_types
            .iter()
            .find(|it| !it.spec.acceleratable)
            .map(|it| it.name.clone())
            .expect("a CPU pool");
        let s = scenario(vec![
            Event::Submit {
                workload: examples::workload("busy", &pool, 1, &[("cpu", "1")]),
            },
            Event::MixingFlip,
            Event::MixingFlip,
        ]);
        let r = replay(&s);
        assert_eq!(
            r.effects[1],
            Effect::Evicted {
                workloads: vec!["default/busy".into()]
            },
            "{}",
            r.render()
        );
        assert_eq!(r.effects[2], Effect::Reshaped);
        assert!(r.held(), "{}", r.render());
        assert!(r.render().contains("event 1: evicted default/busy"));
        assert_eq!(compare_runs(&s, &s), None);
    }

    #[test]
    fn an_extra_event_is_a_divergence_at_its_step() {
        let a = scenario(vec![]);
        let b = scenario(vec![Event::AwarenessFlip]);
        let d = compare_runs(&a, &b).expect("the flip adds types");
        assert_eq!(d.step, 1);
        assert!(d
            .differences
            .iter()
            .any(|x| x.kind == ObjectKind::Effect && x.expected.is_none()));
    }

    #[test]
    fn a_different_effect_is_a_divergence_even_when_objects_agree() {
        let a = scenario(vec![Event::NodeLeave {
            name: "ghost".into(),
        }]);
        let b = scenario(vec![Event::NodeLeave {
            name: "phantom".into(),
        }]);
        let d = compare_runs(&a, &b).expect("the ignore reasons differ");
        assert_eq!(d.step, 1);
        assert_eq!(d.differences.len(), 1);
        assert_eq!(d.differences[0].kind, ObjectKind::Effect);
    }
}

/// What replaying one scenario showed: each event's effect, the expectations it did not meet,
/// and the properties it violates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayCheck {
    pub name: String,
    pub effects: Vec<Effect>,
    /// Outcome expectations the replay did not meet, as sentences.
    pub unmet: Vec<String>,
    pub violations: Vec<crate::properties::Violation>,
    /// A counterexample's recorded violations: (property, reproduced now).
    pub recorded: Vec<(String, bool)>,
    /// One verdict per outcome, field, count and fit-label expectation, in file order.
    pub checks: Vec<ExpectationCheck>,
}

/// The verdict on one expectation: a locked case prints it as a `STATUS | CHECK | OBJECT` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectationCheck {
    /// Index into the scenario's `expect` list.
    pub index: usize,
    pub held: bool,
    /// What was checked (the expectation's `check` text, or one made from it).
    pub check: String,
    /// The object read and what it showed.
    pub object: String,
}

impl ReplayCheck {
    /// Every expectation met, every property held, and no recorded violation of a
    /// counterexample still reproducing (one that does is a violation, whatever the replay's
    /// own properties say: a mutant's, or a tier's the replay does not run).
    pub fn held(&self) -> bool {
        self.unmet.is_empty()
            && self.violations.is_empty()
            && !self.recorded.iter().any(|(_, reproduced)| *reproduced)
    }

    /// One line per event, then the verdicts.
    pub fn render(&self) -> String {
        let mut out = format!("scenario {}\n", self.name);
        for (i, e) in self.effects.iter().enumerate() {
            out.push_str(&format!("  event {i}: {}\n", effect_summary(e)));
        }
        for u in &self.unmet {
            out.push_str(&format!("UNMET {u}\n"));
        }
        for v in &self.violations {
            out.push_str(&format!("FAIL {}: {}\n", v.property, v.message));
        }
        for (property, reproduced) in &self.recorded {
            let state = if *reproduced {
                "reproduced"
            } else {
                "no longer reproduces"
            };
            out.push_str(&format!("recorded violation of {property}: {state}\n"));
        }
        out.push_str(if self.held() {
            "all properties and expectations held\n"
        } else {
            "counterexample: see above\n"
        });
        out
    }
}

/// The outcome kind an `Expectation::Outcome` names, for an event's effect.
pub(crate) fn outcome_kind(e: &Effect) -> &'static str {
    use model::lifecycle::Outcome;
    match e {
        Effect::Judged { outcome } => match outcome {
            Outcome::Admitted => "admitted",
            Outcome::Held { .. } => "held",
            Outcome::Pending { .. } => "pending",
            Outcome::Retry { .. } => "retry",
            Outcome::Rejected { .. } => "rejected",
            Outcome::Unplaceable { .. } => "unplaceable",
        },
        Effect::Reshaped => "reshaped",
        Effect::Released => "released",
        Effect::Evicted { .. } => "evicted",
        Effect::Ignored { .. } => "ignored",
        Effect::Parked { .. } => "parked",
    }
}

/// One event's effect in a few words (`admitted`, `pending (reason)`, `evicted a, b`).
pub fn effect_summary(e: &Effect) -> String {
    use model::lifecycle::Outcome;
    match e {
        Effect::Judged {
            outcome: Outcome::Pending { reason },
        } => format!("pending ({reason})"),
        Effect::Judged {
            outcome: Outcome::Retry { message },
        } => format!("retry ({message})"),
        Effect::Judged {
            outcome: Outcome::Rejected { message },
        } => format!("rejected ({message})"),
        Effect::Judged {
            outcome: Outcome::Unplaceable { reason },
        } => format!("UNPLACEABLE ({reason})"),
        Effect::Judged {
            outcome: Outcome::Held { message },
        } => format!("held ({message})"),
        Effect::Evicted { workloads } => format!("evicted {}", workloads.join(", ")),
        Effect::Parked { workloads } => format!("parked {}", workloads.join(", ")),
        Effect::Ignored { why } => format!("ignored ({why})"),
        other => outcome_kind(other).to_string(),
    }
}

/// Replays `s`: applies its events, checks its outcome expectations and every property, and
/// reports whether the violations a counterexample recorded still reproduce.
pub fn replay(s: &Scenario) -> ReplayCheck {
    use model::scenario::Expectation;
    let mut world = s.start();
    let wanted = observed_steps(s);
    let mut steps: Vec<Option<Observation>> = vec![None; s.events.len() + 1];
    let observe_at = |k: usize, w: &World, steps: &mut Vec<Option<Observation>>| {
        if wanted.contains(&k) {
            steps[k] = Some(Observation::of(w));
        }
    };
    observe_at(0, &world, &mut steps);
    // The world's invariants at every quiescent point, first break of each kept.
    let mut broken: Vec<Violation> = Vec::new();
    let mut judge = |k: usize, w: &World| {
        for (property, why) in crate::quiescence::at_quiescence(w, &w.observe()) {
            if !broken.iter().any(|v| v.property == property) {
                let when = if k == 0 {
                    "initially".to_string()
                } else {
                    format!("after event {}", k - 1)
                };
                broken.push(Violation {
                    property,
                    check: "at_quiescence",
                    message: format!("{when}: {why}"),
                    differences: Vec::new(),
                });
            }
        }
    };
    judge(0, &world);
    let mut effects = Vec::with_capacity(s.events.len());
    for (k, e) in s.events.iter().enumerate() {
        effects.push(world.apply(e));
        observe_at(k + 1, &world, &mut steps);
        judge(k + 1, &world);
    }
    let mut violations = crate::properties::check_all(s);
    violations.extend(broken);
    let mut unmet = Vec::new();
    let mut recorded = Vec::new();
    let mut checks = Vec::new();
    for (index, e) in s.expect.iter().enumerate() {
        if let Some(c) = crate::expect::check(index, e, &effects, &steps) {
            if !c.held {
                unmet.push(format!("{}: {}", c.check, c.object));
            }
            checks.push(c);
            continue;
        }
        match e {
            Expectation::Outcome { .. }
            | Expectation::Field { .. }
            | Expectation::Count { .. }
            | Expectation::FitLabel { .. }
            | Expectation::Joint { .. } => {}
            Expectation::Violation { property, .. } => {
                let reproduced = violations.iter().any(|v| v.property == property)
                    || mutant_reproduces(s, property);
                recorded.push((property.clone(), reproduced));
            }
        }
    }
    ReplayCheck {
        name: s.name.clone(),
        effects,
        unmet,
        violations,
        recorded,
        checks,
    }
}

/// What the expectations read at one step: the published objects and the shape (for the
/// Devices ledgers behind the fit labels).
#[derive(Clone, Debug)]
pub(crate) struct Observation {
    pub derived: model::derive::Derived,
    pub cluster: model::cluster::Cluster,
    /// The replicas the joint check tracks, by `namespace/name`.
    pub joint: std::collections::BTreeMap<String, model::lifecycle::JointMember>,
}

impl Observation {
    fn of(w: &World) -> Self {
        Observation {
            derived: w.observe(),
            cluster: w.cluster().clone(),
            joint: w.admission.joint.clone(),
        }
    }
}

/// The steps some expectation reads (observing every step would re-derive needlessly).
fn observed_steps(s: &Scenario) -> std::collections::BTreeSet<usize> {
    use model::scenario::Expectation;
    s.expect
        .iter()
        .filter_map(|e| match e {
            Expectation::Field { step, .. }
            | Expectation::Count { step, .. }
            | Expectation::FitLabel { step, .. }
            | Expectation::Joint { step, .. } => Some(*step),
            _ => None,
        })
        .collect()
}

/// A recorded `mutant-<name>` violation reproduces when the model and the mutated model
/// still diverge on this scenario.
fn mutant_reproduces(s: &Scenario, property: &str) -> bool {
    let Some(m) = property
        .strip_prefix("mutant-")
        .and_then(|n| n.parse::<model::mutants::Mutant>().ok())
    else {
        return false;
    };
    let mut mutated = s.clone();
    mutated.cluster.settings.mutant = Some(m);
    compare_runs(s, &mutated).is_some()
}
