//! pkg/nodefeature/knowns_test.go: the resource-name algebra — names built per manufacturer and
//! mode, profile spelling across the operator boundary, and the classification of any name.

use serde_json::{json, Value};

use model::profiles::{publish_profile_name, vendor_profile_name};
use model::resources as r;
use model::Mode;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestAcceleratableResourceNames"
        | "TestAcceleratablePartitionedResourceNames"
        | "TestGetAcceleratablePartitionedProfileResourceName" => outcome(|| built_name(v)),
        "TestNormalizePartitionedProfileName" => outcome(|| {
            let input: String = field(&v.input, "in")?;
            Ok(judge(
                &v.expected,
                &json!({ "out": r::normalize_profile_name(&input) }),
            ))
        }),
        "TestNormalizePartitionedProfileNameRoundTrip" => outcome(|| normalize_round_trip(v)),
        "TestPublishPartitionedProfileName" | "TestVendorPartitionedProfileName" => outcome(|| {
            let manufacturer: String = field(&v.input, "manufacturer")?;
            let input: String = field(&v.input, "in")?;
            let out = if v.test_name() == "TestPublishPartitionedProfileName" {
                publish_profile_name(&manufacturer, &input)
            } else {
                vendor_profile_name(&manufacturer, &input)
            };
            Ok(judge(&v.expected, &json!({ "out": out })))
        }),
        "TestPartitionedProfileNameBoundaryRoundTrip" => outcome(|| {
            let manufacturer: String = field(&v.input, "manufacturer")?;
            let vendor: String = field(&v.input, "vendor_name")?;
            let key = r::profile_resource_name(&manufacturer, &vendor);
            let rebuilt = r::partitioned_profile_resource_name(
                &manufacturer,
                &publish_profile_name(&manufacturer, &vendor),
            );
            let back = key.as_deref().and_then(r::vendor_partitioned_profile_of);
            let got = json!({
                "key": key.clone().unwrap_or_default(),
                "key_rebuilt_from_published_name": rebuilt.clone().unwrap_or_default(),
                "vendor_profile_of_key": back.clone().unwrap_or_default(),
                "ok": key.is_some() && key == rebuilt && back.as_deref() == Some(vendor.as_str()),
            });
            Ok(judge(&v.expected, &got))
        }),
        "TestVendorPartitionedProfileOf" | "TestPartitionedProfileOf" => outcome(|| {
            let name: String = field(&v.input, "resource_name")?;
            let profile = if v.test_name() == "TestPartitionedProfileOf" {
                r::partitioned_profile_of(&name)
            } else {
                r::vendor_partitioned_profile_of(&name)
            };
            let got = json!({
                "ok": profile.is_some(),
                "profile": profile.unwrap_or_default(),
            });
            Ok(judge(&v.expected, &got))
        }),
        "TestResourceFamilyOf" => outcome(|| {
            let name: String = field(&v.input, "resource_name")?;
            Ok(judge(
                &v.expected,
                &json!({ "family": r::family_of(&name).name() }),
            ))
        }),
        "TestIsKnownAcceleratableResourceName" => outcome(|| {
            let name: String = field(&v.input, "resource_name")?;
            let known = r::is_known_accelerator_resource(&name);
            Ok(judge(&v.expected, &json!({ "known": known })))
        }),
        other => not_modelled(other),
    }
}

/// The `Get*ResourceName` builders, by the Go function the vector names.
fn built_name(v: &Vector) -> Read<Outcome> {
    let func: String = field(&v.input, "fn")?;
    let args: Vec<String> = field(&v.input, "args")?;
    let arg = |i: usize| -> Read<&str> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| Outcome::Malformed {
                field: "args".into(),
                problem: format!("{func} needs argument {}", i + 1),
            })
    };
    let manufacturer = arg(0)?;
    let name = match func.as_str() {
        "GetAcceleratableResourceName" => {
            let mode = Mode::from_name(arg(1)?).map_err(|e| Outcome::Malformed {
                field: "args".into(),
                problem: e.to_string(),
            })?;
            r::accelerator_resource_name(manufacturer, mode)
        }
        "GetAcceleratableSlicedUnitsResourceName" => r::sliced_units_resource_name(manufacturer),
        "GetAcceleratableSlicedCoresPercentageResourceName" => {
            r::sliced_cores_percentage_resource_name(manufacturer)
        }
        "GetAcceleratableSlicedMemoryPercentageResourceName" => {
            r::sliced_memory_percentage_resource_name(manufacturer)
        }
        "GetAcceleratableSlicedMemoryMibResourceName" => {
            r::sliced_memory_mib_resource_name(manufacturer)
        }
        "GetAcceleratablePartitionedUnitsResourceName" => {
            r::partitioned_units_resource_name(manufacturer)
        }
        "GetAcceleratablePartitionedProfileResourceName" => {
            r::partitioned_profile_resource_name(manufacturer, arg(1)?)
        }
        other => return Ok(not_modelled(other)),
    };
    let got: Value = json!({ "resource_name": name.unwrap_or_default() });
    Ok(judge(&v.expected, &got))
}

/// knowns_test.go `TestNormalizePartitionedProfileNameRoundTrip`: a raw driver name normalizes,
/// the normalized name becomes the published per-profile key (`NormalizePartitionedProfileName`,
/// `GetAcceleratablePartitionedProfileResourceName`), and `PartitionedProfileOf` reads that key
/// back to exactly the normalized name, itself a fixed point of the normalization. The raw name
/// is `in` (as in `TestNormalizePartitionedProfileName`); the Go test's manufacturer is NVIDIA.
fn normalize_round_trip(v: &Vector) -> Read<Outcome> {
    let raw: String = match v.input.get("in") {
        Some(_) => field(&v.input, "in")?,
        None => field(&v.input, "name")?,
    };
    let manufacturer: String = match v.input.get("manufacturer") {
        Some(_) => field(&v.input, "manufacturer")?,
        None => "nvidia".into(),
    };
    let normalized = r::normalize_profile_name(&raw);
    let key = r::partitioned_profile_resource_name(&manufacturer, &normalized);
    let back = key.as_deref().and_then(r::partitioned_profile_of);
    let got = json!({
        "normalized": normalized,
        "key": key.clone().unwrap_or_default(),
        "ok": back.is_some(),
        "profile_of_key": back.clone().unwrap_or_default(),
        "profile_of_key_normalized": back.as_deref().map(r::normalize_profile_name).unwrap_or_default(),
    });
    Ok(judge(&v.expected, &got))
}
