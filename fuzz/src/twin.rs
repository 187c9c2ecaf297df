//! The twin tier of `verify fuzz` (DESIGN.md "Three tiers"): a seed's scenario is mocked into an
//! embedded twin through the live tier's kube-rs client, quiesced, observed and diffed against
//! the model at every step of its event sequence. The twin's reference operator runs with the
//! mutant, if any, so what catches it is the full HTTP path.
//!
//! One twin per worker thread; between seeds its store is replaced by an empty one and its
//! operator restarted (a fresh operator has no memory of the previous seed's derivation).

use std::panic::{resume_unwind, AssertUnwindSafe};

use futures::FutureExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use live::client::{
    self, Client, Kubeconfig, Localizer, Quiescence, Quiescer, Readback, RunId, Token,
};
use live::operator::{run_operator, OperatorHandle};
use live::server::http::TwinHandle;
use live::server::store::{Store, StoreConfig};
use model::events::{Event, World};
use model::mutants::Mutant;
use model::scenario::Scenario;

/// The property a twin divergence is reported under.
pub const TWIN_PROPERTY: &str = "twin-matches-model";

/// How long the twin tier waits.
#[derive(Clone, Debug, PartialEq)]
pub struct TwinConfig {
    /// Quiet this long and the operator is taken to be done.
    pub window: Duration,
    /// A divergence is confirmed only after the objects stayed quiet this long.
    pub confirm_window: Duration,
    /// The most one wait may take (running out is inconclusive).
    pub budget: Duration,
    /// Twin evaluations a shrink may spend when the model alone cannot reproduce a failure.
    pub shrink_steps: u32,
    /// On a cluster: shrink candidates judged side by side, each in pools of its own.
    pub shrink_width: usize,
    /// Faults the twin injects into the client's requests (the client retries them).
    pub faults: Option<live::server::faults::FaultConfig>,
}

/// The shortest confirm window on a cluster. An operator there is a separate process whose
/// reconcile pass (watch delivery, its lists, then its writes) can stay quiet longer than the
/// embedded twin's 500 ms while it is still catching up: on kube-local with CI beside it,
/// `fuzz --seeds 50` turned up seeds that diverged once and held when re-run (FLAKY).
pub const CLUSTER_CONFIRM_WINDOW: Duration = Duration::from_secs(2);

impl Default for TwinConfig {
    fn default() -> Self {
        TwinConfig {
            window: Duration::from_millis(40),
            confirm_window: Duration::from_millis(500),
            budget: Duration::from_secs(30),
            shrink_steps: 24,
            shrink_width: 4,
            faults: None,
        }
    }
}

/// Why the twin (or a cluster) could not judge a seed (`Infrastructure`: a request to either
/// server failed): exit 3 (inconclusive, not a failure),
/// or for [`TwinError::Flaky`] exit 5.
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    #[error("the API server: {0}")]
    Infrastructure(String),
    #[error("the cluster: {0}")]
    Cluster(String),
    #[error("at {step}: {reason}")]
    NoQuiescence { step: String, reason: String },
    /// A divergence that did not come back when the scenario was re-run from a clean state.
    #[error("flaky: {}; a re-run from a clean state did not diverge", .0.message())]
    Flaky(TwinDivergence),
    /// Ctrl-C: the run stopped between two write steps (and tore down).
    #[error("interrupted")]
    Interrupted,
}

/// The divergence of a readback's differences (`None` without any): a verdict or an
/// assignment is no derived object, so it folds as a finding of its own.
fn divergence(step: &str, differences: Vec<oracle::Difference>) -> Option<TwinDivergence> {
    if differences.is_empty() {
        return None;
    }
    let graph = oracle::DerivationGraph::default();
    Some(TwinDivergence {
        step: step.to_string(),
        table: oracle::render_table(&differences),
        findings: oracle::render_findings(&oracle::fold(&differences, &graph)),
        differences,
    })
}

/// A live run's share for one worker ([`TwinRunner::connect`]): every attempt gets its own
/// [`Token`] and run label `<run>.<token>`, so seeds side by side never share a pool.
#[derive(Clone, Debug)]
pub struct Lane {
    /// The run's id (its run directory's).
    pub run: String,
    /// This worker's number within the run.
    pub lane: usize,
    /// Set on Ctrl-C: the runner stops between write steps and tears down.
    pub interrupt: Arc<AtomicBool>,
    /// How long a teardown waits for the operator to drop what it derived from the mocks.
    pub teardown_budget: Duration,
    /// A real node to mock onto instead of fake ones (`--overlay-node`).
    pub overlay: Option<client::OverlayNode>,
}

/// How the run writes a scenario, and what the model is asked at each quiesced step. The
/// Device Manager reports a node's Devices after the node exists, and the operator derives in
/// between (a node without Devices is a CPU node, and what it authors is create-only); so
/// every node (initial or joining) is written first without its Devices, then with them, and
/// the model sees the same two states. Returns the initial cluster without Devices and the
/// labelled steps after it; events from the first settings flip on (`AwarenessFlip`,
/// `MixingFlip`) are left out (the operator's flags are fixed when it starts).
pub fn write_steps(
    cluster: &model::Cluster,
    events: &[Event],
    run: &RunId,
) -> (model::Cluster, Vec<(String, Vec<Event>)>) {
    let mut bare = cluster.clone();
    let mut joins = Vec::new();
    for node in &mut bare.nodes {
        if node.devices.is_some() {
            joins.push(Event::NodeJoin { node: node.clone() });
            node.devices = None;
        }
    }
    let mut steps = Vec::new();
    if !joins.is_empty() {
        steps.push(("the nodes' Devices reported".to_string(), joins));
    }
    for (k, event) in events.iter().enumerate() {
        match event {
            e if e.flips_setting() => break,
            Event::NodeJoin { node } => {
                let mut node = node.clone();
                node.labels
                    .insert(client::RUN_LABEL.into(), run.as_str().into());
                if node.devices.is_some() {
                    let bare = model::cluster::Node {
                        devices: None,
                        ..node.clone()
                    };
                    steps.push((
                        format!("event {k} (node-join, before its Devices)"),
                        vec![Event::NodeJoin { node: bare }],
                    ));
                }
                steps.push((
                    format!("event {k} (node-join)"),
                    vec![Event::NodeJoin { node }],
                ));
            }
            other => steps.push((format!("event {k}"), vec![other.clone()])),
        }
    }
    (bare, steps)
}

/// A divergence between the twin and the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwinDivergence {
    /// Which write step: the nodes before their Devices, the Devices reported, or an event.
    pub step: String,
    /// Every differing field, one row each.
    pub table: String,
    /// The same rows, structured (Kubernetes field paths, as the objects were read back).
    pub differences: Vec<oracle::Difference>,
    /// The same differences folded along the derivation graph (node → flavor → pool's
    /// InstanceType/ClusterQueue → LocalQueue): upstream-most objects first, their downstream
    /// consequences beneath, so one wrong ResourceFlavor reads as one finding.
    pub findings: String,
}

impl TwinDivergence {
    pub fn message(&self) -> String {
        format!(
            "the twin diverges from the model after {}:\n{}\n{}",
            self.step, self.findings, self.table
        )
    }
}

/// Where a runner's scenarios are written.
enum Backend {
    /// An embedded twin: emptied, and its operator restarted, for every scenario.
    Embedded(TwinHandle),
    /// A cluster running the operator (the live tier): scenarios are localized first.
    Cluster(LiveLane),
}

struct LiveLane {
    lane: Lane,
    attempts: AtomicU64,
    /// What teardowns could not remove, for the run's final report.
    leftovers: Mutex<Vec<String>>,
}

impl LiveLane {
    /// A fresh token and run label for the next attempt.
    fn next(&self) -> Result<(Token, RunId), TwinError> {
        let attempt = self.attempts.fetch_add(1, Ordering::Relaxed);
        let token = Token::new(&self.lane.run, self.lane.lane, attempt);
        let run = RunId::new(&format!("{}.{}", self.lane.run, token.as_str()))
            .map_err(|e| TwinError::Cluster(e.to_string()))?;
        Ok((token, run))
    }
}

/// One worker's twin (or cluster lane): its tokio runtime for the client, and the client.
pub struct TwinRunner {
    backend: Backend,
    runtime: tokio::runtime::Runtime,
    client: Client,
    config: TwinConfig,
    /// A step-by-step run in progress ([`TwinRunner::begin`]).
    session: Option<Session>,
    /// The fewest requests the last judged scenario needed ([`TwinRunner::minimum_requests`]).
    needed: AtomicU64,
    /// On the embedded twin: how far its running operator has reconciled (the store's
    /// resourceVersion), so a wait starts only once it has seen every write.
    operator_progress: Mutex<Option<Arc<AtomicU64>>>,
    /// Gate-3 verdicts read back so far ([`TwinRunner::verdicts_read`]).
    verdicts: AtomicU64,
}

/// How far a `JointTimeout` moves the twin's clock: one second past the joint check's bound
/// (`heldPast` parks only past it, model::admission::joint::held_past).
pub const JOINT_BOUND_PASSED: u64 = model::admission::joint::INFEASIBLE_AFTER_SECONDS + 1;

/// The fewest requests reading one gate-3 verdict back takes: the Workload's create, one
/// watch, its delete ([`Client::gate3_verdict`]).
pub const READBACK_REQUESTS: u64 = 3;

/// Kinds one observation reads (Nodes, ResourceFlavors, InstanceTypes, ClusterQueues,
/// LocalQueues, Topologies): at least one list each per write step.
pub const OBSERVED_KINDS: u64 = 6;

/// A step-by-step run: its id, the model world of what was written, its watcher, and its
/// operator (embedded) or localizer and token (cluster).
struct Session {
    run: RunId,
    world: World,
    quiescer: Quiescer,
    operator: Option<OperatorHandle>,
    local: Option<(Localizer, Token)>,
}

fn empty_store() -> Store {
    let mut store = Store::new(StoreConfig::default());
    live::server::schemas::install_validators(&mut store);
    store
}

impl TwinRunner {
    /// Serves a twin on a free loopback port and connects the client to it.
    pub fn start(config: TwinConfig) -> Result<TwinRunner, TwinError> {
        let infra = |e: String| TwinError::Infrastructure(e);
        let served = live::server::http::ServeConfig {
            faults: config.faults.clone(),
        };
        let twin = live::server::http::spawn_configured(None, empty_store(), served)
            .map_err(|e| infra(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| infra(e.to_string()))?;
        let yaml = live::server::kubeconfig::kubeconfig_yaml(twin.url(), "verify-twin");
        let client = runtime
            .block_on(Client::from_kubeconfig_yaml(&yaml, "verify-twin"))
            .map_err(|e| infra(e.to_string()))?;
        Ok(TwinRunner::assemble(
            Backend::Embedded(twin),
            runtime,
            client,
            config,
        ))
    }

    fn assemble(
        backend: Backend,
        runtime: tokio::runtime::Runtime,
        client: Client,
        config: TwinConfig,
    ) -> TwinRunner {
        TwinRunner {
            backend,
            runtime,
            client,
            config,
            session: None,
            needed: AtomicU64::new(0),
            operator_progress: Mutex::new(None),
            verdicts: AtomicU64::new(0),
        }
    }

    /// A runner on a cluster that runs the operator, through `context` of `kubeconfig` (the
    /// live tier; the same client code as the twin tier). The cluster's system namespaces are
    /// never written.
    pub fn connect(
        kubeconfig: Kubeconfig,
        context: &str,
        mut config: TwinConfig,
        lane: Lane,
        system_namespace: &str,
    ) -> Result<TwinRunner, TwinError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TwinError::Cluster(e.to_string()))?;
        let client = runtime
            .block_on(Client::from_kubeconfig(kubeconfig, context))
            .map_err(|e| TwinError::Cluster(e.to_string()))?
            .keeping_namespaces([
                system_namespace.to_string(),
                model::labels::KUBE_SYSTEM.to_string(),
            ])
            .keeping_nodes(lane.overlay.iter().map(|n| n.name.clone()));
        config.confirm_window = config.confirm_window.max(CLUSTER_CONFIRM_WINDOW);
        let lane = LiveLane {
            lane,
            attempts: AtomicU64::new(0),
            leftovers: Mutex::new(Vec::new()),
        };
        Ok(TwinRunner::assemble(
            Backend::Cluster(lane),
            runtime,
            client,
            config,
        ))
    }

    /// What this runner writes to: the embedded twin's `http://127.0.0.1:PORT`, or the
    /// cluster's server and context.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Embedded(twin) => {
                format!("embedded Kubernetes-API twin on {}", twin.addr())
            }
            Backend::Cluster(_) => format!(
                "cluster {} (context {})",
                self.client.target().server,
                self.client.target().context
            ),
        }
    }

    /// Gate-3 verdicts this runner read back from Workloads on the wire, agreeing or not.
    pub fn verdicts_read(&self) -> u64 {
        self.verdicts.load(Ordering::Relaxed)
    }

    /// Objects that teardowns on a cluster could not remove (empty on the twin).
    pub fn leftovers(&self) -> Vec<String> {
        match &self.backend {
            Backend::Embedded(_) => Vec::new(),
            Backend::Cluster(l) => l.leftovers.lock().map(|v| v.clone()).unwrap_or_default(),
        }
    }

    fn twin(&self) -> Result<&TwinHandle, TwinError> {
        match &self.backend {
            Backend::Embedded(twin) => Ok(twin),
            Backend::Cluster(_) => Err(TwinError::Cluster(
                "a mutant or an operator restart needs the embedded twin".into(),
            )),
        }
    }

    fn follow(&self, progress: Option<Arc<AtomicU64>>) {
        if let Ok(mut p) = self.operator_progress.lock() {
            *p = progress;
        }
    }

    /// On the embedded twin: waits (within `budget`) until its operator has reconciled every
    /// write so far, so a slow operator thread on a loaded machine is waited for, not timed.
    /// A cluster's operator gives no such signal; there the quiet window alone decides.
    async fn operator_caught_up(&self, budget: Duration) {
        let (Backend::Embedded(twin), Some(progress)) = (
            &self.backend,
            self.operator_progress.lock().ok().and_then(|p| p.clone()),
        ) else {
            return;
        };
        let deadline = tokio::time::Instant::now() + budget;
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
        let deadline = tokio::time::Instant::now() + self.config.budget;
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

    fn interrupted(&self) -> Result<(), TwinError> {
        match &self.backend {
            Backend::Cluster(l) if l.lane.interrupt.load(Ordering::Relaxed) => {
                Err(TwinError::Interrupted)
            }
            _ => Ok(()),
        }
    }

    /// Runs `s` through the twin (its operator mutated by `mutant`) and diffs every step
    /// against the unmutated model. Steps from a settings flip (`AwarenessFlip`,
    /// `MixingFlip`) on are not checked: the operator's flags are fixed when it starts. A
    /// `JointTimeout` moves the twin's clock past the joint check's bound; on a cluster it and
    /// the steps after it are not checked ([`TwinRunner::steppable`]). On a cluster, `s` is
    /// localized first and a
    /// divergence counts only if a re-run from a clean state diverges again
    /// ([`TwinError::Flaky`] otherwise).
    pub fn judge(
        &self,
        s: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let lane = match &self.backend {
            Backend::Embedded(_) => return self.judge_embedded(s, mutant),
            Backend::Cluster(_) if mutant.is_some() => {
                return Err(TwinError::Cluster(
                    "a mutant mutates the embedded twin's operator; a cluster runs its own".into(),
                ))
            }
            Backend::Cluster(lane) => lane,
        };
        let Some(first) = self.judge_live(s, lane)? else {
            return Ok(None);
        };
        match self.judge_live(s, lane)? {
            Some(_) => Ok(Some(first)),
            None => Err(TwinError::Flaky(first)),
        }
    }

    fn judge_embedded(
        &self,
        s: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let run =
            RunId::new("verify-fuzz").map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        let operator = self.fresh_operator(s, mutant)?;
        let outcome = self.runtime.block_on(self.steps(s, &run, None));
        self.end_operator(operator);
        outcome
    }

    /// Empties the embedded twin and starts its reference operator on `s`'s settings (run
    /// under `mutant`), quiescence following the operator's reconciles.
    fn fresh_operator(
        &self,
        s: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<OperatorHandle, TwinError> {
        let store = self.twin()?.store();
        store.write(|st| *st = empty_store());
        let mut settings = s.cluster.settings.clone();
        settings.mutant = mutant;
        let operator =
            run_operator(store, settings).map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        self.follow(Some(operator.reconciled()));
        Ok(operator)
    }

    /// Stops what [`Self::fresh_operator`] started.
    fn end_operator(&self, operator: OperatorHandle) {
        self.follow(None);
        operator.stop();
    }

    /// One attempt on the cluster: localize with a fresh token, write and diff step by step,
    /// then tear down whatever happened (a panic is re-raised after the teardown).
    fn judge_live(
        &self,
        s: &Scenario,
        lane: &LiveLane,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        self.runtime.block_on(self.attempt(s, lane))
    }

    async fn attempt(
        &self,
        s: &Scenario,
        lane: &LiveLane,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let (token, run) = lane.next()?;
        let local = client::localize_onto(s, &token, lane.lane.overlay.as_ref());
        let outcome = AssertUnwindSafe(self.steps(&local, &run, Some(&token)))
            .catch_unwind()
            .await;
        let left = self.tear_down(&run, &token).await;
        match outcome {
            Err(panic) => resume_unwind(panic),
            Ok(outcome) => {
                left?;
                outcome
            }
        }
    }

    /// Judges `candidates` at once: on a cluster side by side, each in pools of its own (a
    /// fresh token per attempt), one attempt each (no clean re-run: a shrink confirms only its
    /// result); on the embedded twin one after another. One answer per candidate, in order.
    pub fn judge_side_by_side(
        &self,
        candidates: &[Scenario],
    ) -> Vec<Result<Option<TwinDivergence>, TwinError>> {
        match &self.backend {
            Backend::Cluster(lane) => self.runtime.block_on(futures::future::join_all(
                candidates.iter().map(|c| self.attempt(c, lane)),
            )),
            Backend::Embedded(_) => candidates.iter().map(|c| self.judge(c, None)).collect(),
        }
    }

    /// Replays `s` on a fresh embedded twin with its Workloads kept, as a cluster keeps them
    /// (the gate-3 read-back of [`TwinRunner::judge`] withdraws each one): every Submit is
    /// created on its LocalQueue (one already there stands: Kueue requeues it itself), every
    /// Finish deletes it, a `JointTimeout` moves the twin's clock past the joint check's bound,
    /// the shape's own events are synced as the model's shape moves; after each event, once
    /// the operator has reconciled it, the Workloads named in `reads` for that step (`step`
    /// as the scenario's expectations count them: 0 before any event, k after k events) are
    /// read back. Returns each read's object (`None`: no such Workload, or a step after an
    /// awareness flip, which the operator's fixed flags cannot follow). The twin's operator
    /// runs `mutant`, if any. Embedded twin only.
    pub fn workloads_at_steps(
        &self,
        s: &Scenario,
        mutant: Option<Mutant>,
        reads: &[(usize, String)],
    ) -> Result<Vec<Option<serde_json::Value>>, TwinError> {
        let run = RunId::new("verify-case-joint")
            .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        let operator = self.fresh_operator(s, mutant)?;
        let outcome = self.runtime.block_on(self.keep_workloads(s, &run, reads));
        self.end_operator(operator);
        outcome
    }

    async fn keep_workloads(
        &self,
        s: &Scenario,
        run: &RunId,
        reads: &[(usize, String)],
    ) -> Result<Vec<Option<serde_json::Value>>, TwinError> {
        use live::crd::Workload as WireWorkload;
        let api = |e: client::ClientError| TwinError::Infrastructure(e.to_string());
        let client = &self.client;
        let cluster = client::mocked_cluster_keeping(&s.cluster, run, client.kept_nodes());
        // the shape alone: Workloads live on the twin, so no charge is mirrored into a ledger
        let mut shape = World::new(cluster.clone());
        client.mock(&cluster, run).await.map_err(api)?;
        let mut found = vec![None; reads.len()];
        for step in 0..=s.events.len() {
            if step > 0 {
                let before = shape.cluster().clone();
                match &s.events[step - 1] {
                    Event::AwarenessFlip => break,
                    Event::Submit { workload } => {
                        let mut object = live::wire::workload::workload_object(workload);
                        object["metadata"]["labels"] =
                            serde_json::json!({ client::RUN_LABEL: run.as_str() });
                        let ns = Some(workload.namespace.as_str());
                        match client.create::<WireWorkload>(ns, object).await {
                            Err(e) if !client::retry::already_exists(&e) => return Err(api(e)),
                            _ => {}
                        }
                    }
                    Event::Finish { namespace, name } => client
                        .delete::<WireWorkload>(Some(namespace), name)
                        .await
                        .map_err(api)?,
                    timeout @ Event::JointTimeout { .. } => {
                        self.pass_time(timeout).await?;
                    }
                    other => {
                        shape.apply(other);
                        client
                            .sync(Some(&before), shape.cluster(), run)
                            .await
                            .map_err(api)?;
                    }
                }
            }
            self.operator_caught_up(self.config.budget).await;
            for (i, (at, key)) in reads.iter().enumerate() {
                if *at != step {
                    continue;
                }
                let (ns, name) = key.split_once('/').unwrap_or(("default", key.as_str()));
                found[i] = client.workload(ns, name).await.map_err(api)?;
            }
        }
        Ok(found)
    }

    /// Whether this runner writes to a cluster (the live tier).
    pub fn on_cluster(&self) -> bool {
        matches!(self.backend, Backend::Cluster(_))
    }

    /// Deletes what a cluster run `run` labelled, then what the operator derived from it;
    /// returns what is left and keeps it for the run's report.
    async fn tear_down(&self, run: &RunId, token: &Token) -> Result<Vec<String>, TwinError> {
        let Backend::Cluster(lane) = &self.backend else {
            return Ok(Vec::new());
        };
        let left = self
            .client
            .teardown_localized(run, token, lane.lane.teardown_budget)
            .await
            .map(|t| t.leftovers)
            .map_err(|e| TwinError::Cluster(e.to_string()))?;
        if let Ok(mut all) = lane.leftovers.lock() {
            all.extend(left.iter().cloned());
        }
        Ok(left)
    }

    async fn steps(
        &self,
        s: &Scenario,
        run: &RunId,
        scope: Option<&Token>,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let client = &self.client;
        let api = |e: client::ClientError| TwinError::Infrastructure(e.to_string());
        let cluster = client::mocked_cluster_keeping(&s.cluster, run, self.client.kept_nodes());
        let (bare, steps) = write_steps(&cluster, self.steppable(&s.events), run);
        let mut world = World::new(bare.clone());
        let mut quiescer = match scope {
            Some(token) => Quiescer::scoped(client, run, token),
            None => Quiescer::new(client, run),
        };
        let mut writes = client.mock(&bare, run).await.map_err(api)? as u64;
        let mut steps_done = 1;
        let need = |writes: u64, steps: u64| writes + OBSERVED_KINDS * steps;
        self.needed
            .store(need(writes, steps_done), Ordering::Relaxed);
        if let Some(d) = self
            .converge(
                &mut quiescer,
                &world,
                "the nodes, before their Devices",
                scope,
            )
            .await?
        {
            return Ok(Some(d));
        }
        for (label, events) in &steps {
            self.interrupted()?;
            let before = world.cluster().clone();
            for event in events {
                writes += self.pass_time(event).await?;
                let (requests, verdict) = self.read_back(event, &world, run, label).await?;
                writes += requests;
                if verdict.is_some() {
                    return Ok(verdict);
                }
                world.apply(event);
            }
            writes += client
                .sync(Some(&before), world.cluster(), run)
                .await
                .map_err(api)? as u64;
            steps_done += 1;
            self.needed
                .store(need(writes, steps_done), Ordering::Relaxed);
            if let Some(d) = self.converge(&mut quiescer, &world, label, scope).await? {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }

    /// The events this runner can step: all of them on the embedded twin; on a cluster those
    /// before the first `JointTimeout`, as the bound passing is 30 minutes of a clock only
    /// the twin lets a client move (the live tier stops checking there, never fakes it).
    pub fn steppable<'e>(&self, events: &'e [Event]) -> &'e [Event] {
        match &self.backend {
            Backend::Embedded(_) => events,
            Backend::Cluster(_) => {
                let end = events
                    .iter()
                    .position(|e| matches!(e, Event::JointTimeout { .. }))
                    .unwrap_or(events.len());
                &events[..end]
            }
        }
    }

    /// For a `JointTimeout`, moves the embedded twin's clock past the joint check's bound
    /// (`POST /verify/v1/clock`), so its operator parks what the model's event parks; the
    /// requests it took (0 for any other event).
    async fn pass_time(&self, event: &Event) -> Result<u64, TwinError> {
        if !matches!(event, Event::JointTimeout { .. }) {
            return Ok(0);
        }
        if self.on_cluster() {
            return Err(TwinError::Cluster(
                "a joint timeout cannot be stepped on a cluster: its clock is not the client's"
                    .into(),
            ));
        }
        self.client
            .advance_twin_clock(JOINT_BOUND_PASSED)
            .await
            .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        Ok(1)
    }

    /// Starts a step-by-step run (a soak): writes `start`'s cluster (nodes before their
    /// Devices, as [`write_steps`] orders them) with the operator mutated by `mutant` (twin
    /// only), and converges. Later events go through [`TwinRunner::step`];
    /// [`TwinRunner::end`] tears down. On a cluster, `start` and every later event are
    /// localized with one token for the whole run.
    pub fn begin(
        &mut self,
        start: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        self.end()?;
        let (run, operator, local, start_cluster) = match &self.backend {
            Backend::Embedded(twin) => {
                let run = RunId::new("verify-soak")
                    .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
                let store = twin.store();
                store.write(|st| *st = empty_store());
                let mut settings = start.cluster.settings.clone();
                settings.mutant = mutant;
                let operator = run_operator(store, settings)
                    .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
                (run, Some(operator), None, start.cluster.clone())
            }
            Backend::Cluster(_) if mutant.is_some() => {
                return Err(TwinError::Cluster(
                    "a mutant mutates the embedded twin's operator; a cluster runs its own".into(),
                ))
            }
            Backend::Cluster(lane) => {
                let (token, run) = lane.next()?;
                let localizer = Localizer::onto(start, &token, lane.lane.overlay.as_ref());
                let cluster = localizer.cluster.clone();
                (run, None, Some((localizer, token)), cluster)
            }
        };
        self.follow(operator.as_ref().map(OperatorHandle::reconciled));
        let cluster =
            client::mocked_cluster_keeping(&start_cluster, &run, self.client.kept_nodes());
        let (bare, steps) = write_steps(&cluster, &[], &run);
        let world = World::new(bare.clone());
        let quiescer = match &local {
            Some((_, token)) => Quiescer::scoped(&self.client, &run, token),
            None => Quiescer::new(&self.client, &run),
        };
        self.session = Some(Session {
            run,
            world,
            quiescer,
            operator,
            local,
        });
        let written = self
            .runtime
            .block_on(self.client.mock(&bare, &self.session_run()?));
        written.map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        if let Some(d) = self.converge_session("the nodes, before their Devices")? {
            return Ok(Some(d));
        }
        for (label, events) in steps {
            if let Some(d) = self.write_session(&label, &events)? {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }

    /// Writes one event of a step-by-step run (a joining node before and after its Devices)
    /// and converges. A settings flip (awareness, mixing) is refused: the operator's flags are
    /// fixed at start.
    pub fn step(&mut self, event: &Event) -> Result<Option<TwinDivergence>, TwinError> {
        if event.flips_setting() {
            return Err(TwinError::Infrastructure(
                "a settings flip cannot be written: the operator's flags are fixed at start".into(),
            ));
        }
        self.interrupted()?;
        let run = self.session_run()?;
        let event = match self.session.as_mut().and_then(|s| s.local.as_mut()) {
            Some((localizer, _)) => match localizer.event(event) {
                Some(e) => e,
                None => return Ok(None),
            },
            None => event.clone(),
        };
        let (_, steps) = write_steps(
            &model::Cluster::default(),
            std::slice::from_ref(&event),
            &run,
        );
        for (label, events) in steps {
            if let Some(d) = self.write_session(&label, &events)? {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }

    /// Objects the step-by-step run has written or the operator derived for it.
    pub fn session_objects(&self) -> usize {
        self.session.as_ref().map_or(0, |s| {
            s.world.cluster().nodes.len() + s.world.observe().object_count()
        })
    }

    /// The fewest requests the last scenario [`TwinRunner::judge`] wrote needed: every write
    /// its mocks took (creates, `/status` writes, patches, deletes) plus one list of each
    /// observed kind per write step. What was served beyond it is the client's overhead
    /// (watches, retries, confirmations, teardown).
    pub fn minimum_requests(&self) -> u64 {
        self.needed.load(Ordering::Relaxed)
    }

    /// Requests served so far: the twin's own count (all verbs and resources), or on a
    /// cluster the responses this runner's client received.
    pub fn api_calls(&self) -> u64 {
        match &self.backend {
            Backend::Embedded(twin) => twin.counters().total_requests(),
            Backend::Cluster(_) => self.client.requests(),
        }
    }

    /// Ends a step-by-step run: stops its operator, deletes what the run labelled (on a
    /// cluster also what the operator derived from it) and returns how many of its objects
    /// are left (0 when clean).
    pub fn end(&mut self) -> Result<usize, TwinError> {
        let Some(session) = self.session.take() else {
            return Ok(0);
        };
        self.follow(None);
        if let Some(operator) = session.operator {
            operator.stop();
        }
        let left = match &session.local {
            Some((_, token)) => self.runtime.block_on(self.tear_down(&session.run, token))?,
            None => {
                self.runtime
                    .block_on(self.client.teardown(&session.run))
                    .map_err(|e| TwinError::Infrastructure(e.to_string()))?
                    .leftovers
            }
        };
        Ok(left.len())
    }

    fn session_run(&self) -> Result<RunId, TwinError> {
        self.session
            .as_ref()
            .map(|s| s.run.clone())
            .ok_or_else(|| TwinError::Infrastructure("no step-by-step run was begun".into()))
    }

    /// Applies `events` to the session's mirror world, syncs the twin to it and converges.
    fn write_session(
        &mut self,
        label: &str,
        events: &[Event],
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let Some(mut session) = self.session.take() else {
            return Err(TwinError::Infrastructure(
                "no step-by-step run was begun".into(),
            ));
        };
        let before = session.world.cluster().clone();
        let mut read = Ok(None);
        for event in events {
            if let Err(e) = self.runtime.block_on(self.pass_time(event)) {
                read = Err(e);
                break;
            }
            read = self
                .runtime
                .block_on(self.read_back(event, &session.world, &session.run, label))
                .map(|(_, verdict)| verdict);
            if !matches!(read, Ok(None)) {
                break;
            }
            session.world.apply(event);
        }
        let after = session.world.cluster().clone();
        let run = session.run.clone();
        self.session = Some(session);
        if let Some(d) = read? {
            return Ok(Some(d));
        }
        self.runtime
            .block_on(self.client.sync(Some(&before), &after, &run))
            .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        self.converge_session(label)
    }

    fn converge_session(&mut self, label: &str) -> Result<Option<TwinDivergence>, TwinError> {
        let Some(mut session) = self.session.take() else {
            return Err(TwinError::Infrastructure(
                "no step-by-step run was begun".into(),
            ));
        };
        let scope = session.local.as_ref().map(|(_, t)| t.clone());
        let outcome = self.runtime.block_on(self.converge(
            &mut session.quiescer,
            &session.world,
            label,
            scope.as_ref(),
        ));
        self.session = Some(session);
        outcome
    }

    /// For a submitted Workload (`event` a Submit) whose verdict gate 3 gives in the wire's
    /// state — `world` before the event, every earlier charge on the ledger and no earlier
    /// Workload left ([`model::lifecycle::AdmissionState::alone`]) —: submits it to its pool's
    /// entrance LocalQueue on the wire, reads the `gpustack-node-devices` verdict back and
    /// compares it with the model's (its charge is written after, as the world decides it).
    /// Returns the requests the readback needed at least (create, watch, delete) and the
    /// divergence, if any. No verdict within the budget is inconclusive, as a wait for
    /// quiescence is.
    async fn read_back(
        &self,
        event: &Event,
        world: &World,
        run: &RunId,
        step: &str,
    ) -> Result<(u64, Option<TwinDivergence>), TwinError> {
        let Event::Submit { workload } = event else {
            return Ok((0, None));
        };
        // only a Workload whose queue references the node-devices check gets its verdict
        if !world.admission.gate_three_judges(workload) {
            return Ok((0, None));
        }
        let alone = world.admission.alone().submit(workload);
        let Some(expected) = client::gate3_expectation(&alone) else {
            return Ok((0, None));
        };
        self.operator_caught_up(self.config.budget).await;
        // submitted as Kueue builds it from a Pod the webhook mutated: its folds done
        let submitted = world
            .admission
            .as_gate_one_leaves(workload)
            .unwrap_or_else(|_| workload.clone());
        let readback = self
            .client
            .gate3_verdict(&submitted, run, self.config.budget)
            .await
            .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        self.verdicts.fetch_add(1, Ordering::Relaxed);
        let object = format!("Workload {}/{}", workload.namespace, workload.name);
        let observed = match readback {
            Readback::Verdict(v, reserved) if client::verdict_agrees(&expected, &v) => {
                // gate 2 where a real Kueue decided it: its flavors against the model's
                let predicted = world.admission.alone().quota_assignment(workload);
                let differences = reserved
                    .map(|r| client::assignment_differences(&object, predicted, &r))
                    .unwrap_or_default();
                return Ok((READBACK_REQUESTS, divergence(step, differences)));
            }
            Readback::Verdict(v, _) => v,
            Readback::Undecided { last } => {
                return Err(TwinError::NoQuiescence {
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
        let differences = [oracle::Difference {
            kind: oracle::ObjectKind::Effect,
            name: object,
            field: format!(
                "status.admissionChecks[{}]",
                model::labels::NODE_DEVICES_CHECK
            ),
            expected: Some(client::verdict_text(&expected)),
            observed: Some(client::verdict_text(&observed)),
        }];
        Ok((READBACK_REQUESTS, divergence(step, differences.to_vec())))
    }

    /// Waits for quiescence and diffs; a difference is confirmed after a longer quiet window.
    /// On a cluster (`scope`), only the run's pools are compared.
    async fn converge(
        &self,
        quiescer: &mut Quiescer,
        world: &World,
        step: &str,
        scope: Option<&Token>,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let mut expected = client::expected(&world.observe());
        if let Some(token) = scope {
            expected = expected.scoped_to(token);
        }
        // A difference is confirmed when a fresh list after a confirm window shows the same
        // differences as the observation before it; while they keep changing the operator is
        // still converging (on a cluster its pass may span several quiet windows), so wait
        // again, within the budget.
        let deadline = tokio::time::Instant::now() + self.config.budget;
        let mut differences: Vec<oracle::Difference> = Vec::new();
        let mut window = self.config.window;
        loop {
            self.operator_caught_up(self.config.budget).await;
            if let Quiescence::Inconclusive { reason } =
                quiescer.wait(window, self.config.budget).await
            {
                return Err(TwinError::NoQuiescence {
                    step: step.to_string(),
                    reason,
                });
            }
            // first what the watches delivered (no request); a difference is confirmed on a
            // fresh list, as a cut watch may still be re-establishing and its cache stale
            let mut observed = if differences.is_empty() {
                self.watches_hold_the_store(quiescer).await;
                quiescer.observed()
            } else {
                self.client
                    .observe()
                    .await
                    .map_err(|e| TwinError::Infrastructure(e.to_string()))?
            };
            if let Some(token) = scope {
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
        let graph = oracle::DerivationGraph::from_derived(&world.observe());
        Ok(Some(TwinDivergence {
            step: step.to_string(),
            table: oracle::render_table(&differences),
            findings: oracle::render_findings(&oracle::fold(&differences, &graph)),
            differences,
        }))
    }
}
