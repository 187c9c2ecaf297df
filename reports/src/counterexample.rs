//! A counterexample as a person reads it (`counterexamples/<seed>.md`): what failed, the
//! minimal scenario as small tables, the first divergent step with expected and observed side
//! by side, and the command that replays it. Also its `divergences.csv` rows and, for a
//! four-view divergence, the views to chart.

use std::fmt::Write as _;

use model::cluster::Node;
use model::events::{Effect, Event};
use model::objects::FourViews;
use model::scenario::Scenario;
use model::views::{card_family, CardFamily};
use oracle::{Difference, Divergence};
use serde::{Deserialize, Serialize};

/// Everything a counterexample report shows; built by the tier that found it.
#[derive(Clone, Debug)]
pub struct Counterexample {
    pub seed: u64,
    /// The property (or case) that failed.
    pub property: String,
    pub message: String,
    /// The shrunk scenario.
    pub scenario: Scenario,
    pub shrinks: u32,
    /// Each event's effect on the expected side (from `oracle::replay`).
    pub effects: Vec<Effect>,
    /// Where two runs (expected, observed) first part, when the failure is a divergence.
    pub divergence: Option<Divergence>,
    /// The four views of each InstanceType whose views differ at the divergent step.
    pub views: Vec<ViewPair>,
    /// Expected versus observed, one row per differing field, in Kubernetes field paths (the
    /// CRDs' names): what the report's table, `divergences.csv` and the signature read.
    pub fields: Vec<Difference>,
    /// The oracle check that decided the expected value, when known (the signature's rule).
    pub rule: Option<String>,
}

impl Counterexample {
    /// A failure the scenario shows on its own, known by its property and message only (a
    /// mutant's or the twin's divergence: [`Counterexample::against`] or
    /// [`Counterexample::with_fields`] add its rows).
    pub fn violation(
        seed: u64,
        property: &str,
        message: &str,
        scenario: Scenario,
        shrinks: u32,
    ) -> Counterexample {
        Counterexample {
            seed,
            property: property.to_string(),
            message: message.to_string(),
            effects: oracle::replay(&scenario).effects,
            scenario,
            shrinks,
            divergence: None,
            views: Vec::new(),
            fields: Vec::new(),
            rule: None,
        }
    }

    /// A property the scenario violates on its own, from the oracle's structured violation:
    /// its differences are the table's rows, its check the signature's rule.
    pub fn of_violation(
        seed: u64,
        v: &oracle::Violation,
        scenario: Scenario,
        shrinks: u32,
    ) -> Counterexample {
        Counterexample::violation(seed, v.property, &v.message, scenario, shrinks)
            .with_fields(v.differences.clone())
            .with_rule(Some(v.check))
    }

    /// Sets the oracle check that decided the expected value (the signature's rule).
    pub fn with_rule(mut self, rule: Option<&str>) -> Counterexample {
        self.rule = rule.map(str::to_string);
        self
    }

    /// Replaces the expected-versus-observed rows (e.g. with Kubernetes field paths).
    pub fn with_fields(mut self, fields: Vec<Difference>) -> Counterexample {
        self.fields = fields;
        self
    }

    /// This counterexample's root-cause signature ([`crate::findings::signature`]).
    pub fn signature(&self) -> crate::findings::Signature {
        crate::findings::signature(self)
    }

    /// Adds where `observed` (the same events under another chain, e.g. a mutant's settings)
    /// first parts from the expected run, and the four views that differ at that step.
    pub fn against(mut self, observed: &Scenario) -> Counterexample {
        self.divergence = oracle::compare_runs(&self.scenario, observed);
        if let Some(d) = &self.divergence {
            self.views = view_pairs(
                &oracle::observe_at(&self.scenario, d.step),
                &oracle::observe_at(observed, d.step),
            );
        }
        self
    }
}

/// One InstanceType's four views, expected and observed, at the first divergent step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewPair {
    pub instance_type: String,
    pub expected: FourViews,
    pub observed: FourViews,
}

/// The InstanceTypes (present on both sides) whose four views differ.
pub fn view_pairs(
    expected: &model::derive::Derived,
    observed: &model::derive::Derived,
) -> Vec<ViewPair> {
    expected
        .instance_types
        .iter()
        .filter_map(|e| {
            let o = observed.instance_types.iter().find(|o| o.name == e.name)?;
            (e.status.views != o.status.views).then(|| ViewPair {
                instance_type: e.name.to_string(),
                expected: e.status.views.clone(),
                observed: o.status.views.clone(),
            })
        })
        .collect()
}

/// The family's name in reports and coverage.
pub fn family_name(f: CardFamily) -> &'static str {
    match f {
        CardFamily::Partitioned => "partitioned",
        CardFamily::LogicallySliceable => "logically-sliceable",
        CardFamily::WholeOnly => "whole-only",
    }
}

/// What a node looks like in a report: its accelerators, card count, modes and families.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeShape {
    /// Manufacturers, in group order, without repeats.
    pub vendors: Vec<String>,
    /// `manufacturer-id` of each group.
    pub products: Vec<String>,
    pub cards: usize,
    /// Each card's ledger mode (`unreported` without a status row), without repeats.
    pub modes: Vec<String>,
    /// Each card's family by capability, without repeats.
    pub families: Vec<String>,
}

fn push_new(list: &mut Vec<String>, value: String) {
    if !list.contains(&value) {
        list.push(value);
    }
}

/// The shape of one node, read from its Devices.
pub fn node_shape(node: &Node) -> NodeShape {
    let mut shape = NodeShape::default();
    for g in node.devices.iter().flat_map(|d| &d.groups) {
        push_new(&mut shape.vendors, g.manufacturer.clone());
        push_new(&mut shape.products, g.accelerator_key());
        for card in &g.cards {
            shape.cards += 1;
            let mode = card.ledger.as_ref().map_or("unreported", |l| l.mode.name());
            push_new(&mut shape.modes, mode.to_string());
            let family = family_name(card_family(card.capability_or_default()));
            push_new(&mut shape.families, family.to_string());
        }
    }
    shape
}

/// An event's kind as the scenario file spells it (`node-join`, `submit`, …).
pub fn event_kind(e: &Event) -> &'static str {
    match e {
        Event::NodeJoin { .. } => "node-join",
        Event::NodeLeave { .. } => "node-leave",
        Event::CardFamily { .. } => "card-family",
        Event::Submit { .. } => "submit",
        Event::Finish { .. } => "finish",
        Event::NamespaceCreate { .. } => "namespace-create",
        Event::NamespaceDelete { .. } => "namespace-delete",
        Event::AwarenessFlip => "awareness-flip",
        Event::MixingFlip => "mixing-flip",
        Event::JointTimeout { .. } => "joint-timeout",
    }
}

/// The few words that identify an event's subject.
fn event_detail(e: &Event) -> String {
    match e {
        Event::NodeJoin { node } => {
            let s = node_shape(node);
            format!(
                "{} ({} card(s) {})",
                node.name,
                s.cards,
                s.products.join(", ")
            )
        }
        Event::NodeLeave { name } => name.clone(),
        Event::CardFamily {
            node,
            card,
            capability,
        } => format!("{node}/{card} → {}", family_name(card_family(capability))),
        Event::Submit { workload } => {
            let requests: Vec<String> = workload
                .pod_sets
                .iter()
                .flat_map(|ps| {
                    ps.containers.iter().flat_map(move |c| {
                        c.requests
                            .iter()
                            .map(move |(k, v)| format!("{}×{k}={v}", ps.count))
                    })
                })
                .collect();
            format!(
                "{}/{} {}",
                workload.namespace,
                workload.name,
                requests.join(" ")
            )
        }
        Event::Finish { namespace, name } => format!("{namespace}/{name}"),
        Event::NamespaceCreate { name } | Event::NamespaceDelete { name } => name.clone(),
        Event::AwarenessFlip | Event::MixingFlip => String::new(),
        Event::JointTimeout {
            namespace,
            deployment,
        } => format!("{namespace}/{deployment}"),
    }
}

/// Markdown table cell: no line breaks, `|` escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn md_table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

/// `initially` or `after event k-1 (kind)`.
pub fn step_name(step: usize, scenario: &Scenario) -> String {
    match step.checked_sub(1) {
        None => "initially (before any event)".to_string(),
        Some(k) => match scenario.events.get(k) {
            Some(e) => format!("after event {k} ({})", event_kind(e)),
            None => format!("after event {k}"),
        },
    }
}

fn side(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(absent)".to_string())
}

/// One line saying what failed: for a divergence, where and the first differing field;
/// otherwise the message's first line.
pub fn headline(cx: &Counterexample) -> String {
    match &cx.divergence {
        Some(d) => {
            let shown = if cx.fields.is_empty() {
                &d.differences
            } else {
                &cx.fields
            };
            let first = crate::findings::first_field(shown)
                .map(|x| format!("; first: {x}"))
                .unwrap_or_default();
            format!(
                "the runs part {} — {} field(s) differ{first}",
                step_name(d.step, &cx.scenario),
                d.differences.len()
            )
        }
        None => cx.message.lines().next().unwrap_or("").to_string(),
    }
}

/// The report `counterexamples/<seed>.md`. `replay_path` is the scenario file as the reader
/// should type it; `plot` the chart's path relative to the report, when there is one.
pub fn counterexample_markdown(
    cx: &Counterexample,
    replay_path: &str,
    plot: Option<&str>,
) -> String {
    let s = &cx.scenario;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Counterexample: seed {} — `{}`\n",
        cx.seed, cx.property
    );
    let _ = writeln!(out, "**What failed:** {}\n", cell(&headline(cx)));
    let _ = writeln!(
        out,
        "**Property:** {}\n",
        crate::findings::property_sentence(&cx.property)
    );
    let _ = writeln!(out, "**Signature:** `{}`\n", cx.signature());
    let _ = writeln!(out, "**Replay:** `verify replay {replay_path}`\n");
    let shapes: Vec<NodeShape> = s.cluster.nodes.iter().map(node_shape).collect();
    let cards: usize = shapes.iter().map(|n| n.cards).sum();
    let _ = writeln!(
        out,
        "Shrunk in {} step(s) to {} node(s), {} card(s), {} event(s).\n",
        cx.shrinks,
        s.cluster.nodes.len(),
        cards,
        s.events.len()
    );

    out.push_str("## Minimal scenario\n\n");
    let rows: Vec<Vec<String>> = s
        .cluster
        .nodes
        .iter()
        .zip(&shapes)
        .map(|(n, sh)| {
            vec![
                n.name.clone(),
                sh.products.join(", "),
                sh.cards.to_string(),
                sh.modes.join(", "),
                sh.families.join(", "),
            ]
        })
        .collect();
    md_table(
        &mut out,
        &["node", "accelerators", "cards", "modes", "families"],
        &rows,
    );
    out.push('\n');
    if s.events.is_empty() {
        out.push_str("No events.\n\n");
    } else {
        let rows: Vec<Vec<String>> = s
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                vec![
                    i.to_string(),
                    event_kind(e).to_string(),
                    event_detail(e),
                    cx.effects
                        .get(i)
                        .map(oracle::effect_summary)
                        .unwrap_or_default(),
                ]
            })
            .collect();
        md_table(
            &mut out,
            &["#", "event", "subject", "expected effect"],
            &rows,
        );
        out.push('\n');
    }

    match &cx.divergence {
        Some(d) => {
            let _ = writeln!(
                out,
                "## First divergent step: {} — {}\n",
                d.step,
                step_name(d.step, s)
            );
            let shown = if cx.fields.is_empty() {
                &d.differences
            } else {
                &cx.fields
            };
            let rows: Vec<Vec<String>> = shown
                .iter()
                .map(|x| {
                    vec![
                        format!("{} {}", x.kind, x.name),
                        if x.field.is_empty() {
                            "(object)".into()
                        } else {
                            x.field.clone()
                        },
                        side(&x.expected),
                        side(&x.observed),
                    ]
                })
                .collect();
            md_table(
                &mut out,
                &["object", "field", "expected", "observed"],
                &rows,
            );
            out.push('\n');
        }
        None => {
            out.push_str("## What was expected and what was observed\n\n");
            if !cx.fields.is_empty() {
                md_table(
                    &mut out,
                    &["object", "field", "expected", "observed"],
                    &field_rows(&cx.fields),
                );
                out.push('\n');
            }
            if let Some(rule) = &cx.rule {
                let _ = writeln!(
                    out,
                    "The expected value is decided by the oracle's `{rule}` (oracle/src/properties.rs).\n"
                );
            }
            // the oracle's own words, verbatim: a fenced block keeps its tables aligned
            out.push_str("```text\n");
            for line in cx.message.lines() {
                let _ = writeln!(out, "{line}");
            }
            out.push_str("```\n\n");
        }
    }
    if let Some(why) = crate::why::why_of(cx) {
        crate::why::why_markdown(&mut out, &why);
    }
    if let Some(plot) = plot {
        let names: Vec<&str> = cx.views.iter().map(|v| v.instance_type.as_str()).collect();
        let _ = writeln!(
            out,
            "## Four views, expected vs observed ({})\n\n![EX/SH/SL/PT expected vs observed]({plot})\n",
            names.join(", ")
        );
    }
    out
}

/// Table rows `object | field | expected | observed` of differences.
fn field_rows(fields: &[Difference]) -> Vec<Vec<String>> {
    fields
        .iter()
        .map(|x| {
            vec![
                format!("{} {}", crate::findings::kube_kind(x), x.name),
                if x.field.is_empty() {
                    "(object)".into()
                } else {
                    x.field.clone()
                },
                side(&x.expected),
                side(&x.observed),
            ]
        })
        .collect()
}

/// The columns of `divergences.csv` (the fields of [`DivergenceRow`]).
pub const CSV_HEADER: [&str; 8] = [
    "seed", "property", "step", "kind", "name", "field", "expected", "observed",
];

/// One row of `divergences.csv`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DivergenceRow {
    pub seed: u64,
    pub property: String,
    /// Empty for a property violation that is not a two-run divergence.
    pub step: Option<usize>,
    pub kind: String,
    pub name: String,
    pub field: String,
    pub expected: String,
    pub observed: String,
}

/// The CSV rows of a counterexample: one per differing field (its Kubernetes-path rows when
/// it has them), or, for a violation no field could be read from, one carrying the message.
pub fn divergence_rows(cx: &Counterexample) -> Vec<DivergenceRow> {
    let row = |step: Option<usize>, d: &Difference| DivergenceRow {
        seed: cx.seed,
        property: cx.property.clone(),
        step,
        kind: d.kind.to_string(),
        name: d.name.clone(),
        field: d.field.clone(),
        expected: side(&d.expected),
        observed: side(&d.observed),
    };
    let step = cx.divergence.as_ref().map(|d| d.step);
    if !cx.fields.is_empty() {
        return cx.fields.iter().map(|x| row(step, x)).collect();
    }
    match &cx.divergence {
        Some(d) => d.differences.iter().map(|x| row(Some(d.step), x)).collect(),
        None => vec![DivergenceRow {
            seed: cx.seed,
            property: cx.property.clone(),
            step: None,
            kind: "Violation".into(),
            name: cx.property.clone(),
            field: String::new(),
            expected: "property holds".into(),
            observed: cx.message.clone(),
        }],
    }
}
