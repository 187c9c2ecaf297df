//! Shrinking a failing soak stretch: the stretch is a concrete scenario (a checkpoint and the
//! events after it), not a generator's value tree, so it is shrunk by deletion — chunks of
//! events first (ddmin, halving the chunk size), then whole nodes — keeping every candidate
//! on which the same property still fails.

use model::scenario::Scenario;

/// Deletes what it can from `s` while `fails` keeps answering true; at most `budget` calls.
pub fn shrink_stretch(
    s: &Scenario,
    budget: usize,
    fails: &mut dyn FnMut(&Scenario) -> bool,
) -> (Scenario, usize) {
    let mut best = s.clone();
    let mut calls = 0;
    let mut try_candidate = |candidate: Scenario, best: &mut Scenario, calls: &mut usize| {
        if *calls >= budget {
            return false;
        }
        *calls += 1;
        if fails(&candidate) {
            *best = candidate;
            true
        } else {
            false
        }
    };
    let mut chunk = best.events.len().div_ceil(2).max(1);
    while !best.events.is_empty() && calls < budget {
        let mut start = 0;
        let mut removed_any = false;
        while start < best.events.len() && calls < budget {
            let mut candidate = best.clone();
            let end = (start + chunk).min(candidate.events.len());
            candidate.events.drain(start..end);
            if try_candidate(candidate, &mut best, &mut calls) {
                removed_any = true;
            } else {
                start += chunk;
            }
        }
        if chunk == 1 && !removed_any {
            break;
        }
        if !removed_any {
            chunk = chunk.div_ceil(2);
        }
    }
    let mut i = 0;
    while i < best.cluster.nodes.len() && calls < budget {
        let mut candidate = best.clone();
        candidate.cluster.nodes.remove(i);
        if !try_candidate(candidate, &mut best, &mut calls) {
            i += 1;
        }
    }
    (best, calls)
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

    #[test]
    fn shrinks_to_the_events_the_failure_needs() {
        // Fails while at least three events remain: the minimum is exactly three.
        let (best, calls) = shrink_stretch(&flips(40), 1000, &mut |s| s.events.len() >= 3);
        assert_eq!(best.events.len(), 3);
        assert!(calls > 0);
    }

    #[test]
    fn a_budget_bounds_the_calls() {
        let (best, calls) = shrink_stretch(&flips(40), 2, &mut |s| s.events.len() >= 3);
        assert_eq!(calls, 2);
        assert!(best.events.len() >= 3);
    }

    #[test]
    fn keeps_the_input_when_nothing_smaller_fails() {
        let s = flips(4);
        let (best, _) = shrink_stretch(&s, 100, &mut |c| c.events.len() == 4);
        assert_eq!(best, s);
    }
}
