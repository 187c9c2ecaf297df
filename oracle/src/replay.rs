//! Two scenarios replayed side by side through `model::events::World`: the first step at
//! which their published objects or an event's effect differ. The mutant check is
//! `compare_runs(s, s')` where `s'` is `s` with `cluster.settings.mutant = Some(m)`.

use model::events::{Effect, World};
use model::scenario::Scenario;
use serde::Serialize;

use crate::diff::{diff, render, Difference, ObjectKind};

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
