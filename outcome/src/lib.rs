//! How a `verify` command ended. Every library crate concludes a run with an [`Outcome`]
//! (a case's rows, a soak, an audit, a conformance report, a failed connection); only the
//! binary's `main.rs` turns one into a process exit code (DESIGN.md "Exit codes").
//!
//! ```
//! use outcome::Outcome;
//! // a counterexample outranks an unmet coverage floor; bad input outranks both
//! assert_eq!(Outcome::CoverageUnmet.worse(Outcome::Failed), Outcome::Failed);
//! assert_eq!(Outcome::Failed.worse(Outcome::Usage), Outcome::Usage);
//! // nothing judged is not a failure, but it is said
//! assert!(Outcome::NothingVerified.passed());
//! assert_eq!(Outcome::Held.worse(Outcome::NothingVerified), Outcome::Held);
//! ```

#![warn(missing_docs)]

/// How a command ended, from the user's side: did everything it checked hold, and if not,
/// why not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Every check held (known findings of the ledger included).
    Held,
    /// No check ran; the command prints NOTHING WAS VERIFIED.
    NothingVerified,
    /// A counterexample, a new finding, a FAIL row or a divergence.
    Failed,
    /// Bad input or a missing required input: nothing was judged.
    Usage,
    /// Could not judge: a server failed, no quiescence, an interruption, leftovers.
    Inconclusive,
    /// Everything judged held, but a coverage floor (`--min-coverage`) was not met.
    CoverageUnmet,
    /// A divergence that did not come back when re-run from a clean state.
    Flaky,
}

impl Outcome {
    /// True when the command's checks passed (held, or nothing to check).
    pub fn passed(self) -> bool {
        matches!(self, Outcome::Held | Outcome::NothingVerified)
    }

    /// The outcome of two parts of one command: the one that says more is wrong. Bad input
    /// outranks a failure, which outranks an unmet floor, a flaky divergence and an
    /// inconclusive part, in that order; a part that held outranks one that checked nothing.
    pub fn worse(self, other: Outcome) -> Outcome {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    /// The order [`Outcome::worse`] follows.
    fn rank(self) -> u8 {
        match self {
            Outcome::NothingVerified => 0,
            Outcome::Held => 1,
            Outcome::Inconclusive => 2,
            Outcome::Flaky => 3,
            Outcome::CoverageUnmet => 4,
            Outcome::Failed => 5,
            Outcome::Usage => 6,
        }
    }
}

/// A result a run concludes with: implemented by the library crates' verdict and report types.
pub trait Concluded {
    /// How the command that produced `self` ended.
    fn outcome(&self) -> Outcome;
}

impl Concluded for Outcome {
    fn outcome(&self) -> Outcome {
        *self
    }
}

impl<T: Concluded> Concluded for [T] {
    /// The worst part's outcome ([`Outcome::worse`]); an empty list verified nothing.
    fn outcome(&self) -> Outcome {
        self.iter()
            .map(Concluded::outcome)
            .fold(Outcome::NothingVerified, Outcome::worse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Outcome; 7] = [
        Outcome::Held,
        Outcome::NothingVerified,
        Outcome::Failed,
        Outcome::Usage,
        Outcome::Inconclusive,
        Outcome::CoverageUnmet,
        Outcome::Flaky,
    ];

    #[test]
    fn worse_is_a_total_order_that_commutes() {
        for a in ALL {
            assert_eq!(a.worse(a), a);
            for b in ALL {
                assert_eq!(a.worse(b), b.worse(a), "{a:?} vs {b:?}");
                let w = a.worse(b);
                assert!(w == a || w == b);
                for c in ALL {
                    assert_eq!(a.worse(b).worse(c), a.worse(b.worse(c)));
                }
            }
        }
    }

    #[test]
    fn only_held_and_nothing_verified_pass() {
        let passing: Vec<Outcome> = ALL.into_iter().filter(|o| o.passed()).collect();
        assert_eq!(passing, [Outcome::Held, Outcome::NothingVerified]);
    }

    #[test]
    fn a_list_is_its_worst_part_and_an_empty_one_verified_nothing() {
        let none: [Outcome; 0] = [];
        assert_eq!(none.outcome(), Outcome::NothingVerified);
        assert_eq!(
            [Outcome::Held, Outcome::Failed, Outcome::Held].outcome(),
            Outcome::Failed
        );
        assert_eq!([Outcome::Failed, Outcome::Usage].outcome(), Outcome::Usage);
        assert_eq!(
            [Outcome::NothingVerified, Outcome::Held].outcome(),
            Outcome::Held
        );
    }
}
