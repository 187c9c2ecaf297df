//! The decisions `derive::derive_recorded` records at each of its steps (see
//! [`crate::provenance`]): called by the derivation right where a rule has decided, with that
//! rule's inputs and result. Each function returns at once for a recorder that is off, so the
//! plain derivation builds no text. The operator sources named are the ones the deciding model
//! functions' doc comments cite.

use crate::cluster::{Cluster, Node, SharedOnceMax};
use crate::derive::DerivedNode;
use crate::devices::Devices;
use crate::labels::{self, Labels, Text, GENERAL_PREFIX, MANAGED, TOPOLOGY_PROFILE};
use crate::mutants::Mutant;
use crate::objects::{ClusterQueue, InstanceTypeSpec, LocalQueue, ResourceFlavor};
use crate::objects::{InstanceTypeStatus, ResourceView};
use crate::provenance::{Decision, Kind, Object, Record};
use crate::queue::Settled;
use crate::views::{self, CardFamily};
use crate::{nodefeature, pool};

fn label_field(key: &str) -> String {
    format!("metadata.labels[\"{key}\"]")
}

/// `{k=v, …}`.
fn show_labels(labels: &Labels) -> String {
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", pairs.join(", "))
}

fn show_list(items: &[&str]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

fn decision(
    kind: Kind,
    name: &str,
    field: impl Into<String>,
    function: &'static str,
    source: &'static str,
    decided: String,
) -> Decision {
    Decision {
        object: Object::new(kind, name),
        field: field.into(),
        function,
        source,
        decided,
    }
}

/// Rules 1–8 and 18 of one node: its CPU key and general-feature labels (the labels every CPU
/// and device flavor of the node carries), its accelerator keys, whether it contributes
/// flavors, and its Devices labels.
pub(crate) fn node<R: Record>(rec: &mut R, node: &Node, g_key: &str, d: &DerivedNode) {
    if !R::ON {
        return;
    }
    let n = node.name.as_str();
    let inputs = nodefeature::GeneralKeyInputs::of(&node.labels, &node.annotations);
    let bare = if g_key.contains('-') {
        String::new()
    } else {
        format!(" (the bare manufacturer `{g_key}`: no cpu-name and no family/id to add)")
    };
    rec.decide(|| {
        decision(
            Kind::Node,
            n,
            label_field(&labels::general_feature_key(g_key)),
            "model::nodefeature::general_key_of",
            "pkg/nodefeature/helper.go ExtractGeneralNodeKey",
            format!(
                "node {n}: CPU vendor {}, cpu-name {}, family/id {}/{} give the CPU key `{g_key}`{bare}",
                inputs.vendor.unwrap_or("(unset)"),
                inputs.name.unwrap_or("(unset)"),
                inputs.family.unwrap_or("-"),
                inputs.id.unwrap_or("-"),
            ),
        )
    });
    let general: Vec<&str> = d
        .labels
        .iter()
        .filter(|(k, v)| k.starts_with(GENERAL_PREFIX) && !k.ends_with(".count") && *v == "true")
        .map(|(k, _)| k.as_str())
        .collect();
    rec.decide(|| {
        let manufacturer = g_key.split('-').next().unwrap_or(g_key);
        let manufacturer_label = labels::general_feature_key(manufacturer);
        let decided = if bare.is_empty() {
            format!(
                "node {n} carries {}=true: {manufacturer_label}=true for its CPU manufacturer `{manufacturer}` besides its CPU key's label, so any flavor whose nodeLabels pin {manufacturer_label}=true selects it too",
                general.join("=true, ")
            )
        } else {
            format!(
                "node {n} carries {}=true only: its CPU key is the bare manufacturer, so its manufacturer's label is its key's label",
                general.join("=true, ")
            )
        };
        decision(
            Kind::Node,
            n,
            label_field(&format!("{GENERAL_PREFIX}…")),
            "model::nodefeature::worker_node_labels_with_key",
            "pkg/nodefeature ConstructNodeCapacityLabels",
            decided,
        )
    });
    let a_keys = nodefeature::accelerator_keys(&d.labels);
    rec.decide(|| {
        decision(
            Kind::Node,
            n,
            label_field(labels::ACCELERATABLE_PREFIX),
            "model::nodefeature::accelerator_keys",
            "pkg/nodefeature/helper.go ExtractAcceleratableNodeKeys",
            match a_keys.as_slice() {
                [] => format!("node {n} carries no accelerator key: its flavors are CPU flavors"),
                keys => format!(
                    "node {n} carries the accelerator key(s) {}",
                    keys.join(", ")
                ),
            },
        )
    });
    let flavors: Vec<&str> = d.flavors.iter().map(|f| f.name.as_str()).collect();
    rec.decide(|| {
        let managed = d.labels.get(MANAGED).map_or("(unset)", Text::as_str);
        let profile = d.labels.get(TOPOLOGY_PROFILE).map_or("(none)", Text::as_str);
        decision(
            Kind::Node,
            n,
            label_field(MANAGED),
            "model::nodefeature::node_is_eligible",
            "pkg/worker/controllers/worker/node_flavor.go (node eligibility, flavors of a node)",
            if d.eligible {
                format!(
                    "node {n} is eligible (managed={managed}, profile {profile}) and contributes the flavor(s) {}",
                    show_list(&flavors)
                )
            } else {
                format!("node {n} is not eligible (managed={managed}, profile {profile}): it contributes no flavor")
            },
        )
    });
    if let Some(dl) = &d.devices_labels {
        rec.decide(|| {
            decision(
                Kind::Node,
                n,
                "devices.metadata.labels",
                "model::pool::devices_labels",
                "NodeDevicesReconciler (research chain.md §4)",
                format!("node {n}'s Devices object carries {}", show_labels(dl)),
            )
        });
    }
}

/// Rule 9: each ResourceFlavor's contributors, capacity and the labels pools select it by.
pub(crate) fn flavors<R: Record>(rec: &mut R, flavors: &[ResourceFlavor]) {
    if !R::ON {
        return;
    }
    for rf in flavors {
        rec.decide(|| {
            let nodes: Vec<&str> = rf.nodes.iter().map(Text::as_str).collect();
            decision(
                Kind::ResourceFlavor,
                &rf.name,
                "spec.nodeLabels",
                "model::flavor::resource_flavors",
                "pkg/worker/controllers/worker/node_flavor.go (one ResourceFlavor per flavor name)",
                format!(
                    "flavor {} is contributed by node(s) {}: capacity {} = {} node(s) × {}; its nodeLabels {} select the nodes carrying them",
                    rf.name,
                    show_list(&nodes),
                    rf.capacity,
                    nodes.len(),
                    rf.flavor.count,
                    show_labels(&rf.node_labels)
                ),
            )
        });
        for n in &rf.nodes {
            rec.derived_from(
                || Object::new(Kind::ResourceFlavor, rf.name.as_str()),
                || Object::new(Kind::Node, n.as_str()),
            );
        }
    }
}

/// Rule 14: the flavors a pool's queue selects, by its labels' flavor selector.
pub(crate) fn pool_flavors<R: Record>(
    rec: &mut R,
    (q, queue_labels): (&str, &Labels),
    selected: &[&ResourceFlavor],
    live: usize,
) {
    if !R::ON {
        return;
    }
    rec.derived_from(
        || Object::new(Kind::InstanceType, q),
        || Object::new(Kind::ClusterQueue, q),
    );
    let names: Vec<&str> = selected.iter().map(|rf| rf.name.as_str()).collect();
    rec.decide(|| {
        let decided = match pool::pool_flavor_selector(queue_labels) {
            Some(selector) => format!(
                "queue {q}'s flavor selector {} picks {} of {live} flavor(s): {}",
                show_labels(&selector),
                names.len(),
                show_list(&names)
            ),
            None => format!("queue {q}'s labels give no flavor selector: it selects no flavor"),
        };
        decision(
            Kind::ClusterQueue,
            q,
            "spec.resourceGroups",
            "model::pool::pool_flavor_selector",
            "pkg/nodefeature/helper.go PoolFlavorSelector",
            decided,
        )
    });
    for rf in selected {
        rec.derived_from(
            || Object::new(Kind::ClusterQueue, q),
            || Object::new(Kind::ResourceFlavor, rf.name.as_str()),
        );
    }
}

/// Rule 18: whose Devices a pool's views read.
pub(crate) fn pool_devices<R: Record>(
    rec: &mut R,
    (q, queue_labels): (&str, &Labels),
    nodes: &[&str],
    acceleratable: bool,
) {
    if !R::ON {
        return;
    }
    if !acceleratable {
        return;
    }
    rec.decide(|| {
        let decided = match pool::pool_devices_selector(queue_labels) {
            Some(selector) => format!(
                "InstanceType {q}'s devices selector {} matches the Devices of node(s) {}",
                show_labels(&selector),
                show_list(nodes)
            ),
            None => format!("InstanceType {q} has no devices selector: it reads no Devices"),
        };
        decision(
            Kind::InstanceType,
            q,
            "status",
            "model::pool::pool_devices_selector",
            "pkg/worker/controllers/worker/instance_type.go poolDevicesSelector",
            decided,
        )
    });
    for n in nodes {
        rec.derived_from(
            || Object::new(Kind::InstanceType, q),
            || Object::new(Kind::Node, *n),
        );
    }
}

/// Rules 13–16: the settled queue's plan (flavors and nominal quota), admission checks and
/// stop policy, with the validation's verdict when it refused the plan.
pub(crate) fn settled_queue<R: Record>(rec: &mut R, settled: &Settled) {
    if !R::ON {
        return;
    }
    let q = &settled.queue;
    const SETTLE: &str = "model::queue::settle_pool_queue";
    const NODE_QUEUE: &str =
        "pkg/worker/controllers/worker/node_queue.go Reconcile (validateTASFlavors, the plan)";
    let verdict = settled
        .topology_ready
        .as_ref()
        .filter(|t| !t.reason.is_empty())
        .map(|t| {
            if t.message.is_empty() {
                format!("TopologyReady {}", t.reason)
            } else {
                format!("TopologyReady {}: {}", t.reason, t.message)
            }
        });
    rec.decide(|| {
        let flavors: Vec<String> = q
            .resource_groups
            .iter()
            .flat_map(|g| {
                g.flavors.iter().map(move |f| {
                    format!(
                        "{} nominalQuota {} of {}",
                        f.flavor,
                        f.nominal_quota,
                        g.covered_resources.join("+")
                    )
                })
            })
            .collect();
        let plan = if flavors.is_empty() {
            "an empty plan (no resource group)".to_string()
        } else {
            flavors.join("; ")
        };
        let why = verdict
            .as_ref()
            .map(|v| format!(" — {v}"))
            .unwrap_or_default();
        decision(
            Kind::ClusterQueue,
            &q.name,
            "spec.resourceGroups",
            SETTLE,
            NODE_QUEUE,
            format!("queue {} settles on {plan}{why}", q.name),
        )
    });
    rec.decide(|| {
        decision(
            Kind::ClusterQueue,
            &q.name,
            "spec.stopPolicy",
            SETTLE,
            NODE_QUEUE,
            format!(
                "queue {} stopPolicy {} (Active {})",
                q.name,
                q.stop_policy.name(),
                settled.active
            ),
        )
    });
    rec.decide(|| {
        let checks: Vec<&str> = q.admission_checks.iter().map(Text::as_str).collect();
        decision(
            Kind::ClusterQueue,
            &q.name,
            "spec.admissionChecks",
            SETTLE,
            NODE_QUEUE,
            format!("queue {} admissionChecks {}", q.name, show_list(&checks)),
        )
    });
}

/// A mutant's change of the settled queue (not an operator rule: the seam a mutant breaks).
pub(crate) fn mutated_queue<R: Record>(rec: &mut R, q: &ClusterQueue, mutant: Option<Mutant>) {
    if !R::ON {
        return;
    }
    let field = match mutant {
        Some(Mutant::QuotaOffByOne) => "spec.resourceGroups",
        Some(Mutant::CohortSet) => "spec.cohort",
        _ => return,
    };
    let Some(m) = mutant else { return };
    rec.decide(|| {
        decision(
            Kind::ClusterQueue,
            &q.name,
            field,
            "model::derive::mutate_queue",
            "(mutant: a deliberate break, no operator rule)",
            format!("mutant {m} changes queue {}: {}", q.name, m.describe()),
        )
    });
}

fn family_name(f: CardFamily) -> &'static str {
    match f {
        CardFamily::Partitioned => "partitioned: PT only",
        CardFamily::LogicallySliceable => "logically sliceable: EX/SH/SL",
        CardFamily::WholeOnly => "whole-only: EX/SH",
    }
}

fn show_view(v: ResourceView) -> String {
    format!(
        "capacity {}, remaining {}, onceMax {}",
        v.capacity, v.remaining, v.once_max_request
    )
}

/// Rules 19–23: which cards the views count and why (family, ledger row, draining), and the
/// views that came out.
pub(crate) fn views<R: Record>(
    rec: &mut R,
    name: &str,
    spec: &InstanceTypeSpec,
    queue: &ClusterQueue,
    devices: &[(&str, &Devices)],
    rule: SharedOnceMax,
    status: &InstanceTypeStatus,
) {
    if !R::ON {
        return;
    }
    const SOURCE: &str = "pkg/worker/controllers/worker/instance_type.go getAcceleratorResources";
    if !spec.acceleratable {
        rec.decide(|| {
            decision(
                Kind::InstanceType,
                name,
                "status.cpu",
                "model::views::pool_cpu_view",
                "pkg/worker/controllers/worker/instance_type.go getCPUResource",
                format!(
                    "CPU pool {name}: cpu view {} from its queue's cpu quota",
                    show_view(status.cpu)
                ),
            )
        });
        return;
    }
    if views::views_zeroed_by(queue.stop_policy) {
        rec.decide(|| {
            decision(
                Kind::InstanceType,
                name,
                "status",
                "model::views::pool_views",
                SOURCE,
                format!(
                    "queue {} holds and drains (stopPolicy {}): every view is zero",
                    queue.name,
                    queue.stop_policy.name()
                ),
            )
        });
        return;
    }
    let group = spec.accelerator_group.as_str();
    for &(n, d) in devices {
        rec.decide(|| {
            let cards: Vec<String> = d
                .groups_of(group)
                .flat_map(|g| &g.cards)
                .map(|c| {
                    let family = views::card_family(c.capability_or_default());
                    match &c.ledger {
                        Some(_) => format!("{} ({})", c.id, family_name(family)),
                        None => format!("{} (no ledger row: not counted)", c.id),
                    }
                })
                .collect();
            let tally = views::node_tally(d, group, rule);
            decision(
                Kind::InstanceType,
                name,
                "status",
                "model::views::node_tally",
                SOURCE,
                format!(
                    "node {n}: {} card(s) of {group} counted as whole cards ({} free): {}",
                    tally.cards,
                    tally.free_cards,
                    if cards.is_empty() {
                        "none".to_string()
                    } else {
                        cards.join(", ")
                    }
                ),
            )
        });
    }
    rec.decide(|| {
        let v = &status.views;
        decision(
            Kind::InstanceType,
            name,
            "status.accelerator",
            "model::views::four_views",
            SOURCE,
            format!(
                "{name}: accelerator {}; acceleratorShared {}; acceleratorSliced {}; acceleratorPartitioned {}",
                show_view(v.exclusive),
                show_view(v.shared),
                show_view(v.sliced),
                show_view(v.partitioned.view)
            ),
        )
    });
}

/// Rule 17: the LocalQueues each namespace gets, and the namespaces that get none.
pub(crate) fn local_queues<R: Record>(rec: &mut R, cluster: &Cluster, lqs: &[LocalQueue]) {
    if !R::ON {
        return;
    }
    const FUNCTION: &str = "model::queue::local_queues";
    const SOURCE: &str = "pkg/worker/controllers/worker/node_queue_entrance.go Reconcile";
    for l in lqs {
        let name = format!("{}/{}", l.namespace, l.name);
        rec.decide(|| {
            decision(
                Kind::LocalQueue,
                &name,
                "spec.clusterQueue",
                FUNCTION,
                SOURCE,
                format!(
                    "namespace {} is eligible: it gets LocalQueue {} for queue {}",
                    l.namespace, l.name, l.cluster_queue
                ),
            )
        });
        rec.derived_from(
            || Object::new(Kind::LocalQueue, &name),
            || Object::new(Kind::ClusterQueue, l.cluster_queue.as_str()),
        );
    }
    let settings = &cluster.settings;
    for ns in &cluster.namespaces {
        let why = if ns.terminating {
            "it is terminating"
        } else if ns.name == settings.system_namespace {
            "it is the system namespace"
        } else if ns.name == labels::KUBE_SYSTEM {
            "it is kube-system"
        } else {
            continue;
        };
        rec.decide(|| {
            decision(
                Kind::LocalQueue,
                &format!("{}/*", ns.name),
                "spec.clusterQueue",
                FUNCTION,
                SOURCE,
                format!("namespace {} gets no LocalQueue: {why}", ns.name),
            )
        });
    }
}
