//! The per-card fit label *keys* and the label-map helpers built on them (admission.md §13.1;
//! pkg/nodefeature/fit.go). The label *values* live in `fit.rs`.
//!
//! A key's name part is exactly the accelerator key (`<manufacturer>-<group>`), under one of two
//! own domains, so any accelerator key of up to 63 characters yields a valid label key and the
//! controllers watching `feature.` / `acceleratable.` labels are not woken by fit changes.

use crate::labels::{concat_text, Labels, Text};
use crate::resources::is_qualified_name;

/// The domain every fit label ends with (`FitLabelDomainSuffix`; fit.go).
pub const FIT_LABEL_DOMAIN: &str = "fit.gpustack.ai";
/// Prefix of the largest free units on one logically sliceable card.
pub const SLICED_FIT_PREFIX: &str = "sliced-max-free-units.fit.gpustack.ai/";
/// Prefix of the count of whole-capable cards with a free ownership share.
pub const SHARED_FIT_PREFIX: &str = "shared-free-cards.fit.gpustack.ai/";

/// `FitSlicedMaxFreeUnitsLabelKey`: `sliced-max-free-units.fit.gpustack.ai/<aKey>`; fit.go.
pub fn sliced_fit_label_key(accelerator_key: &str) -> Text {
    concat_text(&[SLICED_FIT_PREFIX, accelerator_key])
}

/// `FitSharedFreeCardsLabelKey`: `shared-free-cards.fit.gpustack.ai/<aKey>`; fit.go.
pub fn shared_fit_label_key(accelerator_key: &str) -> Text {
    concat_text(&[SHARED_FIT_PREFIX, accelerator_key])
}

/// `IsFitLabelKey`: one of the two prefixes with a non-empty model, and the whole key a valid
/// qualified name (a key built from a malformed model is skipped by callers); fit.go.
pub fn is_fit_label_key(key: &str) -> bool {
    [SLICED_FIT_PREFIX, SHARED_FIT_PREFIX].iter().any(|prefix| {
        key.strip_prefix(prefix)
            .is_some_and(|model| !model.is_empty() && is_qualified_name(key))
    })
}

/// `EqualIgnoringFitLabels`: the two maps agree once every fit label is left out of both;
/// fit.go.
pub fn equal_ignoring_fit_labels(a: &Labels, b: &Labels) -> bool {
    without_fit_labels(a) == without_fit_labels(b)
}

/// The labels of a map that are not fit labels.
fn without_fit_labels(labels: &Labels) -> Labels {
    labels
        .iter()
        .filter(|(k, _)| !is_fit_label_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `FilterFitLabels`: only the fit labels of a map; fit.go.
pub fn filter_fit_labels(labels: &Labels) -> Labels {
    labels
        .iter()
        .filter(|(k, _)| is_fit_label_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::labels::from_pairs as labels;

    #[test]
    fn keys_carry_the_accelerator_key_as_name() {
        assert_eq!(
            sliced_fit_label_key("nvidia-tesla-t4"),
            "sliced-max-free-units.fit.gpustack.ai/nvidia-tesla-t4"
        );
        assert_eq!(
            shared_fit_label_key("nvidia-a10g"),
            "shared-free-cards.fit.gpustack.ai/nvidia-a10g"
        );
        let longest = "a".repeat(63);
        assert!(is_fit_label_key(&sliced_fit_label_key(&longest)));
        assert!(!is_fit_label_key(&sliced_fit_label_key(&"a".repeat(64))));
    }

    #[test]
    fn only_well_formed_fit_keys_are_fit_keys() {
        assert!(is_fit_label_key(
            "shared-free-cards.fit.gpustack.ai/nvidia-tesla-t4"
        ));
        for k in [
            "sliced-max-free-units.fit.gpustack.ai/",
            "fit.gpustack.ai/nvidia-tesla-t4",
            "sliced-max-free-units.fit.gpustack.ai.evil/nvidia-tesla-t4",
            "sliced-max-free-units.fit.gpustack.ai/Bad Group",
            "shared-free-cards.fit.gpustack.ai/a/b",
            "acceleratable.feature.gpustack.ai/nvidia-tesla-t4.count",
        ] {
            assert!(!is_fit_label_key(k), "{k}");
        }
    }

    #[test]
    fn fit_labels_are_ignored_or_kept() {
        let k = sliced_fit_label_key("nvidia-tesla-t4");
        let a = labels(&[("zone", "a"), (&k, "1600000")]);
        let b = labels(&[("zone", "a"), (&k, "640000")]);
        assert!(equal_ignoring_fit_labels(&a, &b));
        assert!(equal_ignoring_fit_labels(&labels(&[("zone", "a")]), &b));
        let c = labels(&[("zone", "b"), (&k, "640000")]);
        assert!(!equal_ignoring_fit_labels(&a, &c));
        let mixed = labels(&[(&k, "640000"), ("zone", "a"), ("fit.gpustack.ai/x", "1")]);
        assert_eq!(filter_fit_labels(&mixed), labels(&[(&k, "640000")]));
    }
}
