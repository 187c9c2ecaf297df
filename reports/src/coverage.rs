//! Shape coverage of a run: per class (vendors, modes, families, node counts, event kinds,
//! properties exercised), how many scenarios showed each value; and coverage floors
//! (`--min-coverage`) checked against it. Counting only: what a scenario shows is decided by
//! the caller (the fuzz loop classifies its scenarios).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Scenarios seen per class and value; a value counts once per scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Scenarios observed.
    pub scenarios: u64,
    /// class → value → scenarios that showed it.
    pub classes: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Coverage {
    /// Counts one scenario that showed `values` (class, value); repeats within it count once.
    pub fn observe<'a>(&mut self, values: impl IntoIterator<Item = (&'a str, String)>) {
        self.scenarios += 1;
        let mut seen: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (class, value) in values {
            let slot = seen.entry(class).or_default();
            if !slot.contains(&value) {
                slot.push(value);
            }
        }
        for (class, values) in seen {
            let counts = self.classes.entry(class.to_string()).or_default();
            for v in values {
                *counts.entry(v).or_default() += 1;
            }
        }
    }

    /// Adds another run's (or worker's) counts.
    pub fn merge(&mut self, other: &Coverage) {
        self.scenarios += other.scenarios;
        for (class, values) in &other.classes {
            let counts = self.classes.entry(class.clone()).or_default();
            for (v, n) in values {
                *counts.entry(v.clone()).or_default() += n;
            }
        }
    }

    /// Distinct values seen in `class`.
    pub fn distinct(&self, class: &str) -> u64 {
        self.classes.get(class).map_or(0, |v| v.len() as u64)
    }

    /// Scenarios that showed `value` in `class`.
    pub fn count(&self, class: &str, value: &str) -> u64 {
        self.classes
            .get(class)
            .and_then(|v| v.get(value))
            .copied()
            .unwrap_or(0)
    }

    /// One row per class: `class  value=n, value=n, …` (values in name order).
    pub fn table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .classes
            .iter()
            .map(|(class, values)| {
                let cells: Vec<String> = values.iter().map(|(v, n)| format!("{v}={n}")).collect();
                vec![class.clone(), values.len().to_string(), cells.join(", ")]
            })
            .collect();
        crate::table(&["CLASS", "DISTINCT", "SCENARIOS PER VALUE"], &rows)
    }
}

/// A coverage floor: `CLASS=N` (at least N distinct values in the class) or
/// `CLASS:VALUE=N` (the value shown by at least N scenarios).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floor {
    pub class: String,
    pub value: Option<String>,
    pub min: u64,
}

impl fmt::Display for Floor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}:{v}={}", self.class, self.min),
            None => write!(f, "{}={}", self.class, self.min),
        }
    }
}

/// Parses `CLASS=N,CLASS:VALUE=N,…`; errors name the item and what was expected.
pub fn parse_floors(text: &str) -> Result<Vec<Floor>, FloorError> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let bad = |problem: String| FloorError {
                item: item.to_string(),
                problem,
            };
            let (key, min) = item
                .rsplit_once('=')
                .ok_or_else(|| bad("expected CLASS=N or CLASS:VALUE=N".into()))?;
            let min: u64 = min
                .trim()
                .parse()
                .map_err(|_| bad(format!("`{min}` is not a whole number")))?;
            let (class, value) = match key.split_once(':') {
                Some((c, v)) => (c.trim(), Some(v.trim().to_string())),
                None => (key.trim(), None),
            };
            if class.is_empty() || value.as_deref() == Some("") {
                return Err(bad("expected a class name (and a value after `:`)".into()));
            }
            Ok(Floor {
                class: class.to_string(),
                value,
                min,
            })
        })
        .collect()
}

/// A `--coverage-floor` item that does not parse: the item and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("coverage floor `{item}`: {problem}")]
pub struct FloorError {
    pub item: String,
    pub problem: String,
}

/// A floor and what the run reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorCheck {
    pub floor: String,
    pub reached: u64,
    pub met: bool,
}

/// Checks every floor against `coverage`.
pub fn check_floors(coverage: &Coverage, floors: &[Floor]) -> Vec<FloorCheck> {
    floors
        .iter()
        .map(|f| {
            let reached = match &f.value {
                Some(v) => coverage.count(&f.class, v),
                None => coverage.distinct(&f.class),
            };
            FloorCheck {
                floor: f.to_string(),
                reached,
                met: reached >= f.min,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Coverage {
        let mut c = Coverage::default();
        c.observe([
            ("vendors", "nvidia".to_string()),
            ("modes", "None".to_string()),
            ("modes", "None".to_string()),
        ]);
        c.observe([("vendors", "nvidia".into()), ("vendors", "amd".into())]);
        c
    }

    #[test]
    fn a_value_counts_once_per_scenario() {
        let c = sample();
        assert_eq!(c.scenarios, 2);
        assert_eq!(c.count("modes", "None"), 1);
        assert_eq!(c.count("vendors", "nvidia"), 2);
        assert_eq!(c.distinct("vendors"), 2);
        assert_eq!(c.distinct("families"), 0);
        let mut twice = c.clone();
        twice.merge(&c);
        assert_eq!(twice.count("vendors", "nvidia"), 4);
        assert_eq!(twice.scenarios, 4);
        assert!(c.table().contains("amd=1, nvidia=2"), "{}", c.table());
    }

    #[test]
    fn floors_parse_and_check() {
        let floors = parse_floors("vendors=2, modes:None=2,families=1").unwrap();
        assert_eq!(floors[1].value.as_deref(), Some("None"));
        let checks = check_floors(&sample(), &floors);
        let met: Vec<bool> = checks.iter().map(|c| c.met).collect();
        assert_eq!(met, [true, false, false]);
        assert_eq!(checks[1].floor, "modes:None=2");
        assert_eq!(checks[1].reached, 1);
        for bad in ["vendors", "vendors=x", "=3", "modes:=1"] {
            let e = parse_floors(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
