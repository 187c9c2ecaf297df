//! The chain's dynamics on the walkthrough cluster (chain.md §12, §15): create-only
//! InstanceTypes survive an awareness flip and an emptied pool; a drained queue stays held.

use model::events::{Effect, Event, World};
use model::examples;
use model::labels::MANAGED;
use model::mutants::Mutant;
use model::objects::StopPolicy;

#[test]
fn awareness_flip_authors_new_types_beside_the_old_ones() {
    let mut w = World::new(examples::walkthrough());
    assert_eq!(w.observe().instance_types.len(), 3);
    assert_eq!(w.apply(&Event::AwarenessFlip), Effect::Reshaped);
    // Walkthrough: 3 ITs → 8 ITs; the ResourceFlavors are untouched (7).
    let d = w.observe();
    assert_eq!(d.instance_types.len(), 8);
    assert_eq!(d.cluster_queues.len(), 8);
    assert_eq!(d.resource_flavors.len(), 7);
}

#[test]
fn a_mixing_flip_event_pins_cpu_flavors_and_flips_back() {
    // `instance-type-mixed-on-node` off: the accelerated nodes leave the CPU flavors, which
    // are recreated pinned to CPU-only nodes; on again: the flavors of the start (chain.md
    // §6.3, §12). Nothing is admitted, so nothing drains.
    let mut w = World::new(examples::walkthrough());
    let before = w.observe();
    assert_eq!(w.apply(&Event::MixingFlip), Effect::Reshaped);
    assert!(!w.cluster().settings.mixed_on_node);
    let off = w.observe();
    assert!(off.resource_flavors.len() < before.resource_flavors.len());
    assert!(off
        .resource_flavors
        .iter()
        .filter(|rf| !rf.flavor.acceleratable)
        .all(|rf| rf
            .node_labels
            .get(model::labels::CPU_ONLY)
            .map(model::labels::Text::as_str)
            == Some("true")));
    assert_eq!(w.apply(&Event::MixingFlip), Effect::Reshaped);
    assert!(w.cluster().settings.mixed_on_node);
    assert_eq!(w.observe().resource_flavors, before.resource_flavors);
}

#[test]
fn unmanaging_the_only_a10g_node_keeps_its_type_with_an_empty_held_queue() {
    let mut w = World::new(examples::walkthrough());
    let mut node = w
        .cluster()
        .nodes
        .iter()
        .find(|n| n.name == "node-a10g")
        .unwrap()
        .clone();
    node.labels.insert(MANAGED.into(), "false".into());
    assert_eq!(w.apply(&Event::NodeJoin { node }), Effect::Reshaped);
    let d = w.observe();
    let it = d
        .instance_types
        .iter()
        .find(|i| i.name == "gpustack--nvidia-a10g-linux-amd64")
        .expect("derived types are never removed for lack of flavors");
    // Walkthrough: the A10G type reads 0/0 0/0 0/0 0/0.
    assert_eq!(it.status.views.exclusive.capacity, 0);
    let q = d.cluster_queues.iter().find(|q| q.name == it.name).unwrap();
    assert!(q.resource_groups.is_empty());
    assert_ne!(
        q.stop_policy,
        StopPolicy::None,
        "an emptied queue never admits"
    );
}

#[test]
fn a_namespace_created_later_gets_every_queue_unless_the_mutant_drops_it() {
    let mut w = World::new(examples::walkthrough());
    w.apply(&Event::NamespaceCreate {
        name: "late".into(),
    });
    let late = |w: &World| {
        w.observe()
            .local_queues
            .iter()
            .filter(|l| l.namespace == "late")
            .count()
    };
    assert_eq!(late(&w), 3);
    let mut cluster = examples::walkthrough();
    cluster.settings.mutant = Some(Mutant::LateNamespaceNoLocalQueue);
    let mut m = World::new(cluster);
    m.apply(&Event::NamespaceCreate {
        name: "late".into(),
    });
    assert_eq!(late(&m), 0);
}

#[test]
fn events_on_missing_things_are_ignored_and_say_why() {
    let mut w = World::new(examples::walkthrough());
    assert!(matches!(
        w.apply(&Event::NodeLeave {
            name: "ghost".into()
        }),
        Effect::Ignored { .. }
    ));
    assert!(matches!(
        w.apply(&Event::Finish {
            namespace: "default".into(),
            name: "none".into()
        }),
        Effect::Ignored { .. }
    ));
}
