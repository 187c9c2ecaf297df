//! Case files: the `case:` header beside a scenario, read strictly, with lines kept for errors;
//! the field, count and fit-label expectations round-trip.

use model::mutants::Mutant;
use model::scenario::{
    CaseHeader, CaseInput, Compare, Expectation, LiveGate, LiveOnlyCheck, ObjectKind, Posture,
    Scenario,
};
use scenario::{case_from_yaml, case_to_yaml, from_yaml, to_yaml, CaseFile};

fn header() -> CaseHeader {
    CaseHeader {
        number: 24,
        title: "Mixed node: a partition lands on a partitioned card".into(),
        posture: Posture::Mutating,
        auto_skips: vec!["a partition-capable card".into()],
        usage: "MIG_NODE_SSH=<user@host> verify case 24".into(),
        goal: "g".into(),
        environment: vec!["e: with a colon".into()],
        inputs: vec![
            CaseInput {
                what: "a mocked ledger".into(),
                mocked: true,
            },
            CaseInput {
                what: "the queue".into(),
                mocked: false,
            },
        ],
        expected: vec!["x".into()],
        cleanup: "disable only the toggled cards".into(),
        live_only: vec![LiveOnlyCheck {
            check: "events".into(),
            why: "a cluster fact".into(),
        }],
        gate: Some(LiveGate {
            env: Some("MIG_NODE_SSH".into()),
            hardware: "a MIG card".into(),
        }),
        guards: vec![Mutant::OneTokenPool],
    }
}

fn expectations() -> Vec<Expectation> {
    vec![
        Expectation::Field {
            step: 1,
            kind: ObjectKind::InstanceType,
            name: "gpustack-*".into(),
            path: vec![
                "labels".into(),
                "a.b/c".into(),
                "[name=x]".into(),
                "#len".into(),
            ],
            op: Compare::Ge,
            value: Some("3".into()),
            same_as: None,
            check: "c".into(),
        },
        Expectation::Field {
            step: 0,
            kind: ObjectKind::ClusterQueue,
            name: "q".into(),
            path: vec!["spec".into(), "os".into()],
            op: Compare::Eq,
            value: None,
            same_as: Some(vec!["labels".into(), "kubernetes.io/os".into()]),
            check: String::new(),
        },
        Expectation::Count {
            step: 2,
            kind: ObjectKind::LocalQueue,
            name: "gpustack-fnv64-*".into(),
            op: Compare::Eq,
            value: 0,
            check: String::new(),
        },
        Expectation::FitLabel {
            step: 0,
            node: "a".into(),
            accelerator_key: "nvidia-e2efit".into(),
            value: Some(640000),
            slice_units: Some(800000),
            admits: Some(false),
            check: "pin".into(),
        },
    ]
}

#[test]
fn a_case_file_round_trips() {
    let c = CaseFile {
        header: Some(header()),
        scenario: Scenario {
            name: "case-24".into(),
            expect: expectations(),
            ..Scenario::default()
        },
    };
    let text = case_to_yaml(&c).unwrap();
    assert!(text.starts_with("case:\n"), "{text}");
    assert_eq!(case_from_yaml(&text, "t.yaml").unwrap(), c);
    // The scenario reader accepts the file too and drops the header.
    assert_eq!(from_yaml(&text, "t.yaml").unwrap(), c.scenario);
}

#[test]
fn new_expectation_kinds_round_trip_in_a_plain_scenario() {
    let s = Scenario {
        name: "s".into(),
        expect: expectations(),
        ..Scenario::default()
    };
    assert_eq!(from_yaml(&to_yaml(&s), "s.yaml").unwrap(), s);
}

#[test]
fn a_bad_header_field_is_named_and_a_later_error_keeps_its_line() {
    let text = "case:\n  number: 3\n  titel: x\nname: n\n";
    let e = case_from_yaml(text, "c.yaml").unwrap_err().to_string();
    assert!(e.contains("c.yaml"), "{e}");
    assert!(e.contains("case"), "{e}");
    assert!(e.contains("titel"), "{e}");
    let text = "case:\n  number: 3\n  title: x\nname: n\nevents:\n- event: explode\n";
    let e = case_from_yaml(text, "c.yaml").unwrap_err().to_string();
    assert!(e.contains("c.yaml:6"), "{e}");
}

#[test]
fn a_file_without_a_header_reads_as_before() {
    let c = case_from_yaml("name: n\n", "n.yaml").unwrap();
    assert_eq!(c.header, None);
    assert_eq!(c.scenario.name, "n");
}
