//! The MIG block's hardware step against a fake `ssh` (`fake-ssh.sh`: `nvidia-smi` on N cards,
//! state in a file, every command logged): the toggles in the block's order, exactly the
//! toggled cards restored, a card already partitioned untouched, a failure midway still
//! restored and reported as FAIL, an unreachable node named, and a panic midway restored by
//! the guard's drop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cases::hardware::{
    Convergence, HardwareError, MigNode, NodeShell, Ssh, Step, HARDWARE_CHECK, QUERY_MODES,
};
use cases::run::{Row, Status};
use cases::Block;

const NODE: &str = "root@gpu-node-1";

/// The fake `ssh`; a node is the directory of the `-F` config it is given.
const FAKE_SSH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake-ssh.sh");

/// A fake node: a directory with its card state, reached with `-F DIR/ssh_config`.
struct Fake {
    dir: PathBuf,
}

impl Fake {
    fn new(name: &str, state: &str) -> Fake {
        let dir = std::env::temp_dir().join(format!("verify-hw-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("state"), state).unwrap();
        Fake { dir }
    }

    fn with(self, file: &str, text: &str) -> Fake {
        std::fs::write(self.dir.join(file), text).unwrap();
        self
    }

    /// The environment of a run on this node (`MIG_MIXED_INDEXES` = `mixed`).
    fn env<'a>(&self, mixed: Option<&'a str>) -> impl Fn(&str) -> Option<String> + 'a {
        let options = format!("-F {}", self.dir.join("ssh_config").display());
        move |k| match k {
            "MIG_NODE_SSH" => Some(NODE.to_string()),
            "VERIFY_SSH" => Some(FAKE_SSH.to_string()),
            "MIG_NODE_SSH_OPTS" => Some(options.clone()),
            "MIG_MIXED_INDEXES" => mixed.map(str::to_string),
            _ => None,
        }
    }

    fn ssh(&self) -> Ssh {
        Ssh::from_env(&self.env(None)).unwrap().unwrap()
    }

    fn node(&self, mixed: Option<&str>) -> MigNode {
        MigNode::from_env(&self.env(mixed))
            .unwrap()
            .unwrap()
            .with_convergence(quick())
    }

    /// The mode switches the node received, in order.
    fn switches(&self) -> Vec<String> {
        self.log()
            .into_iter()
            .filter(|c| c.contains(" -mig "))
            .collect()
    }

    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn state(&self) -> String {
        std::fs::read_to_string(self.dir.join("state")).unwrap()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// No waiting between reads: the fake answers at once.
fn quick() -> Convergence {
    Convergence {
        tries: 2,
        interval: Duration::ZERO,
    }
}

/// `row` has `status` and its object says each of `says`.
fn assert_row(row: &Row, status: Status, says: &[&str]) {
    assert_eq!(row.check, HARDWARE_CHECK);
    assert_eq!(row.status, status, "{}", row.object);
    for text in says {
        assert!(row.object.contains(text), "{text:?} not in {}", row.object);
    }
}

fn on(i: u32) -> String {
    format!("sudo -n nvidia-smi -i {i} -mig 1")
}

fn off(i: u32) -> String {
    format!("sudo -n nvidia-smi -i {i} -mig 0")
}

#[test]
fn the_block_toggles_in_its_order_and_puts_every_card_back() {
    let start = "0, Disabled\n1, Disabled\n";
    let fake = Fake::new("order", start);
    let mut node = fake.node(None);
    let mut toggled_by = Vec::new();
    for &n in Block::Mig.order() {
        let before = fake.switches().len();
        assert_row(
            &node.case_step(n).row(),
            Status::Pass,
            &["modes before: 0 Disabled, 1 Disabled; after: 0 Disabled, 1 Disabled"],
        );
        if fake.switches().len() > before {
            toggled_by.push(n);
        }
    }
    assert_eq!(&toggled_by[..2], &[27, 24]);
    // each case switches card 0 on, then off again, before the next case starts
    let mut want = Vec::new();
    for _ in Block::Mig.order() {
        want.extend([on(0), off(0)]);
    }
    assert_eq!(fake.switches(), want);
    assert_eq!(fake.state(), start);
    assert!(node.held().is_empty());
}

#[test]
fn exactly_the_toggled_cards_are_restored_and_a_partitioned_card_is_untouched() {
    let start = "0, Disabled\n1, Enabled\n2, Disabled\n3, Disabled\n";
    let fake = Fake::new("exact", start);
    let mut node = fake.node(Some("0,1,2"));
    let row = node.case_step(24).row();
    assert_row(&row, Status::Pass, &["restored card(s) 0, 2"]);
    assert_eq!(fake.switches(), vec![on(0), on(2), off(0), off(2)]);
    // card 1 was already in the wanted mode: never switched, never "restored"
    assert!(!fake.log().iter().any(|c| c.contains("-i 1 ")));
    assert_eq!(fake.state(), start);
    // with a partitioned card present, the other cases leave the node as found
    let before = fake.switches().len();
    assert_row(
        &node.case_step(25).row(),
        Status::Skip,
        &["card(s) 1 already partitioned"],
    );
    assert_eq!(fake.switches().len(), before);
}

#[test]
fn a_failure_midway_restores_what_was_toggled_and_fails() {
    let start = "0, Disabled\n1, Disabled\n2, Disabled\n";
    let fake = Fake::new("midway", start).with("fail", &on(2));
    let mut node = fake.node(Some("0 2"));
    assert_row(
        &node.case_step(24).row(),
        Status::Fail,
        &[&on(2), NODE, "exit status: 3", "simulated failure"],
    );
    // card 0 went back; card 2's switch was refused, so it changed nothing and is not touched
    assert_eq!(fake.switches(), vec![on(0), on(2), off(0)]);
    assert_eq!(fake.state(), start);
    assert!(node.held().is_empty());
}

#[test]
fn a_toggle_that_does_not_converge_is_switched_back_and_fails() {
    let start = "0, Disabled\n1, Disabled\n";
    let fake = Fake::new("stuck", start).with("stuck", "0");
    let mut node = fake.node(None);
    assert_row(
        &node.case_step(27).row(),
        Status::Fail,
        &["still reads Disabled"],
    );
    // its pending mode is unknown, so it is switched back as well
    assert_eq!(fake.switches(), vec![on(0), off(0)]);
}

#[test]
fn an_unreachable_node_is_named_and_nothing_is_toggled() {
    let fake = Fake::new("unreachable", "0, Disabled\n1, Disabled\n").with("unreachable", "");
    let err = fake.ssh().run(QUERY_MODES).unwrap_err();
    assert!(matches!(err, HardwareError::Unreachable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("MIG_NODE_SSH=root@gpu-node-1"), "{text}");
    assert!(text.contains("Connection refused"), "{text}");
    // the block refuses (cases.md §2.5): FAIL rows naming the address
    let mut node = fake.node(None).in_block();
    for n in [27, 24] {
        let step = node.case_step(n);
        assert!(matches!(&step, Step::Failed(_)), "{step:?}");
        assert_row(&step.row(), Status::Fail, &["MIG_NODE_SSH=root@gpu-node-1"]);
    }
    // the start modes were asked for once; no switch was tried
    assert_eq!(fake.log().len(), 2);
    assert!(fake.switches().is_empty());
    // a single case skips (cases.md §2.4), still naming the address
    let step = fake.node(None).case_step(24);
    assert!(matches!(&step, Step::Skipped(_)), "{step:?}");
    assert_row(&step.row(), Status::Skip, &["MIG_NODE_SSH=root@gpu-node-1"]);
    assert!(fake.switches().is_empty());
}

#[test]
fn an_interrupted_run_toggles_nothing() {
    let fake = Fake::new("interrupt", "0, Disabled\n1, Disabled\n");
    let interrupt = Arc::new(AtomicBool::new(false));
    let mut node = fake.node(None).interrupted_by(interrupt.clone());
    interrupt.store(true, Ordering::Relaxed);
    assert_row(&node.case_step(27).row(), Status::Skip, &["interrupted"]);
    assert!(fake.switches().is_empty());
}

/// Panics on the first mode read after a switch: a crash between the toggle and the restore.
struct PanicAfterSwitch {
    inner: Ssh,
    switched: AtomicBool,
    panicked: AtomicBool,
}

impl NodeShell for PanicAfterSwitch {
    fn node(&self) -> &str {
        self.inner.node()
    }

    fn run(&self, command: &str) -> Result<String, HardwareError> {
        if command == QUERY_MODES
            && self.switched.load(Ordering::SeqCst)
            && !self.panicked.swap(true, Ordering::SeqCst)
        {
            panic!("simulated crash midway");
        }
        if command.contains(" -mig ") {
            self.switched.store(true, Ordering::SeqCst);
        }
        self.inner.run(command)
    }
}

#[test]
fn a_panic_midway_is_restored_by_the_guard() {
    let start = "0, Disabled\n1, Disabled\n";
    let fake = Fake::new("panic", start);
    let shell = PanicAfterSwitch {
        inner: fake.ssh(),
        switched: AtomicBool::new(false),
        panicked: AtomicBool::new(false),
    };
    let mut node = MigNode::new(Box::new(shell), Default::default()).with_convergence(quick());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        node.case_step(27);
    }));
    assert!(outcome.is_err());
    assert_eq!(fake.switches(), vec![on(0), off(0)]);
    assert_eq!(fake.state(), start);
}

/// Records how many cards the process holds switched when the switch back is sent.
struct CountAtRestore {
    inner: Ssh,
    held_then: std::sync::atomic::AtomicUsize,
}

impl NodeShell for CountAtRestore {
    fn node(&self) -> &str {
        self.inner.node()
    }

    fn run(&self, command: &str) -> Result<String, HardwareError> {
        if command.ends_with(" -mig 0") {
            self.held_then
                .store(cases::hardware::cards_held(), Ordering::SeqCst);
        }
        self.inner.run(command)
    }
}

/// While a card is switched the process says so (a second Ctrl-C then waits for the restore
/// instead of exiting): the count is at least one when the switch back goes out. Other tests'
/// nodes only add their own cards, so the bound holds beside them.
#[test]
fn the_process_knows_a_card_is_switched_until_it_is_back() {
    let fake = Fake::new("held", "0, Disabled\n1, Disabled\n");
    let shell = std::sync::Arc::new(CountAtRestore {
        inner: fake.ssh(),
        held_then: std::sync::atomic::AtomicUsize::new(0),
    });
    struct Shared(std::sync::Arc<CountAtRestore>);
    impl NodeShell for Shared {
        fn node(&self) -> &str {
            self.0.node()
        }
        fn run(&self, command: &str) -> Result<String, HardwareError> {
            self.0.run(command)
        }
    }
    let mut node =
        MigNode::new(Box::new(Shared(shell.clone())), Default::default()).with_convergence(quick());
    assert_row(
        &node.case_step(27).row(),
        Status::Pass,
        &["restored card(s) 0"],
    );
    assert!(shell.held_then.load(Ordering::SeqCst) >= 1);
    assert!(node.held().is_empty());
}
