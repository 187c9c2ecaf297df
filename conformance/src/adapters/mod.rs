//! One adapter per vector file: it reads the vector's input into model types, calls the one
//! model rule the Go test exercises, and judges the output against `expected`.

use crate::{Outcome, Vector};

pub mod admission;
pub mod admission_flavor_scope;
pub mod admission_inflight;
pub mod admission_messages;
pub mod admission_parse_demands;
pub mod admission_reconcile;
pub mod clusterqueue_quota;
pub mod cpu_view;
pub mod credits;
pub mod device_allocation_mode;
pub mod fit_demand;
pub mod fit_label_keys;
pub mod fit_labels;
pub mod flavor_name_count;
pub mod four_view;
pub mod instancetype_detail;
pub mod instancetype_entrance;
pub mod instancetype_lifecycle;
pub mod instancetype_stop_policy;
pub mod instancetype_webhook_validation;
pub mod nodefeature_labels;
pub mod partition_profile_publish;
pub mod pool_devices_selector;
pub mod pool_labels;
pub mod populations;
pub mod reconcile_write_result;
pub mod resource_names;
pub mod runtime_versions;

/// An adapter runs one vector of its file.
pub type Adapter = fn(&Vector) -> Outcome;

/// The adapter for a vector file, by file stem; `None` = the model has no function for it yet.
pub fn adapter_for(stem: &str) -> Option<Adapter> {
    Some(match stem {
        "admission" => admission::run,
        "admission_flavor_scope" => admission_flavor_scope::run,
        "admission_inflight" => admission_inflight::run,
        "admission_messages" => admission_messages::run,
        "admission_parse_demands" => admission_parse_demands::run,
        "admission_reconcile" => admission_reconcile::run,
        "clusterqueue_quota" => clusterqueue_quota::run,
        "cpu_view" => cpu_view::run,
        "credits" => credits::run,
        "device_allocation_mode" => device_allocation_mode::run,
        "fit_demand" => fit_demand::run,
        "fit_label_keys" => fit_label_keys::run,
        "fit_labels" => fit_labels::run,
        "flavor_name_count" => flavor_name_count::run,
        "four_view" => four_view::run,
        "instancetype_detail" => instancetype_detail::run,
        "instancetype_entrance" => instancetype_entrance::run,
        "instancetype_lifecycle" => instancetype_lifecycle::run,
        "instancetype_stop_policy" => instancetype_stop_policy::run,
        "instancetype_webhook_validation" => instancetype_webhook_validation::run,
        "nodefeature_labels" => nodefeature_labels::run,
        "partition_profile_publish" => partition_profile_publish::run,
        "pool_devices_selector" => pool_devices_selector::run,
        "pool_labels" => pool_labels::run,
        "populations" => populations::run,
        "reconcile_write_result" => reconcile_write_result::run,
        "resource_names" => resource_names::run,
        "runtime_versions" => runtime_versions::run,
        _ => return None,
    })
}
