//! Waiting for the operator to finish, by watching (never by sleeping): the run's own objects
//! that others write (Nodes and Devices, by run label) and every derived object (ResourceFlavors, InstanceTypes, ClusterQueues,
//! LocalQueues) must stop changing for a window, and every object that reports
//! `status.observedGeneration` must have caught up with its `metadata.generation`. A budget
//! bounds the wait; running out of it is [`Quiescence::Inconclusive`], a value.

use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::time::Duration;

use futures::stream::{select_all, Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::Value;
use tokio::time::Instant;

use super::localize::Token;
use super::scoped::Scoped;
use super::{Client, Observed, RunId};
use crate::crd::{ClusterQueue, Devices, InstanceType, LocalQueue, ResourceFlavor, Topology};
use crate::wire::kinds::{self, Kind};

/// How a wait ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Quiescence {
    /// Nothing changed for the window; `changes` events were seen while waiting.
    Quiet { changes: u64 },
    /// The budget ran out first (exit 3 territory, not a failure).
    Inconclusive { reason: String },
}

/// One watch event of stream `stream`, reduced to what quiescence and the cache need.
struct Change {
    stream: usize,
    what: What,
}

enum What {
    /// An object was added or changed (`object`) or deleted (`None`); `settled` is its
    /// generation check.
    Object {
        key: String,
        settled: bool,
        object: Option<Value>,
    },
    /// An object outside the run's pools changed (a live cluster's own traffic).
    Elsewhere,
    /// A (re-)list began: its objects replace the stream's when it is done.
    Relisting,
    /// One object of a (re-)list.
    Listed {
        key: String,
        object: Value,
        settled: bool,
    },
    /// A (re-)list finished.
    ListDone,
    /// The watch broke (it re-lists by itself after a backoff).
    Broken,
}

type Changes = Pin<Box<dyn Stream<Item = Change> + Send>>;

/// Whether `status.observedGeneration` (where the object reports one) has reached
/// `metadata.generation`.
pub fn settled(object: &Value) -> bool {
    match (
        object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64),
        object
            .pointer("/status/observedGeneration")
            .and_then(Value::as_i64),
    ) {
        (Some(generation), Some(observed)) => observed >= generation,
        _ => true,
    }
}

fn changes<K: Scoped>(
    client: &Client,
    stream: usize,
    selector: Option<&str>,
    scope: Option<&Token>,
) -> Changes {
    let mut config = watcher::Config::default();
    if let Some(s) = selector {
        config = config.labels(s);
    }
    let kind = K::kind(&()).to_string();
    let api = K::api(client.kube().clone(), None);
    let scope = scope.cloned();
    // (key, settled, object), or `None` outside the run's pools
    let object = move |o: &K| {
        let v = serde_json::to_value(o).unwrap_or(Value::Null);
        let name = crate::wire::read::name_of(&v);
        let key = match v.pointer("/metadata/namespace").and_then(Value::as_str) {
            Some(ns) => format!("{kind}/{ns}/{name}"),
            None => format!("{kind}/{name}"),
        };
        if scope.as_ref().is_some_and(|t| !t.marks(&key)) {
            return None;
        }
        Some((key, settled(&v), v))
    };
    Box::pin(
        watcher::watcher(api, config)
            .default_backoff()
            .map(move |event| {
                let what = match event {
                    Ok(Event::Apply(o)) => match object(&o) {
                        Some((key, settled, v)) => What::Object {
                            key,
                            settled,
                            object: Some(v),
                        },
                        None => What::Elsewhere,
                    },
                    Ok(Event::Delete(o)) => match object(&o) {
                        Some((key, _, _)) => What::Object {
                            key,
                            settled: true,
                            object: None,
                        },
                        None => What::Elsewhere,
                    },
                    Ok(Event::InitApply(o)) => match object(&o) {
                        Some((key, settled, object)) => What::Listed {
                            key,
                            object,
                            settled,
                        },
                        None => What::Elsewhere,
                    },
                    Ok(Event::Init) => What::Relisting,
                    Ok(Event::InitDone) => What::ListDone,
                    Err(_) => What::Broken,
                };
                Change { stream, what }
            }),
    )
}

/// The watches of one run, kept open across waits (one list + one watch per kind per run).
/// What they deliver is also kept, so the objects are read from the watches
/// ([`Quiescer::observed`]) instead of listed again after every write step.
pub struct Quiescer {
    stream: Pin<Box<dyn Stream<Item = Change> + Send>>,
    /// Watchers that have not finished their first list.
    listing: usize,
    unsettled: BTreeSet<String>,
    /// Each stream's objects by key, as the watch last delivered them.
    cache: Vec<BTreeMap<String, Value>>,
    /// The run's label selector, which the first [`OWN_STREAMS`] streams list by.
    run_selector: String,
    /// Each stream's (re-)list in progress.
    relist: Vec<Option<BTreeMap<String, Value>>>,
    /// Whether each stream finished its first list.
    listed_once: Vec<bool>,
}

/// The kind of each watched stream, in [`Quiescer::watching`]'s order. Of the run's own
/// objects only those something else writes are watched: Nodes (NFD's master and the worker
/// label them) and Devices (the node-devices check rebuilds their ledger, admission.md §6.5);
/// nothing but the run writes its NodeFeatures, and what a Namespace changes shows in its
/// LocalQueues.
pub(crate) const STREAM_KINDS: [Kind; 7] = [
    kinds::NODE,
    kinds::DEVICES,
    kinds::RESOURCE_FLAVOR,
    kinds::INSTANCE_TYPE,
    kinds::CLUSTER_QUEUE,
    kinds::LOCAL_QUEUE,
    kinds::TOPOLOGY,
];

/// How many of [`STREAM_KINDS`], from the first, are the run's own objects (Nodes, Devices),
/// watched through the run's label selector; the rest are watched whole.
const OWN_STREAMS: usize = 2;

impl Quiescer {
    /// Watches `run`'s Nodes and Devices, and all derived objects.
    pub fn new(client: &Client, run: &RunId) -> Quiescer {
        Quiescer::watching(client, run, None)
    }

    /// [`Quiescer::new`] on a shared cluster: derived objects count only when they belong to
    /// the pools `token` keys (name or namespace carries it), so other tenants' traffic
    /// neither delays nor resets the wait.
    pub fn scoped(client: &Client, run: &RunId, token: &Token) -> Quiescer {
        Quiescer::watching(client, run, Some(token))
    }

    fn watching(client: &Client, run: &RunId, scope: Option<&Token>) -> Quiescer {
        let run_selector = run.selector();
        let own = Some(run_selector.as_str());
        let streams = vec![
            changes::<Node>(client, 0, own, None),
            changes::<Devices>(client, 1, own, None),
            changes::<ResourceFlavor>(client, 2, None, scope),
            changes::<InstanceType>(client, 3, None, scope),
            changes::<ClusterQueue>(client, 4, None, scope),
            changes::<LocalQueue>(client, 5, None, scope),
            changes::<Topology>(client, 6, None, scope),
        ];
        Quiescer {
            listing: streams.len(),
            stream: Box::pin(select_all(streams)),
            unsettled: BTreeSet::new(),
            cache: vec![BTreeMap::new(); STREAM_KINDS.len()],
            run_selector,
            relist: vec![None; STREAM_KINDS.len()],
            listed_once: vec![false; STREAM_KINDS.len()],
        }
    }

    /// The objects the watches hold, as [`Client::observe`] would list them (the run's Nodes
    /// and every derived object in scope): at quiescence, what a list would return.
    pub fn observed(&self) -> Observed {
        let mut out = Observed::default();
        for (kind, objects) in STREAM_KINDS.iter().zip(&self.cache) {
            for object in objects.values() {
                out.insert(kind, object);
            }
        }
        out
    }

    /// Each watched kind, the label selector its watch lists by, and the resourceVersion of
    /// every object the watch holds (by name, and namespace where it has one): what a caller
    /// that can read the server's state directly compares to tell the watches caught up.
    pub fn holdings(&self) -> Vec<(Kind, Option<&str>, Versions)> {
        STREAM_KINDS
            .iter()
            .zip(&self.cache)
            .enumerate()
            .map(|(i, (kind, objects))| {
                let selector = (i < OWN_STREAMS).then_some(self.run_selector.as_str());
                let versions = objects.values().map(place_and_version).collect();
                (*kind, selector, versions)
            })
            .collect()
    }

    /// Takes in the next change the watches deliver before `until`; false when none came.
    pub async fn take_change(&mut self, until: Instant) -> bool {
        match tokio::time::timeout_at(until, self.stream.next()).await {
            Ok(Some(change)) => {
                self.record(change);
                true
            }
            Ok(None) | Err(_) => false,
        }
    }

    /// Keeps the cache and the unsettled set up to date with one change.
    fn record(&mut self, change: Change) {
        let Change { stream, what } = change;
        match what {
            What::Object {
                key,
                settled,
                object,
            } => {
                if settled {
                    self.unsettled.remove(&key);
                } else {
                    self.unsettled.insert(key.clone());
                }
                match object {
                    Some(o) => self.cache[stream].insert(key, o),
                    None => self.cache[stream].remove(&key),
                };
            }
            What::Relisting => self.relist[stream] = Some(BTreeMap::new()),
            What::Listed {
                key,
                object,
                settled,
            } => {
                if !settled {
                    self.unsettled.insert(key.clone());
                }
                if let Some(buffer) = self.relist[stream].as_mut() {
                    buffer.insert(key, object);
                }
            }
            What::ListDone => {
                if let Some(listed) = self.relist[stream].take() {
                    // what the re-list did not return is gone
                    for key in self.cache[stream].keys() {
                        if !listed.contains_key(key) {
                            self.unsettled.remove(key);
                        }
                    }
                    self.cache[stream] = listed;
                }
                if self.listing > 0 && !self.listed_once[stream] {
                    self.listing -= 1;
                }
                self.listed_once[stream] = true;
            }
            What::Broken | What::Elsewhere => {}
        }
    }

    /// Waits until nothing has changed for `window` (counted from this call or the last
    /// change) and every object is settled, or `budget` runs out.
    pub async fn wait(&mut self, window: Duration, budget: Duration) -> Quiescence {
        let deadline = super::deadline::deadline_after(budget);
        let mut last_change = Instant::now();
        let mut changes = 0;
        loop {
            let now = Instant::now();
            let ready = self.listing == 0 && self.unsettled.is_empty();
            if ready && now >= last_change + window {
                return Quiescence::Quiet { changes };
            }
            if now >= deadline {
                return Quiescence::Inconclusive {
                    reason: self.why_not_quiet(budget),
                };
            }
            let wake = if ready {
                (last_change + window).min(deadline)
            } else {
                deadline
            };
            match tokio::time::timeout_at(wake, self.stream.next()).await {
                Err(_) => {}
                Ok(None) => {
                    return Quiescence::Inconclusive {
                        reason: "the watches ended".into(),
                    }
                }
                Ok(Some(Change {
                    what: What::Elsewhere,
                    ..
                })) => {}
                Ok(Some(change)) => {
                    last_change = Instant::now();
                    changes += 1;
                    self.record(change);
                }
            }
        }
    }

    fn why_not_quiet(&self, budget: Duration) -> String {
        let mut why = format!("no quiescence within {budget:?}");
        if self.listing > 0 {
            why.push_str(&format!(
                "; {} watch(es) never finished listing",
                self.listing
            ));
        }
        if !self.unsettled.is_empty() {
            let some: Vec<&str> = self.unsettled.iter().take(5).map(String::as_str).collect();
            why.push_str(&format!(
                "; observedGeneration behind generation on {}",
                some.join(", ")
            ));
        } else if self.listing == 0 {
            why.push_str("; objects kept changing");
        }
        why
    }
}

/// The resourceVersion of each object a watch holds, by `(namespace, name)`.
pub type Versions = BTreeMap<(String, String), String>;

/// `((namespace, name), resourceVersion)` of an object as served.
pub fn place_and_version(o: &Value) -> ((String, String), String) {
    use crate::wire::read::meta_text;
    (
        (meta_text(o, "namespace"), meta_text(o, "name")),
        meta_text(o, "resourceVersion"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_is_settled_once_its_observed_generation_catches_up() {
        assert!(settled(&json!({"metadata": {"generation": 2}})));
        assert!(!settled(
            &json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 1}})
        ));
        assert!(settled(
            &json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 2}})
        ));
    }
}
