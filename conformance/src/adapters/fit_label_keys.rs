//! pkg/nodefeature/fit_test.go: the fit label keys and the label-map helpers built on them.

use serde_json::json;

use model::fit_keys;
use model::labels::Labels;
use model::resources::is_qualified_name;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestFitLabelKeys" => outcome(|| {
            let func: String = field(&v.input, "fn")?;
            let a_key: String = field(&v.input, "accelerator_key")?;
            let key = match func.as_str() {
                "FitSlicedMaxFreeUnitsLabelKey" => fit_keys::sliced_fit_label_key(&a_key),
                "FitSharedFreeCardsLabelKey" => fit_keys::shared_fit_label_key(&a_key),
                other => return Ok(not_modelled(other)),
            };
            let got = json!({ "qualified_name_valid": is_qualified_name(&key), "key": key });
            Ok(judge(&v.expected, &got))
        }),
        "TestIsFitLabelKey" => outcome(|| {
            let key: String = field(&v.input, "key")?;
            let got = json!({ "is_fit_label_key": fit_keys::is_fit_label_key(&key) });
            Ok(judge(&v.expected, &got))
        }),
        "TestEqualIgnoringFitLabels" => outcome(|| {
            let a: Labels = field(&v.input, "a")?;
            let b: Labels = field(&v.input, "b")?;
            let got = json!({ "equal": fit_keys::equal_ignoring_fit_labels(&a, &b) });
            Ok(judge(&v.expected, &got))
        }),
        "TestFilterFitLabels" => outcome(|| {
            let labels: Labels = field(&v.input, "labels")?;
            let got = json!({ "labels": fit_keys::filter_fit_labels(&labels) });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
