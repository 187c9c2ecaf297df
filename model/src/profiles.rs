//! Partition profile spelling across the operator boundary (admission.md §2.5; chain.md §9;
//! pkg/nodefeature/knowns.go `PublishPartitionedProfileName` / `VendorPartitionedProfileName`).
//!
//! A manufacturer whose library writes a profile's geometry without a separator (T-Head:
//! `4g48gb`) is *published* with one (`4g.48gb`): resource keys, per-profile ledgers a user
//! reads and requests carry the published name; the Devices record keeps the vendor's. Names of
//! any other shape, and every manufacturer that writes the separator itself, pass through.

use crate::devices::ProfileCount;

/// Manufacturers whose library omits the geometry separator (knowns.go: T-Head only). Hygon's
/// driver reports `2g.15gb` / `4g.31gb` / `8g.63gb` with the dot already (hygon-mig.md @0421f1c
/// "How partition profiles are discovered"), so its names are published verbatim.
pub const SEPARATORLESS_MANUFACTURERS: [&str; 1] = ["thead"];

/// Whether `manufacturer` spells profile geometry without a separator; knowns.go.
pub fn writes_separatorless_profiles(manufacturer: &str) -> bool {
    SEPARATORLESS_MANUFACTURERS.contains(&manufacturer)
}

/// A run of one or more ASCII digits at the start of `s`: (digits, rest).
fn leading_digits(s: &str) -> Option<(&str, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    (end > 0).then(|| s.split_at(end))
}

/// The two numbers of a geometry `<n>g<sep><m>gb` (whole name), with `sep` = "" or ".".
fn geometry_numbers<'a>(name: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let (compute, rest) = leading_digits(name)?;
    let rest = rest.strip_prefix('g')?.strip_prefix(sep)?;
    let (memory, rest) = leading_digits(rest)?;
    (rest == "gb").then_some((compute, memory))
}

/// Vendor → published spelling (`4g48gb` → `4g.48gb` for T-Head); knowns.go.
pub fn publish_profile_name(manufacturer: &str, vendor_name: &str) -> String {
    if !writes_separatorless_profiles(manufacturer) {
        return vendor_name.to_string();
    }
    match geometry_numbers(vendor_name, "") {
        Some((compute, memory)) => format!("{compute}g.{memory}gb"),
        None => vendor_name.to_string(),
    }
}

/// Published → vendor spelling (`4g.48gb` → `4g48gb` for T-Head), the inverse; knowns.go.
pub fn vendor_profile_name(manufacturer: &str, published: &str) -> String {
    if !writes_separatorless_profiles(manufacturer) {
        return published.to_string();
    }
    match geometry_numbers(published, ".") {
        Some((compute, memory)) => format!("{compute}g{memory}gb"),
        None => published.to_string(),
    }
}

/// A `{name, count}` list in published spelling, sorted by name; instance_type.go
/// `publishPartitionProfileNames`.
pub fn publish_profiles(manufacturer: &str, list: &[ProfileCount]) -> Vec<ProfileCount> {
    let mut out: Vec<ProfileCount> = list
        .iter()
        .map(|p| ProfileCount {
            name: publish_profile_name(manufacturer, &p.name).into(),
            count: p.count,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thead_geometry_gains_the_separator() {
        assert_eq!(publish_profile_name("thead", "4g48gb"), "4g.48gb");
        assert_eq!(publish_profile_name("thead", "8g96gb"), "8g.96gb");
        assert_eq!(publish_profile_name("thead", "16g192gb"), "16g.192gb");
    }

    #[test]
    fn publishing_is_idempotent_and_leaves_other_shapes() {
        assert_eq!(publish_profile_name("thead", "4g.48gb"), "4g.48gb");
        assert_eq!(publish_profile_name("thead", "1c.12g"), "1c.12g");
        assert_eq!(publish_profile_name("thead", ""), "");
        assert_eq!(publish_profile_name("thead", "g48gb"), "g48gb");
        assert_eq!(publish_profile_name("thead", "4g48gbx"), "4g48gbx");
        assert_eq!(publish_profile_name("thead", "4g48"), "4g48");
    }

    #[test]
    fn other_manufacturers_pass_through() {
        assert_eq!(publish_profile_name("nvidia", "3g.40gb"), "3g.40gb");
        assert_eq!(publish_profile_name("nvidia", "4g48gb"), "4g48gb");
        assert_eq!(publish_profile_name("", "4g48gb"), "4g48gb");
        assert_eq!(vendor_profile_name("nvidia", "3g.40gb"), "3g.40gb");
        assert_eq!(vendor_profile_name("", "4g.48gb"), "4g.48gb");
    }

    #[test]
    fn hygon_names_are_published_verbatim() {
        assert!(!writes_separatorless_profiles("hygon"));
        for v in ["2g.15gb", "4g.31gb", "8g.63gb"] {
            assert_eq!(publish_profile_name("hygon", v), v);
            assert_eq!(vendor_profile_name("hygon", v), v);
        }
        // A separator-less spelling is not Hygon's: it is left alone, never rewritten.
        assert_eq!(publish_profile_name("hygon", "2g15gb"), "2g15gb");
    }

    #[test]
    fn vendor_name_is_the_inverse() {
        assert_eq!(vendor_profile_name("thead", "4g.48gb"), "4g48gb");
        assert_eq!(vendor_profile_name("thead", "16g.192gb"), "16g192gb");
        assert_eq!(vendor_profile_name("thead", "4g48gb"), "4g48gb");
        assert_eq!(vendor_profile_name("thead", "1c.12g"), "1c.12g");
        assert_eq!(vendor_profile_name("thead", ""), "");
        for v in ["4g48gb", "8g96gb", "1c.12g"] {
            assert_eq!(
                vendor_profile_name("thead", &publish_profile_name("thead", v)),
                v
            );
        }
    }

    #[test]
    fn published_lists_are_renamed_and_sorted() {
        let list = vec![
            ProfileCount {
                name: "8g96gb".into(),
                count: 2,
            },
            ProfileCount {
                name: "4g48gb".into(),
                count: 1,
            },
        ];
        let got = publish_profiles("thead", &list);
        let names: Vec<&str> = got.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["4g.48gb", "8g.96gb"]);
        assert_eq!(got[0].count, 1);
    }
}
