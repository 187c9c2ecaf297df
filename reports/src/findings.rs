//! Findings: counterexamples folded by root cause (issue [M11] item 1), and the known-findings
//! ledger `.verify/known.yaml` (item 2).
//!
//! A counterexample's [`Signature`] is `property:Kind:field[:rule]`: the property it breaks, the
//! Kubernetes kind and field path where it first diverges, and, where the oracle knows it, the
//! check that decided the expected value. Seeds, object names and shrink results are not in it,
//! so every seed of one root cause folds into one [`FindingEntry`]. Field paths are normalised
//! in one way only: a list member selected by identity (`[name=gpustack-…]`,
//! `[flavor=…]`) becomes `[]`, because identities are object names and differ per seed;
//! positional indexes (`[0]`) stay, as positions are part of what the operator publishes.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use oracle::{Difference, ObjectKind};
use serde::{Deserialize, Serialize};

use crate::counterexample::Counterexample;

/// The ledger's place in a checkout.
pub const KNOWN_FILE: &str = ".verify/known.yaml";

/// A root cause's identity (see the module comment for its parts).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Signature(pub String);

impl Signature {
    pub fn new(property: &str, kind: &str, field: &str, rule: Option<&str>) -> Signature {
        let mut s = format!("{property}:{kind}:{field}");
        if let Some(rule) = rule {
            s.push(':');
            s.push_str(rule);
        }
        Signature(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The property each name stands for, in one sentence (reports and the upstream issue).
pub fn property_sentence(property: &str) -> String {
    let s = match property {
        "invariance" => {
            "Renaming or reordering nodes and namespaces changes nothing the operator publishes but names."
        }
        "pool-isolation" => {
            "Adding nodes of another accelerator key never changes an existing pool, os/arch pools never mix, and under CPU awareness CPU groups never mix."
        }
        "structure" => {
            "There is one ClusterQueue per InstanceType, no cohort, one LocalQueue per queue per eligible namespace, and every entrance names an existing LocalQueue."
        }
        "accounting" => {
            "Every card is in exactly one family, each queue's quota is its flavors' capacity in the group's unit, and an InstanceType's view capacities count the cards of the nodes its queue's flavors select."
        }
        "admission" => {
            "A Workload gate 3 marks Ready is placeable on the cards it budgeted, and freeing capacity never turns Ready into Retry."
        }
        "idempotence" => "Deriving twice from the same cluster gives identical objects.",
        "twin-matches-model" => {
            "What the operator writes to the API server equals what the reference model derives, at every write step."
        }
        other => match other.strip_prefix("mutant-") {
            Some(m) => {
                return format!(
                    "The operator with the rule mutated as `{m}` publishes what the reference operator publishes (a mutant must be caught: a divergence here is the expected kill)."
                )
            }
            None => "A property of the scheduling chain holds.",
        },
    };
    s.to_string()
}

/// A message's first line with what varies per seed taken out: every word holding a digit
/// becomes `N`, and the observed value after the last `got` is dropped. The signature's
/// fallback for a counterexample that names no field: a violation without differences (a
/// renamed derivation that could not be mapped back, a quiescence invariant of `verify
/// replay`/`soak`), or a divergence whose table came back empty.
pub fn message_template(message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    let first = match first.rsplit_once(" got ") {
        Some((head, _)) => head,
        None => first,
    };
    first
        .split_whitespace()
        .map(|w| {
            if w.chars().any(|c| c.is_ascii_digit()) {
                "N"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        .replace(':', ";")
}

/// The Kubernetes kind a difference's object is (a node's labels are the Node's).
pub fn kube_kind(d: &Difference) -> &'static str {
    match d.kind {
        ObjectKind::NodeLabels => "Node",
        ObjectKind::Effect if d.field.starts_with("status.admissionChecks") => "Workload",
        other => other.name(),
    }
}

/// `[name=…]` and `[flavor=…]` member selectors become `[]` (see the module comment).
pub fn normalise_field(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let inner = &after[..close];
        if inner.contains('=') {
            out.push_str("[]");
        } else {
            out.push('[');
            out.push_str(inner);
            out.push(']');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    if out.is_empty() {
        "(object)".into()
    } else {
        out
    }
}

/// The difference a signature is taken from: the upstream-most kind, then the smallest
/// normalised field, so neither object names nor list order choose it.
pub fn first_field(fields: &[Difference]) -> Option<&Difference> {
    fields
        .iter()
        .min_by_key(|d| (oracle::graph::chain_rank(d.kind), normalise_field(&d.field)))
}

/// A counterexample's signature: from its Kubernetes-path differences when it has them (the
/// oracle's structured violation or the divergence), else from its message's template.
pub fn signature(cx: &Counterexample) -> Signature {
    let fields = match (&cx.fields, &cx.divergence) {
        (f, Some(d)) if f.is_empty() => &d.differences,
        (f, _) => f,
    };
    if let Some(d) = first_field(fields) {
        return Signature::new(
            &cx.property,
            kube_kind(d),
            &normalise_field(&d.field),
            cx.rule.as_deref(),
        );
    }
    Signature::new(&cx.property, "-", &message_template(&cx.message), None)
}

/// A new finding's title: the first differing field in Kubernetes terms, with both values
/// (the first line of the message when no field is known).
pub fn title(cx: &Counterexample) -> String {
    let fields = match (&cx.fields, &cx.divergence) {
        (f, Some(d)) if f.is_empty() => &d.differences,
        (f, _) => f,
    };
    match first_field(fields) {
        Some(d) => format!(
            "{}: {} {} is {}, expected {}",
            cx.property,
            kube_kind(d),
            normalise_field(&d.field),
            d.observed.as_deref().unwrap_or("absent"),
            d.expected.as_deref().unwrap_or("absent")
        ),
        None => cx.message.lines().next().unwrap_or("").to_string(),
    }
}

/// The smallest scenario of a finding (fewest nodes, then events, then lowest seed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Smallest {
    pub seed: u64,
    pub nodes: usize,
    pub events: usize,
    /// `counterexamples/<seed>.yaml`, relative to the run directory.
    pub scenario: String,
    /// `counterexamples/<seed>.md`.
    pub report: String,
}

/// How a finding stands in the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Known, not yet reported to the operator.
    Open,
    /// Reported to the operator's tracker (its link in the ledger).
    ReportedUpstream,
    /// Accepted as the operator's intended behaviour.
    Accepted,
}

impl Status {
    pub const ALL: [Status; 3] = [Status::Open, Status::ReportedUpstream, Status::Accepted];

    pub fn name(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::ReportedUpstream => "reported-upstream",
            Status::Accepted => "accepted",
        }
    }

    pub fn parse(s: &str) -> Result<Status, UnknownStatus> {
        Status::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// A finding status name that is none of [`Status::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown status `{0}`: expected open, reported-upstream or accepted")]
pub struct UnknownStatus(pub String);

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One root cause of a run, as `summary.json` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingEntry {
    pub signature: Signature,
    /// The ledger's title for a known finding, else the smallest counterexample's headline.
    pub title: String,
    pub property: String,
    /// Every seed that showed it, ascending.
    pub seeds: Vec<u64>,
    pub count: usize,
    pub smallest: Smallest,
    /// In the ledger.
    pub known: bool,
    /// Its ledger status (`None` for a new finding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

impl FindingEntry {
    /// `known (open): <title>, 4 seeds` or `NEW: <title>, 1 seed`.
    pub fn line(&self) -> String {
        let seeds = if self.count == 1 {
            "1 seed".to_string()
        } else {
            format!("{} seeds", self.count)
        };
        match self.status {
            Some(status) => format!("known ({status}): {}, {seeds}", self.title),
            None => format!("NEW: {}, {seeds}", self.title),
        }
    }
}

/// Adds one counterexample (already signed) to the findings: a new finding, or one more seed
/// of an existing one (its smallest scenario replaced when this one is smaller).
pub fn fold(
    findings: &mut Vec<FindingEntry>,
    signature: Signature,
    headline: &str,
    property: &str,
    smallest: Smallest,
    ledger: Option<&Ledger>,
) {
    if let Some(f) = findings.iter_mut().find(|f| f.signature == signature) {
        if !f.seeds.contains(&smallest.seed) {
            f.seeds.push(smallest.seed);
            f.seeds.sort_unstable();
        }
        f.count = f.seeds.len();
        let key = |s: &Smallest| (s.nodes, s.events, s.seed);
        if key(&smallest) < key(&f.smallest) {
            f.smallest = smallest;
        }
        return;
    }
    let known = ledger.and_then(|l| l.get(&signature));
    findings.push(FindingEntry {
        title: known.map_or_else(|| headline.to_string(), |k| k.title.clone()),
        property: property.to_string(),
        seeds: vec![smallest.seed],
        count: 1,
        known: known.is_some(),
        status: known.map(|k| k.status),
        signature,
        smallest,
    });
    findings.sort_by(|a, b| a.signature.cmp(&b.signature));
}

/// One entry of `.verify/known.yaml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownFinding {
    pub signature: Signature,
    pub title: String,
    pub status: Status,
    /// Where it is discussed (a docs/ section, an upstream issue).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub link: String,
    /// The minimal scenario, relative to the checkout (`verify replay` reads it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scenario: String,
    /// When and where it was first seen (`2026-12-01, seed 18137`).
    pub first_seen: String,
}

/// `.verify/known.yaml`: the findings a run reports as known instead of failing on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    #[serde(default)]
    pub findings: Vec<KnownFinding>,
}

/// What can go wrong with the ledger.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a ledger: which field, and what was expected there.
    #[error("{}: field `{field}`: {why}", path.display())]
    Malformed {
        path: PathBuf,
        field: String,
        why: String,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_norway::Error,
    },
    #[error("no finding with signature `{0}` in the ledger or the run")]
    Unknown(String),
    #[error("`{prefix}` names several findings: {}", matches.join(", "))]
    Ambiguous {
        prefix: String,
        matches: Vec<String>,
    },
}

impl Ledger {
    /// Reads the ledger; a missing file is an empty ledger.
    pub fn load(path: &Path) -> Result<Ledger, LedgerError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ledger::default()),
            Err(source) => {
                return Err(LedgerError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        Ledger::parse(path, &text)
    }

    /// Parses ledger text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Ledger, LedgerError> {
        if text.trim().is_empty() {
            return Ok(Ledger::default());
        }
        let de = serde_norway::Deserializer::from_str(text);
        let ledger: Ledger =
            serde_path_to_error::deserialize(de).map_err(|e| LedgerError::Malformed {
                path: path.to_path_buf(),
                field: e.path().to_string(),
                why: e.inner().to_string(),
            })?;
        let mut seen = BTreeSet::new();
        for (i, f) in ledger.findings.iter().enumerate() {
            if !seen.insert(&f.signature) {
                return Err(LedgerError::Malformed {
                    path: path.to_path_buf(),
                    field: format!("findings[{i}].signature"),
                    why: format!("expected each signature once, `{}` repeats", f.signature),
                });
            }
        }
        Ok(ledger)
    }

    /// Writes the ledger (atomically: a temporary file renamed over it), with its header.
    pub fn save(&self, path: &Path) -> Result<(), LedgerError> {
        let fail = |source: std::io::Error| LedgerError::Write {
            path: path.to_path_buf(),
            source,
        };
        let body = serde_norway::to_string(self).map_err(|source| LedgerError::Encode {
            path: path.to_path_buf(),
            source,
        })?;
        let text = format!("{LEDGER_HEADER}{body}");
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let tmp = path.with_extension("yaml.tmp");
        std::fs::write(&tmp, text).map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(fail)
    }

    pub fn get(&self, signature: &Signature) -> Option<&KnownFinding> {
        self.findings.iter().find(|f| &f.signature == signature)
    }

    /// The signature `prefix` names: an exact signature, or the one signature among
    /// `candidates` (the ledger's and a run's) that starts with it.
    pub fn resolve<'a>(
        prefix: &str,
        candidates: impl IntoIterator<Item = &'a Signature>,
    ) -> Result<Signature, LedgerError> {
        let all: BTreeSet<&Signature> = candidates.into_iter().collect();
        if let Some(exact) = all.iter().find(|s| s.as_str() == prefix) {
            return Ok((*exact).clone());
        }
        let matches: Vec<&Signature> = all
            .into_iter()
            .filter(|s| s.as_str().starts_with(prefix))
            .collect();
        match matches.as_slice() {
            [] => Err(LedgerError::Unknown(prefix.to_string())),
            [one] => Ok((*one).clone()),
            many => Err(LedgerError::Ambiguous {
                prefix: prefix.to_string(),
                matches: many.iter().map(|s| s.to_string()).collect(),
            }),
        }
    }

    /// Adds `entry`, or updates the status (and a non-empty link) of the entry with its
    /// signature. Returns whether the entry was new.
    pub fn accept(&mut self, entry: KnownFinding) -> bool {
        match self
            .findings
            .iter_mut()
            .find(|f| f.signature == entry.signature)
        {
            Some(f) => {
                f.status = entry.status;
                if !entry.link.is_empty() {
                    f.link = entry.link;
                }
                false
            }
            None => {
                self.findings.push(entry);
                self.findings.sort_by(|a, b| a.signature.cmp(&b.signature));
                true
            }
        }
    }

    /// Removes the entry with `signature`; returns it.
    pub fn retire(&mut self, signature: &Signature) -> Option<KnownFinding> {
        let at = self
            .findings
            .iter()
            .position(|f| &f.signature == signature)?;
        Some(self.findings.remove(at))
    }
}

const LEDGER_HEADER: &str = "\
# Known findings (issue [M11]): a run prints a finding whose signature is here as `known` and
# does not fail on it (`--strict` does); a new signature fails the run. Reviewed like code.
# Manage with `verify findings list|accept SIG|retire SIG`; `verify findings` also drops
# regression seeds that no longer fail.
";

/// The ledger entries a run did not see, with whether each one's minimal scenario still
/// reproduces (`reproduces(path)`: `None` when it cannot be judged here). Entries whose
/// scenario no longer reproduces are the ones to print as possibly fixed.
pub fn unseen<'a>(
    ledger: &'a Ledger,
    findings: &[FindingEntry],
    reproduces: impl Fn(&Path) -> Option<bool>,
) -> Vec<(&'a KnownFinding, Option<bool>)> {
    ledger
        .findings
        .iter()
        .filter(|k| !findings.iter().any(|f| f.signature == k.signature))
        .map(|k| {
            let judged = (!k.scenario.is_empty())
                .then(|| reproduces(Path::new(&k.scenario)))
                .flatten();
            (k, judged)
        })
        .collect()
}

/// The operator source a finding's object concerns (research/chain.md §3, §6–§10): the
/// reconciler that writes the kind, and its file in gpustack/gpustack-operator.
pub fn operator_source(kind: &str) -> &'static str {
    match kind {
        "Node" => {
            "the node labels: `PoolScheduleLabels` / `ExtractGeneralNodeKey`, pkg/nodefeature/helper.go"
        }
        "ResourceFlavor" => {
            "NodeFlavorReconciler, pkg/worker/controllers/worker/node_flavor.go (node selectors from `ExtractNodeFlavors`, pkg/nodefeature/helper.go)"
        }
        "InstanceType" => {
            "InstanceTypeReconciler.computeStatus, pkg/worker/controllers/worker/instance_type.go"
        }
        "ClusterQueue" => "NodeQueueReconciler, pkg/worker/controllers/worker/node_queue.go",
        "LocalQueue" => {
            "NodeQueueEntranceReconciler, pkg/worker/controllers/worker/node_queue_entrance.go"
        }
        "Workload" => {
            "the node-devices AdmissionCheck (gate 3), pkg/worker/controllers/worker/node_devices.go"
        }
        "Devices" => "the Device Manager's Devices status (api/worker/v1alpha1)",
        _ => "the scheduling chain (pkg/worker/controllers/worker/)",
    }
}

/// The kind part of a signature.
pub fn signature_kind(sig: &Signature) -> &str {
    sig.as_str().split(':').nth(1).unwrap_or("")
}

/// What an upstream issue is written from.
#[derive(Clone, Debug)]
pub struct IssueInput<'a> {
    pub finding: &'a FindingEntry,
    /// Its ledger entry, when known (its title, link and notes win).
    pub known: Option<&'a KnownFinding>,
    /// The smallest counterexample's scenario file, as the reader types it.
    pub scenario_path: String,
    /// The run directory, as the reader types it.
    pub run_dir: String,
    /// The smallest counterexample's recorded message.
    pub message: String,
    /// Its expected-versus-observed rows.
    pub rows: Vec<crate::counterexample::DivergenceRow>,
    /// The minimal cluster's objects (Nodes, NodeFeatures, Devices, …) to `kubectl apply`.
    pub manifests: &'a [serde_json::Value],
    /// The model's chain behind the first differing field ([`crate::why::why_of_rows`]).
    pub why: Option<crate::why::Why>,
}

/// Kubernetes objects as one YAML stream (`---` between documents).
pub fn manifests_yaml(objects: &[serde_json::Value]) -> Result<String, serde_norway::Error> {
    let mut out = String::new();
    for o in objects {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(o)?);
    }
    Ok(out)
}

/// The Markdown of an issue for the operator's tracker: title, the property, expected versus
/// observed, the operator rule and file concerned, the reproducing commands, and the minimal
/// cluster as kubectl-applicable YAML.
pub fn issue_markdown(input: &IssueInput<'_>) -> Result<String, serde_norway::Error> {
    use std::fmt::Write as _;
    let f = input.finding;
    let title = input.known.map_or(f.title.as_str(), |k| k.title.as_str());
    let kind = signature_kind(&f.signature);
    let mut out = String::new();
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(
        out,
        "Found by `verify` (property `{}`) on {} seed(s) ({}); every one folds into the signature `{}`.\n",
        f.property,
        f.count,
        f.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        f.signature
    );
    out.push_str("## What should hold\n\n");
    let _ = writeln!(out, "{}\n", property_sentence(&f.property));
    out.push_str("## Expected versus observed\n\n");
    if input.rows.iter().any(|r| !r.field.is_empty()) {
        out.push_str("| object | field | expected | observed |\n|---|---|---|---|\n");
        for r in input.rows.iter().filter(|r| !r.field.is_empty()) {
            let cell = |s: &str| s.replace('|', "\\|").replace(['\n', '\r'], " ");
            let _ = writeln!(
                out,
                "| {} {} | `{}` | {} | {} |",
                r.kind,
                cell(&r.name),
                r.field,
                cell(&r.expected),
                cell(&r.observed)
            );
        }
        out.push('\n');
    }
    out.push_str("The check's own words:\n\n```text\n");
    for line in input.message.lines() {
        let _ = writeln!(out, "{line}");
    }
    out.push_str("```\n\n");
    if let Some(why) = &input.why {
        crate::why::why_markdown(&mut out, why);
    }
    out.push_str("## Operator rule concerned\n\n");
    let _ = writeln!(out, "- {}", operator_source(kind));
    if let Some(k) = input.known {
        if !k.link.is_empty() {
            let _ = writeln!(out, "- discussion: {}", k.link);
        }
    }
    out.push('\n');
    out.push_str("## Reproduce\n\n");
    let _ = writeln!(
        out,
        "With `verify` (no cluster needed):\n\n```sh\nverify replay {}   # exits 1 while it reproduces\n```\n",
        input.scenario_path
    );
    let _ = writeln!(
        out,
        "On a cluster running the operator: save the manifests below as `cluster.yaml`, then\n\n```sh\nkubectl apply -f cluster.yaml\n# a create drops the status of kinds with a status subresource (Nodes' capacity, Devices'\n# cards); where no kubelet or Device Manager reports them, write them as they would:\nkubectl replace --subresource=status -f cluster.yaml\nkubectl get resourceflavors,instancetypes,clusterqueues -o yaml\nkubectl get {} -o yaml   # the kind that diverges\nkubectl delete -f cluster.yaml\n```\n",
        kube_resource(kind)
    );
    let _ = writeln!(
        out,
        "The run that found it: `{}` (`verify report {} --format md`).\n",
        input.run_dir, input.run_dir
    );
    out.push_str("## Minimal cluster\n\n```yaml\n");
    out.push_str(&manifests_yaml(input.manifests)?);
    out.push_str("```\n");
    Ok(out)
}

/// The `kubectl get` resource of a kind.
fn kube_resource(kind: &str) -> &'static str {
    match kind {
        "Node" => "nodes -l verify.gpustack.ai/run=verify-issue",
        "ResourceFlavor" => "resourceflavors",
        "InstanceType" => "instancetypes",
        "ClusterQueue" => "clusterqueues",
        "LocalQueue" => "localqueues -A",
        "Workload" => "workloads -A",
        "Devices" => "devices",
        _ => "instancetypes,clusterqueues",
    }
}

/// The regression file's text without the lines of `seeds` (comments and other lines kept).
pub fn without_seeds(text: &str, seeds: &BTreeSet<u64>) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let seed = line
            .split('#')
            .next()
            .and_then(|s| s.trim().parse::<u64>().ok());
        if seed.is_some_and(|s| seeds.contains(&s)) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_selectors_are_normalised_and_indexes_kept() {
        assert_eq!(
            normalise_field(
                "spec.resourceGroups[0].flavors[name=gpustack-abc].resources[name=nvidia.com/gpu].nominalQuota"
            ),
            "spec.resourceGroups[0].flavors[].resources[].nominalQuota"
        );
        assert_eq!(normalise_field(""), "(object)");
        assert_eq!(
            normalise_field("status.accelerator.capacity"),
            "status.accelerator.capacity"
        );
    }

    /// An InstanceType named `name` whose exclusive view claims `capacity` cards.
    fn claiming(name: &str, capacity: i64) -> model::objects::InstanceType {
        let mut it = model::objects::InstanceType {
            name: name.into(),
            ..Default::default()
        };
        it.spec.acceleratable = true;
        it.status.views.exclusive.capacity = capacity;
        it.status.views.exclusive.remaining = capacity;
        it
    }

    #[test]
    fn a_capacity_violation_is_signed_by_its_crd_field_and_check() {
        let it = claiming("gpustack--nvidia-h200-linux-arm64", 4);
        let v = oracle::properties::capacities_count_cards(&it, &[]).unwrap_err();
        let cx = Counterexample::of_violation(1, &v, Default::default(), 0);
        assert_eq!(
            cx.signature().as_str(),
            "accounting:InstanceType:status.accelerator.capacity:capacities_count_cards"
        );
        let row = &cx.fields[0];
        assert_eq!(row.name, "gpustack--nvidia-h200-linux-arm64");
        assert_eq!(row.expected.as_deref(), Some("0"));
        assert_eq!(row.observed.as_deref(), Some("4"));
        assert!(title(&cx).contains("status.accelerator.capacity is 4, expected 0"));
    }

    #[test]
    fn a_quota_violation_names_the_queue_field_by_position() {
        let mut d = model::derive::Derived::default();
        d.resource_flavors.push(model::objects::ResourceFlavor {
            name: "f".into(),
            capacity: 2,
            ..Default::default()
        });
        d.cluster_queues.push(model::objects::ClusterQueue {
            name: "q".into(),
            resource_groups: vec![model::objects::ResourceGroup {
                covered_resources: vec!["nvidia.com/gpu".into()],
                flavors: vec![model::objects::FlavorQuota {
                    flavor: "f".into(),
                    nominal_quota: 1_600_000,
                }],
            }],
            ..Default::default()
        });
        let v = oracle::properties::quota_matches_capacity(&d).unwrap_err();
        let cx = Counterexample::of_violation(1, &v, Default::default(), 0);
        assert_eq!(
            cx.signature().as_str(),
            "accounting:ClusterQueue:spec.resourceGroups[0].flavors[0].resources[0].nominalQuota:quota_matches_capacity"
        );
        assert_eq!(cx.fields[0].expected.as_deref(), Some("3200000"));
        assert_eq!(cx.fields[0].observed.as_deref(), Some("1600000"));
        // the words stay as people read them
        assert_eq!(
            v.message,
            "queue q flavor f: expected nominal quota 2 × 1600000 = 3200000, got 1600000"
        );
    }

    #[test]
    fn templates_drop_what_varies_per_seed() {
        assert_eq!(
            message_template("event 3: gate 3 said Ready on gpu-12, got Unplaceable: no card"),
            message_template("event 0: gate 3 said Ready on gpu-1, got Unplaceable: other")
        );
    }

    #[test]
    fn folding_keeps_one_finding_per_signature_and_the_smallest_scenario() {
        let sig = Signature::new(
            "accounting",
            "InstanceType",
            "status.accelerator.capacity",
            None,
        );
        let small = |seed, nodes| Smallest {
            seed,
            nodes,
            events: 0,
            scenario: format!("counterexamples/{seed}.yaml"),
            report: format!("counterexamples/{seed}.md"),
        };
        let mut findings = Vec::new();
        fold(
            &mut findings,
            sig.clone(),
            "h",
            "accounting",
            small(9, 3),
            None,
        );
        fold(
            &mut findings,
            sig.clone(),
            "h",
            "accounting",
            small(4, 2),
            None,
        );
        fold(
            &mut findings,
            sig.clone(),
            "h",
            "accounting",
            small(5, 2),
            None,
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].seeds, vec![4, 5, 9]);
        assert_eq!(findings[0].count, 3);
        assert_eq!(findings[0].smallest.seed, 4);
        assert!(!findings[0].known);
        assert!(findings[0].line().starts_with("NEW: h, 3 seeds"));
    }

    #[test]
    fn a_malformed_ledger_names_the_file_and_the_field() {
        let text = "findings:\n- signature: a\n  title: t\n  status: opne\n  first_seen: x\n";
        let e = Ledger::parse(Path::new(".verify/known.yaml"), text)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(".verify/known.yaml: field `findings[0].status`"),
            "{e}"
        );
        assert!(e.contains("open"), "{e}");
        let e = Ledger::parse(Path::new("k.yaml"), "findings:\n- title: t\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("signature"), "{e}");
    }

    #[test]
    fn the_ledger_round_trips_and_resolves_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("known.yaml");
        let mut ledger = Ledger::default();
        let entry = |sig: &str| KnownFinding {
            signature: Signature(sig.into()),
            title: "t".into(),
            status: Status::Open,
            link: String::new(),
            scenario: String::new(),
            first_seen: "today".into(),
        };
        assert!(ledger.accept(entry("accounting:InstanceType:x")));
        assert!(ledger.accept(entry("accounting:ClusterQueue:y")));
        ledger.save(&path).unwrap();
        let back = Ledger::load(&path).unwrap();
        assert_eq!(back, ledger);
        let sigs: Vec<Signature> = back.findings.iter().map(|f| f.signature.clone()).collect();
        assert_eq!(
            Ledger::resolve("accounting:Inst", &sigs).unwrap().as_str(),
            "accounting:InstanceType:x"
        );
        assert!(matches!(
            Ledger::resolve("accounting", &sigs),
            Err(LedgerError::Ambiguous { .. })
        ));
        let mut back = back;
        assert!(back.retire(&sigs[0]).is_some());
        assert_eq!(back.findings.len(), 1);
    }
}
