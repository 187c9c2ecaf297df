//! Every way a scenario file can be refused, and what the error says.

use scenario::{from_yaml, load, ScenarioError};

/// A valid base document; tests splice mistakes into it.
const BASE: &str = "\
name: base
cluster:
  nodes:
  - name: gpu-0
    cpu_millis: 8000
    devices:
      groups:
      - manufacturer: nvidia
        id: a10g
        cards:
        - id: GPU-0
          ledger:
            mode: Shared
        - id: GPU-1
          ledger:
            mode: 2
  namespaces:
  - name: default
events:
- event: node-leave
  name: gpu-0
";

fn refuse(text: &str) -> (ScenarioError, String) {
    match from_yaml(text, "cases/14.yaml") {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => {
            let msg = e.to_string();
            (e, msg)
        }
    }
}

#[test]
fn the_base_document_is_valid() {
    let s = from_yaml(BASE, "base.yaml").unwrap();
    assert_eq!(s.cluster.nodes.len(), 1);
}

#[test]
fn a_bad_mode_number_names_file_line_column_and_field() {
    let (e, msg) = refuse(&BASE.replace("mode: 2", "mode: 9"));
    assert!(matches!(e, ScenarioError::Syntax { .. }), "{e:?}");
    assert!(
        msg.starts_with(
            "cases/14.yaml:16:13: field cluster.nodes[0].devices.groups[0].cards[1].ledger.mode: \
             unknown device allocation mode 9"
        ),
        "{msg}"
    );
    assert!(
        !msg.contains(" at line "),
        "the location is said once: {msg}"
    );
}

#[test]
fn a_negative_mode_and_an_unknown_mode_name_are_refused() {
    let (_, msg) = refuse(&BASE.replace("mode: 2", "mode: -1"));
    assert!(msg.contains("negative device allocation mode -1"), "{msg}");
    let (_, msg) = refuse(&BASE.replace("mode: Shared", "mode: Carved"));
    assert!(
        msg.contains("cards[0].ledger.mode: unknown device allocation mode `Carved`"),
        "{msg}"
    );
}

#[test]
fn a_missing_required_field_is_named_with_its_parent() {
    let (e, msg) = refuse(&BASE.replace("- id: GPU-1\n", "- index: 1\n"));
    assert!(matches!(e, ScenarioError::Syntax { .. }), "{e:?}");
    assert!(
        msg.contains("field cluster.nodes[0].devices.groups[0].cards[1]: missing field `id`"),
        "{msg}"
    );
    assert!(msg.starts_with("cases/14.yaml:14:"), "{msg}");
}

#[test]
fn a_wrong_type_is_named() {
    let (_, msg) = refuse(&BASE.replace("cpu_millis: 8000", "cpu_millis: lots"));
    assert!(
        msg.starts_with(
            "cases/14.yaml:5:17: field cluster.nodes[0].cpu_millis: invalid type: string \"lots\""
        ),
        "{msg}"
    );
    let (_, msg) = refuse(&BASE.replace(
        "  namespaces:\n  - name: default\n",
        "  namespaces: default\n",
    ));
    assert!(
        msg.contains(
            "field cluster.namespaces: invalid type: string \"default\", expected a sequence"
        ),
        "{msg}"
    );
}

#[test]
fn a_negative_count_is_refused() {
    let (_, msg) = refuse(&BASE.replace("cpu_millis: 8000", "cpu_millis: -8000"));
    assert!(
        msg.starts_with("cases/14.yaml:5:17: field cluster.nodes[0].cpu_millis: "),
        "{msg}"
    );
    assert!(msg.contains("integer `-8000`, expected u64"), "{msg}");
    let submit = "\
- event: submit
  workload:
    name: w
    namespace: default
    queue: q
    pod_sets:
    - name: main
      count: -2
";
    let (_, msg) = refuse(&format!("{BASE}{submit}"));
    assert!(
        msg.starts_with("cases/14.yaml:29:7: field events[1].workload.pod_sets[0].count: "),
        "{msg}"
    );
    assert!(msg.contains("integer `-2`, expected u32"), "{msg}");
}

#[test]
fn unknown_keys_are_refused_wherever_they_are() {
    // Top level.
    let (e, msg) = refuse(&format!("{BASE}colour: blue\n"));
    assert!(matches!(e, ScenarioError::UnknownField { .. }), "{e:?}");
    assert_eq!(
        msg,
        "cases/14.yaml:22:1: field colour: unknown field: not part of the scenario format"
    );
    // In a card, even with an empty value.
    let (_, msg) = refuse(&BASE.replace("- id: GPU-1\n", "- id: GPU-1\n          spare: \"\"\n"));
    assert!(
        msg.starts_with("cases/14.yaml:15:11: field cluster.nodes[0].devices.groups[0].cards[1].spare: unknown field"),
        "{msg}"
    );
    // In a ledger, a typo of a real field.
    let (_, msg) = refuse(&BASE.replace(
        "mode: Shared",
        "mode: Shared\n            remaining_unit: 5",
    ));
    assert!(
        msg.contains("cards[0].ledger.remaining_unit: unknown field"),
        "{msg}"
    );
    // Inside an event (serde reads tagged enums through a buffer; the re-serialization check
    // catches these).
    let (_, msg) = refuse(&BASE.replace("  name: gpu-0\n", "  name: gpu-0\n  grace: 30\n"));
    assert_eq!(
        msg,
        "cases/14.yaml:22:3: field events[0].grace: unknown field: not part of the scenario format"
    );
    // Inside an expectation.
    let (_, msg) = refuse(&format!(
        "{BASE}expect:\n- expect: outcome\n  event: 0\n  outcome: admitted\n  because: quota\n"
    ));
    assert!(
        msg.contains("field expect[0].because: unknown field"),
        "{msg}"
    );
}

#[test]
fn a_mistake_inside_an_event_payload_is_named_inside_it() {
    let join = "\
- event: node-join
  node:
    name: gpu-1
    devices:
      groups:
      - manufacturer: nvidia
        id: t4
        cards:
        - id: GPU-9
          ledger: {mode: 7}
";
    let (_, msg) = refuse(&format!("{BASE}{join}"));
    assert!(
        msg.starts_with(
            "cases/14.yaml:31:11: field events[1].node.devices.groups[0].cards[0].ledger.mode: \
             unknown device allocation mode 7"
        ),
        "{msg}"
    );
    let family = "\
- event: card-family
  node: gpu-0
  card: GPU-0
  capability:
    physical_sliced_count: many
";
    let (_, msg) = refuse(&format!("{BASE}{family}"));
    assert!(
        msg.starts_with(
            "cases/14.yaml:26:5: field events[1].capability.physical_sliced_count: invalid type"
        ),
        "{msg}"
    );
}

#[test]
fn unknown_event_kinds_are_refused() {
    let (_, msg) = refuse(&BASE.replace("event: node-leave", "event: node-explode"));
    assert!(msg.contains("field events[0]"), "{msg}");
    assert!(msg.contains("unknown variant `node-explode`"), "{msg}");
}

#[test]
fn an_invalid_cluster_is_refused_by_the_model_validator() {
    let (e, msg) = refuse(&BASE.replace("- id: GPU-1", "- id: GPU-0"));
    assert!(matches!(e, ScenarioError::Invalid { .. }), "{e:?}");
    assert!(
        msg.starts_with(
            "cases/14.yaml:14:11: field cluster.nodes[0].devices.groups[0].cards[1].id: duplicate card id `GPU-0`"
        ),
        "{msg}"
    );
    let (_, msg) = refuse(&BASE.replace("manufacturer: nvidia", "manufacturer: nvidja"));
    assert!(msg.starts_with("cases/14.yaml:8:9: field cluster.nodes[0].devices.groups[0].manufacturer: unknown manufacturer `nvidja`"), "{msg}");
    let (_, msg) =
        refuse(&BASE.replace("mode: 2", "mode: 2\n            remaining_units: 1600001"));
    assert!(
        msg.contains("cards[1].ledger.remaining_units: expected 0..=1600000, got 1600001"),
        "{msg}"
    );
    let (_, msg) = refuse(&BASE.replace("  - name: gpu-0\n", "  - name: ''\n"));
    assert!(
        msg.starts_with("cases/14.yaml:4:5: field cluster.nodes[0].name: must not be empty"),
        "{msg}"
    );
}

#[test]
fn broken_yaml_is_located() {
    let (e, msg) = refuse("name: [unclosed\n");
    assert!(matches!(e, ScenarioError::Syntax { .. }), "{e:?}");
    assert!(msg.starts_with("cases/14.yaml:"), "{msg}");
    assert!(e.location().and_then(|l| l.line).is_some(), "{msg}");
    let (_, msg) = refuse("- just\n- a list\n");
    assert!(msg.contains("invalid type: sequence"), "{msg}");
}

#[test]
fn repeated_keys_are_refused() {
    let (_, msg) = refuse(&BASE.replace("    cpu_millis: 8000\n", "    labels: {x: a, x: b}\n"));
    assert!(
        msg.starts_with("cases/14.yaml:5:13: field cluster.nodes[0].labels: duplicate entry"),
        "{msg}"
    );
    let (_, msg) = refuse(&format!("{BASE}name: again\n"));
    assert!(msg.contains("duplicate field `name`"), "{msg}");
}

#[test]
fn a_missing_file_is_named() {
    let e = load(std::path::Path::new("no/such/scenario.yaml")).unwrap_err();
    assert!(matches!(e, ScenarioError::Read { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("cannot read no/such/scenario.yaml:"),
        "{e}"
    );
}

#[test]
fn load_names_the_path_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, BASE.replace("mode: 2", "mode: 9")).unwrap();
    let msg = load(&path).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!("{}:16:13: field", path.display())),
        "{msg}"
    );
}
