//! The MIG block's hardware step on the real node (cases.md §2.4, §2.5, §4.2): each case's
//! NVIDIA MIG mode toggles run over SSH on the node `MIG_NODE_SSH` names, and exactly the cards
//! a case switched are switched back, on pass, on FAIL, on an error midway and on Ctrl-C.
//!
//! The commands are the operator e2e suite's (gpustack/gpustack-operator,
//! `.agents/skills/gpustack-operator-e2e/cases/run-partition-block.sh` `mig_modes`, and
//! `_partition-lib.sh` `set_mig_mode`): `nvidia-smi --query-gpu=index,mig.mode.current
//! --format=csv,noheader` reads every card's mode, `nvidia-smi -i N -mig 1|0` switches one card.
//! `sudo -n` stands where the suite has `sudo`: a password prompt fails instead of waiting.
//!
//! The operator never sees these toggles: a mode flip is invisible until the device-manager
//! DaemonSet restarts (research/devices.md §3.3), and verify restarts nothing, so the toggle and
//! its restore leave the cluster's Devices as they were. The modelled part of each case runs on
//! mocked Devices in run-unique pools.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wait_timeout::ChildExt;

use crate::block::{cards_to_restore, MigMode};
use crate::run::{Row, Status};

/// The node's ssh destination (`user@host`); unset on the live tier is exit 2 (`tier.rs`).
pub const NODE_ENV: &str = "MIG_NODE_SSH";
/// Extra ssh options, split on whitespace (identity file, port, jump host).
pub const SSH_OPTS_ENV: &str = "MIG_NODE_SSH_OPTS";
/// Seconds one remote command may take (default 90, as the suite's `MIG_SSH_TIMEOUT`).
pub const SSH_TIMEOUT_ENV: &str = "MIG_SSH_TIMEOUT";
/// The card a case acts on (default 0).
pub const GPU_INDEX_ENV: &str = "MIG_GPU_INDEX";
/// The cards case 24 partitions (default `MIG_GPU_INDEX`), comma- or space-separated.
pub const MIXED_INDEXES_ENV: &str = "MIG_MIXED_INDEXES";
/// The ssh program (default `ssh` on PATH); tests point it at a fake.
pub const SSH_PROGRAM_ENV: &str = "VERIFY_SSH";

/// Reads every card's mode: `<index>, <Enabled|Disabled|[N/A]>` per line (run-partition-block.sh).
pub const QUERY_MODES: &str =
    "sudo -n nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader";

/// Switches one card (`_partition-lib.sh` `set_mig_mode`).
pub fn set_mode_command(index: u32, mode: MigMode) -> String {
    let flag = match mode {
        MigMode::Enabled => 1,
        MigMode::Disabled => 0,
    };
    format!("sudo -n nvidia-smi -i {index} -mig {flag}")
}

/// The check the hardware row names.
pub const HARDWARE_CHECK: &str = "the hardware step on the real card (mode toggle, restore)";

/// What went wrong on the node, naming the command, the node and how it ended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HardwareError {
    #[error("cannot reach {NODE_ENV}={node} with {program} (exit status 255): {stderr}")]
    Unreachable {
        node: String,
        program: String,
        stderr: String,
    },
    #[error("`{command}` on {node} failed ({status}): {stderr}")]
    Failed {
        node: String,
        command: String,
        status: String,
        stderr: String,
    },
    #[error("`{command}` on {node} did not finish within {seconds} s ({SSH_TIMEOUT_ENV})")]
    TimedOut {
        node: String,
        command: String,
        seconds: u64,
    },
    #[error("cannot start {program} for {node} (set {SSH_PROGRAM_ENV} to an ssh program): {why}")]
    Spawn {
        node: String,
        program: String,
        why: String,
    },
    #[error(
        "`{command}` on {node} answered {line:?}; expected `<index>, Enabled|Disabled|[N/A]` lines"
    )]
    Unreadable {
        node: String,
        command: String,
        line: String,
    },
    #[error("card {index} on {node} still reads {now} after `{command}`; expected {want}")]
    NotConverged {
        node: String,
        command: String,
        index: u32,
        want: String,
        now: String,
    },
    #[error("{variable}={value:?}: expected {expected}")]
    BadInput {
        variable: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("interrupted (Ctrl-C) before switching card {index} on {node}")]
    Interrupted { node: String, index: u32 },
}

/// Runs one command line on the node.
pub trait NodeShell: Send {
    /// The node as the user named it (`MIG_NODE_SSH`'s value).
    fn node(&self) -> &str;
    /// The command's standard output, or what went wrong.
    fn run(&self, command: &str) -> Result<String, HardwareError>;
}

/// The `ssh` program, non-interactive and bounded (the suite's `node_ssh`: BatchMode, a
/// connect timeout, extra options from `MIG_NODE_SSH_OPTS`, a per-command timeout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ssh {
    pub program: PathBuf,
    pub destination: String,
    pub options: Vec<String>,
    pub timeout: Duration,
}

impl Ssh {
    /// From `MIG_NODE_SSH`, `MIG_NODE_SSH_OPTS`, `MIG_SSH_TIMEOUT` and `VERIFY_SSH`; `None`
    /// when `MIG_NODE_SSH` is unset.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Ssh>, HardwareError> {
        let Some(destination) = env(NODE_ENV).filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let destination = destination.trim().to_string();
        if destination.starts_with('-') || destination.contains(char::is_whitespace) {
            // an option in the destination's place would change what ssh does
            return Err(HardwareError::BadInput {
                variable: NODE_ENV,
                value: destination,
                expected: "an ssh destination such as root@gpu-node-1",
            });
        }
        let timeout =
            match env(SSH_TIMEOUT_ENV).filter(|v| !v.is_empty()) {
                None => 90,
                Some(v) => v.trim().parse::<u64>().ok().filter(|s| *s > 0).ok_or(
                    HardwareError::BadInput {
                        variable: SSH_TIMEOUT_ENV,
                        value: v,
                        expected: "a whole number of seconds above 0",
                    },
                )?,
            };
        Ok(Some(Ssh {
            program: env(SSH_PROGRAM_ENV)
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from("ssh"), PathBuf::from),
            destination,
            options: env(SSH_OPTS_ENV)
                .map(|o| o.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            timeout: Duration::from_secs(timeout),
        }))
    }

    /// The argument list for one remote command.
    pub fn args(&self, command: &str) -> Vec<String> {
        let mut args: Vec<String> = [
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=15",
            // unknown hosts are accepted once; a changed key still refuses
            "-o",
            "StrictHostKeyChecking=accept-new",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(self.options.iter().cloned());
        args.push(self.destination.clone());
        args.push(command.to_string());
        args
    }
}

impl NodeShell for Ssh {
    fn node(&self) -> &str {
        &self.destination
    }

    fn run(&self, command: &str) -> Result<String, HardwareError> {
        let program = self.program.display().to_string();
        let mut cmd = Command::new(&self.program);
        cmd.args(self.args(command))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: a terminal's Ctrl-C must not cut a toggle or a restore short;
        // the run sees the interrupt flag and restores.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(|e| HardwareError::Spawn {
            node: self.destination.clone(),
            program: program.clone(),
            why: e.to_string(),
        })?;
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_string(&mut text);
                }
                text
            })
        };
        let out = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let err = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let status = match child.wait_timeout(self.timeout) {
            Ok(Some(status)) => status,
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(HardwareError::TimedOut {
                    node: self.destination.clone(),
                    command: command.to_string(),
                    seconds: self.timeout.as_secs(),
                });
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default().trim().to_string();
        match status.code() {
            Some(0) => Ok(stdout),
            // ssh's own failure (connection, authentication), never the remote command's
            Some(255) => Err(HardwareError::Unreachable {
                node: self.destination.clone(),
                program,
                stderr,
            }),
            _ => Err(HardwareError::Failed {
                node: self.destination.clone(),
                command: command.to_string(),
                status: status.to_string(),
                stderr,
            }),
        }
    }
}

/// One card as `nvidia-smi` reports it; `mode` is `None` on a card without a MIG mode
/// (`[N/A]`: not a partition-capable card).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CardMode {
    pub index: u32,
    pub mode: Option<MigMode>,
}

fn mode_name(mode: Option<MigMode>) -> &'static str {
    match mode {
        Some(MigMode::Enabled) => "Enabled",
        Some(MigMode::Disabled) => "Disabled",
        None => "[N/A]",
    }
}

/// `0 Disabled, 1 Enabled`.
pub fn modes_text(modes: &[CardMode]) -> String {
    modes
        .iter()
        .map(|c| format!("{} {}", c.index, mode_name(c.mode)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses [`QUERY_MODES`]' answer; an empty answer or an unknown line is an error (an
/// unreadable probe never counts as "no card").
pub fn parse_modes(node: &str, text: &str) -> Result<Vec<CardMode>, HardwareError> {
    let unreadable = |line: &str| HardwareError::Unreadable {
        node: node.to_string(),
        command: QUERY_MODES.to_string(),
        line: line.to_string(),
    };
    let mut cards = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (index, mode) = line.split_once(',').ok_or_else(|| unreadable(line))?;
        let index = index.trim().parse().map_err(|_| unreadable(line))?;
        let mode = match mode.trim() {
            "Enabled" => Some(MigMode::Enabled),
            "Disabled" => Some(MigMode::Disabled),
            "[N/A]" | "N/A" => None,
            _ => return Err(unreadable(line)),
        };
        cards.push(CardMode { index, mode });
    }
    if cards.is_empty() {
        return Err(unreadable(text.trim()));
    }
    Ok(cards)
}

/// The cards the cases act on (`MIG_GPU_INDEX`, `MIG_MIXED_INDEXES`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MigKnobs {
    pub gpu_index: u32,
    /// Case 24's cards; `None` means `[gpu_index]`.
    pub mixed_indexes: Option<Vec<u32>>,
}

impl MigKnobs {
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, HardwareError> {
        let gpu_index = match env(GPU_INDEX_ENV).filter(|v| !v.trim().is_empty()) {
            None => 0,
            Some(v) => v.trim().parse().map_err(|_| HardwareError::BadInput {
                variable: GPU_INDEX_ENV,
                value: v,
                expected: "a card index (0, 1, …) as nvidia-smi numbers them",
            })?,
        };
        let mixed_indexes = match env(MIXED_INDEXES_ENV).filter(|v| !v.trim().is_empty()) {
            None => None,
            Some(v) => Some(
                v.split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(str::parse)
                    .collect::<Result<Vec<u32>, _>>()
                    .map_err(|_| HardwareError::BadInput {
                        variable: MIXED_INDEXES_ENV,
                        value: v.clone(),
                        expected: "card indexes separated by commas or spaces, e.g. 0,1",
                    })?,
            ),
        };
        Ok(MigKnobs {
            gpu_index,
            mixed_indexes,
        })
    }
}

/// What a case does to the cards, decided from the modes read at its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CasePlan {
    /// Switch these cards (all Disabled now) to Enabled, then back.
    Enable(Vec<u32>),
    /// Nothing to toggle (the case's precondition is unmet, or the cards are already in the
    /// mode it wants: left as found).
    Skip(String),
    /// The case cannot run as asked (exit 1 in the suite).
    Fail(String),
}

/// Each case's toggles (cases.md §4.2, §5; `_partition-lib.sh`):
/// - 27 measures the first partitioning: ≥ 2 cards and none partitioned, then card
///   `MIG_GPU_INDEX`;
/// - 24 builds a mixed node: ≥ 2 cards, `MIG_MIXED_INDEXES` (default `MIG_GPU_INDEX`) switched
///   if Disabled, a whole card left over; naming a card that cannot be partitioned is a FAIL;
/// - every other case (`part_ensure_partitioned_card`) switches card `MIG_GPU_INDEX` only when
///   no card is partitioned yet.
pub fn case_plan(case: u32, knobs: &MigKnobs, modes: &[CardMode]) -> CasePlan {
    let mode_of = |i: u32| modes.iter().find(|c| c.index == i).map(|c| c.mode);
    let partitioned: Vec<u32> = modes
        .iter()
        .filter(|c| c.mode == Some(MigMode::Enabled))
        .map(|c| c.index)
        .collect();
    let capable = |i: u32| matches!(mode_of(i), Some(Some(_)));
    let already = |cards: &[u32]| {
        format!(
            "card(s) {} already partitioned: left as found, nothing toggled",
            join(cards)
        )
    };
    match case {
        24 => {
            if modes.len() < 2 {
                return CasePlan::Skip(format!(
                    "{} card(s); case 24 needs at least 2",
                    modes.len()
                ));
            }
            let wanted = knobs
                .mixed_indexes
                .clone()
                .unwrap_or_else(|| vec![knobs.gpu_index]);
            if let Some(bad) = wanted.iter().find(|i| !capable(**i)) {
                return CasePlan::Fail(format!(
                    "{MIXED_INDEXES_ENV} names card {bad}, which cannot be partitioned (no MIG mode)"
                ));
            }
            if !modes
                .iter()
                .any(|c| c.mode != Some(MigMode::Enabled) && !wanted.contains(&c.index))
            {
                return CasePlan::Skip("no whole card would be left for the logical slice".into());
            }
            let toggle: Vec<u32> = wanted
                .iter()
                .copied()
                .filter(|i| mode_of(*i) == Some(Some(MigMode::Disabled)))
                .collect();
            if toggle.is_empty() {
                return CasePlan::Skip(already(&wanted));
            }
            CasePlan::Enable(toggle)
        }
        _ => {
            if case == 27 && modes.len() < 2 {
                return CasePlan::Skip(format!(
                    "{} card(s); case 27 needs at least 2",
                    modes.len()
                ));
            }
            if !partitioned.is_empty() {
                return CasePlan::Skip(if case == 27 {
                    format!(
                        "card(s) {} already partitioned; case 27 measures the first partitioning",
                        join(&partitioned)
                    )
                } else {
                    already(&partitioned)
                });
            }
            if !capable(knobs.gpu_index) {
                return CasePlan::Skip(format!(
                    "card {} ({GPU_INDEX_ENV}) reports no MIG mode (modes: {})",
                    knobs.gpu_index,
                    modes_text(modes)
                ));
            }
            CasePlan::Enable(vec![knobs.gpu_index])
        }
    }
}

fn join(cards: &[u32]) -> String {
    cards
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How long a toggle may take to show in the card's mode (the suite polls 20 × 3 s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Convergence {
    pub tries: u32,
    pub interval: Duration,
}

impl Default for Convergence {
    fn default() -> Self {
        Convergence {
            tries: 20,
            interval: Duration::from_secs(3),
        }
    }
}

/// A card this node session switched and has not switched back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    index: u32,
    start: MigMode,
    /// The card reported the new mode. A timed-out or unconverged toggle may have left a
    /// pending mode, so it is switched back too.
    converged: bool,
}

/// What [`MigNode::restore`] did.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Restore {
    /// Cards switched back to their start mode.
    pub restored: Vec<u32>,
    /// Cards whose switch back failed (still held; tried again on drop).
    pub failed: Vec<(u32, HardwareError)>,
    /// Every card's mode afterwards.
    pub after: Option<Result<Vec<CardMode>, HardwareError>>,
}

impl Restore {
    pub fn summary(&self) -> String {
        let mut out = if self.restored.is_empty() {
            "nothing to restore".to_string()
        } else {
            format!("restored card(s) {}", join(&self.restored))
        };
        for (i, e) in &self.failed {
            out.push_str(&format!("; card {i} NOT restored: {e}"));
        }
        out
    }
}

/// A step that switched cards: what it found, switched and put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toggled {
    pub node: String,
    pub before: Vec<CardMode>,
    pub toggled: Vec<u32>,
    /// The error that stopped the toggles, if any.
    pub error: Option<HardwareError>,
    pub restore: Restore,
}

/// One case's hardware step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing toggled, with the reason.
    Skipped(String),
    /// The step could not run or the case cannot run as asked.
    Failed(String),
    Ran(Box<Toggled>),
}

impl Step {
    /// PASS when every planned card was switched and switched back and the node's modes
    /// afterwards equal those before.
    pub fn row(&self) -> Row {
        let (status, object) = match self {
            Step::Skipped(why) => (Status::Skip, why.clone()),
            Step::Failed(why) => (Status::Fail, why.clone()),
            Step::Ran(ran) => {
                let Toggled {
                    node,
                    before,
                    toggled,
                    error,
                    restore,
                } = ran.as_ref();
                let after = match &restore.after {
                    Some(Ok(m)) => Ok(m),
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("not read".to_string()),
                };
                let held_back = error.is_none()
                    && !toggled.is_empty()
                    && restore.failed.is_empty()
                    && toggled.iter().all(|i| restore.restored.contains(i));
                let same = after.as_ref().is_ok_and(|a| *a == before);
                let mut text = format!(
                    "on {node}: toggled card(s) [{}] to Enabled; {}; modes before: {}; after: {}",
                    join(toggled),
                    restore.summary(),
                    modes_text(before),
                    after.as_ref().map_or_else(|e| e.clone(), |a| modes_text(a))
                );
                if let Some(e) = error {
                    text.push_str(&format!("; {e}"));
                }
                if !same && after.is_ok() {
                    text.push_str("; the modes after differ from the modes before");
                }
                (
                    if held_back && same {
                        Status::Pass
                    } else {
                        Status::Fail
                    },
                    text,
                )
            }
        };
        Row {
            status,
            check: HARDWARE_CHECK.into(),
            object,
            expectation: None,
        }
    }
}

/// Cards a MIG node of this process has switched and not yet switched back: the second
/// Ctrl-C, which otherwise exits at once, waits for the restore while any is held.
static CARDS_HELD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many cards this process holds switched on a MIG node right now.
pub fn cards_held() -> usize {
    CARDS_HELD.load(Ordering::SeqCst)
}

/// The MIG node of a live run: reads every card's mode before the first toggle (the block
/// refuses to toggle anything when it cannot, since the restore could not tell which cards it
/// switched), runs each case's toggles and switches back exactly the cards it switched.
/// Dropping it switches back whatever is still held (an error or a panic midway).
pub struct MigNode {
    shell: Box<dyn NodeShell>,
    knobs: MigKnobs,
    interrupt: Arc<AtomicBool>,
    convergence: Convergence,
    /// Every card's mode before the first case, read once.
    start: Option<Result<Vec<CardMode>, HardwareError>>,
    held: Vec<Held>,
    /// Running the whole block (`--block mig`): a node it cannot read is a refusal (FAIL,
    /// cases.md §2.5 step 3), where a single case skips (§2.4).
    block: bool,
    /// Held cards last added to [`cards_held`].
    published: usize,
}

impl MigNode {
    pub fn new(shell: Box<dyn NodeShell>, knobs: MigKnobs) -> Self {
        MigNode {
            shell,
            knobs,
            interrupt: Arc::new(AtomicBool::new(false)),
            convergence: Convergence::default(),
            start: None,
            held: Vec::new(),
            block: false,
            published: 0,
        }
    }

    /// The node of a whole block run (`verify case --block mig`).
    pub fn in_block(mut self) -> Self {
        self.block = true;
        self
    }

    /// Over `ssh` from the environment (`Ssh::from_env`, `MigKnobs::from_env`); `None` when
    /// `MIG_NODE_SSH` is unset. Bad values are errors naming the variable.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Self>, HardwareError> {
        let knobs = MigKnobs::from_env(env)?;
        Ok(Ssh::from_env(env)?.map(|ssh| MigNode::new(Box::new(ssh), knobs)))
    }

    /// Stops toggling once `flag` is set (Ctrl-C) and restores.
    pub fn interrupted_by(mut self, flag: Arc<AtomicBool>) -> Self {
        self.interrupt = flag;
        self
    }

    pub fn with_convergence(mut self, convergence: Convergence) -> Self {
        self.convergence = convergence;
        self
    }

    pub fn node(&self) -> &str {
        self.shell.node()
    }

    /// Every card's mode now.
    pub fn modes(&self) -> Result<Vec<CardMode>, HardwareError> {
        parse_modes(self.node(), &self.shell.run(QUERY_MODES)?)
    }

    /// Every card's mode before the first case (read on first use, then kept).
    pub fn start_modes(&mut self) -> Result<&[CardMode], HardwareError> {
        let start = match self.start.take() {
            Some(start) => start,
            None => self.modes(),
        };
        self.start.insert(start).as_deref().map_err(Clone::clone)
    }

    /// Whether the node has a card with a MIG mode (Enabled or Disabled, not `[N/A]`): the
    /// hardware the MIG gate asks for, even before any card is partitioned. Reads (and keeps)
    /// the start modes; a node that cannot be read has none.
    pub fn mig_capable(&mut self) -> bool {
        self.start_modes()
            .is_ok_and(|modes| modes.iter().any(|c| c.mode.is_some()))
    }

    /// Cards switched and not switched back yet.
    pub fn held(&self) -> Vec<u32> {
        self.held.iter().map(|h| h.index).collect()
    }

    /// Puts card `index` (found in `from`; the block only ever switches Disabled → Enabled,
    /// which is what `cards_to_restore` reverses) into `want` and waits until it reports it.
    /// The card is held from the moment the command may have changed it: a command nvidia-smi
    /// refused, or ssh could not deliver, changed nothing.
    fn switch(&mut self, index: u32, from: MigMode, want: MigMode) -> Result<(), HardwareError> {
        let command = set_mode_command(index, want);
        let result = self.shell.run(&command);
        if matches!(
            result,
            Err(HardwareError::Failed { .. } | HardwareError::Unreachable { .. })
        ) {
            return result.map(|_| ());
        }
        // held before the wait, so a panic while waiting still switches it back on drop
        self.held.push(Held {
            index,
            start: from,
            converged: false,
        });
        self.publish_held();
        let outcome = result.and_then(|_| self.wait_for(index, want, &command));
        if let (Ok(()), Some(h)) = (&outcome, self.held.last_mut()) {
            h.converged = true;
        }
        outcome
    }

    fn wait_for(&self, index: u32, want: MigMode, command: &str) -> Result<(), HardwareError> {
        let mut now = None;
        for attempt in 0..self.convergence.tries.max(1) {
            if attempt > 0 {
                std::thread::sleep(self.convergence.interval);
            }
            now = self
                .modes()?
                .iter()
                .find(|c| c.index == index)
                .map(|c| c.mode);
            if now == Some(Some(want)) {
                return Ok(());
            }
        }
        Err(HardwareError::NotConverged {
            node: self.node().to_string(),
            command: command.to_string(),
            index,
            want: mode_name(Some(want)).into(),
            now: now.map_or("no such card", mode_name).into(),
        })
    }

    /// Switches back exactly the held cards that are no longer in their start mode
    /// (`block::cards_to_restore`), plus any whose toggle never converged (its pending mode is
    /// unknown); a held card found back in its start mode is let go untouched.
    pub fn restore(&mut self) -> Restore {
        let mut out = Restore::default();
        let now = self.modes();
        let pairs = |m: &[(u32, MigMode)]| -> Vec<(String, MigMode)> {
            m.iter().map(|(i, m)| (i.to_string(), *m)).collect()
        };
        let start = pairs(
            &self
                .held
                .iter()
                .map(|h| (h.index, h.start))
                .collect::<Vec<_>>(),
        );
        let due: Vec<u32> = match &now {
            Ok(now) => {
                let now = pairs(
                    &now.iter()
                        .filter_map(|c| c.mode.map(|m| (c.index, m)))
                        .collect::<Vec<_>>(),
                );
                let changed: Vec<String> = cards_to_restore(&start, &now)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                self.held
                    .iter()
                    .filter(|h| !h.converged || changed.contains(&h.index.to_string()))
                    .map(|h| h.index)
                    .collect()
            }
            // unreadable: every card it switched goes back
            Err(_) => self.held(),
        };
        for held in std::mem::take(&mut self.held) {
            if !due.contains(&held.index) {
                continue;
            }
            let command = set_mode_command(held.index, held.start);
            match self
                .shell
                .run(&command)
                .and_then(|_| self.wait_for(held.index, held.start, &command))
            {
                Ok(()) => out.restored.push(held.index),
                Err(e) => {
                    out.failed.push((held.index, e));
                    self.held.push(held);
                }
            }
        }
        self.publish_held();
        out.after = Some(self.modes());
        out
    }

    /// Adds this node's change in held cards to the process's count ([`cards_held`]).
    fn publish_held(&mut self) {
        let now = self.held.len();
        if now >= self.published {
            CARDS_HELD.fetch_add(now - self.published, Ordering::SeqCst);
        } else {
            CARDS_HELD.fetch_sub(self.published - now, Ordering::SeqCst);
        }
        self.published = now;
    }

    /// Case `case`'s hardware step: read the modes, switch the cards its plan names (stopping
    /// at the first error or at Ctrl-C), then switch them back, pass or fail. A standalone
    /// case restores what it toggled; verify holds no mode across cases (the suite's
    /// `MIG_KEEP_MODE=1` only saves device-manager restarts, which verify does not do).
    pub fn case_step(&mut self, case: u32) -> Step {
        if let Err(e) = self.start_modes() {
            // cases.md §2.4: a case whose node cannot be reached skips; §2.5: the block
            // refuses, since its final restore could not tell which cards it switched
            if !self.block && matches!(e, HardwareError::Unreachable { .. }) {
                return Step::Skipped(format!(
                    "the MIG node cannot be reached, so the case skips: {e}"
                ));
            }
            return Step::Failed(format!(
                "cannot read the cards' MIG modes before the block, so no card is toggled (the \
                 restore could not tell which cards the block switched): {e}"
            ));
        }
        let before = match self.modes() {
            Ok(m) => m,
            Err(e) => return Step::Failed(format!("reading the cards' MIG modes: {e}")),
        };
        let cards = match case_plan(case, &self.knobs, &before) {
            CasePlan::Enable(cards) => cards,
            CasePlan::Skip(why) => return Step::Skipped(why),
            CasePlan::Fail(why) => return Step::Failed(why),
        };
        if self.interrupt.load(Ordering::Relaxed) {
            return Step::Skipped("interrupted (Ctrl-C): nothing toggled".into());
        }
        let mut toggled = Vec::new();
        let mut error = None;
        for index in cards {
            if self.interrupt.load(Ordering::Relaxed) {
                error = Some(HardwareError::Interrupted {
                    node: self.node().to_string(),
                    index,
                });
                break;
            }
            toggled.push(index);
            if let Err(e) = self.switch(index, MigMode::Disabled, MigMode::Enabled) {
                if !self.held().contains(&index) {
                    toggled.pop();
                }
                error = Some(e);
                break;
            }
        }
        let restore = self.restore();
        Step::Ran(Box::new(Toggled {
            node: self.node().to_string(),
            before,
            toggled,
            error,
            restore,
        }))
    }
}

impl Drop for MigNode {
    fn drop(&mut self) {
        if !self.held.is_empty() {
            let r = self.restore();
            eprintln!(
                "verify: MIG block ending on {}: {}",
                self.node(),
                r.summary()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn cards(modes: &[Option<MigMode>]) -> Vec<CardMode> {
        modes
            .iter()
            .enumerate()
            .map(|(i, m)| CardMode {
                index: i as u32,
                mode: *m,
            })
            .collect()
    }

    const D: Option<MigMode> = Some(MigMode::Disabled);
    const E: Option<MigMode> = Some(MigMode::Enabled);

    #[test]
    fn modes_parse_and_bad_lines_name_the_command() {
        let m = parse_modes("n", "0, Disabled\n1, Enabled\n2, [N/A]\n").unwrap();
        assert_eq!(m, cards(&[D, E, None]));
        let e = parse_modes("root@n", "0, Weird\n").unwrap_err().to_string();
        assert!(
            e.contains("root@n") && e.contains("nvidia-smi --query-gpu"),
            "{e}"
        );
        assert!(parse_modes("n", "").is_err());
    }

    #[test]
    fn ssh_never_prompts_and_takes_the_env() {
        let ssh = Ssh::from_env(&env(&[
            (NODE_ENV, "root@gpu-1"),
            (SSH_OPTS_ENV, "-i /k -p 2222"),
            (SSH_PROGRAM_ENV, "/x/fake-ssh"),
        ]))
        .unwrap()
        .unwrap();
        let args = ssh.args("true");
        assert!(args.windows(2).any(|w| w == ["-o", "BatchMode=yes"]));
        assert!(args.iter().any(|a| a.starts_with("ConnectTimeout=")));
        assert_eq!(
            &args[args.len() - 4..],
            ["-p", "2222", "root@gpu-1", "true"]
        );
        assert_eq!(ssh.program, PathBuf::from("/x/fake-ssh"));
        assert_eq!(ssh.timeout, Duration::from_secs(90));
        assert_eq!(Ssh::from_env(&env(&[])).unwrap(), None);
        let bad = Ssh::from_env(&env(&[(NODE_ENV, "-oProxyCommand=x")])).unwrap_err();
        assert!(bad.to_string().contains(NODE_ENV), "{bad}");
        let bad = MigKnobs::from_env(&env(&[(MIXED_INDEXES_ENV, "0,x")])).unwrap_err();
        assert!(
            bad.to_string().contains("MIG_MIXED_INDEXES=\"0,x\""),
            "{bad}"
        );
    }

    #[test]
    fn plans_follow_each_case() {
        let k = MigKnobs::default();
        assert_eq!(
            case_plan(27, &k, &cards(&[D, D])),
            CasePlan::Enable(vec![0])
        );
        assert!(matches!(
            case_plan(27, &k, &cards(&[D, E])),
            CasePlan::Skip(_)
        ));
        assert!(matches!(case_plan(27, &k, &cards(&[D])), CasePlan::Skip(_)));
        assert!(
            matches!(case_plan(25, &k, &cards(&[D, E])), CasePlan::Skip(w) if w.contains("left as found"))
        );
        assert_eq!(case_plan(25, &k, &cards(&[D])), CasePlan::Enable(vec![0]));
        let mixed = MigKnobs {
            gpu_index: 0,
            mixed_indexes: Some(vec![0, 1]),
        };
        assert_eq!(
            case_plan(24, &mixed, &cards(&[D, E, D])),
            CasePlan::Enable(vec![0])
        );
        assert!(matches!(
            case_plan(24, &mixed, &cards(&[D, D])),
            CasePlan::Skip(_)
        ));
        assert!(matches!(
            case_plan(24, &mixed, &cards(&[D, None, D])),
            CasePlan::Fail(w) if w.contains("card 1")
        ));
        assert!(matches!(
            case_plan(25, &k, &cards(&[None])),
            CasePlan::Skip(_)
        ));
    }
}
