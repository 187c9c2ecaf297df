//! The soak's time series (one CSV row per sample, flushed as written, so a killed run keeps
//! its rows) and the history file that collects one row per run across nightly runs.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One sample of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the soak started.
    pub elapsed_s: f64,
    pub events_applied: u64,
    /// Findings (broken invariants and divergences) so far.
    pub divergences: u64,
    /// Mean time to quiescence over the events since the previous sample, in milliseconds.
    pub quiescence_latency_ms: f64,
    pub api_calls: u64,
    pub objects_alive: u64,
    /// The verifier's own resident memory, in KiB (0 where the platform cannot say).
    pub rss_kib: u64,
}

/// The verifier's resident memory now, in KiB.
pub fn rss_kib() -> u64 {
    memory_stats::memory_stats().map_or(0, |m| (m.physical_mem / 1024) as u64)
}

/// Writes samples to `series.csv` as they come.
pub struct SeriesWriter {
    path: PathBuf,
    out: csv::Writer<File>,
}

impl SeriesWriter {
    pub fn create(path: &Path) -> io::Result<Self> {
        let out = csv::Writer::from_path(path).map_err(io::Error::other)?;
        Ok(SeriesWriter {
            path: path.to_path_buf(),
            out,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn push(&mut self, sample: &Sample) -> io::Result<()> {
        self.out.serialize(sample).map_err(io::Error::other)?;
        self.out.flush()
    }
}

/// Reads a series back (reports, tests).
pub fn read_series(path: &Path) -> Result<Vec<Sample>, SeriesReadError> {
    read_rows(path)
}

/// Every row of a CSV file the soak wrote; errors name the file and the row.
fn read_rows<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, SeriesReadError> {
    let mut reader = csv::Reader::from_path(path).map_err(|source| SeriesReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    reader
        .deserialize()
        .enumerate()
        .map(|(i, row)| {
            row.map_err(|source| SeriesReadError::Row {
                path: path.to_path_buf(),
                row: i + 1,
                source,
            })
        })
        .collect()
}

/// A soak CSV (series or history) that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum SeriesReadError {
    #[error("{}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    #[error("{}: row {row}: {source}", path.display())]
    Row {
        path: PathBuf,
        row: usize,
        #[source]
        source: csv::Error,
    },
}

/// One run in the history file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryRow {
    /// The run directory's id (its UTC timestamp comes first).
    pub run: String,
    pub tier: String,
    pub seed: u64,
    pub duration_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    /// Seconds to the first finding; empty when none.
    pub first_failure_s: Option<f64>,
    pub mean_quiescence_ms: f64,
    pub peak_rss_kib: u64,
    pub verdict: String,
}

/// Appends `row` to the history CSV at `path` (created with a header when new), so trends
/// across nightly runs can be read off one file.
pub fn append_history(path: &Path, row: &HistoryRow) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    let fresh = fs::metadata(path).map(|m| m.len() == 0).unwrap_or(true);
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let mut out = csv::WriterBuilder::new()
        .has_headers(fresh)
        .from_writer(file);
    out.serialize(row).map_err(io::Error::other)?;
    out.flush()?;
    out.into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?
        .flush()
}

/// Reads the history back.
pub fn read_history(path: &Path) -> Result<Vec<HistoryRow>, SeriesReadError> {
    read_rows(path)
}

/// One plot of the series: file name, title, y label, and the column it draws.
type Plot = (&'static str, &'static str, &'static str, fn(&Sample) -> f64);

/// The series' plots, one SVG per column, written under `plots/` of the run directory.
const PLOTS: [Plot; 6] = [
    ("events.svg", "Events applied", "events", |s| {
        s.events_applied as f64
    }),
    ("divergences.svg", "Divergences", "findings", |s| {
        s.divergences as f64
    }),
    ("latency.svg", "Quiescence latency", "ms", |s| {
        s.quiescence_latency_ms
    }),
    ("api-calls.svg", "API calls", "calls", |s| {
        s.api_calls as f64
    }),
    ("objects.svg", "Objects alive", "objects", |s| {
        s.objects_alive as f64
    }),
    ("memory.svg", "Verifier resident memory", "KiB", |s| {
        s.rss_kib as f64
    }),
];

/// Draws every column of `samples` (reports::plots::series_svg) into `dir`; returns the files.
pub fn write_plots(dir: &Path, samples: &[Sample]) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir)?;
    PLOTS
        .iter()
        .map(|(file, title, unit, value)| {
            let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.elapsed_s, value(s))).collect();
            let svg = reports::plots::series_svg(title, unit, &points).map_err(io::Error::other)?;
            let path = dir.join(file);
            fs::write(&path, svg)?;
            Ok(path)
        })
        .collect()
}
