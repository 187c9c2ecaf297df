//! Workloads submitted to a pool's entrance LocalQueue (research/admission.md §2, §4): requests
//! of every family, mostly valid, sometimes breaking one webhook rule, as pod sets × count.

use model::admission::joint::{DeclaredRole, DeploymentReplica};
use model::cluster::Cluster;
use model::derive::Deriver;
use model::nodefeature::local_queue_name;
use model::resources::{base_of, profile_resource_name, Family};
use model::workload::{Container, PodSet, ResourceList, Workload};
use proptest::prelude::*;
use proptest::strategy::Union;

/// What a generator needs to know of one pool of a derived cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// The InstanceType / ClusterQueue name.
    pub name: String,
    /// Its entrance LocalQueue name, `local_queue_name(name)`.
    pub queue: String,
    /// The accelerator manufacturer; `None` for a CPU pool.
    pub manufacturer: Option<String>,
    /// Partition profiles the pool offers (vendor spelling, from the InstanceType detail).
    pub profiles: Vec<String>,
    /// Namespaces holding the pool's LocalQueue; all of the cluster's when none does yet.
    pub namespaces: Vec<String>,
}

/// The pools the chain derives for `cluster` (one per InstanceType), with the namespaces
/// their entrances live in.
pub fn pools_of(cluster: &Cluster) -> Vec<Pool> {
    pools_through(cluster, &Deriver::plain())
}

/// [`pools_of`], deriving `cluster` through `deriver` (a fuzz seed's, whose judgement then
/// takes the same derivation's node and pool steps from its store).
pub fn pools_through(cluster: &Cluster, deriver: &Deriver) -> Vec<Pool> {
    let derived = deriver.derive(cluster);
    let all: Vec<String> = cluster.namespaces.iter().map(|n| n.name.clone()).collect();
    derived
        .instance_types
        .iter()
        .map(|it| {
            let manufacturer = it
                .spec
                .acceleratable
                .then(|| it.spec.accelerator_group.split_once('-'))
                .flatten()
                .map(|(m, _)| m.to_string());
            let mut namespaces: Vec<String> = derived
                .local_queues
                .iter()
                .filter(|lq| lq.cluster_queue == it.name)
                .map(|lq| lq.namespace.to_string())
                .collect();
            if namespaces.is_empty() {
                namespaces = all.clone();
            }
            Pool {
                name: it.name.to_string(),
                queue: local_queue_name(&it.name),
                manufacturer,
                profiles: it
                    .status
                    .detail
                    .sliced_detail
                    .physical
                    .profiles
                    .iter()
                    .map(|p| p.name.to_string())
                    .collect(),
                namespaces,
            }
        })
        .collect()
}

/// The per-profile request key of a vendor-spelled profile (NVIDIA, T-Head and Hygon all have
/// the kind `mig`); for a manufacturer without a kind (or a profile that forms no qualified
/// name) the `<base>.partitioned.mig-<profile>` spelling, which classifies as no accelerator
/// resource: such a request is one the webhook refuses.
fn profile_key(manufacturer: &str, base: &str, profile: &str) -> String {
    profile_resource_name(manufacturer, profile)
        .unwrap_or_else(|| format!("{base}.partitioned.mig-{profile}"))
}

fn list(pairs: Vec<(String, String)>) -> ResourceList {
    pairs.into_iter().collect()
}

/// A valid request of `family` against `base` (admission.md §2.3, §4.2).
fn valid_request(
    family: Family,
    manufacturer: &str,
    base: &str,
    profiles: &[String],
) -> BoxedStrategy<ResourceList> {
    let base = base.to_string();
    match family {
        Family::Exclusive => (1u32..=4)
            .prop_map(move |n| list(vec![(base.clone(), n.to_string())]))
            .boxed(),
        Family::Shared => (1u32..=4)
            .prop_map(move |n| list(vec![(format!("{base}.shared"), n.to_string())]))
            .boxed(),
        Family::Sliced => {
            let memory = prop_oneof![
                (1u32..=100).prop_map(|p| ("memory-percentage", p.to_string())),
                (512u32..=8192).prop_map(|m| ("memory-mib", m.to_string())),
            ];
            (memory, prop::option::of(1u32..=100))
                .prop_map(move |((key, value), cores)| {
                    let mut pairs = vec![
                        (format!("{base}.sliced"), "1".to_string()),
                        (format!("{base}.sliced.{key}"), value),
                    ];
                    if let Some(c) = cores {
                        pairs.push((format!("{base}.sliced.cores-percentage"), c.to_string()));
                    }
                    list(pairs)
                })
                .boxed()
        }
        Family::Partitioned => {
            let keys: Vec<String> = profiles
                .iter()
                .map(|p| profile_key(manufacturer, &base, p))
                .collect();
            if keys.is_empty() {
                return Just(list(vec![(format!("{base}.partitioned"), "1".to_string())])).boxed();
            }
            prop::sample::select(keys)
                .prop_map(move |k| {
                    list(vec![
                        (format!("{base}.partitioned"), "1".to_string()),
                        (k, "1".to_string()),
                    ])
                })
                .boxed()
        }
        Family::Visibility | Family::None => Just(ResourceList::new()).boxed(),
    }
}

/// A request that breaks one rule at gate 1 (admission.md §4.2): 0 % or 101 % memory, both
/// memory keys, partition and slice together, an unknown profile, a malformed quantity.
/// For the partition family also two instances in one container (rule 3: one partition per
/// container, the hardware limit on Hygon, hygon-mig.md "Limitations").
fn invalid_request(
    family: Family,
    manufacturer: &str,
    base: &str,
    profiles: &[String],
) -> BoxedStrategy<ResourceList> {
    let b = base.to_string();
    let sliced = |pct: &str| {
        vec![
            (format!("{b}.sliced"), "1".to_string()),
            (format!("{b}.sliced.memory-percentage"), pct.to_string()),
        ]
    };
    let mut both = sliced("50");
    both.push((format!("{b}.sliced.memory-mib"), "1024".to_string()));
    let mut mixed = sliced("25");
    mixed.push((format!("{b}.partitioned"), "1".to_string()));
    let unknown = vec![
        (format!("{b}.partitioned"), "1".to_string()),
        (profile_key(manufacturer, &b, "9g.99gb"), "1".to_string()),
    ];
    let two_instances = vec![
        (format!("{b}.partitioned"), "2".to_string()),
        (
            profile_key(
                manufacturer,
                &b,
                profiles.first().map_or("9g.99gb", String::as_str),
            ),
            "1".to_string(),
        ),
    ];
    let malformed_key = match family {
        Family::Shared => format!("{b}.shared"),
        Family::Sliced => format!("{b}.sliced.memory-percentage"),
        Family::Partitioned => format!("{b}.partitioned"),
        _ => b.clone(),
    };
    let mut malformed = match family {
        Family::Sliced => sliced("50"),
        _ => Vec::new(),
    };
    malformed.retain(|(k, _)| *k != malformed_key);
    malformed.push((malformed_key, "1.5.0".to_string()));
    let options: Vec<ResourceList> = match family {
        Family::Sliced => vec![
            list(sliced("0")),
            list(sliced("101")),
            list(both),
            list(mixed),
        ],
        Family::Partitioned => vec![list(unknown), list(mixed), list(two_instances)],
        _ => vec![list(unknown)],
    }
    .into_iter()
    .chain([list(malformed)])
    .collect();
    prop::sample::select(options).boxed()
}

/// A container's requests of `family` for `pool`: valid mostly, invalid at a low rate; a CPU
/// pool (or `Family::None`) asks for CPU only. Every request also asks for some CPU.
pub fn arb_request(family: Family, pool: &Pool) -> BoxedStrategy<ResourceList> {
    let cpu = prop::sample::select(vec!["100m", "500m", "1", "2"]);
    let accel = match (
        family,
        pool.manufacturer
            .as_deref()
            .and_then(|m| Some((m, base_of(m)?))),
    ) {
        (Family::None | Family::Visibility, _) | (_, None) => Just(ResourceList::new()).boxed(),
        (family, Some((m, base))) => Union::new_weighted(vec![
            (9, valid_request(family, m, base, &pool.profiles)),
            (1, invalid_request(family, m, base, &pool.profiles)),
        ])
        .boxed(),
    };
    (cpu, accel)
        .prop_map(|(cpu, mut requests)| {
            requests.insert("cpu".to_string(), cpu.to_string());
            requests
        })
        .boxed()
}

/// The families a pool's Workloads ask for: the device families for an accelerator pool
/// (partitioned only where the pool offers profiles; asking a pool without profiles for a
/// partition is left to the invalid requests), CPU only for a CPU pool.
fn arb_family(pool: &Pool) -> BoxedStrategy<Family> {
    if pool.manufacturer.is_none() {
        return Just(Family::None).boxed();
    }
    let mut families = vec![Family::Exclusive, Family::Shared, Family::Sliced];
    if !pool.profiles.is_empty() {
        families.push(Family::Partitioned);
    }
    prop::sample::select(families).boxed()
}

/// One pod set of `count` identical Pods with one container.
fn arb_pod_set(pool: &Pool, i: usize) -> BoxedStrategy<PodSet> {
    let pool = pool.clone();
    (arb_family(&pool), 1u32..=3)
        .prop_flat_map(move |(family, count)| (arb_request(family, &pool), Just(count)))
        .prop_map(move |(requests, count)| {
            let limits: ResourceList = requests
                .iter()
                .filter(|(k, _)| k.as_str() != "cpu")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            PodSet {
                name: format!("ps-{i}"),
                count,
                containers: vec![Container {
                    name: "main".to_string(),
                    requests,
                    limits,
                    init: false,
                }],
                ..PodSet::default()
            }
        })
        .boxed()
}

/// The roles of the generated ModelDeployments: prefill and decode, one replica each (the
/// P/D shape of cases 50 and 68).
pub const REPLICA_ROLES: [&str; 2] = ["prefill", "decode"];

/// Replica 0 of role `role` of a generated two-role deployment; the deployment's name is a
/// placeholder the event sequence resolves (`md`).
pub fn replica_of(role: &str) -> DeploymentReplica {
    DeploymentReplica {
        deployment: "md".to_string(),
        role: role.to_string(),
        ordinal: 0,
        roles: REPLICA_ROLES
            .iter()
            .map(|r| DeclaredRole {
                name: r.to_string(),
                replicas: 1,
                instance_type: String::new(),
            })
            .collect(),
    }
}

/// A Workload for one of `pools`, in one of the pool's namespaces, submitted to its entrance
/// (`queue = local_queue_name(pool)`), with 1–2 pod sets; one in five is a replica of a
/// two-role ModelDeployment ([`replica_of`]), so the joint check holds and opens sets. Named
/// `wl`; event sequences rename each submission uniquely. With no pool at all the Workload names an entrance that does not
/// exist (callers that need a real queue skip submissions then).
pub fn arb_workload(pools: &[Pool]) -> BoxedStrategy<Workload> {
    if pools.is_empty() {
        return Just(Workload {
            deployment: None,
            name: "wl".to_string(),
            namespace: "default".to_string(),
            queue: local_queue_name("gpustack--no-pool"),
            pod_sets: Vec::new(),
        })
        .boxed();
    }
    prop::sample::select(pools.to_vec())
        .prop_flat_map(|pool| {
            let namespace = prop::sample::select(if pool.namespaces.is_empty() {
                vec!["default".to_string()]
            } else {
                pool.namespaces.clone()
            });
            let sets = prop_oneof![
                3 => arb_pod_set(&pool, 0).prop_map(|p| vec![p]),
                1 => (arb_pod_set(&pool, 0), arb_pod_set(&pool, 1)).prop_map(|(a, b)| vec![a, b]),
            ];
            let role = prop::option::weighted(0.2, prop::sample::select(REPLICA_ROLES.to_vec()));
            (Just(pool.queue.clone()), namespace, sets, role)
        })
        .prop_map(|(queue, namespace, pod_sets, role)| Workload {
            deployment: role.map(replica_of),
            name: "wl".to_string(),
            namespace,
            queue,
            pod_sets,
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::resources::family_of;

    fn nvidia_pool(profiles: &[&str]) -> Pool {
        Pool {
            name: "gpustack--nvidia-a100-sxm4-40gb-linux-amd64".into(),
            queue: local_queue_name("gpustack--nvidia-a100-sxm4-40gb-linux-amd64"),
            manufacturer: Some("nvidia".into()),
            profiles: profiles.iter().map(|p| p.to_string()).collect(),
            namespaces: vec!["default".into()],
        }
    }

    #[test]
    fn thead_profiles_are_requested_in_published_spelling() {
        assert_eq!(
            profile_key("thead", "alibabacloud.com/ppu", "4g48gb"),
            "alibabacloud.com/ppu.partitioned.mig-4g.48gb"
        );
        assert_eq!(
            profile_key("hygon", "hygon.com/dcu", "2g.15gb"),
            "hygon.com/dcu.partitioned.mig-2g.15gb"
        );
    }

    #[test]
    fn invalid_requests_each_break_a_rule() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let s = invalid_request(Family::Sliced, "nvidia", "nvidia.com/gpu", &[]);
        for _ in 0..50 {
            let r = s.new_tree(&mut runner).unwrap().current();
            let pct = r.get("nvidia.com/gpu.sliced.memory-percentage");
            let broken = matches!(pct.map(String::as_str), Some("0" | "101" | "1.5.0"))
                || r.contains_key("nvidia.com/gpu.sliced.memory-mib")
                || r.contains_key("nvidia.com/gpu.partitioned");
            assert!(broken, "{r:?}");
        }
    }

    #[test]
    fn hygon_partition_requests_name_an_offered_profile_or_break_one_rule() {
        use model::pod_webhook::{pod_containers, validate_pod_requests};
        use model::workload::Container as Ctr;
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let profiles: Vec<String> = ["2g.15gb", "4g.31gb", "8g.63gb"].map(String::from).to_vec();
        let validate = |r: &ResourceList| {
            let c = Ctr {
                name: "main".into(),
                requests: r.clone(),
                limits: r.clone(),
                init: false,
            };
            validate_pod_requests(&pod_containers(&[], &[c]))
        };
        let valid = valid_request(Family::Partitioned, "hygon", "hygon.com/dcu", &profiles);
        for _ in 0..20 {
            let r = valid.new_tree(&mut runner).unwrap().current();
            assert_eq!(
                r.get("hygon.com/dcu.partitioned").map(String::as_str),
                Some("1")
            );
            let named = r
                .keys()
                .filter_map(|k| model::resources::partitioned_profile_of(k))
                .collect::<Vec<_>>();
            assert_eq!(named.len(), 1, "{r:?}");
            assert!(profiles.contains(&named[0]), "{r:?}");
            assert_eq!(validate(&r), Ok(()), "{r:?}");
        }
        let invalid = invalid_request(Family::Partitioned, "hygon", "hygon.com/dcu", &profiles);
        let mut two = 0;
        for _ in 0..60 {
            let r = invalid.new_tree(&mut runner).unwrap().current();
            two += usize::from(r.get("hygon.com/dcu.partitioned").map(String::as_str) == Some("2"));
            // Each one breaks a rule: the webhook, or the fold (an unknown profile).
            let unknown = r.contains_key("hygon.com/dcu.partitioned.mig-9g.99gb");
            assert!(unknown || validate(&r).is_err(), "{r:?}");
        }
        assert!(two > 0, "two instances in one container never drawn");
    }

    #[test]
    fn valid_partition_requests_name_an_offered_profile() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let pool = nvidia_pool(&["1g.5gb", "3g.20gb"]);
        let s = valid_request(
            Family::Partitioned,
            "nvidia",
            "nvidia.com/gpu",
            &pool.profiles,
        );
        for _ in 0..20 {
            let r = s.new_tree(&mut runner).unwrap().current();
            assert_eq!(r.len(), 2);
            assert!(
                r.keys().all(|k| family_of(k) == Family::Partitioned),
                "{r:?}"
            );
            assert!(
                r.contains_key("nvidia.com/gpu.partitioned.mig-1g.5gb")
                    || r.contains_key("nvidia.com/gpu.partitioned.mig-3g.20gb"),
                "{r:?}"
            );
        }
    }
}
