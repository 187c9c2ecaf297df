//! What every command that changes a cluster does before and after its run (DESIGN.md "Safety
//! on a real cluster"): pick the context (a mutating run on a real cluster needs `--context`),
//! print context, server and operator version first, run the read-only preflight, ask for
//! confirmation (or take `--yes`; no terminal and no `--yes` refuses), stop between steps on
//! Ctrl-C, and at the end sweep what the run labelled.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use live::client::preflight::{self, Access};
use live::client::{Client, Kubeconfig, RunId, Target, RUN_LABEL};
use outcome::Outcome;

use crate::cli::LiveArgs;

/// Why `--mutant` has no place on a cluster.
pub const NO_MUTANT_ON_A_CLUSTER: &str =
    "--mutant mutates the model or the twin's operator; a cluster runs its own";

/// A run id for a command without a run directory: `<what>-<unix seconds>`, so two runs on one
/// cluster do not share tokens.
pub fn run_name(what: &str) -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{what}-{stamp}")
}

/// A cluster a run may write to, checked and confirmed.
pub struct Prepared {
    pub kubeconfig: Kubeconfig,
    pub context: String,
    /// `--overlay-node`: the real node, read and found suitable.
    pub overlay: Option<live::client::OverlayNode>,
    /// Set by Ctrl-C (a second Ctrl-C exits at once, leaving `verify cleanup` to finish).
    pub interrupt: Arc<AtomicBool>,
}

/// Connects, prints the banner, runs the preflight and asks for confirmation of `what` the
/// run will write. `Err(exit code)` when the run must not start (the reason printed).
pub fn prepare(args: &LiveArgs, what: &str) -> Result<Prepared, Outcome> {
    let (client, overlay) = preflight::block_on(async {
        let client = crate::commands::connect_checked(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            Access::Mutating,
            true,
        )
        .await?;
        let overlay = match &args.overlay_node {
            Some(name) => match client.overlay_node(name).await {
                Ok(node) => {
                    outln!("overlay: node {name} (its NodeFeature and Devices are mocked; the Node is only read)");
                    Some(node)
                }
                Err(why) => {
                    eprintln!("verify: {why}");
                    return Err(Outcome::Usage);
                }
            },
            None => None,
        };
        let Target { context, server } = client.target();
        let question = format!(
            "verify will write {what} on context `{context}` ({server}), every object labelled \
             {RUN_LABEL}, and delete them afterwards."
        );
        confirm_unless_twin(&client, args.cluster.yes, &question).await?;
        Ok((client, overlay))
    })
    .map_err(|e| {
        eprintln!("verify: {e}");
        Outcome::Inconclusive
    })??;
    let interrupt = Arc::new(AtomicBool::new(false));
    let flag = interrupt.clone();
    // A second handler would fail; soak installs its own, so a failure here is not fatal.
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            // real cards switched over ssh go back first: the run restores them and exits
            let held = cases::hardware::cards_held();
            if held > 0 {
                eprintln!(
                    "verify: interrupted again; {held} MIG card(s) are still switched, so verify \
                     restores them before it exits"
                );
                return;
            }
            eprintln!("verify: interrupted twice; run `verify cleanup` for what is left");
            std::process::exit(130);
        }
        eprintln!("verify: interrupted; stopping after the current step and tearing down");
    });
    Ok(Prepared {
        kubeconfig: client.kubeconfig().clone(),
        context: client.target().context.clone(),
        overlay,
        interrupt,
    })
}

/// Asks to confirm `question` before a run changes the cluster `client` reaches, unless `--yes`
/// was given or the server answers as the embedded twin: asked, never trusted by its context's
/// name.
pub async fn confirm_unless_twin(
    client: &Client,
    yes: bool,
    question: &str,
) -> Result<(), Outcome> {
    if yes || client.is_embedded_twin().await {
        return Ok(());
    }
    confirm(question)
}

/// Asks `question` on the terminal; without one, refuses (exit 2) and says how to answer.
pub fn confirm(question: &str) -> Result<(), Outcome> {
    if !std::io::stdin().is_terminal() {
        eprintln!("verify: {question}\nverify: no terminal to confirm on: pass --yes to proceed");
        return Err(Outcome::Usage);
    }
    out!("{question} Continue? [y/N] ");
    std::io::stdout().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).ok();
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        eprintln!("verify: not confirmed; nothing was written");
        Err(Outcome::Usage)
    }
}

impl Prepared {
    /// Lane `lane` of run `run` on this cluster (a case's, a soak target's).
    pub fn runner(
        &self,
        run: &str,
        lane: usize,
        config: tier::ApiConfig,
        teardown_budget: std::time::Duration,
    ) -> Result<tier::ApiTarget, tier::ApiError> {
        tier::ApiTarget::connect(
            self.kubeconfig.clone(),
            &self.context,
            config,
            tier::Lane {
                run: run.to_string(),
                lane,
                interrupt: self.interrupt.clone(),
                teardown_budget,
                overlay: self.overlay.clone(),
            },
            model::labels::DEFAULT_SYSTEM_NAMESPACE,
        )
    }

    /// Tears down every run `<run>.*` still labelled (what an interrupted attempt may leave)
    /// and returns what is left afterwards.
    pub fn sweep(&self, run: &str) -> Vec<String> {
        sweep(&self.kubeconfig, &self.context, run)
    }
}

fn sweep(kubeconfig: &Kubeconfig, context: &str, run: &str) -> Vec<String> {
    let prefix = format!("{run}.");
    let outcome = preflight::block_on(async {
        let client = match Client::from_kubeconfig(kubeconfig.clone(), context).await {
            Ok(c) => c,
            Err(e) => return vec![format!("connecting for the sweep: {e}")],
        };
        let mut left = Vec::new();
        let ids = match client.run_ids().await {
            Ok(ids) => ids,
            Err(e) => return vec![format!("listing the run's objects: {e}")],
        };
        for id in ids.iter().filter(|id| id.starts_with(&prefix)) {
            let Ok(run) = RunId::new(id) else { continue };
            match client.teardown(&run).await {
                Ok(t) => left.extend(t.leftovers),
                Err(e) => left.push(format!("tearing down {id}: {e}")),
            }
        }
        left
    });
    outcome.unwrap_or_else(|e| vec![format!("the sweep could not run: {e}")])
}
