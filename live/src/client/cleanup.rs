//! `verify cleanup` (issue 7 "Tearing down"): removes what a killed run left behind, found by
//! its [`RUN_LABEL`], through the client's own teardown by label, then checks that nothing
//! with the label remains.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};

use super::scoped::Scoped;
use super::{Client, ClientError, RunId, Teardown, RUN_LABEL};
use crate::crd::{Devices, InstanceType, NodeFeature, Workload};

/// How long a cleanup waits for the operator to drop what a localized run's mocks derived.
const CLEANUP_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);

/// Which runs to clean up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runs {
    One(RunId),
    /// Every run that left an object labelled [`RUN_LABEL`].
    All,
}

/// What a cleanup did, run by run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cleanup {
    pub runs: Vec<(RunId, Teardown)>,
}

impl Cleanup {
    /// Objects still labelled after the teardowns (should be none).
    pub fn leftovers(&self) -> Vec<&String> {
        self.runs.iter().flat_map(|(_, t)| &t.leftovers).collect()
    }

    /// One line per run, then the leftovers if any.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if self.runs.is_empty() {
            out.push_str(&format!(
                "no objects labelled {RUN_LABEL}: nothing to clean up\n"
            ));
        }
        for (run, t) in &self.runs {
            out.push_str(&format!(
                "run {}: deleted {} object(s), {} left\n",
                run.as_str(),
                t.deleted.len(),
                t.leftovers.len()
            ));
            for l in &t.leftovers {
                out.push_str(&format!("  LEFTOVER {l}\n"));
            }
        }
        out
    }
}

impl Client {
    /// Tears down `runs` (each by its label) and reports what is left.
    pub async fn cleanup(&self, runs: &Runs) -> Result<Cleanup, ClientError> {
        let ids = match runs {
            // a live run labels each attempt `<run>.<token>`
            Runs::One(run) => {
                let prefix = format!("{}.", run.as_str());
                let mut ids = vec![run.clone()];
                ids.extend(
                    self.run_ids()
                        .await?
                        .iter()
                        .filter(|id| id.starts_with(&prefix))
                        .filter_map(|id| RunId::new(id).ok()),
                );
                ids
            }
            Runs::All => self
                .run_ids()
                .await?
                .iter()
                .filter_map(|id| RunId::new(id).ok())
                .collect(),
        };
        let mut out = Cleanup::default();
        for run in ids {
            let t = match super::Token::of_run(run.as_str()) {
                Some(token) => {
                    self.teardown_localized(&run, &token, CLEANUP_BUDGET)
                        .await?
                }
                None => self.teardown(&run).await?,
            };
            out.runs.push((run, t));
        }
        Ok(out)
    }

    /// The values of [`RUN_LABEL`] on the kinds a run creates (those teardown deletes).
    pub async fn run_ids(&self) -> Result<BTreeSet<String>, ClientError> {
        let mut ids = BTreeSet::new();
        self.run_ids_of::<Workload>(&mut ids).await?;
        self.run_ids_of::<Pod>(&mut ids).await?;
        self.run_ids_of::<NodeFeature>(&mut ids).await?;
        self.run_ids_of::<Devices>(&mut ids).await?;
        self.run_ids_of::<InstanceType>(&mut ids).await?;
        self.run_ids_of::<Node>(&mut ids).await?;
        self.run_ids_of::<Namespace>(&mut ids).await?;
        Ok(ids)
    }

    async fn run_ids_of<K: Scoped>(&self, ids: &mut BTreeSet<String>) -> Result<(), ClientError> {
        for o in self.list::<K>(None, Some(RUN_LABEL)).await? {
            if let Some(v) = o.meta().labels.as_ref().and_then(|l| l.get(RUN_LABEL)) {
                ids.insert(v.clone());
            }
        }
        Ok(())
    }
}
