//! Run directories and the regression file on a real (temporary) file system.

use std::fs;

use scenario::{from_yaml, run_id, Expectation, Regressions, RunDir, Scenario, ScenarioError};

fn counterexample() -> Scenario {
    Scenario {
        name: "shrunk".into(),
        seed: Some(42),
        expect: vec![Expectation::Violation {
            property: "quota-conserved".into(),
            message: "nominal 3 != capacity 4".into(),
        }],
        ..Scenario::default()
    }
}

#[test]
fn a_run_dir_is_base_slash_id_and_is_never_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("runs");
    let id = run_id(1_700_000_000, "s42");
    assert_eq!(id, "20231114T221320Z-s42");
    let run = RunDir::create(&base, &id).unwrap();
    assert_eq!(run.path(), base.join(&id));
    assert_eq!(run.id(), id);
    assert!(run.path().is_dir());
    let again = RunDir::create(&base, &id).unwrap_err();
    assert!(matches!(again, ScenarioError::Write { .. }), "{again:?}");
    assert!(
        again.to_string().contains("the run directory exists"),
        "{again}"
    );
}

#[test]
fn run_ids_that_would_escape_the_base_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["", "..", ".hidden", "a/b", "a\\b", "x\ny"] {
        let e = RunDir::create(tmp.path(), bad).unwrap_err();
        assert!(matches!(e, ScenarioError::RunId { .. }), "{bad:?}: {e:?}");
    }
}

#[test]
fn create_now_names_the_run_by_utc_time() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create_now(tmp.path()).unwrap();
    assert!(run.path().is_dir());
    assert!(run.id().starts_with("20"), "{}", run.id());
}

#[test]
fn counterexamples_are_written_as_a_replayable_pair_and_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    let cx = run.path().join("counterexamples");
    let s = counterexample();
    let first = run
        .write_counterexample(42, "quota-conserved", &s, "# first\n")
        .unwrap();
    assert_eq!(first, cx.join("42.yaml"));
    let text = fs::read_to_string(&first).unwrap();
    assert!(
        text.starts_with("# Counterexample: seed 42, property quota-conserved."),
        "{text}"
    );
    assert_eq!(from_yaml(&text, "ce.yaml").unwrap(), s);
    let md = cx.join("42.md");
    assert_eq!(fs::read_to_string(&md).unwrap(), "# first\n");

    // The same seed again: a new pair, the first untouched.
    let second = run
        .write_counterexample(42, "quota-conserved", &s, "# second\n")
        .unwrap();
    assert_eq!(second, cx.join("42-2.yaml"));
    assert_eq!(fs::read_to_string(&md).unwrap(), "# first\n");
    assert_eq!(
        fs::read_to_string(cx.join("42-2.md")).unwrap(),
        "# second\n"
    );

    // A report left without its scenario still blocks its name.
    fs::write(cx.join("7.md"), "orphan").unwrap();
    let third = run.write_counterexample(7, "p", &s, "new").unwrap();
    assert_eq!(third, cx.join("7-2.yaml"));
    assert_eq!(fs::read_to_string(cx.join("7.md")).unwrap(), "orphan");

    // A property name with a line break stays one comment line; no temp file is left.
    let fourth = run
        .write_counterexample(1, "../views/sl\nname: x", &s, "")
        .unwrap();
    assert_eq!(fourth.parent(), Some(cx.as_path()));
    let reread = fs::read_to_string(&fourth).unwrap();
    assert_eq!(from_yaml(&reread, "ce.yaml").unwrap(), s);
    let leftovers: Vec<_> = fs::read_dir(&cx)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn run_files_stay_inside_the_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    for bad in ["../x", "/etc/x", "", "a/../../b"] {
        assert!(run.replace_file(bad, b"x").is_err(), "{bad}");
        assert!(run.append_file(bad, b"x").is_err(), "{bad}");
    }
    let summary = run.replace_file("summary.json", b"{\"a\":1}").unwrap();
    run.replace_file("summary.json", b"{\"a\":2}").unwrap();
    assert_eq!(fs::read_to_string(&summary).unwrap(), "{\"a\":2}");
    run.append_file("plots/rows.csv", b"h\n").unwrap();
    let rows = run.append_file("plots/rows.csv", b"1\n").unwrap();
    assert_eq!(fs::read_to_string(rows).unwrap(), "h\n1\n");
    let reopened = RunDir::open(run.path()).unwrap();
    assert_eq!(reopened.id(), "r1");
    assert!(RunDir::open(&tmp.path().join("missing")).is_err());
}

#[test]
fn a_missing_regression_file_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Regressions::load(&tmp.path().join(".verify/regressions.txt")).unwrap();
    assert!(r.seeds().is_empty());
    assert!(r.entries().is_empty());
}

#[test]
fn seeds_keep_file_order_once_each() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("regressions.txt");
    fs::write(&path, "# found by fuzz\n9 # a\n3\n\n9 # again\n1 # c\n").unwrap();
    let r = Regressions::load(&path).unwrap();
    assert_eq!(r.seeds(), vec![9, 3, 1]);
    assert_eq!(r.entries().len(), 4);
}

#[test]
fn a_malformed_regression_line_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("regressions.txt");
    fs::write(&path, "1\n2\nseed-three # oops\n").unwrap();
    let e = Regressions::load(&path).unwrap_err();
    assert!(matches!(e, ScenarioError::Regression { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("{}:3: ", path.display())), "{msg}");
    assert!(msg.contains("seed-three"), "{msg}");
}

#[test]
fn append_adds_a_seed_once_and_creates_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".verify/regressions.txt");
    let mut r = Regressions::load(&path).unwrap();
    assert!(r.append(42, "quota-conserved: nominal 3 != 4").unwrap());
    assert!(r.append(7, "two\nlines").unwrap());
    assert!(!r.append(42, "again").unwrap());
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "42 # quota-conserved: nominal 3 != 4\n7 # two lines\n"
    );
    assert_eq!(r.seeds(), vec![42, 7]);
    assert_eq!(Regressions::load(&path).unwrap(), r);
}

#[test]
fn append_sees_what_another_run_wrote_and_keeps_a_last_line_without_newline() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("regressions.txt");
    let mut mine = Regressions::load(&path).unwrap();
    fs::write(&path, "# hand-written\n5 # by hand").unwrap();
    assert!(!mine.append(5, "dup").unwrap());
    assert!(mine.append(6, "").unwrap());
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "# hand-written\n5 # by hand\n6\n"
    );
    assert_eq!(mine.seeds(), vec![5, 6]);
    // A malformed file is not appended to.
    fs::write(&path, "x\n").unwrap();
    assert!(mine.append(8, "n").is_err());
    assert_eq!(fs::read_to_string(&path).unwrap(), "x\n");
}
