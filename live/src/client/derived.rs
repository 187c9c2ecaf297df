//! Removing what the operator derived from a run's mocks, after the mocks are gone. The
//! operator drops a pool's ResourceFlavors with their nodes, but an InstanceType it authored
//! from a node is never removed for lack of flavors (chain.md §8.4, §14 item 11), and it keeps
//! its ClusterQueue and LocalQueues alive. Like the e2e suite's cleanup (devices.md §2.4
//! "Cleanup order"), such InstanceTypes are deleted only once their flavors are gone (else the
//! operator re-authors them), and only those whose name carries the run's [`Token`]: they exist
//! because of the run's mocks and nothing else can be keyed by it.

use std::time::Duration;

use super::localize::Token;
use super::scoped::{describe, Scoped};
use super::{Client, ClientError};
use crate::crd::{ClusterQueue, InstanceType, LocalQueue, ResourceFlavor};

/// How often the wait for the operator's own clean-up looks again.
const LOOK_AGAIN: Duration = Duration::from_millis(200);

impl Client {
    /// Waits (at most `budget`) for the flavors keyed by `token` to go, deletes the
    /// InstanceTypes keyed by it, waits for their ClusterQueues and LocalQueues to go, and
    /// returns what is still there (empty: clean).
    pub async fn remove_derived(
        &self,
        token: &Token,
        budget: Duration,
    ) -> Result<Vec<String>, ClientError> {
        let deadline = super::deadline::deadline_after(budget);
        self.until_gone::<ResourceFlavor>(token, deadline).await?;
        for name in self.keyed::<InstanceType>(token).await? {
            self.delete::<InstanceType>(None, &name).await?;
        }
        self.until_gone::<InstanceType>(token, deadline).await?;
        self.until_gone::<ClusterQueue>(token, deadline).await?;
        self.until_gone::<LocalQueue>(token, deadline).await?;
        let mut left = Vec::new();
        left.extend(self.described::<ResourceFlavor>(token).await?);
        left.extend(self.described::<InstanceType>(token).await?);
        left.extend(self.described::<ClusterQueue>(token).await?);
        left.extend(self.described::<LocalQueue>(token).await?);
        Ok(left)
    }

    /// Names of the `K`s keyed by `token`: whose name carries it, or for LocalQueues
    /// (`namespace/name`) whose ClusterQueue does (a run's namespaces also hold the entrances
    /// of the cluster's own pools; they go with the namespace).
    async fn keyed<K: Scoped>(&self, token: &Token) -> Result<Vec<String>, ClientError> {
        Ok(self
            .list::<K>(None, None)
            .await?
            .iter()
            .filter_map(|o| {
                let name = o.meta().name.clone().unwrap_or_default();
                match o.meta().namespace.as_deref() {
                    Some(ns) => token
                        .fronts(&serde_json::to_value(o).unwrap_or_default())
                        .then(|| format!("{ns}/{name}")),
                    None => token.marks(&name).then_some(name),
                }
            })
            .collect())
    }

    async fn described<K: Scoped>(&self, token: &Token) -> Result<Vec<String>, ClientError> {
        Ok(self
            .keyed::<K>(token)
            .await?
            .iter()
            .map(|id| describe(&K::kind(&()), None, id))
            .collect())
    }

    /// Polls until no `K` is keyed by `token` or the deadline passes (what remains is
    /// reported by the caller, not an error here).
    async fn until_gone<K: Scoped>(
        &self,
        token: &Token,
        deadline: tokio::time::Instant,
    ) -> Result<(), ClientError> {
        while !self.keyed::<K>(token).await?.is_empty() {
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(LOOK_AGAIN).await;
        }
        Ok(())
    }
}
