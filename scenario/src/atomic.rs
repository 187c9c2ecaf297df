//! Atomic file writes: the content goes to a temporary file in the same folder, which is then
//! moved into place, so a reader never sees half a file and a crash leaves the old one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::ScenarioError;

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

fn write_error(path: &Path) -> impl FnOnce(io::Error) -> ScenarioError + '_ {
    move |source| ScenarioError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to a fresh hidden temporary file beside `target` and returns its path.
fn write_temp(target: &Path, bytes: &[u8]) -> Result<PathBuf, ScenarioError> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(write_error(&dir))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    loop {
        let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let file = OpenOptions::new().write(true).create_new(true).open(&temp);
        let mut file: File = match file {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(write_error(&temp)(e)),
        };
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(write_error(&temp)(e));
        }
        return Ok(temp);
    }
}

/// Replaces (or creates) `target` with `bytes` atomically.
pub fn replace(target: &Path, bytes: &[u8]) -> Result<(), ScenarioError> {
    let temp = write_temp(target, bytes)?;
    fs::rename(&temp, target).map_err(|e| {
        let _ = fs::remove_file(&temp);
        write_error(target)(e)
    })
}

/// Creates `target` with `bytes` atomically unless it already exists; `Ok(false)` when it did
/// (the existing file is left untouched). The temporary file is hard-linked to `target`, which
/// fails rather than overwrite; where hard links are unavailable it falls back to a checked
/// rename.
pub fn create_new(target: &Path, bytes: &[u8]) -> Result<bool, ScenarioError> {
    let temp = write_temp(target, bytes)?;
    let outcome = match fs::hard_link(&temp, target) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) if target.exists() => Ok(false),
        Err(_) => {
            return fs::rename(&temp, target)
                .map(|()| true)
                .map_err(write_error(target))
        }
    };
    let _ = fs::remove_file(&temp);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_new_never_overwrites_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.txt");
        assert!(create_new(&target, b"first").unwrap());
        assert!(!create_new(&target, b"second").unwrap());
        assert_eq!(fs::read_to_string(&target).unwrap(), "first");
        replace(&target, b"third").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "third");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.txt")]);
    }
}
