//! Request counters of a served twin: requests per Kubernetes verb and resource, and faults
//! injected per kind, so tests and benchmarks can count the API calls a client makes.
//! Served as JSON at [`COUNTERS_PATH`] (not itself counted, and never faulted).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::faults::Fault;

/// The debug endpoint serving [`Counts`] as JSON.
pub const COUNTERS_PATH: &str = "/verify/counters";

/// A snapshot of the counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`) → resource
    /// (plural, `plural/status` for the subresource; the path for discovery) → requests.
    pub requests: BTreeMap<String, BTreeMap<String, u64>>,
    /// fault name (`conflict`, `throttle`, `error`, `watch-cut`, `slow`) → times injected.
    pub faults: BTreeMap<String, u64>,
}

impl Counts {
    /// Requests of `verb` on `resource`.
    pub fn requests(&self, verb: &str, resource: &str) -> u64 {
        self.requests
            .get(verb)
            .and_then(|r| r.get(resource))
            .copied()
            .unwrap_or(0)
    }

    /// Requests of every verb on every resource.
    pub fn total_requests(&self) -> u64 {
        self.requests.values().flat_map(|r| r.values()).sum()
    }

    /// Times `fault` was injected.
    pub fn faults(&self, fault: Fault) -> u64 {
        self.faults.get(fault.name()).copied().unwrap_or(0)
    }
}

/// The live counters, shared by a server's connections.
#[derive(Debug, Default)]
pub struct Counters(Mutex<Counts>);

impl Counters {
    /// Counts one request.
    pub fn request(&self, verb: &str, resource: &str) {
        let mut c = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *c.requests
            .entry(verb.to_string())
            .or_default()
            .entry(resource.to_string())
            .or_default() += 1;
    }

    /// Counts the faults injected into one request.
    pub fn faults(&self, faults: &[Fault]) {
        if faults.is_empty() {
            return;
        }
        let mut c = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for f in faults {
            *c.faults.entry(f.name().to_string()).or_default() += 1;
        }
    }

    /// A copy of the counts now.
    pub fn snapshot(&self) -> Counts {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
