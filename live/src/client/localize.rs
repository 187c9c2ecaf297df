//! Making a scenario safe to mock on a shared cluster (DESIGN.md "Safety on a real cluster":
//! every mocked accelerator uses a product key unique to the run and seed, so its pools never
//! collide with a real pool or with another seed's). A [`Token`] is put into every name a pool
//! is keyed by, so everything the operator derives from the mocks carries it:
//!
//! - each device group's product and id gain `-<token>` (the aKey `nvidia-a10g` becomes
//!   `nvidia-a10g-<token>`, like the e2e suite's `nvidia-e2emock`, devices.md §2.4);
//! - each node's `kubernetes.io/arch` gains `-<token>`: pools are keyed by (CPU key, aKey, os,
//!   arch) (chain.md §10), so even a CPU-only mock forms its own pool instead of joining the
//!   cluster's collapsed CPU pool of its os/arch (whose quota real Workloads draw on);
//! - nodes and namespaces are prefixed `<token>-` (the same prefix keeps their name order, which
//!   the operator's greedy card walk follows); the system and `kube-system` namespaces keep
//!   their names: a cluster already has them, and events that would create, delete or end
//!   them are left out;
//! - a submitted Workload's LocalQueue is the entrance of the same pool in the localized
//!   world, found by pairing the two worlds' InstanceTypes on their spec.
//!
//! The model judges the localized scenario too, so model and cluster see the same input.

use model::cluster::{Cluster, Node};
use model::derive::{Derived, Deriver};
use model::events::{Event, World};
use model::labels::{ARCH, HOSTNAME, KUBE_SYSTEM};
use model::nodefeature::{fnv1a64_hex, local_queue_name};
use model::scenario::Scenario;

/// What one seed's mocks carry in every pool key: `vfy` and six hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Token(String);

impl Token {
    /// The token of attempt `attempt` on lane `lane` of run `run` (each attempt gets fresh
    /// pools: the InstanceTypes a run leaves behind are removed only after their flavors go).
    pub fn new(run: &str, lane: usize, attempt: u64) -> Token {
        let hash = fnv1a64_hex(&format!("{run}/{lane}/{attempt}"));
        Token(format!("vfy{}", &hash[..6]))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token of a localized run's label value `<run>.<token>` (`None` for other runs).
    pub fn of_run(run: &str) -> Option<Token> {
        let (_, last) = run.rsplit_once('.')?;
        let hex = last.strip_prefix("vfy")?;
        (hex.len() == 6 && hex.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| Token(last.to_string()))
    }

    /// Whether `name` (an object name or `namespace/name`) carries this token.
    pub fn marks(&self, name: &str) -> bool {
        name.contains(self.0.as_str())
    }

    /// Whether a LocalQueue (as JSON) fronts one of the pools this token keys: its
    /// `spec.clusterQueue` carries it (any namespace may hold an entrance of a run's pool).
    pub fn fronts(&self, local_queue: &serde_json::Value) -> bool {
        local_queue
            .pointer("/spec/clusterQueue")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|q| self.marks(q))
    }

    fn suffixed(&self, s: &str) -> String {
        format!("{s}-{}", self.0)
    }

    fn prefixed(&self, s: &str) -> String {
        format!("{}-{s}", self.0)
    }
}

/// `scenario` with every pool key, node and namespace made unique by `token` (module doc).
/// Expectations are dropped: the live tiers compare the cluster with the model at every step,
/// and a case's expectations are judged on the model's own run of the original scenario.
pub fn localize(scenario: &Scenario, token: &Token) -> Scenario {
    localize_onto(scenario, token, None)
}

/// [`localize`], onto a real node when `overlay` names one ([`Localizer::onto`]).
pub fn localize_onto(
    scenario: &Scenario,
    token: &Token,
    overlay: Option<&OverlayNode>,
) -> Scenario {
    let mut localizer = Localizer::onto(scenario, token, overlay);
    let events = scenario
        .events
        .iter()
        .filter_map(|e| localizer.event(e))
        .collect();
    Scenario {
        name: scenario.name.clone(),
        description: scenario.description.clone(),
        seed: scenario.seed,
        mutant: scenario.mutant.clone(),
        cluster: localizer.cluster.clone(),
        events,
        expect: Vec::new(),
        published: None,
    }
}

/// A real node a run mocks onto instead of a fake one (`--overlay-node`, the e2e suite's way:
/// devices.md §2.4 "Choosing the node"): its own name, labels, annotations and capacity are
/// kept, only its NodeFeature and Devices are mocked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlayNode {
    pub name: String,
    pub labels: model::labels::Labels,
    pub annotations: model::labels::Labels,
    pub cpu_millis: u64,
}

/// [`localize`] one event at a time (a soak's stream): the original and the localized world
/// move together, so each Workload's queue is found in the world it is submitted to.
pub struct Localizer {
    token: Token,
    system: String,
    /// With `--overlay-node`: the real node, and the scenario node it stands for.
    overlay: Option<(OverlayNode, String)>,
    /// The localized starting cluster.
    pub cluster: Cluster,
    original: World,
    local: World,
}

impl Localizer {
    pub fn new(scenario: &Scenario, token: &Token) -> Localizer {
        Localizer::onto(scenario, token, None)
    }

    /// [`Localizer::new`], onto a real node when `overlay` names one: the scenario's first
    /// node with Devices (else its first node) becomes that node with its own identity and
    /// the scenario's cards; other nodes, and nodes joining or leaving, are left out (a real
    /// node is never created, changed or deleted).
    pub fn onto(scenario: &Scenario, token: &Token, overlay: Option<&OverlayNode>) -> Localizer {
        let system = scenario.cluster.settings.system_namespace.clone();
        let mut cluster = scenario.cluster.clone();
        let overlay = overlay.and_then(|real| {
            let stand_in = cluster
                .nodes
                .iter()
                .find(|n| n.devices.is_some())
                .or(cluster.nodes.first())?;
            Some((real.clone(), stand_in.name.clone()))
        });
        cluster.nodes = match &overlay {
            Some((real, stand_in)) => cluster
                .nodes
                .iter()
                .filter(|n| &n.name == stand_in)
                .map(|n| onto_real(n, real, token))
                .collect(),
            None => cluster.nodes.iter().map(|n| node(n, token)).collect(),
        };
        for ns in &mut cluster.namespaces {
            if ns.name == system || ns.name == KUBE_SYSTEM {
                ns.terminating = false;
            } else {
                ns.name = token.prefixed(&ns.name);
            }
        }
        for it in &mut cluster.instance_types {
            it.name = token.suffixed(&it.name);
            if !it.spec.accelerator_group.is_empty() {
                it.spec.accelerator_group = token.suffixed(&it.spec.accelerator_group).into();
            }
            if !it.spec.arch.is_empty() {
                it.spec.arch = token.suffixed(&it.spec.arch).into();
            }
        }
        Localizer {
            token: token.clone(),
            system,
            overlay,
            original: scenario.start(),
            local: World::with_deriver(cluster.clone(), Deriver::incremental()),
            cluster,
        }
    }

    /// The cluster's own namespaces, which keep their names.
    fn kept(&self, ns: &str) -> bool {
        ns == self.system || ns == KUBE_SYSTEM
    }

    fn namespace(&self, ns: &str) -> String {
        if self.kept(ns) {
            ns.to_string()
        } else {
            self.token.prefixed(ns)
        }
    }

    /// `event` localized (`None`: left out on a live cluster), both worlds moved past it.
    pub fn event(&mut self, event: &Event) -> Option<Event> {
        let token = &self.token;
        let overlay = self.overlay.as_ref();
        let mapped = match event {
            Event::NodeJoin { .. } | Event::NodeLeave { .. } if overlay.is_some() => None,
            Event::NodeJoin { node: n } => Some(Event::NodeJoin {
                node: node(n, token),
            }),
            Event::NodeLeave { name } => Some(Event::NodeLeave {
                name: token.prefixed(name),
            }),
            Event::CardFamily {
                node,
                card,
                capability,
            } => match overlay {
                Some((real, stand_in)) if node == stand_in => Some(Event::CardFamily {
                    node: real.name.clone(),
                    card: card.clone(),
                    capability: capability.clone(),
                }),
                Some(_) => None,
                None => Some(Event::CardFamily {
                    node: token.prefixed(node),
                    card: card.clone(),
                    capability: capability.clone(),
                }),
            },
            Event::Submit { workload } => {
                let mut w = workload.clone();
                w.namespace = self.namespace(&w.namespace);
                w.queue = entrance_in(
                    &self.original.observe(),
                    &self.local.observe(),
                    workload,
                    token,
                    overlay.is_some(),
                )
                .unwrap_or_else(|| w.queue.clone());
                Some(Event::Submit { workload: w })
            }
            Event::Finish {
                namespace: ns,
                name,
            } => Some(Event::Finish {
                namespace: self.namespace(ns),
                name: name.clone(),
            }),
            Event::NamespaceCreate { name } | Event::NamespaceDelete { name }
                if self.kept(name) =>
            {
                None
            }
            Event::NamespaceCreate { name } => Some(Event::NamespaceCreate {
                name: self.namespace(name),
            }),
            Event::NamespaceDelete { name } => Some(Event::NamespaceDelete {
                name: self.namespace(name),
            }),
            Event::AwarenessFlip => Some(Event::AwarenessFlip),
            Event::MixingFlip => Some(Event::MixingFlip),
            Event::JointTimeout {
                namespace,
                deployment,
            } => Some(Event::JointTimeout {
                namespace: self.namespace(namespace),
                deployment: deployment.clone(),
            }),
        };
        self.original.apply(event);
        if let Some(e) = &mapped {
            self.local.apply(e);
        }
        mapped
    }
}

/// The real node `real` standing in for scenario node `n`: its identity, `n`'s cards (their
/// groups made unique by `token`).
fn onto_real(n: &Node, real: &OverlayNode, token: &Token) -> Node {
    let mut out = Node {
        name: real.name.clone(),
        labels: real.labels.clone(),
        annotations: real.annotations.clone(),
        cpu_millis: real.cpu_millis,
        deleting: false,
        devices: n.devices.clone(),
        network: n.network.clone(),
    };
    suffix_groups(&mut out, token);
    out
}

fn suffix_groups(n: &mut Node, token: &Token) {
    if let Some(devices) = &mut n.devices {
        for g in &mut devices.groups {
            g.name = token.suffixed(&g.name);
            g.id = token.suffixed(&g.id);
        }
    }
}

/// A node with its name, hostname, arch and device groups made unique by `token`.
fn node(n: &Node, token: &Token) -> Node {
    let mut n = n.clone();
    let old = n.name.clone();
    n.name = token.prefixed(&old);
    if n.labels.get(HOSTNAME).is_some_and(|h| *h == old) {
        n.labels.insert(HOSTNAME.into(), n.name.as_str().into());
    }
    if let Some(arch) = n.labels.get(ARCH).cloned() {
        n.labels.insert(ARCH.into(), token.suffixed(&arch).into());
    }
    suffix_groups(&mut n, token);
    n
}

/// The LocalQueue `w` must go to in the localized world: the entrance of the pool whose
/// InstanceType pairs with the one fronting `w.queue` in the original world. `None` when
/// `w.queue` fronts no pool there (the Workload then names a queue that does not exist).
/// Onto a real node (`overlay`) only the accelerator key pairs pools: the node's own CPU key,
/// os and arch replace the scenario's.
fn entrance_in(
    original: &Derived,
    local: &Derived,
    w: &model::workload::Workload,
    token: &Token,
    overlay: bool,
) -> Option<String> {
    let cluster_queue = original
        .local_queues
        .iter()
        .find(|q| q.namespace == w.namespace && q.name == w.queue)
        .map(|q| q.cluster_queue.to_string())
        .or_else(|| {
            original
                .instance_types
                .iter()
                .find(|it| local_queue_name(&it.name) == w.queue)
                .map(|it| it.name.to_string())
        })?;
    let pool = original
        .instance_types
        .iter()
        .find(|it| it.name == cluster_queue)?;
    // a pool is keyed by (CPU key, aKey, os, arch) (chain.md §10); display names and
    // descriptions may spell the product and so differ
    let key = |spec: &model::objects::InstanceTypeSpec| {
        (
            spec.general_group.clone(),
            spec.accelerator_group.clone(),
            spec.acceleratable,
            spec.os.clone(),
            spec.arch.clone(),
        )
    };
    let mut wanted = key(&pool.spec);
    if !wanted.1.is_empty() {
        wanted.1 = token.suffixed(&wanted.1).into();
    }
    wanted.4 = token.suffixed(&wanted.4).into();
    local
        .instance_types
        .iter()
        .find(|it| {
            let k = key(&it.spec);
            match overlay {
                true => (&k.1, k.2) == (&wanted.1, wanted.2),
                false => k == wanted,
            }
        })
        .map(|it| local_queue_name(&it.name))
}

/// Whether every pool key of `cluster` carries `token` (what [`localize`] guarantees).
pub fn is_localized(cluster: &Cluster, token: &Token) -> bool {
    cluster.nodes.iter().all(|n| {
        token.marks(&n.name)
            && n.labels.get(ARCH).is_none_or(|a| token.marks(a))
            && n.devices
                .iter()
                .flat_map(|d| &d.groups)
                .all(|g| token.marks(&g.id))
    })
}

impl super::Observed {
    /// Only the objects of the pools `token` keys (a live cluster holds others): Nodes and
    /// pool objects whose name carries it, LocalQueues in the run's namespaces (the operator
    /// also fronts the run's pools in the cluster's own namespaces; those are not compared).
    pub fn scoped_to(&self, token: &Token) -> super::Observed {
        let mut out = super::Observed::default();
        for (kind, objects) in &self.objects {
            let kept: std::collections::BTreeMap<String, serde_json::Value> = objects
                .iter()
                .filter(|(id, o)| {
                    // a run namespace also holds the entrances of the cluster's own pools
                    token.marks(id) && (*kind != oracle::ObjectKind::LocalQueue || token.fronts(o))
                })
                .map(|(id, o)| (id.clone(), o.clone()))
                .collect();
            if !kept.is_empty() {
                out.objects.insert(*kind, kept);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_derived_object_of_a_localized_walkthrough_carries_the_token() {
        let token = Token::new("r1", 0, 0);
        let s = Scenario {
            cluster: model::examples::walkthrough(),
            ..Scenario::default()
        };
        let local = localize(&s, &token);
        assert!(is_localized(&local.cluster, &token));
        let derived = World::new(local.cluster.clone()).observe();
        assert!(!derived.instance_types.is_empty());
        for name in derived
            .resource_flavors
            .iter()
            .map(|f| f.name.as_str())
            .chain(derived.instance_types.iter().map(|i| i.name.as_str()))
            .chain(derived.cluster_queues.iter().map(|q| q.name.as_str()))
        {
            assert!(
                token.marks(name),
                "{name} does not carry {}",
                token.as_str()
            );
        }
        for q in &derived.local_queues {
            assert!(token.marks(&q.namespace), "{}/{}", q.namespace, q.name);
        }
        // the same shape: as many objects of each kind as the original derivation
        let original = World::new(s.cluster.clone()).observe();
        assert_eq!(
            original.resource_flavors.len(),
            derived.resource_flavors.len()
        );
        assert_eq!(original.instance_types.len(), derived.instance_types.len());
        assert_eq!(original.local_queues.len(), derived.local_queues.len());
    }

    #[test]
    fn tokens_differ_by_run_lane_and_attempt() {
        let a = Token::new("r1", 0, 0);
        assert_ne!(a, Token::new("r2", 0, 0));
        assert_ne!(a, Token::new("r1", 1, 0));
        assert_ne!(a, Token::new("r1", 0, 1));
        assert_eq!(a.as_str().len(), 9);
        assert_eq!(Token::of_run(&format!("run-1.{}", a.as_str())), Some(a));
        assert_eq!(Token::of_run("verify-fuzz"), None);
        assert_eq!(Token::of_run("a.vfyzz"), None);
    }

    #[test]
    fn onto_a_real_node_only_its_cards_are_the_scenarios() {
        let token = Token::new("r1", 0, 0);
        let mut s = Scenario {
            cluster: model::examples::walkthrough(),
            ..Scenario::default()
        };
        let leaving = s.cluster.nodes[0].name.clone();
        s.events = vec![Event::NodeLeave { name: leaving }];
        let real = OverlayNode {
            name: "real-0".into(),
            labels: model::labels::from_pairs(&[(ARCH, "amd64")]),
            annotations: Default::default(),
            cpu_millis: 4000,
        };
        let local = localize_onto(&s, &token, Some(&real));
        assert_eq!(local.cluster.nodes.len(), 1);
        let node = &local.cluster.nodes[0];
        assert_eq!(
            (node.name.as_str(), &node.labels, node.cpu_millis),
            ("real-0", &real.labels, 4000)
        );
        let stand_in = s
            .cluster
            .nodes
            .iter()
            .find(|n| n.devices.is_some())
            .expect("a node with cards");
        let groups = |n: &Node| {
            n.devices
                .iter()
                .flat_map(|d| &d.groups)
                .map(|g| g.id.clone())
                .collect::<Vec<_>>()
        };
        let wanted: Vec<String> = groups(stand_in)
            .iter()
            .map(|id| format!("{id}-{}", token.as_str()))
            .collect();
        assert_eq!(groups(node), wanted);
        assert!(
            local.events.is_empty(),
            "a real node neither joins nor leaves"
        );
    }
}
