//! `from_yaml(to_yaml(s)) == s`, for hand-built scenarios that use every event and expectation
//! kind, the model's example clusters, and generated strings and numbers.

use model::cluster::{Era, ExistingInstanceType, QueueStatusGate, Settings, SharedOnceMax};
use model::devices::{PartitionProfile, Placement, ProfileCount};
use model::events::Event;
use model::examples::{large_mixed, nfd_node, nvidia_group, walkthrough};
use model::mutants::Mutant;
use model::objects::{InstanceTypeSpec, UnitResources};
use model::workload::{Container, PodSet, Workload};
use model::{Capability, Cluster, Devices, Ledger, Mode, Namespace};
use proptest::prelude::*;
use scenario::{from_yaml, load, save, to_yaml, Expectation, Scenario};

fn round_trip(s: &Scenario) {
    let text = to_yaml(s);
    match from_yaml(&text, "round-trip.yaml") {
        Ok(back) => assert_eq!(&back, s, "text was:\n{text}"),
        Err(e) => panic!("{e}\ntext was:\n{text}"),
    }
    assert_eq!(to_yaml(s), text, "rendering is stable");
}

fn mig_capability() -> Capability {
    Capability {
        logical_sliced_count: 0,
        cores_percentage_overcommit: false,
        physical_sliced_count: 7,
        physical_profiles: vec![
            PartitionProfile {
                name: "1g.10gb".into(),
                count: 7,
                memory_mib: Some(9856),
                placements: (0..7).map(|start| Placement { start, length: 1 }).collect(),
            },
            PartitionProfile {
                name: "7g.80gb".into(),
                count: 1,
                memory_mib: None,
                placements: vec![],
            },
        ],
        unhealthy: true,
    }
}

fn workload() -> Workload {
    Workload {
        deployment: None,
        name: "infer".into(),
        namespace: "team-a".into(),
        queue: "gpustack-fnv64-c4680bb149644f1c".into(),
        pod_sets: vec![PodSet {
            name: "main".into(),
            count: 2,
            containers: vec![
                Container {
                    name: "init".into(),
                    requests: [("cpu".to_string(), "500m".to_string())].into(),
                    limits: Default::default(),
                    init: true,
                },
                Container {
                    name: "server".into(),
                    requests: [
                        ("nvidia.com/gpu.shared".to_string(), "3".to_string()),
                        ("memory".to_string(), "24Gi".to_string()),
                    ]
                    .into(),
                    limits: [("nvidia.com/gpu.shared".to_string(), "3".to_string())].into(),
                    init: false,
                },
            ],
            labels: model::labels::from_pairs(&[("kueue.x-k8s.io/queue-name", "q")]),
            flavor: Some("gpustack--nvidia-a10g-linux-amd64".into()),
            node: Some("gpu-0".into()),
        }],
    }
}

/// Every event kind and both expectation kinds, with non-default settings and an existing
/// InstanceType.
fn everything() -> Scenario {
    let mut node = nfd_node("gpu-0", "AMD", "AMD EPYC 7R32", 8);
    let mut group = nvidia_group("a100", "NVIDIA A100", 81920, 2);
    if let Some(card) = group.cards.get_mut(1) {
        card.capability = Some(mig_capability());
        card.ledger = Some(Ledger {
            mode: Mode::Partitioned,
            remaining_units: 0,
            remaining_profiles: vec![ProfileCount {
                name: "1g.10gb".into(),
                count: 5,
            }],
            allocated_profiles: vec![ProfileCount {
                name: "1g.10gb".into(),
                count: 2,
            }],
            allocated_slices: 0,
        });
    }
    node.devices = Some(Devices {
        groups: vec![group],
    });
    node.deleting = true;
    let mut joining = nfd_node("gpu-1", "Intel", "Xeon: 8259CL @ 2.50GHz", 4);
    joining.devices = Some(Devices {
        groups: vec![nvidia_group("tesla-t4", "Tesla T4", 16384, 1)],
    });
    Scenario {
        name: "everything".into(),
        description: "Every event and expectation kind.\nTwo lines, a colon: and a # hash.".into(),
        seed: Some(u64::MAX),
        mutant: Some("quota-off-by-one".into()),
        cluster: Cluster {
            nodes: vec![node],
            namespaces: vec![
                Namespace {
                    name: "default".into(),
                    terminating: false,
                },
                Namespace {
                    name: "old".into(),
                    terminating: true,
                },
            ],
            settings: Settings {
                aware_cpu_manufacturer: true,
                mixed_on_node: false,
                era: Era::E2,
                shared_once_max: SharedOnceMax::Shares,
                queue_status_gate: QueueStatusGate::Absent,
                node_devices_check_active: false,
                system_namespace: "ops".into(),
                mutant: Some(Mutant::QuotaOffByOne),
                ..Settings::default()
            },
            instance_types: vec![ExistingInstanceType {
                name: "a100-large".into(),
                spec: InstanceTypeSpec {
                    display_name: "A100 large".into(),
                    accelerator_group: "nvidia-a100".into(),
                    acceleratable: true,
                    os: "linux".into(),
                    arch: "amd64".into(),
                    unit_resources: UnitResources {
                        cpu: "4".into(),
                        ram: "16Gi".into(),
                    },
                    local_storage: "100Gi".into(),
                    ..InstanceTypeSpec::default()
                },
                derived_from_node: true,
            }],
            foreign_queues: vec![model::cluster::ForeignQueue {
                name: "batch".into(),
                terminating: true,
            }],
            topology_sources: vec![model::cluster::TopologySource {
                name: "zones".into(),
                levels: vec!["topology.kubernetes.io/zone".into()],
                node_selector: model::labels::from_pairs(&[("example.com/pool", "a")]),
                ready: true,
            }],
        },
        events: vec![
            Event::NodeJoin { node: joining },
            Event::NamespaceCreate {
                name: "team-a".into(),
            },
            Event::Submit {
                workload: workload(),
            },
            Event::CardFamily {
                node: "gpu-1".into(),
                card: "GPU-tesla-t4-0".into(),
                capability: mig_capability(),
            },
            Event::Finish {
                namespace: "team-a".into(),
                name: "infer".into(),
            },
            Event::AwarenessFlip,
            Event::MixingFlip,
            Event::NamespaceDelete { name: "old".into() },
            Event::NodeLeave {
                name: "gpu-0".into(),
            },
        ],
        expect: vec![
            Expectation::Outcome {
                event: 2,
                outcome: "admitted".into(),
            },
            Expectation::Violation {
                property: "quota-conserved".into(),
                message: "nominal 3 != capacity 4".into(),
            },
        ],
        published: None,
    }
}

/// A soak checkpoint carries the objects it resumes from; they survive the round trip.
#[test]
fn a_checkpoint_with_published_objects_round_trips() {
    let cluster = model::examples::walkthrough();
    let published = model::derive::derive(&cluster);
    let s = Scenario {
        name: "checkpoint".into(),
        cluster,
        published: Some(published),
        ..Scenario::default()
    };
    let back = scenario::from_yaml(&scenario::to_yaml(&s), "checkpoint.yaml").unwrap();
    assert_eq!(back, s);
    assert_eq!(back.start().observe(), s.start().observe());
}

#[test]
fn every_event_and_expectation_kind_round_trips() {
    let s = everything();
    round_trip(&s);
    let text = to_yaml(&s);
    for tag in [
        "event: node-join",
        "event: node-leave",
        "event: card-family",
        "event: submit",
        "event: finish",
        "event: namespace-create",
        "event: namespace-delete",
        "event: awareness-flip",
        "event: mixing-flip",
        "expect: outcome",
        "expect: violation",
    ] {
        assert!(text.contains(tag), "missing `{tag}` in\n{text}");
    }
}

#[test]
fn the_example_clusters_round_trip() {
    round_trip(&Scenario::default());
    round_trip(&Scenario {
        name: "walkthrough".into(),
        cluster: walkthrough(),
        ..Scenario::default()
    });
    round_trip(&Scenario {
        name: "large".into(),
        cluster: large_mixed(12, 4),
        ..Scenario::default()
    });
}

#[test]
fn rendering_keeps_declaration_order_and_sorted_labels() {
    let text = to_yaml(&everything());
    let pos = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("no {needle}"));
    assert!(pos("name: everything") < pos("description:"));
    assert!(pos("description:") < pos("seed:"));
    assert!(pos("seed:") < pos("mutant: quota-off-by-one"));
    assert!(pos("mutant: quota-off-by-one") < pos("cluster:"));
    assert!(pos("cluster:") < pos("\nevents:"));
    assert!(pos("\nevents:") < pos("\nexpect:"));
    assert!(pos("feature.node.kubernetes.io/cpu-model.vendor_id") < pos("kubernetes.io/arch"));
    assert!(text.starts_with("name: everything\n"), "{text}");
}

#[test]
fn save_then_load_is_the_same_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/s.yaml");
    let s = everything();
    save(&path, &s).unwrap();
    assert_eq!(load(&path).unwrap(), s);
    // Saving again replaces the file whole.
    let mut t = s.clone();
    t.events.clear();
    save(&path, &t).unwrap();
    assert_eq!(load(&path).unwrap(), t);
}

#[test]
fn the_minimal_example_loads() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/minimal.yaml");
    let s = load(&path).unwrap();
    assert_eq!(s.name, "minimal");
    assert_eq!(s.cluster.nodes.len(), 1);
    let cards: Vec<_> = s.cluster.nodes[0]
        .devices
        .iter()
        .flat_map(|d| &d.groups)
        .filter(|g| g.manufacturer == "nvidia")
        .flat_map(|g| &g.cards)
        .collect();
    assert_eq!(cards.len(), 2);
    // The second card spells its mode as a wire number.
    assert_eq!(cards[1].ledger.as_ref().map(|l| l.mode), Some(Mode::None));
    assert_eq!(s.events.len(), 2);
    assert!(matches!(s.events[0], Event::Submit { .. }));
    assert!(matches!(s.events[1], Event::Finish { .. }));
    assert_eq!(s.expect.len(), 1);
    round_trip(&s);
}

/// Strings YAML would read as something else unless quoted.
fn tricky() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("yes".to_string()),
        Just("no".to_string()),
        Just("null".to_string()),
        Just("~".to_string()),
        Just("None".to_string()),
        Just("0x1F".to_string()),
        Just("1e3".to_string()),
        Just("- item".to_string()),
        Just("key: value".to_string()),
        Just("# not a comment".to_string()),
        Just("  padded  ".to_string()),
        Just("multi\nline\n".to_string()),
        Just("'quoted' \"both\"".to_string()),
        Just("2024-01-01".to_string()),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn generated_values_round_trip(
        description in tricky(),
        label in tricky(),
        message in tricky(),
        seed in proptest::option::of(any::<u64>()),
        cpu in any::<u64>(),
        remaining in 0i64..=1_600_000,
        mode in 0usize..6,
        count in any::<u32>(),
    ) {
        let mut s = everything();
        s.description = description;
        s.seed = seed;
        if let Some(node) = s.cluster.nodes.get_mut(0) {
            node.cpu_millis = cpu;
            node.labels.insert("example.com/tricky".into(), label.as_str().into());
            node.annotations.insert(label.as_str().into(), label.into());
            if let Some(card) = node.devices.as_mut().and_then(|d| d.groups.get_mut(0)).and_then(|g| g.cards.get_mut(0)) {
                card.ledger = Some(Ledger {
                    mode: Mode::ALL[mode],
                    remaining_units: remaining,
                    ..Ledger::default()
                });
            }
        }
        s.expect.push(Expectation::Violation { property: "p".into(), message });
        if let Some(Event::Submit { workload }) = s.events.get_mut(2) {
            if let Some(ps) = workload.pod_sets.get_mut(0) {
                ps.count = count;
            }
        }
        let text = to_yaml(&s);
        let back = from_yaml(&text, "generated.yaml");
        prop_assert_eq!(back.as_ref().ok(), Some(&s), "text:\n{}\nerror: {:?}", text, back.as_ref().err().map(ToString::to_string));
    }
}

#[test]
fn the_minimal_example_does_what_its_comment_says() {
    use model::events::{Effect, World};
    use model::lifecycle::Outcome;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/minimal.yaml");
    let s = load(&path).unwrap();
    let mut world = World::new(s.cluster.clone());
    let effects: Vec<Effect> = s.events.iter().map(|e| world.apply(e)).collect();
    assert_eq!(
        effects,
        vec![
            Effect::Judged {
                outcome: Outcome::Admitted
            },
            Effect::Released
        ]
    );
}

#[test]
fn the_readme_example_is_the_example_file() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let block = readme
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a yaml block in README.md");
    let from_readme = from_yaml(block, "README.md").unwrap();
    assert_eq!(
        from_readme,
        load(&dir.join("examples/minimal.yaml")).unwrap()
    );
}

/// `mutant:` is written only when set, and a file written before the field existed (none) or
/// without it still parses, to `None`.
#[test]
fn the_mutant_is_written_only_when_set_and_old_files_still_parse() {
    let plain = Scenario {
        name: "plain".into(),
        seed: Some(3),
        ..Scenario::default()
    };
    let text = to_yaml(&plain);
    assert!(!text.contains("mutant"), "{text}");
    assert_eq!(
        scenario::from_yaml(&text, "plain.yaml").unwrap().mutant,
        None
    );
    let old = "name: seed-7-mutant-cohort-set\ndescription: 'diverges under mutant cohort-set: x'\nseed: 7\n";
    let back = scenario::from_yaml(old, "old.yaml").unwrap();
    assert_eq!(back.mutant, None);
    assert_eq!(back.seed, Some(7));
    let marked = Scenario {
        mutant: Some("cohort-set".into()),
        ..plain
    };
    let text = to_yaml(&marked);
    assert!(text.contains("\nmutant: cohort-set\n"), "{text}");
    assert_eq!(scenario::from_yaml(&text, "marked.yaml").unwrap(), marked);
}
