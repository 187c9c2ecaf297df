//! The regression file: seeds that once found a counterexample, replayed on every fuzz run.
//! One seed a line, `<seed> # <note>`; blank lines and lines starting with `#` are comments.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::atomic;
use crate::error::{Location, ScenarioError};

/// Where the regression file lives unless the caller says otherwise.
pub const DEFAULT_REGRESSIONS_FILE: &str = ".verify/regressions.txt";

/// One recorded seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regression {
    pub seed: u64,
    /// What it found (free text, may be empty).
    pub note: String,
    /// 1-based line in the file.
    pub line: usize,
}

/// The regression file, as loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regressions {
    path: PathBuf,
    entries: Vec<Regression>,
}

/// Reads one line: `None` for a comment or blank line.
fn parse_line(origin: &str, number: usize, raw: &str) -> Result<Option<Regression>, ScenarioError> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (seed, note) = match line.split_once('#') {
        Some((s, n)) => (s.trim(), n.trim()),
        None => (line, ""),
    };
    let seed = seed.parse::<u64>().map_err(|e| ScenarioError::Regression {
        at: Location {
            origin: origin.to_string(),
            line: Some(number),
            column: None,
        },
        message: format!(
            "expected `<seed> # <note>` with an unsigned 64-bit seed, got `{line}` ({e})"
        ),
    })?;
    Ok(Some(Regression {
        seed,
        note: note.to_string(),
        line: number,
    }))
}

fn parse(origin: &str, text: &str) -> Result<Vec<Regression>, ScenarioError> {
    let mut entries = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if let Some(r) = parse_line(origin, i + 1, raw)? {
            entries.push(r);
        }
    }
    Ok(entries)
}

/// The file's text, or `None` when there is no file yet.
fn read_text(path: &Path) -> Result<Option<String>, ScenarioError> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ScenarioError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

impl Regressions {
    /// Loads the file at `path`; a missing file is an empty list, a malformed line an error
    /// naming the file and the line.
    pub fn load(path: &Path) -> Result<Regressions, ScenarioError> {
        let origin = path.display().to_string();
        let entries = match read_text(path)? {
            Some(text) => parse(&origin, &text)?,
            None => Vec::new(),
        };
        Ok(Regressions {
            path: path.to_path_buf(),
            entries,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every line read, in file order (duplicates included).
    pub fn entries(&self) -> &[Regression] {
        &self.entries
    }

    /// The seeds in file order, each once (its first line wins).
    pub fn seeds(&self) -> Vec<u64> {
        let mut seen = std::collections::BTreeSet::new();
        self.entries
            .iter()
            .map(|r| r.seed)
            .filter(|s| seen.insert(*s))
            .collect()
    }

    pub fn contains(&self, seed: u64) -> bool {
        self.entries.iter().any(|r| r.seed == seed)
    }

    /// Appends `<seed> # <note>` unless the seed is already recorded; returns whether it wrote.
    /// The file is re-read first (another run may have appended meanwhile) and replaced
    /// atomically; line breaks in the note become spaces so one seed stays one line.
    pub fn append(&mut self, seed: u64, note: &str) -> Result<bool, ScenarioError> {
        let origin = self.path.display().to_string();
        let text = read_text(&self.path)?.unwrap_or_default();
        self.entries = parse(&origin, &text)?;
        if self.contains(seed) {
            return Ok(false);
        }
        let note = note.replace(['\n', '\r'], " ");
        let note = note.trim();
        let entry = if note.is_empty() {
            seed.to_string()
        } else {
            format!("{seed} # {note}")
        };
        let mut next = text;
        if !next.is_empty() && !next.ends_with('\n') {
            next.push('\n');
        }
        next.push_str(&entry);
        next.push('\n');
        atomic::replace(&self.path, next.as_bytes())?;
        self.entries.push(Regression {
            seed,
            note: note.to_string(),
            line: next.lines().count(),
        });
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_seed_and_note() {
        let rs = parse("r.txt", "# header\n\n42 # quota lost\n7\n 42 #again\n").unwrap();
        assert_eq!(rs.len(), 3);
        assert_eq!(
            rs[0],
            Regression {
                seed: 42,
                note: "quota lost".into(),
                line: 3
            }
        );
        assert_eq!(rs[1].note, "");
        assert_eq!(rs[2].line, 5);
    }

    #[test]
    fn a_bad_line_is_named() {
        let e = parse("r.txt", "1\n-3 # negative\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.txt:2: expected"), "{e}");
        let e = parse("r.txt", "12x\n").unwrap_err().to_string();
        assert!(e.starts_with("r.txt:1:"), "{e}");
        let e = parse("r.txt", "18446744073709551616\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("too large"), "{e}");
    }
}
