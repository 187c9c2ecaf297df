//! Folding divergences along the derivation graph: one wrong ResourceFlavor is one finding
//! with its pool's objects beneath it; independent roots stay apart.

use model::derive::{derive, Derived};
use model::examples::{self, WALKTHROUGH_FLAVORS};
use oracle::{diff, fold, render_findings, DerivationGraph, ObjectKind};

/// The A10G and the one-card T4 flavors feed different pools.
const A10G: &str = WALKTHROUGH_FLAVORS[1];
const T4: &str = WALKTHROUGH_FLAVORS[3];

/// The full name of the walkthrough flavor named `prefix` (names end in a settings hash).
fn flavor(d: &Derived, prefix: &str) -> String {
    d.resource_flavors
        .iter()
        .map(|f| f.name.to_string())
        .find(|n| n.starts_with(prefix))
        .unwrap_or_else(|| panic!("no flavor named {prefix}…"))
}

/// The name of the pool whose ClusterQueue lists `flavor`.
fn pool_of(d: &Derived, flavor: &str) -> String {
    d.cluster_queues
        .iter()
        .find(|q| {
            q.resource_groups
                .iter()
                .any(|g| g.flavors.iter().any(|f| f.flavor == flavor))
        })
        .map(|q| q.name.to_string())
        .unwrap_or_else(|| panic!("no queue lists {flavor}"))
}

/// `observed` with `flavor` and every object of its pool changed.
fn break_flavor_and_pool(observed: &mut Derived, flavor: &str) {
    let pool = pool_of(observed, flavor);
    let rf = observed
        .resource_flavors
        .iter_mut()
        .find(|f| f.name == flavor)
        .expect("the flavor exists");
    rf.node_labels.insert("verify/edited".into(), "yes".into());
    for it in observed
        .instance_types
        .iter_mut()
        .filter(|i| i.name == pool)
    {
        it.status.views.exclusive.capacity += 7;
    }
    for cq in observed
        .cluster_queues
        .iter_mut()
        .filter(|q| q.name == pool)
    {
        cq.cohort = "edited".into();
    }
    for lq in observed
        .local_queues
        .iter_mut()
        .filter(|q| q.cluster_queue == pool)
    {
        lq.annotations.insert("verify/edited".into(), "yes".into());
    }
}

#[test]
fn a_changed_flavor_is_one_finding_with_its_pool_beneath() {
    let expected = derive(&examples::walkthrough());
    let a10g = flavor(&expected, A10G);
    let mut observed = expected.clone();
    break_flavor_and_pool(&mut observed, &a10g);
    let differences = diff(&expected, &observed);
    let lqs = expected
        .local_queues
        .iter()
        .filter(|q| q.cluster_queue == pool_of(&expected, &a10g))
        .count();
    assert!(lqs > 0, "the walkthrough has LocalQueues for the A10G pool");

    let findings = fold(&differences, &DerivationGraph::from_derived(&expected));
    assert_eq!(findings.len(), 1, "{}", render_findings(&findings));
    let f = &findings[0];
    assert_eq!(f.root.object.kind, ObjectKind::ResourceFlavor);
    assert_eq!(f.root.object.name, a10g);
    let kinds: Vec<ObjectKind> = f.consequences.iter().map(|c| c.object.kind).collect();
    assert_eq!(kinds.len(), 2 + lqs, "{kinds:?}");
    assert!(kinds.contains(&ObjectKind::InstanceType));
    assert!(kinds.contains(&ObjectKind::ClusterQueue));
    assert!(kinds.contains(&ObjectKind::LocalQueue));
    assert_eq!(f.differences().count(), differences.len());

    let text = render_findings(&findings);
    assert!(
        text.starts_with(&format!("finding 1: ResourceFlavor {a10g}")),
        "{text}"
    );
    assert!(text.contains("  └ InstanceType "), "{text}");
}

#[test]
fn two_independent_roots_stay_two_findings() {
    let expected = derive(&examples::walkthrough());
    let (a10g, t4) = (flavor(&expected, A10G), flavor(&expected, T4));
    assert_ne!(pool_of(&expected, &a10g), pool_of(&expected, &t4));
    let mut observed = expected.clone();
    break_flavor_and_pool(&mut observed, &a10g);
    break_flavor_and_pool(&mut observed, &t4);
    let differences = diff(&expected, &observed);
    let findings = fold(&differences, &DerivationGraph::from_derived(&expected));
    let roots: Vec<&str> = findings
        .iter()
        .map(|f| f.root.object.name.as_str())
        .collect();
    assert_eq!(
        roots,
        [a10g.as_str(), t4.as_str()],
        "{}",
        render_findings(&findings)
    );
    let folded: usize = findings.iter().map(|f| f.differences().count()).sum();
    assert_eq!(folded, differences.len());
}

#[test]
fn a_divergent_node_leads_its_flavor() {
    let expected = derive(&examples::walkthrough());
    let graph = DerivationGraph::from_derived(&expected);
    let a10g = flavor(&expected, A10G);
    let rf = expected
        .resource_flavors
        .iter()
        .find(|f| f.name == a10g)
        .expect("the A10G flavor");
    let node = rf.nodes[0].clone();
    let mut observed = expected.clone();
    for n in observed.nodes.iter_mut().filter(|n| n.name == node) {
        n.labels.insert("verify/edited".into(), "yes".into());
    }
    break_flavor_and_pool(&mut observed, &a10g);
    let findings = fold(&diff(&expected, &observed), &graph);
    assert_eq!(findings.len(), 1, "{}", render_findings(&findings));
    assert_eq!(findings[0].root.object.kind, ObjectKind::NodeLabels);
    assert_eq!(findings[0].root.object.name, node);
    assert_eq!(findings[0].consequences[0].object.name, a10g);
}

#[test]
fn nothing_to_fold_renders_as_no_divergences() {
    let expected = derive(&examples::walkthrough());
    let findings = fold(&[], &DerivationGraph::from_derived(&expected));
    assert!(findings.is_empty());
    assert_eq!(render_findings(&findings), "no divergences\n");
}
