//! Runs the model against the operator's conformance vectors (shared/conformance, format in
//! its README). Vector files are data read at run time; nothing of them is copied here.

pub mod adapters;
pub mod compare;
pub mod input;
pub mod nil;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

pub use compare::subset_mismatch;

/// One vector: `{name, source, input, expected}` plus optional `contract`, `note`, `status`.
#[derive(Clone, Debug, Deserialize)]
pub struct Vector {
    pub name: String,
    pub source: String,
    pub input: Value,
    pub expected: Value,
    #[serde(default)]
    pub contract: Option<Value>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

impl Vector {
    /// A vector of the Go test at `source` (`<path>#<TestName>`), named after it, with no
    /// contract, note or status: what hand-made vectors in tests need.
    pub fn of(source: &str, input: Value, expected: Value) -> Vector {
        Vector {
            name: source.to_string(),
            source: source.to_string(),
            input,
            expected,
            contract: None,
            note: None,
            status: None,
        }
    }

    /// The Go test function the vector comes from (`<path>#<TestName>`).
    pub fn test_name(&self) -> &str {
        self.source.rsplit_once('#').map_or("", |(_, t)| t)
    }

    /// A contract variant this vector asserts, e.g. `contract.shared_once_max`.
    pub fn contract(&self, key: &str) -> Option<&str> {
        self.contract.as_ref()?.get(key)?.as_str()
    }
}

/// What running one vector gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    Fail {
        expected: String,
        got: String,
    },
    /// The vector's function is not implemented by the model (never counted as passed).
    NotImplemented(String),
    /// The vector's input lacks or mistypes a field.
    Malformed {
        field: String,
        problem: String,
    },
}

/// One vector's result, with where it came from.
#[derive(Clone, Debug)]
pub struct VectorResult {
    pub index: usize,
    pub name: String,
    pub test: String,
    pub outcome: Outcome,
}

/// One file's results; `error` is set when the file itself could not be read as vectors.
#[derive(Clone, Debug)]
pub struct FileReport {
    pub file: PathBuf,
    pub results: Vec<VectorResult>,
    pub error: Option<String>,
}

impl FileReport {
    pub fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.results.iter().filter(|r| pred(&r.outcome)).count()
    }
    pub fn passed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Pass))
    }
    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Fail { .. }))
    }
    pub fn malformed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Malformed { .. }))
    }
    pub fn not_implemented(&self) -> usize {
        self.count(|o| matches!(o, Outcome::NotImplemented(_)))
    }
    /// Vectors that were run against the model (passed or failed).
    pub fn judged(&self) -> usize {
        self.passed() + self.failed()
    }
}

/// The whole run over a directory.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    pub files: Vec<FileReport>,
}

impl outcome::Concluded for RunReport {
    /// DESIGN.md: a malformed vector or file is bad input, then any failed vector fails.
    fn outcome(&self) -> outcome::Outcome {
        if self.malformed() > 0 {
            outcome::Outcome::Usage
        } else if self.failed() > 0 {
            outcome::Outcome::Failed
        } else {
            outcome::Outcome::Held
        }
    }
}

impl RunReport {
    pub fn passed(&self) -> usize {
        self.files.iter().map(FileReport::passed).sum()
    }
    pub fn failed(&self) -> usize {
        self.files.iter().map(FileReport::failed).sum()
    }
    pub fn not_implemented(&self) -> usize {
        self.files.iter().map(FileReport::not_implemented).sum()
    }
    /// Malformed vectors plus unreadable files.
    pub fn malformed(&self) -> usize {
        self.files
            .iter()
            .map(|f| f.malformed() + usize::from(f.error.is_some()))
            .sum()
    }

    /// The human report: one line per file, failures and gaps under it, a closing tally.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            let name = f.file.file_name().map_or_else(
                || f.file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            if let Some(e) = &f.error {
                let _ = writeln!(out, "{name}: MALFORMED: {e}");
                continue;
            }
            let _ = write!(out, "{name}: {}/{}", f.passed(), f.results.len());
            if f.not_implemented() > 0 {
                let _ = write!(out, " ({} not implemented)", f.not_implemented());
            }
            out.push('\n');
            for (test, why, n) in not_implemented_by_test(f) {
                let _ = writeln!(out, "  not implemented: {test} x{n}: {why}");
            }
            for r in &f.results {
                match &r.outcome {
                    Outcome::Pass => {}
                    Outcome::Fail { expected, got } => {
                        let _ = writeln!(
                            out,
                            "  FAIL [{}] {} ({})\n    expected: {expected}\n    got:      {got}",
                            r.index, r.name, r.test
                        );
                    }
                    Outcome::NotImplemented(_) => {}
                    Outcome::Malformed { field, problem } => {
                        let _ = writeln!(
                            out,
                            "  MALFORMED {name}: vector {} ({}), field `{field}`: {problem}",
                            r.index, r.name
                        );
                    }
                }
            }
        }
        let _ = writeln!(
            out,
            "{} not implemented (never counted as passed), {} malformed",
            self.not_implemented(),
            self.malformed()
        );
        let _ = writeln!(out, "{} passed, {} failed", self.passed(), self.failed());
        out
    }
}

/// Not-implemented vectors of a file grouped by Go test: (test, reason, count), in file order.
fn not_implemented_by_test(f: &FileReport) -> Vec<(String, String, usize)> {
    let mut groups: Vec<(String, String, usize)> = Vec::new();
    for r in &f.results {
        if let Outcome::NotImplemented(why) = &r.outcome {
            match groups.iter_mut().find(|(t, w, _)| *t == r.test && w == why) {
                Some(g) => g.2 += 1,
                None => groups.push((r.test.clone(), why.clone(), 1)),
            }
        }
    }
    groups
}

/// Runs one vector file. A file that is not a JSON array of vectors is reported, not panicked on.
pub fn run_file(path: &Path) -> FileReport {
    let mut report = FileReport {
        file: path.to_path_buf(),
        results: Vec::new(),
        error: None,
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            report.error = Some(format!("cannot read {}: {e}", path.display()));
            return report;
        }
    };
    let raw: Vec<Value> = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            report.error = Some(format!(
                "{}: expected a JSON array of vectors: {e}",
                path.display()
            ));
            return report;
        }
    };
    let adapter = adapters::adapter_for(&stem);
    for (index, value) in raw.into_iter().enumerate() {
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>")
            .to_string();
        let (test, outcome) = match serde_json::from_value::<Vector>(value) {
            Err(e) => (
                String::new(),
                Outcome::Malformed {
                    field: "<vector>".into(),
                    problem: format!("expected {{name, source, input, expected}}: {e}"),
                },
            ),
            Ok(v) if v.status.as_deref() == Some("superseded") => (
                v.test_name().to_string(),
                Outcome::NotImplemented("superseded contract, not run".into()),
            ),
            Ok(v) => {
                let outcome = match adapter {
                    Some(run) => run(&v),
                    None => Outcome::NotImplemented(format!("no model function for {stem}.json")),
                };
                (v.test_name().to_string(), outcome)
            }
        };
        report.results.push(VectorResult {
            index,
            name,
            test,
            outcome,
        });
    }
    report
}

/// The conformance directory cannot be listed.
#[derive(Debug, thiserror::Error)]
#[error("cannot read conformance directory {}: {source}", dir.display())]
pub struct ReadDirError {
    pub dir: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Runs every `*.json` file of `dir`, in name order.
pub fn run_dir(dir: &Path) -> Result<RunReport, ReadDirError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ReadDirError {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(RunReport {
        files: files.iter().map(|p| run_file(p)).collect(),
    })
}
