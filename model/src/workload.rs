//! A Workload as Kueue sees it: pod sets × count × per-pod container requests, plus what Kueue
//! assigned (admission.md §6.1–6.3). Quantities stay Kubernetes quantity strings until a rule
//! reads them, so a malformed quantity is reported by the rule that needs it.

use serde::{Deserialize, Serialize};

use crate::labels::Labels;

/// Resource name → quantity string (`"2"`, `"500m"`, `"24Gi"`).
pub type ResourceList = std::collections::BTreeMap<String, String>;

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Container {
    pub name: String,
    pub requests: ResourceList,
    pub limits: ResourceList,
    /// An init container (runs before the app containers; its requests do not add up with them).
    pub init: bool,
}

/// One pod set: `count` identical pods.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct PodSet {
    pub name: String,
    pub count: u32,
    pub containers: Vec<Container>,
    /// Pod labels/annotations that rules read (e.g. the `kueue.x-k8s.io/queue-name` label).
    pub labels: Labels,
    /// The ResourceFlavor Kueue assigned to the accelerator resource, once quota is reserved.
    pub flavor: Option<String>,
    /// Node chosen by topology-aware scheduling at hostname level, if any.
    pub node: Option<String>,
}

/// A Workload submitted to a pool's entrance LocalQueue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Workload {
    pub name: String,
    pub namespace: String,
    /// The LocalQueue (`gpustack-fnv64-…`) it was submitted to.
    pub queue: String,
    pub pod_sets: Vec<PodSet>,
    /// The ModelDeployment replica it stands for, if any (the joint check reads it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<crate::admission::joint::DeploymentReplica>,
}

/// A request or limit below zero, where it sits in its Workload.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "pod_sets[{pod_set}].containers[{container}].{list}[{resource}]: `{quantity}`: must be \
     greater than or equal to 0"
)]
pub struct NegativeQuantity {
    pub pod_set: usize,
    pub container: usize,
    /// `requests` or `limits`.
    pub list: &'static str,
    pub resource: String,
    pub quantity: String,
}

/// A request or limit below zero is refused by Kubernetes before any rule reads it
/// (apimachinery validation `ValidateNonnegativeQuantity`: "must be greater than or equal to
/// 0"), so a Workload asking for `-1` cards is bad input, never one to admit. Unparsable
/// quantities stay for the rule that reads them (the module's note).
pub fn validate_nonnegative(w: &Workload) -> Result<(), NegativeQuantity> {
    for (pod_set, ps) in w.pod_sets.iter().enumerate() {
        for (container, c) in ps.containers.iter().enumerate() {
            for (list, resources) in [("requests", &c.requests), ("limits", &c.limits)] {
                for (name, raw) in resources {
                    if crate::credits::parse_quantity(raw).is_ok_and(|q| q.micro() < 0) {
                        return Err(NegativeQuantity {
                            pod_set,
                            container,
                            list,
                            resource: name.clone(),
                            quantity: raw.clone(),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod nonnegative_tests {
    use super::*;

    fn asking(qty: &str) -> Workload {
        Workload {
            pod_sets: vec![PodSet {
                containers: vec![Container {
                    requests: [("nvidia.com/gpu".to_string(), qty.to_string())].into(),
                    ..Container::default()
                }],
                ..PodSet::default()
            }],
            ..Workload::default()
        }
    }

    #[test]
    fn a_negative_request_is_refused_with_where_it_sits() {
        let e = validate_nonnegative(&asking("-1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pod_sets[0].containers[0].requests[nvidia.com/gpu]: `-1`: must be greater than \
             or equal to 0"
        );
        assert!(validate_nonnegative(&asking("-500m")).is_err());
        for ok in ["0", "1", "500m", "not-a-quantity"] {
            assert!(validate_nonnegative(&asking(ok)).is_ok(), "{ok}");
        }
    }
}
