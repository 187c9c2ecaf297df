//! pkg/worker/controllers/worker/instance_type_test.go `TestPoolAcceleratorRuntimeVersions`:
//! `poolAcceleratorRuntimeVersions` (research/chain.md §9.5).

use serde_json::json;

use model::detail::{runtime_versions, split_runtime_version};
use model::devices::Devices;
use model::labels::Text;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestPoolAcceleratorRuntimeVersions" => outcome(|| {
            let pool_key: String = field(&v.input, "pool_key")?;
            // One Devices object per node; its extra `name`/`node` key is ignored.
            let nodes: Vec<Devices> = field(&v.input, "devices")?;
            let devices: Vec<&Devices> = nodes.iter().collect();
            let versions = runtime_versions(&devices, &pool_key);
            let got = json!({
                "versions": versions,
                "ascending_numeric": strictly_ascending_numeric(&versions),
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}

/// Whether every entry parses as a version and each is numerically greater than the one before
/// (checked on the output, independently of how the model sorted it).
fn strictly_ascending_numeric(versions: &[Text]) -> bool {
    let parsed: Option<Vec<(i64, i64)>> =
        versions.iter().map(|v| split_runtime_version(v)).collect();
    parsed.is_some_and(|p| p.windows(2).all(|w| matches!(w, [a, b] if a < b)))
}
