//! The stateright model of the chain's dynamics: one match arm per action, each calling the
//! one model rule that decides it (`World::apply` for shape events and finish,
//! `AdmissionState::submit` for gates 1–3 on a world that counts in-flight Workloads,
//! `ledger::charge` for the Pods landing).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use model::cluster::{Cluster, ExistingInstanceType, Namespace};
use model::derive::Derived;
use model::events::{Effect, Event, World};
use model::ledger::{charge, CardLedger};
use model::lifecycle::{workload_key, AdmissionState, CardCharge, Hold, Outcome};
use model::mutants::Mutant;
use model::workload::Workload;
use stateright::{Model, Property};

use super::palette;
use super::properties as props;
use super::state::{CardState, Fault, State, Status, Verdicts};

/// What one step does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    NodeJoin(usize),
    NodeLeave(usize),
    /// A free card changes family (MIG on/off) and the device manager restarts.
    CardFamily {
        node: usize,
        card: usize,
        mig: bool,
    },
    NamespaceCreate,
    NamespaceDelete,
    AwarenessFlip,
    /// Gates 1–3 judge Workload template `k` (quota reserved and check Ready, or a refusal);
    /// a Ready Workload is NOT charged yet (the in-flight window).
    Judge(usize),
    /// Workload `k`'s Pods land: its budgeted cards are charged on the ledger.
    Charge(usize),
    /// Workload `k` finishes and releases its cards and quota.
    Finish(usize),
}

/// Derived objects at a quiescence plus the InstanceTypes the operator authored so far (they
/// are create-only, chain.md §8.4): everything `derive_after` remembers between events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Structure {
    pub derived: Derived,
    pub authored: Vec<ExistingInstanceType>,
}

/// The chain within one scope.
pub struct ChainModel {
    pub nodes: usize,
    pub cards: usize,
    pub templates: Vec<Workload>,
    pub mutant: Option<Mutant>,
    /// Gate 3 counts Workloads that are Ready but not yet charged (admission.md §6.5). `false`
    /// is the variant that forgets them (a stale cache without `readyUnobserved`).
    pub count_inflight: bool,
    structures: Mutex<Vec<Arc<Structure>>>,
    holds: Mutex<Vec<Arc<Hold>>>,
    memo: Mutex<HashMap<u64, u32>>,
    shape_memo: Mutex<HashMap<u64, bool>>,
    /// Properties already discovered (see [`first_discovery`]).
    discovered: [AtomicBool; props::ALL.len()],
}

impl ChainModel {
    pub fn new(
        nodes: usize,
        cards: usize,
        workloads: usize,
        mutant: Option<Mutant>,
        count_inflight: bool,
    ) -> Self {
        let full = palette::initial_cluster(nodes, cards, None);
        ChainModel {
            nodes,
            cards,
            templates: palette::workload_templates(&full, workloads),
            mutant,
            count_inflight,
            structures: Mutex::new(Vec::new()),
            holds: Mutex::new(Vec::new()),
            memo: Mutex::new(HashMap::new()),
            shape_memo: Mutex::new(HashMap::new()),
            discovered: std::array::from_fn(|_| AtomicBool::new(false)),
        }
    }

    /// The scope's initial cluster (what a counterexample scenario starts from).
    pub fn initial_cluster(&self) -> Cluster {
        palette::initial_cluster(self.nodes, self.cards, self.mutant)
    }

    pub fn structure(&self, id: u32) -> Arc<Structure> {
        let all = self.structures.lock().unwrap_or_else(|e| e.into_inner());
        all.get(id as usize).cloned().unwrap_or_else(|| {
            Arc::new(Structure {
                derived: Derived::default(),
                authored: Vec::new(),
            })
        })
    }

    fn intern_structure(&self, s: Structure) -> u32 {
        let mut all = self.structures.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = all.iter().position(|x| **x == s) {
            return i as u32;
        }
        all.push(Arc::new(s));
        (all.len() - 1) as u32
    }

    pub fn hold(&self, id: u32) -> Arc<Hold> {
        let all = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        all.get(id as usize).cloned().unwrap_or_default()
    }

    fn intern_hold(&self, h: Hold) -> u32 {
        let mut all = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = all.iter().position(|x| **x == h) {
            return i as u32;
        }
        all.push(Arc::new(h));
        (all.len() - 1) as u32
    }

    /// The model's `World` this state stands for: the cluster (present nodes, card families,
    /// ledgers), the interned structure, quota reserved by in-flight and admitted Workloads,
    /// and the holds of the admitted (charged) ones.
    pub fn world_of(&self, s: &State) -> World {
        let st = self.structure(s.structure);
        let mut cluster = Cluster {
            nodes: Vec::new(),
            namespaces: vec![Namespace {
                name: palette::HOME_NAMESPACE.into(),
                terminating: false,
            }],
            instance_types: st.authored.clone(),
            ..Cluster::default()
        };
        if s.extra_ns {
            cluster.namespaces.push(Namespace {
                name: palette::EXTRA_NAMESPACE.into(),
                terminating: false,
            });
        }
        cluster.settings.aware_cpu_manufacturer = s.aware;
        cluster.settings.mutant = self.mutant;
        let mut instances = BTreeMap::new();
        for (i, _) in s.present.iter().enumerate().filter(|(_, p)| **p) {
            let mut node = palette::node(i, self.cards);
            let name = node.name.clone();
            let cards = node
                .devices
                .iter_mut()
                .flat_map(|d| d.groups.iter_mut())
                .flat_map(|g| g.cards.iter_mut());
            for (c, card) in cards.enumerate() {
                let Some(cs) = s.cards.get(i * self.cards + c) else {
                    continue;
                };
                card.capability = Some(palette::card_capability(cs.mig));
                card.ledger = Some(cs.ledger.clone());
                if !cs.instances.is_empty() {
                    instances.insert((name.clone(), card.id.clone()), cs.instances.clone());
                }
            }
            cluster.nodes.push(node);
        }
        let reserved = self.reserved_of(&s.workloads);
        let mut holds = BTreeMap::new();
        for (k, status) in s.workloads.iter().enumerate() {
            let Some(h) = status.hold() else { continue };
            let hold = self.hold(h);
            if let (Status::Admitted(_), Some(w)) = (status, self.templates.get(k)) {
                holds.insert(workload_key(w), (*hold).clone());
            }
        }
        World {
            admission: AdmissionState {
                cluster,
                derived: st.derived.clone(),
                reserved,
                holds,
                instances,
            },
        }
    }

    /// Quota Kueue holds reserved for in-flight and admitted Workloads.
    pub fn reserved_of(&self, workloads: &[Status]) -> BTreeMap<(String, String, String), i64> {
        let mut reserved: BTreeMap<(String, String, String), i64> = BTreeMap::new();
        for h in workloads.iter().filter_map(|st| st.hold()) {
            let hold = self.hold(h);
            for (flavor, resource, amount) in &hold.quota {
                *reserved
                    .entry((hold.queue.clone(), flavor.clone(), resource.clone()))
                    .or_default() += amount;
            }
        }
        reserved
    }

    /// The state a world stands for, with the given Workload statuses and fault.
    fn state_of(&self, w: &World, workloads: Vec<Status>, fault: Fault) -> State {
        self.state_with(w, workloads, fault, None)
    }

    /// [`Self::state_of`] with the structure id known when the step did not re-derive.
    fn state_with(
        &self,
        w: &World,
        workloads: Vec<Status>,
        fault: Fault,
        known: Option<u32>,
    ) -> State {
        let cluster = w.cluster();
        let mut present = vec![false; self.nodes];
        let mut cards = vec![CardState::default(); self.nodes * self.cards];
        for (i, here) in present.iter_mut().enumerate() {
            let name = palette::node_name(i);
            let Some(node) = cluster.nodes.iter().find(|n| n.name == name) else {
                continue;
            };
            *here = true;
            let found = node
                .devices
                .iter()
                .flat_map(|d| d.groups.iter())
                .flat_map(|g| g.cards.iter());
            for (c, card) in found.enumerate().take(self.cards) {
                let Some(slot) = cards.get_mut(i * self.cards + c) else {
                    continue;
                };
                *slot = CardState {
                    mig: card.is_partitioned(),
                    ledger: card.ledger.clone().unwrap_or_default(),
                    instances: w
                        .admission
                        .instances
                        .get(&(name.clone(), card.id.clone()))
                        .cloned()
                        .unwrap_or_default(),
                };
            }
        }
        let mut held_nodes = 0u32;
        for h in workloads.iter().filter_map(|st| st.hold()) {
            for (i, _) in (0..self.nodes)
                .enumerate()
                .filter(|(i, _)| self.on_node(h, *i))
            {
                held_nodes |= 1 << i;
            }
        }
        let structure = known.unwrap_or_else(|| {
            self.intern_structure(Structure {
                derived: w.admission.derived.clone(),
                authored: cluster.instance_types.clone(),
            })
        });
        let mut s = State {
            present,
            cards,
            extra_ns: cluster
                .namespaces
                .iter()
                .any(|n| n.name == palette::EXTRA_NAMESPACE),
            aware: cluster.settings.aware_cpu_manufacturer,
            structure,
            workloads,
            held_nodes,
            fault,
            verdicts: Verdicts(0),
        };
        s.verdicts = Verdicts(self.verdicts_of(&s, w));
        s
    }

    /// Every property's verdict bit for a state: the world-level ones memoized by the world's
    /// fingerprint (structure, shape, ledgers), the rest computed from the statuses.
    fn verdicts_of(&self, s: &State, w: &World) -> u32 {
        let key = world_fingerprint(s);
        let cached = self
            .memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        let world_bits = match cached {
            Some(b) => b,
            None => {
                let b = props::world_verdicts(w) | self.shape_verdict(s, w);
                self.memo
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, b);
                b
            }
        };
        world_bits | props::status_verdicts(self, s, w)
    }

    /// The [M3] invariance / isolation / idempotence verdict, memoized per shape (structure,
    /// nodes, card families, namespaces, awareness): those properties compare derivations of
    /// one cluster under renamings and re-derivation, which do not depend on its ledgers.
    fn shape_verdict(&self, s: &State, w: &World) -> u32 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let families: Vec<bool> = s.cards.iter().map(|c| c.mig).collect();
        (&s.present, families, s.extra_ns, s.aware, s.structure).hash(&mut h);
        let key = h.finish();
        let cached = self
            .shape_memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        let ok = cached.unwrap_or_else(|| {
            let ok = props::m3_shape(w).is_ok();
            self.shape_memo
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, ok);
            ok
        });
        u32::from(ok) << props::M3_SHAPE
    }

    pub fn initial_state(&self) -> State {
        let w = World::new(self.initial_cluster());
        self.state_of(&w, vec![Status::Idle; self.templates.len()], Fault::None)
    }

    /// Whether a hold (charged or promised) touches card `c` of node `i`.
    fn card_promised(&self, s: &State, i: usize, c: usize) -> bool {
        let name = palette::node_name(i);
        let id = palette::card(c, false).id;
        s.workloads.iter().filter_map(|st| st.hold()).any(|h| {
            self.hold(h)
                .charges
                .iter()
                .any(|ch| ch.node == name && ch.card == id)
        })
    }

    fn on_node(&self, h: u32, i: usize) -> bool {
        let name = palette::node_name(i);
        self.hold(h).charges.iter().any(|c| c.node == name)
    }

    /// Applies a shape event through `World::apply`; an ignored event changes nothing.
    fn shape_step(&self, s: &State, event: Event, workloads: Vec<Status>) -> Option<State> {
        let mut w = self.world_of(s);
        let effect = w.apply(&event);
        let mut workloads = workloads;
        match effect {
            Effect::Ignored { .. } => return None,
            Effect::Evicted { workloads: gone } => {
                for (k, t) in self.templates.iter().enumerate() {
                    if gone.contains(&workload_key(t)) {
                        if let Some(st) = workloads.get_mut(k) {
                            *st = Status::Idle;
                        }
                    }
                }
            }
            _ => {}
        }
        Some(self.state_of(&w, workloads, s.fault))
    }

    /// Gates 1–3 for template `k` on a scratch world in which every in-flight Workload's
    /// budget is already taken (admission.md §6.5: in-flight demands are fitted first on the
    /// same per-card budget; every derived queue is TAS at hostname level, so each in-flight
    /// Workload has the node assignment the rule counts). Nothing is charged on the real world.
    fn judge(&self, s: &State, k: usize) -> Option<State> {
        let template = self.templates.get(k)?;
        let w = self.world_of(s);
        let mut scratch = w.clone();
        let mut fault = s.fault;
        if self.count_inflight {
            for (j, st) in s.workloads.iter().enumerate() {
                let (Status::InFlight(h), Some(t)) = (st, self.templates.get(j)) else {
                    continue;
                };
                let hold = self.hold(*h);
                if charge_cards(&mut scratch.admission, &hold.charges).is_err() {
                    fault = Fault::ChargeRefused;
                }
                scratch
                    .admission
                    .holds
                    .insert(workload_key(t), (*hold).clone());
            }
        }
        let outcome = scratch.admission.submit(template);
        let mut workloads = s.workloads.clone();
        let next = match outcome {
            Outcome::Admitted => {
                let hold = scratch
                    .admission
                    .holds
                    .get(&workload_key(template))
                    .cloned()
                    .unwrap_or_default();
                Status::InFlight(self.intern_hold(hold))
            }
            Outcome::Pending { .. } => Status::Pending,
            Outcome::Retry { .. } => Status::Retry,
            Outcome::Rejected { .. } => Status::Rejected,
            Outcome::Unplaceable { .. } => {
                fault = Fault::Unplaceable;
                Status::Idle
            }
        };
        if next == s.workloads[k] && fault == s.fault {
            return None;
        }
        workloads[k] = next;
        Some(self.state_with(&w, workloads, fault, Some(s.structure)))
    }

    /// Workload `k`'s Pods land: the cards gate 3 budgeted are charged (gates 4–5).
    fn land(&self, s: &State, k: usize) -> Option<State> {
        let Status::InFlight(h) = *s.workloads.get(k)? else {
            return None;
        };
        let template = self.templates.get(k)?;
        let mut w = self.world_of(s);
        let hold = self.hold(h);
        let mut fault = s.fault;
        if charge_cards(&mut w.admission, &hold.charges).is_err() {
            fault = Fault::ChargeRefused;
        }
        w.admission
            .holds
            .insert(workload_key(template), (*hold).clone());
        let mut workloads = s.workloads.clone();
        workloads[k] = Status::Admitted(h);
        Some(self.state_with(&w, workloads, fault, Some(s.structure)))
    }

    fn finish(&self, s: &State, k: usize) -> Option<State> {
        let template = self.templates.get(k)?;
        if !matches!(s.workloads.get(k)?, Status::Admitted(_)) {
            return None;
        }
        let mut w = self.world_of(s);
        let effect = w.apply(&Event::Finish {
            namespace: template.namespace.clone(),
            name: template.name.clone(),
        });
        if effect != Effect::Released {
            return None;
        }
        let mut workloads = s.workloads.clone();
        workloads[k] = Status::Idle;
        Some(self.state_with(&w, workloads, s.fault, Some(s.structure)))
    }

    /// The model `Event` an action maps to in a replayable scenario (`None` for a ledger
    /// charge: `World::apply(Submit)` already charges at once).
    pub fn event_of(&self, a: &Action) -> Option<Event> {
        Some(match a {
            Action::NodeJoin(i) => Event::NodeJoin {
                node: palette::node(*i, self.cards),
            },
            Action::NodeLeave(i) => Event::NodeLeave {
                name: palette::node_name(*i),
            },
            Action::CardFamily { node, card, mig } => Event::CardFamily {
                node: palette::node_name(*node),
                card: palette::card(*card, false).id,
                capability: palette::card_capability(*mig),
            },
            Action::NamespaceCreate => Event::NamespaceCreate {
                name: palette::EXTRA_NAMESPACE.into(),
            },
            Action::NamespaceDelete => Event::NamespaceDelete {
                name: palette::EXTRA_NAMESPACE.into(),
            },
            Action::AwarenessFlip => Event::AwarenessFlip,
            Action::Judge(k) => Event::Submit {
                workload: self.templates.get(*k)?.clone(),
            },
            Action::Charge(_) => return None,
            Action::Finish(k) => {
                let t = self.templates.get(*k)?;
                Event::Finish {
                    namespace: t.namespace.clone(),
                    name: t.name.clone(),
                }
            }
        })
    }

    /// A short human description of an action.
    pub fn describe(&self, a: &Action) -> String {
        let wl = |k: &usize| {
            self.templates
                .get(*k)
                .map(|t| format!("{} ({:?})", t.name, palette::ask_of(*k)))
                .unwrap_or_else(|| format!("wl-{k}"))
        };
        match a {
            Action::NodeJoin(i) => format!("node {} joins", palette::node_name(*i)),
            Action::NodeLeave(i) => format!("node {} leaves", palette::node_name(*i)),
            Action::CardFamily { node, card, mig } => format!(
                "card GPU-{card} on {} switches MIG {} (device manager restarts)",
                palette::node_name(*node),
                if *mig { "on" } else { "off" }
            ),
            Action::NamespaceCreate => format!("namespace {} created", palette::EXTRA_NAMESPACE),
            Action::NamespaceDelete => format!("namespace {} deleted", palette::EXTRA_NAMESPACE),
            Action::AwarenessFlip => "instance-type-aware-cpu-manufacturer flips".into(),
            Action::Judge(k) => format!("gates 1–3 judge {} (Ready is not charged yet)", wl(k)),
            Action::Charge(k) => format!("{}'s Pods land: its cards are charged", wl(k)),
            Action::Finish(k) => format!("{} finishes and releases", wl(k)),
        }
    }
}

/// Charges each card, as gate 5 does under its per-node mutex (the lifecycle's own plumbing:
/// the row and live instances written back); stops at the first refusal.
pub fn charge_cards(state: &mut AdmissionState, charges: &[CardCharge]) -> Result<(), String> {
    for c in charges {
        let key = (c.node.clone(), c.card.clone());
        let instances = state.instances.get(&key).cloned().unwrap_or_default();
        let card = state
            .cluster
            .nodes
            .iter_mut()
            .find(|n| n.name == c.node)
            .and_then(|n| n.devices.as_mut())
            .and_then(|d| {
                d.groups
                    .iter_mut()
                    .filter(|g| g.accelerator_key() == c.accelerator_key)
                    .flat_map(|g| g.cards.iter_mut())
                    .find(|k| k.id == c.card)
            })
            .ok_or_else(|| format!("card {} on {} is gone", c.card, c.node))?;
        let mut ledger = CardLedger::from_card(card)
            .ok_or_else(|| format!("card {} on {} has no ledger row", c.card, c.node))?;
        ledger.instances = instances;
        let next = charge(&ledger, &c.charge).map_err(|e| format!("card {}: {e}", c.card))?;
        card.ledger = Some(next.row);
        if next.instances.is_empty() {
            state.instances.remove(&key);
        } else {
            state.instances.insert(key, next.instances);
        }
    }
    Ok(())
}

/// The fingerprint of the world-level part of a state (everything but Workload statuses).
fn world_fingerprint(s: &State) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&s.present, &s.cards, s.extra_ns, s.aware, s.structure).hash(&mut h);
    h.finish()
}

impl Model for ChainModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for (i, present) in s.present.iter().enumerate() {
            if *present {
                actions.push(Action::NodeLeave(i));
                for c in 0..self.cards {
                    if !self.card_promised(s, i, c) {
                        let mig = !s.cards[i * self.cards + c].mig;
                        actions.push(Action::CardFamily {
                            node: i,
                            card: c,
                            mig,
                        });
                    }
                }
            } else {
                actions.push(Action::NodeJoin(i));
            }
        }
        actions.push(if s.extra_ns {
            Action::NamespaceDelete
        } else {
            Action::NamespaceCreate
        });
        actions.push(Action::AwarenessFlip);
        for (k, st) in s.workloads.iter().enumerate() {
            match st {
                Status::Idle | Status::Pending | Status::Retry => actions.push(Action::Judge(k)),
                Status::InFlight(_) => actions.push(Action::Charge(k)),
                Status::Admitted(_) => actions.push(Action::Finish(k)),
                Status::Rejected => {}
            }
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        match action {
            Action::NodeJoin(i) => {
                let event = Event::NodeJoin {
                    node: palette::node(i, self.cards),
                };
                self.shape_step(s, event, s.workloads.clone())
            }
            Action::NodeLeave(i) => {
                // In-flight Workloads budgeted on the node lose their Pods with it.
                let workloads = s
                    .workloads
                    .iter()
                    .map(|st| match st {
                        Status::InFlight(h) if self.on_node(*h, i) => Status::Idle,
                        other => *other,
                    })
                    .collect();
                let event = Event::NodeLeave {
                    name: palette::node_name(i),
                };
                self.shape_step(s, event, workloads)
            }
            Action::CardFamily { .. }
            | Action::NamespaceCreate
            | Action::NamespaceDelete
            | Action::AwarenessFlip => {
                let event = self.event_of(&action)?;
                self.shape_step(s, event, s.workloads.clone())
            }
            Action::Judge(k) => self.judge(s, k),
            Action::Charge(k) => self.land(s, k),
            Action::Finish(k) => self.finish(s, k),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        props::ALL
            .iter()
            .zip(FIRST_DISCOVERY)
            .map(|(p, check)| match p.kind {
                props::Kind::Always => Property::always(p.name, check),
                props::Kind::Sometimes => Property::sometimes(p.name, check),
            })
            .collect()
    }
}

/// Stateright 0.31 records a property's discovery again for every state that shows it, so the
/// last one found wins; a property that reports nothing new once discovered keeps the first,
/// which single-threaded BFS visits at the least depth: the shortest counterexample.
fn first_discovery<const I: usize>(m: &ChainModel, s: &State) -> bool {
    let p = &props::ALL[I];
    let always = p.kind == props::Kind::Always;
    let holds = (p.holds)(m, s);
    // An always-property shows when it fails, a sometimes-property when it holds.
    let shows = holds != always;
    if shows && m.discovered[I].swap(true, Ordering::Relaxed) {
        // Already discovered: answer as if this state did not show it.
        return always;
    }
    holds
}

/// One [`first_discovery`] per property of [`props::ALL`], in order.
const FIRST_DISCOVERY: [fn(&ChainModel, &State) -> bool; 12] = [
    first_discovery::<0>,
    first_discovery::<1>,
    first_discovery::<2>,
    first_discovery::<3>,
    first_discovery::<4>,
    first_discovery::<5>,
    first_discovery::<6>,
    first_discovery::<7>,
    first_discovery::<8>,
    first_discovery::<9>,
    first_discovery::<10>,
    first_discovery::<11>,
];

/// Symmetry: the cards of a node that no Workload holds or was promised are interchangeable
/// (nothing names them), so a state's representative lists those nodes' card slots sorted.
/// Stateright applies it in DFS only. Nodes are not permuted: their names enter the derived
/// objects (flavor contributor lists, hostnames), so two nodes are never equal up to a
/// renaming the state could express without re-deriving.
pub fn representative(s: &State) -> State {
    let nodes = s.present.len().max(1);
    let per = s.cards.len() / nodes;
    let mut out = s.clone();
    if per < 2 {
        return out;
    }
    for i in 0..nodes {
        if s.held_nodes & (1 << i) != 0 {
            continue;
        }
        if let Some(slots) = out.cards.get_mut(i * per..(i + 1) * per) {
            slots.sort_by_key(|c| (c.mig, c.ledger.remaining_units, c.instances.len()));
        }
    }
    out
}
