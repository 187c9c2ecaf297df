//! What one check shares between its states and threads: the interned card rows, holds and
//! structures, the memo tables of the expensive model work, and the node renamings the
//! symmetry reduction uses.

use std::sync::{Arc, LazyLock, OnceLock, RwLock, Weak};
use std::time::Duration;

use model::cluster::ExistingInstanceType;
use model::derive::{Derived, DerivedNode, Deriver};
use model::ledger::{seed, Charge};
use model::lifecycle::{Hold, PodWebhookVerdict};
use model::objects::{ClusterQueue, InstanceType, ResourceFlavor};
use model::placement::TasNode;
use model::steps::StepStore;

use super::memo::{fingerprint, Interner, Memo};
use super::palette;
use super::state::{CardState, Status, MAX_CARD_SLOTS, MAX_NODES, MAX_WORKLOADS};

/// Derived objects at a quiescence plus the InstanceTypes the operator authored so far (they
/// are create-only, chain.md §8.4): everything `derive_after` remembers between events.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Structure {
    /// Shared with every world built on this structure (`ChainModel::world_of`).
    pub derived: Arc<Derived>,
    pub authored: Vec<ExistingInstanceType>,
}

impl Structure {
    /// The structure with its name-keyed lists in name order. `World::apply` appends a
    /// joining node and a newly authored InstanceType at the end, so the same objects can come
    /// in another order after another history; every reader looks them up by name.
    pub fn canonical(mut derived: Derived, mut authored: Vec<ExistingInstanceType>) -> Self {
        derived.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        authored.sort_by(|a, b| a.name.cmp(&b.name));
        Structure {
            derived: Arc::new(derived),
            authored,
        }
    }

    /// A fingerprint of the whole structure (its derived `Hash`: ordered maps and vectors
    /// only, so deterministic; printing it with `Debug` first cost a tenth of a check). A
    /// partial fingerprint left buckets of structures that differ deeper down, each compared
    /// in full on every intern.
    fn fingerprint(&self) -> u64 {
        fingerprint(self)
    }
}

/// A hold with what the checker asks of it on every state, computed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldEntry {
    pub hold: Hold,
    /// Bit per node slot the hold charges.
    pub nodes: u8,
    /// Bit per card slot (`node * cards + card`) the hold charges.
    pub cards: u16,
    /// Whether it charges a partition instance.
    pub partition: bool,
    /// Fingerprint of its queue and quota: what it adds to the reserved quota.
    pub quota_fp: u64,
}

/// What one memo table did during a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoStat {
    pub name: &'static str,
    /// Distinct keys computed (misses kept).
    pub entries: usize,
    /// Time spent computing misses, summed over threads.
    pub busy: Duration,
}

/// A renaming of node slots: slot `i` becomes slot `perm[i]`.
pub type Perm = [u8; MAX_NODES];

/// The derivation's per-node, per-flavor and per-pool steps, handed to derivations as a
/// `model::derive::Deriver` (`model::steps`): kept for a whole check, whose worlds differ from
/// one derived before in one node's cards (only that node and the pools it backs re-derive), and
/// by fuzz for one scenario's property checks.
pub struct StepMemo {
    pub nodes: Memo<DerivedNode>,
    pub flavors: Memo<ResourceFlavor>,
    pub pools: Memo<(InstanceType, ClusterQueue)>,
    /// Gate 1's verdicts: a check submits a few Workload templates under a few InstanceTypes.
    pub pod_webhooks: Memo<PodWebhookVerdict>,
    /// Gate 2's TAS view of a node: a check's nodes take a few card states each.
    pub tas_nodes: Memo<TasNode>,
    /// Pools' selections (their flavors, the nodes whose Devices they read), part of a pool
    /// step's key.
    pub selections: Memo<Vec<usize>>,
}

/// Most steps of each kind a [`StepMemo`] keeps. A step's result is a whole InstanceType and
/// ClusterQueue, a ResourceFlavor, or a node's labels and flavors, where the other tables keep
/// ids and flags, so these get a smaller cap; the default scope keeps ~100 node and ~3,200 pool
/// steps.
pub const STEP_CAP: usize = 1 << 15;

impl Default for StepMemo {
    fn default() -> Self {
        StepMemo {
            nodes: Memo::with_cap(STEP_CAP),
            flavors: Memo::with_cap(STEP_CAP),
            pools: Memo::with_cap(STEP_CAP),
            pod_webhooks: Memo::with_cap(STEP_CAP),
            tas_nodes: Memo::with_cap(STEP_CAP),
            selections: Memo::with_cap(STEP_CAP),
        }
    }
}

impl StepStore for StepMemo {
    fn node(&self, key: u64, compute: &mut dyn FnMut() -> DerivedNode) -> DerivedNode {
        self.nodes.get_or(key, compute)
    }

    fn pool(
        &self,
        key: u64,
        compute: &mut dyn FnMut() -> (InstanceType, ClusterQueue),
    ) -> (InstanceType, ClusterQueue) {
        self.pools.get_or(key, compute)
    }

    fn flavor(&self, key: u64, compute: &mut dyn FnMut() -> ResourceFlavor) -> ResourceFlavor {
        self.flavors.get_or(key, compute)
    }

    fn pod_webhook(
        &self,
        key: u64,
        compute: &mut dyn FnMut() -> PodWebhookVerdict,
    ) -> PodWebhookVerdict {
        self.pod_webhooks.get_or(key, compute)
    }

    fn tas_node(&self, key: u64, compute: &mut dyn FnMut() -> TasNode) -> TasNode {
        self.tas_nodes.get_or(key, compute)
    }

    fn selection(&self, key: u64, compute: &mut dyn FnMut() -> Vec<usize>) -> Vec<usize> {
        self.selections.get_or(key, compute)
    }
}

/// The interners and memo tables of one check.
pub struct Tables {
    pub nodes: usize,
    pub cards: usize,
    pub card_rows: Interner<CardState>,
    pub structures: Interner<Structure>,
    pub holds: Interner<HoldEntry>,
    /// The fresh card row of each family (`[logical, MIG]`).
    pub fresh: [u16; 2],
    /// World-level verdict bits per world key.
    pub world_bits: Memo<u32>,
    /// The [M3] shape verdict per shape and authored InstanceTypes.
    pub shape_ok: Memo<bool>,
    /// Structure → fingerprint of its authored InstanceTypes.
    pub authored_fp: Memo<u64>,
    /// Shape, structure and shape action → structure after the event.
    pub structure_after: Memo<u32>,
    /// World key after the in-flight charges, reserved quota and template → gate-3 status and
    /// whether gates 4–5 could not place it.
    pub judged: Memo<(Status, bool)>,
    /// Present nodes, card rows and hold → card rows after its charges, and whether a charge
    /// was refused.
    pub landed: Memo<([u16; MAX_CARD_SLOTS], bool)>,
    /// Present nodes, card rows, hold and template → card rows after the release (`None`:
    /// not released).
    pub released: Memo<Option<[u16; MAX_CARD_SLOTS]>>,
    /// Structure and reserved quota → whether reserved quota is within the nominal quota.
    pub quota_ok: Memo<bool>,
    /// Structures before and after a mixing flip → the flavors it drops (deleted, retired or
    /// recreated; a queue holding quota on one migrates).
    pub flip_dropped: Memo<Vec<String>>,
    /// Node renamings that map every slot to one of the same kind (identity first).
    pub perms: Vec<Perm>,
    /// (structure, renaming) → renamed structure (`u32::MAX`: could not rename).
    pub renamed_structure: Memo<u32>,
    /// (hold, renaming) → renamed hold.
    pub renamed_hold: Memo<u32>,
    /// The derivation's steps, shared by every derivation the check runs.
    pub steps: Arc<StepMemo>,
}

impl Tables {
    pub fn new(nodes: usize, cards: usize) -> Self {
        let card_rows = Interner::default();
        let absent = CardState::default();
        card_rows.intern(fingerprint(&absent), absent);
        let fresh = [false, true].map(|mig| {
            let row = CardState {
                mig,
                ledger: seed(palette::card_capability(mig)).row,
                instances: Vec::new(),
            };
            card_rows.intern(fingerprint(&row), row) as u16
        });
        Tables {
            nodes,
            cards,
            card_rows,
            structures: Interner::default(),
            holds: Interner::default(),
            fresh,
            world_bits: Memo::default(),
            shape_ok: Memo::default(),
            authored_fp: Memo::default(),
            structure_after: Memo::default(),
            judged: Memo::default(),
            landed: Memo::default(),
            released: Memo::default(),
            quota_ok: Memo::default(),
            flip_dropped: Memo::default(),
            perms: kind_preserving_perms(nodes),
            renamed_structure: Memo::default(),
            renamed_hold: Memo::default(),
            steps: Arc::default(),
        }
    }

    /// How the check's worlds derive: through its step memo.
    pub fn deriver(&self) -> Deriver {
        Deriver::with_steps(self.steps.clone())
    }

    pub fn card_row(&self, id: u16) -> &CardState {
        static ABSENT: LazyLock<CardState> = LazyLock::new(CardState::default);
        self.card_rows.get(u32::from(id)).unwrap_or(&ABSENT)
    }

    pub fn intern_card(&self, row: CardState) -> u16 {
        let id = self.card_rows.intern(fingerprint(&row), row);
        u16::try_from(id).unwrap_or(u16::MAX)
    }

    pub fn structure(&self, id: u32) -> &Structure {
        static EMPTY: LazyLock<Structure> = LazyLock::new(|| Structure {
            derived: Arc::default(),
            authored: Vec::new(),
        });
        self.structures.get(id).unwrap_or(&EMPTY)
    }

    /// A fingerprint of the structure's authored InstanceTypes.
    pub fn authored_fingerprint(&self, id: u32) -> u64 {
        self.authored_fp
            .get_or(u64::from(id), || fingerprint(&self.structure(id).authored))
    }

    pub fn intern_structure(&self, s: Structure) -> u32 {
        self.structures.intern(s.fingerprint(), s)
    }

    pub fn hold(&self, id: u32) -> &HoldEntry {
        static NONE: LazyLock<HoldEntry> = LazyLock::new(|| HoldEntry {
            hold: Hold::default(),
            nodes: 0,
            cards: 0,
            partition: false,
            quota_fp: 0,
        });
        self.holds.get(id).unwrap_or(&NONE)
    }

    pub fn intern_hold(&self, hold: Hold) -> u32 {
        let mut nodes = 0u8;
        let mut cards = 0u16;
        for c in &hold.charges {
            let Some(i) = (0..self.nodes).find(|i| palette::node_name(*i) == c.node) else {
                continue;
            };
            nodes |= 1 << i;
            if let Some(k) = (0..self.cards).find(|k| palette::card_id(*k) == c.card) {
                cards |= 1 << (i * self.cards + k);
            }
        }
        let partition = hold
            .charges
            .iter()
            .any(|c| matches!(c.charge, Charge::Partition(_)));
        let fp = fingerprint(&hold);
        let quota_fp = fingerprint(&(&hold.queue, &hold.quota));
        self.holds.intern(
            fp,
            HoldEntry {
                hold,
                nodes,
                cards,
                partition,
                quota_fp,
            },
        )
    }

    /// What the reserved quota of these statuses is made of: the sorted quota fingerprints
    /// of their holds (in-flight and admitted). Equal keys mean equal reserved quota
    /// ([`ChainModel::reserved_of`](super::chain::ChainModel::reserved_of) sums them).
    pub fn quota_key(&self, workloads: &[Status; MAX_WORKLOADS]) -> [u64; MAX_WORKLOADS] {
        let mut key = workloads.map(|s| s.hold().map_or(0, |h| self.hold(h).quota_fp));
        key.sort_unstable();
        key
    }

    /// Card slots charged or promised by the holds among `workloads`.
    pub fn promised_cards(&self, workloads: &[Status; MAX_WORKLOADS]) -> u16 {
        workloads
            .iter()
            .filter_map(|s| s.hold())
            .fold(0, |m, h| m | self.hold(h).cards)
    }

    /// Node slots charged or promised by the holds among `workloads`.
    pub fn held_nodes(&self, workloads: &[Status; MAX_WORKLOADS]) -> u8 {
        workloads
            .iter()
            .filter_map(|s| s.hold())
            .fold(0, |m, h| m | self.hold(h).nodes)
    }

    /// Per memo table: entries (how many times that model work ran) and the time it took;
    /// then the interners' sizes (no time of their own).
    pub fn sizes(&self) -> Vec<MemoStat> {
        fn memo<V: Clone>(name: &'static str, table: &Memo<V>) -> MemoStat {
            MemoStat {
                name,
                entries: table.len(),
                busy: table.busy(),
            }
        }
        let interned = |name, entries| MemoStat {
            name,
            entries,
            busy: Duration::ZERO,
        };
        vec![
            memo("world verdicts", &self.world_bits),
            memo("[M3] shape verdicts", &self.shape_ok),
            memo("re-derivations", &self.structure_after),
            memo("gate-3 judgements", &self.judged),
            memo("landings", &self.landed),
            memo("releases", &self.released),
            memo("quota checks", &self.quota_ok),
            memo("mixing-flip drops", &self.flip_dropped),
            memo("node steps", &self.steps.nodes),
            memo("pool steps", &self.steps.pools),
            memo("gate-1 verdicts", &self.steps.pod_webhooks),
            memo("TAS nodes", &self.steps.tas_nodes),
            memo("pool selections", &self.steps.selections),
            memo("renamed structures", &self.renamed_structure),
            interned("interned card rows", self.card_rows.len()),
            interned("interned structures", self.structures.len()),
            interned("interned holds", self.holds.len()),
        ]
    }

    /// The structure with every node name renamed by `perm` (`None` when it does not
    /// serialize): a renamed node keeps its kind, so it is the structure the renamed history
    /// reaches.
    pub fn rename_structure(&self, id: u32, p: usize) -> Option<u32> {
        let perm = *self.perms.get(p)?;
        let got = self.renamed_structure.get_or(fingerprint(&(id, p)), || {
            let s = self.structure(id);
            let renamed = (|| {
                let derived = rename_value(serde_json::to_value(&s.derived).ok()?, &perm);
                let authored = rename_value(serde_json::to_value(&s.authored).ok()?, &perm);
                Some(Structure {
                    derived: serde_json::from_value(derived).ok()?,
                    authored: serde_json::from_value(authored).ok()?,
                })
            })();
            renamed.map_or(u32::MAX, |r| self.intern_structure(r))
        });
        (got != u32::MAX).then_some(got)
    }

    /// The hold with its node names renamed by `perm`.
    pub fn rename_hold(&self, id: u32, p: usize) -> u32 {
        let Some(perm) = self.perms.get(p).copied() else {
            return id;
        };
        self.renamed_hold.get_or(fingerprint(&(id, p)), || {
            let mut hold = self.hold(id).hold.clone();
            for c in &mut hold.charges {
                c.node = rename_str(&c.node, &perm);
            }
            for q in &mut hold.quota {
                q.flavor = rename_str(&q.flavor, &perm);
            }
            self.intern_hold(hold)
        })
    }
}

/// Every renaming of `nodes` slots that keeps each slot's node kind (palette::node_kind);
/// the identity first.
fn kind_preserving_perms(nodes: usize) -> Vec<Perm> {
    let mut out = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    fn extend(nodes: usize, current: &mut Vec<u8>, out: &mut Vec<Perm>) {
        let i = current.len();
        if i == nodes {
            let mut p: Perm = std::array::from_fn(|k| k as u8);
            p[..nodes].copy_from_slice(current);
            out.push(p);
            return;
        }
        for j in 0..nodes as u8 {
            if !current.contains(&j) && palette::node_kind(j as usize) == palette::node_kind(i) {
                current.push(j);
                extend(nodes, current, out);
                current.pop();
            }
        }
    }
    extend(nodes.min(MAX_NODES), &mut current, &mut out);
    out
}

/// `s` with each node name `node-<i>` replaced by `node-<perm[i]>` (names are one digit:
/// at most [`MAX_NODES`] slots, so no name is a prefix of another).
fn rename_str(s: &str, perm: &Perm) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("node-") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        let digit = after.chars().next().and_then(|c| c.to_digit(10));
        match digit.and_then(|d| perm.get(d as usize)) {
            Some(to) => {
                out.push_str(&palette::node_name(*to as usize));
                rest = &after[1..];
            }
            None => {
                out.push_str("node-");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn rename_value(v: serde_json::Value, perm: &Perm) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(rename_str(&s, perm)),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| rename_value(x, perm)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, x)| (rename_str(&k, perm), rename_value(x, perm)))
                .collect(),
        ),
        other => other,
    }
}

/// The registry the symmetry function reaches a check's tables through: stateright 0.31
/// takes the representative as a plain `fn(&State) -> State`, so a state names its check by
/// a slot here. Slots hold weak references: a finished check's tables are freed.
fn registry() -> &'static RwLock<Vec<Weak<Tables>>> {
    static REGISTRY: OnceLock<RwLock<Vec<Weak<Tables>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(Vec::new()))
}

/// Registers a check's tables; the slot goes into every state.
pub fn register(tables: &Arc<Tables>) -> u32 {
    let mut all = registry().write().unwrap_or_else(|e| e.into_inner());
    if let Some(free) = all.iter().position(|w| w.strong_count() == 0) {
        all[free] = Arc::downgrade(tables);
        return free as u32;
    }
    all.push(Arc::downgrade(tables));
    (all.len() - 1) as u32
}

/// The tables of the check in slot `scope`, while it runs.
pub fn lookup(scope: u32) -> Option<Arc<Tables>> {
    registry()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(scope as usize)
        .and_then(Weak::upgrade)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_swaps_whole_node_names_only() {
        let mut perm: Perm = std::array::from_fn(|k| k as u8);
        perm.swap(0, 1);
        assert_eq!(
            rename_str("node-0,node-1 node-2", &perm),
            "node-1,node-0 node-2"
        );
        assert_eq!(rename_str("node-x node-", &perm), "node-x node-");
    }

    #[test]
    fn only_nodes_of_one_kind_are_interchangeable() {
        // Slots 0 and 1 are both the amd64 AMD kind; slot 2 is arm64.
        let perms = kind_preserving_perms(3);
        assert_eq!(perms.len(), 2);
        assert_eq!(&perms[0][..3], &[0, 1, 2]);
        assert_eq!(&perms[1][..3], &[1, 0, 2]);
    }
}
