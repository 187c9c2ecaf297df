//! A locked case on disk: the case header (`case:`, research/cases.md §2.6) beside the
//! scenario it replays. The header is read strictly on its own; the rest of the file is read
//! by the scenario reader with the header's lines blanked, so every error keeps its line.

use std::fs;
use std::path::Path;

use model::scenario::{CaseHeader, Scenario};
use serde_norway::Value;

use crate::error::{Location, ScenarioError};
use crate::locate::locate;
use crate::path::FieldPath;

/// A scenario file and, for a locked case, its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFile {
    pub header: Option<CaseHeader>,
    pub scenario: Scenario,
}

/// Parses a scenario file that may open with a `case:` header.
pub fn case_from_yaml(text: &str, origin: &str) -> Result<CaseFile, ScenarioError> {
    if let Some(at) = crate::nesting::too_deep(text) {
        return Err(ScenarioError::Syntax {
            at: Location::new(origin, Some(at)),
            field: FieldPath::root(),
            message: format!(
                "flow collections nested deeper than {} levels: not a scenario",
                crate::nesting::MAX_FLOW_DEPTH
            ),
        });
    }
    let doc: Option<Value> = serde_norway::from_str(text).ok();
    let header = match doc.as_ref().and_then(|d| d.get("case")) {
        None => None,
        Some(v) => Some(read_header(text, origin, v)?),
    };
    let rest = if header.is_some() {
        blank_top_level_key(text, "case")
    } else {
        text.to_string()
    };
    let scenario = crate::format::scenario_from_yaml(&rest, origin)?;
    Ok(CaseFile { header, scenario })
}

/// Reads and parses the case file at `path`.
pub fn load_case(path: &Path) -> Result<CaseFile, ScenarioError> {
    let text = fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    case_from_yaml(&text, &path.display().to_string())
}

/// Renders a case file: `case:` first, then the scenario. `case_from_yaml` reads it back.
pub fn case_to_yaml(c: &CaseFile) -> Result<String, ScenarioError> {
    let body = crate::format::try_to_yaml(&c.scenario)?;
    let Some(header) = &c.header else {
        return Ok(body);
    };
    #[derive(serde::Serialize)]
    struct Only<'a> {
        case: &'a CaseHeader,
    }
    let head = serde_norway::to_string(&Only { case: header }).map_err(ScenarioError::Render)?;
    Ok(format!("{head}{body}"))
}

fn read_header(text: &str, origin: &str, v: &Value) -> Result<CaseHeader, ScenarioError> {
    serde_path_to_error::deserialize::<_, CaseHeader>(v.clone()).map_err(|e| {
        let mut field = FieldPath::root().key("case");
        field.0.extend(FieldPath::from_serde(e.path()).0);
        let at = locate(text, field.segments()).or_else(|| locate(text, &field.segments()[..1]));
        ScenarioError::Syntax {
            at: Location::new(origin, at),
            field,
            message: e.inner().to_string(),
        }
    })
}

/// `text` with the block of top-level `key:` turned into comment lines (line count kept).
fn blank_top_level_key(text: &str, key: &str) -> String {
    let opener = format!("{key}:");
    let mut inside = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let top_level = !line.starts_with([' ', '\t', '#', '\n', '\r']) && !line.is_empty();
        if top_level {
            inside = line.starts_with(&opener);
        }
        if inside {
            out.push('#');
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanking_keeps_line_numbers_and_other_keys() {
        let t = "case:\n  number: 1\n  title: x\nname: n\nevents: []\n";
        let b = blank_top_level_key(t, "case");
        assert_eq!(b, "#\n#\n#\nname: n\nevents: []\n");
    }
}
