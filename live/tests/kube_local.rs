//! `kube/kueue/resources.yaml`, the Kueue `resources` section `scripts/kube start` installs,
//! is the one the model's transformations give.

use std::path::Path;

use live::kube_local::{kueue_resources_yaml, KUEUE_RESOURCES_FILE};

#[test]
fn the_kueue_resources_file_is_the_models() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(KUEUE_RESOURCES_FILE);
    let expected = kueue_resources_yaml();
    // bless: VERIFY_BLESS=1 writes the model's section into the file
    if std::env::var_os("VERIFY_BLESS").is_some() {
        std::fs::write(&path, &expected).expect("writing the resources file");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == expected,
        "{} differs from the model's transformations; run `VERIFY_BLESS=1 cargo test -p live --test kube_local` to rewrite it:\n{expected}",
        path.display()
    );
}

#[test]
fn every_credits_key_is_folded_and_parses_as_yaml() {
    let text = kueue_resources_yaml();
    let parsed: serde_json::Value = serde_norway::from_str(&text).expect("valid YAML");
    let inputs: Vec<&str> = parsed["resources"]["transformations"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t["input"].as_str())
        .collect();
    for key in [
        "nvidia.com/gpu",
        "nvidia.com/gpu.shared",
        "nvidia.com/gpu.sliced.units",
    ] {
        assert!(inputs.contains(&key), "{key} missing from {inputs:?}");
    }
    let sliced = parsed["resources"]["transformations"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|t| t["input"] == "nvidia.com/gpu.sliced.units")
        })
        .expect("the sliced units transformation");
    assert_eq!(sliced["multiplyBy"], "nvidia.com/gpu.sliced");
    // a per-profile partition key is excluded, its units are not
    let excluded: Vec<&str> = parsed["resources"]["excludeResourcePrefixes"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|p| p.as_str())
        .collect();
    let excludes = |key: &str| excluded.iter().any(|p| key.starts_with(p));
    assert!(
        excludes("hygon.com/dcu.partitioned.mig-4g.31gb"),
        "{excluded:?}"
    );
    assert!(
        excludes("nvidia.com/gpu.partitioned.mig-1g.5gb"),
        "{excluded:?}"
    );
    assert!(
        !excludes("nvidia.com/gpu.partitioned.units"),
        "{excluded:?}"
    );
    assert!(!excludes("nvidia.com/gpu.sliced.units"), "{excluded:?}");
    assert_eq!(sliced["outputs"]["credits.gpustack.ai/nvidia"], "1");
}
