//! The one tier concept of DESIGN.md: where a scenario is stepped and diffed against the model.
//! `fuzz`, `soak`, `cases` and the CLI all speak of this [`Tier`]; none keeps its own. Each
//! tier is a [`Target`] (the one stepping trait): [`ModelTarget`] on the model tier, and
//! [`ApiTarget`] on the twin and live tiers, started on an embedded twin
//! ([`ApiTarget::start`]) or on a cluster ([`ApiTarget::connect`]); [`step_scenario`] walks a
//! scenario through any of them.
//!
//! ```
//! use tier::Tier;
//! // `verify fuzz --context C` runs on the live tier; `--twin` always wins
//! assert_eq!(Tier::resolve(None, false, Some("prod"), Tier::Twin), Tier::Live);
//! assert_eq!(Tier::resolve(Some(Tier::Model), true, None, Tier::Model), Tier::Twin);
//! assert_eq!(Tier::Live.name(), "live");
//! ```

#![warn(missing_docs)]

pub mod api;
pub mod target;

pub use api::{ApiConfig, ApiError, ApiTarget, Lane, CLUSTER_CONFIRM_WINDOW, TWIN_PROPERTY};
pub use target::{divergence_of, objects_of, step_scenario, Divergence, ModelTarget, Target};

/// Where a run checks the chain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Tier {
    /// The model's own properties only; no server.
    #[default]
    Model,
    /// The model's properties, then the scenario through an embedded Kubernetes-API twin
    /// running the reference operator.
    Twin,
    /// The model's properties, then the scenario, localized, through a cluster running the
    /// operator.
    Live,
}

impl Tier {
    /// `--tier`/`--twin`/`--context` resolved: `--twin` is the twin, an explicit `--tier`
    /// wins, a context means the live tier, else `default` (the twin for fuzz, the model for
    /// soak and case).
    pub fn resolve(tier: Option<Tier>, twin: bool, context: Option<&str>, default: Tier) -> Tier {
        match (twin, tier, context) {
            (true, _, _) => Tier::Twin,
            (false, Some(t), _) => t,
            (false, None, Some(_)) => Tier::Live,
            (false, None, None) => default,
        }
    }

    /// The tier's name in run summaries, history rows and reports.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Model => "model",
            Tier::Twin => "twin",
            Tier::Live => "live",
        }
    }

    /// What a run on this tier checks, as the first line of `verify fuzz` says it.
    pub fn banner(self) -> &'static str {
        match self {
            Tier::Model => "tier: model (the model's own properties; no cluster contacted)",
            Tier::Twin => {
                "tier: twin (embedded Kubernetes-API twin on 127.0.0.1, one per job; no cluster contacted)"
            }
            Tier::Live => {
                "tier: live (a cluster running the operator, fed run-unique mocks; only the run's pools are compared; a seed is checked up to its first awareness flip or joint timeout, neither of which a cluster lets verify step)"
            }
        }
    }

    /// Workers when `--jobs` is not given: the cores, four per core on the twin tier (its
    /// jobs mostly wait on loopback), two lanes on a cluster.
    pub fn default_jobs(self) -> usize {
        match self {
            Tier::Model => cores(),
            Tier::Twin => 4 * cores(),
            Tier::Live => 2,
        }
    }
}

/// The machine's parallelism (1 when it cannot be read).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
