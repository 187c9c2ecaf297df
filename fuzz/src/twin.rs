//! The twin tier of `verify fuzz` (DESIGN.md "Three tiers"): a seed's scenario is mocked into an
//! embedded twin through the live tier's kube-rs client, quiesced, observed and diffed against
//! the model at every step of its event sequence. The twin's reference operator runs with the
//! mutant, if any, so what catches it is the full HTTP path.
//!
//! One twin per worker thread; between seeds its store is replaced by an empty one and its
//! operator restarted (a fresh operator has no memory of the previous seed's derivation).

use std::time::Duration;

use live::client::{self, Client, Quiescence, Quiescer, RunId};
use live::twin::operator::{run_operator, OperatorHandle};
use live::twin::server::TwinHandle;
use live::twin::store::{Store, StoreConfig};
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
    /// Faults the twin injects into the client's requests (the client retries them).
    pub faults: Option<live::twin::faults::FaultConfig>,
}

impl Default for TwinConfig {
    fn default() -> Self {
        TwinConfig {
            window: Duration::from_millis(40),
            confirm_window: Duration::from_millis(500),
            budget: Duration::from_secs(30),
            shrink_steps: 24,
            faults: None,
        }
    }
}

/// Why the twin could not judge a seed (exit 3: inconclusive, not a failure).
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    #[error("the embedded twin: {0}")]
    Infrastructure(String),
    #[error("at {step}: {reason}")]
    NoQuiescence { step: String, reason: String },
}

/// How the run writes a scenario, and what the model is asked at each quiesced step. The
/// Device Manager reports a node's Devices after the node exists, and the operator derives in
/// between (a node without Devices is a CPU node, and what it authors is create-only); so
/// every node (initial or joining) is written first without its Devices, then with them, and
/// the model sees the same two states. Returns the initial cluster without Devices and the
/// labelled steps after it; events after an `AwarenessFlip` are left out (the operator's flags
/// are fixed when it starts).
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
            Event::AwarenessFlip => break,
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
    pub table: String,
}

impl TwinDivergence {
    pub fn message(&self) -> String {
        format!(
            "the twin diverges from the model after {}:\n{}",
            self.step, self.table
        )
    }
}

/// One worker's twin: the served store, its tokio runtime for the client, and the client.
pub struct TwinRunner {
    twin: TwinHandle,
    runtime: tokio::runtime::Runtime,
    client: Client,
    config: TwinConfig,
    /// A step-by-step run in progress ([`TwinRunner::begin`]).
    session: Option<Session>,
}

/// A step-by-step run: its id, the model world of what was written, its watcher and operator.
struct Session {
    run: RunId,
    world: World,
    quiescer: Quiescer,
    operator: OperatorHandle,
}

fn empty_store() -> Store {
    let mut store = Store::new(StoreConfig::default());
    live::crd::install_validators(&mut store);
    store
}

impl TwinRunner {
    /// Serves a twin on a free loopback port and connects the client to it.
    pub fn start(config: TwinConfig) -> Result<TwinRunner, TwinError> {
        let infra = |e: String| TwinError::Infrastructure(e);
        let served = live::twin::server::ServeConfig {
            faults: config.faults.clone(),
        };
        let twin = live::twin::server::spawn_configured(None, empty_store(), served)
            .map_err(|e| infra(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| infra(e.to_string()))?;
        let yaml = live::twin::kubeconfig::kubeconfig_yaml(twin.url(), "verify-twin");
        let client = runtime
            .block_on(Client::from_kubeconfig_yaml(&yaml, "verify-twin"))
            .map_err(|e| infra(e.to_string()))?;
        Ok(TwinRunner {
            twin,
            runtime,
            client,
            config,
            session: None,
        })
    }

    /// `127.0.0.1:PORT` of this worker's twin.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.twin.addr()
    }

    /// Runs `s` through the twin (its operator mutated by `mutant`) and diffs every step
    /// against the unmutated model. Steps after an `AwarenessFlip` are not checked: the
    /// operator's flags are fixed when it starts.
    pub fn judge(
        &self,
        s: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let run =
            RunId::new("verify-fuzz").map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        let store = self.twin.store();
        store.write(|st| *st = empty_store());
        let mut settings = s.cluster.settings.clone();
        settings.mutant = mutant;
        let operator: OperatorHandle =
            run_operator(store, settings).map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        let outcome = self.runtime.block_on(self.steps(s, &run));
        operator.stop();
        outcome
    }

    async fn steps(&self, s: &Scenario, run: &RunId) -> Result<Option<TwinDivergence>, TwinError> {
        let client = &self.client;
        let api = |e: client::ClientError| TwinError::Infrastructure(e.to_string());
        let cluster = client::mocked_cluster(&s.cluster, run);
        let (bare, steps) = write_steps(&cluster, &s.events, run);
        let mut world = World::new(bare.clone());
        let mut quiescer = Quiescer::new(client, run);
        client.mock(&bare, run).await.map_err(api)?;
        if let Some(d) = self
            .converge(&mut quiescer, &world, "the nodes, before their Devices")
            .await?
        {
            return Ok(Some(d));
        }
        for (label, events) in &steps {
            let before = world.cluster().clone();
            for event in events {
                world.apply(event);
            }
            client
                .sync(Some(&before), world.cluster(), run)
                .await
                .map_err(api)?;
            if let Some(d) = self.converge(&mut quiescer, &world, label).await? {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }

    /// Starts a step-by-step run (a soak): writes `start`'s cluster (nodes before their
    /// Devices, as [`write_steps`] orders them) with the operator mutated by `mutant`, and
    /// converges. Later events go through [`TwinRunner::step`]; [`TwinRunner::end`] tears down.
    pub fn begin(
        &mut self,
        start: &Scenario,
        mutant: Option<Mutant>,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        self.end()?;
        let run =
            RunId::new("verify-soak").map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        let store = self.twin.store();
        store.write(|st| *st = empty_store());
        let mut settings = start.cluster.settings.clone();
        settings.mutant = mutant;
        let operator =
            run_operator(store, settings).map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        let cluster = client::mocked_cluster(&start.cluster, &run);
        let (bare, steps) = write_steps(&cluster, &[], &run);
        let world = World::new(bare.clone());
        let quiescer = Quiescer::new(&self.client, &run);
        self.session = Some(Session {
            run,
            world,
            quiescer,
            operator,
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
    /// and converges. An awareness flip is refused: the operator's flags are fixed at start.
    pub fn step(&mut self, event: &Event) -> Result<Option<TwinDivergence>, TwinError> {
        if matches!(event, Event::AwarenessFlip) {
            return Err(TwinError::Infrastructure(
                "an awareness flip cannot be written: the operator's flags are fixed at start"
                    .into(),
            ));
        }
        let run = self.session_run()?;
        let (_, steps) = write_steps(
            &model::Cluster::default(),
            std::slice::from_ref(event),
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

    /// Requests the twin has served so far (all verbs and resources).
    pub fn api_calls(&self) -> u64 {
        self.twin.counters().total_requests()
    }

    /// Ends a step-by-step run: stops its operator, deletes what the run labelled and returns
    /// how many of its objects are left (0 when clean).
    pub fn end(&mut self) -> Result<usize, TwinError> {
        let Some(session) = self.session.take() else {
            return Ok(0);
        };
        session.operator.stop();
        let teardown = self
            .runtime
            .block_on(self.client.teardown(&session.run))
            .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
        Ok(teardown.leftovers.len())
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
        let session = self
            .session
            .as_mut()
            .ok_or_else(|| TwinError::Infrastructure("no step-by-step run was begun".into()))?;
        let before = session.world.cluster().clone();
        for event in events {
            session.world.apply(event);
        }
        let after = session.world.cluster().clone();
        let run = session.run.clone();
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
        let outcome =
            self.runtime
                .block_on(self.converge(&mut session.quiescer, &session.world, label));
        self.session = Some(session);
        outcome
    }

    /// Waits for quiescence and diffs; a difference is confirmed after a longer quiet window.
    async fn converge(
        &self,
        quiescer: &mut Quiescer,
        world: &World,
        step: &str,
    ) -> Result<Option<TwinDivergence>, TwinError> {
        let expected = client::expected(&world.observe());
        let mut differences = Vec::new();
        for window in [self.config.window, self.config.confirm_window] {
            if let Quiescence::Inconclusive { reason } =
                quiescer.wait(window, self.config.budget).await
            {
                return Err(TwinError::NoQuiescence {
                    step: step.to_string(),
                    reason,
                });
            }
            let observed = self
                .client
                .observe()
                .await
                .map_err(|e| TwinError::Infrastructure(e.to_string()))?;
            differences = client::diff(&expected, &observed);
            if differences.is_empty() {
                return Ok(None);
            }
        }
        Ok(Some(TwinDivergence {
            step: step.to_string(),
            table: oracle::render_table(&differences),
        }))
    }
}
