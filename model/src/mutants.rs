//! The operator-bug catalog: each mutant is a small, plausible variant of one rule, injected at
//! one named seam of the derivation or the event model. They exist so the verifier can prove it
//! has teeth: a fuzz run against a mutant must find a divergence from the unmutated model.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One injected bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutant {
    /// A pool's flavor selector matches label keys by prefix: `nvidia-a10` takes `nvidia-a100`.
    SubstringPoolMatch,
    /// A pool's flavor selector ignores `kubernetes.io/os` and `kubernetes.io/arch`.
    OsArchIgnored,
    /// Under CPU-manufacturer awareness a pool's selector ignores the CPU (general) key.
    CpuGroupIgnored,
    /// Partitioned cards also count in the logical-slice (SL) view: one token pool for both.
    OneTokenPool,
    /// ClusterQueues are put in a shared cohort instead of staying isolated.
    CohortSet,
    /// Every flavor's nominal quota is one card short.
    QuotaOffByOne,
    /// SH once-max counts free shares instead of cards with a free share.
    SharedOnceMaxInShares,
    /// The entrance label and status hash the display name instead of the queue name.
    EntranceWrongHash,
    /// A namespace created after start-up gets no LocalQueues.
    LateNamespaceNoLocalQueue,
}

impl Mutant {
    pub const ALL: [Mutant; 9] = [
        Mutant::SubstringPoolMatch,
        Mutant::OsArchIgnored,
        Mutant::CpuGroupIgnored,
        Mutant::OneTokenPool,
        Mutant::CohortSet,
        Mutant::QuotaOffByOne,
        Mutant::SharedOnceMaxInShares,
        Mutant::EntranceWrongHash,
        Mutant::LateNamespaceNoLocalQueue,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutant::SubstringPoolMatch => "substring-pool-match",
            Mutant::OsArchIgnored => "os-arch-ignored",
            Mutant::CpuGroupIgnored => "cpu-group-ignored",
            Mutant::OneTokenPool => "one-token-pool",
            Mutant::CohortSet => "cohort-set",
            Mutant::QuotaOffByOne => "quota-off-by-one",
            Mutant::SharedOnceMaxInShares => "shared-once-max-in-shares",
            Mutant::EntranceWrongHash => "entrance-wrong-hash",
            Mutant::LateNamespaceNoLocalQueue => "late-namespace-no-local-queue",
        }
    }

    /// What the bug does, for `verify mutants`.
    pub fn describe(self) -> &'static str {
        match self {
            Mutant::SubstringPoolMatch => {
                "pool selector matches feature keys by prefix (a10 takes a100)"
            }
            Mutant::OsArchIgnored => {
                "pool selector ignores os/arch (amd64 and arm64 pool together)"
            }
            Mutant::CpuGroupIgnored => "aware pools ignore the CPU key (CPU groups mix)",
            Mutant::OneTokenPool => "partitioned cards also feed the logical-slice view",
            Mutant::CohortSet => "ClusterQueues share a cohort (no isolation)",
            Mutant::QuotaOffByOne => "nominal quota one card short per flavor",
            Mutant::SharedOnceMaxInShares => "SH once-max counted in shares, not cards",
            Mutant::EntranceWrongHash => "entrance hashes the display name, not the queue name",
            Mutant::LateNamespaceNoLocalQueue => "namespaces created later get no LocalQueue",
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mutant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mutant::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutant `{s}`: expected one of {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_catalog() {
        for m in Mutant::ALL {
            assert_eq!(m.name().parse::<Mutant>(), Ok(m));
        }
        let e = "a10".parse::<Mutant>().unwrap_err();
        assert!(e.contains("substring-pool-match"), "{e}");
    }
}
