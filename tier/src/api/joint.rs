//! A scenario's Workloads kept on the embedded twin and read back at given steps (the locked
//! cases' `joint` expectations).

use live::client::{self, RunId};
use model::events::{Event, World};
use model::mutants::Mutant;
use model::scenario::Scenario;

use super::{ApiError, ApiTarget};

impl ApiTarget {
    /// Replays `s` on a fresh embedded twin with its Workloads kept, as a cluster keeps them
    /// (the gate-3 read-back of [`ApiTarget::judge`] withdraws each one): every Submit is
    /// created on its LocalQueue (one already there stands: Kueue requeues it itself), every
    /// Finish deletes it, a `JointTimeout` moves the twin's clock past the joint check's bound,
    /// the shape's own events are synced as the model's shape moves; after each event, once
    /// the operator has reconciled it, the Workloads named in `reads` for that step (`step`
    /// as the scenario's expectations count them: 0 before any event, k after k events) are
    /// read back. Returns each read's object (`None`: no such Workload, or a step after an
    /// awareness flip, which the operator's fixed flags cannot follow). The twin's operator
    /// runs `mutant`, if any. Embedded twin only.
    pub fn workloads_at_steps(
        &self,
        s: &Scenario,
        mutant: Option<Mutant>,
        reads: &[(usize, String)],
    ) -> Result<Vec<Option<serde_json::Value>>, ApiError> {
        let run = RunId::new("verify-case-joint")?;
        let operator = self.fresh_operator(s, mutant)?;
        let outcome = self
            .runtime
            .block_on(self.keep_workloads(s, &run, reads, &operator));
        operator.stop();
        outcome
    }

    async fn keep_workloads(
        &self,
        s: &Scenario,
        run: &RunId,
        reads: &[(usize, String)],
        operator: &live::operator::OperatorHandle,
    ) -> Result<Vec<Option<serde_json::Value>>, ApiError> {
        use live::crd::Workload as WireWorkload;
        let client = &self.client;
        let cluster = client::mocked_cluster_keeping(&s.cluster, run, client.kept_nodes());
        // the shape alone: Workloads live on the twin, so no charge is mirrored into a ledger
        let mut shape = World::new(cluster.clone());
        client.mock(&cluster, run).await?;
        let mut found = vec![None; reads.len()];
        for step in 0..=s.events.len() {
            if step > 0 {
                let before = shape.cluster().clone();
                match &s.events[step - 1] {
                    Event::AwarenessFlip => break,
                    Event::Submit { workload } => {
                        let mut object = live::wire::workload::workload_object(workload);
                        object["metadata"]["labels"] =
                            serde_json::json!({ client::RUN_LABEL: run.as_str() });
                        let ns = Some(workload.namespace.as_str());
                        match client.create::<WireWorkload>(ns, object).await {
                            Err(e) if !client::retry::already_exists(&e) => return Err(e.into()),
                            _ => {}
                        }
                    }
                    Event::Finish { namespace, name } => {
                        client.delete::<WireWorkload>(Some(namespace), name).await?
                    }
                    timeout @ Event::JointTimeout { .. } => {
                        self.pass_time(timeout).await?;
                    }
                    other => {
                        shape.apply(other);
                        client.sync(Some(&before), shape.cluster(), run).await?;
                    }
                }
            }
            self.operator_caught_up(Some(operator), self.config.budget)
                .await;
            for (i, (at, key)) in reads.iter().enumerate() {
                if *at != step {
                    continue;
                }
                let (ns, name) = key.split_once('/').unwrap_or(("default", key.as_str()));
                found[i] = client.workload(ns, name).await?;
            }
        }
        Ok(found)
    }
}
