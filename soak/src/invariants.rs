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

impl From<tier::Divergence> for Finding {
    fn from(d: tier::Divergence) -> Finding {
        Finding {
            property: d.property,
            message: d.message,
        }
    }
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
