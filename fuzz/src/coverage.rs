//! Shape statistics of a fuzz run: what each generated scenario showed, by class, for
//! `reports::Coverage` (the table, the plot and `--min-coverage` floors).
//!
//! Classes: `vendors` (card manufacturers), `modes` (ledger modes of cards), `families` (card
//! families by capability), `nodes` (initial node count), `events` (event kinds) and
//! `properties` (the properties that had something to check, below).

use model::scenario::Scenario;
use reports::counterexample::{event_kind, node_shape};

/// A class and the values a scenario showed in it.
pub type Shown = Vec<(&'static str, String)>;

/// The properties a scenario gives something to check. The oracle runs every property on
/// every scenario; these are the inputs each one needs to be more than vacuous (oracle
/// `properties.rs`): invariance reorders and renames nodes and namespaces (two or more
/// nodes), pool isolation and accounting need a card, admission a submission, structure and
/// idempotence hold for any cluster with a node.
fn exercised(s: &Scenario, cards: usize) -> Vec<&'static str> {
    use oracle::properties::{
        ACCOUNTING, ADMISSION, IDEMPOTENCE, INVARIANCE, POOL_ISOLATION, STRUCTURE,
    };
    let nodes = s.cluster.nodes.len();
    let submits = s
        .events
        .iter()
        .any(|e| matches!(e, model::events::Event::Submit { .. }));
    [
        (INVARIANCE, nodes >= 2),
        (POOL_ISOLATION, cards > 0),
        (STRUCTURE, nodes > 0),
        (ACCOUNTING, cards > 0),
        (ADMISSION, submits),
        (IDEMPOTENCE, nodes > 0),
    ]
    .into_iter()
    .filter_map(|(p, yes)| yes.then_some(p))
    .collect()
}

/// Every (class, value) a generated scenario shows; `mutant` names the property a mutant
/// run checks (`mutant-<name>`), which every scenario exercises.
pub fn shown(s: &Scenario, mutant: Option<model::mutants::Mutant>) -> Shown {
    let mut out: Shown = Vec::new();
    let mut cards = 0;
    for node in &s.cluster.nodes {
        let shape = node_shape(node);
        cards += shape.cards;
        out.extend(shape.vendors.into_iter().map(|v| ("vendors", v)));
        out.extend(shape.modes.into_iter().map(|v| ("modes", v)));
        out.extend(shape.families.into_iter().map(|v| ("families", v)));
    }
    out.push(("nodes", s.cluster.nodes.len().to_string()));
    out.extend(
        s.events
            .iter()
            .map(|e| ("events", event_kind(e).to_string())),
    );
    match mutant {
        Some(m) => out.push(("properties", format!("mutant-{m}"))),
        None => out.extend(
            exercised(s, cards)
                .into_iter()
                .map(|p| ("properties", p.to_string())),
        ),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walkthrough_shows_its_vendors_node_count_and_properties() {
        let s = Scenario {
            cluster: model::examples::walkthrough(),
            events: vec![model::events::Event::AwarenessFlip],
            ..Scenario::default()
        };
        let values = shown(&s, None);
        let has = |class: &str, value: &str| values.iter().any(|(c, v)| *c == class && v == value);
        assert!(has("vendors", "nvidia"), "{values:?}");
        assert!(has("nodes", &s.cluster.nodes.len().to_string()));
        assert!(has("events", "awareness-flip"));
        assert!(has("properties", "invariance"));
        assert!(!has("properties", "admission"), "no submission");
        assert!(has("modes", "None") || has("modes", "unreported"));
        let mutant = shown(&s, Some(model::mutants::Mutant::CohortSet));
        let props: Vec<&String> = mutant
            .iter()
            .filter(|(c, _)| *c == "properties")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(props, ["mutant-cohort-set"]);

        let mut c = reports::Coverage::default();
        c.observe(values);
        assert_eq!(c.count("vendors", "nvidia"), 1);
    }
}
