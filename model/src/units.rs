//! Ledger and credit constants (pkg/nodefeature/knowns.go; research/devices.md §1.3).

/// `ResourceMaxUnits` = `CreditsPerCard`: one whole card in ledger units and in Kueue credits.
pub const UNITS_PER_CARD: i64 = 1_600_000;
/// `SharedResourceMaxSize`: owners per shared card.
pub const SHARES_PER_CARD: i64 = 10;
/// One shared-owner slot in ledger units (D/10).
pub const UNITS_PER_SHARE: i64 = UNITS_PER_CARD / SHARES_PER_CARD;
/// One VRAM percent in ledger units (D/100), the unit of the SL view.
pub const UNITS_PER_PERCENT: i64 = UNITS_PER_CARD / 100;
/// Kueue credits per whole card.
pub const CREDITS_PER_CARD: i64 = UNITS_PER_CARD;
/// Kueue's cap on flavors in one resource group (node_queue.go TAS validation).
pub const MAX_FLAVORS_PER_QUEUE: usize = 64;

/// `clampInt32`: a value saturated into the int32 range the ledger uses, negatives to 0
/// (node_devices_admission.go).
pub fn clamp_i32(v: i128) -> i64 {
    v.clamp(0, i128::from(i32::MAX)) as i64
}
