//! Arguments → the plain configs the library crates run, decided without I/O: which tier,
//! how many jobs, which seeds, which bounds. The commands then only do what the config says;
//! the tests below parse command lines and check the configs.

use super::*;

impl FuzzArgs {
    /// `--tier`/`--twin`/`--context` resolved; fuzz defaults to the twin.
    pub fn tier(&self) -> Tier {
        Tier::resolve(
            self.tier,
            self.twin,
            self.live.cluster.context.as_deref(),
            Tier::Twin,
        )
    }

    /// The fuzz loop's config. `regressions` are the regression file's seeds: replayed first,
    /// unless one seed is asked for. `env` looks up an environment variable (for `--shard
    /// auto`; the command passes the process's, tests a map). The live tier's connection is
    /// added once it is prepared. `Err`: a usage error's message.
    pub fn fuzz_config(
        &self,
        regressions: Vec<u64>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<fuzz::FuzzConfig, String> {
        let tier = self.tier();
        let shard = self.shard.map(|s| s.resolve(env)).transpose()?;
        let mut config = fuzz::FuzzConfig {
            tier,
            seeds: self.seeds,
            seed: self.seed,
            jobs: self.jobs.unwrap_or(tier.default_jobs()),
            shard,
            mutant: self.mutant,
            shape: generators::ShapeConfig {
                max_nodes: self.max_nodes,
                ..generators::ShapeConfig::default()
            },
            regressions: if self.seed.is_some() {
                Vec::new()
            } else {
                regressions
            },
            ..fuzz::FuzzConfig::default()
        };
        if let Some(budget) = self.shrink_budget {
            config.twin.shrink_steps = budget;
        }
        Ok(config)
    }
}

impl Shard {
    /// `(I, N)`: as given, or for `auto` from an Indexed Job's environment ([`SHARD_INDEX_VAR`],
    /// [`SHARD_COUNT_VAR`]) as `env` reports it. `Err` names the variable and what it must hold.
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> Result<(u64, u64), String> {
        let (i, n) = match self {
            Shard::Fixed(i, n) => return Ok((i, n)),
            Shard::Auto => (SHARD_INDEX_VAR, SHARD_COUNT_VAR),
        };
        let read = |var: &str, what: &str| -> Result<u64, String> {
            let value = env(var)
                .ok_or_else(|| format!("--shard auto: {var} is not set; expected {what}"))?;
            value.trim().parse().map_err(|_| {
                format!("--shard auto: {var}=`{value}` is not a whole number; expected {what}")
            })
        };
        let index = read(
            i,
            "the Pod's index in an Indexed Job (set by Kubernetes with completionMode: Indexed)",
        )?;
        let count = read(
            n,
            "the shard count, the Job's completions (set it in the Job's env)",
        )?;
        if count == 0 || index >= count {
            return Err(format!(
                "--shard auto: {i}={index} and {n}={count}; expected 0 <= {i} < {n}"
            ));
        }
        Ok((index, count))
    }
}

impl SoakArgs {
    /// `--tier`/`--twin`/`--context` resolved; soak defaults to the model.
    pub fn tier(&self) -> Tier {
        Tier::resolve(
            self.tier,
            self.twin,
            self.live.cluster.context.as_deref(),
            Tier::Model,
        )
    }

    /// `--faults` parsed; refused off the twin tier (only the embedded twin injects them) and
    /// with `--mutant` on a cluster (the cluster runs its own operator).
    pub fn faults(&self) -> Result<Option<live::server::faults::FaultConfig>, String> {
        if self.tier() == Tier::Live && self.mutant.is_some() {
            return Err(crate::live_run::NO_MUTANT_ON_A_CLUSTER.into());
        }
        let faults = self
            .faults
            .as_deref()
            .map(live::server::faults::FaultConfig::parse)
            .transpose()
            .map_err(|e| format!("--faults: {e}"))?;
        if faults.is_some() && self.tier() != Tier::Twin {
            return Err("--faults needs the twin tier (--twin)".into());
        }
        Ok(faults)
    }

    /// The soak loop's config; `settings` are the live operator's (`None` off a cluster).
    pub fn soak_config(&self, settings: Option<model::Settings>) -> soak::SoakConfig {
        let tier = self.tier();
        soak::SoakConfig {
            seed: self.seed,
            shape: generators::ShapeConfig {
                max_nodes: self.max_nodes,
                settings,
                ..generators::ShapeConfig::default()
            },
            duration: self.duration,
            max_events: self.max_events,
            rate: self.rate,
            checkpoint_every: self.checkpoint_every,
            // the operator's flags are fixed on a twin or a cluster
            awareness_flips: tier == Tier::Model,
            // a twin (or cluster) replay costs a run and its convergence: fewer candidates
            shrink_budget: if tier == Tier::Model { 400 } else { 24 },
            ..soak::SoakConfig::default()
        }
    }
}

impl CheckArgs {
    /// Threads asked for, else 2 (issue [M15]) unless `--bfs` asks for the shortest
    /// counterexample, which only a single breadth-first thread guarantees.
    pub fn threads(&self) -> usize {
        self.threads.unwrap_or(if self.bfs { 1 } else { 2 })
    }

    /// The checker's config: breadth-first unless `--dfs`.
    pub fn check_config(&self) -> generators::check::CheckConfig {
        use generators::check::{CheckConfig, Search};
        CheckConfig {
            nodes: self.nodes,
            cards: self.cards,
            workloads: self.workloads,
            threads: self.threads(),
            search: if self.dfs { Search::Dfs } else { Search::Bfs },
            symmetry: self.symmetry,
            mutant: self.mutant,
            max_states: self.max_states,
            max_depth: self.max_depth,
            ..CheckConfig::default()
        }
    }
}

impl CaseArgs {
    /// `--tier`/`--context` resolved; a case defaults to the model.
    pub fn tier(&self) -> Tier {
        Tier::resolve(
            self.tier,
            false,
            self.live.cluster.context.as_deref(),
            Tier::Model,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Command {
        let argv = std::iter::once("verify").chain(line.split_whitespace());
        match Cli::try_parse_from(argv) {
            Ok(cli) => cli.command,
            Err(e) => panic!("`verify {line}` did not parse: {e}"),
        }
    }

    fn fuzz(line: &str) -> FuzzArgs {
        match parse(line) {
            Command::Fuzz(a) => a,
            other => panic!("`verify {line}` parsed as {other:?}"),
        }
    }

    fn soak(line: &str) -> SoakArgs {
        match parse(line) {
            Command::Soak(a) => a,
            other => panic!("`verify {line}` parsed as {other:?}"),
        }
    }

    #[test]
    fn fuzz_runs_on_the_twin_by_default_and_on_the_live_tier_with_a_context() {
        let plain = fuzz("fuzz --seeds 500")
            .fuzz_config(vec![18137], no_env)
            .unwrap();
        assert_eq!(plain.tier, Tier::Twin);
        assert_eq!(plain.jobs, Tier::Twin.default_jobs());
        assert_eq!((plain.seeds, plain.seed, plain.shard), (500, None, None));
        assert_eq!(plain.regressions, [18137]);
        let live = fuzz("fuzz --context prod --seeds 3")
            .fuzz_config(Vec::new(), no_env)
            .unwrap();
        assert_eq!((live.tier, live.jobs), (Tier::Live, 2));
        let model = fuzz("fuzz --tier model --jobs 3")
            .fuzz_config(Vec::new(), no_env)
            .unwrap();
        assert_eq!((model.tier, model.jobs), (Tier::Model, 3));
    }

    #[test]
    fn one_seed_replays_no_regressions_and_the_shrink_budget_reaches_the_twin() {
        let c = fuzz("fuzz --seed 7 --shrink-budget 5 --max-nodes 2 --shard 1/4")
            .fuzz_config(vec![18137], no_env)
            .unwrap();
        assert_eq!(c.seed, Some(7));
        assert!(c.regressions.is_empty());
        assert_eq!(c.twin.shrink_steps, 5);
        assert_eq!(c.shape.max_nodes, 2);
        assert_eq!(c.shard, Some((1, 4)));
    }

    #[test]
    fn fuzz_refuses_a_shard_out_of_range_and_twin_with_a_context() {
        for line in [
            "fuzz --shard 4/4",
            "fuzz --shard 1/0",
            "fuzz --shard x",
            "fuzz --shard Auto",
            "fuzz --twin --context prod",
        ] {
            let argv = std::iter::once("verify").chain(line.split_whitespace());
            assert!(Cli::try_parse_from(argv).is_err(), "`verify {line}` parsed");
        }
    }

    /// An environment with nothing set.
    fn no_env(_: &str) -> Option<String> {
        None
    }

    /// An environment holding `vars` only.
    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn shard_auto_takes_the_index_and_count_of_an_indexed_job() {
        let args = fuzz("fuzz --tier model --seeds 100 --shard auto");
        assert_eq!(args.shard, Some(Shard::Auto));
        let env = env_of(&[(SHARD_INDEX_VAR, "2"), (SHARD_COUNT_VAR, "4")]);
        let c = args.fuzz_config(Vec::new(), env).unwrap();
        assert_eq!(c.shard, Some((2, 4)));
        // a fixed shard ignores the environment
        let fixed = fuzz("fuzz --shard 1/3").fuzz_config(
            Vec::new(),
            env_of(&[(SHARD_INDEX_VAR, "0"), (SHARD_COUNT_VAR, "9")]),
        );
        assert_eq!(fixed.unwrap().shard, Some((1, 3)));
    }

    #[test]
    fn shard_auto_refuses_a_missing_or_bad_variable_naming_it() {
        let args = fuzz("fuzz --shard auto");
        for (vars, names, says) in [
            (&[][..], SHARD_INDEX_VAR, "is not set"),
            (&[(SHARD_INDEX_VAR, "1")][..], SHARD_COUNT_VAR, "is not set"),
            (
                &[(SHARD_INDEX_VAR, "x"), (SHARD_COUNT_VAR, "4")][..],
                SHARD_INDEX_VAR,
                "`x` is not a whole number",
            ),
            (
                &[(SHARD_INDEX_VAR, "1"), (SHARD_COUNT_VAR, "-4")][..],
                SHARD_COUNT_VAR,
                "`-4` is not a whole number",
            ),
            (
                &[(SHARD_INDEX_VAR, "4"), (SHARD_COUNT_VAR, "4")][..],
                SHARD_COUNT_VAR,
                "expected 0 <=",
            ),
            (
                &[(SHARD_INDEX_VAR, "0"), (SHARD_COUNT_VAR, "0")][..],
                SHARD_COUNT_VAR,
                "expected 0 <=",
            ),
        ] {
            let why = args.fuzz_config(Vec::new(), env_of(vars)).unwrap_err();
            assert!(why.contains(names) && why.contains(says), "{vars:?}: {why}");
        }
    }

    #[test]
    fn soak_runs_on_the_model_by_default_with_flips_and_the_larger_shrink_budget() {
        let args = soak("soak --seed 3 --max-events 25 --duration 90s");
        assert_eq!(args.tier(), Tier::Model);
        let c = args.soak_config(None);
        assert_eq!((c.seed, c.max_events), (3, Some(25)));
        assert_eq!(c.duration, std::time::Duration::from_secs(90));
        assert!(c.awareness_flips);
        assert_eq!(c.shrink_budget, 400);
        let twin = soak("soak --twin").soak_config(None);
        assert!(!twin.awareness_flips);
        assert_eq!(twin.shrink_budget, 24);
    }

    #[test]
    fn soak_takes_faults_on_the_twin_only_and_no_mutant_on_a_cluster() {
        assert!(soak("soak --twin --faults 7").faults().unwrap().is_some());
        assert!(soak("soak --twin").faults().unwrap().is_none());
        let off_twin = soak("soak --faults 7").faults().unwrap_err();
        assert!(off_twin.contains("--twin"), "{off_twin}");
        let mutant = soak("soak --context prod --mutant quota-off-by-one")
            .faults()
            .unwrap_err();
        assert_eq!(mutant, crate::live_run::NO_MUTANT_ON_A_CLUSTER);
    }

    #[test]
    fn check_is_breadth_first_unless_asked_and_refuses_both() {
        let Command::Check(bfs) = parse("check --nodes 2 --threads 2") else {
            panic!("not check")
        };
        let c = bfs.check_config();
        assert_eq!((c.nodes, c.threads), (2, 2));
        assert_eq!(c.search, generators::check::Search::Bfs);
        let threads = |line: &str| match parse(line) {
            Command::Check(c) => c.check_config().threads,
            _ => panic!("not check"),
        };
        assert_eq!(threads("check"), 2);
        assert_eq!(threads("check --dfs"), 2);
        assert_eq!(threads("check --bfs"), 1, "the shortest counterexample");
        assert_eq!(threads("check --bfs --threads 2"), 2);
        let Command::Check(dfs) = parse("check --dfs --symmetry") else {
            panic!("not check")
        };
        let c = dfs.check_config();
        assert_eq!(c.search, generators::check::Search::Dfs);
        assert!(c.symmetry);
        let argv = ["verify", "check", "--bfs", "--dfs"];
        assert!(Cli::try_parse_from(argv).is_err());
    }

    #[test]
    fn a_case_runs_on_the_model_unless_a_tier_or_context_says_otherwise() {
        for (line, tier) in [
            ("case 14", Tier::Model),
            ("case 14 --tier twin", Tier::Twin),
            ("case 14 --context prod", Tier::Live),
            ("case --block rdma --report-only --context prod", Tier::Live),
        ] {
            let Command::Case(args) = parse(line) else {
                panic!("not case")
            };
            assert_eq!(args.tier(), tier, "verify {line}");
        }
    }
}
