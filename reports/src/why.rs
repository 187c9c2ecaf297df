//! "Why the model expects this" (issue [M11] item 4): the chain of rule decisions behind the
//! expected value of a counterexample's first differing field, as the model recorded them
//! while deriving (`model::derive::derive_explained`, `Provenance::explain`). Nothing here
//! decides a rule or reads a message: it asks the model and lays out its answer.

use std::fmt::Write as _;

use model::provenance::Kind;
use model::scenario::Scenario;
use oracle::Difference;

use crate::counterexample::{Counterexample, DivergenceRow};
use crate::findings::{first_field, kube_kind, normalise_field, Signature};

/// One decision of the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WhyLine {
    pub decided: String,
    /// The model function that decided.
    pub function: String,
    /// The operator source it follows.
    pub source: String,
}

/// The chain behind one field's expected value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Why {
    /// `InstanceType gpustack--…`.
    pub object: String,
    pub field: String,
    pub expected: Option<String>,
    /// The step whose derivation the chain is taken from (0 = the initial cluster).
    pub step: usize,
    pub lines: Vec<WhyLine>,
}

/// The cluster after the first `step` events of `s` (the world's own cluster, events applied).
fn cluster_at(s: &Scenario, step: usize) -> model::cluster::Cluster {
    let mut w = s.start();
    for e in s.events.iter().take(step) {
        w.apply(e);
    }
    w.cluster().clone()
}

/// The chain behind `field` of the object `kind`/`name` (kinds as differences name them:
/// `NodeLabels` is the Node) in the derivation of `s` after `step` events. A kind the model does
/// not derive (an event's effect, a Devices input) has an empty chain.
pub fn why(
    s: &Scenario,
    step: usize,
    kind: &str,
    name: &str,
    field: &str,
    expected: Option<String>,
) -> Why {
    let lines = match Kind::parse(kind) {
        Some(k) => {
            let (_, provenance) = model::derive::derive_explained(&cluster_at(s, step));
            provenance
                .explain(k, name, field)
                .into_iter()
                .map(|d| WhyLine {
                    decided: d.decided.clone(),
                    function: d.function.to_string(),
                    source: d.source.to_string(),
                })
                .collect()
        }
        None => Vec::new(),
    };
    let kind: &str = match Kind::parse(kind) {
        Some(k) => k.name(),
        None => kind,
    };
    Why {
        object: format!("{kind} {name}"),
        field: field.to_string(),
        expected,
        step,
        lines,
    }
}

/// The chain behind a counterexample's first differing field (the one its signature is taken
/// from), on the expected side at the first divergent step.
pub fn why_of(cx: &Counterexample) -> Option<Why> {
    let fields: &[Difference] = match (&cx.fields, &cx.divergence) {
        (f, Some(d)) if f.is_empty() => &d.differences,
        (f, _) => f,
    };
    let d = first_field(fields)?;
    let step = cx.divergence.as_ref().map_or(0, |d| d.step);
    Some(why(
        &cx.scenario,
        step,
        kube_kind(d),
        &d.name,
        &d.field,
        d.expected.clone(),
    ))
}

/// The chain behind the row of `rows` that `signature` was taken from (else the first row
/// with a field), for the upstream issue, which has the run's CSV rows and the scenario.
pub fn why_of_rows(s: &Scenario, rows: &[DivergenceRow], signature: &Signature) -> Option<Why> {
    let with_field = || rows.iter().find(|r| !r.field.is_empty());
    let row = rows
        .iter()
        .filter(|r| !r.field.is_empty())
        .find(|r| {
            signature
                .as_str()
                .contains(&format!(":{}", normalise_field(&r.field)))
        })
        .or_else(with_field)?;
    Some(why(
        s,
        row.step.unwrap_or(0),
        &row.kind,
        &row.name,
        &row.field,
        Some(row.expected.clone()),
    ))
}

/// Markdown text outside code: the characters that would start emphasis or HTML escaped.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '*' | '_' | '[' | ']' | '<' | '>' | '|' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The section "Why the model expects this": a numbered chain, each line with the decision,
/// the model function and the operator source.
pub fn why_markdown(out: &mut String, why: &Why) {
    out.push_str("## Why the model expects this\n\n");
    let expected = why
        .expected
        .as_deref()
        .map(|e| format!(" (expected `{}`)", e.replace('`', "'")))
        .unwrap_or_default();
    let at = if why.step == 0 {
        "the initial cluster".to_string()
    } else {
        format!("the cluster after {} event(s)", why.step)
    };
    let _ = writeln!(
        out,
        "The model's decisions behind `{}` of {}{expected}, derived from {at}, upstream first:\n",
        why.field.replace('`', "'"),
        text(&why.object),
    );
    if why.lines.is_empty() {
        out.push_str(
            "The model records no decision for this object: it is an input or an event's effect, not a derived object.\n\n",
        );
        return;
    }
    for (i, l) in why.lines.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. {} — `{}`, following `{}`",
            i + 1,
            text(&l.decided),
            l.function,
            l.source.replace('`', "'")
        );
    }
    out.push('\n');
}
