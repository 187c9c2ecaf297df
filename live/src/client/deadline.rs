//! Deadlines from user budgets. `--teardown-budget 18446744073709551615s` once panicked inside
//! a teardown ("overflow when adding duration to instant") and left the run's objects behind;
//! a budget past what the clock can add means "no deadline within this run", never a panic.

use std::time::Duration;

use tokio::time::Instant;

/// The longest wait any budget stands for: far beyond any run, still addable to `now`.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `budget` from now, saturating at [`FOREVER`].
pub fn deadline_after(budget: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(budget.min(FOREVER))
        .or_else(|| now.checked_add(Duration::from_secs(24 * 3600)))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_budget_too_large_to_add_is_a_far_deadline_not_a_panic() {
        let far = deadline_after(Duration::MAX);
        assert!(far > Instant::now() + Duration::from_secs(365 * 24 * 3600));
        let short = deadline_after(Duration::from_secs(5));
        assert!(short <= Instant::now() + Duration::from_secs(5));
        assert!(short < far);
    }
}
