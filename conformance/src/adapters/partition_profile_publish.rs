//! pkg/worker/controllers/worker/instance_type_test.go `TestPublishPartitionProfileNames`:
//! `publishPartitionProfileNames` over a whole status (research/chain.md §9 order).

use serde_json::json;

use model::devices::{PartitionProfile, ProfileCount};
use model::objects::{Detail, PartitionView};
use model::views::publish_status_profiles;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestPublishPartitionProfileNames" => outcome(|| {
            let manufacturer: String = field(&v.input, "detail_manufacturer")?;
            let names: Vec<String> = field(&v.input, "profile_names")?;
            // Seeding per the vector: name i gets count i+1 in the Detail's offered profiles
            // and in both PT ledgers.
            let counts: Vec<ProfileCount> = names
                .iter()
                .zip(1u32..)
                .map(|(name, count)| ProfileCount {
                    name: name.as_str().into(),
                    count,
                })
                .collect();
            let mut detail = Detail {
                manufacturer: manufacturer.into(),
                ..Detail::default()
            };
            detail.sliced_detail.physical.profiles = counts
                .iter()
                .map(|p| PartitionProfile {
                    name: p.name.clone(),
                    count: p.count,
                    ..PartitionProfile::default()
                })
                .collect();
            let mut partitioned = PartitionView {
                allocated_profiles: counts.clone(),
                remaining_profiles: counts,
                ..PartitionView::default()
            };
            publish_status_profiles(&mut detail, &mut partitioned);
            let offered: Vec<&str> = detail
                .sliced_detail
                .physical
                .profiles
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            let allocated = names_of(&partitioned.allocated_profiles);
            let remaining = names_of(&partitioned.remaining_profiles);
            let got = json!({
                "offered_names": offered,
                "allocated_profile_names": allocated,
                "remaining_profile_names": remaining,
                "lists_name_sorted": is_sorted(&allocated) && is_sorted(&remaining),
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}

fn names_of(list: &[ProfileCount]) -> Vec<&str> {
    list.iter().map(|p| p.name.as_str()).collect()
}

fn is_sorted(names: &[&str]) -> bool {
    names.windows(2).all(|w| matches!(w, [a, b] if a <= b))
}
