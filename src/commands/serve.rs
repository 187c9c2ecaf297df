//! `verify twin serve`: the embedded twin as a server of its own.

use super::*;

/// How `verify twin serve` runs: faults, mutant, reconcile lag (as given on the command line).
pub(super) struct TwinRun {
    pub(super) faults: Option<String>,
    pub(super) mutant: Option<String>,
    pub(super) lag_ms: u64,
    pub(super) context_name: String,
}

/// `verify twin serve`: the twin on loopback, with its reference operator reconciling after
/// every write, until interrupted.
pub(super) fn twin_serve(
    port: Option<u16>,
    kubeconfig_out: Option<&Path>,
    walkthrough: bool,
    run: &TwinRun,
) -> Result<Outcome> {
    let faults = run
        .faults
        .as_deref()
        .map(live::server::faults::FaultConfig::parse)
        .transpose()
        .map_err(|e| UsageError(format!("--faults: {e}")))?;
    let mutant = run
        .mutant
        .as_deref()
        .map(str::parse::<model::mutants::Mutant>)
        .transpose()
        .map_err(|e| UsageError(format!("--mutant: {e}")))?;
    let operator = live::operator::OperatorConfig {
        settings: model::Settings {
            mutant,
            ..model::Settings::default()
        },
        lag: std::time::Duration::from_millis(run.lag_ms),
    };
    let mut store = live::server::store::Store::new(live::server::store::StoreConfig {
        clock: live::server::store::wall_clock(),
        ..live::server::store::StoreConfig::default()
    });
    live::server::schemas::install_validators(&mut store);
    // the chain's CRDs listed as objects, as a real cluster lists those it installed
    live::server::schemas::install_crd_objects(&mut store, false)
        .map_err(|e| anyhow::anyhow!("writing the CRD objects: {}", e.message))?;
    // and the local APIServices of what it serves, kept as the aggregator keeps them
    store.install_api_services();
    // the joint AdmissionCheck the queues reference, as the operator's joint controller keeps
    // it (the twin runs none), so an audit of the twin finds what its queues name
    live::operator::admission::write_joint_check(&mut store, operator.settings.joint_check_active)
        .map_err(|e| anyhow::anyhow!("writing the joint AdmissionCheck: {}", e.message))?;
    if walkthrough {
        live::operator::write_mock(&mut store, &model::examples::walkthrough())
            .map_err(|e| anyhow::anyhow!("mocking the walkthrough cluster: {}", e.message))?;
    }
    // served as verify's own twin, it issues a token to be recognised by; under any other
    // context name it plays a cluster and answers as one
    let identity =
        (run.context_name == live::client::TWIN_CONTEXT).then(live::wire::identity::new_token);
    let serve = live::server::http::ServeConfig {
        faults: faults.clone(),
        identity: identity.clone(),
    };
    let (handle, _operator) = live::operator::spawn_twin(port, store, serve, operator)
        .map_err(|e| UsageError(format!("cannot serve the twin on 127.0.0.1: {e}")))?;
    outln!("twin: serving the Kubernetes API on {}", handle.url());
    if let Some(f) = &faults {
        outln!(
            "faults: seed {} (conflict {}, throttle {}, error {}, watch-cut {}, slow {} by {} ms); counters at {}{}",
            f.seed,
            f.conflict_share,
            f.throttle_share,
            f.error_share,
            f.watch_cut_share,
            f.slow_share,
            f.delay.as_millis(),
            handle.url(),
            live::server::counters::COUNTERS_PATH
        );
    }
    if let Some(m) = mutant {
        outln!("mutant: {m} ({})", m.describe());
    }
    if let Some(path) = kubeconfig_out {
        std::fs::write(
            path,
            live::server::kubeconfig::kubeconfig_yaml_with_token(
                handle.url(),
                &run.context_name,
                identity.as_deref(),
            ),
        )
        .with_context(|| format!("writing the kubeconfig to {}", path.display()))?;
        outln!(
            "kubeconfig: {} (context {})",
            path.display(),
            run.context_name
        );
    }
    // Ctrl-C stops the server and exits 0, as documented
    let (stopped, stop) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stopped.send(());
    })
    .context("installing the Ctrl-C handler")?;
    outln!("stop with Ctrl-C");
    let _ = stop.recv();
    handle.shutdown().context("stopping the twin")?;
    outln!("twin: stopped");
    Ok(Outcome::Held)
}

/// The allocator tuned for a long run, before any thread starts: a soak's figure is its memory
/// over time, so what it frees goes back to the system soon. On jemalloc (the default), on the
/// twin and live tiers, every arena's freed pages are purged at once rather than after the
/// binary's 1 s, under which a twin soak's RSS rose in bursts (docs/benchmarks.md, "Twelfth
/// run"); the model tier keeps 1 s, as purging at once costs its allocation-bound steps (fuzz
/// 20 %) and its memory is a quarter of the twin's. On glibc's allocator
/// (`--no-default-features`), one malloc arena for the whole process: glibc gives each
/// allocating thread (the twin's server and operator threads, the client) its own arena, and
/// over a long soak they hold memory the soak no longer uses (+12 % at the peak of a 30-minute
/// twin soak with the default, +6 % with one; "Soak").
#[cfg_attr(
    any(not(feature = "jemalloc"), target_env = "msvc"),
    allow(unused_variables)
)]
pub(super) fn lean_allocator_for_soak(tier: Tier) {
    #[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
    if tier != Tier::Model {
        purge_freed_pages_at_once();
    }
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "jemalloc")))]
    // SAFETY: mallopt only changes glibc's allocator tuning; called before other threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// jemalloc's `dirty_decay_ms` at 0: the default for arenas created from now on, and each
/// arena already created (only those exist to be set; the others refuse the write).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
fn purge_freed_pages_at_once() {
    // SAFETY: both options are jemalloc's `ssize_t` (isize) milliseconds.
    let set = |name: &str| unsafe {
        tikv_jemalloc_ctl::raw::write(format!("{name}\0").as_bytes(), 0isize)
    };
    if let Err(e) = set("arenas.dirty_decay_ms") {
        tracing::warn!(
            "jemalloc: setting arenas.dirty_decay_ms to 0 failed ({e}); the soak keeps 1 s"
        );
    }
    let arenas = tikv_jemalloc_ctl::arenas::narenas::read().unwrap_or(0);
    for i in 0..arenas {
        let _ = set(&format!("arena.{i}.dirty_decay_ms"));
    }
}

#[cfg(all(test, feature = "jemalloc", not(target_env = "msvc")))]
mod tests {
    /// The soak's tuning reaches the arena already serving this thread, not only later ones.
    #[test]
    fn a_soak_purges_freed_pages_at_once() {
        let decay = |name: &[u8]| unsafe { tikv_jemalloc_ctl::raw::read::<isize>(name) };
        if std::env::var_os("_RJEM_MALLOC_CONF").is_none() {
            assert_eq!(
                decay(b"arenas.dirty_decay_ms\0").unwrap(),
                1000,
                "the binary's 1 s (main.rs)"
            );
        }
        super::purge_freed_pages_at_once();
        assert_eq!(decay(b"arenas.dirty_decay_ms\0").unwrap(), 0);
        assert_eq!(decay(b"arena.0.dirty_decay_ms\0").unwrap(), 0);
    }
}
