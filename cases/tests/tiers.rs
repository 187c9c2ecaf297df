//! The tier parameter and the live gating (cases.md §2.4), with a stand-in tier for the
//! hardware question.

use cases::run::Verdict;
use cases::tier::{gate_verdict, gated, run_gated, CaseTier, Gate, GateVerdict, Tier};
use cases::{run_block, run_case, Block};
use outcome::{Concluded, Outcome};

/// A cluster that has none of the hardware a gate names.
fn no_hardware() -> Gate {
    Gate {
        tier: Tier::Live,
        available: true,
        hardware: Some(Vec::new()),
    }
}

/// The run the gate gives `case` on a tier without its hardware (it must not run).
fn run_without_hardware(
    case: &cases::LockedCase,
    env: &dyn Fn(&str) -> Option<String>,
) -> cases::CaseRun {
    gated(&no_hardware(), case, env).unwrap_or_else(|| {
        panic!(
            "case {} must not run without its hardware",
            case.header.number
        )
    })
}

fn unset(_: &str) -> Option<String> {
    None
}

fn set(k: &str) -> Option<String> {
    (k == "MIG_NODE_SSH").then(|| "ops@gpu-host".to_string())
}

#[test]
fn live_without_mig_node_ssh_is_input_required_naming_it() {
    let c = cases::case(27).unwrap().unwrap();
    let run = run_gated(&CaseTier::unavailable(Tier::Live), &c, &unset);
    assert_eq!(
        run.verdict,
        Verdict::InputRequired {
            variable: "MIG_NODE_SSH".into()
        }
    );
    assert_eq!(run.verdict.outcome(), Outcome::Usage);
    assert!(cases::render::case_text(&run).contains("MIG_NODE_SSH"));
}

#[test]
fn hardware_absent_is_a_skip_with_nothing_verified_never_exit_2() {
    let c = cases::case(24).unwrap().unwrap();
    assert_eq!(
        gate_verdict(&no_hardware(), c.header.gate.as_ref(), &set),
        GateVerdict::Skip(
            "this cluster lacks a partition-capable NVIDIA card reachable over SSH".into()
        )
    );
    let run = run_without_hardware(&c, &set);
    assert!(run.verdict.outcome().passed());
    assert!(cases::render::case_text(&run).contains("NOTHING WAS VERIFIED"));
    // The variable still comes first: unset, it is input required even without hardware.
    assert!(matches!(
        run_without_hardware(&c, &unset).verdict,
        Verdict::InputRequired { .. }
    ));
}

/// The stand-in for a tier not built (the live tier today; the twin before it existed).
#[test]
fn a_tier_not_built_answers_not_available_yet() {
    for tier in [Tier::Twin, Tier::Live] {
        let run = run_case(14, &CaseTier::unavailable(tier), &set).unwrap();
        assert_eq!(run.verdict, Verdict::Unavailable { tier });
        assert!(cases::render::verdict_line(&run).contains("not available yet"));
        assert_eq!(run.verdict.outcome(), Outcome::Usage);
    }
}

#[test]
fn the_model_tier_needs_no_address() {
    let run = run_case(27, &CaseTier::model(None), &unset).unwrap();
    assert!(matches!(run.verdict, Verdict::Pass { .. }), "{run:#?}");
}

#[test]
fn the_mig_block_runs_27_then_24_and_stops_at_a_missing_input() {
    let runs = run_block(Block::Mig, &CaseTier::model(None), &unset).unwrap();
    let order: Vec<u32> = runs.iter().map(|r| r.number).collect();
    assert_eq!(order, vec![27, 24, 25, 26, 28, 29, 30, 31, 32, 34]);
    assert!(runs.outcome().passed());
    let live = run_block(Block::Mig, &CaseTier::unavailable(Tier::Live), &unset).unwrap();
    assert_eq!(
        live.len(),
        1,
        "the block stops at the first input-required case"
    );
    assert_eq!(live.outcome(), Outcome::Usage);
}

#[test]
fn the_rdma_block_skips_every_case_on_the_model_and_says_so() {
    let runs = run_block(Block::Rdma, &CaseTier::model(None), &unset).unwrap();
    assert_eq!(
        runs.iter().map(|r| r.number).collect::<Vec<_>>(),
        vec![80, 81, 82, 83, 84]
    );
    for r in &runs {
        assert!(matches!(r.verdict, Verdict::Skipped { .. }), "{r:#?}");
        assert!(cases::render::case_text(r).contains("NOTHING WAS VERIFIED"));
    }
    assert!(runs.outcome().passed());
}

#[test]
fn an_unmodelled_case_is_a_skip_naming_the_reason_and_an_unused_number_an_error() {
    let run = run_case(53, &CaseTier::model(None), &unset).unwrap();
    match &run.verdict {
        Verdict::Skipped { why } => assert!(why.contains("KV cache"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(run_case(33, &CaseTier::model(None), &unset)
        .unwrap_err()
        .to_string()
        .contains("never used"));
}

#[test]
fn exit_codes_combine_worst_first() {
    let pass = run_case(14, &CaseTier::model(None), &unset).unwrap();
    let fail = run_case(
        14,
        &CaseTier::model(Some(model::mutants::Mutant::QuotaOffByOne)),
        &unset,
    )
    .unwrap();
    let input = run_gated(
        &CaseTier::unavailable(Tier::Live),
        &cases::case(27).unwrap().unwrap(),
        &unset,
    );
    assert!(std::slice::from_ref(&pass).outcome().passed());
    assert_eq!([pass.clone(), fail.clone()].outcome(), Outcome::Failed);
    assert_eq!([fail, input, pass].outcome(), Outcome::Usage);
}

#[test]
fn case_39_on_the_live_tier_needs_ppu_node_ssh() {
    let c = cases::case(39).unwrap().unwrap();
    let run = run_gated(&CaseTier::unavailable(Tier::Live), &c, &set);
    assert_eq!(
        run.verdict,
        Verdict::InputRequired {
            variable: "PPU_NODE_SSH".into()
        }
    );
    // On the model it is a vendor runtime case: nothing verified, exit 0.
    let run = run_case(39, &CaseTier::model(None), &unset).unwrap();
    assert!(matches!(run.verdict, Verdict::Skipped { .. }), "{run:#?}");
}

/// Every hardware a case's live gate names is one the live tier's probe knows how to look for
/// (an unknown text would skip forever).
#[test]
fn every_gate_names_hardware_the_live_probe_knows() {
    use cases::probe::{HYGON_MULTI_INSTANCE, NVIDIA_PARTITIONS, RDMA_ENDPOINT, THEAD_TWO_IDLE};
    let known = [
        NVIDIA_PARTITIONS,
        HYGON_MULTI_INSTANCE,
        THEAD_TWO_IDLE,
        RDMA_ENDPOINT,
    ];
    for c in cases::cases() {
        let c = c.expect("the case file parses");
        if let Some(gate) = &c.header.gate {
            assert!(
                known.contains(&gate.hardware.as_str()),
                "case {}: {}",
                c.header.number,
                gate.hardware
            );
        }
    }
}
