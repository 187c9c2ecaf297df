//! The soak's churn: an endless, deterministic stream of events over the world as it stands.
//! The same seed gives the same stream against the same world, so a soak is replayable.

use model::events::{Event, World};
use proptest::prelude::Rng;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

use generators::{arb_event, ShapeConfig};

/// One in `FINISH_ODDS` events finishes an admitted Workload when one is held, so holds
/// come and go instead of only piling up.
const FINISH_ODDS: u64 = 4;

/// Draws before a settings flip (awareness or mixing) is accepted (see [`EventStream::next`]).
const FLIP_REDRAWS: usize = 4;

/// Draws the next event for a world.
pub struct EventStream {
    runner: TestRunner,
    shape: ShapeConfig,
    drawn: u64,
    /// Whether the settings may flip (awareness, mixing; a twin's operator has its flags fixed
    /// at start).
    flips: bool,
}

impl EventStream {
    pub fn new(seed: u64, shape: ShapeConfig) -> Self {
        EventStream {
            runner: TestRunner::new_with_rng(
                Config::default(),
                fuzz::seeded_rng(seed, b"verify:soak"),
            ),
            shape,
            drawn: 0,
            flips: true,
        }
    }

    /// The same stream with no settings flips (awareness, mixing): where one would be drawn, a
    /// fresh namespace is created instead (still churn, and one the twin's operator can
    /// follow).
    pub fn without_awareness_flips(mut self) -> Self {
        self.flips = false;
        self
    }

    /// The next event that can apply to `world`: a finish of a held Workload, a node leaving
    /// when the cluster has grown past twice the shape's node bound, else any generated event
    /// (nodes joining and leaving, cards changing family, submissions, namespaces, awareness and
    /// mixing flips).
    pub fn next(&mut self, world: &World) -> Result<Event, DrawError> {
        self.drawn += 1;
        let roll = self.runner.rng().next_u64();
        let holds: Vec<&String> = world.admission.holds.keys().collect();
        if roll % FINISH_ODDS == 0 && !holds.is_empty() {
            let key = holds[(roll / FINISH_ODDS) as usize % holds.len()];
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            return Ok(Event::Finish {
                namespace: namespace.to_string(),
                name: name.to_string(),
            });
        }
        let nodes = &world.cluster().nodes;
        if nodes.len() > 2 * self.shape.max_nodes.max(1) {
            let victim = &nodes[(roll / FINISH_ODDS) as usize % nodes.len()];
            return Ok(Event::NodeLeave {
                name: victim.name.clone(),
            });
        }
        // The generator falls back to an awareness flip whenever its draw does not apply;
        // redraw a few times so settings flips (awareness or mixing) stay a small share of the
        // churn.
        let strategy = arb_event(world.cluster());
        let mut event = Event::AwarenessFlip;
        for _ in 0..FLIP_REDRAWS {
            event = strategy
                .new_tree(&mut self.runner)
                .map_err(|reason| DrawError {
                    drawn: self.drawn,
                    reason: reason.to_string(),
                })?
                .current();
            // Keep at least one node: a soak of an empty cluster only judges Pending.
            let lone_leave =
                matches!(event, Event::NodeLeave { .. }) && world.cluster().nodes.len() <= 1;
            if !event.flips_setting() && !lone_leave {
                break;
            }
        }
        if event.flips_setting() && !self.flips {
            event = Event::NamespaceCreate {
                name: format!("soak-ns-{}", self.drawn),
            };
        }
        // Names unique over the whole stream: a finish names one Workload, and a join adds a
        // node instead of replacing the generator's one `node-j0`.
        match &mut event {
            Event::Submit { workload } => workload.name = format!("soak-{}", self.drawn),
            Event::NodeJoin { node } => {
                *node = generators::name_node(node.clone(), &format!("soak-n{}", self.drawn));
            }
            _ => {}
        }
        Ok(event)
    }
}

/// proptest could not draw the stream's next event (its `Reason` is no `std::error::Error`,
/// so its text is kept).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot draw soak event {drawn}: {reason}")]
pub struct DrawError {
    pub drawn: u64,
    pub reason: String,
}
