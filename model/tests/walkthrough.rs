//! End to end: the recorded walkthrough cluster (research/chain.md §15) derives exactly the
//! objects the operator produced, with aware off and aware on.

use model::derive::{derive, Derived};
use model::objects::{InstanceType, ResourceView, StopPolicy};
use model::{examples, Cluster};

fn it<'a>(d: &'a Derived, name: &str) -> &'a InstanceType {
    d.instance_types
        .iter()
        .find(|it| it.name == name)
        .unwrap_or_else(|| panic!("no InstanceType {name}"))
}

fn view(once: i64, remaining: i64, capacity: i64) -> ResourceView {
    ResourceView {
        once_max_request: once,
        remaining,
        capacity,
    }
}

const PROFILE: &str = "-fnv64-87bf574bea2a4f23";

#[test]
fn seven_flavors_three_pools_with_their_quota_and_entrances() {
    let d = derive(&examples::walkthrough());
    let flavors: Vec<&str> = d.resource_flavors.iter().map(|f| f.name.as_str()).collect();
    let expected: Vec<String> = examples::WALKTHROUGH_FLAVORS
        .iter()
        .map(|n| format!("{n}{PROFILE}"))
        .collect();
    assert_eq!(flavors, expected);

    let names: Vec<&str> = d.instance_types.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "gpustack--generic-linux-amd64",
            "gpustack--nvidia-a10g-linux-amd64",
            "gpustack--nvidia-tesla-t4-linux-amd64"
        ]
    );
    let entrances: Vec<&str> = d
        .instance_types
        .iter()
        .map(|i| i.status.entrance.as_str())
        .collect();
    assert_eq!(
        entrances,
        [
            "gpustack-fnv64-3b93966fd73eb9ec",
            "gpustack-fnv64-c4680bb149644f1c",
            "gpustack-fnv64-6b371caa2da0b799"
        ]
    );

    let quotas: Vec<Vec<i64>> = d
        .cluster_queues
        .iter()
        .map(|q| {
            assert!(q.cohort.is_empty(), "{} has a cohort", q.name);
            assert_eq!(q.stop_policy, StopPolicy::None, "{} held", q.name);
            assert_eq!(q.resource_groups.len(), 1);
            q.resource_groups[0]
                .flavors
                .iter()
                .map(|f| f.nominal_quota)
                .collect()
        })
        .collect();
    assert_eq!(
        quotas,
        [
            vec![4, 4, 16, 48],
            vec![1_600_000],
            vec![1_600_000, 6_400_000]
        ]
    );
    // One LocalQueue per queue in each of the two non-reserved namespaces.
    assert_eq!(d.local_queues.len(), 6);
    assert!(d
        .local_queues
        .iter()
        .all(|l| l.namespace == "default" || l.namespace == "team-a"));
}

#[test]
fn units_views_and_phase_match_the_recorded_run() {
    let d = derive(&examples::walkthrough());
    let generic = it(&d, "gpustack--generic-linux-amd64");
    assert_eq!(generic.spec.unit_resources.cpu, "1");
    assert_eq!(generic.spec.unit_resources.ram, "2Gi");
    assert_eq!(generic.status.cpu, view(48, 72, 72));

    let a10g = it(&d, "gpustack--nvidia-a10g-linux-amd64");
    assert_eq!(
        (
            a10g.spec.unit_resources.cpu.as_str(),
            a10g.spec.unit_resources.ram.as_str()
        ),
        ("8", "64Gi")
    );
    let v = &a10g.status.views;
    // `1/1 10/10 100/100 0/0`, SH once-max read as one card under the newest rule.
    assert_eq!(v.exclusive, view(1, 1, 1));
    assert_eq!(v.shared, view(1, 10, 10));
    assert_eq!(v.sliced, view(100, 100, 100));
    assert_eq!(v.partitioned.view, view(0, 0, 0));
    assert_eq!(a10g.status.detail.memory, "24Gi");

    let t4 = it(&d, "gpustack--nvidia-tesla-t4-linux-amd64");
    assert_eq!(t4.spec.unit_resources.ram, "32Gi");
    let v = &t4.status.views;
    assert_eq!(v.exclusive, view(4, 5, 5));
    assert_eq!(v.shared, view(4, 40 + 10, 50));
    assert_eq!(v.sliced, view(100, 500, 500));
    for it in &d.instance_types {
        assert_eq!(
            it.status.phase,
            model::objects::Phase::Active,
            "{}",
            it.name
        );
    }
}

#[test]
fn awareness_splits_pools_by_cpu_and_leaves_flavors_alone() {
    let mut cluster: Cluster = examples::walkthrough();
    let unaware = derive(&cluster);
    cluster.settings.aware_cpu_manufacturer = true;
    let aware = derive(&cluster);
    // Flavor identity is setting-independent; only the device flavors' cpuDetail note appears.
    let identity = |d: &Derived| -> Vec<_> {
        d.resource_flavors
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    f.labels.clone(),
                    f.node_labels.clone(),
                    f.capacity,
                )
            })
            .collect()
    };
    assert_eq!(identity(&aware), identity(&unaware));
    let names: Vec<&str> = aware
        .instance_types
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "gpustack--amd-epyc-7r13-linux-amd64",
            "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64",
            "gpustack--amd-epyc-7r32-linux-amd64",
            "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64",
            "gpustack--intel-xeon-platinum-8259cl-linux-amd64",
        ]
    );
    assert_eq!(
        it(&aware, "gpustack--amd-epyc-7r13-linux-amd64").status.cpu,
        view(16, 16, 16)
    );
    assert_eq!(
        it(&aware, "gpustack--amd-epyc-7r32-linux-amd64").status.cpu,
        view(4, 4, 4)
    );
    assert_eq!(
        it(&aware, "gpustack--intel-xeon-platinum-8259cl-linux-amd64")
            .status
            .cpu,
        view(48, 52, 52)
    );
    assert_eq!(
        it(&aware, "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64")
            .status
            .entrance,
        "gpustack-fnv64-029fd9550e0c70bd"
    );
}

#[test]
fn unmanaging_the_a10g_node_drops_its_flavor_and_shrinks_the_cpu_pool() {
    let mut cluster = examples::walkthrough();
    let node = cluster
        .nodes
        .iter_mut()
        .find(|n| n.name == "node-a10g")
        .expect("walkthrough has node-a10g");
    node.labels
        .insert(model::labels::MANAGED.into(), "false".into());
    let d = derive(&cluster);
    assert_eq!(
        d.resource_flavors.len(),
        5,
        "both of node-a10g's flavors are gone"
    );
    assert!(
        !d.nodes
            .iter()
            .find(|n| n.name == "node-a10g")
            .unwrap()
            .eligible
    );
    // Walkthrough: the CPU pool goes from 48/72 to 48/68.
    assert_eq!(
        it(&d, "gpustack--generic-linux-amd64").status.cpu,
        view(48, 68, 68)
    );
}
