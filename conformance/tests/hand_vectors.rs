//! Hand-made vectors for the tests of FULL-SET.md that the public vector files lack, one or
//! more per Go test, each in the input shape of its file's public vectors. Every case is run
//! twice: as the Go test asserts it (must pass) and with one asserted value changed (must
//! fail), so an adapter that reported nothing, or the wrong thing, cannot pass.

use serde_json::{json, Value};

use conformance::adapters::adapter_for;
use conformance::{Outcome, Vector};

fn vector(stem: &str, test: &str, input: Value, expected: Value) -> Vector {
    Vector::of(&format!("{stem}-source#{test}"), input, expected)
}

fn run(stem: &str, test: &str, input: &Value, expected: &Value) -> Outcome {
    let adapter = adapter_for(stem).unwrap_or_else(|| panic!("no adapter for {stem}"));
    adapter(&vector(stem, test, input.clone(), expected.clone()))
}

/// `expected` passes, and `expected` with `path` (dot-separated object keys) set to `wrong`
/// fails.
fn passes_and_discriminates(
    stem: &str,
    test: &str,
    input: Value,
    expected: Value,
    path: &str,
    wrong: Value,
) {
    let got = run(stem, test, &input, &expected);
    assert_eq!(got, Outcome::Pass, "{stem} {test}");
    let mut bad = expected.clone();
    let mut at = &mut bad;
    let keys: Vec<&str> = path.split('.').collect();
    for k in &keys[..keys.len() - 1] {
        at = at.get_mut(*k).unwrap_or_else(|| panic!("no {k} in {path}"));
    }
    at[keys[keys.len() - 1]] = wrong;
    let got = run(stem, test, &input, &bad);
    assert!(
        matches!(got, Outcome::Fail { .. }),
        "{stem} {test}: a wrong {path} must fail, got {got:?}"
    );
}

#[test]
fn credits_per_card_invariants() {
    passes_and_discriminates(
        "credits",
        "TestCreditsPerCardInvariants",
        json!({}),
        json!({"CreditsPerCard": 1_600_000, "B_mod_10": 0, "B_mod_every_partition_size": 0}),
        "CreditsPerCard",
        json!(1_280_000),
    );
}

#[test]
fn normalized_profile_name_round_trips_through_its_key() {
    passes_and_discriminates(
        "resource_names",
        "TestNormalizePartitionedProfileNameRoundTrip",
        json!({"in": "MIG 3G.40GB"}),
        json!({
            "normalized": "3g.40gb",
            "key": "nvidia.com/gpu.partitioned.mig-3g.40gb",
            "ok": true,
            "profile_of_key": "3g.40gb",
        }),
        "profile_of_key",
        json!("MIG 3G.40GB"),
    );
}

#[test]
fn general_key_budget_leaves_room_for_the_capacity_suffix() {
    let long = "epyc-9654-96-core-processor-".repeat(4);
    passes_and_discriminates(
        "nodefeature_labels",
        "TestExtractGeneralNodeKey_BudgetLeavesRoomForSuffix",
        json!({
            "node_labels": {"feature.node.kubernetes.io/cpu-model.vendor_id": "AMD"},
            "node_annotations": {"feature.gpustack.ai/cpu-name": long},
        }),
        json!({
            "general_key_non_empty": true,
            "general_key_prefix": "amd-",
            "len_key_plus_capacity_suffix_max": 63,
        }),
        "general_key_prefix",
        json!("intel-"),
    );
    // The bound is a real check: a tighter one than the key meets fails.
    let tight = run(
        "nodefeature_labels",
        "TestExtractGeneralNodeKey_BudgetLeavesRoomForSuffix",
        &json!({
            "node_labels": {"feature.node.kubernetes.io/cpu-model.vendor_id": "AMD"},
            "node_annotations": {"feature.gpustack.ai/cpu-name": long},
        }),
        &json!({"len_key_plus_capacity_suffix_max": 20}),
    );
    assert!(matches!(tight, Outcome::Fail { .. }), "{tight:?}");
}

#[test]
fn nil_node_labels_give_no_flavors() {
    passes_and_discriminates(
        "nodefeature_labels",
        "TestExtractNodeFlavors",
        json!({"node_labels": null, "node_annotations": null, "cpu_capacity": 8}),
        json!({"flavors": []}),
        "flavors",
        json!([{"name": "gpustack--generic-linux-amd64-8c"}]),
    );
}

#[test]
fn candidate_devices_come_back_sorted_by_node() {
    let flavor = |name: &str, batch: &str| {
        json!({"name": name, "node_labels": {
            "acceleratable.feature.gpustack.ai/nvidia-h20": "true",
            "batch.example.com/id": batch,
        }})
    };
    let node = |name: &str, batch: &str| {
        json!({"name": name, "labels": {
            "acceleratable.feature.gpustack.ai/nvidia-h20": "true",
            "batch.example.com/id": batch,
        }})
    };
    passes_and_discriminates(
        "admission_flavor_scope",
        "TestCandidateDevicesOrderIsStable",
        json!({
            "flavors": [flavor("flavor-a", "1"), flavor("flavor-b", "2")],
            // Listed interleaved: an unsorted result would be [a c b] or [b a c].
            "devices": [node("node-a", "1"), node("node-c", "1"), node("node-b", "2")],
            "workload_assignments": [
                {"podset": "prefill", "flavors": {"credits.gpustack.ai/nvidia": "flavor-b"}},
                {"podset": "decode", "flavors": {"credits.gpustack.ai/nvidia": "flavor-a"}},
            ],
        }),
        json!({"candidates": ["node-a", "node-b", "node-c"]}),
        "candidates",
        json!(["node-a", "node-c", "node-b"]),
    );
}

#[test]
fn nil_devices_and_flavors_give_no_candidates() {
    passes_and_discriminates(
        "admission_flavor_scope",
        "TestCandidateDevices",
        json!({
            "flavors": null,
            "devices": null,
            "workload_assignments": [{"podset": "main", "flavors": null}, null],
        }),
        json!({"candidates": []}),
        "candidates",
        json!(["node-a"]),
    );
}

fn exclusive_podset(name: &str, count: u32, cards: &str) -> Value {
    json!({"name": name, "count": count, "containers": [
        {"name": "c", "init": false, "requests": {"nvidia.com/gpu": cards}, "limits": null}
    ]})
}

#[test]
fn identical_podsets_merge_into_one_demand() {
    passes_and_discriminates(
        "admission_parse_demands",
        "TestParseFamilyDemands_MergesIdenticalPodSets",
        json!({"podsets": [exclusive_podset("a", 2, "1"), exclusive_podset("b", 3, "1")]}),
        json!({"demands": [{"family": "exclusive", "cards": 5, "podsets": ["a", "b"]}]}),
        "demands",
        json!([
            {"family": "exclusive", "cards": 2, "podsets": ["a"]},
            {"family": "exclusive", "cards": 3, "podsets": ["b"]},
        ]),
    );
}

#[test]
fn nil_podsets_have_no_demands() {
    passes_and_discriminates(
        "admission_parse_demands",
        "TestParseFamilyDemands",
        json!({"podsets": null}),
        json!({"demands": []}),
        "demands",
        json!([{"family": "exclusive"}]),
    );
}

/// A logically sliceable card (`unpartitionedCard`) with `pct` percent free; 100 = free.
fn logical_card(i: usize, pct: i64) -> Value {
    let (mode, units) = if pct == 100 {
        ("None", 1_600_000)
    } else {
        ("Sliced", pct * 16_000)
    };
    json!({"id": format!("card-{i}"), "index": i,
           "capability": {"logical_sliced_count": 10},
           "ledger": {"mode": mode, "remaining_units": units}})
}

fn h100_catalog() -> Value {
    json!([
        {"name": "1g.10gb", "count": 7}, {"name": "2g.20gb", "count": 3},
        {"name": "3g.40gb", "count": 2}, {"name": "4g.40gb", "count": 1},
        {"name": "7g.80gb", "count": 1}, {"name": "1g.20gb", "count": 4},
    ])
}

fn partitioned_card(
    i: usize,
    ceiling: i64,
    catalog: Value,
    remaining: Value,
    allocated: Value,
) -> Value {
    json!({"id": format!("card-{i}"), "index": i,
           "capability": {"physical_sliced_count": ceiling, "physical_profiles": catalog},
           "ledger": {"mode": "Partitioned", "remaining_units": 1_600_000,
                      "remaining_profiles": remaining, "allocated_profiles": allocated}})
}

fn pool_node(name: &str, cards: Vec<Value>) -> Value {
    json!({"name": name, "groups": [{"manufacturer": "nvidia", "id": "a10g", "cards": cards}]})
}

#[test]
fn sliced_once_max_is_the_freest_card() {
    passes_and_discriminates(
        "four_view",
        "TestAcceleratorFourViews_SlicedOnceMaxIsPerCard",
        json!({"pool_key": "nvidia-a10g", "nodes": [pool_node("a", vec![
            logical_card(0, 40), logical_card(1, 30), logical_card(2, 20),
        ])]}),
        json!({"sliced": {"once_max_request": 40, "remaining": 90, "capacity": 300}}),
        "sliced.once_max_request",
        json!(90),
    );
}

#[test]
fn a_logical_only_pool_reports_no_partition_capacity() {
    passes_and_discriminates(
        "four_view",
        "TestAcceleratorViews_LogicalOnlyPool",
        json!({"pool_key": "nvidia-a10g", "nodes": [pool_node("a", vec![
            logical_card(0, 100), logical_card(1, 80),
        ])]}),
        json!({
            "exclusive": {"once_max_request": 1, "remaining": 1, "capacity": 2},
            "shared": {"once_max_request": 1, "remaining": 10, "capacity": 20},
            "sliced": {"once_max_request": 100, "remaining": 180, "capacity": 200},
            "partitioned": {"once_max_request": 0, "remaining": 0, "capacity": 0},
        }),
        "sliced.remaining",
        json!(200),
    );
}

#[test]
fn a_partition_survives_its_first_allocation() {
    let remaining = json!([
        {"name": "1g.5gb", "count": 6}, {"name": "2g.10gb", "count": 2}, {"name": "3g.20gb", "count": 1},
    ]);
    passes_and_discriminates(
        "four_view",
        "TestAcceleratorViews_PartitionSurvivesFirstAllocation",
        json!({"pool_key": "nvidia-a10g", "nodes": [pool_node("a", vec![
            partitioned_card(0, 7, json!([]), remaining, json!([])),
        ])]}),
        json!({"partitioned": {"once_max_request": 1, "remaining": 6, "capacity": 7}}),
        "partitioned.remaining",
        json!(0),
    );
}

#[test]
fn the_profile_ledger_sums_across_nodes() {
    let carved = || {
        partitioned_card(
            0,
            7,
            h100_catalog(),
            json!([{"name": "1g.10gb", "count": 6}, {"name": "3g.40gb", "count": 1}]),
            json!([{"name": "1g.10gb", "count": 1}]),
        )
    };
    passes_and_discriminates(
        "four_view",
        "TestAcceleratorViews_PartitionProfileLedgerMultiNode",
        json!({"pool_key": "nvidia-a10g", "nodes": [
            pool_node("a", vec![carved()]), pool_node("b", vec![carved()]),
        ]}),
        json!({"partitioned": {
            "allocated_profiles": [{"name": "1g.10gb", "count": 2}],
            "remaining_profiles": [
                {"name": "1g.10gb", "count": 12}, {"name": "1g.20gb", "count": 0},
                {"name": "2g.20gb", "count": 0}, {"name": "3g.40gb", "count": 2},
                {"name": "4g.40gb", "count": 0}, {"name": "7g.80gb", "count": 0},
            ],
        }}),
        "partitioned.allocated_profiles",
        json!([{"name": "1g.10gb", "count": 1}]),
    );
}

#[test]
fn the_ledger_not_ready_message_names_the_role() {
    passes_and_discriminates(
        "admission_messages",
        "TestPartitionLedgerNotReadyMessageNamesTheRole",
        json!({"fn": "partitionLedgerNotReadyMessage", "podsets": null}),
        json!({
            "message_contains": ["device manager rolling out"],
            "message_not_contains": ["for role"],
        }),
        "message_contains",
        json!(["for role"]),
    );
    passes_and_discriminates(
        "admission_messages",
        "TestPartitionLedgerNotReadyMessageNamesTheRole",
        json!({"fn": "partitionLedgerNotReadyMessage", "podsets": ["decode"]}),
        json!({"message_contains": ["for role \"decode\"", "device manager rolling out"]}),
        "message_contains",
        json!(["for role \"prefill\""]),
    );
}

/// One partition-capable card with no cached placements (the rollout window) or a full one.
fn partition_pool(mode: &str, placements: bool) -> Value {
    let profile = if placements {
        json!({"name": "cap", "count": 7, "placements": [{"start": 0, "length": 1}]})
    } else {
        json!({"name": "cap", "count": 7})
    };
    json!([{"groups": [{"manufacturer": "nvidia", "id": "g0", "cards": [{
        "id": "g0", "index": 0,
        "capability": {"physical_sliced_count": 7, "physical_profiles": [profile]},
        "ledger": {"mode": mode, "remaining_units": 0,
                   "remaining_profiles": [{"name": "1g.10gb", "count": 0}]},
    }]}], "scopes": [{"flavor": "", "accelerator_key": "nvidia-g0", "accelerator_count": 0}]}])
}

#[test]
fn the_rollout_window_verdict_equals_the_ledger_not_ready_message() {
    let demands = json!([{"family": "partitioned", "cards": 1, "units_per_card": 0,
                          "profile": "1g.10gb", "flavor": "", "podsets": []}]);
    let expected = json!({
        "verdict": "Retry",
        "message_equals_function": "partitionLedgerNotReadyMessage(nil)",
    });
    passes_and_discriminates(
        "admission",
        "TestNodeDevicesFeasibilityPartitionedMessages",
        json!({"pool": partition_pool("None", false), "demands": demands}),
        expected.clone(),
        "verdict",
        json!("Ready"),
    );
    // A genuinely full profile is another message.
    let full = run(
        "admission",
        "TestNodeDevicesFeasibilityPartitionedMessages",
        &json!({"pool": partition_pool("Partitioned", true), "demands": demands}),
        &expected,
    );
    assert!(matches!(full, Outcome::Fail { .. }), "{full:?}");
}

fn reconcile_input(assignments: Value, check: &str, delay: Value) -> Value {
    let labels = json!({
        "feature.gpustack.ai/nvidia": "true",
        "acceleratable.feature.gpustack.ai/nvidia-g0": "true",
    });
    json!({
        "flavors": [{"name": "gpu-pool", "node_labels": labels}],
        "devices": [{"name": "node-a", "labels": labels, "groups": [{
            "manufacturer": "nvidia", "id": "g0", "cards": [{
                "id": "gpu-0", "index": 0, "capability": {"logical_sliced_count": 10},
                "ledger": {"mode": "None", "remaining_units": 1_600_000},
            }],
        }]}],
        "workload": {
            "podsets": [exclusive_podset("main", 1, "2")],
            "assignments": assignments,
            "conditions_true": ["QuotaReserved"],
            "check_state": check,
            "check_requeue_after_seconds": delay,
        },
    })
}

#[test]
fn a_missing_retry_delay_is_restored() {
    let assigned =
        json!([{"podset": "main", "flavors": {"credits.gpustack.ai/nvidia": "gpu-pool"}}]);
    passes_and_discriminates(
        "admission_reconcile",
        "TestNodeDevicesAdmission_RestoresAMissingRetryDelay",
        reconcile_input(assigned.clone(), "Retry", Value::Null),
        json!({"check_state": "Retry", "requeue_after_seconds": 30, "changed": true}),
        "requeue_after_seconds",
        Value::Null,
    );
    // With the delay already there the verdict is byte-identical: nothing to write.
    passes_and_discriminates(
        "admission_reconcile",
        "TestNodeDevicesAdmission_RestoresAMissingRetryDelay",
        reconcile_input(assigned, "Retry", json!(30)),
        json!({"changed": false, "requeue_after_seconds": 30}),
        "changed",
        json!(true),
    );
}

#[test]
fn the_message_follows_the_cause_that_is_now_true() {
    passes_and_discriminates(
        "admission_reconcile",
        "TestNodeDevicesAdmission_RefreshesTheMessageWhenTheCauseChanges",
        reconcile_input(Value::Null, "Pending", Value::Null),
        json!({"sequence": [
            {"step": "reconcile", "check_state": "Retry",
             "message_contains": ["does not resolve to a single accelerator flavor"]},
            {"step": "Kueue assigns the flavor; reconcile", "check_state": "Retry",
             "message_contains": ["enough free cards"],
             "message_not_contains": ["does not resolve to a single accelerator flavor"]},
        ]}),
        "sequence",
        json!([
            {"step": "reconcile", "check_state": "Retry"},
            {"step": "Kueue assigns the flavor; reconcile", "check_state": "Retry",
             "message_contains": ["does not resolve to a single accelerator flavor"]},
        ]),
    );
}

#[test]
fn an_input_step_may_carry_the_assignment() {
    let mut input = reconcile_input(Value::Null, "Pending", Value::Null);
    input["steps"] = json!([
        {},
        {"assignments": [{"podset": "main", "flavors": {"credits.gpustack.ai/nvidia": "gpu-pool"}}]},
    ]);
    passes_and_discriminates(
        "admission_reconcile",
        "TestNodeDevicesAdmission_RefreshesTheMessageWhenTheCauseChanges",
        input,
        json!({"sequence": [
            {"step": "reconcile", "check_state": "Retry",
             "message_contains": ["does not resolve to a single accelerator flavor"]},
            {"step": "reconcile", "check_state": "Retry",
             "message_not_contains": ["does not resolve to a single accelerator flavor"]},
        ]}),
        "sequence",
        json!([
            {"step": "reconcile", "check_state": "Retry"},
            {"step": "reconcile", "check_state": "Ready"},
        ]),
    );
}

#[test]
fn an_accelerated_cpu_note_folds_into_the_accelerator_cpu() {
    passes_and_discriminates(
        "instancetype_detail",
        "TestFoldDetailCPU",
        json!({"note": {"manufacturer": "amd", "product": "EPYC 7763", "physicalCores": "64"},
               "accelerated": true}),
        json!({
            "accelerator_cpu": {"manufacturer": "amd", "product": "EPYC 7763", "physical_cores": "64"},
            "top_level_physical_cores": "",
        }),
        "accelerator_cpu.physical_cores",
        json!("32"),
    );
}
