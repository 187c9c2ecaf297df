//! The locked cases `verify` carries as data: one scenario file per case under `scenarios/`,
//! embedded so the binary runs them anywhere. Each file opens with the case header.

use model::scenario::{CaseHeader, Scenario};

/// One locked case: its header and the scenario it replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedCase {
    pub header: CaseHeader,
    pub scenario: Scenario,
    /// The embedded file it came from (`scenarios/NN.yaml`).
    pub file: &'static str,
}

impl LockedCase {
    /// Whether its live gate is an NVIDIA partition card: the cases whose hardware step
    /// switches MIG mode (`hardware.rs`).
    pub fn toggles_mig(&self) -> bool {
        self.header
            .gate
            .as_ref()
            .is_some_and(|g| g.hardware == crate::probe::NVIDIA_PARTITIONS)
    }
}

macro_rules! files {
    ($($n:literal),* $(,)?) => {
        &[$((concat!("scenarios/", $n, ".yaml"), include_str!(concat!("../scenarios/", $n, ".yaml")))),*]
    };
}

/// An embedded case file that does not read as a locked case.
#[derive(Debug, thiserror::Error)]
pub enum CaseFileError {
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    #[error("cases/{file}: field case: expected the case header")]
    NoHeader { file: &'static str },
}

/// Every case file, by number.
pub const FILES: &[(&str, &str)] = files!(
    "01", "02", "03", "04", "05", "06", "09", "10", "11", "12", "14", "16", "17", "18", "19", "20",
    "22", "23", "24", "25", "26", "27", "28", "29", "30", "31", "32", "34", "39", "40", "41", "42",
    "50", "68", "80", "81", "82", "83", "84", "85", "87", "88", "95", "96", "106",
);

/// Parses one embedded file; the error names the file, line and field.
pub fn parse(file: &'static str, text: &str) -> Result<LockedCase, CaseFileError> {
    let parsed = scenario::case_from_yaml(text, &format!("cases/{file}"))?;
    let header = parsed.header.ok_or(CaseFileError::NoHeader { file })?;
    Ok(LockedCase {
        header,
        scenario: parsed.scenario,
        file,
    })
}

/// Every case in the library (a file that does not parse is an error value, listed).
pub fn cases() -> Vec<Result<LockedCase, CaseFileError>> {
    FILES.iter().map(|(f, t)| parse(f, t)).collect()
}

/// Case `n`, if the library carries it.
pub fn case(n: u32) -> Option<Result<LockedCase, CaseFileError>> {
    FILES
        .iter()
        .find(|(f, _)| number_of(f) == Some(n))
        .map(|(f, t)| parse(f, t))
}

/// The case number a file name carries (`scenarios/06.yaml` → 6).
pub fn number_of(file: &str) -> Option<u32> {
    file.strip_prefix("scenarios/")?
        .strip_suffix(".yaml")?
        .parse()
        .ok()
}
