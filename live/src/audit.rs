//! `verify audit` (issue 7 "`verify audit` (read-only)"): what the operator's derived objects
//! must be, predicted from a cluster's Nodes and Devices (and Namespaces, existing
//! InstanceTypes) with the model, against what the cluster holds; every divergence folded along
//! the derivation graph (`oracle::graph`). It writes nothing, ever: a snapshot is a file, and
//! a live cluster is only listed.
//!
//! One path for both sources: the listed objects ([`Snapshot`]) are read in place, as the
//! server that listed them validated them: the twin's reader (`wire::read::cluster_from`) turns
//! them into the model's input, and the same values, through the client's typed round trip
//! (`client::observed_from`), are the observed side of the diff (issue [M15]: loading them into
//! a twin store and reading them back over loopback HTTP took 3 s and 600 MiB for 4,000 nodes).
//! A dump is read in one pass ([`Snapshot::parse`]): each Node and Devices object straight
//! into the typed parts its reader reads (`wire::read::NodeDoc`, `DevicesDoc`), their texts
//! borrowed from the dump, and each of the few other objects into a value. A Node's parts
//! are the model's input, and its labels are compared with the derived ones where they are:
//! only a Node whose labels differ is built into the diff's objects, on both sides. Issue [M15]: a 4,000-node dump's objects as `serde_json::Value`s were 110
//! of the audit's 140 MB, and scanning the text three times (the items, their heads, their
//! members) and building those values were most of its instructions.
//!
//! The AdmissionChecks are read too: a queue references `gpustack-node-devices` and
//! `gpustack-model-deployment-joint` only while the check is Active (`model::queue::
//! queue_admission_checks`), so the operator's settings for them come from the listed checks'
//! `Active` conditions, not from defaults; a check that is not listed is not Active.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use model::derive::{Derived, DerivedNode};
use model::labels::{Labels, JOINT_CHECK, NODE_DEVICES_CHECK};
use model::Settings;
use oracle::{fold, render_findings, DerivationGraph, Difference, Finding};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Map, Value};

use crate::client::{self, Client, ClientError, Observed};
use crate::server::store::Store;
use crate::wire::doc::{
    self, default_for_other_values, DocError, LooseName, LooseText, MemberWise, Text,
};
use crate::wire::kinds::{self, Kind, AUDITED_KINDS};
use crate::wire::read::{self, meta_str, DevicesDoc, Listing, NodeDoc};

/// Audited kinds an older dump command did not list: a dump holding no object of one of them
/// most likely never asked for it (a cluster the operator manages has at least the
/// hostname-only Topology once it has a pool), so the kind is reported as not in the dump and
/// not judged, rather than as every expected object missing.
pub const LATER_KINDS: [Kind; 1] = [kinds::TOPOLOGY];

/// The command docs/audit.md documents for a dump (`verify audit --snapshot`).
pub const DUMP_COMMAND: &str = "kubectl get nodes,devices,instancetypes,resourceflavors,clusterqueues,localqueues,admissionchecks,topologies -A -o json --show-managed-fields";

/// The objects of `store` as [`DUMP_COMMAND`] lists them: the audited kinds but Namespaces, as
/// one `List` (what `verify audit --snapshot` reads).
pub fn kubectl_dump(store: &Store) -> Value {
    let items: Vec<Value> = AUDITED_KINDS
        .iter()
        .filter(|k| **k != kinds::NAMESPACE)
        .flat_map(|k| {
            store
                .list(k, None, &crate::server::store::Selector::everything())
                .map(|l| l.items)
                .unwrap_or_default()
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Why an audit could not judge.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The input is malformed: names the source (file), the field and what was expected.
    #[error("{source_name}: {field}: {message}")]
    Input {
        source_name: String,
        field: String,
        message: String,
    },
    /// The cluster could not be listed.
    #[error(transparent)]
    Client(Box<ClientError>),
}

impl outcome::Concluded for AuditError {
    /// Malformed input is the user's to fix; an unreadable cluster leaves the audit unjudged.
    fn outcome(&self) -> outcome::Outcome {
        match self {
            AuditError::Input { .. } => outcome::Outcome::Usage,
            AuditError::Client(_) => outcome::Outcome::Inconclusive,
        }
    }
}

impl outcome::Concluded for Audit {
    /// Held when nothing diverges; any finding fails the audit.
    fn outcome(&self) -> outcome::Outcome {
        if self.findings.is_empty() {
            outcome::Outcome::Held
        } else {
            outcome::Outcome::Failed
        }
    }
}

impl From<ClientError> for AuditError {
    fn from(e: ClientError) -> Self {
        AuditError::Client(Box::new(e))
    }
}

impl AuditError {
    /// Exit code (DESIGN.md "Exit codes"): 2 bad input, 3 infrastructure.
    fn input(source_name: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        AuditError::Input {
            source_name: source_name.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// One listed object: a live cluster's, parsed; a dump's Node or Devices object, the typed
/// parts its reader reads, borrowed from the dump's text (read with the dump, in one pass);
/// a dump's other objects, parsed whole.
#[derive(Clone, Debug)]
pub enum Listed<'a> {
    Parsed(Value),
    Node(NodeDoc<'a>),
    Devices(DevicesDoc<'a>),
}

impl Listed<'_> {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        match self {
            Listed::Parsed(o) => meta_str(o, "name"),
            Listed::Node(doc) => doc.name(),
            Listed::Devices(doc) => doc.name(),
        }
    }

    /// `metadata.namespace` (empty: cluster-scoped, as Nodes and Devices are).
    pub fn namespace(&self) -> &str {
        match self {
            Listed::Parsed(o) => meta_str(o, "namespace"),
            Listed::Node(_) | Listed::Devices(_) => "",
        }
    }
}

/// Why a listed object is not of the parts asked for.
fn not_of_kind(kind: &str) -> DocError {
    DocError {
        path: String::new(),
        message: format!("not a {kind}"),
    }
}

impl Listing for Listed<'_> {
    /// A dump's Node or Devices object as the members its reader read (the rest was skipped).
    fn value(&self) -> Cow<'_, Value> {
        match self {
            Listed::Parsed(o) => Cow::Borrowed(o),
            Listed::Node(doc) => Cow::Owned(serde_json::to_value(doc).unwrap_or_default()),
            Listed::Devices(doc) => Cow::Owned(serde_json::to_value(doc).unwrap_or_default()),
        }
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(Listed::name(self))
    }

    fn node(&self) -> Result<Cow<'_, NodeDoc<'_>>, DocError> {
        match self {
            Listed::Parsed(o) => o.node(),
            Listed::Node(doc) => Ok(Cow::Borrowed(doc)),
            Listed::Devices(_) => Err(not_of_kind("Node")),
        }
    }

    fn devices(&self) -> Result<Cow<'_, DevicesDoc<'_>>, DocError> {
        match self {
            Listed::Parsed(o) => o.devices(),
            Listed::Devices(doc) => Ok(Cow::Borrowed(doc)),
            Listed::Node(_) => Err(not_of_kind("Devices object")),
        }
    }
}

/// The listed objects of one cluster, from a file (borrowing its text) or from the API.
#[derive(Clone, Debug, Default)]
pub struct Snapshot<'a> {
    /// Where the objects came from (a file path, or `context C`), named in errors.
    pub source: String,
    /// Each object with its kind and its index in the source's `items`.
    pub items: Vec<(usize, Kind, Listed<'a>)>,
    /// `Kind` of each item of a kind the audit does not read (e.g. Pods), left out.
    pub ignored: Vec<String>,
    /// Kinds of [`LATER_KINDS`] the source did not list (a dump with none of them).
    pub unlisted: Vec<Kind>,
}

impl<'a> Snapshot<'a> {
    /// Parses a v1 `List` (`kubectl get … -o json`) in one pass; `source` names the file in
    /// errors. A Node or Devices object that its reader refuses (a label that is not a string)
    /// is refused here, naming its item and field.
    pub fn parse(text: &'a str, source: &str) -> Result<Snapshot<'a>, AuditError> {
        let doc: ListDoc = serde_json::from_str(text).map_err(|e| list_error(text, source, &e))?;
        let kind = doc.kind.as_str().unwrap_or_default();
        if !kind.ends_with("List") {
            return Err(AuditError::input(
                source,
                "kind",
                format!("expected `List` (kubectl get … -o json), found `{kind}`"),
            ));
        }
        let Some(Items(Some(items))) = doc.items else {
            return Err(AuditError::input(
                source,
                "items",
                "expected an array of objects",
            ));
        };
        let mut out = Snapshot {
            source: source.to_string(),
            ..Snapshot::default()
        };
        for (i, item) in items.into_iter().enumerate() {
            let required = |text: Option<&str>, field: &str| {
                text.map(str::to_string).ok_or_else(|| {
                    AuditError::input(
                        source,
                        format!("items[{i}].{field}"),
                        "expected a non-empty string",
                    )
                })
            };
            let api_version = required(item.api_version.non_empty(), "apiVersion")?;
            let kind = required(item.kind.non_empty(), "kind")?;
            let name = required(item.body.name(), "metadata.name")?;
            match kinds::by_kind(&api_version, &kind).filter(|k| AUDITED_KINDS.contains(k)) {
                Some(k) => {
                    if k.namespaced {
                        required(item.body.namespace(), "metadata.namespace")?;
                    }
                    // the body was read as the kind its head names (`Body::for_head`)
                    let listed = match item.body {
                        Body::Node(doc) => Listed::Node(doc),
                        Body::Devices(doc) => Listed::Devices(doc),
                        Body::Whole(mut members) => {
                            members.insert("apiVersion".into(), Value::String(api_version));
                            members.insert("kind".into(), Value::String(kind));
                            Listed::Parsed(Value::Object(members))
                        }
                        Body::Other(_) => {
                            let field = format!("items[{i}] ({name})");
                            return Err(AuditError::input(source, field, "not read as its kind"));
                        }
                    };
                    out.items.push((i, k, listed));
                }
                None => out.ignored.push(format!("{api_version}/{kind}")),
            }
        }
        out.unlisted = LATER_KINDS
            .into_iter()
            .filter(|k| out.count(k) == 0)
            .collect();
        Ok(out)
    }

    /// Lists every audited kind through `client` (GET only).
    pub async fn list(client: &Client) -> Result<Snapshot<'static>, ClientError> {
        let mut out = Snapshot {
            source: format!("context {}", client.target().context),
            ..Snapshot::default()
        };
        for kind in AUDITED_KINDS {
            let objects =
                crate::with_type!(kind, K => list_values::<K>(client).await?, _ => Vec::new());
            for mut o in objects {
                o["apiVersion"] = json!(kind.api_version());
                o["kind"] = json!(kind.kind);
                out.items.push((out.items.len(), kind, Listed::Parsed(o)));
            }
        }
        Ok(out)
    }

    fn count(&self, kind: &Kind) -> usize {
        self.items.iter().filter(|(_, k, _)| k == kind).count()
    }

    /// The listed AdmissionCheck `name`'s state: Active when its `status.conditions` hold
    /// `type=Active, status=True` (Kueue's AdmissionCheck API).
    pub fn check_state(&self, name: &str) -> CheckState {
        let listed = self
            .items
            .iter()
            .find(|(_, k, o)| *k == kinds::ADMISSION_CHECK && o.name() == name);
        let Some((_, _, o)) = listed else {
            return CheckState::Absent;
        };
        let active = o
            .value()
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("type") == Some(&json!("Active")) && c.get("status") == Some(&json!("True"))
            });
        if active {
            CheckState::Active
        } else {
            CheckState::NotActive
        }
    }

    /// `settings` with the two checks' activity as this snapshot lists them.
    pub fn settings_with_checks(&self, settings: &Settings) -> Settings {
        Settings {
            node_devices_check_active: self.check_state(NODE_DEVICES_CHECK) == CheckState::Active,
            joint_check_active: self.check_state(JOINT_CHECK) == CheckState::Active,
            ..settings.clone()
        }
    }
}

/// Why a dump is not a `List` [`Snapshot::parse`] reads: not JSON; or, read again for the
/// field path, the member refused (`items[3].metadata.labels.<key>`).
fn list_error(text: &str, source: &str, e: &serde_json::Error) -> AuditError {
    if !e.is_data() {
        return AuditError::input(source, "(document)", format!("not JSON: {e}"));
    }
    match doc::from_text::<ListDoc>(text) {
        Err(refused) if !refused.path.is_empty() && refused.path != "." => {
            AuditError::input(source, refused.path, refused.message)
        }
        _ => AuditError::input(source, "(document)", format!("not a List object: {e}")),
    }
}

/// A `List` document as [`Snapshot::parse`] reads it, in one pass: each item's head and
/// parts ([`Item`]), borrowed from the document.
#[derive(serde::Deserialize)]
struct ListDoc<'a> {
    #[serde(default)]
    kind: Value,
    #[serde(default, borrow)]
    items: Option<Items<'a>>,
}

/// A [`ListDoc`]'s `items`: `None` inside when they are not an array.
struct Items<'a>(Option<Vec<Item<'a>>>);

impl<'de: 'a, 'a> Deserialize<'de> for Items<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ItemsVisitor(std::marker::PhantomData))
    }
}

struct ItemsVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ItemsVisitor<'a> {
    type Value = Items<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items<'a>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            out.push(item);
        }
        Ok(Items(Some(out)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Items<'a>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Items(None))
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Items<'a>, E> {
        Ok(Items(None))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Items<'a>, E> {
        Ok(Items(None))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Items<'a>, E> {
        Ok(Items(None))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Items<'a>, E> {
        Ok(Items(None))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Items<'a>, E> {
        Ok(Items(None))
    }
}

/// One item of a dump, read in one pass: its type (each when a string), and its other members
/// as [`Body::for_head`] decides from the type read before them. `kubectl` and the API server
/// write `apiVersion` and `kind` first; an item whose body comes first is read whole.
#[derive(Default)]
struct Item<'a> {
    api_version: LooseText<'a>,
    kind: LooseText<'a>,
    body: Body<'a>,
}

/// An item's members but its type.
enum Body<'a> {
    /// A Node's parts, as its reader reads them.
    Node(NodeDoc<'a>),
    /// A Devices object's parts, as its reader reads them.
    Devices(DevicesDoc<'a>),
    /// Every member, parsed (the other audited kinds, and an item whose type came late).
    Whole(Map<String, Value>),
    /// A kind the audit does not read: its name, for the head's check.
    Other(LooseName<'a>),
}

impl Default for Body<'_> {
    fn default() -> Self {
        Body::Whole(Map::new())
    }
}

impl<'a> Body<'a> {
    /// How an item's members are read, from the type read so far.
    fn for_head(api_version: &LooseText<'_>, kind: &LooseText<'_>) -> Body<'a> {
        let (Some(api_version), Some(kind)) = (&api_version.0, &kind.0) else {
            return Body::default();
        };
        match kinds::by_kind(api_version.as_str(), kind.as_str()) {
            Some(k) if k == kinds::NODE => Body::Node(NodeDoc::default()),
            Some(k) if k == kinds::DEVICES => Body::Devices(DevicesDoc::default()),
            Some(k) if AUDITED_KINDS.contains(&k) => Body::default(),
            _ => Body::Other(LooseName::default()),
        }
    }

    fn read_member<'de: 'a, A: MapAccess<'de>>(
        &mut self,
        name: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match self {
            Body::Node(doc) => doc.read_member(&name, map),
            Body::Devices(doc) => doc.read_member(&name, map),
            Body::Whole(members) => {
                members.insert(name.into_owned(), map.next_value()?);
                Ok(())
            }
            Body::Other(head) if name == "metadata" => {
                *head = map.next_value()?;
                Ok(())
            }
            Body::Other(_) => map.next_value::<IgnoredAny>().map(|_| ()),
        }
    }

    /// `metadata.name`, when a non-empty string.
    fn name(&self) -> Option<&str> {
        match self {
            Body::Node(doc) => Some(doc.name()),
            Body::Devices(doc) => Some(doc.name()),
            Body::Whole(members) => members
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str),
            Body::Other(head) => head.name.non_empty(),
        }
        .filter(|s| !s.is_empty())
    }

    /// `metadata.namespace`, when a non-empty string (Nodes and Devices have none).
    fn namespace(&self) -> Option<&str> {
        match self {
            Body::Whole(members) => members
                .get("metadata")
                .and_then(|m| m.get("namespace"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty()),
            Body::Other(head) => head.namespace.non_empty(),
            Body::Node(_) | Body::Devices(_) => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ItemVisitor<'a> {
            type Value = Item<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<'a>, A::Error> {
                let mut item = Item::default();
                let mut body: Option<Body<'a>> = None;
                while let Some(Text(name)) = map.next_key()? {
                    let head = match name.as_ref() {
                        "apiVersion" => &mut item.api_version,
                        "kind" => &mut item.kind,
                        _ => {
                            let body = body.get_or_insert_with(|| {
                                Body::for_head(&item.api_version, &item.kind)
                            });
                            body.read_member(name, &mut map)?;
                            continue;
                        }
                    };
                    // the body was read as the first type seen: a second is refused
                    if head.0.is_some() {
                        return Err(serde::de::Error::custom(format!("`{name}` listed twice")));
                    }
                    *head = map.next_value()?;
                }
                item.body = body.unwrap_or_default();
                Ok(item)
            }
            fn visit_str<E>(self, _: &str) -> Result<Item<'a>, E> {
                Ok(Item::default())
            }
            default_for_other_values!();
        }
        d.deserialize_any(ItemVisitor(std::marker::PhantomData))
    }
}

/// The AdmissionChecks an operator-owned queue may reference, in reference order.
pub const AUDITED_CHECKS: [&str; 2] = [NODE_DEVICES_CHECK, JOINT_CHECK];

/// What a snapshot says of one AdmissionCheck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckState {
    Active,
    /// Listed without an `Active=True` condition.
    NotActive,
    /// Not listed: not Active either.
    Absent,
}

impl CheckState {
    fn describe(self) -> &'static str {
        match self {
            CheckState::Active => "Active",
            CheckState::NotActive => "not Active",
            CheckState::Absent => "absent (not Active)",
        }
    }
}

async fn list_values<K: client::scoped::Scoped>(
    client: &Client,
) -> Result<Vec<Value>, ClientError> {
    Ok(client
        .list::<K>(None, None)
        .await?
        .iter()
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect())
}

/// Where the namespaces that decide LocalQueues came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceSource {
    /// The snapshot lists Namespace objects.
    Listed(usize),
    /// None listed (docs/audit.md's kubectl command lists none): the namespaces the listed
    /// LocalQueues name. A pool's missing LocalQueue is found in those namespaces; a namespace
    /// holding no LocalQueue at all is not seen.
    FromLocalQueues(Vec<String>),
}

/// What an audit found.
#[derive(Clone, Debug)]
pub struct Audit {
    pub source: String,
    pub namespaces: NamespaceSource,
    /// Objects read, by kind, in [`AUDITED_KINDS`] order.
    pub counts: Vec<(&'static str, usize)>,
    pub ignored: usize,
    /// Each of [`AUDITED_CHECKS`] as listed, which decided the queues' predicted checks.
    pub checks: Vec<(&'static str, CheckState)>,
    /// Kinds the dump did not list, not judged (plural names; [`Snapshot::unlisted`]).
    pub not_in_dump: Vec<&'static str>,
    /// Objects left out because their namespace was not listed ([`Loaded::gone`]).
    pub in_gone_namespaces: Vec<String>,
    pub differences: Vec<Difference>,
    pub findings: Vec<Finding>,
}

impl Audit {
    /// The report: source, what was read, how LocalQueues were judged, the folded findings.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(out, "audit: {} (read-only)", self.source);
        let _ = writeln!(out, "read: {}", counts.join(", "));
        if self.ignored > 0 {
            let _ = writeln!(out, "ignored: {} objects of other kinds", self.ignored);
        }
        let _ = match &self.namespaces {
            NamespaceSource::Listed(n) => writeln!(out, "namespaces: {n} listed"),
            NamespaceSource::FromLocalQueues(ns) => writeln!(
                out,
                "namespaces: none listed; LocalQueues judged in the {} namespace(s) they name ({})",
                ns.len(),
                ns.join(", ")
            ),
        };
        if !self.in_gone_namespaces.is_empty() {
            let _ = writeln!(
                out,
                "left out: {} object(s) in namespaces not listed, going with their namespace \
                 ({})",
                self.in_gone_namespaces.len(),
                self.in_gone_namespaces.join(", ")
            );
        }
        let checks: Vec<String> = self
            .checks
            .iter()
            .map(|(name, state)| format!("{name} {}", state.describe()))
            .collect();
        let _ = writeln!(out, "admission checks: {}", checks.join(", "));
        if !self.not_in_dump.is_empty() {
            let _ = writeln!(
                out,
                "not in the dump: {} (not judged; `{DUMP_COMMAND}` lists them)",
                self.not_in_dump.join(", ")
            );
        }
        out.push_str(&render_findings(&self.findings));
        let _ = writeln!(
            out,
            "{} finding(s), {} difference(s)",
            self.findings.len(),
            self.differences.len()
        );
        out
    }
}

/// Audits `snapshot`: predicts with the model under `settings` (the operator's flags; the two
/// checks' activity read from the snapshot) and compares, folding divergences along the
/// derivation graph.
pub fn audit(snapshot: &Snapshot, settings: &Settings) -> Result<Audit, AuditError> {
    let loaded = load(snapshot)?;
    let settings = snapshot.settings_with_checks(settings);
    let derived = model::derive::derive(&read_model(&loaded, &settings, &snapshot.source)?);
    let mut observed = Observed::default();
    loaded.observe_besides_nodes(&mut observed);
    // an administrator's own Topologies (for queues of their own) are not the operator's
    if let Some(topologies) = observed.objects.get_mut(&oracle::ObjectKind::Topology) {
        topologies.retain(|_, o| operator_topology(o));
    }
    let mut expected = client::expected_besides_nodes(&derived);
    loaded.observe_differing_nodes(&derived, &mut expected, &mut observed);
    for kind in &snapshot.unlisted {
        if let Some(k) = observed_kind(kind) {
            expected.objects.remove(&k);
        }
    }
    let differences = client::diff(&expected, &observed);
    // the derivation graph only folds differences: a clean audit has none to fold
    let findings = if differences.is_empty() {
        Vec::new()
    } else {
        fold(&differences, &DerivationGraph::from_derived(&derived))
    };
    Ok(Audit {
        source: snapshot.source.clone(),
        counts: AUDITED_KINDS
            .iter()
            .map(|k| (k.plural, snapshot.count(k)))
            .collect(),
        ignored: snapshot.ignored.len(),
        checks: AUDITED_CHECKS
            .iter()
            .map(|c| (*c, snapshot.check_state(c)))
            .collect(),
        not_in_dump: snapshot.unlisted.iter().map(|k| k.plural).collect(),
        namespaces: loaded.namespaces,
        in_gone_namespaces: loaded.gone,
        differences,
        findings,
    })
}

/// Whether a listed label set is `labels`, read as a JSON object reads (a key listed twice: its
/// last value).
fn same_labels<'l>(labels: &Labels, listed: impl Iterator<Item = (&'l str, &'l str)>) -> bool {
    let mut listed: Vec<(&str, &str)> = listed.collect();
    // a listing writes an object's members sorted (a server's maps are); otherwise reversed, so
    // that the stable sort puts a repeated key's last value first, which dedup keeps
    if !listed.windows(2).all(|w| w[0].0 < w[1].0) {
        listed.reverse();
        listed.sort_by_key(|(k, _)| *k);
        listed.dedup_by_key(|(k, _)| *k);
    }
    listed.len() == labels.len()
        && listed
            .iter()
            .zip(labels.iter())
            .all(|((k, v), (lk, lv))| *k == lk.as_str() && *v == lv.as_str())
}

/// Whether a Topology (in its observed form) is one the operator generates: labelled
/// `resource.gpustack.ai/type=topology` (node_topology.go marks every `gpustack-<profile>`).
fn operator_topology(o: &Value) -> bool {
    o.pointer("/labels")
        .and_then(|l| l.get(model::labels::RESOURCE_TYPE))
        .and_then(Value::as_str)
        == Some(model::labels::RESOURCE_TYPE_TOPOLOGY)
}

/// The diff's kind for one of [`LATER_KINDS`].
fn observed_kind(kind: &Kind) -> Option<oracle::ObjectKind> {
    (*kind == kinds::TOPOLOGY).then_some(oracle::ObjectKind::Topology)
}

/// The model cluster a snapshot describes (its Nodes, Devices, Namespaces and InstanceTypes;
/// the checks' activity as listed), validated: what a read-only report about the cluster's
/// shape reads.
pub fn cluster_of(snapshot: &Snapshot, settings: &Settings) -> Result<model::Cluster, AuditError> {
    read_model(
        &load(snapshot)?,
        &snapshot.settings_with_checks(settings),
        &snapshot.source,
    )
}

/// The model's input read from the loaded objects (the twin's reader), validated.
fn read_model(
    loaded: &Loaded<'_>,
    settings: &Settings,
    source: &str,
) -> Result<model::Cluster, AuditError> {
    let cluster =
        read::cluster_from(settings, |kind| Ok(loaded.list(kind))).map_err(|e| match e {
            read::ReadError::Field {
                kind,
                name,
                field,
                message,
            } => AuditError::input(source, format!("{kind} {name}: {field}"), message),
            read::ReadError::List { kind, message } => {
                AuditError::input(source, kind.to_string(), message)
            }
        })?;
    model::derive::validate(&cluster)
        .map_err(|e| AuditError::input(source, "(cluster)", e.to_string()))?;
    Ok(cluster)
}

/// A snapshot's objects as the audit reads them: per audited kind, in the order a server lists
/// them (namespace, then name), borrowed from the snapshot; Namespaces inferred from the
/// LocalQueues when none were listed.
struct Loaded<'a> {
    /// The objects of each of [`AUDITED_KINDS`], at that kind's index.
    by_kind: Vec<Vec<Cow<'a, Listed<'a>>>>,
    namespaces: NamespaceSource,
    /// Namespaced objects whose namespace is not listed, as `Kind namespace/name`. A cluster
    /// lists kinds one after another: a namespace deleted between its listing and that of its
    /// LocalQueues (a run's teardown just before) leaves them listed without it. They go with
    /// their namespace; judging them would judge a deletion in flight (issue [M16]: back-to-back
    /// runs failed 7 of 10 audits on them).
    gone: Vec<String>,
}

impl<'a> Loaded<'a> {
    /// The objects of `kind` (none for a kind the audit does not read, e.g. Pods).
    fn list(&self, kind: &Kind) -> Vec<&Listed<'_>> {
        audited_index(kind)
            .map(|i| self.by_kind[i].iter().map(|o| o.as_ref()).collect())
            .unwrap_or_default()
    }

    /// Adds each listed Node whose labels are not its derived labels to `observed`, and its
    /// derived labels to `expected` (a derived Node not listed, to `expected` alone). A Node
    /// alike on both sides is no difference (`oracle::diff_objects` skips equal objects), so
    /// its label maps are not built: for a 4,000-node dump they were a third of the audit's
    /// allocations.
    fn observe_differing_nodes(
        &self,
        derived: &Derived,
        expected: &mut Observed,
        observed: &mut Observed,
    ) {
        let mut derived_nodes: BTreeMap<&str, &DerivedNode> =
            derived.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        for o in self.list(&kinds::NODE) {
            // every listed Node was read into the model's input already (`read_model`)
            let Ok(node) = o.node() else {
                observed.insert_listed(&kinds::NODE, &o.value());
                continue;
            };
            let derived_node = derived_nodes.remove(node.name());
            if derived_node.is_some_and(|n| same_labels(&n.labels, node.labels())) {
                continue;
            }
            observed.insert_node(node.name(), node.labels());
            if let Some(n) = derived_node {
                expected.insert_expected_node(n);
            }
        }
        for n in derived_nodes.into_values() {
            expected.insert_expected_node(n);
        }
    }

    /// Adds the operator's objects among them but the Nodes ([`Self::observe_differing_nodes`]),
    /// reduced as the client observes a cluster's.
    fn observe_besides_nodes(&self, out: &mut Observed) {
        for (kind, objects) in AUDITED_KINDS.iter().zip(&self.by_kind) {
            if *kind == kinds::NODE || !client::observes(kind) {
                continue;
            }
            for o in objects {
                out.insert_listed(kind, &o.value());
            }
        }
    }
}

/// The snapshot's objects by kind. A listed object was validated and defaulted by the server
/// that listed it (as `Store::restore` takes a mirrored one), so it is read as it is; an object
/// listed twice is malformed input.
fn load<'a>(snapshot: &'a Snapshot<'_>) -> Result<Loaded<'a>, AuditError> {
    let source = snapshot.source.as_str();
    let listed_names: BTreeSet<&str> = snapshot
        .items
        .iter()
        .filter(|(_, k, _)| *k == kinds::NAMESPACE)
        .map(|(_, _, o)| o.name())
        .collect();
    let mut by_kind: Vec<Vec<Keyed<'_>>> = vec![Vec::new(); AUDITED_KINDS.len()];
    let mut gone = Vec::new();
    for (i, kind, o) in &snapshot.items {
        let Some(k) = audited_index(kind) else {
            continue;
        };
        let name = o.name();
        let ns = if kind.namespaced { o.namespace() } else { "" };
        if kind.namespaced && !listed_names.is_empty() && !listed_names.contains(ns) {
            gone.push(format!("{} {ns}/{name}", kind.kind));
            continue;
        }
        by_kind[k].push((ns, name, *i, Cow::Borrowed(o)));
    }
    // inferred only when no Namespace is listed, so none of them is listed twice
    let namespaces = if listed_names.is_empty() {
        let named: BTreeSet<&str> = snapshot
            .items
            .iter()
            .filter(|(_, k, _)| *k == kinds::LOCAL_QUEUE)
            .map(|(_, _, o)| o.namespace())
            .collect();
        for ns in &named {
            let o = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let at = audited_index(&kinds::NAMESPACE).unwrap_or_default();
            by_kind[at].push(("", ns, 0, Cow::Owned(Listed::Parsed(o))));
        }
        NamespaceSource::FromLocalQueues(named.into_iter().map(str::to_string).collect())
    } else {
        NamespaceSource::Listed(listed_names.len())
    };
    for objects in &mut by_kind {
        objects.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
    }
    if let Some((kind, ns, name, first, i)) = listed_twice(&by_kind) {
        let id = if ns.is_empty() {
            name.to_string()
        } else {
            format!("{ns}/{name}")
        };
        return Err(AuditError::input(
            source,
            format!("items[{i}] ({name})"),
            format!("{} {id} is listed twice (also items[{first}])", kind.kind),
        ));
    }
    let by_kind = by_kind
        .into_iter()
        .map(|objects| objects.into_iter().map(|(_, _, _, o)| o).collect())
        .collect();
    Ok(Loaded {
        by_kind,
        namespaces,
        gone,
    })
}

/// A listed object with its namespace, name and index in the source's `items`.
type Keyed<'a> = (&'a str, &'a str, usize, Cow<'a, Listed<'a>>);

/// The object listed twice whose second listing comes first in the source, as (kind,
/// namespace, name, first item, second item); `by_kind` is sorted by namespace, name and item.
fn listed_twice<'a>(
    by_kind: &[Vec<Keyed<'a>>],
) -> Option<(&'static Kind, &'a str, &'a str, usize, usize)> {
    AUDITED_KINDS
        .iter()
        .zip(by_kind)
        .flat_map(|(kind, objects)| {
            objects
                .windows(2)
                .filter(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1))
                .map(move |w| (kind, w[0].0, w[0].1, w[0].2, w[1].2))
        })
        .min_by_key(|&(_, _, _, _, second)| second)
}

/// Where `kind` stands in [`AUDITED_KINDS`] (None: a kind the audit does not read).
fn audited_index(kind: &Kind) -> Option<usize> {
    AUDITED_KINDS.iter().position(|k| k == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_label_set_is_compared_as_a_json_object_reads() {
        let labels: Labels = [("a", "1"), ("b", "2")]
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let same = |listed: &[(&str, &str)]| same_labels(&labels, listed.iter().copied());
        assert!(
            same(&[("a", "1"), ("b", "2")]),
            "sorted, as a server lists it"
        );
        assert!(same(&[("b", "2"), ("a", "1")]), "any order");
        assert!(
            same(&[("a", "0"), ("b", "2"), ("a", "1")]),
            "a repeated key: its last value"
        );
        assert!(!same(&[("a", "1"), ("b", "2"), ("a", "0")]));
        assert!(!same(&[("a", "1")]), "one missing");
        assert!(!same(&[("a", "1"), ("b", "2"), ("c", "3")]), "one more");
        assert!(!same(&[("a", "1"), ("b", "3")]), "another value");
        assert!(same_labels(&Labels::new(), std::iter::empty()));
    }
}
