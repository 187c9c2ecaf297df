//! The reference operator's input side: a model [`Cluster`] read from the twin's store (Nodes,
//! their `Devices`, Namespaces, existing InstanceTypes), and its inverse [`mock_objects`], which
//! writes a model cluster as the objects a mock kubelet, NFD and Device Manager would leave.
//! Field names follow the CRDs in shared/crds and research/devices.md §1.

use std::borrow::Cow;
use std::collections::BTreeMap;

use model::allocation::{hosted_slices, PodHolds};
use model::cluster::{
    Cluster, ExistingInstanceType, ForeignQueue, Namespace, Node, Settings, TopologySource,
};
use model::credits::parse_quantity;
use model::devices::{
    Capability, Card, CardTopology, DeviceGroup, Devices, Interface, Ledger, LinkState, Mode,
    Network, PartitionProfile, Placement, ProfileCount,
};
use model::labels::{Labels, DERIVED_FROM_NODE, RESOURCE_TYPE, RESOURCE_TYPE_INSTANCETYPES};
use model::objects::InstanceTypeSpec;
use model::units::UNITS_PER_CARD;
use serde::de::{IgnoredAny, MapAccess};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::doc::{
    self, DocError, LooseText, MemberNames, MemberWise, ObjectOrNothing, QuantityText, StringMap,
    Text,
};
use super::fields::at;
use super::kinds::{self, Kind};
use super::pod::{charging_pod, pod_holds};

/// The field manager the reference operator applies Node labels with; labels it owns are its
/// own output, so [`read_cluster`] leaves them out of the input.
pub const FIELD_MANAGER: &str = "gpustack-worker";

/// An object that cannot be read into the model, naming the object and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("{kind} {name}: {field}: {message}")]
    Field {
        kind: &'static str,
        name: String,
        field: String,
        message: String,
    },
    #[error("listing {kind}: {message}")]
    List { kind: &'static str, message: String },
}

impl ReadError {
    fn field(kind: &Kind, name: &str, field: &str, message: impl Into<String>) -> Self {
        ReadError::Field {
            kind: kind.kind,
            name: name.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// A listed object as the readers take it: a value (the twin's store, the client), or (an
/// audited dump's Node or Devices object) the typed parts its reader reads, read with the dump.
pub trait Listing {
    fn value(&self) -> Cow<'_, Value>;

    /// `metadata.name`, which a listing may know without parsing the object.
    fn name(&self) -> Cow<'_, str>;

    /// The object read as a Node's typed parts ([`NodeDoc`]), borrowing from the listing.
    fn node(&self) -> Result<Cow<'_, NodeDoc<'_>>, DocError>;

    /// The object read as a Devices object's typed parts ([`DevicesDoc`]).
    fn devices(&self) -> Result<Cow<'_, DevicesDoc<'_>>, DocError>;
}

impl Listing for Value {
    fn value(&self) -> Cow<'_, Value> {
        Cow::Borrowed(self)
    }

    fn node(&self) -> Result<Cow<'_, NodeDoc<'_>>, DocError> {
        doc::from_value(self).map(Cow::Owned)
    }

    fn devices(&self) -> Result<Cow<'_, DevicesDoc<'_>>, DocError> {
        doc::from_value(self).map(Cow::Owned)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(meta_str(self, "name"))
    }
}

impl<T: Listing + ?Sized> Listing for &T {
    fn value(&self) -> Cow<'_, Value> {
        (**self).value()
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }

    fn node(&self) -> Result<Cow<'_, NodeDoc<'_>>, DocError> {
        (**self).node()
    }

    fn devices(&self) -> Result<Cow<'_, DevicesDoc<'_>>, DocError> {
        (**self).devices()
    }
}

/// Reads the cluster shape from the objects `list` gives per kind (research/chain.md §17
/// inputs). Nodes and Namespaces come in `list`'s order; `settings` are the operator's flags.
/// Each Node is read with its Devices one at a time (a listing's values are never all needed
/// at once).
pub fn cluster_from<V: Listing>(
    settings: &Settings,
    mut list: impl FnMut(&Kind) -> Result<Vec<V>, ReadError>,
) -> Result<Cluster, ReadError> {
    let devices: BTreeMap<String, V> = list(&kinds::DEVICES)?
        .into_iter()
        .map(|o| (o.name().into_owned(), o))
        .collect();
    // the Pods bound to each node, whose allocation records the ledger rebuild counts
    // (admission.md §6.5 "Ledger rebuild": Pods listed by spec.nodeName)
    let mut pods: BTreeMap<String, Vec<PodHolds>> = BTreeMap::new();
    for (node, holds) in list(&kinds::POD)?
        .iter()
        .filter_map(|o| pod_holds(&o.value()))
    {
        pods.entry(node).or_default().push(holds);
    }
    let nodes = list(&kinds::NODE)?
        .iter()
        .map(|o| {
            let name = o.name();
            let devices = devices
                .get(name.as_ref())
                .map(|d| {
                    d.devices().map_err(|e| {
                        ReadError::field(&kinds::DEVICES, &d.name(), &e.path, e.message)
                    })
                })
                .transpose()?;
            let node = o
                .node()
                .map_err(|e| ReadError::field(&kinds::NODE, &name, &e.path, e.message))?;
            read_node(
                &node,
                devices.as_deref(),
                pods.get(name.as_ref()).map_or(&[], Vec::as_slice),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let namespaces = list(&kinds::NAMESPACE)?
        .iter()
        .map(|o| read_namespace(&o.value()))
        .collect();
    let instance_types = list(&kinds::INSTANCE_TYPE)?
        .iter()
        .map(|o| read_instance_type(&o.value()))
        .collect::<Result<Vec<_>, _>>()?;
    let foreign_queues = list(&kinds::CLUSTER_QUEUE)?
        .iter()
        .filter_map(|o| read_foreign_queue(&o.value()))
        .collect();
    let topology_sources = list(&kinds::TOPOLOGY_SOURCE)?
        .iter()
        .map(|o| read_topology_source(&o.value()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Cluster {
        nodes,
        namespaces,
        settings: settings.clone(),
        instance_types,
        foreign_queues,
        topology_sources,
    })
}

pub fn name_of(o: &Value) -> String {
    meta_text(o, "name")
}

/// `metadata.<key>` as text (absent or not a string: empty).
pub fn meta_text(o: &Value, key: &str) -> String {
    meta_str(o, key).to_string()
}

/// [`meta_text`], borrowed from `o`.
pub fn meta_str<'v>(o: &'v Value, key: &str) -> &'v str {
    o.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A string map at `pointer` (absent = empty); a non-string value is an error naming it.
fn string_map(kind: &Kind, o: &Value, pointer: &str, field: &str) -> Result<Labels, ReadError> {
    let Some(v) = at(o, pointer) else {
        return Ok(Labels::new());
    };
    if v.is_null() {
        return Ok(Labels::new());
    }
    let map = v
        .as_object()
        .ok_or_else(|| ReadError::field(kind, &name_of(o), field, "expected an object"))?;
    map.iter()
        .map(|(k, v)| {
            v.as_str().map(|s| (k.into(), s.into())).ok_or_else(|| {
                ReadError::field(
                    kind,
                    &name_of(o),
                    &format!("{field}.{k}"),
                    "expected a string",
                )
            })
        })
        .collect()
}

/// What [`read_node`] reads of a Node, and the audit's observed side its name and labels
/// (`client::observe`): one pass over a listed Node, its texts borrowed.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct NodeDoc<'a> {
    #[serde(borrow)]
    pub metadata: Option<NodeMeta<'a>>,
    #[serde(borrow)]
    status: Option<NodeStatus<'a>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeMeta<'a> {
    #[serde(borrow, default)]
    pub name: LooseText<'a>,
    #[serde(borrow)]
    pub labels: Option<StringMap<'a>>,
    #[serde(borrow)]
    annotations: Option<StringMap<'a>>,
    #[serde(borrow)]
    deletion_timestamp: Option<Text<'a>>,
    #[serde(borrow)]
    managed_fields: Option<Vec<ManagedFields<'a>>>,
}

/// One `metadata.managedFields` entry: who wrote it, how, and the labels it owns
/// (`fieldsV1.f:metadata.f:labels`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct ManagedFields<'a> {
    #[serde(borrow)]
    manager: Option<Text<'a>>,
    #[serde(borrow)]
    operation: Option<Text<'a>>,
    #[serde(borrow)]
    fields_v1: Option<OwnedMetadata<'a>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct OwnedMetadata<'a> {
    #[serde(borrow, rename = "f:metadata")]
    metadata: Option<OwnedLabels<'a>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct OwnedLabels<'a> {
    #[serde(borrow, rename = "f:labels")]
    labels: Option<MemberNames<'a>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct NodeStatus<'a> {
    #[serde(borrow)]
    capacity: Option<NodeCapacity<'a>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct NodeCapacity<'a> {
    #[serde(borrow)]
    cpu: Option<QuantityText<'a>>,
}

impl NodeDoc<'_> {
    /// `metadata.name` (absent or not a string: empty).
    pub fn name(&self) -> &str {
        self.metadata
            .as_ref()
            .and_then(|m| m.name.non_empty())
            .unwrap_or_default()
    }

    /// `metadata.labels`, in the listing's order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.metadata
            .iter()
            .flat_map(|m| &m.labels)
            .flat_map(StringMap::iter)
    }

    /// Label keys whose `Apply` ownership belongs to [`FIELD_MANAGER`] (`f:metadata.f:labels`).
    fn worker_owned_labels(&self) -> impl Iterator<Item = &str> {
        self.metadata
            .iter()
            .flat_map(|m| m.managed_fields.iter().flatten())
            .filter(|m| m.manager.as_ref().map(Text::as_str) == Some(FIELD_MANAGER))
            .filter(|m| m.operation.as_ref().map(Text::as_str) == Some("Apply"))
            .filter_map(|m| m.fields_v1.as_ref()?.metadata.as_ref()?.labels.as_ref())
            .flat_map(|labels| &labels.0)
            .filter_map(|k| k.as_str().strip_prefix("f:"))
    }
}

impl<'de: 'a, 'a> MemberWise<'de> for NodeDoc<'a> {
    /// `metadata` (nothing when it is not an object: the caller refuses the missing name) and
    /// `status`; the rest skipped.
    fn read_member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "metadata" => self.metadata = map.next_value::<ObjectOrNothing<_>>()?.0,
            "status" => self.status = map.next_value()?,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// A Node: NFD/kubelet labels (the worker's own left out), annotations, `status.capacity.cpu`
/// in millicores (absent = 0, not reported yet), deletionTimestamp → deleting; each card's
/// `allocatedSlices` from the allocation records of the Pods bound to it (`pods`), which the
/// Devices CRD cannot carry.
fn read_node(
    o: &NodeDoc<'_>,
    devices: Option<&DevicesDoc<'_>>,
    pods: &[PodHolds],
) -> Result<Node, ReadError> {
    let kind = &kinds::NODE;
    let name = o.name().to_string();
    let mut labels: Labels = o.labels().map(|(k, v)| (k.into(), v.into())).collect();
    for k in o.worker_owned_labels() {
        labels.remove(k);
    }
    let meta = o.metadata.as_ref();
    let annotations = meta
        .iter()
        .flat_map(|m| &m.annotations)
        .flat_map(StringMap::iter)
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    let cpu = o
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref()?.cpu.as_ref());
    let cpu_millis = match cpu {
        None => 0,
        Some(q) => cpu_text_millis(&q.0)
            .map_err(|e| ReadError::field(kind, &name, "status.capacity.cpu", e.to_string()))?,
    };
    let network = devices.map(DevicesDoc::network).unwrap_or_default();
    let mut devices = devices.map(DevicesDoc::devices).transpose()?;
    for group in devices.iter_mut().flat_map(|d| &mut d.groups) {
        for card in &mut group.cards {
            if let Some(ledger) = &mut card.ledger {
                ledger.allocated_slices = hosted_slices(pods, &group.id, &card.id);
            }
        }
    }
    Ok(Node {
        name,
        labels,
        annotations,
        cpu_millis,
        deleting: meta.is_some_and(|m| m.deletion_timestamp.is_some()),
        devices,
        network,
    })
}

/// A `cpu` quantity (a string or a number) in millicores.
pub(crate) fn cpu_millis(v: &Value) -> Result<u64, CpuQuantityError> {
    let text: QuantityText = doc::from_value(v).map_err(|_| CpuQuantityError::NotAQuantity)?;
    cpu_text_millis(&text.0)
}

fn cpu_text_millis(text: &str) -> Result<u64, CpuQuantityError> {
    let q = parse_quantity(text)?;
    u64::try_from(q.micro() / 1000).map_err(|_| CpuQuantityError::Negative(text.to_string()))
}

/// A `cpu` quantity that is no CPU count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuQuantityError {
    #[error("expected a quantity")]
    NotAQuantity,
    #[error(transparent)]
    Parse(#[from] model::ModelError),
    #[error("`{0}` is not a non-negative cpu count")]
    Negative(String),
}

fn read_namespace(o: &Value) -> Namespace {
    let terminating = o
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
        || o.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    Namespace {
        name: name_of(o),
        terminating,
    }
}

/// A ClusterQueue without the operator's `resource.gpustack.ai/type=instancetypes` mark (the
/// entrance reconciler still gives it LocalQueues; chain.md §11); None for the operator's own.
fn read_foreign_queue(o: &Value) -> Option<ForeignQueue> {
    let mark = o
        .pointer("/metadata/labels")
        .and_then(|l| l.get(RESOURCE_TYPE))
        .and_then(Value::as_str);
    if mark == Some(RESOURCE_TYPE_INSTANCETYPES) {
        return None;
    }
    Some(ForeignQueue {
        name: name_of(o),
        terminating: o
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null()),
    })
}

/// An existing InstanceType: derived ones carry `schedule.gpustack.ai/derived-from-node=true`
/// (node_flavor.go @187ec70, chain.md §8.4); the rest are the administrator's.
fn read_instance_type(o: &Value) -> Result<ExistingInstanceType, ReadError> {
    let kind = &kinds::INSTANCE_TYPE;
    let name = name_of(o);
    let spec: InstanceTypeSpec = match o.get("spec") {
        None | Some(Value::Null) => InstanceTypeSpec::default(),
        Some(s) => serde_json::from_value(s.clone())
            .map_err(|e| ReadError::field(kind, &name, "spec", e.to_string()))?,
    };
    let labels = string_map(kind, o, "/metadata/labels", "metadata.labels")?;
    Ok(ExistingInstanceType {
        name,
        spec,
        derived_from_node: labels.get(DERIVED_FROM_NODE).is_some_and(|v| v == "true"),
    })
}

/// A TopologySource as the node topology reconciler reads it: `spec.levels`,
/// `spec.nodeSelector.matchLabels`, and whether its Ready condition is True.
fn read_topology_source(o: &Value) -> Result<TopologySource, ReadError> {
    let kind = &kinds::TOPOLOGY_SOURCE;
    let name = name_of(o);
    let typed: crate::crd::TopologySource = serde_json::from_value(o.clone())
        .map_err(|e| ReadError::field(kind, &name, "spec", e.to_string()))?;
    let ready = typed
        .status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    Ok(TopologySource {
        name,
        levels: typed.spec.levels,
        node_selector: model::labels::of(
            typed
                .spec
                .node_selector
                .and_then(|s| s.match_labels)
                .into_iter()
                .flatten(),
        ),
        ready,
    })
}

/// A TopologySource object as an administrator writes it, with the Ready condition its
/// controller would set (api/worker/v1alpha1/topology_source.go).
pub fn topology_source_object(source: &TopologySource) -> Value {
    json!({
        "apiVersion": kinds::TOPOLOGY_SOURCE.api_version(), "kind": "TopologySource",
        "metadata": {"name": source.name},
        "spec": {"levels": source.levels, "nodeSelector": {"matchLabels": source.node_selector}},
        "status": {"conditions": [{
            "type": "Ready",
            "status": if source.ready { "True" } else { "False" },
            "reason": if source.ready { "Ready" } else { "NotReady" },
            "message": "",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
        }]},
    })
}

/// What [`read_devices`] and [`read_network`] read of a `Devices` object (research/devices.md
/// §1.2), in one pass, its texts borrowed: not its managed fields, about a third of a listed
/// one. A member absent or `null` reads as empty, 0 or false.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct DevicesDoc<'a> {
    #[serde(borrow)]
    metadata: Option<NameOnly<'a>>,
    #[serde(borrow)]
    spec: Option<DevicesSpec<'a>>,
    #[serde(borrow)]
    status: Option<DevicesStatus<'a>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct NameOnly<'a> {
    #[serde(borrow, default)]
    name: LooseText<'a>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct DevicesSpec<'a> {
    #[serde(borrow)]
    groups: Option<Vec<SpecGroup<'a>>>,
    interfaces: Option<Vec<Interface>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecGroup<'a> {
    #[serde(borrow)]
    manufacturer: Option<Text<'a>>,
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    name: Option<Text<'a>>,
    memory: Option<u64>,
    cores: Option<u32>,
    #[serde(borrow)]
    driver_version: Option<Text<'a>>,
    #[serde(borrow)]
    runtime_version: Option<Text<'a>>,
    #[serde(borrow)]
    compute_capability: Option<Text<'a>>,
    #[serde(borrow)]
    family: Option<Text<'a>>,
    #[serde(borrow)]
    accelerators: Option<Vec<SpecCard<'a>>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct SpecCard<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    index: Option<u32>,
    #[serde(borrow)]
    status: Option<CardStatus<'a>>,
    topology: Option<CardTopology>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct CardStatus<'a> {
    logical_sliced: Option<LogicalSliced>,
    #[serde(borrow)]
    physical_sliced: Option<PhysicalSliced<'a>>,
    unhealthy: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct LogicalSliced {
    count: Option<u32>,
    cores_percentage_overcommit: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct PhysicalSliced<'a> {
    count: Option<u32>,
    #[serde(borrow)]
    profiles: Option<Vec<ProfileDoc<'a>>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileDoc<'a> {
    #[serde(borrow)]
    name: Option<Text<'a>>,
    count: Option<u32>,
    memory_mib: Option<u64>,
    placements: Option<Vec<PlacementDoc>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct PlacementDoc {
    start: Option<u32>,
    length: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct DevicesStatus<'a> {
    #[serde(borrow)]
    groups: Option<Vec<StatusGroup<'a>>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct StatusGroup<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    manufacturer: Option<Text<'a>>,
    #[serde(borrow)]
    accelerators: Option<Vec<LedgerRow<'a>>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct LedgerRow<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    index: Option<u32>,
    mode: Option<u64>,
    remaining: Option<i64>,
    #[serde(borrow)]
    remaining_profiles: Option<Vec<ProfileCountDoc<'a>>>,
    #[serde(borrow)]
    allocated_profiles: Option<Vec<ProfileCountDoc<'a>>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct ProfileCountDoc<'a> {
    #[serde(borrow)]
    name: Option<Text<'a>>,
    count: Option<u32>,
}

impl<'de: 'a, 'a> MemberWise<'de> for DevicesDoc<'a> {
    /// `metadata` (nothing when it is not an object: the caller refuses the missing name),
    /// `spec` and `status`; the rest skipped.
    fn read_member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "metadata" => self.metadata = map.next_value::<ObjectOrNothing<_>>()?.0,
            "spec" => self.spec = map.next_value()?,
            "status" => self.status = map.next_value()?,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// An optional text as the model holds it, a `String` or a `model::labels::Text` (absent:
/// empty), copied once from the input.
fn text<T: for<'s> From<&'s str>>(t: &Option<Text<'_>>) -> T {
    T::from(t.as_ref().map_or("", |t| t.as_str()))
}

/// An optional list's items (absent: none).
fn items<T>(list: &Option<Vec<T>>) -> &[T] {
    list.as_deref().unwrap_or_default()
}

impl DevicesDoc<'_> {
    /// `metadata.name` (absent or not a string: empty).
    pub fn name(&self) -> &str {
        self.metadata
            .as_ref()
            .and_then(|m| m.name.non_empty())
            .unwrap_or_default()
    }

    fn spec_groups(&self) -> &[SpecGroup<'_>] {
        self.spec.as_ref().map_or(&[], |s| items(&s.groups))
    }

    /// `spec.groups[].accelerators[].status` → capability, `status.groups[].accelerators[]` →
    /// ledger, joined by group `(id, manufacturer)` and card id (research/devices.md §1.2). A
    /// status-only group or card is kept without the missing side. `remaining` is `omitempty`
    /// on the wire, so an absent one reads as 0; `allocatedSlices` is in no CRD revision
    /// (devices.md Open questions) and reads as 0 here ([`read_node`] counts it from the
    /// node's Pods).
    fn devices(&self) -> Result<Devices, ReadError> {
        let mut groups: Vec<DeviceGroup> = self.spec_groups().iter().map(spec_group).collect();
        let status = self.status.as_ref().map_or(&[][..], |s| items(&s.groups));
        for (g, wire) in status.iter().enumerate() {
            let id = text(&wire.id);
            let manufacturer = text(&wire.manufacturer);
            let gi = match groups
                .iter()
                .position(|x| x.id == id && x.manufacturer == manufacturer)
            {
                Some(i) => i,
                None => {
                    groups.push(DeviceGroup {
                        manufacturer,
                        id,
                        ..DeviceGroup::default()
                    });
                    groups.len() - 1
                }
            };
            for (c, row) in items(&wire.accelerators).iter().enumerate() {
                let card_id = text(&row.id);
                let ledger = ledger(row).map_err(|e| {
                    let field = format!("status.groups[{g}].accelerators[{c}].mode");
                    ReadError::field(&kinds::DEVICES, self.name(), &field, e.to_string())
                })?;
                let group = &mut groups[gi];
                match group.cards.iter_mut().find(|k| k.id == card_id) {
                    Some(card) => card.ledger = Some(ledger),
                    None => group.cards.push(Card {
                        id: card_id,
                        index: row.index.unwrap_or_default(),
                        capability: None,
                        ledger: Some(ledger),
                    }),
                }
            }
        }
        Ok(Devices { groups })
    }

    /// The NIC inventory and card topology (research/devices.md §1.2): `spec.interfaces[]` as
    /// the CRD spells it (`cpuAffinity`, `pciVendor`, `pciDevice` and `firstSeenTime` are not
    /// read), and each spec card's `topology` bus coordinates, NUMA and `fabric`, kept only
    /// when it says something (an all-empty topology, as the mock writes for a card the model
    /// gives none, reads as none).
    fn network(&self) -> Network {
        let mut network = Network::default();
        if let Some(spec) = &self.spec {
            network.interfaces = items(&spec.interfaces).to_vec();
        }
        for card in self
            .spec_groups()
            .iter()
            .flat_map(|g| items(&g.accelerators))
        {
            match &card.topology {
                Some(t) if *t != CardTopology::default() => {
                    network.topology.insert(text(&card.id), t.clone());
                }
                _ => {}
            }
        }
        network
    }
}

fn spec_group(wire: &SpecGroup<'_>) -> DeviceGroup {
    DeviceGroup {
        manufacturer: text(&wire.manufacturer),
        id: text(&wire.id),
        name: text(&wire.name),
        memory_mib: wire.memory.unwrap_or_default(),
        cores: wire.cores.unwrap_or_default(),
        driver_version: text(&wire.driver_version),
        runtime_version: text(&wire.runtime_version),
        compute_capability: text(&wire.compute_capability),
        family: text(&wire.family),
        cards: items(&wire.accelerators)
            .iter()
            .map(|acc| Card {
                id: text(&acc.id),
                index: acc.index.unwrap_or_default(),
                capability: Some(capability(acc.status.as_ref())),
                ledger: None,
            })
            .collect(),
    }
}

fn capability(status: Option<&CardStatus<'_>>) -> Capability {
    let logical = status.and_then(|s| s.logical_sliced.as_ref());
    let physical = status.and_then(|s| s.physical_sliced.as_ref());
    let profiles = physical.map_or(&[][..], |p| items(&p.profiles));
    Capability {
        logical_sliced_count: logical.and_then(|l| l.count).unwrap_or_default(),
        cores_percentage_overcommit: logical
            .and_then(|l| l.cores_percentage_overcommit)
            .unwrap_or_default(),
        physical_sliced_count: physical.and_then(|p| p.count).unwrap_or_default(),
        physical_profiles: profiles
            .iter()
            .map(|p| PartitionProfile {
                name: text(&p.name),
                count: p.count.unwrap_or_default(),
                // memoryMib is required on the wire; 0 stands for "not known" in the model
                memory_mib: p.memory_mib.filter(|m| *m > 0),
                placements: items(&p.placements)
                    .iter()
                    .map(|pl| Placement {
                        start: pl.start.unwrap_or_default(),
                        length: pl.length.unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect(),
        unhealthy: status.and_then(|s| s.unhealthy).unwrap_or_default(),
    }
}

fn ledger(row: &LedgerRow<'_>) -> Result<Ledger, model::ModelError> {
    let counts = |list: &Option<Vec<ProfileCountDoc<'_>>>| {
        items(list)
            .iter()
            .map(|p| ProfileCount {
                name: text(&p.name),
                count: p.count.unwrap_or_default(),
            })
            .collect()
    };
    Ok(Ledger {
        mode: Mode::from_wire(row.mode.unwrap_or_default())?,
        remaining_units: row.remaining.unwrap_or_default(),
        remaining_profiles: counts(&row.remaining_profiles),
        allocated_profiles: counts(&row.allocated_profiles),
        allocated_slices: 0,
    })
}

/// A `Devices` object's value read as [`DevicesDoc`], a refusal naming the object and field.
fn devices_doc(o: &Value) -> Result<DevicesDoc<'_>, ReadError> {
    doc::from_value(o)
        .map_err(|e| ReadError::field(&kinds::DEVICES, meta_str(o, "name"), &e.path, e.message))
}

/// A `Devices` object's cards ([`DevicesDoc`]).
pub fn read_devices(o: &Value) -> Result<Devices, ReadError> {
    devices_doc(o)?.devices()
}

/// A `Devices` object's NIC inventory and card topology ([`DevicesDoc`]).
pub fn read_network(o: &Value) -> Result<Network, ReadError> {
    Ok(devices_doc(o)?.network())
}

/// A kubelet's default `maxPods`: the `pods` a node advertises, which Kueue's TAS counts.
const KUBELET_MAX_PODS: &str = "110";

/// The time a mock kubelet stamps its Ready condition with (fixed: mocks are compared).
const MOCK_TIME: &str = "2025-01-01T00:00:00Z";

/// `status.allocatable` as a kubelet with the device plugins reports it: `cpu`, `pods`, and every
/// accelerator token and budget the node's cards advertise (`model::placement::node_advertised`),
/// which Kueue's TAS places Pods against.
fn node_allocatable_object(node: &model::cluster::Node, cpu: &Value) -> Value {
    let mut out = Map::new();
    out.insert("cpu".into(), cpu.clone());
    out.insert("pods".into(), json!(KUBELET_MAX_PODS));
    if let Some(devices) = &node.devices {
        for (k, v) in model::placement::node_advertised(devices) {
            out.insert(k, json!(v.to_string()));
        }
    }
    Value::Object(out)
}

/// The objects a mock kubelet/NFD/Device Manager would leave for `cluster` — the inverse of
/// [`read_cluster`]: a Node per node (labels, annotations, `status.capacity.cpu`), its Devices,
/// the charging Pod bound to it when its cards hold something (what the device plugin would
/// have recorded; in [`charging_namespace`]), a Namespace each, and each existing InstanceType.
/// A deleting node or namespace is written with a `deletionTimestamp` and a finalizer (the
/// store keeps it until the finalizer goes).
pub fn mock_objects(cluster: &Cluster) -> Vec<(Kind, Option<String>, Value)> {
    let mut out = Vec::new();
    let pod_namespace = charging_namespace(cluster);
    for ns in &cluster.namespaces {
        let mut o = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns.name}});
        if ns.terminating {
            mark_deleting(&mut o);
        }
        out.push((kinds::NAMESPACE, None, o));
    }
    for node in &cluster.nodes {
        let mut o = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": node.labels, "annotations": node.annotations},
            "status": {"capacity": {"cpu": format!("{}m", node.cpu_millis)}},
        });
        if node.cpu_millis % 1000 == 0 {
            o["status"]["capacity"]["cpu"] = json!((node.cpu_millis / 1000).to_string());
        }
        o["status"]["allocatable"] = node_allocatable_object(node, &o["status"]["capacity"]["cpu"]);
        o["status"]["conditions"] = json!([{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": MOCK_TIME, "lastTransitionTime": MOCK_TIME,
        }]);
        if node.deleting {
            mark_deleting(&mut o);
        }
        out.push((kinds::NODE, None, o));
        if let Some(devices) = &node.devices {
            out.push((
                kinds::DEVICES,
                None,
                devices_object(&node.name, devices, &node.network),
            ));
            let pod =
                pod_namespace.and_then(|ns| Some((ns, charging_pod(&node.name, ns, devices)?)));
            if let Some((ns, pod)) = pod {
                out.push((kinds::POD, Some(ns.to_string()), pod));
            }
        }
    }
    for q in &cluster.foreign_queues {
        let mut o = json!({
            "apiVersion": kinds::CLUSTER_QUEUE.api_version(), "kind": "ClusterQueue",
            "metadata": {"name": q.name}, "spec": {"namespaceSelector": {}},
        });
        if q.terminating {
            mark_deleting(&mut o);
        }
        out.push((kinds::CLUSTER_QUEUE, None, o));
    }
    for it in &cluster.instance_types {
        let mut labels = Map::new();
        if it.derived_from_node {
            labels.insert(DERIVED_FROM_NODE.into(), json!("true"));
        }
        out.push((
            kinds::INSTANCE_TYPE,
            None,
            json!({
                "apiVersion": kinds::INSTANCE_TYPE.api_version(), "kind": "InstanceType",
                "metadata": {"name": it.name, "labels": labels},
                "spec": it.spec,
            }),
        ));
    }
    for source in &cluster.topology_sources {
        out.push((kinds::TOPOLOGY_SOURCE, None, topology_source_object(source)));
    }
    out
}

/// Where charging Pods live: the system namespace, else the first other namespace, if any is
/// not terminating (a terminating one takes no new Pods). None: no namespace can hold them,
/// and the nodes' slots read as free.
pub fn charging_namespace(cluster: &Cluster) -> Option<&str> {
    let live = |n: &&Namespace| !n.terminating;
    let system = &cluster.settings.system_namespace;
    cluster
        .namespaces
        .iter()
        .filter(live)
        .find(|n| &n.name == system)
        .or_else(|| cluster.namespaces.iter().find(live))
        .map(|n| n.name.as_str())
}

fn mark_deleting(o: &mut Value) {
    o["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    o["metadata"]["finalizers"] = json!(["verify.gpustack.ai/mock"]);
}

/// One `Devices` object as the Device Manager writes it (research/devices.md §1.2): topology
/// fields the model does not carry are written empty; `network` gives the cards' topology and
/// `spec.interfaces` (an ongoing `failed` link gets a `firstSeenTime`, as the DM stamps one).
pub fn devices_object(node: &str, devices: &Devices, network: &Network) -> Value {
    let spec_groups: Vec<Value> = devices
        .groups
        .iter()
        .map(|g| {
            let accelerators: Vec<Value> = g
                .cards
                .iter()
                .filter_map(|c| {
                    let cap = c.capability.as_ref()?;
                    Some(spec_card(c, cap, network.card(&c.id)))
                })
                .collect();
            let mut o = json!({
                "id": g.id, "manufacturer": g.manufacturer, "name": g.name, "memory": g.memory_mib,
                "accelerators": accelerators,
            });
            for (key, value) in [
                ("driverVersion", &g.driver_version),
                ("runtimeVersion", &g.runtime_version),
                ("computeCapability", &g.compute_capability),
                ("family", &g.family),
            ] {
                if !value.is_empty() {
                    o[key] = json!(value);
                }
            }
            if g.cores > 0 {
                o["cores"] = json!(g.cores);
            }
            o
        })
        .collect();
    let status_groups: Vec<Value> = devices
        .groups
        .iter()
        .map(|g| {
            let rows: Vec<Value> = g
                .cards
                .iter()
                .filter_map(|c| c.ledger.as_ref().map(|l| ledger_row(c, l)))
                .collect();
            json!({"id": g.id, "manufacturer": g.manufacturer, "accelerators": rows})
        })
        .collect();
    let mut spec = json!({"groups": spec_groups});
    if !network.interfaces.is_empty() {
        spec["interfaces"] = interfaces_value(&network.interfaces);
    }
    json!({
        "apiVersion": kinds::DEVICES.api_version(), "kind": "Devices",
        "metadata": {"name": node},
        "spec": spec,
        "status": {"groups": status_groups},
    })
}

/// The time the mock says an ongoing link failure was first seen (the model has no clock).
const FIRST_SEEN: &str = "2026-01-01T00:00:00Z";

/// `spec.interfaces` in the CRD's spelling; `firstSeenTime` on each `failed` link (PF or VF).
fn interfaces_value(interfaces: &[Interface]) -> Value {
    let failed =
        |link: Option<&model::devices::Link>| link.is_some_and(|l| l.state == LinkState::Failed);
    let mut out = Vec::new();
    for iface in interfaces {
        let mut o = serde_json::to_value(iface).unwrap_or(Value::Null);
        if failed(iface.link.as_ref()) {
            o["link"]["firstSeenTime"] = json!(FIRST_SEEN);
        }
        for (j, vf) in iface.virtual_functions.iter().enumerate() {
            if failed(vf.link.as_ref()) {
                o["virtualFunctions"][j]["link"]["firstSeenTime"] = json!(FIRST_SEEN);
            }
        }
        out.push(o);
    }
    Value::Array(out)
}

/// A card's `topology`: every required field present (empty when unknown), switches and fabric
/// only when the model carries them.
fn topology_value(t: Option<&CardTopology>) -> Value {
    let t = t.cloned().unwrap_or_default();
    let mut o = json!({
        "pciBusId": t.pci_bus_id, "pciRootId": t.pci_root_id, "pciClass": "0302",
        "numaAffinity": t.numa_affinity, "cpuAffinity": "",
    });
    if !t.pci_switches.is_empty() {
        o["pciSwitches"] = json!(t.pci_switches);
    }
    if let Some(f) = &t.fabric {
        o["fabric"] = serde_json::to_value(f).unwrap_or(Value::Null);
    }
    o
}

fn spec_card(card: &Card, cap: &Capability, topology: Option<&CardTopology>) -> Value {
    let profiles: Vec<Value> = cap
        .physical_profiles
        .iter()
        .map(|p| {
            let mut o = json!({
                "name": p.name, "count": p.count, "memoryMib": p.memory_mib.unwrap_or(0),
                // not modelled: the mock derives them from the profile's own name and placements
                "computeSlices": compute_slices(&p.name),
                "memorySlices": p.placements.first().map_or(0, |pl| pl.length),
            });
            if !p.placements.is_empty() {
                o["placements"] = json!(p
                    .placements
                    .iter()
                    .map(|pl| json!({"start": pl.start, "length": pl.length}))
                    .collect::<Vec<_>>());
            }
            o
        })
        .collect();
    json!({
        "id": card.id, "index": card.index, "physicalIndexes": [card.index],
        "topology": topology_value(topology),
        "status": {
            "unhealthy": cap.unhealthy,
            "logicalSliced": {"count": cap.logical_sliced_count, "coresPercentageOvercommit": cap.cores_percentage_overcommit},
            "physicalSliced": {"count": cap.physical_sliced_count, "profiles": profiles},
        },
    })
}

/// `<n>g.…` → n (NVIDIA profile names); 0 when the name does not say.
fn compute_slices(profile: &str) -> u32 {
    profile
        .split_once('g')
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

fn ledger_row(card: &Card, l: &Ledger) -> Value {
    let mut o = json!({"id": card.id, "index": card.index, "mode": l.mode.wire()});
    let allocated = UNITS_PER_CARD - l.remaining_units;
    if allocated != 0 {
        o["allocated"] = json!(allocated);
    }
    if l.remaining_units != 0 {
        o["remaining"] = json!(l.remaining_units);
    }
    if !l.allocated_profiles.is_empty() {
        o["allocatedProfiles"] = json!(l.allocated_profiles);
    }
    if !l.remaining_profiles.is_empty() {
        o["remainingProfiles"] = json!(l.remaining_profiles);
    }
    o
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn cpu_capacity_reads_as_millicores() {
        assert_eq!(cpu_millis(&json!("16")), Ok(16_000));
        assert_eq!(cpu_millis(&json!("1500m")), Ok(1_500));
        assert_eq!(cpu_millis(&json!(4)), Ok(4_000));
        assert_eq!(cpu_millis(&json!(1.5)), Ok(1_500));
        assert!(cpu_millis(&json!("-1")).is_err());
        assert!(cpu_millis(&json!("many")).is_err());
        assert_eq!(
            cpu_millis(&json!(true)),
            Err(CpuQuantityError::NotAQuantity)
        );
    }

    /// A Node as a server lists it with `--show-managed-fields`: every member [`read_node`]
    /// reads set to something other than its default, beside members it does not read.
    pub(crate) fn listed_node() -> Value {
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n", "uid": "u-1", "resourceVersion": "7",
                "labels": {"kubernetes.io/hostname": "n", "gpustack.ai/managed": "true"},
                "annotations": {"nfd.node.kubernetes.io/feature-labels": "a,b"},
                "deletionTimestamp": "2026-12-01T00:00:00Z",
                "managedFields": [
                    {"manager": FIELD_MANAGER, "operation": "Apply", "apiVersion": "v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {
                         "f:labels": {"f:gpustack.ai/managed": {}},
                         "f:annotations": {"f:x": {}}}}},
                    {"manager": "kubelet", "operation": "Update",
                     "fieldsV1": {"f:status": {"f:conditions": {}}}}]},
            "status": {"capacity": {"cpu": "1500m", "memory": "64Gi"},
                "allocatable": {"cpu": "1"},
                "conditions": [{"type": "Ready", "status": "True"}]}})
    }

    /// `node` read as the twin reads a stored value and as the audit reads a dump's text.
    fn read_both_ways(node: &Value) -> [Result<Node, ReadError>; 2] {
        let read = |doc: Result<NodeDoc, DocError>| {
            let doc = doc.map_err(|e| ReadError::field(&kinds::NODE, "n", &e.path, e.message))?;
            read_node(&doc, None, &[])
        };
        let text = node.to_string();
        [read(doc::from_value(node)), read(doc::from_text(&text))]
    }

    #[test]
    fn a_node_reads_the_same_from_its_value_and_its_text() {
        let node = listed_node();
        let [whole, text] = read_both_ways(&node);
        let whole = whole.unwrap();
        assert_eq!(text.unwrap(), whole);
        assert_eq!((whole.cpu_millis, whole.deleting), (1_500, true));
        assert_eq!(
            whole.labels.get("gpustack.ai/managed"),
            None,
            "the worker's own label"
        );
        assert_eq!(whole.labels.len(), 1);
        assert_eq!(whole.annotations.len(), 1);
        // absent and null members read alike: nothing, 0, not deleting
        let bare = json!({"metadata": {"name": "n", "labels": null, "deletionTimestamp": null,
                                       "managedFields": null}, "status": null});
        for read in read_both_ways(&bare) {
            let read = read.unwrap();
            assert_eq!(
                (read.labels.len(), read.cpu_millis, read.deleting),
                (0, 0, false)
            );
        }
        // a refusal names the same field either way
        let mut bad = node.clone();
        bad["metadata"]["labels"]["kubernetes.io/hostname"] = json!(1);
        let [from_value, from_text] = read_both_ways(&bad);
        let e = from_value.unwrap_err();
        assert_eq!(from_text.unwrap_err(), e);
        assert!(
            e.to_string()
                .starts_with("Node n: metadata.labels.kubernetes.io/hostname: "),
            "{e}"
        );
        let mut bad = node;
        bad["status"]["capacity"]["cpu"] = json!("lots");
        let [from_value, from_text] = read_both_ways(&bad);
        let e = from_value.unwrap_err();
        assert_eq!(from_text.unwrap_err(), e);
        assert!(
            e.to_string().starts_with("Node n: status.capacity.cpu: "),
            "{e}"
        );
    }

    #[test]
    fn only_the_workers_applied_labels_are_its_own() {
        let node = json!({"metadata": {"name": "n", "managedFields": [
            {"manager": FIELD_MANAGER, "operation": "Apply",
             "fieldsV1": {"f:metadata": {"f:labels": {"f:gpustack.ai/managed": {}, "f:x/y": {}}}}},
            {"manager": "kubelet", "operation": "Apply",
             "fieldsV1": {"f:metadata": {"f:labels": {"f:kubernetes.io/os": {}}}}},
            {"manager": FIELD_MANAGER, "operation": "Update",
             "fieldsV1": {"f:metadata": {"f:labels": {"f:written/by-hand": {}}}}},
        ]}});
        let owned = |o: &Value| {
            let doc: NodeDoc = doc::from_value(o).unwrap();
            doc.worker_owned_labels()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(owned(&node), ["gpustack.ai/managed", "x/y"]);
        assert!(owned(&json!({"metadata": {}})).is_empty());
    }

    #[test]
    fn a_ledger_row_round_trips_and_an_unknown_mode_is_refused() {
        let card = Card {
            id: "GPU-0".into(),
            ..Card::default()
        };
        let ledger = Ledger {
            mode: Mode::Shared,
            remaining_units: 7 * 160_000,
            ..Ledger::default()
        };
        let row = ledger_row(&card, &ledger);
        assert_eq!(row["mode"], json!(2));
        assert_eq!(row["allocated"], json!(3 * 160_000));
        // the row in a status-only group of a Devices object
        let devices_with = |row: &Value| {
            let o = json!({"metadata": {"name": "n"},
                           "status": {"groups": [{"id": "g", "accelerators": [row]}]}});
            read_devices(&o).map(|d| d.groups[0].cards[0].ledger.clone())
        };
        assert_eq!(devices_with(&row), Ok(Some(ledger)));
        let bad = json!({"id": "GPU-0", "index": 0, "mode": 7});
        let err = devices_with(&bad).unwrap_err().to_string();
        assert!(
            err.starts_with("Devices n: status.groups[0].accelerators[0].mode: "),
            "{err}"
        );
        // remaining is omitempty: a fully used card has none on the wire
        let used = json!({"id": "GPU-0", "index": 0, "mode": 1, "allocated": 1_600_000});
        assert_eq!(
            devices_with(&used).map(|l| l.map(|l| l.remaining_units)),
            Ok(Some(0))
        );
    }

    #[test]
    fn compute_slices_come_from_the_profile_name() {
        assert_eq!(compute_slices("3g.20gb"), 3);
        assert_eq!(compute_slices("4g48gb"), 4);
        assert_eq!(compute_slices("big"), 0);
    }

    /// A node with NICs (devices.md §1.5 example C shape) and card topology with a fabric.
    /// A cluster with NICs, VFs and card topology (the operator's tests use it too).
    pub(crate) fn networked() -> Cluster {
        use model::devices::{Fabric, Link, VirtualFunction};
        let mut c = model::examples::walkthrough();
        let node = c.nodes.iter_mut().find(|n| n.devices.is_some()).unwrap();
        let ids: Vec<String> = node.cards().map(|c| c.id.clone()).collect();
        let ok = Some(Link {
            state: LinkState::Ok,
            reason: String::new(),
        });
        node.network.interfaces = vec![
            Interface {
                name: "ens1f0".into(),
                bus: "pci".into(),
                pci_bus_id: "0000:17:00.0".into(),
                pci_root_id: "0000:16:00.0".into(),
                pci_switches: vec!["0000:16:02.0".into(), "0000:16:00.0".into()],
                numa_affinity: "0".into(),
                mtu: 4200,
                up: true,
                rdma: true,
                rdma_device: "mlx5_0".into(),
                link: ok.clone(),
                ..Interface::default()
            },
            Interface {
                name: "ens2f0".into(),
                bus: "pci".into(),
                pci_bus_id: "0000:b1:00.0".into(),
                pci_root_id: "0000:b0:00.0".into(),
                numa_affinity: "1".into(),
                up: true,
                rdma: true,
                rdma_device: "mlx5_1".into(),
                sriov: true,
                link: ok,
                virtual_functions: vec![VirtualFunction {
                    name: "ens2f0v0".into(),
                    pci_bus_id: "0000:b1:00.2".into(),
                    numa_affinity: "1".into(),
                    up: true,
                    rdma: true,
                    rdma_device: "mlx5_2".into(),
                    link: Some(Link {
                        state: LinkState::Failed,
                        reason: "port 1: state=DOWN".into(),
                    }),
                }],
                ..Interface::default()
            },
        ];
        for id in ids {
            node.network.topology.insert(
                id,
                CardTopology {
                    pci_bus_id: "0000:18:00.0".into(),
                    pci_root_id: "0000:16:00.0".into(),
                    pci_switches: vec!["0000:16:02.0".into(), "0000:16:00.0".into()],
                    numa_affinity: "0".into(),
                    fabric: Some(Fabric {
                        kind: "nvlink".into(),
                        id: "0123456789abcdef0123456789abcdef".into(),
                        clique_id: "0".into(),
                        ..Fabric::default()
                    }),
                },
            );
        }
        c
    }

    #[test]
    fn interfaces_and_card_topology_round_trip_in_the_crds_spelling() {
        let c = networked();
        let node = c.nodes.iter().find(|n| !n.network.is_empty()).unwrap();
        let o = devices_object(&node.name, node.devices.as_ref().unwrap(), &node.network);
        let spec = &o["spec"];
        assert_eq!(spec["interfaces"][0]["rdmaDevice"], json!("mlx5_0"));
        assert_eq!(
            spec["interfaces"][1]["virtualFunctions"][0]["link"]["state"],
            json!("failed")
        );
        assert!(spec["interfaces"][1]["virtualFunctions"][0]["link"]["firstSeenTime"].is_string());
        assert!(spec["interfaces"][0]["link"].get("firstSeenTime").is_none());
        assert!(spec["interfaces"][0].get("virtualFunctions").is_none());
        let topology = &spec["groups"][0]["accelerators"][0]["topology"];
        assert_eq!(topology["fabric"]["cliqueId"], json!("0"));
        assert_eq!(read_network(&o), Ok(node.network.clone()));
    }

    /// `o` read as the twin reads a stored value and as the audit reads a dump's text.
    fn devices_both_ways(o: &Value) -> [Result<(Devices, Network), DocError>; 2] {
        let read = |doc: Result<DevicesDoc, DocError>| {
            let doc = doc?;
            let devices = doc.devices().map_err(|e| DocError {
                path: String::new(),
                message: e.to_string(),
            })?;
            Ok((devices, doc.network()))
        };
        let text = o.to_string();
        [read(doc::from_value(o)), read(doc::from_text(&text))]
    }

    #[test]
    fn a_devices_object_reads_the_same_from_its_value_and_its_text() {
        let c = networked();
        let node = c.nodes.iter().find(|n| !n.network.is_empty()).unwrap();
        let mut o = devices_object(&node.name, node.devices.as_ref().unwrap(), &node.network);
        o["metadata"]["managedFields"] = json!([{"manager": "m", "fieldsV1": {"f:spec": {}}}]);
        let [from_value, from_text] = devices_both_ways(&o);
        let mut want = node.devices.clone().unwrap();
        // allocatedSlices is not on the wire (read_node counts it from the Pods)
        for card in want.groups.iter_mut().flat_map(|g| &mut g.cards) {
            if let Some(l) = &mut card.ledger {
                l.allocated_slices = 0;
            }
        }
        assert_eq!(from_value, Ok((want, node.network.clone())));
        assert_eq!(from_text, from_value);
        // a refusal names the same field either way
        o["spec"]["groups"][0]["accelerators"][0]["index"] = json!("zero");
        let [from_value, from_text] = devices_both_ways(&o);
        let e = from_value.unwrap_err();
        assert_eq!(e.path, "spec.groups[0].accelerators[0].index");
        assert_eq!(from_text, Err(e));
        // absent and null members read as nothing
        let bare = json!({"metadata": {"name": "n"}, "spec": {"groups": null, "interfaces": null},
                          "status": null});
        for read in devices_both_ways(&bare) {
            assert_eq!(read, Ok((Devices::default(), Network::default())));
        }
    }

    #[test]
    fn the_typed_devices_crd_reads_the_interfaces_and_fabric() {
        let c = networked();
        let node = c.nodes.iter().find(|n| !n.network.is_empty()).unwrap();
        let o = devices_object(&node.name, node.devices.as_ref().unwrap(), &node.network);
        let typed: crate::crd::Devices = serde_json::from_value(o.clone()).unwrap();
        let interfaces = typed.spec.interfaces.clone().unwrap_or_default();
        assert_eq!(interfaces.len(), node.network.interfaces.len());
        let vfs = interfaces[1].virtual_functions.clone().unwrap_or_default();
        assert_eq!(
            vfs[0].link.as_ref().map(|l| l.state.as_str()),
            Some("failed")
        );
        let card = &typed.spec.groups[0].accelerators.as_ref().unwrap()[0];
        assert_eq!(
            card.topology.fabric.as_ref().map(|f| f.kind.as_str()),
            Some("nvlink")
        );
        // and writes back the same spec
        assert_eq!(serde_json::to_value(&typed.spec).unwrap(), o["spec"]);
    }

    #[test]
    fn a_bad_interface_names_its_field_path() {
        let o = json!({"metadata": {"name": "n"},
                       "spec": {"interfaces": [{"name": "a"}, {"name": "b", "link": {"state": "down"}}]}});
        let e = read_network(&o).unwrap_err().to_string();
        assert!(
            e.contains("spec.interfaces[1]") && e.contains("down"),
            "{e}"
        );
    }
}
