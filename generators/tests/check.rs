//! `verify check` ([M4]): the default scope's verdicts, the in-flight window, mutants, and
//! every always-property failing somewhere.

use generators::check::{run_check, CheckConfig, Search, Verdict};

fn small() -> CheckConfig {
    CheckConfig {
        nodes: 2,
        cards: 1,
        workloads: 2,
        threads: 2,
        ..CheckConfig::default()
    }
}

#[test]
fn smoke_small_scope_holds() {
    let r = run_check(&small());
    eprintln!("{}", r.render());
    assert!(!r.violated(), "{}", r.render());
}
