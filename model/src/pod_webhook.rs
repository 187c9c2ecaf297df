//! Gate 1: the Pod webhook on Pods routed to a GPUStack queue (admission.md §4, §16 R1–R5;
//! pkg/worker/webhooks/worker/pod.go, partition-aware revision).
//!
//! Validation enforces the seven request rules with the operator's exact messages; the fold
//! (mutating) defaults the logical compute budget, derives `.sliced.units` from the memory
//! budget and `.partitioned.units` from the profile's memory, and pins a multi-card shared
//! request to nodes with enough cards. Quantities stay strings in [`Container`]; a rule parses
//! the one it reads, and an unparsable one is a rejection naming it.

use std::collections::{BTreeMap, BTreeSet};

use crate::credits::{memory_mib_to_units, parse_quantity, percent_to_units, Quantity};
use crate::field::{forbidden, invalid, invalid_message, required};
pub use crate::field::{FieldError, FieldErrorKind};
use crate::labels::{accelerator_feature_key, Text, QUEUE_ENTRANCE};
use crate::objects::InstanceType;
use crate::resources::{accelerator_base_of, family_of, partitioned_profile_of, Family};
use crate::workload::Container;

const SLICED: &str = ".sliced";
const SLICED_UNITS: &str = ".sliced.units";
const SLICED_CORES_PCT: &str = ".sliced.cores-percentage";
const SLICED_MEM_PCT: &str = ".sliced.memory-percentage";
const SLICED_MEM_MIB: &str = ".sliced.memory-mib";
const PARTITIONED: &str = ".partitioned";
const PARTITIONED_UNITS: &str = ".partitioned.units";
const SHARED: &str = ".shared";
const MIB: i128 = 1024 * 1024;

/// The lifetime group of a container (pod.go `containerGroup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContainerGroup {
    /// `spec.initContainers` without `restartPolicy: Always`.
    Init,
    /// `spec.containers`.
    Running,
    /// A restartable init container (native sidecar): belongs to neither group.
    Sidecar,
}

/// One container of a Pod with its group and its index in its spec list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodContainer {
    pub container: Container,
    pub group: ContainerGroup,
    pub index: usize,
}

impl PodContainer {
    /// The container's field path, `spec.initContainers[i]` or `spec.containers[i]`.
    fn path(&self) -> String {
        let list = match self.group {
            ContainerGroup::Running => "containers",
            ContainerGroup::Init | ContainerGroup::Sidecar => "initContainers",
        };
        format!("spec.{list}[{}]", self.index)
    }
}

/// `podContainers`: init containers (restartable ones as sidecars), then app containers, in
/// manifest order; pod.go. `init` pairs each init container with whether it is restartable.
pub fn pod_containers(init: &[(Container, bool)], app: &[Container]) -> Vec<PodContainer> {
    let inits = init.iter().enumerate().map(|(index, (c, restartable))| {
        let group = if *restartable {
            ContainerGroup::Sidecar
        } else {
            ContainerGroup::Init
        };
        PodContainer {
            container: c.clone(),
            group,
            index,
        }
    });
    let apps = app.iter().enumerate().map(|(index, c)| PodContainer {
        container: c.clone(),
        group: ContainerGroup::Running,
        index,
    });
    inits.chain(apps).collect()
}

/// Why gate 1 turns a Pod away: an API error, never a pending state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodRejection {
    /// The validating webhook's `Invalid` error: every violated rule.
    Invalid(Vec<FieldError>),
    /// The mutating webhook's error. `retryable` marks the not-ready-yet cases whose message
    /// asks the client to retry; `offered` lists the pool's profiles when a profile is not
    /// offered (the message itself, like pod.go's, names only the asked profile).
    Denied {
        message: String,
        retryable: bool,
        offered: Vec<String>,
    },
}

impl PodRejection {
    fn denied(message: String) -> Self {
        PodRejection::Denied {
            message,
            retryable: false,
            offered: Vec::new(),
        }
    }

    fn retry(message: String) -> Self {
        PodRejection::Denied {
            message,
            retryable: true,
            offered: Vec::new(),
        }
    }

    /// Every message of the rejection, in order.
    pub fn messages(&self) -> Vec<String> {
        match self {
            PodRejection::Invalid(errs) => errs.iter().map(|e| e.detail.clone()).collect(),
            PodRejection::Denied { message, .. } => vec![message.clone()],
        }
    }
}

impl PodRejection {
    /// The message the API server returns for Pod `pod`: a denial's own text, or
    /// apimachinery's `NewInvalid` envelope, `Pod "<name>" is invalid: <errors>`, where one
    /// error stands alone and several are bracketed (`ErrorList.ToAggregate`).
    pub fn message_for(&self, pod: &str) -> String {
        match self {
            PodRejection::Invalid(errs) => invalid_message("Pod", pod, errs),
            PodRejection::Denied { message, .. } => message.clone(),
        }
    }
}

/// `containerClaims`: the sorted accelerator bases a container claims per family, over
/// requests and limits; any key of a family counts, sub-keys included; pod.go.
pub fn container_claims(c: &Container) -> BTreeMap<Family, BTreeSet<&'static str>> {
    let mut claims: BTreeMap<Family, BTreeSet<&'static str>> = BTreeMap::new();
    for name in c.requests.keys().chain(c.limits.keys()) {
        if let Some(base) = accelerator_base_of(name) {
            claims.entry(family_of(name)).or_default().insert(base);
        }
    }
    claims
}

/// `containerResource`: a key's quantity string, requests before limits.
fn container_resource<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
    c.requests
        .get(name)
        .or_else(|| c.limits.get(name))
        .map(String::as_str)
}

/// `containerPartitionRequests`: (key, profile, quantity) of each per-profile key of `base`,
/// sorted by profile, requests winning over limits; pod.go.
fn partition_requests<'a>(c: &'a Container, base: &str) -> Vec<(&'a str, String, &'a str)> {
    let mut by_profile: BTreeMap<String, (&str, &str)> = BTreeMap::new();
    for list in [&c.limits, &c.requests] {
        for (name, q) in list {
            let Some(profile) = partitioned_profile_of(name) else {
                continue;
            };
            if accelerator_base_of(name) == Some(base) {
                by_profile.insert(profile, (name.as_str(), q.as_str()));
            }
        }
    }
    by_profile
        .into_iter()
        .map(|(profile, (name, q))| (name, profile, q))
        .collect()
}

/// The profiles a container asks of `base`, sorted and unique.
fn partition_profiles(c: &Container, base: &str) -> Vec<String> {
    partition_requests(c, base)
        .into_iter()
        .map(|(_, p, _)| p)
        .collect()
}

/// Reads a quantity string; an unparsable one is an `Invalid` field error at `path`.
fn read_quantity(raw: &str, path: &str) -> Result<Quantity, FieldError> {
    parse_quantity(raw).map_err(|e| FieldError {
        path: path.to_string(),
        kind: FieldErrorKind::Invalid {
            value: raw.to_string(),
        },
        detail: e.to_string(),
    })
}

/// `Value()` of a key the rule reads; ≥ i64 magnitudes saturate (they fail every bound anyway).
fn whole(q: &Quantity) -> i64 {
    i64::try_from(q.value()).unwrap_or(if q.micro() < 0 { i64::MIN } else { i64::MAX })
}

/// `validatePodAcceleratorRequest`: the seven request rules with their exact messages
/// (admission.md §4.2; pod.go). Validation reads the Pod alone; the pool's Detail is read only
/// by the fold.
pub fn validate_pod_requests(containers: &[PodContainer]) -> Result<(), PodRejection> {
    let mut errs = Vec::new();
    let mut families = BTreeSet::new();
    let mut groups = BTreeSet::new();
    let mut profiles = BTreeSet::new();
    let mut slicing = 0usize;
    for pc in containers {
        let claims = container_claims(&pc.container);
        if claims.is_empty() {
            continue;
        }
        if pc.group == ContainerGroup::Sidecar {
            errs.push(forbidden(
                &format!("{}.resources.limits", pc.path()),
                "a restartable init container (a native sidecar) may not request an accelerator; \
                 move the request to an app container"
                    .into(),
            ));
            continue;
        }
        for (family, bases) in &claims {
            families.insert(family.name());
            if *family == Family::Partitioned {
                for base in bases {
                    profiles.extend(partition_profiles(&pc.container, base));
                }
            }
        }
        groups.insert(pc.group);
        if claims.contains_key(&Family::Sliced) || claims.contains_key(&Family::Partitioned) {
            slicing += 1;
        }
    }
    if families.len() > 1 {
        let names: Vec<&str> = families.into_iter().collect();
        errs.push(forbidden(
            "spec",
            format!(
                "a Pod may request only one accelerator family, found [{}]",
                names.join(" ")
            ),
        ));
    }
    if groups.len() > 1 {
        errs.push(forbidden(
            "spec.initContainers",
            "a Pod's accelerator requests must all sit in one container group; \
             spec.initContainers must give up its request, because its devices are held for the \
             Pod's whole life while the scheduler charges the Pod only once"
                .into(),
        ));
    }
    if slicing > 1 {
        errs.push(forbidden(
            "spec",
            format!("at most one container may request a slicing family, found {slicing}"),
        ));
    }
    if profiles.len() > 1 {
        let names: Vec<String> = profiles.into_iter().collect();
        errs.push(forbidden(
            "spec",
            format!(
                "a Pod may request only one partition profile, found [{}]",
                names.join(" ")
            ),
        ));
    }
    for pc in containers
        .iter()
        .filter(|pc| pc.group != ContainerGroup::Sidecar)
    {
        let limits = format!("{}.resources.limits", pc.path());
        let claims = container_claims(&pc.container);
        for base in claims.get(&Family::Sliced).into_iter().flatten() {
            errs.extend(logical_slice_errors(&pc.container, base, &limits));
        }
        for base in claims.get(&Family::Partitioned).into_iter().flatten() {
            errs.extend(partition_errors(&pc.container, base, &limits));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(PodRejection::Invalid(errs))
    }
}

/// `validatePartitionRequest`: the card key exactly 1, exactly one profile, each profile key
/// exactly 1 (rules 3–5); pod.go. For Hygon these rules are also the hardware's limit: the
/// vendor runtime shows a container one partition whatever it is given, so a request for more
/// is refused here at admission rather than half-served (hygon-mig.md @0421f1c "Limitations":
/// a container can use exactly one partition).
fn partition_errors(c: &Container, base: &str, limits: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let card = format!("{base}{PARTITIONED}");
    let card_path = format!("{limits}[{card}]");
    match container_resource(c, &card) {
        None => errs.push(required(
            &card_path,
            format!("a partition request must set {card}"),
        )),
        Some(raw) => match read_quantity(raw, &card_path) {
            Err(e) => errs.push(e),
            Ok(q) if !q.is_exactly_one() => errs.push(invalid(
                &card_path,
                &q.to_string(),
                "a partition request is always a single card; request one Pod per instance",
            )),
            Ok(_) => {}
        },
    }
    let reqs = partition_requests(c, base);
    match reqs.len() {
        1 => {}
        0 => errs.push(required(
            &card_path,
            format!("a {card} request must name a profile, e.g. {card}.<kind>-<profile>"),
        )),
        _ => errs.push(forbidden(
            &card_path,
            format!(
                "a container may request only one partition profile, found [{}]",
                partition_profiles(c, base).join(" ")
            ),
        )),
    }
    for (name, _, raw) in reqs {
        let path = format!("{limits}[{name}]");
        match read_quantity(raw, &path) {
            Err(e) => errs.push(e),
            Ok(q) if !q.is_exactly_one() => errs.push(invalid(
                &path,
                &q.to_string(),
                "a partition profile request must be exactly 1 instance",
            )),
            Ok(_) => {}
        }
    }
    errs
}

/// A budget's accepted range, on its `Value()`.
type Bound = fn(i64) -> bool;

/// `validateLogicalSliceRequest`: the card key exactly 1, exactly one memory budget, every
/// budget positive and the percentages at most 100 (rule 2); pod.go.
fn logical_slice_errors(c: &Container, base: &str, limits: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let card = format!("{base}{SLICED}");
    let mem_pct = format!("{base}{SLICED_MEM_PCT}");
    let mem_mib = format!("{base}{SLICED_MEM_MIB}");
    let cores_pct = format!("{base}{SLICED_CORES_PCT}");
    let path = |key: &str| format!("{limits}[{key}]");
    match container_resource(c, &card) {
        None => errs.push(required(
            &path(&card),
            format!("a sliced request must set {card}"),
        )),
        Some(raw) => match read_quantity(raw, &path(&card)) {
            Err(e) => errs.push(e),
            Ok(q) if !q.is_exactly_one() => errs.push(invalid(
                &path(&card),
                &q.to_string(),
                "a logical slice request is always a single card; multi-card logical slicing is \
                 not supported yet",
            )),
            Ok(_) => {}
        },
    }
    let has_pct = container_resource(c, &mem_pct).is_some();
    let has_mib = container_resource(c, &mem_mib).is_some();
    if !has_pct && !has_mib {
        errs.push(required(
            &path(&mem_pct),
            format!("a {card} request must set {mem_pct} or {mem_mib}"),
        ));
    } else if has_pct && has_mib {
        errs.push(forbidden(
            &path(&mem_mib),
            format!("cannot set both {mem_pct} and {mem_mib}"),
        ));
    }
    let bounds: [(&str, Bound, &str); 3] = [
        (&mem_pct, |v| v > 0 && v <= 100, "must be within (0, 100]"),
        (&mem_mib, |v| v > 0, "must be greater than zero"),
        (&cores_pct, |v| v > 0 && v <= 100, "must be within (0, 100]"),
    ];
    for (key, ok, detail) in bounds {
        let Some(raw) = container_resource(c, key) else {
            continue;
        };
        match read_quantity(raw, &path(key)) {
            Err(e) => errs.push(e),
            Ok(q) if !ok(whole(&q)) => errs.push(invalid(&path(key), &q.to_string(), detail)),
            Ok(_) => {}
        }
    }
    errs
}

/// A node-selector requirement ANDed into every required node-affinity term: the fold's static
/// shared pin, the Workload webhook's fit pins; gate 2's TAS reads them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSelectorRequirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// The folded Pod: containers with their derived keys, and the shared card-count pin if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoldedPod {
    pub containers: Vec<PodContainer>,
    pub node_requirements: Vec<NodeSelectorRequirement>,
}

/// The fronting InstanceType as looked up for a Pod: the webhook asks for it only when a fold
/// needs it (a partition profile, a `.sliced.memory-mib` budget, a shared pin of N ≥ 2), so a
/// failed lookup rejects only those Pods; pod.go `Default`, `frontingInstanceType`.
pub type Fronting<'a> = Result<&'a InstanceType, PodRejection>;

/// The fronting InstanceType at the point a fold needs it.
fn needed<'a>(fronting: &Fronting<'a>) -> Result<&'a InstanceType, PodRejection> {
    fronting.clone()
}

/// `frontingInstanceType`: the one InstanceType whose `schedule.gpustack.ai/queue-entrance`
/// label is the Pod's LocalQueue; none or several is an error; pod.go.
pub fn fronting_instance_type<'a>(
    instance_types: &'a [InstanceType],
    local_queue: &str,
) -> Result<&'a InstanceType, PodRejection> {
    if local_queue.is_empty() {
        return Err(PodRejection::denied(
            "pod has no \"kueue.x-k8s.io/queue-name\" label".into(),
        ));
    }
    let mut matching = instance_types
        .iter()
        .filter(|it| it.labels.get(QUEUE_ENTRANCE).map(Text::as_str) == Some(local_queue));
    match (matching.next(), matching.next()) {
        (Some(it), None) => Ok(it),
        (None, _) => Err(PodRejection::denied(format!(
            "no instance type fronts local queue {local_queue}"
        ))),
        (Some(_), Some(_)) => Err(PodRejection::denied(format!(
            "more than one instance type fronts local queue {local_queue}"
        ))),
    }
}

/// `InstanceTypeCardVRAMMib`: the per-card VRAM in MiB from `status.detail.memory` (`24Gi`
/// → 24576); empty = not ready (retryable), unparsable or non-positive = permanent;
/// instance_type.go.
pub fn card_vram_mib(it: &InstanceType) -> Result<u64, PodRejection> {
    let raw = &it.status.detail.memory;
    if raw.is_empty() {
        return Err(PodRejection::retry(format!(
            "instance type {} has no per-card memory yet (detail not ready)",
            it.name
        )));
    }
    let q = parse_quantity(raw).map_err(|e| {
        PodRejection::denied(format!(
            "parse memory {raw:?} of instance type {}: {e}",
            it.name
        ))
    })?;
    let mib = q.value() / MIB;
    u64::try_from(mib).ok().filter(|m| *m > 0).ok_or_else(|| {
        PodRejection::denied(format!(
            "instance type {} has non-positive memory {raw:?}",
            it.name
        ))
    })
}

/// `partitionContainerUnits`: ⌊profileMib·D/cardMib⌋ for an offered profile with a memory
/// detail; not offered → permanent (retryable while the Detail is not computed, i.e. has no
/// manufacturer); pod.go; admission.md §4.3, R4.
pub fn partition_units(
    it: &InstanceType,
    container: &str,
    base: &str,
    profile: &str,
) -> Result<i64, PodRejection> {
    let detail = &it.status.detail;
    let catalog = &detail.sliced_detail.physical.profiles;
    let Some(found) = catalog.iter().find(|p| p.name == profile) else {
        if detail.manufacturer.is_empty() {
            return Err(PodRejection::retry(format!(
                "instance type {} is not ready yet (accelerator detail not computed); retry",
                it.name
            )));
        }
        return Err(PodRejection::Denied {
            message: format!(
                "container {container:?}: partition profile {profile:?} is not offered by the \
                 target pool (instance type {})",
                it.name
            ),
            retryable: false,
            offered: catalog.iter().map(|p| p.name.to_string()).collect(),
        });
    };
    let Some(profile_mib) = found.memory_mib.filter(|m| *m > 0) else {
        return Err(PodRejection::retry(format!(
            "instance type {} is not ready yet (partition profile {profile:?} has no memory \
             detail); retry",
            it.name
        )));
    };
    let units = memory_mib_to_units(profile_mib, card_vram_mib(it)?);
    if units <= 0 {
        return Err(PodRejection::denied(format!(
            "container {container:?}: cannot derive a positive {base}{PARTITIONED_UNITS} from \
             partition profile {profile:?}"
        )));
    }
    Ok(units)
}

/// `setContainerResource`: the same value in requests and limits.
fn set_resource(c: &mut Container, name: &str, value: String) {
    c.requests.insert(name.to_string(), value.clone());
    c.limits.insert(name.to_string(), value);
}

/// A quantity the fold reads; an unparsable one denies the Pod naming the key.
fn fold_quantity(c: &Container, name: &str) -> Result<Option<Quantity>, PodRejection> {
    container_resource(c, name)
        .map(|raw| {
            parse_quantity(raw)
                .map_err(|e| PodRejection::denied(format!("container {:?}: {name}: {e}", c.name)))
        })
        .transpose()
}

/// The logical-slice fold of one base: cores default 100, units from the memory budget
/// (percentage first, else MiB of the card), `None` when no usable memory key (validation
/// rejects that); pod.go `Default`; admission.md §4.3, R3.
fn sliced_units(
    c: &mut Container,
    base: &str,
    fronting: &Fronting<'_>,
) -> Result<Option<i64>, PodRejection> {
    let cores = format!("{base}{SLICED_CORES_PCT}");
    if container_resource(c, &cores).is_none() {
        set_resource(c, &cores, "100".into());
    }
    let mem_pct = format!("{base}{SLICED_MEM_PCT}");
    let mem_mib = format!("{base}{SLICED_MEM_MIB}");
    let pct = fold_quantity(c, &mem_pct)?
        .map(|q| whole(&q))
        .filter(|v| *v > 0);
    let mib = fold_quantity(c, &mem_mib)?
        .map(|q| whole(&q))
        .filter(|v| *v > 0);
    let units = match (pct, mib) {
        (Some(p), _) if p > 100 => {
            return Err(PodRejection::denied(format!(
                "container {:?}: {mem_pct} must be within (0, 100]",
                c.name
            )))
        }
        (Some(p), _) => percent_to_units(p),
        (None, Some(m)) => {
            let card = card_vram_mib(needed(fronting)?)?;
            let m = u64::try_from(m).unwrap_or(0);
            if m > card {
                return Err(PodRejection::denied(format!(
                    "container {:?}: {mem_mib} must not exceed the per-card VRAM ({card} MiB)",
                    c.name
                )));
            }
            memory_mib_to_units(m, card)
        }
        (None, None) => return Ok(None),
    };
    if units <= 0 {
        return Err(PodRejection::denied(format!(
            "container {:?}: cannot derive a positive {base}{SLICED_UNITS} from the requested \
             memory",
            c.name
        )));
    }
    Ok(Some(units))
}

/// `PodWebhook.Default` plus the static shared pin: the folded containers (any client
/// `.units` overwritten) and, for a shared request of N ≥ 2 cards, the requirement
/// `acceleratable.feature.gpustack.ai/<group>.count Gt N-1` (admission.md §4.3–4.4, R3–R5).
/// The fronting InstanceType is read only by the folds that need it.
pub fn fold_pod_requests(
    containers: &[PodContainer],
    fronting: &Fronting<'_>,
) -> Result<FoldedPod, PodRejection> {
    let mut out = containers.to_vec();
    for pc in &mut out {
        let claims = container_claims(&pc.container);
        for base in claims.get(&Family::Partitioned).into_iter().flatten() {
            let profiles = partition_profiles(&pc.container, base);
            let [profile] = profiles.as_slice() else {
                continue;
            };
            let units = partition_units(needed(fronting)?, &pc.container.name, base, profile)?;
            set_resource(
                &mut pc.container,
                &format!("{base}{PARTITIONED_UNITS}"),
                units.to_string(),
            );
        }
        for base in claims.get(&Family::Sliced).into_iter().flatten() {
            if let Some(units) = sliced_units(&mut pc.container, base, fronting)? {
                set_resource(
                    &mut pc.container,
                    &format!("{base}{SLICED_UNITS}"),
                    units.to_string(),
                );
            }
        }
    }
    let node_requirements = shared_card_count_pin(containers, fronting)?
        .into_iter()
        .collect();
    Ok(FoldedPod {
        containers: out,
        node_requirements,
    })
}

/// The largest `.shared` card count any one container asks for (not the sum).
pub fn largest_shared_count(containers: &[PodContainer]) -> Result<i64, PodRejection> {
    let mut largest = 0;
    for pc in containers {
        let c = &pc.container;
        let shared_keys = c
            .requests
            .keys()
            .chain(c.limits.keys())
            .filter(|k| family_of(k) == Family::Shared && k.ends_with(SHARED));
        for key in shared_keys {
            if let Some(q) = fold_quantity(c, key)? {
                largest = largest.max(whole(&q));
            }
        }
    }
    Ok(largest)
}

/// R5, the static shared pin: N ≥ 2 → `<featureKey>.count Gt N-1` with the group of the fronting
/// InstanceType; a group that cannot be read rejects the Pod (admission.md §4.4; the message is
/// this model's, the digest gives none).
pub fn shared_card_count_pin(
    containers: &[PodContainer],
    fronting: &Fronting<'_>,
) -> Result<Option<NodeSelectorRequirement>, PodRejection> {
    let n = largest_shared_count(containers)?;
    if n < 2 {
        return Ok(None);
    }
    let it = needed(fronting)?;
    let group = &it.spec.accelerator_group;
    if group.is_empty() {
        return Err(PodRejection::denied(format!(
            "instance type {} names no accelerator group; cannot pin a shared request of {n} \
             cards to nodes with enough cards",
            it.name
        )));
    }
    Ok(Some(NodeSelectorRequirement {
        key: format!("{}.count", accelerator_feature_key(group)),
        operator: "Gt".into(),
        values: vec![(n - 1).to_string()],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::PartitionProfile;

    fn ctr(name: &str, reqs: &[(&str, &str)]) -> Container {
        Container {
            name: name.into(),
            requests: reqs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Container::default()
        }
    }

    fn app(containers: Vec<Container>) -> Vec<PodContainer> {
        pod_containers(&[], &containers)
    }

    fn pool(memory: &str) -> InstanceType {
        let mut it = InstanceType {
            name: "gpustack--nvidia-a100-linux-amd64".into(),
            ..InstanceType::default()
        };
        it.spec.accelerator_group = "nvidia-a100".into();
        it.status.detail.manufacturer = "nvidia".into();
        it.status.detail.memory = memory.into();
        it.status.detail.sliced_detail.physical.profiles = vec![PartitionProfile {
            name: "3g.40gb".into(),
            count: 2,
            memory_mib: Some(40960),
            placements: Vec::new(),
        }];
        it
    }

    fn messages(r: Result<(), PodRejection>) -> Vec<String> {
        r.err().map(|e| e.messages()).unwrap_or_default()
    }

    const SL: &str = "nvidia.com/gpu.sliced";
    const PCT: &str = "nvidia.com/gpu.sliced.memory-percentage";
    const MIB_KEY: &str = "nvidia.com/gpu.sliced.memory-mib";
    const UNITS: &str = "nvidia.com/gpu.sliced.units";
    const PT: &str = "nvidia.com/gpu.partitioned";
    const MIG: &str = "nvidia.com/gpu.partitioned.mig-3g.40gb";

    #[test]
    fn a_well_formed_slice_passes() {
        let pod = app(vec![ctr("c", &[(SL, "1"), (PCT, "50")])]);
        assert_eq!(validate_pod_requests(&pod), Ok(()));
    }

    #[test]
    fn rule_1_one_family_and_one_group() {
        let pod = app(vec![
            ctr("a", &[("nvidia.com/gpu", "1")]),
            ctr("b", &[(SL, "1"), (PCT, "50")]),
        ]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a Pod may request only one accelerator family, found [exclusive sliced]"]
        );
        let pod = pod_containers(
            &[(ctr("i", &[("nvidia.com/gpu", "1")]), false)],
            &[ctr("a", &[("nvidia.com/gpu", "1")])],
        );
        let got = messages(validate_pod_requests(&pod));
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("a Pod's accelerator requests must all sit in one container group; spec.initContainers must give up its request"));
    }

    #[test]
    fn rule_2_slice_shape() {
        let pod = app(vec![ctr("c", &[(SL, "2"), (PCT, "50")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a logical slice request is always a single card; multi-card logical slicing is not supported yet"]
        );
        let pod = app(vec![ctr("c", &[(PCT, "50")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a sliced request must set nvidia.com/gpu.sliced"]
        );
        let pod = app(vec![ctr("c", &[(SL, "1")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a nvidia.com/gpu.sliced request must set nvidia.com/gpu.sliced.memory-percentage or nvidia.com/gpu.sliced.memory-mib"]
        );
        let pod = app(vec![ctr("c", &[(SL, "1"), (PCT, "50"), (MIB_KEY, "1024")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["cannot set both nvidia.com/gpu.sliced.memory-percentage and nvidia.com/gpu.sliced.memory-mib"]
        );
        let pod = app(vec![ctr(
            "c",
            &[
                (SL, "1"),
                (PCT, "101"),
                ("nvidia.com/gpu.sliced.cores-percentage", "0"),
            ],
        )]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["must be within (0, 100]", "must be within (0, 100]"]
        );
        let pod = app(vec![ctr("c", &[(SL, "1"), (MIB_KEY, "0")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["must be greater than zero"]
        );
        // "Exactly 1" compares values: 1m is not one.
        let pod = app(vec![ctr("c", &[(SL, "1m"), (PCT, "50")])]);
        assert_eq!(messages(validate_pod_requests(&pod)).len(), 1);
    }

    #[test]
    fn rules_3_to_5_partition_shape() {
        let pod = app(vec![ctr("c", &[(PT, "2"), (MIG, "1")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a partition request is always a single card; request one Pod per instance"]
        );
        let pod = app(vec![ctr("c", &[(MIG, "1")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a partition request must set nvidia.com/gpu.partitioned"]
        );
        let pod = app(vec![ctr("c", &[(PT, "1")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a nvidia.com/gpu.partitioned request must name a profile, e.g. nvidia.com/gpu.partitioned.<kind>-<profile>"]
        );
        let pod = app(vec![ctr(
            "c",
            &[
                (PT, "1"),
                (MIG, "1"),
                ("nvidia.com/gpu.partitioned.mig-1g.10gb", "1"),
            ],
        )]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            [
                "a Pod may request only one partition profile, found [1g.10gb 3g.40gb]",
                "a container may request only one partition profile, found [1g.10gb 3g.40gb]"
            ]
        );
        let pod = app(vec![ctr("c", &[(PT, "1"), (MIG, "2")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a partition profile request must be exactly 1 instance"]
        );
    }

    const HY_PT: &str = "hygon.com/dcu.partitioned";
    const HY_MIG: &str = "hygon.com/dcu.partitioned.mig-2g.15gb";

    #[test]
    fn hygon_one_partition_per_container() {
        // hygon-mig.md "Requesting a partition": the family key and one profile key, each 1.
        let pod = app(vec![ctr("c", &[(HY_PT, "1"), (HY_MIG, "1")])]);
        assert_eq!(validate_pod_requests(&pod), Ok(()));
        // Two partitions in one container: rule 3 on the family key, nothing else.
        let pod = app(vec![ctr("c", &[(HY_PT, "2"), (HY_MIG, "1")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a partition request is always a single card; request one Pod per instance"]
        );
        // Two instances of the profile: rule 5.
        let pod = app(vec![ctr("c", &[(HY_PT, "1"), (HY_MIG, "2")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a partition profile request must be exactly 1 instance"]
        );
        // Two profiles in one container: rule 4, per Pod and per container.
        let pod = app(vec![ctr(
            "c",
            &[
                (HY_PT, "1"),
                (HY_MIG, "1"),
                ("hygon.com/dcu.partitioned.mig-4g.31gb", "1"),
            ],
        )]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            [
                "a Pod may request only one partition profile, found [2g.15gb 4g.31gb]",
                "a container may request only one partition profile, found [2g.15gb 4g.31gb]"
            ]
        );
        // The family alone names no profile (hygon-mig.md: refused at admission).
        let pod = app(vec![ctr("c", &[(HY_PT, "1")])]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a hygon.com/dcu.partitioned request must name a profile, e.g. hygon.com/dcu.partitioned.<kind>-<profile>"]
        );
        // Two containers of one Pod each with a partition: at most one slicing container.
        let pod = app(vec![
            ctr("a", &[(HY_PT, "1"), (HY_MIG, "1")]),
            ctr("b", &[(HY_PT, "1"), (HY_MIG, "1")]),
        ]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["at most one container may request a slicing family, found 2"]
        );
    }

    #[test]
    fn hygon_partition_units_fold_from_the_bw_profile() {
        let mut it = pool("65520Mi");
        it.name = "gpustack--hygon-bw-linux-amd64".into();
        it.spec.accelerator_group = "hygon-bw".into();
        it.status.detail.manufacturer = "hygon".into();
        it.status.detail.sliced_detail.physical.profiles =
            crate::ledger::catalogs::hygon_bw().physical_profiles;
        let pod = app(vec![ctr("c", &[(HY_PT, "1"), (HY_MIG, "1")])]);
        let folded = fold_pod_requests(&pod, &Ok(&it)).unwrap();
        let c = &folded.containers[0].container;
        // ⌊16380 · 1,600,000 / 65520⌋: a quarter card.
        assert_eq!(
            c.requests
                .get("hygon.com/dcu.partitioned.units")
                .map(String::as_str),
            Some("400000")
        );
        assert_eq!(
            partition_units(&it, "c", "hygon.com/dcu", "8g.63gb"),
            Ok(1_600_000)
        );
    }

    #[test]
    fn rules_6_and_7_slicing_containers_and_sidecars() {
        let pod = app(vec![
            ctr("a", &[(SL, "1"), (PCT, "50")]),
            ctr("b", &[(SL, "1"), (PCT, "50")]),
        ]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["at most one container may request a slicing family, found 2"]
        );
        let pod = pod_containers(&[(ctr("ssh", &[("nvidia.com/gpu", "1")]), true)], &[]);
        assert_eq!(
            messages(validate_pod_requests(&pod)),
            ["a restartable init container (a native sidecar) may not request an accelerator; move the request to an app container"]
        );
        // The SSH sidecar's visibility resource is outside the families.
        let pod = pod_containers(
            &[(
                ctr("ssh", &[("device.gpustack.ai/nvidia.visibility", "1")]),
                true,
            )],
            &[ctr("a", &[(SL, "1"), (PCT, "50")])],
        );
        assert_eq!(validate_pod_requests(&pod), Ok(()));
    }

    #[test]
    fn fold_examples_of_admission_11_6() {
        let it = pool("80Gi");
        let pod = app(vec![ctr("c", &[(SL, "1"), (PCT, "50"), (UNITS, "7")])]);
        let folded = fold_pod_requests(&pod, &Ok(&it)).unwrap();
        let c = &folded.containers[0].container;
        assert_eq!(c.requests.get(UNITS).map(String::as_str), Some("800000"));
        assert_eq!(c.limits.get(UNITS).map(String::as_str), Some("800000"));
        assert_eq!(
            c.requests
                .get("nvidia.com/gpu.sliced.cores-percentage")
                .map(String::as_str),
            Some("100")
        );
        let pod = app(vec![ctr("c", &[(SL, "1"), (MIB_KEY, "40960")])]);
        let folded = fold_pod_requests(&pod, &Ok(&it)).unwrap();
        let units = folded.containers[0].container.requests.get(UNITS).cloned();
        assert_eq!(units.as_deref(), Some("800000"));
    }

    #[test]
    fn fold_partition_units_from_the_profile_memory() {
        let it = pool("80Gi");
        let pod = app(vec![ctr("c", &[(PT, "1"), (MIG, "1")])]);
        let folded = fold_pod_requests(&pod, &Ok(&it)).unwrap();
        let c = &folded.containers[0].container;
        assert_eq!(
            c.requests
                .get("nvidia.com/gpu.partitioned.units")
                .map(String::as_str),
            Some("800000")
        );
        // pod.go comment: on a 96 GiB card a 48 GiB profile folds to 800,000.
        let mut it96 = pool("96Gi");
        it96.status.detail.sliced_detail.physical.profiles[0].memory_mib = Some(48 * 1024);
        assert_eq!(
            partition_units(&it96, "c", "nvidia.com/gpu", "3g.40gb"),
            Ok(800_000)
        );
    }

    #[test]
    fn fold_rejections() {
        let it = pool("80Gi");
        let pod = app(vec![ctr(
            "c",
            &[(PT, "1"), ("nvidia.com/gpu.partitioned.mig-7g.80gb", "1")],
        )]);
        let err = fold_pod_requests(&pod, &Ok(&it)).unwrap_err();
        assert_eq!(
            err,
            PodRejection::Denied {
                message: "container \"c\": partition profile \"7g.80gb\" is not offered by the target pool (instance type gpustack--nvidia-a100-linux-amd64)".into(),
                retryable: false,
                offered: vec!["3g.40gb".into()],
            }
        );
        let mut unready = pool("");
        unready.status.detail.manufacturer = Text::default();
        let err = fold_pod_requests(&pod, &Ok(&unready)).unwrap_err();
        assert!(matches!(
            err,
            PodRejection::Denied {
                retryable: true,
                ..
            }
        ));
        let pod = app(vec![ctr("c", &[(SL, "1"), (MIB_KEY, "90000")])]);
        assert_eq!(
            fold_pod_requests(&pod, &Ok(&it)).unwrap_err().messages(),
            ["container \"c\": nvidia.com/gpu.sliced.memory-mib must not exceed the per-card VRAM (81920 MiB)"]
        );
        let pod = app(vec![ctr("c", &[(SL, "1"), (MIB_KEY, "1024")])]);
        assert_eq!(
            fold_pod_requests(&pod, &Ok(&pool(""))).unwrap_err().messages(),
            ["instance type gpustack--nvidia-a100-linux-amd64 has no per-card memory yet (detail not ready)"]
        );
    }

    #[test]
    fn shared_pin_for_two_cards_or_more() {
        let it = pool("80Gi");
        let pod = app(vec![ctr("c", &[("nvidia.com/gpu.shared", "2")])]);
        let folded = fold_pod_requests(&pod, &Ok(&it)).unwrap();
        assert_eq!(
            folded.node_requirements,
            [NodeSelectorRequirement {
                key: "acceleratable.feature.gpustack.ai/nvidia-a100.count".into(),
                operator: "Gt".into(),
                values: vec!["1".into()],
            }]
        );
        let pod = app(vec![ctr("c", &[("nvidia.com/gpu.shared", "1")])]);
        assert!(fold_pod_requests(&pod, &Ok(&it))
            .unwrap()
            .node_requirements
            .is_empty());
        let mut nameless = it.clone();
        nameless.spec.accelerator_group = Text::default();
        let pod = app(vec![ctr("c", &[("nvidia.com/gpu.shared", "3")])]);
        assert!(fold_pod_requests(&pod, &Ok(&nameless)).is_err());
    }

    #[test]
    fn fronting_instance_type_needs_exactly_one() {
        let mut it = pool("80Gi");
        it.labels
            .insert(QUEUE_ENTRANCE.into(), "gpustack-fnv64-1".into());
        let its = vec![it.clone()];
        assert!(fronting_instance_type(&its, "gpustack-fnv64-1").is_ok());
        assert!(fronting_instance_type(&its, "gpustack-fnv64-2").is_err());
        let twice = vec![it.clone(), it];
        assert!(fronting_instance_type(&twice, "gpustack-fnv64-1").is_err());
    }

    #[test]
    fn only_the_folds_that_need_it_read_the_fronting_instance_type() {
        let none: Vec<InstanceType> = Vec::new();
        let fronting = fronting_instance_type(&none, "gpustack-fnv64-1");
        assert!(fronting.is_err());
        let no_lookup = [
            vec![ctr("c", &[("nvidia.com/gpu", "2")])],
            vec![ctr("c", &[("nvidia.com/gpu.shared", "1")])],
            vec![ctr(
                "c",
                &[
                    ("nvidia.com/gpu.sliced", "1"),
                    ("nvidia.com/gpu.sliced.memory-percentage", "50"),
                ],
            )],
        ];
        for pod in no_lookup {
            let folded = fold_pod_requests(&app(pod.clone()), &fronting);
            assert!(folded.is_ok(), "{pod:?}: {folded:?}");
        }
        let lookup = [
            vec![ctr("c", &[("nvidia.com/gpu.shared", "2")])],
            vec![ctr(
                "c",
                &[
                    ("nvidia.com/gpu.sliced", "1"),
                    ("nvidia.com/gpu.sliced.memory-mib", "1024"),
                ],
            )],
            vec![ctr(
                "c",
                &[
                    ("nvidia.com/gpu.partitioned", "1"),
                    ("nvidia.com/gpu.partitioned.mig-1g.10gb", "1"),
                ],
            )],
        ];
        for pod in lookup {
            let err = fold_pod_requests(&app(pod.clone()), &fronting).unwrap_err();
            assert_eq!(
                err.messages(),
                vec!["no instance type fronts local queue gpustack-fnv64-1"],
                "{pod:?}"
            );
        }
    }

    #[test]
    fn an_invalid_pod_reads_as_the_api_server_says_it() {
        let one = app(vec![ctr(
            "c",
            &[
                ("nvidia.com/gpu.sliced", "2"),
                ("nvidia.com/gpu.sliced.memory-percentage", "50"),
            ],
        )]);
        let msg = validate_pod_requests(&one).unwrap_err().message_for("p");
        assert!(
            msg.starts_with("Pod \"p\" is invalid: spec.containers[0]"),
            "{msg}"
        );
        let two = app(vec![ctr("c", &[("nvidia.com/gpu.sliced", "2")])]);
        let msg = validate_pod_requests(&two).unwrap_err().message_for("p");
        assert!(
            msg.starts_with("Pod \"p\" is invalid: [spec.containers[0]"),
            "{msg}"
        );
    }
}
