//! Waiting for the operator to finish, by watching (never by sleeping): the run's own objects
//! (by run label) and every derived object (ResourceFlavors, InstanceTypes, ClusterQueues,
//! LocalQueues) must stop changing for a window, and every object that reports
//! `status.observedGeneration` must have caught up with its `metadata.generation`. A budget
//! bounds the wait; running out of it is [`Quiescence::Inconclusive`], a value.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::time::Duration;

use futures::stream::{select_all, Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::Value;
use tokio::time::Instant;

use super::localize::Token;
use super::scoped::Scoped;
use super::{Client, RunId};
use crate::crd::{ClusterQueue, Devices, InstanceType, LocalQueue, NodeFeature, ResourceFlavor};

/// How a wait ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Quiescence {
    /// Nothing changed for the window; `changes` events were seen while waiting.
    Quiet { changes: u64 },
    /// The budget ran out first (exit 3 territory, not a failure).
    Inconclusive { reason: String },
}

/// One watch event, reduced to what quiescence needs.
enum Change {
    /// An object was added, changed or deleted; `settled` is its generation check.
    Object { key: String, settled: bool },
    /// An object outside the run's pools changed (a live cluster's own traffic).
    Elsewhere,
    /// A watcher finished its initial list.
    Listed,
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

fn changes<K: Scoped>(client: &Client, selector: Option<&str>, scope: Option<&Token>) -> Changes {
    let mut config = watcher::Config::default();
    if let Some(s) = selector {
        config = config.labels(s);
    }
    let kind = K::kind(&()).to_string();
    let api = K::api(client.kube().clone(), None);
    let scope = scope.cloned();
    let object = move |o: &K| {
        let v = serde_json::to_value(o).unwrap_or(Value::Null);
        let name = crate::twin::read::name_of(&v);
        let key = match v.pointer("/metadata/namespace").and_then(Value::as_str) {
            Some(ns) => format!("{kind}/{ns}/{name}"),
            None => format!("{kind}/{name}"),
        };
        if scope.as_ref().is_some_and(|t| !t.marks(&key)) {
            return Change::Elsewhere;
        }
        Change::Object {
            settled: settled(&v),
            key,
        }
    };
    Box::pin(
        watcher::watcher(api, config)
            .default_backoff()
            .map(move |event| match event {
                Ok(Event::Apply(o) | Event::InitApply(o)) => object(&o),
                Ok(Event::Delete(o)) => match object(&o) {
                    Change::Object { key, .. } => Change::Object { key, settled: true },
                    other => other,
                },
                Ok(Event::InitDone) => Change::Listed,
                Ok(Event::Init) => Change::Broken,
                Err(_) => Change::Broken,
            }),
    )
}

/// The watches of one run, kept open across waits (one list + one watch per kind per run).
pub struct Quiescer {
    stream: Pin<Box<dyn Stream<Item = Change> + Send>>,
    /// Watchers that have not finished their first list.
    listing: usize,
    unsettled: BTreeSet<String>,
}

impl Quiescer {
    /// Watches `run`'s Nodes, Namespaces, NodeFeatures and Devices, and all derived objects.
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
        let own = run.selector();
        let own = Some(own.as_str());
        let streams = vec![
            changes::<Node>(client, own, None),
            changes::<Namespace>(client, own, None),
            changes::<NodeFeature>(client, own, None),
            changes::<Devices>(client, own, None),
            changes::<ResourceFlavor>(client, None, scope),
            changes::<InstanceType>(client, None, scope),
            changes::<ClusterQueue>(client, None, scope),
            changes::<LocalQueue>(client, None, scope),
        ];
        Quiescer {
            listing: streams.len(),
            stream: Box::pin(select_all(streams)),
            unsettled: BTreeSet::new(),
        }
    }

    /// Waits until nothing has changed for `window` (counted from this call or the last
    /// change) and every object is settled, or `budget` runs out.
    pub async fn wait(&mut self, window: Duration, budget: Duration) -> Quiescence {
        let deadline = Instant::now() + budget;
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
                Ok(Some(Change::Elsewhere)) => {}
                Ok(Some(change)) => {
                    last_change = Instant::now();
                    changes += 1;
                    match change {
                        Change::Object { key, settled } => {
                            if settled {
                                self.unsettled.remove(&key);
                            } else {
                                self.unsettled.insert(key);
                            }
                        }
                        Change::Listed => self.listing = self.listing.saturating_sub(1),
                        Change::Broken | Change::Elsewhere => {}
                    }
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
