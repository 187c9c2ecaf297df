//! What a soak drives: the model itself (the reference's twin in memory, optionally with a
//! mutated rule) or, through the live client, the embedded twin or a real cluster. The soak
//! loop only sees this trait, so every tier shares one loop, one series and one report.

use std::time::{Duration, Instant};

use model::events::{Event, World};
use model::mutants::Mutant;
use model::scenario::Scenario;

use crate::invariants::Finding;

/// Why a target could not answer: the soak stops as inconclusive (exit 3), never as a failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TargetError(pub String);

pub trait Target {
    /// One line naming what is driven (printed first).
    fn describe(&self) -> String;
    /// Puts a scenario's starting point (its cluster, and the objects it resumes from) in
    /// place and waits for quiescence.
    fn start(&mut self, from: &Scenario) -> Result<Duration, TargetError>;
    /// Applies one event and waits for quiescence; returns how long quiescence took.
    fn apply(&mut self, event: &Event) -> Result<Duration, TargetError>;
    /// How what the target publishes now differs from what the model expects of it (each
    /// target keeps its own model of what it was sent), or `None`.
    fn divergence(&mut self) -> Result<Option<Finding>, TargetError>;
    /// API calls made so far (0 where there is no API).
    fn api_calls(&self) -> u64 {
        0
    }
    /// Objects the target holds for this run now.
    fn objects_alive(&self) -> usize;
    /// True when the target is the reference model itself: nothing to apply or diff.
    fn mirrors_reference(&self) -> bool {
        false
    }
    /// Removes what the run created; returns how many of its objects remain (0 when clean).
    fn teardown(&mut self) -> Result<usize, TargetError>;
}

/// The model as a target: a second world, mutated when `mutant` is set, so a soak of the
/// model tier with `--mutant` exercises the divergence path end to end.
pub struct ModelTarget {
    mutant: Option<Mutant>,
    /// (the reference's twin, the mutated world) once started.
    worlds: Option<(World, World)>,
}

impl ModelTarget {
    pub fn new(mutant: Option<Mutant>) -> Self {
        ModelTarget {
            mutant,
            worlds: None,
        }
    }
}

impl Target for ModelTarget {
    fn describe(&self) -> String {
        match self.mutant {
            None => "tier: model (the reference model against itself; no cluster is contacted)"
                .to_string(),
            Some(m) => format!(
                "tier: model with mutant {m} against the reference model (no cluster is contacted)"
            ),
        }
    }

    fn mirrors_reference(&self) -> bool {
        self.mutant.is_none()
    }

    fn start(&mut self, from: &Scenario) -> Result<Duration, TargetError> {
        let started = Instant::now();
        if self.mirrors_reference() {
            return Ok(started.elapsed());
        }
        let mut mutated = from.clone();
        mutated.cluster.settings.mutant = self.mutant;
        self.worlds = Some((from.start(), mutated.start()));
        Ok(started.elapsed())
    }

    fn apply(&mut self, event: &Event) -> Result<Duration, TargetError> {
        let started = Instant::now();
        if let Some((clean, mutated)) = self.worlds.as_mut() {
            clean.apply(event);
            mutated.apply(event);
        }
        Ok(started.elapsed())
    }

    fn divergence(&mut self) -> Result<Option<Finding>, TargetError> {
        let (Some(m), Some((clean, mutated))) = (self.mutant, self.worlds.as_ref()) else {
            return Ok(None);
        };
        // Recorded as `mutant-<name>`, which `verify replay` knows how to reproduce.
        Ok(crate::invariants::divergence(
            format!("mutant-{m}"),
            &clean.observe(),
            &mutated.observe(),
        ))
    }

    fn objects_alive(&self) -> usize {
        self.worlds
            .as_ref()
            .map_or(0, |(_, mutated)| crate::invariants::objects_of(mutated))
    }

    fn teardown(&mut self) -> Result<usize, TargetError> {
        self.worlds = None;
        Ok(0)
    }
}
