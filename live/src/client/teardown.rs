//! Removing exactly what a run created: every object carrying its run label, kind by kind
//! (dependents first), finalizers the mock put on deleting objects removed; then a check
//! that nothing with the label remains. Derived objects carry no run label and are the
//! operator's to remove.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::json;

use super::scoped::Scoped;
use super::{Client, ClientError, RunId};
use crate::crd::{Devices, InstanceType, NodeFeature, Workload};

/// What a teardown did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Teardown {
    /// `Kind namespace/name` of each object deleted.
    pub deleted: Vec<String>,
    /// Objects with the run label still present afterwards (should be none).
    pub leftovers: Vec<String>,
}

impl Client {
    /// Deletes everything labelled with `run`, then lists again for leftovers.
    pub async fn teardown(&self, run: &RunId) -> Result<Teardown, ClientError> {
        let mut report = Teardown::default();
        self.delete_mocks(run, &mut report).await?;
        self.delete_labelled::<Namespace>(run, &mut report).await?;
        report.leftovers = self.labelled(run).await?;
        Ok(report)
    }

    /// [`Client::teardown`] of a localized run on a shared cluster: the mocks, then what the
    /// operator derived from them ([`Client::remove_derived`]), and the run's Namespaces last,
    /// so a run killed half-way still carries its label (and so its token) for
    /// `verify cleanup`.
    pub async fn teardown_localized(
        &self,
        run: &RunId,
        token: &super::Token,
        budget: std::time::Duration,
    ) -> Result<Teardown, ClientError> {
        let mut report = Teardown::default();
        self.delete_mocks(run, &mut report).await?;
        let deadline = super::deadline::deadline_after(budget);
        let derived = self.remove_derived(token, budget).await?;
        self.delete_labelled::<Namespace>(run, &mut report).await?;
        // a cluster empties a deleted namespace before it goes
        loop {
            report.leftovers = self.labelled(run).await?;
            if report.leftovers.is_empty() || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        report.leftovers.extend(derived);
        Ok(report)
    }

    /// Every labelled mock but the Namespaces, dependents first.
    async fn delete_mocks(&self, run: &RunId, report: &mut Teardown) -> Result<(), ClientError> {
        // Workloads before what they were judged against, then the charging Pods
        // (research/devices.md §2.4 cleanup order)
        self.delete_labelled::<Workload>(run, report).await?;
        self.delete_labelled::<Pod>(run, report).await?;
        self.delete_labelled::<NodeFeature>(run, report).await?;
        self.delete_labelled::<Devices>(run, report).await?;
        self.delete_labelled::<InstanceType>(run, report).await?;
        self.delete_labelled::<Node>(run, report).await
    }

    /// `Kind namespace/name` of every object still labelled with `run`.
    pub async fn labelled(&self, run: &RunId) -> Result<Vec<String>, ClientError> {
        let mut out = Vec::new();
        self.names::<Workload>(run, &mut out).await?;
        self.names::<Pod>(run, &mut out).await?;
        self.names::<NodeFeature>(run, &mut out).await?;
        self.names::<Devices>(run, &mut out).await?;
        self.names::<InstanceType>(run, &mut out).await?;
        self.names::<Node>(run, &mut out).await?;
        self.names::<Namespace>(run, &mut out).await?;
        Ok(out)
    }

    async fn names<K: Scoped>(
        &self,
        run: &RunId,
        out: &mut Vec<String>,
    ) -> Result<(), ClientError> {
        for o in self.list::<K>(None, Some(&run.selector())).await? {
            out.push(super::scoped::describe(
                &K::kind(&()),
                o.meta().namespace.as_deref(),
                o.meta().name.as_deref().unwrap_or_default(),
            ));
        }
        Ok(())
    }

    async fn delete_labelled<K: Scoped>(
        &self,
        run: &RunId,
        report: &mut Teardown,
    ) -> Result<(), ClientError> {
        for o in self.list::<K>(None, Some(&run.selector())).await? {
            let ns = o.meta().namespace.clone();
            let name = o.meta().name.clone().unwrap_or_default();
            // only the mock's own finalizer is removed; another controller's stays
            let finalizers = o.meta().finalizers.clone().unwrap_or_default();
            if finalizers.iter().any(|f| f == MOCK_FINALIZER) {
                let rest: Vec<&String> =
                    finalizers.iter().filter(|f| *f != MOCK_FINALIZER).collect();
                self.merge::<K>(
                    ns.as_deref(),
                    &name,
                    &json!({"metadata": {"finalizers": rest}}),
                )
                .await?;
            }
            if o.meta().deletion_timestamp.is_none() {
                self.delete::<K>(ns.as_deref(), &name).await?;
            }
            report
                .deleted
                .push(super::scoped::describe(&K::kind(&()), ns.as_deref(), &name));
        }
        Ok(())
    }
}

/// The finalizer `wire::read::mock_objects` puts on objects it mocks as deleting.
const MOCK_FINALIZER: &str = "verify.gpustack.ai/mock";
