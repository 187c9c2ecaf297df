//! The one on-disk unit of work: a cluster shape, an event sequence and optional expectations.
//! A locked case, a shrunk counterexample and a soak checkpoint are all scenarios
//! (DESIGN.md "Rules of the house"); the file format lives in the `scenario` crate.

use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::derive::Derived;
use crate::events::{Event, World};

/// What a scenario expects; an empty list means "every property holds".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "expect", rename_all = "kebab-case")]
pub enum Expectation {
    /// The outcome kind of event `event` (0-based): `admitted`, `pending`, `retry`,
    /// `rejected`, `unplaceable`.
    Outcome { event: usize, outcome: String },
    /// A property is violated (how a counterexample records what it shows).
    Violation { property: String, message: String },
}

/// A replayable scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scenario {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The fuzz seed it came from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub cluster: Cluster,
    pub events: Vec<Event>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Expectation>,
    /// The objects published at the quiescence the scenario resumes from (a soak checkpoint);
    /// absent, the chain starts from a fresh derivation of `cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<Derived>,
}

impl Scenario {
    /// The world the scenario's events apply to.
    pub fn start(&self) -> World {
        match &self.published {
            Some(published) => World::resume(self.cluster.clone(), published.clone()),
            None => World::new(self.cluster.clone()),
        }
    }
}
