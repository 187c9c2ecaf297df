//! How a run writes a scenario, and what the model is asked at each quiesced step.

use live::client::{self, RunId};
use model::events::Event;

/// The Device Manager reports a node's Devices after the node exists, and the operator
/// derives in between (a node without Devices is a CPU node, and what it authors is
/// create-only); so every node (initial or joining) is written first without its Devices,
/// then with them, and the model sees the same two states. Returns the initial cluster
/// without Devices and the labelled steps after it; events from the first settings flip on
/// (`AwarenessFlip`, `MixingFlip`) are left out (the operator's flags are fixed when it
/// starts).
pub fn write_steps(
    cluster: &model::Cluster,
    events: &[Event],
    run: &RunId,
) -> (model::Cluster, Vec<(String, Vec<Event>)>) {
    let mut bare = cluster.clone();
    let mut joins = Vec::new();
    for node in &mut bare.nodes {
        if node.devices.is_some() {
            joins.push(Event::NodeJoin { node: node.clone() });
            node.devices = None;
        }
    }
    let mut steps = Vec::new();
    if !joins.is_empty() {
        steps.push(("the nodes' Devices reported".to_string(), joins));
    }
    for (k, event) in events.iter().enumerate() {
        if event.flips_setting() {
            break;
        }
        steps.extend(event_steps(k, event, run));
    }
    (bare, steps)
}

/// The labelled write steps of event `k`: a joining node (carrying the run label) before
/// its Devices and with them, any other event as it is.
pub(super) fn event_steps(k: usize, event: &Event, run: &RunId) -> Vec<(String, Vec<Event>)> {
    let Event::NodeJoin { node } = event else {
        return vec![(format!("event {k}"), vec![event.clone()])];
    };
    let mut node = node.clone();
    node.labels
        .insert(client::RUN_LABEL.into(), run.as_str().into());
    let mut steps = Vec::new();
    if node.devices.is_some() {
        let bare = model::cluster::Node {
            devices: None,
            ..node.clone()
        };
        steps.push((
            format!("event {k} (node-join, before its Devices)"),
            vec![Event::NodeJoin { node: bare }],
        ));
    }
    steps.push((
        format!("event {k} (node-join)"),
        vec![Event::NodeJoin { node }],
    ));
    steps
}
