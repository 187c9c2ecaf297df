//! The model's recording derivation is the derivation (issue [M11] item 4): on generated
//! clusters, `derive_explained` publishes exactly what `derive` does, and every queue and
//! InstanceType it publishes has a chain to explain it.

use generators::{arb_cluster, ShapeConfig};
use model::derive::{derive, derive_explained};
use model::provenance::Kind;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

#[test]
fn the_explained_derivation_is_the_derivation_on_generated_clusters() {
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 96,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    runner
        .run(&arb_cluster(&ShapeConfig::default()), |c| {
            let (explained, provenance) = derive_explained(&c);
            prop_assert_eq!(&explained, &derive(&c));
            for q in &explained.cluster_queues {
                prop_assert!(!provenance
                    .explain(Kind::ClusterQueue, &q.name, "spec.resourceGroups")
                    .is_empty());
            }
            for it in &explained.instance_types {
                prop_assert!(!provenance
                    .explain(Kind::InstanceType, &it.name, "status.accelerator.capacity")
                    .is_empty());
            }
            Ok(())
        })
        .unwrap();
}
