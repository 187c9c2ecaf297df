//! Every modelled case on the twin tier: its model rows as on the model tier, and the twin's
//! objects equal to the model's at every write step. A case that guards a mutant fails on a
//! twin whose operator runs that mutant.

use cases::library::cases;
use cases::run::Status;
use cases::tier::TierRunner;
use cases::{TwinTier, TWIN_CHECK};
use model::mutants::Mutant;

#[test]
fn every_modelled_case_agrees_with_the_model_on_the_twin() {
    let tier = TwinTier::start(None).expect("an embedded twin");
    let mut judged = 0;
    let mut diverged = Vec::new();
    for c in cases() {
        let c = c.unwrap();
        let run = tier.run(&c);
        let Some(row) = run.rows.iter().find(|r| r.check == TWIN_CHECK) else {
            continue;
        };
        judged += 1;
        if row.status != Status::Pass {
            diverged.push((c.header.number, row.object.clone()));
        }
    }
    // none is known: cases 2 and 3 diverged while the twin kept an apply's ownership of a
    // label a later patch had rewritten (the twin now moves it, as an API server does)
    assert_eq!(diverged, Vec::<(u32, String)>::new());
    assert!(judged >= 30, "only {judged} cases reached the twin");
}

#[test]
fn a_guarding_case_fails_on_a_mutated_twin() {
    let case = cases()
        .into_iter()
        .map(Result::unwrap)
        .find(|c| c.header.number == 2)
        .expect("case 2");
    assert!(case.header.guards.contains(&Mutant::QuotaOffByOne));
    let run = TwinTier::start(Some(Mutant::QuotaOffByOne))
        .expect("an embedded twin")
        .run(&case);
    let row = run.rows.iter().find(|r| r.check == TWIN_CHECK).unwrap();
    assert_eq!(row.status, Status::Fail, "{run:#?}");
    assert!(row.object.contains("nominalQuota"), "{}", row.object);
    assert_eq!(run.verdict.exit_code(), 1);
}
