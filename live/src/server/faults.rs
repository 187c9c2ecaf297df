//! Injected faults, deterministic from a seed: the twin answers a share of client requests
//! with a 409 Conflict, a 429 TooManyRequests (with `Retry-After`), a 500 InternalError, a
//! watch stream that ends early, or a slow response. Every decision is drawn, in request
//! order, from one seeded ChaCha stream, so a run that sends the same requests in the same
//! order meets the same faults. Only HTTP requests are subject to faults; the reference
//! operator writes the store in-process and never meets one.

use std::sync::Mutex;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::status::{Status, StatusDetails};
use crate::wire::kinds::Kind;

/// Which faults to inject, and how often (each share in `0.0..=1.0` of eligible requests).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    pub seed: u64,
    /// Updates, patches and deletes of a named object answered 409 Conflict.
    pub conflict_share: f64,
    /// Resource requests answered 429 TooManyRequests with `Retry-After`.
    pub throttle_share: f64,
    /// Resource requests answered 500 InternalError.
    pub error_share: f64,
    /// Watches whose stream ends right after its first batch of events.
    pub watch_cut_share: f64,
    /// Resource requests answered only after [`FaultConfig::delay`].
    pub slow_share: f64,
    pub delay: Duration,
    /// The `Retry-After` of a 429, in seconds.
    pub retry_after_seconds: u32,
}

impl FaultConfig {
    /// A seed with the default shares: 5 % each of conflicts, throttles and errors, 20 % of
    /// watches cut, 5 % of requests 20 ms slow, `Retry-After: 1`.
    pub fn with_seed(seed: u64) -> Self {
        FaultConfig {
            seed,
            conflict_share: 0.05,
            throttle_share: 0.05,
            error_share: 0.05,
            watch_cut_share: 0.2,
            slow_share: 0.05,
            delay: Duration::from_millis(20),
            retry_after_seconds: 1,
        }
    }

    /// No fault at all (every share 0), for a seed whose shares are then set one by one.
    pub fn none(seed: u64) -> Self {
        FaultConfig {
            conflict_share: 0.0,
            throttle_share: 0.0,
            error_share: 0.0,
            watch_cut_share: 0.0,
            slow_share: 0.0,
            ..FaultConfig::with_seed(seed)
        }
    }

    /// Parses `SEED[:key=value,…]` (keys `conflict`, `throttle`, `error`, `watch-cut`,
    /// `slow`: shares; `delay-ms`, `retry-after`: integers). Keys not given keep
    /// [`FaultConfig::with_seed`]'s defaults. Errors name the part and what was expected.
    pub fn parse(spec: &str) -> Result<Self, FaultSpecError> {
        let bad = |problem: String| FaultSpecError {
            spec: spec.to_string(),
            problem,
        };
        let (seed, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let seed = seed
            .trim()
            .parse::<u64>()
            .map_err(|_| bad(format!("the seed `{seed}` is not an unsigned integer")))?;
        let mut config = FaultConfig::with_seed(seed);
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("`{part}` is not key=value")))?;
            let share = || -> Result<f64, FaultSpecError> {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| (0.0..=1.0).contains(s))
                    .ok_or_else(|| bad(format!("{key}={value}: expected a share from 0 to 1")))
            };
            let int = || -> Result<u64, FaultSpecError> {
                value
                    .parse::<u64>()
                    .map_err(|_| bad(format!("{key}={value}: expected an unsigned integer")))
            };
            match key {
                "conflict" => config.conflict_share = share()?,
                "throttle" => config.throttle_share = share()?,
                "error" => config.error_share = share()?,
                "watch-cut" => config.watch_cut_share = share()?,
                "slow" => config.slow_share = share()?,
                "delay-ms" => config.delay = Duration::from_millis(int()?),
                "retry-after" => {
                    config.retry_after_seconds = u32::try_from(int()?)
                        .map_err(|_| bad(format!("retry-after={value}: too large")))?
                }
                other => {
                    return Err(bad(format!(
                        "unknown key `{other}`: expected conflict, throttle, \
                         error, watch-cut, slow, delay-ms or retry-after"
                    )))
                }
            }
        }
        Ok(config)
    }
}

/// A `--faults` spec that does not parse: the spec and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("faults `{spec}`: {problem}")]
pub struct FaultSpecError {
    pub spec: String,
    pub problem: String,
}

/// One injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    Conflict,
    Throttle,
    Error,
    WatchCut,
    Slow,
}

impl Fault {
    pub const ALL: [Fault; 5] = [
        Fault::Conflict,
        Fault::Throttle,
        Fault::Error,
        Fault::WatchCut,
        Fault::Slow,
    ];

    /// The name counters and flags use.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Conflict => "conflict",
            Fault::Throttle => "throttle",
            Fault::Error => "error",
            Fault::WatchCut => "watch-cut",
            Fault::Slow => "slow",
        }
    }
}

/// What a request is, as far as faults go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Eligible {
    /// An update, patch or delete of a named object (a conflict makes sense).
    pub write_to_object: bool,
    /// A watch (it can be cut).
    pub watch: bool,
}

/// What to do with one request: answer it with a failure, cut its watch, delay it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Decision {
    /// Conflict, Throttle or Error: answer with that Status instead of serving.
    pub fail: Option<Fault>,
    /// End the watch after its first batch.
    pub cut_watch: bool,
    /// Answer only after this long.
    pub delay: Option<Duration>,
}

impl Decision {
    /// The faults this decision injects (for counters).
    pub fn faults(&self) -> Vec<Fault> {
        let mut out: Vec<Fault> = self.fail.into_iter().collect();
        if self.cut_watch {
            out.push(Fault::WatchCut);
        }
        if self.delay.is_some() {
            out.push(Fault::Slow);
        }
        out
    }
}

/// The fault source of one served twin: the config and its RNG, drawn once per resource
/// request in arrival order.
#[derive(Debug)]
pub struct Faults {
    config: FaultConfig,
    rng: Mutex<ChaCha8Rng>,
}

impl Faults {
    pub fn new(config: FaultConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        Faults {
            config,
            rng: Mutex::new(rng),
        }
    }

    pub fn config(&self) -> &FaultConfig {
        &self.config
    }

    /// Decides the next request's faults. Two draws per request whatever it is (one for the
    /// failure kind, one for slowness), so the n-th request's draws depend on n alone.
    pub fn decide(&self, request: Eligible) -> Decision {
        let (kind_draw, slow_draw) = {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            (rng.random::<f64>(), rng.random::<f64>())
        };
        let c = &self.config;
        let mut decision = Decision {
            delay: (slow_draw < c.slow_share).then_some(c.delay),
            ..Decision::default()
        };
        // the failure kinds share one draw: [conflict | throttle | error | cut | none]
        let mut edge = 0.0;
        let mut hit = |share: f64, applies: bool| {
            let lo = edge;
            edge += share;
            applies && kind_draw >= lo && kind_draw < edge
        };
        if hit(c.conflict_share, request.write_to_object) {
            decision.fail = Some(Fault::Conflict);
        } else if hit(c.throttle_share, true) {
            decision.fail = Some(Fault::Throttle);
        } else if hit(c.error_share, true) {
            decision.fail = Some(Fault::Error);
        } else if hit(c.watch_cut_share, request.watch) {
            decision.cut_watch = true;
        }
        decision
    }

    /// The `Retry-After` of a throttled request.
    pub fn retry_after_seconds(&self) -> u32 {
        self.config.retry_after_seconds
    }
}

/// The Status body of a failure fault on `kind`/`name` (`name` empty for a collection):
/// 409 `Conflict` (errors.go NewConflict), 429 `TooManyRequests` with
/// `details.retryAfterSeconds` (the apiserver's max-in-flight filter), 500 `InternalError`
/// (errors.go NewInternalError).
pub fn fault_status(fault: Fault, kind: &Kind, name: &str, retry_after_seconds: u32) -> Value {
    let details = || StatusDetails {
        name: name.to_string(),
        group: kind.group.to_string(),
        kind: kind.plural.to_string(),
        causes: Vec::new(),
    };
    match fault {
        Fault::Conflict => Status::conflict(
            kind,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
        .to_value(),
        Fault::Throttle => {
            let mut v = Status::failure(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
                None,
            )
            .to_value();
            v["details"] = json!({"retryAfterSeconds": retry_after_seconds});
            v
        }
        Fault::Error => {
            let mut details = details();
            details.causes = vec![super::status::Cause::new(
                "",
                "",
                "injected by the twin's fault plan",
            )];
            Status::failure(
                500,
                "InternalError",
                "Internal error occurred: injected by the twin's fault plan",
                Some(details),
            )
            .to_value()
        }
        Fault::WatchCut | Fault::Slow => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_seed_and_overrides_and_names_bad_parts() {
        let c = FaultConfig::parse("7").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c, FaultConfig::with_seed(7));
        let c = FaultConfig::parse("9:conflict=0.5,slow=0,delay-ms=3,retry-after=2")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.seed, 9);
        assert_eq!(c.conflict_share, 0.5);
        assert_eq!(c.slow_share, 0.0);
        assert_eq!(c.delay, Duration::from_millis(3));
        assert_eq!(c.retry_after_seconds, 2);
        for (bad, says) in [
            ("x", "seed"),
            ("1:conflict", "key=value"),
            ("1:conflict=2", "share from 0 to 1"),
            ("1:typo=0.1", "unknown key `typo`"),
            ("1:delay-ms=-1", "unsigned integer"),
        ] {
            let e = FaultConfig::parse(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_decisions() {
        let request = Eligible {
            write_to_object: true,
            watch: false,
        };
        let run = |seed| {
            let f = Faults::new(FaultConfig::with_seed(seed));
            (0..200).map(|_| f.decide(request)).collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn only_eligible_requests_get_conflicts_and_cuts() {
        let f = Faults::new(FaultConfig {
            conflict_share: 0.5,
            watch_cut_share: 0.5,
            ..FaultConfig::none(1)
        });
        let read = Eligible {
            write_to_object: false,
            watch: false,
        };
        let decisions: Vec<Decision> = (0..100).map(|_| f.decide(read)).collect();
        assert!(decisions.iter().all(|d| d.faults().is_empty()));
        let all = Faults::new(FaultConfig {
            conflict_share: 1.0,
            ..FaultConfig::none(1)
        });
        let write = Eligible {
            write_to_object: true,
            watch: false,
        };
        assert_eq!(all.decide(write).fail, Some(Fault::Conflict));
    }
}
