//! The stateright model of the chain's dynamics: one match arm per action, each calling the
//! one model rule that decides it (`World::apply` for shape events and finish,
//! `AdmissionState::submit` for gates 1–3 on a world that counts in-flight Workloads,
//! `ledger::charge` for the Pods landing). Each rule's answer is memoised by what it depends
//! on ([`Tables`]): the derivation by shape and previous structure (it does not read the
//! ledger), gate 3 by the world after the in-flight charges and the reserved quota, charges
//! and releases by the card rows and the hold, so a step usually costs a few table lookups.
//! Property verdicts are computed once per unique state, when stateright evaluates them
//! ([`ChainModel::verdicts`]).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use model::cluster::{Cluster, Namespace};
use model::derive::Derived;
use model::events::{flip_dropped_flavors, Effect, Event, World};
use model::ledger::{charge, CardLedger};
use model::lifecycle::{workload_key, AdmissionState, CardCharge, HoldError, Outcome};
use model::mutants::Mutant;
use model::workload::Workload;
use stateright::{Model, Property};

use super::memo::fingerprint;
use super::palette;
use super::properties as props;
use super::state::{CardState, Fault, State, Status, MAX_CARD_SLOTS, MAX_NODES, MAX_WORKLOADS};
pub use super::tables::Structure;
use super::tables::{self, Tables};

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
    /// `instance-type-mixed-on-node` flips (`World::apply(MixingFlip)`): CPU flavors are
    /// recreated or retired; a queue losing a flavor it holds quota on drains by migration.
    MixingFlip,
    /// Gates 1–3 judge Workload template `k` (quota reserved and check Ready, or a refusal);
    /// a Ready Workload is NOT charged yet (the in-flight window).
    Judge(usize),
    /// Workload `k`'s Pods land: its budgeted cards are charged on the ledger.
    Charge(usize),
    /// Workload `k` finishes and releases its cards and quota.
    Finish(usize),
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
    /// A property check to break on purpose (tests show each always-property can fail).
    pub broken: Option<props::Broken>,
    pub tables: Arc<Tables>,
    scope: u32,
    /// Each node slot as it joins, and each card family's capability (`[logical, MIG]`),
    /// built once: every memo miss builds a cluster from them.
    palette_nodes: Vec<model::cluster::Node>,
    capabilities: [model::devices::Capability; 2],
    /// Unique per model built in this process (the verdict cache's owner tag: registry slots
    /// are reused once a check ends).
    id: u64,
    /// Properties already discovered (see [`first_discovery`]).
    discovered: [AtomicBool; props::ALL.len()],
}

/// The id the next [`ChainModel`] gets.
static NEXT_MODEL_ID: AtomicU64 = AtomicU64::new(0);

/// A scope `verify check` cannot explore: the option out of range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("--nodes: expected 1..={MAX_NODES}, got {nodes}")]
    Nodes { nodes: usize },
    #[error(
        "--cards: expected 1 or more with nodes × cards ≤ {MAX_CARD_SLOTS}, got {nodes} × {cards}"
    )]
    Cards { nodes: usize, cards: usize },
    #[error("--workloads: expected 0..={MAX_WORKLOADS}, got {workloads}")]
    Workloads { workloads: usize },
}

/// Why a scope cannot be checked.
pub fn scope_error(nodes: usize, cards: usize, workloads: usize) -> Option<ScopeError> {
    if nodes == 0 || nodes > MAX_NODES {
        return Some(ScopeError::Nodes { nodes });
    }
    if cards == 0 || nodes * cards > MAX_CARD_SLOTS {
        return Some(ScopeError::Cards { nodes, cards });
    }
    if workloads > MAX_WORKLOADS {
        return Some(ScopeError::Workloads { workloads });
    }
    None
}

impl ChainModel {
    /// The model of a scope; an error names the option out of range.
    pub fn new(
        nodes: usize,
        cards: usize,
        workloads: usize,
        mutant: Option<Mutant>,
        count_inflight: bool,
    ) -> Result<Self, ScopeError> {
        if let Some(e) = scope_error(nodes, cards, workloads) {
            return Err(e);
        }
        let full = palette::initial_cluster(nodes, cards, None);
        let tables = Arc::new(Tables::new(nodes, cards));
        let scope = tables::register(&tables);
        Ok(ChainModel {
            nodes,
            cards,
            templates: palette::workload_templates(&full, workloads),
            mutant,
            count_inflight,
            broken: None,
            tables,
            scope,
            id: NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed),
            palette_nodes: (0..nodes).map(|i| palette::node(i, cards)).collect(),
            capabilities: [false, true].map(palette::card_capability),
            discovered: std::array::from_fn(|_| AtomicBool::new(false)),
        })
    }

    /// The model `config` checks; an error names the option out of range.
    pub fn for_check(config: &super::CheckConfig) -> Result<Self, ScopeError> {
        let mut model = ChainModel::new(
            config.nodes,
            config.cards,
            config.workloads,
            config.mutant,
            config.count_inflight,
        )?;
        model.broken = config.broken;
        Ok(model)
    }

    /// The scope's initial cluster (what a counterexample scenario starts from).
    pub fn initial_cluster(&self) -> Cluster {
        palette::initial_cluster(self.nodes, self.cards, self.mutant)
    }

    pub fn structure(&self, id: u32) -> &Structure {
        self.tables.structure(id)
    }

    fn slot(&self, node: usize, card: usize) -> usize {
        node * self.cards + card
    }

    /// The cluster of a state's shape and card rows, with the structure's authored
    /// InstanceTypes, and the live partition instances behind the rows.
    fn cluster_of(
        &self,
        s: &State,
        st: &Structure,
    ) -> (
        Cluster,
        BTreeMap<(String, String), Vec<model::ledger::Instance>>,
    ) {
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
        cluster.settings.mixed_on_node = s.mixed;
        cluster.settings.mutant = self.mutant;
        let mut instances = BTreeMap::new();
        for i in (0..self.nodes).filter(|i| s.is_present(*i)) {
            let mut node = self.palette_nodes[i].clone();
            let name = node.name.clone();
            let cards = node
                .devices
                .iter_mut()
                .flat_map(|d| d.groups.iter_mut())
                .flat_map(|g| g.cards.iter_mut());
            for (c, card) in cards.enumerate().take(self.cards) {
                let row = self.tables.card_row(s.cards[self.slot(i, c)]);
                card.capability = Some(self.capabilities[usize::from(row.mig)].clone());
                card.ledger = Some(row.ledger.clone());
                if !row.instances.is_empty() {
                    instances.insert((name.clone(), card.id.clone()), row.instances.clone());
                }
            }
            cluster.nodes.push(node);
        }
        (cluster, instances)
    }

    /// The model's `World` this state stands for: the cluster (present nodes, card families,
    /// ledgers), the interned structure, quota reserved by in-flight and admitted Workloads,
    /// and the holds of the admitted (charged) ones.
    pub fn world_of(&self, s: &State) -> World {
        let st = self.structure(s.structure);
        let (cluster, instances) = self.cluster_of(s, st);
        let reserved = self.reserved_of(&s.workloads);
        let mut holds = BTreeMap::new();
        for (k, status) in s.workloads.iter().enumerate() {
            if let (Status::Admitted(h), Some(w)) = (status, self.templates.get(k)) {
                holds.insert(workload_key(w), self.tables.hold(*h).hold.clone());
            }
        }
        World {
            admission: AdmissionState {
                cluster,
                derived: st.derived.clone(),
                reserved,
                holds,
                instances,
                // The palette draws no ModelDeployment replica: the joint check is Ready at
                // once for every template, so nothing is ever held by it.
                joint: BTreeMap::new(),
                deriver: self.tables.deriver(),
            },
        }
    }

    /// Quota Kueue holds reserved for in-flight and admitted Workloads.
    pub fn reserved_of(&self, workloads: &[Status]) -> BTreeMap<(String, String, String), i64> {
        let mut reserved: BTreeMap<(String, String, String), i64> = BTreeMap::new();
        for h in workloads.iter().filter_map(|st| st.hold()) {
            let entry = self.tables.hold(h);
            for q in &entry.hold.quota {
                *reserved
                    .entry((
                        entry.hold.queue.clone(),
                        q.flavor.clone(),
                        q.resource.clone(),
                    ))
                    .or_default() += q.amount;
            }
        }
        reserved
    }

    /// The interned card rows of a world's cluster, slot by slot, and their MIG bits.
    fn cards_of(&self, w: &World) -> ([u16; MAX_CARD_SLOTS], u16) {
        let mut cards = [0u16; MAX_CARD_SLOTS];
        let mut mig = 0u16;
        for i in 0..self.nodes {
            let name = palette::node_name(i);
            let Some(node) = w.cluster().nodes.iter().find(|n| n.name == name) else {
                continue;
            };
            let found = node
                .devices
                .iter()
                .flat_map(|d| d.groups.iter())
                .flat_map(|g| g.cards.iter());
            for (c, card) in found.enumerate().take(self.cards) {
                let row = CardState {
                    mig: card.is_partitioned(),
                    ledger: card.ledger.clone().unwrap_or_default(),
                    instances: w
                        .admission
                        .instances
                        .get(&(name.clone(), card.id.clone()))
                        .cloned()
                        .unwrap_or_default(),
                };
                let slot = self.slot(i, c);
                if row.mig {
                    mig |= 1 << slot;
                }
                cards[slot] = self.tables.intern_card(row);
            }
        }
        (cards, mig)
    }

    /// The property verdict bits of `s`. Stateright evaluates every property of a state in a
    /// row, once per unique state (successors it has seen before are dropped unevaluated), so
    /// the bits are computed here, on demand, and a one-entry cache per thread serves the
    /// properties after the first. Computing them in `next_state` instead cost a dozen lookups
    /// for each of the ~12 successors generated per unique state.
    pub fn verdicts(&self, s: &State) -> u32 {
        thread_local! {
            static LAST: Cell<Option<(u64, State, u32)>> = const { Cell::new(None) };
        }
        LAST.with(|last| match last.get() {
            Some((id, seen, bits)) if id == self.id && seen == *s => bits,
            _ => {
                let bits = self.compute_verdicts(s);
                last.set(Some((self.id, *s, bits)));
                bits
            }
        })
    }

    /// The verdict bits: world-level bits memoised per world key, the [M3] shape bit
    /// (invariance, isolation, idempotence: properties of the derivation, so judged on free
    /// cards) per shape, the rest from the statuses.
    fn compute_verdicts(&self, s: &State) -> u32 {
        let world = self
            .tables
            .world_bits
            .get_or(fingerprint(&s.world_key()), || {
                let w = self.world_of(s);
                props::world_verdicts(&w)
            });
        // The [M3] shape checks read the cluster only: shape and authored InstanceTypes.
        let authored = self.tables.authored_fingerprint(s.structure);
        let shape = self.tables.shape_ok.get_or(
            fingerprint(&(s.present, s.mig, s.extra_ns, s.aware, s.mixed, authored)),
            || {
                let w = self.world_of(&self.free_cards(s));
                props::m3_shape(&w).is_ok()
            },
        );
        let bits = world | (u32::from(shape) << props::M3_SHAPE) | props::status_verdicts(self, s);
        self.broken.map_or(bits, |b| b.apply(bits, s))
    }

    pub fn initial_state(&self) -> State {
        let w = World::new(self.initial_cluster());
        let (cards, mig) = self.cards_of(&w);
        let structure = self.tables.intern_structure(Structure::canonical(
            Derived::clone(&w.admission.derived),
            w.cluster().instance_types.clone(),
        ));
        let present = ((1u16 << self.nodes) - 1) as u8;
        State {
            scope: self.scope,
            present,
            mig,
            cards,
            extra_ns: false,
            aware: w.cluster().settings.aware_cpu_manufacturer,
            mixed: w.cluster().settings.mixed_on_node,
            structure,
            workloads: [Status::Idle; MAX_WORKLOADS],
            fault: Fault::None,
        }
    }

    /// The state's shape with every card free in its family and no Workload: what the
    /// derivation-only checks and steps are computed on, so their memo key is the shape.
    fn free_cards(&self, s: &State) -> State {
        let mut shape = State {
            workloads: [Status::Idle; MAX_WORKLOADS],
            ..*s
        };
        for slot in 0..self.nodes * self.cards {
            shape.cards[slot] = self.tables.fresh[usize::from(s.mig & (1 << slot) != 0)];
        }
        shape
    }

    /// The structure after a shape action, re-derived by `World::apply` from the previous
    /// quiescence on the state's shape with every card free. Queues, flavors and
    /// InstanceType specs do not read ledgers or holds (lifecycle.rs `AdmissionState`); only
    /// the stored status views do, and nothing reads those back: gates use the queues and
    /// `observe` re-derives the views from the ledgers. Deriving on free cards keeps those
    /// unread views from splitting equal states, and makes shape and structure the whole key.
    fn structure_after(&self, s: &State, action: &Action) -> u32 {
        let key = fingerprint(&(
            s.present,
            s.mig,
            s.extra_ns,
            s.aware,
            s.mixed,
            s.structure,
            action,
        ));
        self.tables
            .structure_after
            .get_or(key, || self.derive_structure_after(s, action))
    }

    fn derive_structure_after(&self, s: &State, action: &Action) -> u32 {
        let mut w = self.world_of(&self.free_cards(s));
        if let Some(event) = self.event_of(action) {
            w.apply(&event);
        }
        self.tables.intern_structure(Structure::canonical(
            Arc::unwrap_or_clone(w.admission.derived),
            w.admission.cluster.instance_types,
        ))
    }

    /// A shape action (node join/leave, card family, namespace, a settings flip): the new shape
    /// and card rows, the Workloads it evicts, the re-derived structure.
    fn shape_step(&self, s: &State, action: &Action) -> Option<State> {
        let mut next = *s;
        match *action {
            Action::NodeJoin(i) => {
                if s.is_present(i) {
                    return None;
                }
                next.present |= 1 << i;
                for c in 0..self.cards {
                    next.cards[self.slot(i, c)] = self.tables.fresh[0];
                    next.mig &= !(1 << self.slot(i, c));
                }
            }
            Action::NodeLeave(i) => {
                if !s.is_present(i) {
                    return None;
                }
                // Workloads budgeted or charged on the node lose their Pods with it.
                let mut spans_others = false;
                for st in next.workloads.iter_mut() {
                    let Some(h) = st.hold() else { continue };
                    let entry = self.tables.hold(h);
                    if entry.nodes & (1 << i) != 0 {
                        spans_others |= matches!(st, Status::Admitted(_)) && entry.nodes != 1 << i;
                        *st = Status::Idle;
                    }
                }
                if spans_others {
                    // An evicted hold charged other nodes too: the model releases them.
                    let mut w = self.world_of(s);
                    w.apply(&Event::NodeLeave {
                        name: palette::node_name(i),
                    });
                    (next.cards, next.mig) = self.cards_of(&w);
                }
                next.present &= !(1 << i);
                for c in 0..self.cards {
                    next.cards[self.slot(i, c)] = 0;
                    next.mig &= !(1 << self.slot(i, c));
                }
            }
            Action::CardFamily { node, card, mig } => {
                let slot = self.slot(node, card);
                if !s.is_present(node)
                    || self.tables.promised_cards(&s.workloads) & (1 << slot) != 0
                {
                    return None;
                }
                next.cards[slot] = self.tables.fresh[usize::from(mig)];
                if mig {
                    next.mig |= 1 << slot;
                } else {
                    next.mig &= !(1 << slot);
                }
            }
            Action::NamespaceCreate if !s.extra_ns => next.extra_ns = true,
            Action::NamespaceDelete if s.extra_ns => next.extra_ns = false,
            Action::AwarenessFlip => next.aware = !s.aware,
            Action::MixingFlip => next.mixed = !s.mixed,
            _ => return None,
        }
        next.structure = self.structure_after(s, action);
        if *action == Action::MixingFlip {
            self.drain_migrating(s, &mut next);
        }
        Some(next)
    }

    /// A mixing flip's HoldAndDrain migrations (`World::flip_mixing`; node_queue.go migration,
    /// chain.md §10.3(b)): a queue that drops a flavor one of its Workloads holds quota on
    /// evicts every Workload holding quota on it, in flight or charged; the charged ones'
    /// cards are released by the model (`AdmissionState::finish`). Which flavors the flip
    /// drops is the model's answer on the two structures (`events::flip_dropped_flavors`),
    /// memoised by them.
    fn drain_migrating(&self, s: &State, next: &mut State) {
        let dropped =
            self.tables
                .flip_dropped
                .get_or(fingerprint(&(s.structure, next.structure)), || {
                    let (before, after) =
                        (self.structure(s.structure), self.structure(next.structure));
                    flip_dropped_flavors(&before.derived, &after.derived)
                });
        if dropped.is_empty() {
            return;
        }
        let holds: Vec<(usize, u32)> = s
            .workloads
            .iter()
            .enumerate()
            .filter_map(|(k, st)| Some((k, st.hold()?)))
            .collect();
        let migrating: Vec<String> = holds
            .iter()
            .map(|(_, h)| self.tables.hold(*h))
            .filter(|e| e.hold.quota.iter().any(|q| dropped.contains(&q.flavor)))
            .map(|e| e.hold.queue.clone())
            .collect();
        let victims: Vec<usize> = holds
            .iter()
            .filter(|(_, h)| migrating.contains(&self.tables.hold(*h).hold.queue))
            .map(|(k, _)| *k)
            .collect();
        if victims.is_empty() {
            return;
        }
        let charged = victims
            .iter()
            .any(|k| matches!(s.workloads[*k], Status::Admitted(_)));
        if charged {
            // Released against the card rows the holds were charged on, as the model does.
            let mut w = self.world_of(s);
            for k in &victims {
                if let (Status::Admitted(_), Some(t)) = (s.workloads[*k], self.templates.get(*k)) {
                    let _ = w.admission.finish(&t.namespace, &t.name);
                }
            }
            next.cards = self.cards_of(&w).0;
        }
        for k in victims {
            next.workloads[k] = Status::Idle;
        }
    }

    /// Gates 1–3 for template `k` on a scratch world in which every in-flight Workload's
    /// budget is already taken (admission.md §6.5: in-flight demands are fitted first on the
    /// same per-card budget; every derived queue is TAS at hostname level, so each in-flight
    /// Workload has the node assignment the rule counts). Nothing is charged on the real world.
    ///
    /// Memoised by what `AdmissionState::submit` reads (lifecycle.rs): the structure, the
    /// cluster (shape, namespaces, awareness, and the card rows after the in-flight charges),
    /// the reserved quota (as the multiset of the holds' quota) and the template. It reads the
    /// holds map only for the template's own key, which no hold has (an `Idle`, `Pending` or
    /// `Retry` template holds nothing), so which hold charged a card is not part of the key:
    /// states whose in-flight and admitted Workloads leave the same rows share the verdict.
    fn judge(&self, s: &State, k: usize) -> Option<State> {
        let template = self.templates.get(k)?;
        let (cards, refused) = self.inflight_charged(s);
        let scratch = State { cards, ..*s };
        let key = fingerprint(&(scratch.world_key(), self.tables.quota_key(&s.workloads), k));
        let (status, unplaceable) = self
            .tables
            .judged
            .get_or(key, || self.judge_alone(&scratch, template));
        let fault = match (unplaceable, refused) {
            (true, _) => Fault::Unplaceable,
            (false, true) => Fault::ChargeRefused,
            (false, false) => s.fault,
        };
        if status == s.workloads[k] && fault == s.fault {
            return None;
        }
        let mut next = *s;
        next.workloads[k] = status;
        next.fault = fault;
        Some(next)
    }

    /// Gates 1–3's answer for `template` on `scratch` (its status after, and whether gates 4–5
    /// could not place it).
    fn judge_alone(&self, scratch: &State, template: &Workload) -> (Status, bool) {
        let mut w = self.world_of(scratch);
        match w.admission.submit(template) {
            Outcome::Admitted => {
                let hold = w
                    .admission
                    .holds
                    .get(&workload_key(template))
                    .cloned()
                    .unwrap_or_default();
                (Status::InFlight(self.tables.intern_hold(hold)), false)
            }
            Outcome::Pending { .. } => (Status::Pending, false),
            Outcome::Retry { .. } => (Status::Retry, false),
            Outcome::Rejected { .. } => (Status::Rejected, false),
            Outcome::Unplaceable { .. } => (Status::Idle, true),
            // Unreachable from the palette (no template is a ModelDeployment replica); a held
            // Workload reserves quota but is not admitted, which this checker does not track.
            Outcome::Held { .. } => (Status::Pending, false),
        }
    }

    /// The card rows once every in-flight Workload's budget is charged, in template order, and
    /// whether a charge was refused (`count_inflight = false`: the rows as they are).
    fn inflight_charged(&self, s: &State) -> ([u16; MAX_CARD_SLOTS], bool) {
        let mut cards = s.cards;
        let mut refused = false;
        if self.count_inflight {
            for st in s.workloads.iter().take(self.templates.len()) {
                if let Status::InFlight(h) = *st {
                    let (after, r) = self.charged(s.present, cards, h);
                    cards = after;
                    refused |= r;
                }
            }
        }
        (cards, refused)
    }

    /// The card rows after hold `h`'s charges, as gates 4–5 apply them (`charge_cards`), and
    /// whether one was refused. Charging reads and writes card rows only (ledgers and live
    /// instances), so the present nodes, their rows and the hold are the whole key.
    fn charged(
        &self,
        present: u8,
        cards: [u16; MAX_CARD_SLOTS],
        h: u32,
    ) -> ([u16; MAX_CARD_SLOTS], bool) {
        self.tables
            .landed
            .get_or(fingerprint(&(present, cards, h)), || {
                let mut w = self.world_of(&self.with_rows(present, cards));
                let hold = self.tables.hold(h);
                let refused = charge_cards(&mut w.admission, &hold.hold.charges).is_err();
                (self.cards_of(&w).0, refused)
            })
    }

    /// A state with only these nodes and card rows (what charging and releasing read).
    fn with_rows(&self, present: u8, cards: [u16; MAX_CARD_SLOTS]) -> State {
        State {
            scope: self.scope,
            present,
            mig: 0,
            cards,
            extra_ns: false,
            aware: false,
            mixed: true,
            structure: 0,
            workloads: [Status::Idle; MAX_WORKLOADS],
            fault: Fault::None,
        }
    }

    /// Workload `k`'s Pods land: the cards gate 3 budgeted are charged (gates 4–5).
    fn land(&self, s: &State, k: usize) -> Option<State> {
        let Status::InFlight(h) = *s.workloads.get(k)? else {
            return None;
        };
        let (cards, refused) = self.charged(s.present, s.cards, h);
        let mut next = *s;
        next.cards = cards;
        next.workloads[k] = Status::Admitted(h);
        if refused {
            next.fault = Fault::ChargeRefused;
        }
        Some(next)
    }

    /// Workload `k` finishes: the model releases its cards (`World::apply(Finish)`). Finishing
    /// reads the Workload's own hold and the card rows it charged (lifecycle.rs
    /// `AdmissionState::finish`; reserved quota is written, not read), so the present nodes,
    /// their rows and the hold are the whole key.
    fn finish(&self, s: &State, k: usize) -> Option<State> {
        let template = self.templates.get(k)?;
        let Status::Admitted(h) = *s.workloads.get(k)? else {
            return None;
        };
        let key = fingerprint(&(s.present, s.cards, h, k));
        let cards = self.tables.released.get_or(key, || {
            let mut alone = self.with_rows(s.present, s.cards);
            alone.workloads[k] = Status::Admitted(h);
            let mut w = self.world_of(&alone);
            let effect = w.apply(&Event::Finish {
                namespace: template.namespace.clone(),
                name: template.name.clone(),
            });
            (effect == Effect::Released).then(|| self.cards_of(&w).0)
        })?;
        let mut next = *s;
        next.cards = cards;
        next.workloads[k] = Status::Idle;
        Some(next)
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
            Action::MixingFlip => Event::MixingFlip,
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
            Action::MixingFlip => {
                "instance-type-mixed-on-node flips (CPU flavors recreated or retired)".into()
            }
            Action::Judge(k) => format!("gates 1–3 judge {} (Ready is not charged yet)", wl(k)),
            Action::Charge(k) => format!("{}'s Pods land: its cards are charged", wl(k)),
            Action::Finish(k) => format!("{} finishes and releases", wl(k)),
        }
    }
}

/// Charges each card, as gate 5 does under its per-node mutex (the lifecycle's own plumbing:
/// the row and live instances written back); stops at the first refusal.
pub fn charge_cards(state: &mut AdmissionState, charges: &[CardCharge]) -> Result<(), HoldError> {
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
            .ok_or_else(|| HoldError::CardGone {
                node: c.node.clone(),
                accelerator_key: c.accelerator_key.clone(),
                card: c.card.clone(),
            })?;
        let mut ledger = CardLedger::from_card(card).ok_or_else(|| HoldError::NoLedgerRow {
            node: c.node.clone(),
            card: c.card.clone(),
        })?;
        ledger.instances = instances;
        let next = charge(&ledger, &c.charge).map_err(|source| HoldError::Charge {
            node: c.node.clone(),
            card: c.card.clone(),
            source,
        })?;
        card.ledger = Some(next.row);
        if next.instances.is_empty() {
            state.instances.remove(&key);
        } else {
            state.instances.insert(key, next.instances);
        }
    }
    Ok(())
}

impl Model for ChainModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let promised = self.tables.promised_cards(&s.workloads);
        for i in 0..self.nodes {
            if s.is_present(i) {
                actions.push(Action::NodeLeave(i));
                for c in 0..self.cards {
                    let slot = self.slot(i, c);
                    if promised & (1 << slot) == 0 {
                        actions.push(Action::CardFamily {
                            node: i,
                            card: c,
                            mig: s.mig & (1 << slot) == 0,
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
        actions.push(Action::MixingFlip);
        for (k, st) in s.workloads.iter().take(self.templates.len()).enumerate() {
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
            Action::Judge(k) => self.judge(s, k),
            Action::Charge(k) => self.land(s, k),
            Action::Finish(k) => self.finish(s, k),
            shape => self.shape_step(s, &shape),
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

/// Symmetry (DFS only in stateright 0.31): the canonical member of a state's class under
/// (a) renaming nodes of one kind (palette::node_kind: same labels, CPU and cards, so the
/// derivation treats them alike up to their names; the structure and holds are renamed with
/// them) and (b) reordering the cards of a node no Workload holds or was promised (nothing
/// names them). The member is the least renamed state; a renaming whose structure cannot be
/// renamed is skipped. Only the fingerprint of the result is used: exploration continues
/// from the state itself.
pub fn representative(s: &State) -> State {
    let Some(t) = tables::lookup(s.scope) else {
        return *s;
    };
    (0..t.perms.len())
        .filter_map(|p| renamed(&t, s, p))
        .min()
        .unwrap_or(*s)
}

/// `s` with node slots renamed by `t.perms[p]`, then each unheld node's cards sorted.
fn renamed(t: &Tables, s: &State, p: usize) -> Option<State> {
    let perm = t.perms.get(p)?;
    let mut out = *s;
    if p != 0 {
        out.structure = t.rename_structure(s.structure, p)?;
        out.present = 0;
        out.mig = 0;
        out.cards = [0; MAX_CARD_SLOTS];
        for (i, to) in perm.iter().take(t.nodes).enumerate() {
            let to = usize::from(*to);
            if s.is_present(i) {
                out.present |= 1 << to;
            }
            for c in 0..t.cards {
                let (from, into) = (i * t.cards + c, to * t.cards + c);
                out.cards[into] = s.cards[from];
                if s.mig & (1 << from) != 0 {
                    out.mig |= 1 << into;
                }
            }
        }
        for st in out.workloads.iter_mut() {
            *st = match *st {
                Status::InFlight(h) => Status::InFlight(t.rename_hold(h, p)),
                Status::Admitted(h) => Status::Admitted(t.rename_hold(h, p)),
                other => other,
            };
        }
    }
    if t.cards > 1 {
        let held = t.held_nodes(&out.workloads);
        for i in (0..t.nodes).filter(|i| held & (1 << i) == 0) {
            // Each card's MIG bit moves with its row (the row records the family), so the
            // bits are sorted along with the rows instead of read back from the interner.
            let first = i * t.cards;
            let mut slots = [(0u16, false); MAX_CARD_SLOTS];
            for (c, slot) in slots.iter_mut().enumerate().take(t.cards) {
                *slot = (out.cards[first + c], out.mig & (1 << (first + c)) != 0);
            }
            slots[..t.cards].sort_unstable();
            for (c, (row, mig)) in slots.into_iter().enumerate().take(t.cards) {
                out.cards[first + c] = row;
                if mig {
                    out.mig |= 1 << (first + c);
                } else {
                    out.mig &= !(1 << (first + c));
                }
            }
        }
    }
    Some(out)
}
