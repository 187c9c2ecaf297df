//! Value parsers that bound the numeric flags: a value no command can honour is a usage error
//! naming the flag and the range, never a panic or an abort later (issue [M16] found `--jobs
//! 0` and `--rate NaN` accepted, `--max-nodes 18446744073709551615` a capacity-overflow
//! panic and `--max-nodes 4294967296` an allocation abort).

use clap::builder::RangedU64ValueParser;

/// The most workers a run starts (`--jobs`, `--threads`).
pub const MAX_JOBS: u64 = 256;
/// The largest generated cluster (`--max-nodes`): the 1,000-node size the derivation benchmark
/// times (`model/examples/derive_timing.rs`); a seed's shape is allocated up front.
pub const MAX_NODES: u64 = 1000;
/// The fastest soak rate asked for, events per second (faster is "as fast as quiescence
/// allows", the default).
pub const MAX_RATE: f64 = 1e6;

/// `--jobs`, `--threads`: 1 to [`MAX_JOBS`].
pub fn workers() -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(1..=MAX_JOBS)
}

/// `--max-nodes`: 1 to [`MAX_NODES`].
pub fn max_nodes() -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(1..=MAX_NODES)
}

/// A count that must be at least 1 (`--checkpoint-every`).
pub fn at_least_one() -> RangedU64ValueParser<u64> {
    RangedU64ValueParser::new().range(1..)
}

/// `--rate`: events per second, a finite number above 0 and at most [`MAX_RATE`].
pub fn rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of events per second"))?;
    if rate.is_finite() && rate > 0.0 && rate <= MAX_RATE {
        Ok(rate)
    } else {
        Err(format!(
            "`{s}`: expected events per second above 0 and at most {MAX_RATE}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_outside_the_range_are_refused_with_the_range() {
        for bad in ["0", "-1", "NaN", "inf", "-inf", "1e7", "x", ""] {
            let e = rate(bad).expect_err(bad);
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
        assert_eq!(rate("1e-20"), Ok(1e-20));
        assert_eq!(rate("2.5"), Ok(2.5));
    }
}
