//! The chain's dynamics: a stream of events over a cluster and the world they leave behind
//! (chain.md §12 events; admission.md §16). Each event changes the shape or a workload's state;
//! the objects are then re-derived at quiescence from where the previous quiescence left them,
//! so create-only InstanceTypes persist and a drained queue is not mistaken for a new one.

use serde::{Deserialize, Serialize};

use crate::cluster::{Cluster, ExistingInstanceType, Namespace, Node};
use crate::derive::{derive_after, Derived};
use crate::devices::Capability;
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
    /// The joint check's bound (30 min of Pending) passes for a ModelDeployment's held
    /// replicas; the model has no clock (model_deployment_joint_admission.go `heldPast`).
    JointTimeout {
        namespace: String,
        deployment: String,
    },
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

/// A cluster moving through events, at quiescence after each.
#[derive(Clone, Debug)]
pub struct World {
    pub admission: AdmissionState,
}

impl World {
    pub fn new(cluster: Cluster) -> Self {
        let mut world = World {
            admission: AdmissionState::new(cluster),
        };
        world.remember_authored();
        world
    }

    /// A world resuming from objects published at an earlier quiescence (a soak checkpoint),
    /// so what the cluster alone does not say — a drained queue's stop policy and migration
    /// phase — carries over (chain.md §10.3).
    pub fn resume(cluster: Cluster, published: Derived) -> Self {
        let mut world = World::new(cluster);
        world.admission.derived = published;
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
                Err(why) => Effect::Ignored { why },
            },
            Event::NamespaceCreate { name } => self.namespace_create(name),
            Event::NamespaceDelete { name } => self.namespace_delete(name),
            Event::AwarenessFlip => {
                let s = &mut self.admission.cluster.settings;
                s.aware_cpu_manufacturer = !s.aware_cpu_manufacturer;
                self.reshape()
            }
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

    /// Re-derives the structure after a shape change, from the last quiescence.
    fn reshape(&mut self) -> Effect {
        let next = derive_after(self.cluster(), Some(&self.admission.derived));
        self.admission.derived = next;
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
                .map(String::as_str)
                == Some("true")
        }) {
            if !known.iter().any(|k| k.name == it.name) {
                known.push(ExistingInstanceType {
                    name: it.name.clone(),
                    spec: it.spec.clone(),
                    derived_from_node: true,
                });
            }
        }
    }
}
