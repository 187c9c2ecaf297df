//! Gate-3 verdicts read back from the wire: a Workload (kueue.x-k8s.io/v1beta2) is submitted
//! to its pool's entrance LocalQueue, its `gpustack-node-devices` entry in
//! `status.admissionChecks[]` is awaited by watching it, and it is withdrawn again.
//!
//! Only verdicts gate 3 gives are asked for. A Workload that gate 1 refuses never becomes a
//! Workload, and one that gate 2 leaves without quota never gets the check's entry from Kueue
//! (research/admission.md §6.1: the controller answers Workloads with quota reserved); on a
//! cluster either would be a wait with no answer. The Workload is withdrawn once it has its
//! verdict, so what it would hold reaches the cards the way the mock writes any hold (charging
//! Pods and the Devices ledger), and no Workload is left to count in flight
//! (research/admission.md §6.5: in-flight demand is other Workloads Ready or admitted whose
//! Pods are not charged yet).

use std::time::Duration;

use futures::StreamExt;
use kube::api::WatchParams;
use kube::core::WatchEvent;
use kube::{Api, Resource};
use model::admission::{CheckState, Verdict};
use model::lifecycle::{Outcome, QuotaPrediction};
use model::workload::Workload as ModelWorkload;
use serde_json::Value;

use super::retry::{already_exists, not_found};
use super::scoped::describe;
use super::{Client, ClientError, RunId, RUN_LABEL};
use crate::crd::Workload;
use crate::wire::workload::{kueue_assignments, read_check, verdict_of, workload_object};
use model::admission::demands::PodSetAssignment;

/// The verdict the wire must give for a Workload the model judged `outcome`, if gate 3 gave
/// it: Ready for an admitted Workload, the Retry and its message for a refused one. Gates 1
/// and 2, and a Ready the cards could not honour (`Unplaceable`, a soundness finding the
/// model tier reports), are not asked of the wire.
pub fn gate3_expectation(outcome: &Outcome) -> Option<Verdict> {
    match outcome {
        // A held replica passed gate 3 (Ready); the joint check is what holds it.
        Outcome::Admitted | Outcome::Held { .. } | Outcome::Retry { .. } => {
            Some(verdict_of(outcome))
        }
        Outcome::Rejected { .. } | Outcome::Pending { .. } | Outcome::Unplaceable { .. } => None,
    }
}

/// Whether `observed` answers `expected`: the same state, and for a Retry the same message
/// (the operator's Ready text is not part of the model's outcome, so a Ready is its state).
pub fn verdict_agrees(expected: &Verdict, observed: &Verdict) -> bool {
    expected.state == observed.state
        && (expected.state != CheckState::Retry || expected.message == observed.message)
}

/// Where Kueue's reservation (`reserved`, read off Workload `object`) differs from the
/// model's gate 2 (`predicted`): per pod set, the flavor of each covered resource and the
/// hostname-level placement. A model that predicts no reservation at all differs once.
pub fn assignment_differences(
    object: &str,
    predicted: QuotaPrediction,
    reserved: &[PodSetAssignment],
) -> Vec<oracle::Difference> {
    let difference =
        |field: String, expected: Option<String>, observed: Option<String>| oracle::Difference {
            kind: oracle::ObjectKind::Effect,
            name: object.to_string(),
            field,
            expected,
            observed,
        };
    let predicted = match predicted {
        QuotaPrediction::Assigned(p) => p,
        unreserved => {
            let why = unreserved.unreserved_because().unwrap_or_default();
            return vec![difference(
                "status.admission".into(),
                Some(format!("no quota reserved ({why})")),
                Some("quota reserved".into()),
            )];
        }
    };
    let mut out = Vec::new();
    for (i, r) in reserved.iter().enumerate() {
        let at = format!("status.admission.podSetAssignments[{i}]");
        let Some(p) = predicted.iter().find(|p| p.pod_set == r.pod_set) else {
            out.push(difference(
                format!("{at}.name"),
                None,
                Some(r.pod_set.clone()),
            ));
            continue;
        };
        let resources: std::collections::BTreeSet<&String> =
            p.flavors.keys().chain(r.flavors.keys()).collect();
        for res in resources {
            if p.flavors.get(res) != r.flavors.get(res) {
                out.push(difference(
                    format!("{at}.flavors[{res}]"),
                    p.flavors.get(res).cloned(),
                    r.flavors.get(res).cloned(),
                ));
            }
        }
        let hosts = |a: &PodSetAssignment| {
            a.hosts
                .iter()
                .map(|h| format!("{}×{}", h.hostname, h.pods))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (want, got) = (hosts(p), hosts(r));
        if want != got && !p.hosts.is_empty() {
            out.push(difference(
                format!("{at}.topologyAssignment"),
                Some(want),
                Some(got),
            ));
        }
    }
    out
}

/// A verdict as one cell of a divergence table: `Ready`, or `Retry: <message>`.
pub fn verdict_text(v: &Verdict) -> String {
    if v.message.is_empty() {
        format!("{:?}", v.state)
    } else {
        format!("{:?}: {}", v.state, v.message)
    }
}

/// What reading a verdict back found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readback {
    /// The check's first decided state (anything but Pending), and Kueue's quota reservation
    /// on the Workload as it was decided (`status.admission`; `None` where no Kueue reserved
    /// it, as on the embedded twin, which plays gate 2 itself).
    Verdict(Verdict, Option<Vec<PodSetAssignment>>),
    /// No decided state within the budget; the last state seen, if any.
    Undecided { last: Option<Verdict> },
}

/// The check's entry when it is decided (Pending is Kueue's "not yet").
fn decided(object: &Value) -> Option<Verdict> {
    read_check(object).filter(|v| v.state != CheckState::Pending)
}

impl Client {
    /// Submits `w` (labelled with `run`) and waits, within `budget`, for its
    /// `gpustack-node-devices` verdict; then withdraws it and waits until it is gone, so a
    /// later Workload of the same name can be submitted. Three requests when nothing fails:
    /// the create, one watch from the create's resourceVersion, the delete.
    pub async fn gate3_verdict(
        &self,
        w: &ModelWorkload,
        run: &RunId,
        budget: Duration,
    ) -> Result<Readback, ClientError> {
        let mut object = workload_object(w);
        object["metadata"]["labels"] = serde_json::json!({ RUN_LABEL: run.as_str() });
        let ns = Some(w.namespace.as_str());
        let deadline = super::deadline::deadline_after(budget);
        let api: Api<Workload> = Api::namespaced(self.kube().clone(), &w.namespace);
        let what = describe("Workload", ns, &w.name);
        let created = loop {
            match self.create::<Workload>(ns, object.clone()).await {
                Ok(created) => break created,
                // a create retried after a lost answer had landed: it is this one; or the
                // previous Workload of this name is still going (a cluster's finalizers)
                Err(e) if already_exists(&e) => {
                    let there = self
                        .retrying(&format!("reading {what}"), || api.get(&w.name))
                        .await?;
                    if there.meta().deletion_timestamp.is_none() {
                        break there;
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(e);
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        };
        let mut rv = created.meta().resource_version.clone().unwrap_or_default();
        let mut watch = ObjectWatch {
            api: &api,
            name: &w.name,
            what,
        };
        let mut last = read_check(&serde_json::to_value(&created).unwrap_or_default());
        let found = watch
            .until(&mut rv, deadline, |event| match event {
                Seen::Object(o) => {
                    last = read_check(o);
                    decided(o).map(|v| (v, kueue_assignments(o)))
                }
                Seen::Gone => None,
            })
            .await?;
        self.delete::<Workload>(ns, &w.name).await?;
        watch
            .until(&mut rv, deadline, |event| match event {
                Seen::Gone => Some(()),
                Seen::Object(_) => None,
            })
            .await?;
        Ok(match found {
            Some((v, reserved)) => Readback::Verdict(v, reserved),
            None => Readback::Undecided { last },
        })
    }
}

impl Client {
    /// Workload `namespace/name` as it is now, in its wire form (`None`: there is none).
    pub async fn workload(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ClientError> {
        let api: Api<Workload> = Api::namespaced(self.kube().clone(), namespace);
        let what = describe("Workload", Some(namespace), name);
        let got = self
            .retrying(&format!("reading {what}"), || api.get_opt(name))
            .await?;
        Ok(got.and_then(|w| serde_json::to_value(w).ok()))
    }
}

/// One event of a single object's watch.
enum Seen<'a> {
    Object(&'a Value),
    Gone,
}

/// A watch on one object by name, resumed from the last resourceVersion seen when the server
/// closes it or a request fails (a watch that cannot resume — 410 Gone — starts over from a
/// fresh read of the object).
struct ObjectWatch<'a> {
    api: &'a Api<Workload>,
    name: &'a str,
    what: String,
}

impl ObjectWatch<'_> {
    /// Feeds every event to `answer` until it answers or `deadline` passes (`None`).
    async fn until<T>(
        &mut self,
        rv: &mut String,
        deadline: tokio::time::Instant,
        mut answer: impl FnMut(Seen<'_>) -> Option<T>,
    ) -> Result<Option<T>, ClientError> {
        while tokio::time::Instant::now() < deadline {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let params = WatchParams::default()
                .fields(&format!("metadata.name={}", self.name))
                .timeout(left.as_secs().clamp(1, 290) as u32);
            let stream = match self.api.watch(&params, rv).await {
                Ok(s) => s,
                Err(e) if super::retry::retryable(&e) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                Err(e) => return Err(api_error(&format!("watching {}", self.what), e)),
            };
            let mut stream = std::pin::pin!(stream);
            loop {
                let next = tokio::time::timeout_at(deadline, stream.next()).await;
                let Ok(Some(event)) = next else {
                    break; // closed by the server, or out of time
                };
                let seen = match event {
                    Ok(WatchEvent::Added(o)) | Ok(WatchEvent::Modified(o)) => {
                        *rv = o.meta().resource_version.clone().unwrap_or_default();
                        serde_json::to_value(&o).unwrap_or_default()
                    }
                    Ok(WatchEvent::Deleted(_)) => match answer(Seen::Gone) {
                        Some(t) => return Ok(Some(t)),
                        None => continue,
                    },
                    Ok(WatchEvent::Bookmark(b)) => {
                        *rv = b.metadata.resource_version;
                        continue;
                    }
                    // 410 Gone: resume from what the object is now
                    Ok(WatchEvent::Error(e)) if e.code == 410 => match self.fresh(rv).await? {
                        Some(o) => o,
                        None => match answer(Seen::Gone) {
                            Some(t) => return Ok(Some(t)),
                            None => break,
                        },
                    },
                    Ok(WatchEvent::Error(_)) | Err(_) => break,
                };
                if let Some(t) = answer(Seen::Object(&seen)) {
                    return Ok(Some(t));
                }
            }
        }
        Ok(None)
    }

    /// The object as it is now (`None`: gone), and its resourceVersion to resume from.
    async fn fresh(&self, rv: &mut String) -> Result<Option<Value>, ClientError> {
        match self.api.get(self.name).await {
            Ok(o) => {
                *rv = o.meta().resource_version.clone().unwrap_or_default();
                Ok(Some(serde_json::to_value(&o).unwrap_or_default()))
            }
            Err(e) => {
                let e = api_error(&format!("reading {}", self.what), e);
                if not_found(&e) {
                    Ok(None)
                } else {
                    Err(e)
                }
            }
        }
    }
}

/// A request's failure, naming what it was doing.
fn api_error(what: &str, e: kube::Error) -> ClientError {
    ClientError::Api {
        what: what.to_string(),
        source: Box::new(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gate_three_verdicts_are_asked_of_the_wire() {
        let retry = Outcome::Retry {
            message: "no card has room".into(),
        };
        assert_eq!(
            gate3_expectation(&Outcome::Admitted).map(|v| v.state),
            Some(CheckState::Ready)
        );
        assert_eq!(
            gate3_expectation(&retry),
            Some(Verdict {
                state: CheckState::Retry,
                message: "no card has room".into()
            })
        );
        for not_asked in [
            Outcome::Rejected {
                message: "gate 1".into(),
            },
            Outcome::Pending {
                reason: "no quota".into(),
            },
            Outcome::Unplaceable {
                reason: "no card".into(),
            },
        ] {
            assert_eq!(gate3_expectation(&not_asked), None, "{not_asked:?}");
        }
    }

    #[test]
    fn a_retry_must_say_the_same_thing_and_a_ready_need_not() {
        let v = |state, message: &str| Verdict {
            state,
            message: message.into(),
        };
        let ready = v(CheckState::Ready, "");
        assert!(verdict_agrees(
            &ready,
            &v(CheckState::Ready, "fits on node a")
        ));
        assert!(!verdict_agrees(&ready, &v(CheckState::Retry, "")));
        let retry = v(CheckState::Retry, "no room");
        assert!(verdict_agrees(&retry, &v(CheckState::Retry, "no room")));
        assert!(!verdict_agrees(&retry, &v(CheckState::Retry, "other")));
        assert!(!verdict_agrees(&retry, &v(CheckState::Ready, "no room")));
        assert_eq!(verdict_text(&retry), "Retry: no room");
        assert_eq!(verdict_text(&ready), "Ready");
    }
}
