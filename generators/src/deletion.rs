//! Shrinking a concrete scenario by deletion, for failures a value tree cannot shrink: a soak's
//! failing stretch (a checkpoint and the events after it), or a divergence only a live cluster
//! shows. Chunks of events go first (ddmin, halving the chunk size), then whole nodes, then
//! foreign ClusterQueues.
//!
//! Candidates are judged in batches of `width`, side by side where the judge can (a live run
//! gives each candidate its own pools); the first failing candidate of a batch, in candidate
//! order, is kept, so the result does not depend on which candidate finished first.

use model::scenario::Scenario;

/// Deletes what it can from `s` while the judge keeps answering "fails"; at most `budget`
/// candidates judged. `judge` answers a batch of at most `width` candidates, one bool each.
pub fn shrink_by_deletion(
    s: &Scenario,
    budget: usize,
    width: usize,
    judge: &mut dyn FnMut(&[Scenario]) -> Vec<bool>,
) -> Shrunk {
    let mut shrink = Deletion {
        best: s.clone(),
        judged: 0,
        kept: 0,
        budget,
        width: width.max(1),
    };
    let mut chunk = shrink.best.events.len().div_ceil(2).max(1);
    while !shrink.best.events.is_empty() && shrink.left() > 0 {
        let removed = shrink.first_failing(judge, |best, k| {
            let start = k * chunk;
            (start < best.events.len()).then(|| {
                let mut c = best.clone();
                let end = (start + chunk).min(c.events.len());
                c.events.drain(start..end);
                c
            })
        });
        match (removed, chunk) {
            (true, _) => {}
            (false, 1) => break,
            (false, _) => chunk = chunk.div_ceil(2),
        }
    }
    while shrink.left() > 0
        && shrink.first_failing(judge, |best, k| {
            (k < best.cluster.nodes.len()).then(|| {
                let mut c = best.clone();
                c.cluster.nodes.remove(k);
                c
            })
        })
    {}
    while shrink.left() > 0
        && shrink.first_failing(judge, |best, k| {
            (k < best.cluster.foreign_queues.len()).then(|| {
                let mut c = best.clone();
                c.cluster.foreign_queues.remove(k);
                c
            })
        })
    {}
    Shrunk {
        scenario: shrink.best,
        judged: shrink.judged,
        kept: shrink.kept,
    }
}

/// What a shrink by deletion ended with.
#[derive(Clone, Debug, PartialEq)]
pub struct Shrunk {
    /// The smallest failing scenario found (the input when nothing smaller failed).
    pub scenario: Scenario,
    /// Candidates judged (at most the budget).
    pub judged: usize,
    /// Deletions kept (candidates that still failed).
    pub kept: u32,
}

struct Deletion {
    best: Scenario,
    judged: usize,
    kept: u32,
    budget: usize,
    width: usize,
}

impl Deletion {
    fn left(&self) -> usize {
        self.budget.saturating_sub(self.judged)
    }

    /// Judges the candidates `candidate(best, 0)`, `(best, 1)`, … (until it answers `None`)
    /// in batches; keeps the first that fails and answers true, or false when none does (or
    /// the budget ran out first).
    fn first_failing(
        &mut self,
        judge: &mut dyn FnMut(&[Scenario]) -> Vec<bool>,
        candidate: impl Fn(&Scenario, usize) -> Option<Scenario>,
    ) -> bool {
        let mut k = 0;
        loop {
            let take = self.width.min(self.left());
            let batch: Vec<Scenario> = (k..k + take)
                .map_while(|i| candidate(&self.best, i))
                .collect();
            if batch.is_empty() {
                return false;
            }
            self.judged += batch.len();
            let verdicts = judge(&batch);
            if let Some(i) = verdicts.iter().position(|&fails| fails) {
                if let Some(c) = batch.into_iter().nth(i) {
                    self.best = c;
                    self.kept += 1;
                    return true;
                }
            }
            k += take;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::events::Event;

    fn flips(n: usize) -> Scenario {
        Scenario {
            events: vec![Event::AwarenessFlip; n],
            ..Scenario::default()
        }
    }

    fn one_by_one(f: impl Fn(&Scenario) -> bool) -> impl FnMut(&[Scenario]) -> Vec<bool> {
        move |batch| batch.iter().map(&f).collect()
    }

    #[test]
    fn shrinks_to_the_events_the_failure_needs() {
        // Fails while at least three events remain: the minimum is exactly three.
        for width in [1, 4] {
            let mut judge = one_by_one(|s| s.events.len() >= 3);
            let shrunk = shrink_by_deletion(&flips(40), 1000, width, &mut judge);
            assert_eq!(shrunk.scenario.events.len(), 3, "width {width}");
            assert!(shrunk.judged > 0 && shrunk.kept > 0);
        }
    }

    #[test]
    fn a_budget_bounds_the_candidates_judged() {
        for width in [1, 3] {
            let mut judge = one_by_one(|s| s.events.len() >= 3);
            let shrunk = shrink_by_deletion(&flips(40), 2, width, &mut judge);
            assert_eq!(shrunk.judged, 2, "width {width}");
            assert!(shrunk.scenario.events.len() >= 3);
        }
    }

    #[test]
    fn keeps_the_input_when_nothing_smaller_fails() {
        let s = flips(4);
        let mut judge = one_by_one(|c| c.events.len() == 4);
        let shrunk = shrink_by_deletion(&s, 100, 2, &mut judge);
        assert_eq!((shrunk.scenario, shrunk.kept), (s, 0));
    }

    #[test]
    fn batches_are_at_most_the_width_and_the_first_failure_in_order_wins() {
        // the failure needs the event at index 5 (a namespace named "keep")
        let mut s = flips(8);
        s.events[5] = Event::NamespaceCreate {
            name: "keep".into(),
        };
        let needs = |c: &Scenario| {
            c.events
                .iter()
                .any(|e| matches!(e, Event::NamespaceCreate { name } if name == "keep"))
        };
        let mut widest = 0;
        let mut judge = |batch: &[Scenario]| {
            widest = widest.max(batch.len());
            batch.iter().map(needs).collect()
        };
        let best = shrink_by_deletion(&s, 1000, 3, &mut judge).scenario;
        assert_eq!(best.events.len(), 1);
        assert!(needs(&best));
        assert!(widest <= 3 && widest > 1, "batches of {widest}");
    }
}
