//! One run on an API target: the scenario's start written, then its events one write step at
//! a time, each converged (quiesced, observed and diffed against the model), a gate-3 verdict
//! read back for each judged Workload; and the run's end.

use std::panic::{resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use live::client::{self, Localizer, Quiescence, Quiescer, Readback, RunId, Token};
use live::operator::{run_operator, OperatorHandle};
use model::derive::Deriver;
use model::events::{Event, World};
use model::mutants::Mutant;
use model::scenario::Scenario;

use super::write::{event_steps, write_steps};
use super::{empty_store, ApiError, ApiTarget, Backend, JOINT_BOUND_PASSED, OBSERVED_KINDS};
use super::{READBACK_REQUESTS, TWIN_PROPERTY};
use crate::target::Divergence;

/// The run label of a run on the embedded twin (the name fuzz's runs always had, so what its
/// counterexamples show reads as before).
const EMBEDDED_RUN: &str = "verify-fuzz";

/// A run in progress: its id, the model world of what was written, its watcher, and its
/// operator (embedded) or localizer and token (cluster).
pub(super) struct Session {
    run: RunId,
    world: World,
    quiescer: Quiescer,
    operator: Option<OperatorHandle>,
    local: Option<(Localizer, Token)>,
    /// Events applied so far (the next one's label is `event {events}`).
    events: usize,
    /// Requests the run needed at least so far, and its write steps (each needs a list of
    /// every observed kind).
    writes: u64,
    steps: u64,
}

/// What a run writes first: the cluster without its nodes' Devices, then the labelled steps
/// that report them.
pub(super) type Start = (model::Cluster, Vec<(String, Vec<Event>)>);

impl Session {
    /// Objects the run has written or the operator derived for it.
    pub(super) fn objects(&self) -> usize {
        self.world.cluster().nodes.len() + self.world.observe().object_count()
    }

    /// Stops the embedded operator, if any.
    pub(super) fn stop_operator(self) {
        if let Some(operator) = self.operator {
            operator.stop();
        }
    }
}

impl ApiTarget {
    /// Opens a run on `start`: on the embedded twin an empty store and a fresh operator (run
    /// under the target's mutant); on a cluster a fresh token that localizes the run. Nothing
    /// is written yet.
    pub(super) fn open(&self, start: &Scenario) -> Result<(Session, Start), ApiError> {
        let (run, operator, local, cluster) = match &self.backend {
            Backend::Embedded(_) => {
                let run = RunId::new(EMBEDDED_RUN)?;
                let operator = self.fresh_operator(start, self.mutant)?;
                (run, Some(operator), None, start.cluster.clone())
            }
            Backend::Cluster(_) if self.mutant.is_some() => {
                return Err(ApiError::NotOnCluster(
                    "a mutant mutates the embedded twin's operator; a cluster runs its own",
                ))
            }
            Backend::Cluster(lane) => {
                let (token, run) = lane.next()?;
                let localizer = Localizer::onto(start, &token, lane.lane.overlay.as_ref());
                let cluster = localizer.cluster.clone();
                (run, None, Some((localizer, token)), cluster)
            }
        };
        let cluster = client::mocked_cluster_keeping(&cluster, &run, self.client.kept_nodes());
        let written = write_steps(&cluster, &[], &run);
        let quiescer = match &local {
            Some((_, token)) => Quiescer::scoped(&self.client, &run, token),
            None => Quiescer::new(&self.client, &run),
        };
        let session = Session {
            world: World::with_deriver(written.0.clone(), Deriver::incremental()),
            run,
            quiescer,
            operator,
            local,
            events: 0,
            writes: 0,
            steps: 0,
        };
        Ok((session, written))
    }

    /// Empties the embedded twin and starts its reference operator on `s`'s settings (run
    /// under `mutant`).
    pub(super) fn fresh_operator(
        &self,
        s: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<OperatorHandle, ApiError> {
        let Backend::Embedded(twin) = &self.backend else {
            return Err(ApiError::NotOnCluster(
                "a mutant or an operator restart needs the embedded twin",
            ));
        };
        let store = twin.store();
        store.write(|st| *st = empty_store());
        let mut settings = s.cluster.settings.clone();
        settings.mutant = mutant;
        run_operator(store, settings).map_err(ApiError::Serve)
    }

    /// Writes the run's start: its nodes before their Devices, converged, then the Devices.
    pub(super) async fn write_start(
        &self,
        session: &mut Session,
        (bare, steps): Start,
    ) -> Result<Option<Divergence>, ApiError> {
        session.writes = self.client.mock(&bare, &session.run).await? as u64;
        session.steps = 1;
        self.count_needed(session);
        if let Some(d) = self
            .converge(session, "the nodes, before their Devices")
            .await?
        {
            return Ok(Some(d));
        }
        for (label, events) in &steps {
            if let Some(d) = self.write_step(session, label, events).await? {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }

    /// Writes one event of the run (a joining node before and after its Devices), each write
    /// step converged. A settings flip is refused: the operator's flags are fixed at start.
    pub(super) async fn write_event(
        &self,
        session: &mut Session,
        event: &Event,
    ) -> Result<Option<Divergence>, ApiError> {
        if event.flips_setting() {
            return Err(ApiError::NotSteppable(
                "a settings flip cannot be written: the operator's flags are fixed at start",
            ));
        }
        let k = session.events;
        session.events += 1;
        let event = match session.local.as_mut() {
            Some((localizer, _)) => match localizer.event(event) {
                Some(e) => e,
                None => return Ok(None),
            },
            None => event.clone(),
        };
        for (label, events) in event_steps(k, &event, &session.run) {
            if let Some(d) = self.write_step(session, &label, &events).await? {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }

    /// One write step: `events` applied to the run's mirror world (a judged Workload's
    /// verdict read back first), the server synced to it, and converged.
    async fn write_step(
        &self,
        session: &mut Session,
        label: &str,
        events: &[Event],
    ) -> Result<Option<Divergence>, ApiError> {
        self.interrupted()?;
        let before = session.world.cluster().clone();
        for event in events {
            session.writes += self.pass_time(event).await?;
            let (requests, verdict) = self.read_back(session, event, label).await?;
            session.writes += requests;
            if verdict.is_some() {
                return Ok(verdict);
            }
            session.world.apply(event);
        }
        session.writes += self
            .client
            .sync(Some(&before), session.world.cluster(), &session.run)
            .await? as u64;
        session.steps += 1;
        self.count_needed(session);
        self.converge(session, label).await
    }

    /// Keeps the requests the run needed so far ([`ApiTarget::minimum_requests`]).
    fn count_needed(&self, session: &Session) {
        let needed = session.writes + OBSERVED_KINDS * session.steps;
        self.needed.store(needed, Ordering::Relaxed);
    }

    /// Ends a run: stops its operator, deletes what the run labelled (on a cluster also what
    /// the operator derived from it) and returns how many of its objects are left.
    pub(super) async fn close(&self, session: Session) -> Result<usize, ApiError> {
        let run = session.run.clone();
        let token = session.local.as_ref().map(|(_, token)| token.clone());
        session.stop_operator();
        let left = match &token {
            Some(token) => self.tear_down(&run, token).await?,
            None => self.client.teardown(&run).await?.leftovers,
        };
        Ok(left.len())
    }

    /// Deletes what a cluster run `run` labelled, then what the operator derived from it;
    /// returns what is left and keeps it for the run's report.
    async fn tear_down(&self, run: &RunId, token: &Token) -> Result<Vec<String>, ApiError> {
        let Backend::Cluster(lane) = &self.backend else {
            return Ok(Vec::new());
        };
        let left = self
            .client
            .teardown_localized(run, token, lane.lane.teardown_budget)
            .await
            .map(|t| t.leftovers)
            .map_err(ApiError::Cluster)?;
        if let Ok(mut all) = lane.leftovers.lock() {
            all.extend(left.iter().cloned());
        }
        Ok(left)
    }

    /// One attempt on a cluster as a future of its own, so several run side by side on one
    /// runtime ([`ApiTarget::judge_side_by_side`]): the same start and write steps as a run
    /// through the [`crate::Target`] trait, then the teardown whatever happened (a panic is
    /// re-raised after it).
    pub(super) async fn attempt_concurrently(
        &self,
        s: &Scenario,
    ) -> Result<Option<Divergence>, ApiError> {
        let (mut session, start) = self.open(s)?;
        let outcome = AssertUnwindSafe(async {
            if let Some(d) = self.write_start(&mut session, start).await? {
                return Ok(Some(d));
            }
            for event in self.steppable(&s.events) {
                if let Some(d) = self.write_event(&mut session, event).await? {
                    return Ok(Some(d));
                }
            }
            Ok(None)
        })
        .catch_unwind()
        .await;
        let left = self.close(session).await;
        match outcome {
            Err(panic) => resume_unwind(panic),
            Ok(outcome) => {
                left?;
                outcome
            }
        }
    }

    /// On the embedded twin: waits (within `budget`) until its operator has reconciled every
    /// write so far, so a slow operator thread on a loaded machine is waited for, not timed.
    /// A cluster's operator gives no such signal; there the quiet window alone decides.
    pub(super) async fn operator_caught_up(
        &self,
        operator: Option<&OperatorHandle>,
        budget: Duration,
    ) {
        let (Backend::Embedded(twin), Some(operator)) = (&self.backend, operator) else {
            return;
        };
        let progress = operator.reconciled();
        let deadline = live::client::deadline::deadline_after(budget);
        let store = twin.store();
        while progress.load(Ordering::SeqCst)
            < store.read(live::server::store::Store::resource_version)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// On the embedded twin: takes in watch events until every watch holds what the store
    /// holds now (the same objects at the same resourceVersions), within the budget. A quiet
    /// window can end while an event is still on its way to a watch (a loaded machine delays
    /// delivery, not the write); reading the store in-process costs no request, where
    /// confirming the stale picture by a fresh list would (fuzz/tests/twin.rs counts them).
    /// A cluster has no such view: there the confirm window and a fresh list decide.
    async fn watches_hold_the_store(&self, quiescer: &mut Quiescer) {
        let Backend::Embedded(twin) = &self.backend else {
            return;
        };
        let store = twin.store();
        let deadline = live::client::deadline::deadline_after(self.config.budget);
        let behind = |quiescer: &Quiescer| {
            store.read(|s| {
                quiescer.holdings().iter().any(|(kind, selector, held)| {
                    let selector =
                        live::server::selector::Selector::parse(selector.unwrap_or_default(), "")
                            .unwrap_or_else(|_| live::server::selector::Selector::everything());
                    let stored: std::collections::BTreeMap<_, _> = s
                        .list(kind, None, &selector)
                        .map(|l| l.items)
                        .unwrap_or_default()
                        .iter()
                        .map(live::client::quiesce::place_and_version)
                        .collect();
                    &stored != held
                })
            })
        };
        while behind(quiescer) && quiescer.take_change(deadline).await {}
    }

    /// For a `JointTimeout`, moves the embedded twin's clock past the joint check's bound
    /// (`POST /verify/v1/clock`), so its operator parks what the model's event parks; the
    /// requests it took (0 for any other event).
    pub(super) async fn pass_time(&self, event: &Event) -> Result<u64, ApiError> {
        if !matches!(event, Event::JointTimeout { .. }) {
            return Ok(0);
        }
        if self.on_cluster() {
            return Err(ApiError::NotOnCluster(
                "a joint timeout cannot be stepped on a cluster: its clock is not the client's",
            ));
        }
        self.client.advance_twin_clock(JOINT_BOUND_PASSED).await?;
        Ok(1)
    }

    /// For a submitted Workload (`event` a Submit) whose verdict gate 3 gives in the wire's
    /// state — the run's world before the event, every earlier charge on the ledger and no
    /// earlier Workload left ([`model::lifecycle::AdmissionState::alone`]) —: submits it to
    /// its pool's entrance LocalQueue on the wire, reads the `gpustack-node-devices` verdict
    /// back and compares it with the model's (its charge is written after, as the world
    /// decides it). Returns the requests the readback needed at least (create, watch, delete)
    /// and the divergence, if any. No verdict within the budget is inconclusive, as a wait for
    /// quiescence is.
    async fn read_back(
        &self,
        session: &Session,
        event: &Event,
        step: &str,
    ) -> Result<(u64, Option<Divergence>), ApiError> {
        let Event::Submit { workload } = event else {
            return Ok((0, None));
        };
        let world = &session.world;
        // only a Workload whose queue references the node-devices check gets its verdict
        if !world.admission.gate_three_judges(workload) {
            return Ok((0, None));
        }
        let alone = world.admission.alone().submit(workload);
        let Some(expected) = client::gate3_expectation(&alone) else {
            return Ok((0, None));
        };
        self.operator_caught_up(session.operator.as_ref(), self.config.budget)
            .await;
        // submitted as Kueue builds it from a Pod the webhook mutated: its folds done
        let submitted = world
            .admission
            .as_gate_one_leaves(workload)
            .unwrap_or_else(|_| workload.clone());
        let readback = self
            .client
            .gate3_verdict(&submitted, &session.run, self.config.budget)
            .await?;
        self.verdicts.fetch_add(1, Ordering::Relaxed);
        let object = format!("Workload {}/{}", workload.namespace, workload.name);
        let observed = match readback {
            Readback::Verdict(v, reserved) if client::verdict_agrees(&expected, &v) => {
                // gate 2 where a real Kueue decided it: its flavors against the model's
                let predicted = world.admission.alone().quota_assignment(workload);
                let differences = reserved
                    .map(|r| client::assignment_differences(&object, predicted, &r))
                    .unwrap_or_default();
                return Ok((READBACK_REQUESTS, divergence(step, differences, None)));
            }
            Readback::Verdict(v, _) => v,
            Readback::Undecided { last } => {
                return Err(ApiError::NoQuiescence {
                    step: step.to_string(),
                    reason: format!(
                        "{object} got no {} verdict within {:?} (last seen: {})",
                        model::labels::NODE_DEVICES_CHECK,
                        self.config.budget,
                        last.as_ref().map_or("none".into(), client::verdict_text)
                    ),
                })
            }
        };
        let differences = vec![oracle::Difference {
            kind: oracle::ObjectKind::Effect,
            name: object,
            field: format!(
                "status.admissionChecks[{}]",
                model::labels::NODE_DEVICES_CHECK
            ),
            expected: Some(client::verdict_text(&expected)),
            observed: Some(client::verdict_text(&observed)),
        }];
        Ok((READBACK_REQUESTS, divergence(step, differences, None)))
    }

    /// Waits for quiescence and diffs; a difference is confirmed after a longer quiet window.
    /// On a cluster, only the run's pools are compared.
    async fn converge(
        &self,
        session: &mut Session,
        step: &str,
    ) -> Result<Option<Divergence>, ApiError> {
        let scope = session.local.as_ref().map(|(_, token)| token.clone());
        let mut expected = client::expected(&session.world.observe());
        if let Some(token) = &scope {
            expected = expected.scoped_to(token);
        }
        // A difference is confirmed when a fresh list after a confirm window shows the same
        // differences as the observation before it; while they keep changing the operator is
        // still converging (on a cluster its pass may span several quiet windows), so wait
        // again, within the budget.
        let deadline = live::client::deadline::deadline_after(self.config.budget);
        let mut differences: Vec<oracle::Difference> = Vec::new();
        let mut window = self.config.window;
        loop {
            self.operator_caught_up(session.operator.as_ref(), self.config.budget)
                .await;
            if let Quiescence::Inconclusive { reason } =
                session.quiescer.wait(window, self.config.budget).await
            {
                return Err(ApiError::NoQuiescence {
                    step: step.to_string(),
                    reason,
                });
            }
            // first what the watches delivered (no request); a difference is confirmed on a
            // fresh list, as a cut watch may still be re-establishing and its cache stale
            let mut observed = if differences.is_empty() {
                self.watches_hold_the_store(&mut session.quiescer).await;
                session.quiescer.observed()
            } else {
                self.client.observe().await?
            };
            if let Some(token) = &scope {
                observed = observed.scoped_to(token);
            }
            let now = client::diff(&expected, &observed);
            if now.is_empty() {
                return Ok(None);
            }
            let settled = window == self.config.confirm_window && now == differences;
            differences = now;
            if settled || tokio::time::Instant::now() >= deadline {
                break;
            }
            window = self.config.confirm_window;
        }
        let graph = oracle::DerivationGraph::from_derived(&session.world.observe());
        Ok(divergence(step, differences, Some(&graph)))
    }
}

/// The divergence of differences read back at `step` (`None` without any), folded along
/// `graph` (a verdict or an assignment is no derived object: without a graph it folds as a
/// finding of its own).
fn divergence(
    step: &str,
    differences: Vec<oracle::Difference>,
    graph: Option<&oracle::DerivationGraph>,
) -> Option<Divergence> {
    if differences.is_empty() {
        return None;
    }
    let table = oracle::render_table(&differences);
    let folded = match graph {
        Some(graph) => oracle::fold(&differences, graph),
        None => oracle::fold(&differences, &oracle::DerivationGraph::default()),
    };
    let findings = oracle::render_findings(&folded);
    Some(Divergence {
        property: TWIN_PROPERTY.to_string(),
        step: step.to_string(),
        message: format!("the twin diverges from the model after {step}:\n{findings}\n{table}"),
        differences,
    })
}
