//! Run directories: `runs/<run-id>/`, one per run, holding its counterexamples as scenario files
//! beside their Markdown reports (`counterexamples/<seed>.{yaml,md}`), plus whatever else the
//! run records through [`RunDir::replace_file`] (summaries, rewritten whole and atomically) and
//! [`RunDir::append_file`] (row logs). A counterexample is never overwritten.

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::BuildHasher;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use model::scenario::Scenario;

use crate::atomic;
use crate::error::ScenarioError;
use crate::format::try_to_yaml;

/// Where run directories go unless the caller says otherwise.
pub const DEFAULT_RUNS_DIR: &str = "runs";

/// The folder of a run directory that holds its counterexamples.
pub const COUNTEREXAMPLES_DIR: &str = "counterexamples";

/// A run id from a UTC time (seconds since the Unix epoch) and a suffix:
/// `20250314T092653Z-<suffix>`. Pure, so tests pin both parts.
pub fn run_id(unix_seconds: u64, suffix: &str) -> String {
    let (y, m, d) = civil_from_days(unix_seconds / 86_400);
    let s = unix_seconds % 86_400;
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z-{suffix}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

/// A run id for now, with six random hex digits as suffix.
pub fn run_id_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // RandomState is seeded per process from the OS; enough to keep two runs started in the
    // same second apart without a random-number dependency.
    let noise = RandomState::new().hash_one((secs, std::process::id()));
    run_id(secs, &format!("{:06x}", noise & 0xff_ffff))
}

/// (year, month, day) of a day count since 1970-01-01 in the proleptic Gregorian calendar
/// (the days-to-civil algorithm of H. Hinnant's "chrono-compatible date algorithms").
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// One run's directory.
#[derive(Clone, Debug)]
pub struct RunDir {
    id: String,
    path: PathBuf,
}

impl RunDir {
    /// Creates `<base>/<id>/` (and `base` if needed); refuses an id that is not a single plain
    /// path component and a directory that already exists (another run's).
    pub fn create(base: &Path, id: &str) -> Result<RunDir, ScenarioError> {
        let bad = |why: &str| ScenarioError::RunId {
            id: id.to_string(),
            why: why.to_string(),
        };
        if id.is_empty() || id.starts_with('.') {
            return Err(bad("must not be empty or start with a dot"));
        }
        if id.contains(['/', '\\']) || id.chars().any(char::is_control) {
            return Err(bad("must be one plain path component"));
        }
        fs::create_dir_all(base).map_err(|source| ScenarioError::Write {
            path: base.to_path_buf(),
            source,
        })?;
        let path = base.join(id);
        fs::create_dir(&path).map_err(|source| ScenarioError::Write {
            path: path.clone(),
            source: if source.kind() == io::ErrorKind::AlreadyExists {
                io::Error::new(io::ErrorKind::AlreadyExists, "the run directory exists")
            } else {
                source
            },
        })?;
        Ok(RunDir {
            id: id.to_string(),
            path,
        })
    }

    /// Creates a run directory under `base` named by [`run_id_now`].
    pub fn create_now(base: &Path) -> Result<RunDir, ScenarioError> {
        RunDir::create(base, &run_id_now())
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An existing run directory (to re-read or extend what a run recorded).
    pub fn open(path: &Path) -> Result<RunDir, ScenarioError> {
        if !path.is_dir() {
            return Err(ScenarioError::Read {
                path: path.to_path_buf(),
                source: io::Error::new(io::ErrorKind::NotFound, "expected a run directory"),
            });
        }
        let id = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(RunDir {
            id,
            path: path.to_path_buf(),
        })
    }

    /// `relative` inside the run directory; refuses absolute paths and `..` so nothing is
    /// written outside it.
    pub fn resolve(&self, relative: &str) -> Result<PathBuf, ScenarioError> {
        let rel = Path::new(relative);
        let plain =
            !relative.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain {
            return Err(ScenarioError::Write {
                path: self.path.join(relative),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "expected a relative path inside the run directory",
                ),
            });
        }
        Ok(self.path.join(rel))
    }

    /// Replaces (or creates) `relative` atomically: a reader sees the old file or the new one,
    /// and a run killed midway leaves the last whole version.
    pub fn replace_file(&self, relative: &str, bytes: &[u8]) -> Result<PathBuf, ScenarioError> {
        let path = self.resolve(relative)?;
        atomic::replace(&path, bytes)?;
        Ok(path)
    }

    /// Appends `bytes` to `relative` (created if missing) in one write, synced to disk, so a
    /// row log keeps every row written before a crash.
    pub fn append_file(&self, relative: &str, bytes: &[u8]) -> Result<PathBuf, ScenarioError> {
        let path = self.resolve(relative)?;
        let error = |source| ScenarioError::Write {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(error)?;
        }
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(error)?;
        file.write_all(bytes)
            .and_then(|()| file.sync_data())
            .map_err(error)?;
        Ok(path)
    }

    /// Writes `counterexamples/<seed>.yaml` (the scenario, replayable; its header names the
    /// property and the report) and `counterexamples/<seed>.md` (the report) and returns the
    /// YAML's path. Each file appears whole or not at all; when a counterexample for the same
    /// seed is already there, the new pair gets the next free `-2`, `-3`, … suffix instead of
    /// replacing it.
    pub fn write_counterexample(
        &self,
        seed: u64,
        property: &str,
        scenario: &Scenario,
        report_markdown: &str,
    ) -> Result<PathBuf, ScenarioError> {
        let dir = self.path.join(COUNTEREXAMPLES_DIR);
        fs::create_dir_all(&dir).map_err(|source| ScenarioError::Write {
            path: dir.clone(),
            source,
        })?;
        let base = seed.to_string();
        let body = try_to_yaml(scenario)?;
        // The property sits in a comment: one line, whatever the name holds.
        let property_line: String = property
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        for n in 1..=10_000u32 {
            let stem = if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            let yaml = dir.join(format!("{stem}.yaml"));
            let md = dir.join(format!("{stem}.md"));
            if md.exists() {
                continue;
            }
            let text = format!(
                "# Counterexample: seed {seed}, property {property_line}.\n\
                 # Report: {stem}.md. Replay: verify replay {COUNTEREXAMPLES_DIR}/{stem}.yaml\n{body}"
            );
            if !atomic::create_new(&yaml, text.as_bytes())? {
                continue;
            }
            if !atomic::create_new(&md, report_markdown.as_bytes())? {
                // Someone wrote a report under this name meanwhile: keep theirs, move on.
                let _ = fs::remove_file(&yaml);
                continue;
            }
            return Ok(yaml);
        }
        Err(ScenarioError::Write {
            path: dir.join(format!("{base}.yaml")),
            source: io::Error::new(
                io::ErrorKind::AlreadyExists,
                "10000 counterexamples for this seed already exist",
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_spell_utc_time() {
        assert_eq!(run_id(0, "s1"), "19700101T000000Z-s1");
        // 2024-02-29 23:59:59 UTC (a leap day).
        assert_eq!(run_id(1_709_251_199, "abc"), "20240229T235959Z-abc");
        // 2000-03-01 00:00:00 UTC (the 400-year leap rule).
        assert_eq!(run_id(951_868_800, "x"), "20000301T000000Z-x");
    }

    #[test]
    fn run_id_now_has_the_shape() {
        let id = run_id_now();
        assert_eq!(id.len(), "20250101T000000Z-".len() + 6, "{id}");
        assert!(id.as_bytes().get(15) == Some(&b'Z'), "{id}");
    }
}
