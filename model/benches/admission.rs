//! Gate-3 admission decisions for 1,000 queued Workloads against a 1,000-node pool (8 cards
//! per node, logically sliceable, some partitioned), mixed families.
//! Run: `cargo bench -p model --bench admission`.

use criterion::{criterion_group, criterion_main, Criterion};

use model::admission::candidates::{FlavorScope, ScopedDevices};
use model::admission::demands::FamilyDemand;
use model::admission::feasibility::judge_queue;
use model::devices::{Capability, Card, DeviceGroup, Devices};
use model::ledger::{catalogs, seed};
use model::resources::Family;

const FLAVOR: &str = "gpustack--generic--nvidia-a100-sxm4-40gb-linux-amd64-8d";

fn pool(nodes: usize) -> Vec<ScopedDevices> {
    (0..nodes)
        .map(|n| {
            let cards = (0..8)
                .map(|i| {
                    let cap = if (n + i) % 4 == 3 {
                        catalogs::a100_40gb()
                    } else {
                        Capability {
                            logical_sliced_count: 16,
                            ..Capability::default()
                        }
                    };
                    Card {
                        id: format!("GPU-{n}-{i}"),
                        index: i as u32,
                        ledger: Some(seed(cap.clone()).row),
                        capability: Some(cap),
                    }
                })
                .collect();
            ScopedDevices {
                name: format!("node-{n:04}"),
                hostname: format!("node-{n:04}"),
                devices: Devices {
                    groups: vec![DeviceGroup {
                        manufacturer: "nvidia".into(),
                        id: "a100-sxm4-40gb".into(),
                        cards,
                        ..DeviceGroup::default()
                    }],
                },
                scopes: vec![FlavorScope {
                    flavor: FLAVOR.into(),
                    accelerator_key: "nvidia-a100-sxm4-40gb".into(),
                    accelerator_count: 8,
                }],
            }
        })
        .collect()
}

fn queue(n: usize) -> Vec<Vec<FamilyDemand>> {
    (0..n)
        .map(|i| {
            let d = match i % 4 {
                0 => FamilyDemand {
                    family: Family::Exclusive,
                    cards: 1 + (i % 3) as i64,
                    ..FamilyDemand::default()
                },
                1 => FamilyDemand {
                    family: Family::Shared,
                    cards: 2,
                    ..FamilyDemand::default()
                },
                2 => FamilyDemand {
                    family: Family::Sliced,
                    cards: 1,
                    units_per_card: 400_000,
                    ..FamilyDemand::default()
                },
                _ => FamilyDemand {
                    family: Family::Partitioned,
                    cards: 1,
                    units_per_card: 200_000,
                    profile: "1g.5gb".into(),
                    ..FamilyDemand::default()
                },
            };
            vec![FamilyDemand {
                flavor: FLAVOR.into(),
                pod_sets: vec![format!("w{i}")],
                ..d
            }]
        })
        .collect()
}

fn admission(c: &mut Criterion) {
    let pool = pool(1000);
    let queue = queue(1000);
    c.bench_function("gate 3: 1000 workloads x 1000-node pool", |b| {
        b.iter(|| judge_queue(std::hint::black_box(&pool), std::hint::black_box(&queue)))
    });
}

criterion_group!(benches, admission);
criterion_main!(benches);
