//! The chain's dynamics: a stream of events over a cluster and the world they leave behind
//! (chain.md §12 events; admission.md §16). Each event changes the shape or a workload's state;
//! the objects are then re-derived at quiescence from where the previous quiescence left them,
//! so create-only InstanceTypes persist and a drained queue is not mistaken for a new one.

use crate::labels::Text;
use serde::{Deserialize, Serialize};

use crate::cluster::{Cluster, ExistingInstanceType, Namespace, Node};
use crate::derive::{Derived, Deriver};
use crate::devices::Capability;
use crate::flavor::{flavor_transitions, FlavorTransition};
use crate::ledger::seed;
use crate::lifecycle::{AdmissionState, Outcome};
use crate::workload::Workload;

/// One thing that happens to the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A node joins (or is replaced by a node of the same name).
    NodeJoin {
        node: Node,
    },
    /// A node leaves; Workloads holding its cards are evicted.
    NodeLeave {
        name: String,
    },
    /// A free card changes family (MIG on/off) and the Device Manager restarts to re-detect
    /// it: new capability, ledger reseeded (chain.md §12 "Card changes family").
    CardFamily {
        node: String,
        card: String,
        capability: Capability,
    },
    /// A Workload is submitted to its LocalQueue.
    Submit {
        workload: Workload,
    },
    /// An admitted Workload finishes and releases what it held.
    Finish {
        namespace: String,
        name: String,
    },
    NamespaceCreate {
        name: String,
    },
    NamespaceDelete {
        name: String,
    },
    /// `instance-type-aware-cpu-manufacturer` flips.
    AwarenessFlip,
    /// `instance-type-mixed-on-node` flips: CPU flavors are recreated or retired, and a
    /// queue losing a flavor it holds quota on drains by migration ([`World::flip_mixing`]).
    MixingFlip,
    /// The joint check's bound (30 min of Pending) passes for a ModelDeployment's held
    /// replicas; the model has no clock (model_deployment_joint_admission.go `heldPast`).
    JointTimeout {
        namespace: String,
        deployment: String,
    },
}

impl Event {
    /// Whether the event flips one of the operator's settings (`instance-type-aware-cpu-
    /// manufacturer`, `instance-type-mixed-on-node`): an operator reads its flags when it
    /// starts, so a tier driving a running operator cannot write it.
    pub fn flips_setting(&self) -> bool {
        matches!(self, Event::AwarenessFlip | Event::MixingFlip)
    }
}

/// What an event did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Effect {
    /// The shape changed and the objects were re-derived.
    Reshaped,
    /// A submitted Workload's outcome.
    Judged { outcome: Outcome },
    /// A finished Workload released its hold.
    Released,
    /// Workloads evicted by the event (their holds were on a node that left).
    Evicted { workloads: Vec<String> },
    /// The event could not apply to this world (names what was missing); the world is unchanged.
    Ignored { why: String },
    /// Workloads the joint check parked (deactivated, their quota released).
    Parked { workloads: Vec<String> },
}

/// The flavors a queue loses through `transitions`: deleted for a recreation, retired, or a
/// retired sibling (a postponed deletion keeps the flavor for now). A queue holding quota on
/// one of them migrates (node_queue.go migration; chain.md §10.3(b)).
pub fn dropped_flavors(transitions: &[FlavorTransition]) -> Vec<String> {
    transitions
        .iter()
        .filter_map(|t| match t {
            FlavorTransition::Recreated { flavor }
            | FlavorTransition::Retired { flavor, .. }
            | FlavorTransition::SiblingRetired { flavor, .. } => Some(flavor.to_string()),
            FlavorTransition::Postponed { .. } => None,
        })
        .collect()
}

/// The flavor reconciler's transitions from the quiescence `before` to `after`
/// ([`flavor_transitions`] over the nodes of `after`).
pub fn transitions_between(before: &Derived, after: &Derived) -> Vec<FlavorTransition> {
    flavor_transitions(
        &before.resource_flavors,
        &before.cluster_queues,
        &after.resource_flavors,
        after.nodes.iter().map(|n| (n.name.as_str(), &n.labels)),
    )
}

/// The flavors a mixing flip from the quiescence `before` to `after` drops.
pub fn flip_dropped_flavors(before: &Derived, after: &Derived) -> Vec<String> {
    dropped_flavors(&transitions_between(before, after))
}

/// A cluster moving through events, at quiescence after each.
#[derive(Clone, Debug)]
pub struct World {
    pub admission: AdmissionState,
}

impl World {
    pub fn new(cluster: Cluster) -> Self {
        Self::with_deriver(cluster, Deriver::plain())
    }

    /// [`World::new`], deriving through `deriver` now and after every event.
    pub fn with_deriver(cluster: Cluster, deriver: Deriver) -> Self {
        let derived = deriver.derive(&cluster);
        Self::with_derivation(cluster, derived, deriver)
    }

    /// [`World::with_deriver`] given `derived`, the derivation of `cluster` by `deriver` the
    /// caller already made: the same world, one derivation fewer.
    pub fn with_derivation(cluster: Cluster, derived: Derived, deriver: Deriver) -> Self {
        let mut world = World {
            admission: AdmissionState::with_derivation(cluster, derived, deriver),
        };
        world.remember_authored();
        world
    }

    /// A world resuming from objects published at an earlier quiescence (a soak checkpoint),
    /// so what the cluster alone does not say — a drained queue's stop policy and migration
    /// phase — carries over (chain.md §10.3).
    pub fn resume(cluster: Cluster, published: Derived) -> Self {
        Self::resume_through(cluster, published, Deriver::plain())
    }

    /// [`World::resume`], deriving through `deriver` now and after every event.
    pub fn resume_through(cluster: Cluster, published: Derived, deriver: Deriver) -> Self {
        let mut world = World::with_deriver(cluster, deriver);
        world.admission.derived = published.into();
        world.remember_authored();
        world
    }

    pub fn cluster(&self) -> &Cluster {
        &self.admission.cluster
    }

    /// The objects as published now (views follow the ledger).
    pub fn observe(&self) -> Derived {
        self.admission.observe()
    }

    /// Applies one event and returns what it did.
    pub fn apply(&mut self, event: &Event) -> Effect {
        match event {
            Event::NodeJoin { node } => self.node_join(node),
            Event::NodeLeave { name } => self.node_leave(name),
            Event::CardFamily {
                node,
                card,
                capability,
            } => self.card_family(node, card, capability),
            Event::Submit { workload } => Effect::Judged {
                outcome: self.admission.submit(workload),
            },
            Event::Finish { namespace, name } => match self.admission.finish(namespace, name) {
                Ok(()) => Effect::Released,
                Err(e) => Effect::Ignored { why: e.to_string() },
            },
            Event::NamespaceCreate { name } => self.namespace_create(name),
            Event::NamespaceDelete { name } => self.namespace_delete(name),
            Event::AwarenessFlip => {
                let s = &mut self.admission.cluster.settings;
                s.aware_cpu_manufacturer = !s.aware_cpu_manufacturer;
                self.reshape()
            }
            Event::MixingFlip => self.flip_mixing().0,
            Event::JointTimeout {
                namespace,
                deployment,
            } => {
                let parked = self.admission.joint_timeout(namespace, deployment);
                if parked.is_empty() {
                    Effect::Ignored {
                        why: format!(
                            "deployment {namespace}/{deployment} has no held replica to park (Ready, assembling or absent)"
                        ),
                    }
                } else {
                    Effect::Parked { workloads: parked }
                }
            }
        }
    }

    fn node_join(&mut self, node: &Node) -> Effect {
        let evicted = self.evict_on(&node.name);
        let nodes = &mut self.admission.cluster.nodes;
        match nodes.iter_mut().find(|n| n.name == node.name) {
            Some(existing) => *existing = node.clone(),
            None => nodes.push(node.clone()),
        }
        self.reshape_evicting(evicted)
    }

    fn node_leave(&mut self, name: &str) -> Effect {
        if !self.cluster().nodes.iter().any(|n| n.name == name) {
            return Effect::Ignored {
                why: format!("no node {name}"),
            };
        }
        let evicted = self.evict_on(name);
        self.admission.cluster.nodes.retain(|n| n.name != name);
        self.reshape_evicting(evicted)
    }

    /// A card changes family only while nothing holds it (the operator's mode switch needs an
    /// idle card); its ledger is reseeded for the new capability.
    fn card_family(&mut self, node: &str, card: &str, capability: &Capability) -> Effect {
        let held = self
            .admission
            .holds
            .values()
            .any(|h| h.charges.iter().any(|c| c.node == node && c.card == card));
        if held {
            return Effect::Ignored {
                why: format!("card {card} on {node} is in use"),
            };
        }
        let found = self
            .admission
            .cluster
            .nodes
            .iter_mut()
            .find(|n| n.name == node)
            .and_then(|n| n.devices.as_mut())
            .and_then(|d| {
                d.groups
                    .iter_mut()
                    .flat_map(|g| g.cards.iter_mut())
                    .find(|c| c.id == card)
            });
        let Some(c) = found else {
            return Effect::Ignored {
                why: format!("no card {card} on {node}"),
            };
        };
        c.ledger = Some(seed(capability.clone()).row);
        c.capability = Some(capability.clone());
        self.admission
            .instances
            .remove(&(node.to_string(), card.to_string()));
        self.reshape()
    }

    fn namespace_create(&mut self, name: &str) -> Effect {
        let namespaces = &mut self.admission.cluster.namespaces;
        if namespaces.iter().any(|n| n.name == name) {
            return Effect::Ignored {
                why: format!("namespace {name} exists"),
            };
        }
        namespaces.push(Namespace {
            name: name.to_string(),
            terminating: false,
        });
        self.reshape()
    }

    fn namespace_delete(&mut self, name: &str) -> Effect {
        let before = self.cluster().namespaces.len();
        self.admission.cluster.namespaces.retain(|n| n.name != name);
        if self.cluster().namespaces.len() == before {
            return Effect::Ignored {
                why: format!("no namespace {name}"),
            };
        }
        self.reshape()
    }

    /// Evicts the Workloads holding a card on `node` (their Pods are gone with it).
    fn evict_on(&mut self, node: &str) -> Vec<String> {
        let victims: Vec<String> = self
            .admission
            .holds
            .iter()
            .filter(|(_, h)| h.charges.iter().any(|c| c.node == node))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &victims {
            if let Some((ns, name)) = key.split_once('/') {
                // The node is still present here, so the release is exact everywhere; a hold
                // that cannot be released is left as it is (the node's ledger leaves with it).
                let _ = self.admission.finish(ns, name);
            }
        }
        victims
    }

    fn reshape_evicting(&mut self, evicted: Vec<String>) -> Effect {
        self.reshape();
        if evicted.is_empty() {
            Effect::Reshaped
        } else {
            Effect::Evicted { workloads: evicted }
        }
    }

    /// The flavor reconciler's transitions from the current quiescence to `next`
    /// ([`flavor_transitions`] over the nodes of `next`).
    pub fn transitions_to(&self, next: &Derived) -> Vec<FlavorTransition> {
        transitions_between(&self.admission.derived, next)
    }

    /// `instance-type-mixed-on-node` flips (chain.md §6.3, §6.4, §10.3): CPU flavors whose
    /// mixing selector drifts are deleted and recreated, CPU flavors of accelerated nodes
    /// lose those contributors. A queue that so drops a flavor Kueue holds quota on migrates
    /// through HoldAndDrain, which evicts every Workload admitted to it before the plan is
    /// switched (node_queue.go migration; the settled queue is then reopened). Returns the
    /// effect and the transitions.
    pub fn flip_mixing(&mut self) -> (Effect, Vec<FlavorTransition>) {
        let s = &mut self.admission.cluster.settings;
        s.mixed_on_node = !s.mixed_on_node;
        let next = self.observe();
        let transitions = self.transitions_to(&next);
        let dropped = dropped_flavors(&transitions);
        let dropped: Vec<&str> = dropped.iter().map(String::as_str).collect();
        let victims = self.drained_by_migration(&dropped);
        for key in &victims {
            if let Some((ns, name)) = key.split_once('/') {
                // released against the structure the holds were admitted under
                let _ = self.admission.finish(ns, name);
            }
        }
        self.admission.derived = next.into();
        self.remember_authored();
        let effect = if victims.is_empty() {
            Effect::Reshaped
        } else {
            Effect::Evicted { workloads: victims }
        };
        (effect, transitions)
    }

    /// The Workloads a HoldAndDrain migration evicts: every hold on a queue that holds quota
    /// on one of the `dropped` flavors (chain.md §10.3(b)).
    fn drained_by_migration(&self, dropped: &[&str]) -> Vec<String> {
        let holds = &self.admission.holds;
        let migrating: std::collections::BTreeSet<&str> = holds
            .values()
            .filter(|h| h.quota.iter().any(|q| dropped.contains(&q.flavor.as_str())))
            .map(|h| h.queue.as_str())
            .collect();
        holds
            .iter()
            .filter(|(_, h)| migrating.contains(h.queue.as_str()))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Re-derives the structure after a shape change, from the last quiescence.
    fn reshape(&mut self) -> Effect {
        let next = self.observe();
        self.admission.derived = next.into();
        self.remember_authored();
        Effect::Reshaped
    }

    /// Derived InstanceTypes are create-only: once authored they stay (chain.md §8.4).
    fn remember_authored(&mut self) {
        let derived = &self.admission.derived;
        let known = &mut self.admission.cluster.instance_types;
        for it in derived.instance_types.iter().filter(|it| {
            it.labels
                .get(crate::labels::DERIVED_FROM_NODE)
                .map(Text::as_str)
                == Some("true")
        }) {
            if !known.iter().any(|k| k.name == it.name) {
                known.push(ExistingInstanceType {
                    name: it.name.to_string(),
                    spec: it.spec.clone(),
                    derived_from_node: true,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{walkthrough, workload};
    use crate::labels::{CPU_ONLY, TOPOLOGY_PROFILE};

    const CPU_FLAVOR: &str = "gpustack--amd-epyc-7r13-linux-amd64-16c-fnv64-87bf574bea2a4f23";

    fn cpu_pool(d: &Derived) -> Text {
        d.cluster_queues
            .iter()
            .find(|q| {
                q.resource_groups
                    .iter()
                    .flat_map(|g| &g.flavors)
                    .any(|f| f.flavor == CPU_FLAVOR)
            })
            .map(|q| q.name.clone())
            .expect("the CPU node's pool")
    }

    #[test]
    fn a_mixing_flip_recreates_the_drifted_cpu_flavor_and_retires_the_accelerated_ones() {
        let mut w = World::new(walkthrough());
        let before = w.observe();
        let (effect, transitions) = w.flip_mixing();
        assert_eq!(effect, Effect::Reshaped);
        assert!(transitions.contains(&FlavorTransition::Recreated {
            flavor: CPU_FLAVOR.into()
        }));
        let after = w.observe();
        let rf = after
            .resource_flavors
            .iter()
            .find(|rf| rf.name == CPU_FLAVOR)
            .unwrap();
        assert_eq!(rf.node_labels.get(CPU_ONLY).map(Text::as_str), Some("true"));
        // the accelerated nodes' CPU flavors lost every contributor: retired, their queues
        // had listed them
        let retired: Vec<&FlavorTransition> = transitions
            .iter()
            .filter(|t| matches!(t, FlavorTransition::Retired { .. }))
            .collect();
        assert!(!retired.is_empty());
        for t in retired {
            let FlavorTransition::Retired {
                flavor,
                referenced_by,
            } = t
            else {
                unreachable!()
            };
            assert!(!after.resource_flavors.iter().any(|rf| &rf.name == flavor));
            assert!(!referenced_by.is_empty(), "{flavor}");
            assert!(before.resource_flavors.iter().any(|rf| &rf.name == flavor));
        }
        // and back: recreated again without the pin
        let (_, back) = w.flip_mixing();
        assert!(back.contains(&FlavorTransition::Recreated {
            flavor: CPU_FLAVOR.into()
        }));
        assert_eq!(w.observe().resource_flavors, before.resource_flavors);
    }

    #[test]
    fn a_mixing_flip_drains_an_in_use_cpu_pool() {
        let mut w = World::new(walkthrough());
        let pool = cpu_pool(&w.observe());
        let wl = workload("busy", &pool, 1, &[("cpu", "1")]);
        let judged = w.apply(&Event::Submit { workload: wl });
        assert!(
            !w.admission.holds.is_empty(),
            "the CPU workload is admitted: {judged:?}"
        );
        let (effect, _) = w.flip_mixing();
        assert_eq!(
            effect,
            Effect::Evicted {
                workloads: vec!["default/busy".into()]
            }
        );
        assert!(w.admission.holds.is_empty());
        // nothing is held any more: the next flip drains nothing
        assert_eq!(w.flip_mixing().0, Effect::Reshaped);
    }

    #[test]
    fn a_profile_change_retires_the_old_siblings() {
        let before = crate::derive::derive(&walkthrough());
        let mut zoned = walkthrough();
        for n in &mut zoned.nodes {
            n.labels
                .insert("topology.kubernetes.io/zone".into(), "z1".into());
        }
        zoned.topology_sources = vec![crate::cluster::TopologySource {
            name: "zones".into(),
            levels: vec!["topology.kubernetes.io/zone".into()],
            ready: true,
            ..Default::default()
        }];
        let after = crate::derive::derive_after(&zoned, Some(&before));
        let t = flavor_transitions(
            &before.resource_flavors,
            &before.cluster_queues,
            &after.resource_flavors,
            after.nodes.iter().map(|n| (n.name.as_str(), &n.labels)),
        );
        assert_eq!(t.len(), before.resource_flavors.len(), "{t:?}");
        for (old, t) in before.resource_flavors.iter().zip(&t) {
            let kept = old.name.replace("87bf574bea2a4f23", "f7b1861ac0399767");
            assert_eq!(
                t,
                &FlavorTransition::SiblingRetired {
                    flavor: old.name.clone(),
                    kept: kept.into()
                }
            );
        }
    }

    #[test]
    fn a_node_without_a_profile_postpones_the_deletion() {
        let before = crate::derive::derive(&walkthrough());
        let mut nodes: Vec<(String, crate::labels::Labels)> = before
            .nodes
            .iter()
            .map(|n| (n.name.to_string(), n.labels.clone()))
            .collect();
        // node-cpu lost its profile label (the topology reconciler has not run yet)
        nodes[0].1.remove(TOPOLOGY_PROFILE);
        let t = flavor_transitions(
            &before.resource_flavors,
            &before.cluster_queues,
            &[],
            nodes.iter().map(|(n, l)| (n.as_str(), l)),
        );
        assert!(t.contains(&FlavorTransition::Postponed {
            flavor: CPU_FLAVOR.into(),
            node: "node-cpu".into()
        }));
        // the other flavors have no such node: retired
        assert_eq!(
            t.iter()
                .filter(|t| matches!(t, FlavorTransition::Postponed { .. }))
                .count(),
            1
        );
        assert_eq!(crate::flavor::POSTPONE_SECONDS, 10);
    }
}
