//! The commands that talk to a cluster as such: `verify operator`, `audit` and `cleanup`.

use super::*;

/// Connects as `access` allows, prints the banner (context, server, operator version) and
/// runs the preflight (`operator`: also the operator's own objects); `Err(code)` when the
/// command must stop (printed already).
pub(crate) async fn connect_checked(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    access: live::client::Access,
    operator: bool,
) -> std::result::Result<live::client::Client, Outcome> {
    let client = connect_announced(kubeconfig, context, access).await?;
    let missing = client.preflight(access, operator).await;
    if !missing.is_empty() {
        for line in &missing {
            outln!("PREFLIGHT {line}");
        }
        outln!("preflight failed: {} missing piece(s)", missing.len());
        return Err(Outcome::Inconclusive);
    }
    Ok(client)
}

/// `verify operator`: the reference operator against a cluster until Ctrl-C.
pub(super) fn operator(args: crate::cli::OperatorArgs) -> Result<Outcome> {
    let settings = match &args.operator_settings {
        Some(path) => read_settings(path)?,
        None => model::Settings::default(),
    };
    let config = live::operator::controller::ControllerConfig {
        settings,
        quota_by: match args.quota_by {
            crate::cli::QuotaBy::Kueue => live::operator::QuotaBy::Kueue,
            crate::cli::QuotaBy::Model => live::operator::QuotaBy::Model,
        },
        nfd_master: !args.no_nfd_master,
        credits_capacity: args.credits_capacity,
        ..live::operator::controller::ControllerConfig::default()
    };
    live::client::preflight::block_on(async {
        let client = match connect_announced(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            live::client::Access::Mutating,
        )
        .await
        {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
        let target = client.target();
        let question = format!(
            "verify will run the reference operator on context `{}` ({}): it creates, updates \
             and deletes the operator's objects there until stopped.",
            target.context, target.server
        );
        if let Err(code) =
            crate::live_run::confirm_unless_twin(&client, args.cluster.yes, &question).await
        {
            return Ok(code);
        }
        let log = |line: &str| outln!("operator: {line}");
        let stop = live::operator::controller::interrupted();
        match live::operator::controller::run(client.kube().clone(), config, stop, log).await {
            Ok(()) => Ok(Outcome::Held),
            Err(e) => {
                eprintln!("verify operator: {e}");
                Ok(Outcome::Inconclusive)
            }
        }
    })
    .context("starting the async runtime")?
}

/// Connects through the chosen context and prints the banner (context, server, operator);
/// `Err` is the exit code, the reason already said.
pub(crate) async fn connect_announced(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    access: live::client::Access,
) -> std::result::Result<live::client::Client, Outcome> {
    let client = match live::client::connect(kubeconfig, context, access).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("verify: {e}");
            return Err(e.outcome());
        }
    };
    if let Err(e) = client.reachable().await {
        eprintln!("verify: {e}");
        return Err(Outcome::Inconclusive);
    }
    for line in client.banner().await {
        outln!("{line}");
    }
    Ok(client)
}

/// `verify audit`: a dump offline, or a cluster through the client (list only).
pub(super) fn audit(args: AuditArgs) -> Result<Outcome> {
    let settings = model::Settings::default();
    let outcome = live::client::preflight::block_on(async {
        // the snapshot borrows the dump's text
        let text;
        let snapshot = match &args.snapshot {
            Some(path) => {
                text = std::fs::read_to_string(path)
                    .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
                live::audit::Snapshot::parse(&text, &path.display().to_string())
            }
            None => {
                let client = match connect_checked(
                    args.kubeconfig.as_deref(),
                    args.context.as_deref(),
                    live::client::Access::ReadOnly,
                    true,
                )
                .await
                {
                    Ok(c) => c,
                    Err(code) => return Ok(Err(code)),
                };
                live::audit::Snapshot::list(&client)
                    .await
                    .map_err(live::audit::AuditError::from)
            }
        };
        let report = match snapshot {
            Ok(s) => live::audit::audit(&s, &settings),
            Err(e) => Err(e),
        };
        Ok::<_, UsageError>(Ok(report))
    })
    .context("starting the async runtime")??;
    match outcome {
        Err(code) => Ok(code),
        Ok(Ok(report)) => {
            out!("{}", report.render());
            Ok(report.outcome())
        }
        Ok(Err(e)) => {
            eprintln!("verify: {e}");
            Ok(e.outcome())
        }
    }
}

/// `verify cleanup`: tear down the named run (or every run) by label, then count leftovers.
pub(super) fn cleanup(args: CleanupArgs) -> Result<Outcome> {
    let runs = match &args.run {
        Some(id) => live::client::Runs::One(
            live::client::RunId::new(id).map_err(|e| UsageError(e.to_string()))?,
        ),
        None => live::client::Runs::All,
    };
    live::client::preflight::block_on(async {
        let client = match connect_checked(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            live::client::Access::Mutating,
            false,
        )
        .await
        {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
        let target = client.target();
        let which = match &args.run {
            Some(id) => format!("run {id} (and its attempts {id}.*)"),
            None => "every run".into(),
        };
        let question = format!(
            "verify will delete what {which} left on context `{}` ({}): objects labelled {} and \
             the pools their tokens key.",
            target.context,
            target.server,
            live::client::RUN_LABEL
        );
        if let Err(code) =
            crate::live_run::confirm_unless_twin(&client, args.cluster.yes, &question).await
        {
            return Ok(code);
        }
        match client.cleanup(&runs).await {
            Ok(done) => {
                out!("{}", done.render());
                Ok(if done.leftovers().is_empty() {
                    Outcome::Held
                } else {
                    Outcome::Failed
                })
            }
            Err(e) => {
                eprintln!("verify: {e}");
                Ok(Outcome::Inconclusive)
            }
        }
    })
    .context("starting the async runtime")?
}
