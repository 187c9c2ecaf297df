//! The API target (DESIGN.md "Three tiers"): a scenario is mocked through the live tier's
//! kube-rs client into a Kubernetes API server, quiesced, observed and diffed against the
//! model at every write step. Two ways to start it: an embedded twin on 127.0.0.1 whose
//! reference operator runs with the mutant, if any, so what catches it is the full HTTP path
//! ([`ApiTarget::start`]); or a lane of a cluster running the operator, every attempt in
//! pools of its own ([`ApiTarget::connect`]).
//!
//! One target per worker thread; between scenarios the embedded twin's store is replaced by
//! an empty one and its operator restarted (a fresh operator has no memory of the previous
//! scenario's derivation).

mod joint;
mod session;
mod write;

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use live::client::{self, Client, ClientError, Kubeconfig, RunId, Token};
use live::server::http::TwinHandle;
use live::server::store::{Store, StoreConfig};
use model::events::Event;
use model::mutants::Mutant;
use model::scenario::Scenario;

use crate::target::{step_scenario, Divergence, Target};
use session::Session;

pub use write::write_steps;

/// The property a divergence of an API target is reported under.
pub const TWIN_PROPERTY: &str = "twin-matches-model";

/// How long an API target waits.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiConfig {
    /// Quiet this long and the operator is taken to be done.
    pub window: Duration,
    /// A divergence is confirmed only after the objects stayed quiet this long.
    pub confirm_window: Duration,
    /// The most one wait may take (running out is inconclusive).
    pub budget: Duration,
    /// Evaluations a shrink may spend on the target when the model alone cannot reproduce a
    /// failure.
    pub shrink_steps: u32,
    /// On a cluster: shrink candidates judged side by side, each in pools of its own.
    pub shrink_width: usize,
    /// Faults the embedded twin injects into the client's requests (the client retries them).
    pub faults: Option<live::server::faults::FaultConfig>,
}

/// The shortest confirm window on a cluster. An operator there is a separate process whose
/// reconcile pass (watch delivery, its lists, then its writes) can stay quiet longer than the
/// embedded twin's 500 ms while it is still catching up: on kube-local with CI beside it,
/// `fuzz --seeds 50` turned up seeds that diverged once and held when re-run (FLAKY).
pub const CLUSTER_CONFIRM_WINDOW: Duration = Duration::from_secs(2);

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            window: Duration::from_millis(40),
            confirm_window: Duration::from_millis(500),
            budget: Duration::from_secs(30),
            shrink_steps: 24,
            shrink_width: 4,
            faults: None,
        }
    }
}

/// Why an API target could not judge a scenario: exit 3 (inconclusive, not a failure), but
/// exit 5 for [`ApiError::Flaky`] and a stopped run for [`ApiError::Interrupted`].
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Serving the embedded twin, starting its operator or the client's runtime failed.
    #[error("the API server: {0}")]
    Serve(#[source] std::io::Error),
    /// A request to the API server failed.
    #[error("the API server: {0}")]
    Request(#[from] ClientError),
    /// What the server is not asked to do mid-run (a settings flip; its flags are fixed).
    #[error("the API server: {0}")]
    NotSteppable(&'static str),
    /// Connecting to the cluster or tearing a run down there failed.
    #[error("the cluster: {0}")]
    Cluster(#[source] ClientError),
    /// The cluster's client runtime could not be built.
    #[error("the cluster: {0}")]
    ClusterRuntime(#[source] std::io::Error),
    /// What only the embedded twin can do (a mutant, moving the clock).
    #[error("the cluster: {0}")]
    NotOnCluster(&'static str),
    /// The operator did not settle (or a gate-3 verdict did not come) within the budget.
    #[error("at {step}: {reason}")]
    NoQuiescence {
        /// The write step waited on.
        step: String,
        /// What did not settle (the quiescer's or the readback's account).
        reason: String,
    },
    /// A divergence that did not come back when the scenario was re-run from a clean state.
    #[error("flaky: {}; a re-run from a clean state did not diverge", .0.message)]
    Flaky(Divergence),
    /// Ctrl-C: the run stopped between two write steps (and tore down).
    #[error("interrupted")]
    Interrupted,
}

/// A live run's share for one worker ([`ApiTarget::connect`]): every attempt gets its own
/// [`Token`] and run label `<run>.<token>`, so scenarios side by side never share a pool.
#[derive(Clone, Debug)]
pub struct Lane {
    /// The run's id (its run directory's).
    pub run: String,
    /// This worker's number within the run.
    pub lane: usize,
    /// Set on Ctrl-C: the target stops between write steps and tears down.
    pub interrupt: Arc<AtomicBool>,
    /// How long a teardown waits for the operator to drop what it derived from the mocks.
    pub teardown_budget: Duration,
    /// A real node to mock onto instead of fake ones (`--overlay-node`).
    pub overlay: Option<client::OverlayNode>,
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

/// Where an API target's scenarios are written.
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
    fn next(&self) -> Result<(Token, RunId), ApiError> {
        let attempt = self.attempts.fetch_add(1, Ordering::Relaxed);
        let token = Token::new(&self.lane.run, self.lane.lane, attempt);
        let run = RunId::new(&format!("{}.{}", self.lane.run, token.as_str()))
            .map_err(ApiError::Cluster)?;
        Ok((token, run))
    }
}

/// One worker's API server (an embedded twin or a cluster lane): its tokio runtime for the
/// client, the client, and the run in progress.
pub struct ApiTarget {
    backend: Backend,
    runtime: tokio::runtime::Runtime,
    client: Client,
    config: ApiConfig,
    /// Mutates the embedded twin's operator, never the model.
    mutant: Option<Mutant>,
    /// The run in progress ([`Target::start`] to [`Target::teardown`]).
    session: Option<Session>,
    /// The first divergence since the start, until [`Target::divergence`] takes it.
    pending: Option<Divergence>,
    /// The fewest requests the last judged scenario needed ([`ApiTarget::minimum_requests`]).
    needed: AtomicU64,
    /// Gate-3 verdicts read back so far ([`ApiTarget::verdicts_read`]).
    verdicts: AtomicU64,
}

fn empty_store() -> Store {
    let mut store = Store::new(StoreConfig::default());
    live::server::schemas::install_validators(&mut store);
    store
}

impl ApiTarget {
    /// Serves an embedded twin on a free loopback port and connects the client to it.
    pub fn start(config: ApiConfig) -> Result<ApiTarget, ApiError> {
        let served = live::server::http::ServeConfig {
            faults: config.faults.clone(),
            ..live::server::http::ServeConfig::default()
        };
        let twin = live::server::http::spawn_configured(None, empty_store(), served)
            .map_err(ApiError::Serve)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ApiError::Serve)?;
        let yaml = live::server::kubeconfig::kubeconfig_yaml(twin.url(), "verify-twin");
        let client = runtime.block_on(Client::from_kubeconfig_yaml(&yaml, "verify-twin"))?;
        Ok(ApiTarget::assemble(
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
        config: ApiConfig,
    ) -> ApiTarget {
        ApiTarget {
            backend,
            runtime,
            client,
            config,
            mutant: None,
            session: None,
            pending: None,
            needed: AtomicU64::new(0),
            verdicts: AtomicU64::new(0),
        }
    }

    /// A target on a cluster that runs the operator, through `context` of `kubeconfig` (the
    /// live tier; the same client code as the twin tier). The cluster's system namespaces are
    /// never written.
    pub fn connect(
        kubeconfig: Kubeconfig,
        context: &str,
        mut config: ApiConfig,
        lane: Lane,
        system_namespace: &str,
    ) -> Result<ApiTarget, ApiError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ApiError::ClusterRuntime)?;
        let client = runtime
            .block_on(Client::from_kubeconfig(kubeconfig, context))
            .map_err(ApiError::Cluster)?
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
        Ok(ApiTarget::assemble(
            Backend::Cluster(lane),
            runtime,
            client,
            config,
        ))
    }

    /// The embedded twin's operator runs `mutant` from the next start on (refused on a
    /// cluster when the run starts: a cluster runs its own operator).
    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.mutant = mutant;
        self
    }

    /// What this target writes to: the embedded twin's `http://127.0.0.1:PORT`, or the
    /// cluster's server and context.
    pub fn endpoint(&self) -> String {
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

    /// Whether this target writes to a cluster (the live tier).
    pub fn on_cluster(&self) -> bool {
        matches!(self.backend, Backend::Cluster(_))
    }

    /// Gate-3 verdicts this target read back from Workloads on the wire, agreeing or not.
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

    /// The fewest requests the last scenario [`ApiTarget::judge`] wrote needed: every write
    /// its mocks took (creates, `/status` writes, patches, deletes) plus one list of each
    /// observed kind per write step. What was served beyond it is the client's overhead
    /// (watches, retries, confirmations, teardown).
    pub fn minimum_requests(&self) -> u64 {
        self.needed.load(Ordering::Relaxed)
    }

    /// The events this target can step: those before the first settings flip
    /// (`AwarenessFlip`, `MixingFlip`: the operator's flags are fixed when it starts); on a
    /// cluster also only those before the first `JointTimeout`, as the bound passing is 30
    /// minutes of a clock only the twin lets a client move (the live tier stops checking
    /// there, never fakes it).
    pub fn steppable<'e>(&self, events: &'e [Event]) -> &'e [Event] {
        let on_cluster = self.on_cluster();
        let end = events
            .iter()
            .position(|e| {
                e.flips_setting() || (on_cluster && matches!(e, Event::JointTimeout { .. }))
            })
            .unwrap_or(events.len());
        &events[..end]
    }

    /// Steps `s` (its [`ApiTarget::steppable`] events) with the embedded twin's operator
    /// mutated by `mutant`, and diffs every write step against the unmutated model. On a
    /// cluster, `s` is localized first and a divergence counts only if a re-run from a clean
    /// state diverges again ([`ApiError::Flaky`] otherwise).
    pub fn judge(
        &mut self,
        s: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<Option<Divergence>, ApiError> {
        let kept = std::mem::replace(&mut self.mutant, mutant);
        let first = self.attempt(s);
        self.mutant = kept;
        let Some(first) = first? else {
            return Ok(None);
        };
        if !self.on_cluster() {
            return Ok(Some(first));
        }
        match self.attempt(s)? {
            Some(_) => Ok(Some(first)),
            None => Err(ApiError::Flaky(first)),
        }
    }

    /// One attempt: `s` stepped through [`step_scenario`], then the run ended whatever
    /// happened (on a cluster torn down; a panic is re-raised after it).
    fn attempt(&mut self, s: &Scenario) -> Result<Option<Divergence>, ApiError> {
        let events = self.steppable(&s.events);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            step_scenario::<Divergence>(self, s, events, |_| None)
        }));
        let ended = self.end_attempt();
        match outcome {
            Err(panic) => resume_unwind(panic),
            Ok(outcome) => {
                ended?;
                Ok(outcome?.map(|(_, d)| d))
            }
        }
    }

    /// Ends a judged attempt: its operator stopped, and on a cluster its objects torn down
    /// (the embedded twin is emptied by the next start instead, which costs no requests).
    fn end_attempt(&mut self) -> Result<(), ApiError> {
        self.pending = None;
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        if !self.on_cluster() {
            session.stop_operator();
            return Ok(());
        }
        self.runtime.block_on(self.close(session)).map(|_| ())
    }

    /// Judges `candidates` at once: on a cluster side by side, each in pools of its own (a
    /// fresh token per attempt), one attempt each (no clean re-run: a shrink confirms only its
    /// result); on the embedded twin one after another. One answer per candidate, in order.
    pub fn judge_side_by_side(
        &mut self,
        candidates: &[Scenario],
    ) -> Vec<Result<Option<Divergence>, ApiError>> {
        if !self.on_cluster() {
            return candidates.iter().map(|c| self.judge(c, None)).collect();
        }
        let this = &*self;
        this.runtime.block_on(futures::future::join_all(
            candidates.iter().map(|c| this.attempt_concurrently(c)),
        ))
    }

    fn interrupted(&self) -> Result<(), ApiError> {
        match &self.backend {
            Backend::Cluster(l) if l.lane.interrupt.load(Ordering::Relaxed) => {
                Err(ApiError::Interrupted)
            }
            _ => Ok(()),
        }
    }

    /// The run in progress, taken out while a write borrows the target.
    fn session(&mut self) -> Result<Session, ApiError> {
        self.session
            .take()
            .ok_or(ApiError::NotSteppable("no run was started"))
    }

    /// Puts the run back after a write and keeps the first divergence it converged to.
    fn keep(
        &mut self,
        session: Session,
        found: Result<Option<Divergence>, ApiError>,
    ) -> Result<(), ApiError> {
        self.session = Some(session);
        if self.pending.is_none() {
            self.pending = found?;
        }
        Ok(())
    }
}

impl Target for ApiTarget {
    fn describe(&self) -> String {
        if self.on_cluster() {
            return format!(
                "tier: live ({}; run-unique pools, only they are compared)",
                self.endpoint()
            );
        }
        let faults = self
            .config
            .faults
            .as_ref()
            .map_or(String::new(), |f| format!(", faults from seed {}", f.seed));
        let mutant = self
            .mutant
            .map_or(String::new(), |m| format!(", operator mutated by {m}"));
        format!(
            "tier: twin ({}{faults}{mutant}; no cluster contacted)",
            self.endpoint()
        )
    }

    /// Starts a run: writes `from`'s cluster (nodes before their Devices, as [`write_steps`]
    /// orders them) with the embedded operator mutated by the target's mutant, and
    /// converges. A checkpoint's published objects cannot be written into a fresh twin (its
    /// operator starts without memory), so the twin starts from the cluster alone. On a
    /// cluster, `from` and every later event are localized with one token for the run.
    fn start(&mut self, from: &Scenario) -> Result<(), ApiError> {
        self.teardown()?;
        let (mut session, start) = self.open(from)?;
        let found = self.runtime.block_on(self.write_start(&mut session, start));
        self.keep(session, found)
    }

    /// Writes one event (a joining node before and after its Devices) and converges. A
    /// settings flip (awareness, mixing) is refused: the operator's flags are fixed at start.
    fn apply(&mut self, event: &Event) -> Result<(), ApiError> {
        let mut session = self.session()?;
        let found = self.runtime.block_on(self.write_event(&mut session, event));
        self.keep(session, found)
    }

    fn divergence(&mut self) -> Result<Option<Divergence>, ApiError> {
        Ok(self.pending.take())
    }

    /// Requests served so far: the twin's own count (all verbs and resources), or on a
    /// cluster the responses this target's client received.
    fn api_calls(&self) -> u64 {
        match &self.backend {
            Backend::Embedded(twin) => twin.counters().total_requests(),
            Backend::Cluster(_) => self.client.requests(),
        }
    }

    /// Objects the run has written or the operator derived for it.
    fn objects_alive(&self) -> usize {
        self.session.as_ref().map_or(0, Session::objects)
    }

    /// Ends the run: stops its operator, deletes what the run labelled (on a cluster also
    /// what the operator derived from it) and returns how many of its objects are left.
    fn teardown(&mut self) -> Result<usize, ApiError> {
        self.pending = None;
        let Some(session) = self.session.take() else {
            return Ok(0);
        };
        self.runtime.block_on(self.close(session))
    }
}
