//! What `scripts/kube start` configures Kueue with that the model's rules decide: the
//! `resources` section of its Configuration, kept in `kube/kueue/resources.yaml` (a test keeps
//! the file equal to [`kueue_resources_yaml`]).
//!
//! The operator's chart sets the transformations [`model::quota::kueue_transformations`]
//! gives and `resources.quotaCheckStrategy: IgnoreUndeclared` (docs/modules: "the deployed Kueue
//! Configuration also sets …"), so a queue covering only credits (or only `cpu`) does not refuse
//! a Workload for the other resources it asks. Kueue 0.17, the newest the module proxy serves,
//! has no `quotaCheckStrategy`; the same effect comes from draining each other accelerator key a
//! Pod carries (strategy Replace, no outputs: Kueue ignores the input) and excluding the core
//! resources no derived queue covers by prefix.

use model::quota::kueue_transformations;
use model::resources::{resource_name, Key};

/// Where `scripts/kube` reads the section from, relative to the workspace root.
pub const KUEUE_RESOURCES_FILE: &str = "kube/kueue/resources.yaml";

/// Core resources excluded by prefix: those no derived queue covers, and `cpu`, which only
/// CPU pools cover. Without `IgnoreUndeclared` an accelerated Workload asking `cpu` would wait
/// forever on its credits-only queue ("resource cpu unavailable in ClusterQueue"); excluding
/// it costs the CPU pools their quota on kube-local (a CPU Workload asks nothing Kueue
/// counts), which the live tier never reads back: gate 3 judges no CPU pool's Workload.
const EXCLUDED_PREFIXES: [&str; 4] = ["memory", "ephemeral-storage", "hugepages-", "cpu"];

/// The accelerator keys a Pod may carry that no queue covers (drained).
const DRAINED: [Key; 6] = [
    Key::Sliced,
    Key::SlicedCoresPercentage,
    Key::SlicedMemoryPercentage,
    Key::SlicedMemoryMib,
    Key::Partitioned,
    Key::Visibility,
];

/// The `resources:` section as YAML text (deterministic: manufacturers and keys in the model's
/// order).
pub fn kueue_resources_yaml() -> String {
    let mut out = String::from(
        "# Kueue Configuration `resources`, from live::kube_local::kueue_resources_yaml\n\
         # (the model's transformations; drained keys and excluded prefixes stand in for\n\
         # quotaCheckStrategy: IgnoreUndeclared, which Kueue 0.17 lacks). Do not edit by hand:\n\
         # `VERIFY_BLESS=1 cargo test -p live --test kube_local` rewrites it.\n\
         resources:\n  excludeResourcePrefixes:\n",
    );
    for p in EXCLUDED_PREFIXES {
        out.push_str(&format!("  - {p}\n"));
    }
    // the per-profile partition keys (`<base>.partitioned.<kind>-<profile>`): any profile,
    // so by prefix; `.partitioned.units` does not start with it
    for m in model::labels::MANUFACTURERS {
        if let Some(p) = model::resources::partition_profile_prefix(m) {
            out.push_str(&format!("  - {p}\n"));
        }
    }
    out.push_str("  transformations:\n");
    for t in kueue_transformations() {
        out.push_str(&format!("  - input: {}\n    strategy: Replace\n", t.input));
        if let Some(by) = &t.multiply_by {
            out.push_str(&format!("    multiplyBy: {by}\n"));
        }
        out.push_str(&format!(
            "    outputs:\n      {}: \"{}\"\n",
            t.output, t.credits
        ));
    }
    for m in model::labels::MANUFACTURERS {
        for key in &DRAINED {
            if let Some(input) = resource_name(m, key) {
                out.push_str(&format!("  - input: {input}\n    strategy: Replace\n"));
            }
        }
    }
    out
}
