//! The model's provenance (issue [M11] item 4): the decisions `derive_explained` records, and
//! the chain `Provenance::explain` gives for one field.

use std::path::Path;

use model::derive::{derive, derive_explained};
use model::provenance::{Decision, Kind};
use model::scenario::Scenario;

/// The known collision's minimal scenario, as committed (`.verify/known/`).
fn known_collision() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.verify/known/18137-accounting.yaml");
    let text = std::fs::read_to_string(&path).expect("the ledger's scenario is committed");
    serde_norway::from_str(&text).expect("a scenario file")
}

fn lines(chain: &[&Decision]) -> String {
    chain
        .iter()
        .enumerate()
        .map(|(i, d)| format!("{}. [{}] {} ({})\n", i + 1, d.function, d.decided, d.source))
        .collect()
}

#[test]
fn the_collisions_capacity_chain_names_the_general_label_and_the_refused_queue() {
    let s = known_collision();
    let (derived, provenance) = derive_explained(&s.cluster);
    let it = derived
        .instance_types
        .iter()
        .find(|it| it.status.views.exclusive.capacity > 0 && it.spec.acceleratable)
        .expect("the pool whose views count cards");
    let chain = provenance.explain(Kind::InstanceType, &it.name, "status.accelerator.capacity");
    let text = lines(&chain);
    // the rule behind the collision: the VendorUnknown node's bare general label
    let general = chain
        .iter()
        .find(|d| {
            d.object.kind == Kind::Node
                && d.function == "model::nodefeature::worker_node_labels_with_key"
                && d.decided
                    .contains("general.feature.gpustack.ai/generic=true")
        })
        .unwrap_or_else(|| panic!("no general-label decision in\n{text}"));
    assert!(
        general.source.contains("ConstructNodeCapacityLabels"),
        "{text}"
    );
    // the queue's flavor selection and its refused plan, which make the expected value 0
    assert!(
        chain.iter().any(|d| d.object.kind == Kind::ClusterQueue
            && d.function == "model::pool::pool_flavor_selector"),
        "{text}"
    );
    assert!(
        chain.iter().any(|d| d.object.kind == Kind::ClusterQueue
            && d.function == "model::queue::settle_pool_queue"
            && d.decided.contains("OverlappingSelectors")),
        "{text}"
    );
    // upstream first: every Node decision before every queue decision, the view's own last
    let rank = |k: Kind| chain.iter().position(|d| d.object.kind == k);
    assert!(rank(Kind::Node) < rank(Kind::ClusterQueue), "{text}");
    assert_eq!(
        chain.last().map(|d| d.object.kind),
        Some(Kind::InstanceType)
    );
    assert!(
        chain
            .iter()
            .all(|d| !d.function.is_empty() && !d.source.is_empty()),
        "{text}"
    );
}

#[test]
fn a_one_node_chain_names_its_pool_and_flavor() {
    let mut cluster = model::examples::walkthrough();
    cluster.nodes.truncate(1);
    let (derived, provenance) = derive_explained(&cluster);
    let q = derived
        .cluster_queues
        .iter()
        .find(|q| !q.resource_groups.is_empty())
        .expect("a queue with a plan");
    let field = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota";
    let chain = provenance.explain(Kind::ClusterQueue, &q.name, field);
    let text = lines(&chain);
    let flavor = &q.resource_groups[0].flavors[0].flavor;
    let node = &cluster.nodes[0].name;
    assert!(
        chain.iter().any(|d| d.object.kind == Kind::ResourceFlavor
            && &d.object.name == flavor
            && d.decided.contains(node.as_str())),
        "{text}"
    );
    assert!(
        chain
            .iter()
            .any(|d| d.object.kind == Kind::Node && &d.object.name == node),
        "{text}"
    );
    assert!(
        chain
            .iter()
            .any(|d| d.object.kind == Kind::ClusterQueue && d.decided.contains(flavor.as_str())),
        "{text}"
    );
    // the queue's own decisions about other fields stay out
    assert!(
        chain.iter().all(|d| d.field != "spec.admissionChecks"),
        "{text}"
    );
    // each LocalQueue is derived from its queue
    let lq = derived
        .local_queues
        .iter()
        .find(|l| l.cluster_queue == q.name)
        .expect("a LocalQueue");
    let chain = provenance.explain(
        Kind::LocalQueue,
        &format!("{}/{}", lq.namespace, lq.name),
        "spec.clusterQueue",
    );
    assert!(chain.iter().any(|d| d.object.kind == Kind::ClusterQueue));
}

#[test]
fn the_explained_derivation_is_the_derivation() {
    let mut shapes = vec![
        model::examples::walkthrough(),
        model::examples::large_mixed(12, 4),
        known_collision().cluster,
    ];
    let mut aware = model::examples::walkthrough();
    aware.settings.aware_cpu_manufacturer = !aware.settings.aware_cpu_manufacturer;
    shapes.push(aware);
    for c in &shapes {
        assert_eq!(derive_explained(c).0, derive(c));
    }
}
