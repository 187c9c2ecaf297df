//! What must hold at every quiescent point of a soak: the model's own invariants on the
//! reference world ([M4]'s always-properties that need no action history) and, for a target
//! other than the reference, no divergence between what it publishes and what the model
//! expects.

use model::derive::Derived;
use model::events::World;

/// One broken invariant or divergence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The property's name (a counterexample's file and report use it).
    pub property: String,
    pub message: String,
}

/// Objects a world publishes, plus its nodes and held Workloads (the series' "objects alive").
pub fn objects_of(world: &World) -> usize {
    world.cluster().nodes.len()
        + world.admission.derived.object_count()
        + world.admission.holds.len()
}

/// The world-level invariants of `world` at quiescence (oracle::quiescence), `observed`
/// being what it publishes.
pub fn at_quiescence(world: &World, observed: &Derived) -> Vec<Finding> {
    oracle::quiescence::at_quiescence(world, observed)
        .into_iter()
        .map(|(property, message)| Finding {
            property: property.to_string(),
            message,
        })
        .collect()
}

/// The target's published objects against the model's: one finding naming the first
/// differences, or none.
pub fn divergence(property: String, expected: &Derived, observed: &Derived) -> Option<Finding> {
    let differences = oracle::diff(expected, observed);
    if differences.is_empty() {
        return None;
    }
    Some(Finding {
        property,
        message: oracle::render_table(&differences),
    })
}
