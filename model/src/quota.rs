//! Gate 2: Kueue's credits quota on a pool's ClusterQueue (admission.md §5, §16 R6–R7;
//! chain.md §10.2). Kueue transformations fold every accelerator request into
//! `credits.gpustack.ai/<manufacturer>`; the isolated queue admits a Workload only while its
//! credits fit the nominal quota — no cohort, no borrowing.

use std::collections::BTreeMap;

use crate::credits::{parse_quantity, Quantity};
use crate::error::ModelError;
use crate::resources::{base_of, classify, credits_resource_name, resource_name, Key};
use crate::units::{CREDITS_PER_CARD, UNITS_PER_SHARE};
use crate::workload::{Container, PodSet, Workload};

/// R6: a pool's nominal credits, Σ over its flavors of capacity (nodes × cards per node, all
/// cards of the model, either family) × D (chain.md §10.2); saturates rather than wraps.
pub fn pool_quota(flavor_capacities: &[u64]) -> i64 {
    flavor_capacities
        .iter()
        .map(|c| i64::try_from(*c).unwrap_or(i64::MAX))
        .fold(0i64, |sum, c| {
            sum.saturating_add(c.saturating_mul(CREDITS_PER_CARD))
        })
}

/// A container's requests as Kubernetes defaults them: a key set only in limits requests the
/// same amount (extended resources require requests = limits).
fn effective_requests(c: &Container) -> Result<BTreeMap<String, Quantity>, ModelError> {
    let mut out = BTreeMap::new();
    for (name, raw) in c.limits.iter().chain(c.requests.iter()) {
        let q = parse_quantity(raw)
            .map_err(|e| ModelError::invalid(format!("{}.{name}", c.name), e.to_string()))?;
        out.insert(name.clone(), q);
    }
    Ok(out)
}

/// One Pod's requests as Kueue sums them: per resource, the larger of the app containers' sum
/// and the largest init container (the Kubernetes Pod-request rule).
pub fn pod_requests(containers: &[Container]) -> Result<BTreeMap<String, Quantity>, ModelError> {
    let mut app: BTreeMap<String, i128> = BTreeMap::new();
    let mut init: BTreeMap<String, i128> = BTreeMap::new();
    for c in containers {
        for (name, q) in effective_requests(c)? {
            if c.init {
                let slot = init.entry(name).or_default();
                *slot = (*slot).max(q.micro());
            } else {
                *app.entry(name).or_default() += q.micro();
            }
        }
    }
    for (name, micro) in init {
        let slot = app.entry(name).or_default();
        *slot = (*slot).max(micro);
    }
    Ok(app
        .into_iter()
        .map(|(k, m)| (k, Quantity::from_micro(m)))
        .collect())
}

/// The Kueue transformation of one resource: the credits resource and credits per unit of
/// request (`<base>` × D, `.shared` × D/10, `.sliced.units` × 1 multiplied by `<base>.sliced`,
/// `.partitioned.units` × 1); `None` = passes through unconsumed (admission.md §5; SPEC-SPLIT
/// F3). The `.sliced` factor is 1 after gate 1; a Pod without the key counts it as 1.
fn credit_transformation(
    name: &str,
    pod: &BTreeMap<String, Quantity>,
) -> Option<(String, Quantity)> {
    let r = classify(name)?;
    let per_unit = Quantity::from_int(credits_per_unit(&r.key)?);
    let factor = match r.key {
        Key::SlicedUnits => {
            let sliced = format!("{}.sliced", base_of(&r.manufacturer)?);
            let by = pod
                .get(&sliced)
                .copied()
                .unwrap_or_else(|| Quantity::from_int(1));
            Quantity::from_micro(per_unit.micro() * by.micro() / 1_000_000)
        }
        _ => per_unit,
    };
    Some((credits_resource_name(&r.manufacturer), factor))
}

/// Credits per unit of each key Kueue folds (`<base>` × D, `.shared` × D/10, `.sliced.units`
/// and `.partitioned.units` × 1); `None`: the key passes through unconsumed.
fn credits_per_unit(key: &Key) -> Option<i64> {
    match key {
        Key::Whole => Some(CREDITS_PER_CARD),
        Key::Shared => Some(UNITS_PER_SHARE),
        Key::SlicedUnits | Key::PartitionedUnits => Some(1),
        _ => None,
    }
}

/// One entry of Kueue's `resources.transformations` (strategy Replace): `input` becomes
/// `credits` per unit in `output`, multiplied by the request of `multiply_by` when set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KueueTransformation {
    pub input: String,
    pub multiply_by: Option<String>,
    pub output: String,
    pub credits: i64,
}

/// The transformations the operator configures Kueue with, one set per manufacturer
/// (admission.md §5, generated from pkg/nodefeature; SPEC-SPLIT F3): the same folds
/// [`pod_credits`] applies, so a real Kueue books what gate 2 of the model books.
pub fn kueue_transformations() -> Vec<KueueTransformation> {
    let keys = [
        Key::Whole,
        Key::Shared,
        Key::SlicedUnits,
        Key::PartitionedUnits,
    ];
    crate::labels::MANUFACTURERS
        .into_iter()
        .flat_map(|m| {
            keys.iter().filter_map(move |key| {
                Some(KueueTransformation {
                    input: resource_name(m, key)?,
                    multiply_by: match key {
                        Key::SlicedUnits => resource_name(m, &Key::Sliced),
                        _ => None,
                    },
                    output: credits_resource_name(m),
                    credits: credits_per_unit(key)?,
                })
            })
        })
        .collect()
}

/// One Pod's credits per credits resource, each rounded up to a whole credit (Kueue's
/// `ResourceValue` quantization of a non-CPU resource).
pub fn pod_credits(containers: &[Container]) -> Result<BTreeMap<String, i64>, ModelError> {
    credits_of_requests(&pod_requests(containers)?)
}

/// [`pod_credits`] from the Pod's effective requests ([`pod_requests`]), for callers that read
/// them for more than credits and so parse them once.
pub fn credits_of_requests(
    pod: &BTreeMap<String, Quantity>,
) -> Result<BTreeMap<String, i64>, ModelError> {
    let mut micro: BTreeMap<String, i128> = BTreeMap::new();
    for (name, q) in pod {
        if let Some((credits, factor)) = credit_transformation(name, pod) {
            let product = q
                .micro()
                .checked_mul(factor.micro())
                .map(|m| m / 1_000_000)
                .ok_or_else(|| ModelError::invalid(name.clone(), "credits overflow"))?;
            *micro.entry(credits).or_default() += product;
        }
    }
    micro
        .into_iter()
        .map(|(k, m)| {
            let whole = Quantity::from_micro(m).value();
            i64::try_from(whole)
                .map(|v| (k.clone(), v))
                .map_err(|_| ModelError::invalid(k, "credits overflow"))
        })
        .collect()
}

/// R7 for one pod set: the per-Pod credits × its pod count.
pub fn pod_set_credits(ps: &PodSet) -> Result<BTreeMap<String, i64>, ModelError> {
    pod_set_credits_of(ps, pod_credits(&ps.containers)?)
}

/// `per_pod` credits (one Pod's, [`pod_credits`]) × the pod set's count.
pub fn pod_set_credits_of(
    ps: &PodSet,
    per_pod: BTreeMap<String, i64>,
) -> Result<BTreeMap<String, i64>, ModelError> {
    per_pod
        .into_iter()
        .map(|(k, v)| {
            v.checked_mul(i64::from(ps.count))
                .map(|total| (k.clone(), total))
                .ok_or_else(|| ModelError::invalid(format!("{}.{k}", ps.name), "credits overflow"))
        })
        .collect()
}

/// R7: a Workload's credits per credits resource, summed over its pod sets (exclusive N → N·D,
/// shared N → N·D/10, sliced and partition → their units, × pod count; admission.md §5, §11.6).
pub fn workload_credits(w: &Workload) -> Result<BTreeMap<String, i64>, ModelError> {
    let mut total: BTreeMap<String, i64> = BTreeMap::new();
    for ps in &w.pod_sets {
        for (k, v) in pod_set_credits(ps)? {
            let slot = total.entry(k.clone()).or_default();
            *slot = slot
                .checked_add(v)
                .ok_or_else(|| ModelError::invalid(k, "credits overflow"))?;
        }
    }
    Ok(total)
}

/// What gate 2 does with a Workload's request against one flavor's quota.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaVerdict {
    /// Quota is reserved; the Workload goes on to the AdmissionChecks.
    Admit,
    /// No quota reserved; the Workload waits. `free` = nominal − used, never below 0.
    Pending { reason: String, free: i64 },
}

/// R7's admission test for one credits resource of one flavor: admit only if
/// used + request ≤ nominal (isolated queue, no borrowing). The reason follows Kueue's flavor
/// assigner wording: a request above the whole quota can never fit ("request > maximum
/// capacity"), otherwise it names how much more is needed (admission.md §5 gives no operator
/// message: gate 2 is Kueue's own).
pub fn quota_verdict(
    resource: &str,
    flavor: &str,
    used: i64,
    request: i64,
    nominal: i64,
) -> QuotaVerdict {
    let needed = used.saturating_add(request);
    if needed <= nominal {
        return QuotaVerdict::Admit;
    }
    let free = nominal.saturating_sub(used).max(0);
    let reason = if request > nominal {
        format!(
            "insufficient quota for {resource} in flavor {flavor}, request > maximum capacity \
             ({request} > {nominal})"
        )
    } else {
        format!(
            "insufficient unused quota for {resource} in flavor {flavor}, {} more needed",
            needed - nominal
        )
    };
    QuotaVerdict::Pending { reason, free }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctr(reqs: &[(&str, &str)]) -> Container {
        Container {
            name: "c".into(),
            requests: reqs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Container::default()
        }
    }

    fn credits_of(containers: Vec<Container>, count: u32) -> i64 {
        let w = Workload {
            deployment: None,
            pod_sets: vec![PodSet {
                name: "main".into(),
                count,
                containers,
                ..PodSet::default()
            }],
            ..Workload::default()
        };
        let got = workload_credits(&w).unwrap();
        got.get("credits.gpustack.ai/nvidia").copied().unwrap_or(0)
    }

    #[test]
    fn fold_examples_of_admission_11_6() {
        assert_eq!(
            credits_of(vec![ctr(&[("nvidia.com/gpu.shared", "2")])], 1),
            320_000
        );
        assert_eq!(
            credits_of(vec![ctr(&[("nvidia.com/gpu", "2")])], 1),
            3_200_000
        );
        let slice = ctr(&[
            ("nvidia.com/gpu.sliced", "1"),
            ("nvidia.com/gpu.sliced.units", "800000"),
            ("nvidia.com/gpu.sliced.memory-percentage", "50"),
        ]);
        assert_eq!(credits_of(vec![slice], 1), 800_000);
        let partition = ctr(&[
            ("nvidia.com/gpu.partitioned", "1"),
            ("nvidia.com/gpu.partitioned.mig-3g.40gb", "1"),
            ("nvidia.com/gpu.partitioned.units", "800000"),
        ]);
        assert_eq!(credits_of(vec![partition], 1), 800_000);
    }

    #[test]
    fn pods_multiply_and_init_containers_take_the_max() {
        assert_eq!(
            credits_of(vec![ctr(&[("nvidia.com/gpu", "1")])], 3),
            4_800_000
        );
        let mut init = ctr(&[("nvidia.com/gpu", "2")]);
        init.init = true;
        let app = ctr(&[("nvidia.com/gpu", "1")]);
        assert_eq!(credits_of(vec![init, app.clone(), app], 1), 3_200_000);
    }

    #[test]
    fn other_resources_and_other_manufacturers_stay_apart() {
        let w = Workload {
            deployment: None,
            pod_sets: vec![PodSet {
                count: 1,
                containers: vec![ctr(&[
                    ("cpu", "4"),
                    ("huawei.com/npu", "1"),
                    ("device.gpustack.ai/nvidia.visibility", "1"),
                ])],
                ..PodSet::default()
            }],
            ..Workload::default()
        };
        let got = workload_credits(&w).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got.get("credits.gpustack.ai/ascend"), Some(&1_600_000));
    }

    #[test]
    fn a_bad_quantity_is_an_error_value() {
        let w = Workload {
            deployment: None,
            pod_sets: vec![PodSet {
                count: 1,
                containers: vec![ctr(&[("nvidia.com/gpu", "two")])],
                ..PodSet::default()
            }],
            ..Workload::default()
        };
        assert!(workload_credits(&w).is_err());
    }

    #[test]
    fn no_borrowing_admits_only_within_nominal() {
        // admission.md §11.5: 8 cards each half used leave 6.4M credits free.
        let nominal = pool_quota(&[8]);
        let used = 8 * 800_000;
        let r = "credits.gpustack.ai/nvidia";
        assert_eq!(
            quota_verdict(r, "f", used, 4 * 1_600_000, nominal),
            QuotaVerdict::Admit
        );
        assert_eq!(
            quota_verdict(r, "f", used, 5 * 1_600_000, nominal),
            QuotaVerdict::Pending {
                reason: "insufficient unused quota for credits.gpustack.ai/nvidia in flavor f, 1600000 more needed".into(),
                free: 6_400_000,
            }
        );
        assert_eq!(
            quota_verdict(r, "f", 0, 9 * 1_600_000, nominal),
            QuotaVerdict::Pending {
                reason: "insufficient quota for credits.gpustack.ai/nvidia in flavor f, request > maximum capacity (14400000 > 12800000)".into(),
                free: 12_800_000,
            }
        );
    }
}
