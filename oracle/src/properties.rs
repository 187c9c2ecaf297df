//! Properties the chain must have on every scenario (research/chain.md §14 invariants,
//! §17 rules, admission.md §16). Each property calls the model to derive or replay and then
//! states what must hold of the result; none re-implements a rule. Each does a handful of
//! derivations, so `check_all` stays within the fuzzer's budget on small clusters.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use model::cluster::{Cluster, Node, SharedOnceMax};
use model::derive::{derive, derive_after, Derived, Deriver};
use model::devices::{Card, DeviceGroup, Devices};
use model::events::{Effect, Event, World};
use model::labels::{self, Text, ARCH, HOSTNAME, KUBE_SYSTEM, MANAGED, OS, QUEUE_ENTRANCE};
use model::lifecycle::{workload_key, Outcome};
use model::objects::{InstanceType, ResourceView, StopPolicy};
use model::scenario::Scenario;
use model::units::{CREDITS_PER_CARD, SHARES_PER_CARD};
use model::views::PERCENT_PER_CARD;
use model::views::{card_family, CardFamily};
use serde::Serialize;

use crate::diff::{diff, diff_restricted, Difference, ObjectKind};

/// A property that does not hold, saying what was expected and what was got: in words
/// (`message`, for people), and as a record (`check`, `differences`, for reports and
/// signatures), so nothing downstream reads the words back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{property}: {message}")]
pub struct Violation {
    pub property: &'static str,
    /// The oracle function that decided (`capacities_count_cards`, `same_objects`, …).
    pub check: &'static str,
    pub message: String,
    /// Expected versus observed per field: the object (kind, name), its field path as the
    /// objects spell it, both values. Empty only where no field is concerned (a derivation
    /// that could not be mapped back).
    pub differences: Vec<Difference>,
}

/// A chain implementation: the objects for a cluster after an optional previous quiescence
/// (the model's is `model::derive::derive_after`).
pub type Chain<'a> = &'a dyn Fn(&Cluster, Option<&Derived>) -> Derived;

pub const INVARIANCE: &str = "invariance";
pub const POOL_ISOLATION: &str = "pool-isolation";
pub const STRUCTURE: &str = "structure";
pub const ACCOUNTING: &str = "accounting";
pub const ADMISSION: &str = "admission";
pub const IDEMPOTENCE: &str = "idempotence";

/// Every property's name, in the order [`check_all`] runs them.
pub const PROPERTIES: [&str; 6] = [
    INVARIANCE,
    POOL_ISOLATION,
    STRUCTURE,
    ACCOUNTING,
    ADMISSION,
    IDEMPOTENCE,
];

/// Runs every property on `s`; an empty list means all hold.
pub fn check_all(s: &Scenario) -> Vec<Violation> {
    check_all_through(s, &Deriver::plain())
}

/// [`check_all`], every derivation and replay through `deriver`. The properties derive
/// variants of one cluster (reordered, renamed, grown by a pool, derived again), so a deriver
/// whose step store lives for the scenario computes the node and pool steps they share once.
pub fn check_all_through(s: &Scenario, deriver: &Deriver) -> Vec<Violation> {
    let chain = |c: &Cluster, previous: Option<&Derived>| deriver.derive_after(c, previous);
    let base = chain(&s.cluster, None);
    // One replay of the events serves the admission checks and the structure after them.
    let (admitted, end) = admission_run(s, &base, deriver);
    [
        invariance_from(s, &base, &chain),
        pool_isolation_from(s, &base, &chain),
        structure_initially_and_after(s, &base, &end),
        accounting_from(s, &base, deriver),
        admitted,
        idempotence_from(s, &base, &chain),
    ]
    .into_iter()
    .filter_map(Result::err)
    .collect()
}

/// [`invariance_with`], [`pool_isolation_with`] and [`idempotence_with`] in that order,
/// the first violation returned: the three compare against one derivation of the cluster, made
/// once (what a check asks of every shape it reaches).
pub fn shape_with(s: &Scenario, chain: Chain<'_>) -> Result<(), Violation> {
    let base = chain(&s.cluster, None);
    invariance_from(s, &base, chain)?;
    pool_isolation_from(s, &base, chain)?;
    idempotence_from(s, &base, chain)
}

fn violation(
    property: &'static str,
    check: &'static str,
    message: impl Into<String>,
    differences: Vec<Difference>,
) -> Violation {
    Violation {
        property,
        check,
        message: message.into(),
        differences,
    }
}

/// One expected-versus-observed row.
fn row(
    kind: ObjectKind,
    name: &str,
    field: impl Into<String>,
    expected: Option<String>,
    observed: Option<String>,
) -> Difference {
    Difference {
        kind,
        name: name.to_string(),
        field: field.into(),
        expected,
        observed,
    }
}

/// `metadata.labels["key"]`, as the objects' label fields are named in differences.
fn label_field(key: &str) -> String {
    format!("metadata.labels[\"{key}\"]")
}

/// An InstanceType view's field under `status` (shared/crds/worker.gpustack.ai_instancetypes.yaml).
pub fn view_field(view: &str) -> &'static str {
    match view {
        "exclusive" => "accelerator",
        "shared" => "acceleratorShared",
        "sliced" => "acceleratorSliced",
        "partitioned" => "acceleratorPartitioned",
        _ => "cpu",
    }
}

/// At most this many differences are quoted in a message.
const QUOTED: usize = 3;

/// `what: expected no differences, got N: d1; d2; d3`.
fn differences_message(what: &str, d: &[Difference]) -> String {
    let quoted: Vec<String> = d.iter().take(QUOTED).map(ToString::to_string).collect();
    let more = d.len().saturating_sub(QUOTED);
    let tail = if more > 0 {
        format!("; … {more} more")
    } else {
        String::new()
    };
    format!(
        "{what}: expected no differences, got {}: {}{tail}",
        d.len(),
        quoted.join("; ")
    )
}

/// Two derivations that must publish the same objects (identity-matched, see [`diff`]).
pub fn same_objects(
    property: &'static str,
    what: &str,
    expected: &Derived,
    got: &Derived,
) -> Result<(), Violation> {
    let d = diff(expected, got);
    if d.is_empty() {
        Ok(())
    } else {
        let message = differences_message(what, &d);
        Err(violation(property, "same_objects", message, d))
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Invariance
// ---------------------------------------------------------------------------------------------

/// Node order, a consistent node renaming (names and hostname labels) and namespace order
/// change nothing but names (chain.md §17: the rules read labels, never list positions).
pub fn invariance(s: &Scenario) -> Result<(), Violation> {
    invariance_with(s, &derive_after)
}

/// [`invariance`] of another chain implementation (a test's deliberately broken one).
pub fn invariance_with(s: &Scenario, chain: Chain<'_>) -> Result<(), Violation> {
    invariance_from(s, &chain(&s.cluster, None), chain)
}

fn invariance_from(s: &Scenario, base: &Derived, chain: Chain<'_>) -> Result<(), Violation> {
    // Reversing fewer than two nodes gives the same input: that comparison is idempotence's.
    if s.cluster.nodes.len() > 1 {
        let mut reordered = s.cluster.clone();
        reordered.nodes.reverse();
        same_objects(
            INVARIANCE,
            "nodes listed in reverse order",
            base,
            &chain(&reordered, None),
        )?;
    }
    let (renamed, back) = rename_nodes(&s.cluster);
    let renamed = chain(&renamed, None);
    // Fast path: map the fields known to carry node names; only if that leaves differences,
    // map every string of the serialized objects (a node name may have leaked anywhere).
    let mut quick = renamed.clone();
    map_known_names(&mut quick, &back);
    if diff(base, &quick).is_empty() {
        return namespace_order(s, base, chain);
    }
    let mapped = map_names(&renamed, &back).map_err(|e| {
        violation(
            INVARIANCE,
            "map_names",
            format!("renamed derivation could not be mapped back: {e}"),
            Vec::new(),
        )
    })?;
    same_objects(INVARIANCE, "nodes renamed and mapped back", base, &mapped)?;
    namespace_order(s, base, chain)
}

/// Namespace order changes nothing.
fn namespace_order(s: &Scenario, base: &Derived, chain: Chain<'_>) -> Result<(), Violation> {
    if s.cluster.namespaces.len() < 2 {
        return Ok(());
    }
    let mut namespaces = s.cluster.clone();
    namespaces.namespaces.reverse();
    same_objects(
        INVARIANCE,
        "namespaces listed in reverse order",
        base,
        &chain(&namespaces, None),
    )
}

/// The cluster with every node name and hostname label value given a prefix that keeps their
/// order and collides with nothing, and the renamed → original map.
pub fn rename_nodes(cluster: &Cluster) -> (Cluster, BTreeMap<String, String>) {
    let originals: BTreeSet<&str> = cluster
        .nodes
        .iter()
        .flat_map(|n| {
            std::iter::once(n.name.as_str()).chain(n.labels.get(HOSTNAME).map(Text::as_str))
        })
        .collect();
    let mut prefix = String::from("renamed-");
    while originals
        .iter()
        .any(|o| originals.contains(format!("{prefix}{o}").as_str()))
    {
        prefix.push('x');
    }
    let mut back = BTreeMap::new();
    let mut out = cluster.clone();
    for node in &mut out.nodes {
        let new = format!("{prefix}{}", node.name);
        back.insert(new.clone(), node.name.clone());
        node.name = new;
        if let Some(h) = node.labels.get_mut(HOSTNAME) {
            let new = format!("{prefix}{h}");
            back.insert(new.clone(), h.to_string());
            *h = new.into();
        }
    }
    (out, back)
}

/// Maps node names back in the fields that carry them: node names and label values, and each
/// ResourceFlavor's contributor list and label maps.
fn map_known_names(d: &mut Derived, back: &BTreeMap<String, String>) {
    let one = |s: &mut Text| {
        if let Some(o) = back.get(s.as_str()) {
            *s = o.into();
        }
    };
    let labels = |l: &mut model::labels::Labels| {
        l.values_mut().for_each(|v| {
            if let Some(o) = back.get(v.as_str()) {
                *v = o.into();
            }
        })
    };
    for n in &mut d.nodes {
        one(&mut n.name);
        labels(&mut n.labels);
        n.devices_labels.iter_mut().for_each(labels);
    }
    for rf in &mut d.resource_flavors {
        rf.nodes.iter_mut().for_each(one);
        labels(&mut rf.labels);
        labels(&mut rf.node_labels);
        labels(&mut rf.annotations);
        labels(&mut rf.flavor.node_labels);
    }
}

/// Replaces every string (value or key) of the serialized derivation found in `back`.
pub fn map_names(
    d: &Derived,
    back: &BTreeMap<String, String>,
) -> Result<Derived, serde_json::Error> {
    fn walk(v: serde_json::Value, back: &BTreeMap<String, String>) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) => Value::String(back.get(&s).cloned().unwrap_or(s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|i| walk(i, back)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (back.get(&k).cloned().unwrap_or(k), walk(v, back)))
                    .collect(),
            ),
            other => other,
        }
    }
    let value = serde_json::to_value(d)?;
    serde_json::from_value(walk(value, back))
}

// ---------------------------------------------------------------------------------------------
// 2. Pool isolation
// ---------------------------------------------------------------------------------------------

/// Pools never take what is not theirs (chain.md §7.3, §14 items 4–5, §17 rules 14 and 24):
/// nodes of a new accelerator key change no object of an existing pool (the key is chosen to
/// nest with one present: a10 ↔ a100, l40 ↔ l40s, h20 ↔ h200, else the present key plus a
/// digit); every flavor of a queue has the queue's os/arch; under CPU awareness every flavor
/// of a queue with a real CPU group carries that group's key.
pub fn pool_isolation(s: &Scenario) -> Result<(), Violation> {
    pool_isolation_with(s, &derive_after)
}

/// [`pool_isolation`] of another chain implementation (one served by a step store).
pub fn pool_isolation_with(s: &Scenario, chain: Chain<'_>) -> Result<(), Violation> {
    pool_isolation_from(s, &chain(&s.cluster, None), chain)
}

fn pool_isolation_from(s: &Scenario, base: &Derived, chain: Chain<'_>) -> Result<(), Violation> {
    os_arch_unmixed(base)?;
    if s.cluster.settings.aware_cpu_manufacturer {
        cpu_groups_unmixed(base)?;
    } else {
        let mut aware = s.cluster.clone();
        aware.settings.aware_cpu_manufacturer = true;
        cpu_groups_unmixed(&chain(&aware, None))?;
    }
    let (intruded, key) = with_intruder(&s.cluster);
    let pools: BTreeSet<String> = base
        .instance_types
        .iter()
        .map(|i| i.name.to_string())
        .collect();
    let d = diff_restricted(base, &chain(&intruded, None), &pools);
    if d.is_empty() {
        Ok(())
    } else {
        let message = differences_message(
            &format!("adding a node of accelerator key `{key}` to the existing pools"),
            &d,
        );
        Err(violation(POOL_ISOLATION, "pool_isolation", message, d))
    }
}

/// Every flavor a queue lists carries the queue's os and arch labels (§14 item 5).
pub fn os_arch_unmixed(d: &Derived) -> Result<(), Violation> {
    let flavors: BTreeMap<&str, &model::objects::ResourceFlavor> = d
        .resource_flavors
        .iter()
        .map(|rf| (rf.name.as_str(), rf))
        .collect();
    for q in &d.cluster_queues {
        for key in [OS, ARCH] {
            let Some(want) = q.labels.get(key) else {
                continue;
            };
            for f in q.resource_groups.iter().flat_map(|g| &g.flavors) {
                let Some(rf) = flavors.get(f.flavor.as_str()) else {
                    continue;
                };
                let got = rf.labels.get(key).map(Text::as_str).unwrap_or("<unset>");
                if got != want {
                    return Err(violation(
                        POOL_ISOLATION,
                        "os_arch_unmixed",
                        format!(
                            "queue {} ({key}={want}) lists flavor {}: expected {key}={want}, got {key}={got}",
                            q.name, f.flavor
                        ),
                        vec![row(
                            ObjectKind::ResourceFlavor,
                            &f.flavor,
                            label_field(key),
                            Some(want.to_string()),
                            rf.labels.get(key).map(Text::to_string),
                        )],
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Under awareness, every flavor of a queue whose InstanceType names a real CPU group carries
/// `general.feature.gpustack.ai/<group>=true` (§7.2; §17 rule 24 exempts `generic`).
pub fn cpu_groups_unmixed(d: &Derived) -> Result<(), Violation> {
    let flavors: BTreeMap<&str, &model::objects::ResourceFlavor> = d
        .resource_flavors
        .iter()
        .map(|rf| (rf.name.as_str(), rf))
        .collect();
    for it in &d.instance_types {
        let group = &it.spec.general_group;
        if group.is_empty() || group == model::pool::GENERAL_GROUP_GENERIC {
            continue;
        }
        let Some(q) = d.cluster_queues.iter().find(|q| q.name == it.name) else {
            continue;
        };
        let key = labels::general_feature_key(group);
        // Awareness is read at call time (chain.md §7.2): with it off, the queue of an
        // InstanceType created while it was on carries no general key and, like every CPU
        // queue, selects all CPU flavors of its os/arch (§7.3). Only aware queues are judged.
        if q.labels.get(&key).map(Text::as_str) != Some("true") {
            continue;
        }
        for f in q.resource_groups.iter().flat_map(|g| &g.flavors) {
            let Some(rf) = flavors.get(f.flavor.as_str()) else {
                continue;
            };
            if rf.labels.get(&key).map(Text::as_str) != Some("true") {
                return Err(violation(
                    POOL_ISOLATION,
                    "cpu_groups_unmixed",
                    format!(
                        "aware queue {} (CPU group {group}) lists flavor {}: expected {key}=true, got {}",
                        q.name,
                        f.flavor,
                        rf.labels.get(&key).map_or("<unset>", Text::as_str)
                    ),
                    vec![row(
                        ObjectKind::ResourceFlavor,
                        &f.flavor,
                        label_field(&key),
                        Some("true".into()),
                        rf.labels.get(&key).map(Text::to_string),
                    )],
                ));
            }
        }
    }
    Ok(())
}

/// Accelerator products whose keys nest (one is a prefix of the other).
const NESTED: [(&str, &str); 3] = [("a10", "a100"), ("l40", "l40s"), ("h20", "h200")];

/// The cluster plus one managed node (no CPU flavor: zero cores) of a new accelerator key
/// that nests with a key present; returns the cluster and that key.
pub fn with_intruder(cluster: &Cluster) -> (Cluster, String) {
    let groups: Vec<&DeviceGroup> = cluster
        .nodes
        .iter()
        .filter_map(|n| n.devices.as_ref())
        .flat_map(|d| &d.groups)
        .collect();
    let present: BTreeSet<String> = groups.iter().map(|g| g.accelerator_key()).collect();
    let partner = |id: &str| {
        NESTED.iter().find_map(|(a, b)| {
            if *a == id {
                Some(b.to_string())
            } else if *b == id {
                Some(a.to_string())
            } else {
                None
            }
        })
    };
    let mut sorted = groups.clone();
    sorted.sort_by_key(|g| g.accelerator_key());
    let chosen = sorted.iter().find_map(|g| {
        partner(&g.id)
            .into_iter()
            .chain(std::iter::once(format!("{}0", g.id)))
            .map(|id| (g.manufacturer.clone(), id))
            .find(|(m, id)| !present.contains(&format!("{m}-{id}")))
    });
    let (manufacturer, id) = chosen.unwrap_or_else(|| ("nvidia".into(), "a10".into()));
    let template = sorted.first().copied();
    let mut group = model::examples::nvidia_group(&id, &format!("{id} intruder"), 24576, 2);
    group.manufacturer = manufacturer;
    if let Some(t) = template {
        group.memory_mib = t.memory_mib;
        group.runtime_version = t.runtime_version.clone();
    }
    let key = group.accelerator_key();
    let mut name = String::from("intruder");
    while cluster.nodes.iter().any(|n| n.name == name) {
        name.push('x');
    }
    let mut node = model::examples::nfd_node(&name, "AMD", "AMD EPYC 7763", 0);
    if let Some(first) = cluster.nodes.first() {
        for k in [OS, ARCH] {
            if let Some(v) = first.labels.get(k) {
                node.labels.insert(k.into(), v.clone());
            }
        }
    }
    node.labels.insert(MANAGED.into(), "true".into());
    node.devices = Some(Devices {
        groups: vec![group],
    });
    let mut out = cluster.clone();
    out.nodes.push(node);
    (out, key)
}

// ---------------------------------------------------------------------------------------------
// 3. Structure
// ---------------------------------------------------------------------------------------------

/// One isolated ClusterQueue per InstanceType, one LocalQueue per queue per eligible namespace,
/// and every entrance names one (chain.md §14 items 1–2, §11, §17 rules 13, 17, 22); checked on
/// the initial derivation and after the scenario's events.
pub fn structure(s: &Scenario) -> Result<(), Violation> {
    structure_from(s, &derive(&s.cluster))
}

fn structure_from(s: &Scenario, base: &Derived) -> Result<(), Violation> {
    structure_initially_and_after(s, base, &replay(s))
}

/// Structure of the initial derivation and, when there were events, of the world after them.
fn structure_initially_and_after(
    s: &Scenario,
    base: &Derived,
    end: &World,
) -> Result<(), Violation> {
    structure_of("initially", base, &s.cluster)?;
    if s.events.is_empty() {
        return Ok(());
    }
    structure_of("after the events", &end.observe(), end.cluster())
}

/// The world after every event of `s`.
fn replay(s: &Scenario) -> World {
    let mut w = World::new(s.cluster.clone());
    for e in &s.events {
        w.apply(e);
    }
    w
}

/// Namespaces that get LocalQueues: not the system namespace, not kube-system, not terminating.
pub fn eligible_namespaces(cluster: &Cluster) -> BTreeSet<&str> {
    cluster
        .namespaces
        .iter()
        .filter(|n| {
            !n.terminating && n.name != cluster.settings.system_namespace && n.name != KUBE_SYSTEM
        })
        .map(|n| n.name.as_str())
        .collect()
}

/// The structure checks on one derivation of `cluster`.
pub fn structure_of(when: &str, d: &Derived, cluster: &Cluster) -> Result<(), Violation> {
    let fail = |(m, rows): (String, Vec<Difference>)| {
        Err(violation(
            STRUCTURE,
            "structure_of",
            format!("{when}: {m}"),
            rows,
        ))
    };
    let its = count(d.instance_types.iter().map(|i| i.name.as_str()));
    let cqs = count(d.cluster_queues.iter().map(|q| q.name.as_str()));
    for name in its.keys().chain(cqs.keys()) {
        let (i, q) = (
            its.get(name).copied().unwrap_or(0),
            cqs.get(name).copied().unwrap_or(0),
        );
        if (i, q) != (1, 1) {
            let rows = [(ObjectKind::InstanceType, i), (ObjectKind::ClusterQueue, q)]
                .into_iter()
                .filter(|(_, n)| *n != 1)
                .map(|(kind, n)| row(kind, name, "", Some("1".into()), Some(n.to_string())))
                .collect();
            return fail((
                format!("{name}: expected one InstanceType and one ClusterQueue, got {i} and {q}"),
                rows,
            ));
        }
    }
    if let Some(q) = d.cluster_queues.iter().find(|q| !q.cohort.is_empty()) {
        return fail((
            format!(
                "ClusterQueue {}: expected no cohort, got `{}`",
                q.name, q.cohort
            ),
            vec![row(
                ObjectKind::ClusterQueue,
                &q.name,
                "spec.cohort",
                None,
                Some(q.cohort.to_string()),
            )],
        ));
    }
    let namespaces = eligible_namespaces(cluster);
    // a created Namespace gives every non-terminating ClusterQueue LocalQueues, the foreign
    // ones too (chain.md §11)
    let mut entrances = cqs.clone();
    for f in cluster.foreign_queues.iter().filter(|f| !f.terminating) {
        entrances.entry(f.name.as_str()).or_insert(1);
    }
    let mut lqs: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for l in &d.local_queues {
        *lqs.entry((l.namespace.as_str(), l.cluster_queue.as_str()))
            .or_default() += 1;
    }
    for q in entrances.keys() {
        for ns in &namespaces {
            let got = lqs.get(&(*ns, *q)).copied().unwrap_or(0);
            if got != 1 {
                return fail((
                    format!(
                        "ClusterQueue {q} in namespace {ns}: expected one LocalQueue, got {got}"
                    ),
                    vec![row(
                        ObjectKind::LocalQueue,
                        &format!("{ns}/*"),
                        "spec.clusterQueue",
                        Some(format!("{q} (one LocalQueue)")),
                        Some(format!("{q} ({got} LocalQueues)")),
                    )],
                ));
            }
        }
    }
    if let Some(l) = d.local_queues.iter().find(|l| {
        !namespaces.contains(l.namespace.as_str())
            || !entrances.contains_key(l.cluster_queue.as_str())
    }) {
        return fail((
            format!(
                "LocalQueue {}/{} for {}: expected none (namespace not eligible or queue unknown)",
                l.namespace, l.name, l.cluster_queue
            ),
            vec![row(
                ObjectKind::LocalQueue,
                &format!("{}/{}", l.namespace, l.name),
                "",
                None,
                Some(l.cluster_queue.to_string()),
            )],
        ));
    }
    // one index of the LocalQueues, not a scan per namespace per InstanceType: with the scan a
    // replay of N namespace events took time growing as N^3 (issue [M16], "Slow inputs")
    let served: HashSet<(&str, &str, &str)> = d
        .local_queues
        .iter()
        .map(|l| {
            (
                l.namespace.as_str(),
                l.name.as_str(),
                l.cluster_queue.as_str(),
            )
        })
        .collect();
    for it in &d.instance_types {
        entrance_is_served(it, &served, &namespaces).or_else(fail)?;
    }
    Ok(())
}

/// How often each name occurs.
fn count<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, usize> {
    let mut c = BTreeMap::new();
    for n in names {
        *c.entry(n).or_default() += 1;
    }
    c
}

/// The InstanceType's entrance is its queue-entrance label and names its LocalQueue in every
/// eligible namespace.
fn entrance_is_served(
    it: &InstanceType,
    served: &HashSet<(&str, &str, &str)>,
    namespaces: &BTreeSet<&str>,
) -> Result<(), (String, Vec<Difference>)> {
    let entrance = &it.status.entrance;
    let label = it
        .labels
        .get(QUEUE_ENTRANCE)
        .map_or("<unset>", Text::as_str);
    if label != entrance {
        return Err((
            format!(
                "InstanceType {}: expected label {QUEUE_ENTRANCE} = status.entrance `{entrance}`, got `{label}`",
                it.name
            ),
            vec![row(
                ObjectKind::InstanceType,
                &it.name,
                label_field(QUEUE_ENTRANCE),
                Some(entrance.to_string()),
                it.labels.get(QUEUE_ENTRANCE).map(Text::to_string),
            )],
        ));
    }
    for ns in namespaces {
        if !served.contains(&(*ns, entrance.as_str(), it.name.as_str())) {
            return Err((
                format!(
                    "InstanceType {}: expected entrance `{entrance}` to name its LocalQueue in namespace {ns}, got none",
                    it.name
                ),
                vec![row(
                    ObjectKind::LocalQueue,
                    &format!("{ns}/{entrance}"),
                    "spec.clusterQueue",
                    Some(it.name.to_string()),
                    None,
                )],
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 4. Accounting
// ---------------------------------------------------------------------------------------------

/// The numbers add up (chain.md §9.1–9.4, §10.2, §14 items 6 and 8): each card feeds one
/// family; nominal quota = flavor capacity × 1,600,000 credits (accelerated) or × 1 core;
/// EX capacity = the pool's unpartitioned cards, SH = 10 ×, SL = 100 × sliceable cards, PT =
/// Σ ceilings; once-max ≤ remaining ≤ capacity; and admitting then finishing the scenario's
/// workloads restores every published object.
pub fn accounting(s: &Scenario) -> Result<(), Violation> {
    accounting_from(s, &derive(&s.cluster), &Deriver::plain())
}

fn accounting_from(s: &Scenario, d: &Derived, deriver: &Deriver) -> Result<(), Violation> {
    cards_in_one_family(&s.cluster)?;
    quota_matches_capacity(d)?;
    for it in &d.instance_types {
        views_bounded(it, s.cluster.settings.shared_once_max)?;
        if let Some(pool) = pool_cards(d, &s.cluster, it) {
            capacities_count_cards(it, &pool)?;
        }
    }
    release_restores_from(s, d, deriver)
}

/// Every card's family, as the views classify it, agrees with its capability: partitioned
/// cards feed PT only, the rest EX/SH (and SL when logically sliceable) (§14 item 6).
pub fn cards_in_one_family(cluster: &Cluster) -> Result<(), Violation> {
    for node in &cluster.nodes {
        for (gi, g) in node.devices.iter().flat_map(|d| &d.groups).enumerate() {
            for (ci, c) in g.cards.iter().enumerate() {
                let cap = c.capability_or_default();
                let family = card_family(cap);
                let partitioned = family == CardFamily::Partitioned;
                let sliceable = family == CardFamily::LogicallySliceable;
                if partitioned != cap.is_partitioned()
                    || (sliceable && cap.is_partitioned())
                    || (partitioned && cap.is_whole_card_capable())
                {
                    return Err(violation(
                        ACCOUNTING,
                        "cards_in_one_family",
                        format!(
                            "card {} on {}: expected exactly one family, got {family:?} for partitioned={} sliceable={}",
                            c.id,
                            node.name,
                            cap.is_partitioned(),
                            cap.is_logically_sliceable()
                        ),
                        vec![row(
                            ObjectKind::Devices,
                            &node.name,
                            format!("spec.groups[{gi}].accelerators[{ci}]"),
                            Some(format!(
                                "one family (partitioned={}, sliceable={})",
                                cap.is_partitioned(),
                                cap.is_logically_sliceable()
                            )),
                            Some(format!("{family:?}")),
                        )],
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Each queue flavor's nominal quota is its ResourceFlavor's capacity in the group's unit.
pub fn quota_matches_capacity(d: &Derived) -> Result<(), Violation> {
    for q in &d.cluster_queues {
        for (gi, g) in q.resource_groups.iter().enumerate() {
            let per = if g.covered_resources.iter().any(|r| r == "cpu") {
                1
            } else {
                CREDITS_PER_CARD
            };
            for (fi, f) in g.flavors.iter().enumerate() {
                let Some(rf) = d.resource_flavors.iter().find(|rf| rf.name == f.flavor) else {
                    return Err(violation(
                        ACCOUNTING,
                        "quota_matches_capacity",
                        format!(
                            "queue {} lists flavor {}: expected a live ResourceFlavor, got none",
                            q.name, f.flavor
                        ),
                        vec![row(
                            ObjectKind::ResourceFlavor,
                            &f.flavor,
                            "",
                            Some(format!("listed by ClusterQueue {}", q.name)),
                            None,
                        )],
                    ));
                };
                let want = i64::try_from(rf.capacity)
                    .unwrap_or(i64::MAX)
                    .saturating_mul(per);
                if f.nominal_quota != want {
                    // every covered resource of the flavor carries the same quota
                    let rows = (0..g.covered_resources.len().max(1))
                        .map(|ri| {
                            row(
                                ObjectKind::ClusterQueue,
                                &q.name,
                                format!("spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}].nominalQuota"),
                                Some(want.to_string()),
                                Some(f.nominal_quota.to_string()),
                            )
                        })
                        .collect();
                    return Err(violation(
                        ACCOUNTING,
                        "quota_matches_capacity",
                        format!(
                            "queue {} flavor {}: expected nominal quota {} × {per} = {want}, got {}",
                            q.name, f.flavor, rf.capacity, f.nominal_quota
                        ),
                        rows,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// 0 ≤ once-max ≤ remaining ≤ capacity in every view; PT once-max is 1 exactly when some
/// partition remains; SL once-max is one card's percent at most; under the card-count SH rule
/// (corrections.md 1) SH once-max counts cards, so it never exceeds the EX capacity.
pub fn views_bounded(it: &InstanceType, rule: SharedOnceMax) -> Result<(), Violation> {
    let v = &it.status.views;
    let fail = |m: String, rows: Vec<Difference>| {
        Err(violation(
            ACCOUNTING,
            "views_bounded",
            format!("InstanceType {}: {m}", it.name),
            rows,
        ))
    };
    let once_max = |view: &str, want: String, got: i64| {
        vec![row(
            ObjectKind::InstanceType,
            &it.name,
            format!("status.{}.onceMaxRequest", view_field(view)),
            Some(want),
            Some(got.to_string()),
        )]
    };
    for (name, view) in [
        ("exclusive", v.exclusive),
        ("shared", v.shared),
        ("sliced", v.sliced),
        ("partitioned", v.partitioned.view),
        ("cpu", it.status.cpu),
    ] {
        if !ordered(view) {
            let got = format!(
                "{}/{}/{}",
                view.once_max_request, view.remaining, view.capacity
            );
            return fail(
                format!("{name} view: expected 0 ≤ onceMax ≤ remaining ≤ capacity, got {got}"),
                vec![row(
                    ObjectKind::InstanceType,
                    &it.name,
                    format!("status.{}", view_field(name)),
                    Some("0 ≤ onceMaxRequest ≤ remaining ≤ capacity".into()),
                    Some(format!("onceMaxRequest/remaining/capacity = {got}")),
                )],
            );
        }
    }
    let pt = v.partitioned.view;
    let want = i64::from(pt.remaining > 0);
    if pt.once_max_request != want {
        return fail(
            format!(
                "partitioned onceMax: expected {want} (remaining {}), got {}",
                pt.remaining, pt.once_max_request
            ),
            once_max("partitioned", want.to_string(), pt.once_max_request),
        );
    }
    if v.sliced.once_max_request > PERCENT_PER_CARD {
        return fail(
            format!(
                "sliced onceMax: expected ≤ {PERCENT_PER_CARD}, got {}",
                v.sliced.once_max_request
            ),
            once_max(
                "sliced",
                format!("≤ {PERCENT_PER_CARD}"),
                v.sliced.once_max_request,
            ),
        );
    }
    if rule == SharedOnceMax::Cards && v.shared.once_max_request > v.exclusive.capacity {
        return fail(
            format!(
                "shared onceMax (cards with a free share): expected ≤ {} cards, got {}",
                v.exclusive.capacity, v.shared.once_max_request
            ),
            once_max(
                "shared",
                format!("≤ {}", v.exclusive.capacity),
                v.shared.once_max_request,
            ),
        );
    }
    Ok(())
}

fn ordered(v: ResourceView) -> bool {
    0 <= v.once_max_request && v.once_max_request <= v.remaining && v.remaining <= v.capacity
}

/// The cards of an accelerated pool: its accelerator group's cards on the nodes behind the
/// flavors its queue lists. `None` for a CPU pool or a draining queue (views are zero there).
pub fn pool_cards<'a>(
    d: &Derived,
    cluster: &'a Cluster,
    it: &'a InstanceType,
) -> Option<Vec<&'a Card>> {
    if !it.spec.acceleratable {
        return None;
    }
    let q = d.cluster_queues.iter().find(|q| q.name == it.name)?;
    if q.stop_policy == StopPolicy::HoldAndDrain {
        return None;
    }
    let flavors: BTreeSet<&str> = q
        .resource_groups
        .iter()
        .flat_map(|g| g.flavors.iter().map(|f| f.flavor.as_str()))
        .collect();
    let nodes: BTreeSet<&str> = d
        .resource_flavors
        .iter()
        .filter(|rf| flavors.contains(rf.name.as_str()))
        .flat_map(|rf| rf.nodes.iter().map(Text::as_str))
        .collect();
    Some(
        cluster
            .nodes
            .iter()
            .filter(|n| nodes.contains(n.name.as_str()))
            .filter_map(|n: &Node| n.devices.as_ref())
            .flat_map(|dv| dv.groups_of(&it.spec.accelerator_group))
            .flat_map(|g| &g.cards)
            .collect(),
    )
}

/// EX/SH/SL capacities count the pool's unpartitioned ledger rows (SL the sliceable ones), PT
/// the partition ceilings of its partitioned cards (§9.1 enumerates ledger rows, §9.2 spec rows).
pub fn capacities_count_cards(it: &InstanceType, cards: &[&Card]) -> Result<(), Violation> {
    let rows = || cards.iter().filter(|c| c.ledger.is_some());
    let whole = rows().filter(|c| !c.is_partitioned()).count() as i64;
    let sliceable = rows().filter(|c| c.is_logically_sliceable()).count() as i64;
    let ceilings: i64 = cards
        .iter()
        .filter_map(|c| c.capability.as_ref())
        .filter(|cap| cap.is_partitioned())
        .map(|cap| i64::from(cap.physical_sliced_count))
        .sum();
    let v = &it.status.views;
    for (name, want, got) in [
        ("exclusive", whole, v.exclusive.capacity),
        ("shared", SHARES_PER_CARD * whole, v.shared.capacity),
        ("sliced", PERCENT_PER_CARD * sliceable, v.sliced.capacity),
        ("partitioned", ceilings, v.partitioned.view.capacity),
    ] {
        if want != got {
            return Err(violation(
                ACCOUNTING,
                "capacities_count_cards",
                format!(
                    "InstanceType {} {name} capacity: expected {want} ({whole} unpartitioned, {sliceable} sliceable cards, Σ ceilings {ceilings}), got {got}",
                    it.name
                ),
                vec![row(
                    ObjectKind::InstanceType,
                    &it.name,
                    format!("status.{}.capacity", view_field(name)),
                    Some(want.to_string()),
                    Some(got.to_string()),
                )],
            ));
        }
    }
    Ok(())
}

/// Admitting the scenario's workloads on the initial cluster and finishing every admitted one
/// restores the published objects exactly (§14 item 10; ledger charge/release).
pub fn release_restores(s: &Scenario) -> Result<(), Violation> {
    release_restores_from(s, &derive(&s.cluster), &Deriver::plain())
}

/// [`release_restores`] given `base`, the derivation of `s.cluster`, re-deriving through
/// `deriver`.
fn release_restores_from(s: &Scenario, base: &Derived, deriver: &Deriver) -> Result<(), Violation> {
    let workloads: Vec<&model::workload::Workload> = s
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Submit { workload } => Some(workload),
            _ => None,
        })
        .collect();
    if workloads.is_empty() {
        return Ok(());
    }
    let mut w = World::with_derivation(s.cluster.clone(), base.clone(), deriver.clone());
    let before = w.observe();
    for wl in &workloads {
        w.apply(&Event::Submit {
            workload: (*wl).clone(),
        });
    }
    let held: Vec<String> = w.admission.holds.keys().cloned().collect();
    for key in &held {
        if let Some((namespace, name)) = key.split_once('/') {
            let e = w.apply(&Event::Finish {
                namespace: namespace.into(),
                name: name.into(),
            });
            if e != Effect::Released {
                return Err(violation(
                    ACCOUNTING,
                    "release_restores",
                    format!("finishing admitted {key}: expected Released, got {e:?}"),
                    vec![row(
                        ObjectKind::Effect,
                        &format!("finish {key}"),
                        "effect",
                        Some("Released".into()),
                        Some(format!("{e:?}")),
                    )],
                ));
            }
        }
    }
    let d = diff(&before, &w.observe());
    if d.is_empty() {
        Ok(())
    } else {
        let message = differences_message(
            &format!("after admitting and finishing {} workloads", held.len()),
            &d,
        );
        Err(violation(ACCOUNTING, "release_restores", message, d))
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Admission soundness and monotonicity
// ---------------------------------------------------------------------------------------------

/// At most this many monotonicity re-judgements per scenario.
const MONOTONE_CHECKS: usize = 4;

/// Gate 3's Ready is always placeable (no `Unplaceable`, admission.md §16), and freeing
/// capacity never turns an admission into a refusal: a workload admitted on a world is also
/// admitted on that world with another admitted workload finished first — unless the freed
/// quota lets Kueue pick an earlier flavor (TryNextFlavor), where gate 3 may then say Retry.
/// The workload finished first is never a sibling replica of the judged one (the joint check
/// would rightly hold it without its sibling).
pub fn admission(s: &Scenario) -> Result<(), Violation> {
    admission_run(s, &derive(&s.cluster), &Deriver::plain()).0
}

/// [`admission`] and the world after every event of `s`, given `base`, the derivation of
/// `s.cluster`, re-deriving through `deriver`.
fn admission_run(
    s: &Scenario,
    base: &Derived,
    deriver: &Deriver,
) -> (Result<(), Violation>, World) {
    let mut w = World::with_derivation(s.cluster.clone(), base.clone(), deriver.clone());
    let result = match admission_events(s, &mut w) {
        Ok(()) => Ok(()),
        Err((applied, v)) => {
            for e in s.events.iter().skip(applied) {
                w.apply(e);
            }
            Err(v)
        }
    };
    (result, w)
}

/// The admission checks while applying the events of `s` to `w`; a violation carries how many
/// events were applied, so the caller can finish the replay.
fn admission_events(s: &Scenario, w: &mut World) -> Result<(), (usize, Violation)> {
    let mut checks = 0;
    for (k, e) in s.events.iter().enumerate() {
        let before = (checks < MONOTONE_CHECKS
            && matches!(e, Event::Submit { .. })
            && !w.admission.holds.is_empty())
        .then(|| w.clone());
        let effect = w.apply(e);
        placeable(k, &effect).map_err(|v| (k + 1, v))?;
        let (Some(before), Event::Submit { workload }) = (before, e) else {
            continue;
        };
        if effect != admitted() || before.admission.holds.contains_key(&workload_key(workload)) {
            continue;
        }
        let Some(freed_key) = before
            .admission
            .holds
            .keys()
            .find(|k| !same_deployment(&before, k, workload))
            .cloned()
        else {
            continue;
        };
        checks += 1;
        let mut freed = before.clone();
        let Some((namespace, name)) = freed_key.split_once('/') else {
            continue;
        };
        freed.apply(&Event::Finish {
            namespace: namespace.into(),
            name: name.into(),
        });
        let again = freed.apply(e);
        let excused = earlier_flavor_freed(&before, w, &freed_key, &workload_key(workload));
        monotone_verdict(k, &freed_key, &effect, &again, excused).map_err(|v| (k + 1, v))?;
    }
    Ok(())
}

/// Whether the Workload held under `key` is a replica of the same ModelDeployment as `w`:
/// finishing a sibling takes a member from the joint check's set, so the barrier rightly holds
/// `w` then (model_deployment_joint_admission.go `jointVerdict`); it frees nothing `w` may use.
fn same_deployment(world: &World, key: &str, w: &model::workload::Workload) -> bool {
    let Some(d) = &w.deployment else {
        return false;
    };
    world.admission.joint.get(key).is_some_and(|m| {
        m.workload.namespace == w.namespace
            && m.workload
                .deployment
                .as_ref()
                .is_some_and(|o| o.deployment == d.deployment)
    })
}

fn admitted() -> Effect {
    Effect::Judged {
        outcome: Outcome::Admitted,
    }
}

/// Event `k`'s effect is not an `Unplaceable` verdict.
pub fn placeable(k: usize, effect: &Effect) -> Result<(), Violation> {
    match effect {
        Effect::Judged {
            outcome: Outcome::Unplaceable { reason },
        } => Err(violation(
            ADMISSION,
            "placeable",
            format!("event {k}: gate 3 said Ready, expected the cards to take it, got Unplaceable: {reason}"),
            vec![row(
                ObjectKind::Effect,
                &format!("event[{k}]"),
                "effect",
                Some("placed on the cards gate 3 budgeted".into()),
                Some(format!("Unplaceable: {reason}")),
            )],
        )),
        _ => Ok(()),
    }
}

/// A workload admitted before (`first`) is admitted again after `freed` finished (`again`);
/// a gate-3 Retry is excused only when the freed quota sat on an earlier flavor of its queue.
pub fn monotone_verdict(
    k: usize,
    freed: &str,
    first: &Effect,
    again: &Effect,
    excused: bool,
) -> Result<(), Violation> {
    if *first != admitted() || *again == admitted() {
        return Ok(());
    }
    if excused
        && matches!(
            again,
            Effect::Judged {
                outcome: Outcome::Retry { .. }
            }
        )
    {
        return Ok(());
    }
    Err(violation(
        ADMISSION,
        "monotone_verdict",
        format!("event {k}: admitted as submitted; after finishing {freed} first, expected Admitted, got {again:?}"),
        vec![row(
            ObjectKind::Effect,
            &format!("event[{k}]"),
            "effect",
            Some(format!("Admitted (after finishing {freed} first)")),
            Some(format!("{again:?}")),
        )],
    ))
}

/// Whether the freed workload held quota on a flavor its queue lists before one the judged
/// workload was admitted on (then Kueue may now stop at that earlier flavor).
fn earlier_flavor_freed(before: &World, after: &World, freed: &str, judged: &str) -> bool {
    let (Some(f), Some(j)) = (
        before.admission.holds.get(freed),
        after.admission.holds.get(judged),
    ) else {
        return false;
    };
    if f.queue != j.queue {
        return false;
    }
    let Some(q) = after
        .admission
        .derived
        .cluster_queues
        .iter()
        .find(|q| q.name == j.queue)
    else {
        return false;
    };
    let position = |flavor: &str| {
        q.resource_groups
            .iter()
            .flat_map(|g| &g.flavors)
            .position(|x| x.flavor == flavor)
    };
    let last_taken = j.quota.iter().filter_map(|q| position(&q.flavor)).max();
    f.quota
        .iter()
        .filter_map(|q| position(&q.flavor))
        .any(|p| last_taken.is_some_and(|t| p < t))
}

// ---------------------------------------------------------------------------------------------
// 6. Idempotence
// ---------------------------------------------------------------------------------------------

/// Deriving twice from the same inputs gives the same objects, and re-deriving from a
/// quiescence leaves it as it is (the reconcilers write only when something differs, §9).
pub fn idempotence(s: &Scenario) -> Result<(), Violation> {
    idempotence_with(s, &derive_after)
}

/// [`idempotence`] of another chain implementation (a test's deliberately broken one).
pub fn idempotence_with(s: &Scenario, chain: Chain<'_>) -> Result<(), Violation> {
    idempotence_from(s, &chain(&s.cluster, None), chain)
}

fn idempotence_from(s: &Scenario, first: &Derived, chain: Chain<'_>) -> Result<(), Violation> {
    same_objects(
        IDEMPOTENCE,
        "deriving the same cluster twice",
        first,
        &chain(&s.cluster, None),
    )?;
    same_objects(
        IDEMPOTENCE,
        "re-deriving from the derivation's own quiescence",
        first,
        &chain(&s.cluster, Some(first)),
    )
}
