//! The InstanceType admission webhooks: defaulting and validation (research/chain.md §8.3;
//! pkg/worker/webhooks/worker/instance_type.go @4adb335).

use crate::field::{forbidden, invalid, invalid_message, required, FieldError};
use crate::labels::{Labels, Text, QUEUE_ENTRANCE};
use crate::objects::InstanceTypeSpec;
use crate::pool::{is_feature_key, spec_schedule_labels, GENERAL_GROUP_GENERIC};

/// The only RAM / local-storage unit the webhook accepts, case-sensitively.
pub const GI_SUFFIX: &str = "Gi";

/// Defaulting of the spec: an empty `generalGroup` becomes `generic` (chain.md §8.3).
pub fn default_instance_type_spec(spec: &InstanceTypeSpec) -> InstanceTypeSpec {
    let mut out = spec.clone();
    if out.general_group.is_empty() {
        out.general_group = GENERAL_GROUP_GENERIC.into();
    }
    out
}

/// Whether defaulting stamps labels at all: an accelerated type without an accelerator group is
/// left untouched for validation to reject (chain.md §8.3).
pub fn stamps_schedule_labels(spec: &InstanceTypeSpec) -> bool {
    !(spec.acceleratable && spec.accelerator_group.is_empty())
}

/// Defaulting of the labels (chain.md §8.3; instance_type.go @4adb335): stamp PoolScheduleLabels
/// (CPU group defaulted to `generic`), drop stale `general.*`/`acceleratable.*` keys, and set
/// `schedule.gpustack.ai/queue-entrance` to `entrance` (= `local_queue_name(<IT name>)`, taken as
/// a parameter so this module does not depend on `nodefeature`). Other labels are kept.
pub fn default_instance_type_labels(
    entrance: &str,
    spec: &InstanceTypeSpec,
    existing: &Labels,
    aware: bool,
) -> Labels {
    if !stamps_schedule_labels(spec) {
        return existing.clone();
    }
    let spec = default_instance_type_spec(spec);
    let wanted = spec_schedule_labels(&spec, aware);
    // One collect: a later pair wins, so the wanted labels and the entrance override.
    existing
        .iter()
        .filter(|(k, _)| wanted.contains_key(k) || !is_feature_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(wanted.iter().map(|(k, v)| (k.clone(), v.clone())))
        .chain([(Text::new_static(QUEUE_ENTRANCE), Text::new(entrance))])
        .collect()
}

/// `s` as a positive int32 with no unit suffix, the way Go's `ParseInt(s, 10, 32)` reads it
/// (an optional sign, decimal digits only).
fn positive_int32(s: &str) -> Option<i32> {
    s.parse::<i32>().ok().filter(|n| *n > 0)
}

/// `s` as a positive integer followed by exactly `Gi`.
fn positive_gi(s: &str) -> Option<i32> {
    s.strip_suffix(GI_SUFFIX).and_then(positive_int32)
}

/// The required-input errors of a create: acceleratorGroup when accelerated, os, arch;
/// webhooks/worker/instance_type.go `validateInstanceTypeSpec`.
fn required_input_errors(spec: &InstanceTypeSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.acceleratable && spec.accelerator_group.is_empty() {
        errs.push(required(
            "spec.acceleratorGroup",
            "must be specified when acceleratable is true".into(),
        ));
    }
    if spec.os.is_empty() {
        errs.push(required("spec.os", "must be specified".into()));
    }
    if spec.arch.is_empty() {
        errs.push(required("spec.arch", "must be specified".into()));
    }
    errs
}

/// The unit-spec errors of a create: unit CPU a positive integer (accelerated) or exactly 1
/// (CPU-only); unit RAM and localStorage a positive integer with a case-sensitive `Gi` suffix;
/// instance_type.go `validateInstanceTypeUnitSpec`.
fn unit_spec_errors(spec: &InstanceTypeSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let cpu = &spec.unit_resources.cpu;
    if spec.acceleratable {
        if positive_int32(cpu).is_none() {
            errs.push(invalid(
                "spec.unitResources.cpu",
                cpu,
                "must be a positive integer with no unit suffix",
            ));
        }
    } else if cpu.parse::<i32>().ok() != Some(1) {
        errs.push(invalid(
            "spec.unitResources.cpu",
            cpu,
            "must be 1 when acceleratable is false",
        ));
    }
    let gi = "must be a positive integer with a case-sensitive \"Gi\" suffix";
    let ram = &spec.unit_resources.ram;
    if positive_gi(ram).is_none() {
        errs.push(invalid("spec.unitResources.ram", ram, gi));
    }
    let storage = &spec.local_storage;
    if positive_gi(storage).is_none() {
        errs.push(invalid("spec.localStorage", storage, gi));
    }
    errs
}

/// A rejected InstanceType write: the field errors of one `NewInvalid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected(pub Vec<FieldError>);

impl Rejected {
    /// The API server's message for InstanceType `name` (one aggregated error).
    pub fn message_for(&self, name: &str) -> String {
        invalid_message(INSTANCE_TYPE_KIND, name, &self.0)
    }
}

/// The qualified kind `NewInvalid` names (`workercore.Kind("InstanceType")`).
const INSTANCE_TYPE_KIND: &str = "InstanceType.worker.gpustack.ai";

fn verdict(errs: Vec<FieldError>) -> Result<(), Rejected> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Rejected(errs))
    }
}

/// Validating CREATE (chain.md §8.3): setting-independent required inputs and unit spec, all
/// in one `NewInvalid`; instance_type.go `ValidateCreate`.
pub fn validate_create(spec: &InstanceTypeSpec) -> Result<(), Rejected> {
    let mut errs = required_input_errors(spec);
    errs.extend(unit_spec_errors(spec));
    verdict(errs)
}

/// Whether any spec field other than displayName, description and inactive differs (the
/// operator masks those three and compares the rest, so a new spec field is frozen too).
fn frozen_spec_changed(old: &InstanceTypeSpec, new: &InstanceTypeSpec) -> bool {
    let masked = |s: &InstanceTypeSpec| InstanceTypeSpec {
        display_name: Text::default(),
        description: Text::default(),
        inactive: false,
        ..s.clone()
    };
    masked(old) != masked(new)
}

/// Validating UPDATE (chain.md §8.3): the spec is frozen except displayName, description and
/// inactive, one `Forbidden` error on `spec`; the create-time checks are not re-run, so a
/// legacy stored value stays editable; instance_type.go `validateInstanceTypeSpecImmutable`.
pub fn validate_update(old: &InstanceTypeSpec, new: &InstanceTypeSpec) -> Result<(), Rejected> {
    let mut errs = Vec::new();
    if frozen_spec_changed(old, new) {
        errs.push(forbidden(
            "spec",
            "is immutable except displayName, description and inactive".into(),
        ));
    }
    verdict(errs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::{ACCELERATABLE, ARCH, OS};
    use crate::objects::UnitResources;

    fn accel(cpu: &str, ram: &str, storage: &str) -> InstanceTypeSpec {
        InstanceTypeSpec {
            acceleratable: true,
            accelerator_group: "nvidia-a10g".into(),
            os: "linux".into(),
            arch: "amd64".into(),
            unit_resources: UnitResources {
                cpu: cpu.into(),
                ram: ram.into(),
            },
            local_storage: storage.into(),
            ..InstanceTypeSpec::default()
        }
    }

    fn cpu_only(cpu: &str) -> InstanceTypeSpec {
        InstanceTypeSpec {
            acceleratable: false,
            accelerator_group: Text::default(),
            general_group: "generic".into(),
            ..accel(cpu, "48Gi", "100Gi")
        }
    }

    #[test]
    fn create_accepts_a_full_unit_spec() {
        assert_eq!(validate_create(&accel("4", "48Gi", "100Gi")), Ok(()));
        assert_eq!(validate_create(&cpu_only("1")), Ok(()));
    }

    #[test]
    fn create_rejects_bad_unit_specs() {
        for (cpu, ram, storage) in [
            ("", "", ""),
            ("4", "48Gi", ""),
            ("4", "48", "100Gi"),
            ("4", "48Gi", "0Gi"),
            ("0.5", "48Gi", "100Gi"),
            ("0", "48Gi", "100Gi"),
            ("4", "48gi", "100Gi"),
            ("4", "48Mi", "100Gi"),
            ("4Gi", "48Gi", "100Gi"),
        ] {
            assert!(
                validate_create(&accel(cpu, ram, storage)).is_err(),
                "{cpu} {ram} {storage}"
            );
        }
        for cpu in ["2", "4", "", "1000", "0"] {
            let Rejected(errs) = validate_create(&cpu_only(cpu)).unwrap_err();
            assert_eq!(
                errs,
                vec![invalid(
                    "spec.unitResources.cpu",
                    cpu,
                    "must be 1 when acceleratable is false"
                )]
            );
        }
    }

    #[test]
    fn create_requires_group_os_and_arch() {
        let mut spec = accel("4", "48Gi", "100Gi");
        spec.accelerator_group = Text::default();
        spec.os = Text::default();
        spec.arch = Text::default();
        let rejected = validate_create(&spec).unwrap_err();
        assert_eq!(
            rejected.message_for("a10g"),
            "InstanceType.worker.gpustack.ai \"a10g\" is invalid: [spec.acceleratorGroup: \
             Required value: must be specified when acceleratable is true, spec.os: Required \
             value: must be specified, spec.arch: Required value: must be specified]"
        );
    }

    #[test]
    fn update_freezes_all_but_three_fields() {
        let old = cpu_only("8");
        let mut new = old.clone();
        new.display_name = "Renamed".into();
        new.description = "note".into();
        new.inactive = true;
        assert_eq!(validate_update(&old, &new), Ok(()));
        let mut moved = old.clone();
        moved.os = "windows".into();
        moved.local_storage = "200Gi".into();
        let rejected = validate_update(&old, &moved).unwrap_err();
        assert_eq!(
            rejected.message_for("cpu"),
            "InstanceType.worker.gpustack.ai \"cpu\" is invalid: spec: Forbidden: is immutable \
             except displayName, description and inactive"
        );
        let mut retyped = old.clone();
        retyped.accelerator_group = "nvidia-a10g".into();
        assert!(validate_update(&old, &retyped).is_err());
    }

    #[test]
    fn default_stamps_and_prunes() {
        let existing: Labels = [
            ("general.feature.gpustack.ai/amd-epyc-7763", "true"),
            ("team", "ml"),
        ]
        .into_iter()
        .map(|(k, v)| (Text::new(k), Text::new(v)))
        .collect();
        let got =
            default_instance_type_labels("lq", &accel("4", "48Gi", "100Gi"), &existing, false);
        assert!(!got.contains_key("general.feature.gpustack.ai/amd-epyc-7763"));
        assert_eq!(got.get("team").map(Text::as_str), Some("ml"));
        assert_eq!(got.get(ACCELERATABLE).map(Text::as_str), Some("true"));
        assert_eq!(got.get(OS).map(Text::as_str), Some("linux"));
        assert_eq!(got.get(ARCH).map(Text::as_str), Some("amd64"));
        assert_eq!(
            got.get("acceleratable.feature.gpustack.ai/nvidia-a10g")
                .map(Text::as_str),
            Some("true")
        );
        assert_eq!(got.get(QUEUE_ENTRANCE).map(Text::as_str), Some("lq"));
    }

    #[test]
    fn default_keeps_the_aware_general_key_and_collapses_unaware() {
        let mut spec = cpu_only("1");
        spec.general_group = "amd-epyc-7763".into();
        let aware = default_instance_type_labels("lq", &spec, &Labels::new(), true);
        assert_eq!(
            aware
                .get("general.feature.gpustack.ai/amd-epyc-7763")
                .map(Text::as_str),
            Some("true")
        );
        let unaware = default_instance_type_labels("lq", &spec, &aware, false);
        assert!(!unaware.contains_key("general.feature.gpustack.ai/amd-epyc-7763"));
        assert_eq!(unaware.get(ACCELERATABLE).map(Text::as_str), Some("false"));
    }

    #[test]
    fn default_leaves_a_groupless_accelerated_type_alone() {
        let mut spec = accel("4", "48Gi", "100Gi");
        spec.accelerator_group = Text::default();
        let got = default_instance_type_labels("lq", &spec, &Labels::new(), false);
        assert!(got.is_empty());
        assert_eq!(default_instance_type_spec(&spec).general_group, "generic");
    }
}
