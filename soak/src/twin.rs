//! The twin tier of a soak: the churn is written through the kube-rs client into an embedded
//! twin (optionally injecting faults the client must ride out), and after every event the
//! objects its reference operator published are diffed against the model of what was written
//! (the fuzz twin tier's step-by-step run, `fuzz::twin::TwinRunner::begin`/`step`/`end`).

use std::time::{Duration, Instant};

use fuzz::twin::{TwinConfig, TwinDivergence, TwinRunner, TWIN_PROPERTY};
use model::events::Event;
use model::mutants::Mutant;
use model::scenario::Scenario;

use crate::invariants::Finding;
use crate::target::{Target, TargetError};

/// A soak target served by an embedded twin on 127.0.0.1.
pub struct TwinTarget {
    runner: TwinRunner,
    mutant: Option<Mutant>,
    faults: Option<u64>,
    /// The divergence the last write converged to, until [`Target::divergence`] takes it.
    pending: Option<TwinDivergence>,
    /// Writing to a cluster that runs the operator (the live tier), not an embedded twin.
    live: bool,
}

impl TwinTarget {
    /// Serves a twin (faults as `config` says) whose operator runs `mutant`, if any.
    pub fn start(config: TwinConfig, mutant: Option<Mutant>) -> Result<Self, TargetError> {
        let faults = config.faults.as_ref().map(|f| f.seed);
        let runner = TwinRunner::start(config).map_err(|e| TargetError(e.to_string()))?;
        Ok(TwinTarget {
            runner,
            mutant,
            faults,
            pending: None,
            live: false,
        })
    }

    /// The live tier: the churn, localized with one token per run, written to the cluster
    /// `runner` is connected to (`TwinRunner::connect`).
    pub fn on_cluster(runner: TwinRunner) -> Self {
        TwinTarget {
            runner,
            mutant: None,
            faults: None,
            pending: None,
            live: true,
        }
    }

    fn timed(
        &mut self,
        write: impl FnOnce(&mut TwinRunner) -> Result<Option<TwinDivergence>, fuzz::twin::TwinError>,
    ) -> Result<Duration, TargetError> {
        let started = Instant::now();
        let found = write(&mut self.runner).map_err(|e| TargetError(e.to_string()))?;
        if self.pending.is_none() {
            self.pending = found;
        }
        Ok(started.elapsed())
    }
}

impl Target for TwinTarget {
    fn describe(&self) -> String {
        let faults = self
            .faults
            .map_or(String::new(), |seed| format!(", faults from seed {seed}"));
        let mutant = self
            .mutant
            .map_or(String::new(), |m| format!(", operator mutated by {m}"));
        if self.live {
            return format!(
                "tier: live ({}; run-unique pools, only they are compared)",
                self.runner.describe()
            );
        }
        format!(
            "tier: twin ({}{faults}{mutant}; no cluster contacted)",
            self.runner.describe()
        )
    }

    /// A checkpoint's published objects cannot be written into a fresh twin (its operator
    /// starts without memory), so the twin starts from the cluster alone.
    fn start(&mut self, from: &Scenario) -> Result<Duration, TargetError> {
        let mutant = self.mutant;
        self.pending = None;
        self.timed(|r| r.begin(from, mutant))
    }

    fn apply(&mut self, event: &Event) -> Result<Duration, TargetError> {
        self.timed(|r| r.step(event))
    }

    fn divergence(&mut self) -> Result<Option<Finding>, TargetError> {
        Ok(self.pending.take().map(|d| Finding {
            property: TWIN_PROPERTY.to_string(),
            message: d.message(),
        }))
    }

    fn api_calls(&self) -> u64 {
        self.runner.api_calls()
    }

    fn objects_alive(&self) -> usize {
        self.runner.session_objects()
    }

    fn teardown(&mut self) -> Result<usize, TargetError> {
        self.runner.end().map_err(|e| TargetError(e.to_string()))
    }
}
