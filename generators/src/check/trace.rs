//! Counterexamples: the action path as numbered steps (the first step where the property
//! fails marked), and as a replayable scenario. Mapping of actions to model `Event`s: shape
//! actions map one to one; a gate-3 evaluation (`Judge`) maps to `Submit` (the event model
//! judges and charges at once); a ledger charge (`Charge`) has no event of its own and is
//! recorded in the description only; `Finish` maps to `Finish`.

use std::fmt::Write as _;

use model::scenario::{Expectation, Scenario};

use super::chain::{Action, ChainModel};
use super::properties::Prop;
use super::state::State;
use super::{CheckReport, Counterexample, Verdict};

/// One line per action.
pub fn steps(m: &ChainModel, actions: &[Action]) -> Vec<String> {
    actions.iter().map(|a| m.describe(a)).collect()
}

/// The counterexample a stateright path stands for.
pub fn counterexample(
    m: &ChainModel,
    p: &Prop,
    path: Vec<(State, Option<Action>)>,
) -> Counterexample {
    let actions: Vec<Action> = path.iter().filter_map(|(_, a)| a.clone()).collect();
    let states: Vec<&State> = path.iter().map(|(s, _)| s).collect();
    // States[0] is the initial one; states[i + 1] follows action i.
    let first_bad = states.iter().position(|s| !(p.holds)(m, s));
    let first_failing = first_bad.and_then(|i| i.checked_sub(1));
    let message = states
        .last()
        .map(|s| {
            super::properties::explain(m, s)
                .into_iter()
                .filter(|(n, _)| *n == p.name)
                .map(|(_, e)| e)
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default();
    let steps = steps(m, &actions);
    Counterexample {
        scenario: scenario(m, p.name, &actions, &steps, &message),
        steps,
        first_failing,
        message,
    }
}

/// The scope's initial cluster and the events the actions map to.
pub fn scenario(
    m: &ChainModel,
    property: &str,
    actions: &[Action],
    steps: &[String],
    message: &str,
) -> Scenario {
    let mut description = format!(
        "verify check counterexample for `{property}`. Actions (gate-3 evaluation → submit event; a ledger charge has no event, the submit event already charges):\n"
    );
    for (i, (a, s)) in actions.iter().zip(steps).enumerate() {
        let mapped = if matches!(a, Action::Charge(_)) {
            " [no event]"
        } else {
            ""
        };
        let _ = writeln!(description, "{}. {s}{mapped}", i + 1);
    }
    Scenario {
        name: format!(
            "check-{}",
            property.replace(|c: char| !c.is_alphanumeric(), "-")
        ),
        description,
        seed: None,
        cluster: m.initial_cluster(),
        events: actions.iter().filter_map(|a| m.event_of(a)).collect(),
        expect: vec![Expectation::Violation {
            property: recorded_property(property, message),
            message: message.to_string(),
        }],
        ..Scenario::default()
    }
}

/// The property name a scenario records: an [M3] property's message starts with the oracle's
/// own name (`structure: …`, `pool-isolation: …`), which `verify replay` matches against the
/// violations it finds; the checker's own properties keep their names.
fn recorded_property(property: &str, message: &str) -> String {
    message
        .split_once(':')
        .map(|(head, _)| head.trim())
        .filter(|head| oracle::properties::PROPERTIES.contains(head))
        .unwrap_or(property)
        .to_string()
}

/// The report as printed by `verify check`.
pub fn render(r: &CheckReport) -> String {
    let mut out = String::new();
    let c = &r.config;
    let _ = writeln!(
        out,
        "scope: {} nodes × {} cards, {} workloads; {:?}{}{}, {} thread(s)",
        c.nodes,
        c.cards,
        c.workloads,
        c.search,
        if c.symmetry { ", symmetry" } else { "" },
        c.mutant
            .map(|m| format!(", mutant {m}"))
            .unwrap_or_default(),
        c.threads.max(1)
    );
    let _ = writeln!(
        out,
        "states: {} generated, {} unique; max depth {}; wall {:.2?} ({:.0} unique/s){}",
        r.states_generated,
        r.unique_states,
        r.max_depth,
        r.wall,
        r.unique_per_second(),
        if r.complete {
            ""
        } else {
            " — search incomplete"
        }
    );
    for p in &r.properties {
        let verdict = match &p.verdict {
            Verdict::Held if r.complete => "held".to_string(),
            Verdict::Held => "held (within the explored states)".to_string(),
            Verdict::NotReached => "not reached".to_string(),
            Verdict::Reached(steps) => format!("reached in {} steps", steps.len()),
            Verdict::Violated(cx) => format!("VIOLATED in {} steps", cx.steps.len()),
        };
        let kind = if p.always { "always" } else { "sometimes" };
        let _ = writeln!(out, "  [{kind}] {}: {verdict}", p.name);
    }
    for p in &r.properties {
        let Verdict::Violated(cx) = &p.verdict else {
            continue;
        };
        let _ = writeln!(out, "\ncounterexample for `{}`: {}", p.name, cx.message);
        if cx.first_failing.is_none() {
            let _ = writeln!(out, "  (fails in the initial state)");
        }
        for (i, s) in cx.steps.iter().enumerate() {
            let mark = if cx.first_failing == Some(i) {
                "   ← first fails here"
            } else {
                ""
            };
            let _ = writeln!(out, "  {:>2}. {s}{mark}", i + 1);
        }
    }
    out
}
