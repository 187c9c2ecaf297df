//! `verify report --merge OUT RUN_DIR…`: shard run directories joined into one
//! (`reports::merge`); this only dispatches and prints.

use super::*;

/// Merges the shards' run directories into `out`, prints where and the merged summary, and
/// exits with the merged verdict's code (a new finding in any shard: 1).
pub(super) fn merge_shards(out: &Path, runs: &[std::path::PathBuf]) -> Result<Outcome> {
    let summary = reports::merge_runs(out, runs, &command_line()).map_err(|e| match e {
        // the merged directory could not be written: not the input's fault
        reports::MergeError::Write(_) => anyhow::Error::new(e),
        e => UsageError(e.to_string()).into(),
    })?;
    outln!("merged {} shard run(s) into {}", runs.len(), out.display());
    reports::terminal::print_summary(&summary);
    Ok(summary.verdict.outcome())
}
