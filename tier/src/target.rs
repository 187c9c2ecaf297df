//! The one stepping trait of a tier: a [`Target`] a scenario is started on, stepped on one
//! event at a time and observed against the model after each step. The model
//! ([`ModelTarget`]) and the API server ([`crate::ApiTarget`]: the embedded twin or a cluster)
//! implement it; [`step_scenario`] is the one loop that walks a scenario through it, for
//! `fuzz` (a seed's scenario), `soak` (a stretch being shrunk) and `cases`.

use model::derive::Derived;
use model::events::{Event, World};
use model::mutants::Mutant;
use model::scenario::Scenario;

use crate::api::ApiError;

/// A difference between what a target publishes and what the model expects of it, after one
/// step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The property it is reported under ([`crate::TWIN_PROPERTY`] for an API target,
    /// `mutant-<name>` for the mutated model).
    pub property: String,
    /// Which step: the nodes before their Devices, the Devices reported, or an event.
    pub step: String,
    /// Every differing field, structured (Kubernetes field paths on an API target).
    pub differences: Vec<oracle::Difference>,
    /// What a report prints: the differences as a table (and, on an API target, folded
    /// along the derivation graph).
    pub message: String,
}

/// Where a scenario is stepped and diffed against the model.
pub trait Target {
    /// One line naming what is driven (printed first).
    fn describe(&self) -> String;
    /// Puts a scenario's starting point (its cluster, and the objects it resumes from) in
    /// place and waits for quiescence. Its events are not applied.
    fn start(&mut self, from: &Scenario) -> Result<(), ApiError>;
    /// Applies one event and waits for quiescence.
    fn apply(&mut self, event: &Event) -> Result<(), ApiError>;
    /// How what the target publishes now differs from what the model expects of it (each
    /// target keeps its own model of what it was sent), or `None`.
    fn divergence(&mut self) -> Result<Option<Divergence>, ApiError>;
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
    fn teardown(&mut self) -> Result<usize, ApiError>;
}

/// Steps `from`'s start and then `events` on `target`, observing after each step: first the
/// driver's own `check` (it sees each event before the target does; `None` for the start),
/// then the target's [`Target::divergence`]. The first finding and its step (0 = the start,
/// k = after event k). The target is not torn down: the caller decides how.
///
/// ```
/// use model::events::Event;
/// use model::mutants::Mutant;
/// use model::scenario::Scenario;
/// use tier::{step_scenario, Divergence, ModelTarget, Target};
///
/// let s = Scenario {
///     cluster: model::examples::walkthrough(),
///     events: vec![Event::NodeLeave { name: "node-t4-a".into() }],
///     ..Scenario::default()
/// };
/// let mut clean = ModelTarget::new(None);
/// let found = step_scenario::<Divergence>(&mut clean, &s, &s.events, |_| None).unwrap();
/// assert_eq!(found, None);
/// assert_eq!(clean.teardown().unwrap(), 0);
///
/// // the mutated model diverges from the model at the start already
/// let mut mutated = ModelTarget::new(Some(Mutant::QuotaOffByOne));
/// let (step, d) = step_scenario::<Divergence>(&mut mutated, &s, &s.events, |_| None)
///     .unwrap()
///     .expect("a divergence");
/// assert_eq!((step, d.property.as_str()), (0, "mutant-quota-off-by-one"));
/// ```
pub fn step_scenario<F: From<Divergence>>(
    target: &mut dyn Target,
    from: &Scenario,
    events: &[Event],
    mut check: impl FnMut(Option<&Event>) -> Option<F>,
) -> Result<Option<(usize, F)>, ApiError> {
    target.start(from)?;
    if let Some(found) = observe(target, &mut check, None)? {
        return Ok(Some((0, found)));
    }
    for (k, event) in events.iter().enumerate() {
        target.apply(event)?;
        if let Some(found) = observe(target, &mut check, Some(event))? {
            return Ok(Some((k + 1, found)));
        }
    }
    Ok(None)
}

/// One step's observation: the driver's check, then the target's divergence.
fn observe<F: From<Divergence>>(
    target: &mut dyn Target,
    check: &mut impl FnMut(Option<&Event>) -> Option<F>,
    event: Option<&Event>,
) -> Result<Option<F>, ApiError> {
    if let Some(found) = check(event) {
        return Ok(Some(found));
    }
    Ok(divergence_of(target)?.map(F::from))
}

/// The target's divergence now; none for the reference itself (nothing to diff).
pub fn divergence_of(target: &mut dyn Target) -> Result<Option<Divergence>, ApiError> {
    if target.mirrors_reference() {
        return Ok(None);
    }
    target.divergence()
}

/// The model as a target: a second world, mutated when `mutant` is set, so a run of the model
/// tier with a mutant exercises the divergence path end to end.
pub struct ModelTarget {
    mutant: Option<Mutant>,
    /// (the reference's twin, the mutated world) once started.
    worlds: Option<(World, World)>,
}

impl ModelTarget {
    /// The model, its rules mutated by `mutant` (none: the reference itself).
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

    fn start(&mut self, from: &Scenario) -> Result<(), ApiError> {
        if self.mirrors_reference() {
            return Ok(());
        }
        let mut mutated = from.clone();
        mutated.cluster.settings.mutant = self.mutant;
        self.worlds = Some((from.start(), mutated.start()));
        Ok(())
    }

    fn apply(&mut self, event: &Event) -> Result<(), ApiError> {
        if let Some((clean, mutated)) = self.worlds.as_mut() {
            clean.apply(event);
            mutated.apply(event);
        }
        Ok(())
    }

    fn divergence(&mut self) -> Result<Option<Divergence>, ApiError> {
        let (Some(m), Some((clean, mutated))) = (self.mutant, self.worlds.as_ref()) else {
            return Ok(None);
        };
        // Recorded as `mutant-<name>`, which `verify replay` knows how to reproduce.
        Ok(model_divergence(
            format!("mutant-{m}"),
            &clean.observe(),
            &mutated.observe(),
        ))
    }

    fn objects_alive(&self) -> usize {
        self.worlds
            .as_ref()
            .map_or(0, |(_, mutated)| objects_of(mutated))
    }

    fn teardown(&mut self) -> Result<usize, ApiError> {
        self.worlds = None;
        Ok(0)
    }
}

/// Objects a world publishes, plus its nodes and held Workloads (a soak series' "objects
/// alive").
pub fn objects_of(world: &World) -> usize {
    world.cluster().nodes.len()
        + world.admission.derived.object_count()
        + world.admission.holds.len()
}

/// What one model publishes against another's: one divergence naming the differences, or
/// none.
fn model_divergence(
    property: String,
    expected: &Derived,
    observed: &Derived,
) -> Option<Divergence> {
    let differences = oracle::diff(expected, observed);
    if differences.is_empty() {
        return None;
    }
    Some(Divergence {
        property,
        step: String::new(),
        message: oracle::render_table(&differences),
        differences,
    })
}
