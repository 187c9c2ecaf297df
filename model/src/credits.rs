//! Kubernetes quantities as exact values, and the credits / slice arithmetic built on them
//! (admission.md §1; corrections.md 6; pkg/nodefeature/knowns.go `CardsToCredits`,
//! `CreditsToCards`, `QuantityTo*`, `MemoryMibToUnits`).
//!
//! A [`Quantity`] holds its value in micro units (10⁻⁶) as an integer, so every rule here is
//! exact decimal arithmetic; digits finer than a micro round away from zero on parse, as
//! `resource.Quantity.ScaledValue(Micro)` does. No floating point anywhere.

use std::cmp::Ordering;
use std::fmt;

use crate::error::ModelError;
use crate::units::{CREDITS_PER_CARD, SHARES_PER_CARD, UNITS_PER_CARD};

/// `SlicedResourceMaxSize`: the largest power-of-two slice count of one card (knowns.go).
pub const SLICED_MAX_SIZE: i64 = 512;

const MICRO: i128 = 1_000_000;

/// How a quantity prints: the suffix family it was written in (`resource.Format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// `m`, `k`, `M`, `G`, … (and a bare number).
    #[default]
    DecimalSi,
    /// `Ki`, `Mi`, `Gi`, …
    BinarySi,
    /// `1e3`, `5E-3`, …
    DecimalExponent,
}

/// A Kubernetes resource quantity, exact at micro precision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Quantity {
    micro: i128,
    format: Format,
}

impl Quantity {
    /// A whole number in decimal format (`resource.NewQuantity(n, DecimalSI)`).
    pub fn from_int(n: i64) -> Quantity {
        Quantity {
            micro: i128::from(n) * MICRO,
            format: Format::DecimalSi,
        }
    }

    /// A value given in micro units, in decimal format.
    pub fn from_micro(micro: i128) -> Quantity {
        Quantity {
            micro,
            format: Format::DecimalSi,
        }
    }

    /// The value in micro units (`ScaledValue(Micro)`).
    pub fn micro(&self) -> i128 {
        self.micro
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// The same quantity with another value, keeping the format (`Set`/`SetScaled`).
    fn with_micro(self, micro: i128) -> Quantity {
        Quantity { micro, ..self }
    }

    /// `Value()`: the whole value, a fraction rounded away from zero.
    pub fn value(&self) -> i128 {
        div_away_from_zero(self.micro, MICRO)
    }

    /// `Value()` as an int64, or an error naming `field` when it does not fit.
    pub fn value_i64(&self, field: &str) -> Result<i64, ModelError> {
        i64::try_from(self.value())
            .map_err(|_| ModelError::invalid(field, format!("{self} does not fit an int64")))
    }

    /// `Cmp(1)`: exactly one, so `1m` or `1.5` are not.
    pub fn is_exactly_one(&self) -> bool {
        self.micro == MICRO
    }

    pub fn is_zero(&self) -> bool {
        self.micro == 0
    }

    /// `Mul(n)`: exact product, keeping the format; an overflow is an error value.
    pub fn checked_mul(self, n: i64) -> Result<Quantity, ModelError> {
        self.micro
            .checked_mul(i128::from(n))
            .map(|m| self.with_micro(m))
            .ok_or_else(|| ModelError::invalid("quantity", format!("{self} × {n} overflows")))
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    /// Quantities compare by value only (`Cmp`), never by how they are written.
    fn cmp(&self, other: &Self) -> Ordering {
        self.micro.cmp(&other.micro)
    }
}

/// `a / b` rounded away from zero (b > 0).
fn div_away_from_zero(a: i128, b: i128) -> i128 {
    let q = a / b;
    match (a % b).signum() {
        1 => q + 1,
        -1 => q - 1,
        _ => q,
    }
}

/// Decimal SI suffixes by power of ten.
const DECIMAL_SUFFIXES: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// Binary SI suffixes by power of 1024.
const BINARY_SUFFIXES: [(&str, u32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];

/// What multiplies the number of a quantity string.
enum Scale {
    Ten(i32),
    Binary(u32),
}

/// Splits `s` into (sign, integer digits, fraction digits, suffix) per the quantity grammar.
fn split_number(s: &str) -> Option<(bool, &str, &str, &str)> {
    let (negative, rest) = match (s.strip_prefix('-'), s.strip_prefix('+')) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        (None, None) => (false, s),
    };
    let int_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (int_digits, rest) = rest.split_at(int_end);
    let (frac_digits, suffix) = match rest.strip_prefix('.') {
        Some(after) => {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            after.split_at(end)
        }
        None => ("", rest),
    };
    (!int_digits.is_empty() || !frac_digits.is_empty()).then_some((
        negative,
        int_digits,
        frac_digits,
        suffix,
    ))
}

/// The scale and format a suffix stands for; `None` = not a quantity suffix.
fn parse_suffix(suffix: &str) -> Option<(Scale, Format)> {
    if suffix.is_empty() {
        return Some((Scale::Ten(0), Format::DecimalSi));
    }
    if let Some((_, k)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((Scale::Binary(*k), Format::BinarySi));
    }
    if let Some((_, e)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((Scale::Ten(*e), Format::DecimalSi));
    }
    // `e<signed int>` / `E<signed int>`; a lone `E` is exa, handled above.
    let exp = suffix
        .strip_prefix('e')
        .or_else(|| suffix.strip_prefix('E'))?;
    let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || digits.len() > 4 {
        return None;
    }
    let e: i32 = exp.parse().ok()?;
    Some((Scale::Ten(e), Format::DecimalExponent))
}

/// `resource.ParseQuantity` as a value: the number exact to a micro (finer digits round away
/// from zero), or an error naming what is wrong (knowns.go callers; k8s quantity grammar).
pub fn parse_quantity(s: &str) -> Result<Quantity, ModelError> {
    let bad = |why: &str| ModelError::invalid("quantity", format!("`{s}`: {why}"));
    let (negative, int_digits, frac_digits, suffix) =
        split_number(s.trim()).ok_or_else(|| bad("expected a number"))?;
    let (scale, format) = parse_suffix(suffix).ok_or_else(|| bad("unknown suffix"))?;
    if int_digits.len() + frac_digits.len() > 30 {
        return Err(bad("too many digits"));
    }
    let overflow = || bad("out of range");
    // mantissa = all digits as one integer; value = mantissa × 10^-frac × scale.
    let mantissa = int_digits
        .bytes()
        .chain(frac_digits.bytes())
        .try_fold(0i128, |m, d| {
            m.checked_mul(10)?.checked_add(i128::from(d - b'0'))
        })
        .ok_or_else(overflow)?;
    let frac_len = i32::try_from(frac_digits.len()).map_err(|_| overflow())?;
    let micro = match scale {
        Scale::Ten(e) => scale_by_ten(mantissa, e + 6 - frac_len).ok_or_else(overflow)?,
        Scale::Binary(k) => {
            let factor = 1024i128.checked_pow(k).ok_or_else(overflow)?;
            let scaled = mantissa
                .checked_mul(factor)
                .and_then(|m| m.checked_mul(MICRO))
                .ok_or_else(overflow)?;
            let divisor = 10i128
                .checked_pow(frac_len.unsigned_abs())
                .ok_or_else(overflow)?;
            div_away_from_zero(scaled, divisor)
        }
    };
    Ok(Quantity {
        micro: if negative { -micro } else { micro },
        format,
    })
}

/// `m × 10^e`, a negative power rounding away from zero; `None` on overflow.
fn scale_by_ten(m: i128, e: i32) -> Option<i128> {
    match (e >= 0, 10i128.checked_pow(e.unsigned_abs())) {
        (true, p) => m.checked_mul(p?),
        (false, Some(p)) => Some(div_away_from_zero(m, p)),
        // A divisor beyond i128 leaves only the rounded-up last micro (or zero).
        (false, None) => Some(m.signum()),
    }
}

impl fmt::Display for Quantity {
    /// The canonical string (`Quantity.String()`): the largest suffix that keeps an integer
    /// mantissa; binary only for whole values of at least 1024, else decimal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.micro == 0 {
            return f.write_str("0");
        }
        if self.format == Format::BinarySi {
            if let Some(s) = binary_string(self.micro) {
                return f.write_str(&s);
            }
        }
        let (mantissa, exp) = decimal_parts(self.micro);
        let suffix = match self.format {
            Format::DecimalExponent if exp != 0 => format!("e{exp}"),
            Format::DecimalExponent => String::new(),
            _ => DECIMAL_SUFFIXES
                .iter()
                .find(|(_, e)| *e == exp)
                .map_or_else(String::new, |(s, _)| (*s).to_string()),
        };
        write!(f, "{mantissa}{suffix}")
    }
}

/// (mantissa, power of ten) with the power a multiple of 3 in [-6, 18] and the mantissa
/// holding no removable group of three zeros.
fn decimal_parts(micro: i128) -> (i128, i32) {
    let (mut m, mut e) = (micro, -6);
    while m % 1000 == 0 && e < 18 {
        m /= 1000;
        e += 3;
    }
    (m, e)
}

/// The binary spelling of a whole value of magnitude ≥ 1024, if it has one.
fn binary_string(micro: i128) -> Option<String> {
    if micro % MICRO != 0 {
        return None;
    }
    let mut v = micro / MICRO;
    if v.abs() < 1024 {
        return None;
    }
    let mut k = 0usize;
    while v % 1024 == 0 && k < BINARY_SUFFIXES.len() {
        v /= 1024;
        k += 1;
    }
    let suffix = k
        .checked_sub(1)
        .and_then(|i| BINARY_SUFFIXES.get(i))
        .map_or("", |(s, _)| s);
    Some(format!("{v}{suffix}"))
}

/// `CardsToCredits`: cards × `CreditsPerCard`, exact; knowns.go.
pub fn cards_to_credits(cards: Quantity) -> Result<Quantity, ModelError> {
    cards.checked_mul(CREDITS_PER_CARD)
}

/// `CreditsToCards` (corrections.md 6): the credit count rounded up to a whole credit first
/// (`Value()`, Kueue's quantization), then ÷ `CreditsPerCard`, truncated at micro; knowns.go.
pub fn credits_to_cards(credits: Quantity) -> Result<Quantity, ModelError> {
    let micro = credits
        .value()
        .checked_mul(MICRO)
        .ok_or_else(|| ModelError::invalid("credits", format!("{credits} overflows")))?
        / i128::from(CREDITS_PER_CARD);
    Ok(credits.with_micro(micro))
}

/// A Kubernetes quantity's `Value()` (rounded up to an integer) as an int64; errors name `field`.
pub fn quantity_value(field: &str, q: &str) -> Result<i64, ModelError> {
    parse_quantity(q)
        .map_err(|e| ModelError::invalid(field, e.to_string()))?
        .value_i64(field)
}

/// `IsValidSlicedPartitions`: a power of two in [2, 512]; knowns.go.
pub fn is_valid_sliced_partitions(n: i64) -> bool {
    (2..=SLICED_MAX_SIZE).contains(&n) && n & (n - 1) == 0
}

/// The units of one slice of a card cut into `sliced` parts, for the sizes knowns.go tabulates
/// (powers of two from 1 to 512); `None` for any other size.
fn units_per_slice(sliced: i64) -> Option<i64> {
    ((1..=SLICED_MAX_SIZE).contains(&sliced) && sliced & (sliced - 1) == 0)
        .then(|| UNITS_PER_CARD / sliced)
}

/// `QuantityToSliceCount`: ⌊q·sliced⌋ at micro precision; an untabulated size returns `q`
/// unchanged (corrections.md 6; knowns.go).
pub fn quantity_to_slice_count(q: Quantity, sliced: i64) -> Result<Quantity, ModelError> {
    if units_per_slice(sliced).is_none() {
        return Ok(q);
    }
    let scaled = q.checked_mul(sliced)?;
    Ok(q.with_micro(scaled.micro / MICRO * MICRO))
}

/// `QuantityToAlignedValue`: q·(D/sliced); an untabulated size returns `q` (knowns.go).
pub fn quantity_to_aligned_value(q: Quantity, sliced: i64) -> Result<Quantity, ModelError> {
    match units_per_slice(sliced) {
        Some(units) => q.checked_mul(units),
        None => Ok(q),
    }
}

/// `QuantityToOriginalValue`: q ÷ (D/sliced) at micro precision, truncated; an untabulated size
/// returns `q` (knowns.go).
pub fn quantity_to_original_value(q: Quantity, sliced: i64) -> Quantity {
    match units_per_slice(sliced) {
        Some(units) => q.with_micro(q.micro / i128::from(units)),
        None => q,
    }
}

/// `MemoryMibToUnits`: ⌊mib·D/cardMib⌋, 0 when the card size is 0; an absurd product
/// saturates rather than wraps (knowns.go; admission.md §4.3).
pub fn memory_mib_to_units(mib: u64, card_mib: u64) -> i64 {
    if card_mib == 0 {
        return 0;
    }
    let units = u128::from(mib) * UNITS_PER_CARD as u128 / u128::from(card_mib);
    i64::try_from(units).unwrap_or(i64::MAX)
}

/// Memory percent → units: P·D/100 (pod.go fold; admission.md §4.3 "P × 16,000").
pub fn percent_to_units(percent: i64) -> i64 {
    percent.saturating_mul(UNITS_PER_CARD / 100)
}

/// The invariants `TestSlicedResourceDenominatorInvariants` pins on D (admission.md §1).
pub fn denominator_invariants() -> [(&'static str, i64); 6] {
    let every_pow2 = (1..=9)
        .map(|k| UNITS_PER_CARD % (1i64 << k))
        .max()
        .unwrap_or(0);
    [
        ("ResourceMaxUnits", UNITS_PER_CARD),
        ("SlicedResourceMaxSize", SLICED_MAX_SIZE),
        (
            "D_mod_SharedResourceMaxSize",
            UNITS_PER_CARD % SHARES_PER_CARD,
        ),
        ("D_mod_every_power_of_two_partition_size", every_pow2),
        ("D_mod_100", UNITS_PER_CARD % 100),
        ("1e9_mod_D", 1_000_000_000 % UNITS_PER_CARD),
    ]
}

/// The partition sizes knowns.go tabulates (`_SlicedResourceSizes`): powers of two, 1 to 512.
pub fn sliced_resource_sizes() -> impl Iterator<Item = i64> {
    (0..=9).map(|k| 1i64 << k).filter(|&n| n <= SLICED_MAX_SIZE)
}

/// The invariants `TestCreditsPerCardInvariants` pins on B, the credits of one whole card
/// (knowns_test.go): B = D, and B splits exactly into shared owner slots (B/10) and into every
/// tabulated partition size, so Kueue's ceil of a per-mode credit value never rounds up.
/// A remainder of 0 is the invariant holding; the largest remainder is reported.
pub fn credits_per_card_invariants() -> [(&'static str, i64); 3] {
    let every_size = sliced_resource_sizes()
        .map(|n| CREDITS_PER_CARD % n)
        .max()
        .unwrap_or(0);
    [
        ("CreditsPerCard", CREDITS_PER_CARD),
        ("B_mod_10", CREDITS_PER_CARD % SHARES_PER_CARD),
        ("B_mod_every_partition_size", every_size),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_per_card_splits_exactly() {
        let got = credits_per_card_invariants();
        assert_eq!(got[0], ("CreditsPerCard", 1_600_000));
        assert_eq!(got[1], ("B_mod_10", 0));
        assert_eq!(got[2], ("B_mod_every_partition_size", 0));
        assert_eq!(
            sliced_resource_sizes().collect::<Vec<_>>(),
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
        );
    }

    #[test]
    fn quantities_round_up_like_value() {
        assert_eq!(quantity_value("f", "800000"), Ok(800_000));
        assert_eq!(quantity_value("f", "1.5"), Ok(2));
        assert_eq!(quantity_value("f", "500m"), Ok(1));
        assert_eq!(quantity_value("f", "1k"), Ok(1000));
        assert_eq!(quantity_value("f", "1Ki"), Ok(1024));
        assert_eq!(quantity_value("f", "16e5"), Ok(1_600_000));
        assert!(quantity_value("f", "abc").is_err());
        assert!(quantity_value("f", "1Xi").is_err());
        assert!(quantity_value("f", "").is_err());
        assert_eq!(
            quantity_value("f", "0.00000000000000000000000000001n"),
            Ok(1)
        );
        assert!(quantity_value("f", "999999999999999999999999999999Ei").is_err());
        assert_eq!(quantity_value("f", "1e-3"), Ok(1));
    }

    fn q(s: &str) -> Quantity {
        parse_quantity(s).unwrap()
    }

    #[test]
    fn parses_suffixes_exactly() {
        assert_eq!(q("1").micro(), 1_000_000);
        assert_eq!(q("500m").micro(), 500_000);
        assert_eq!(q("1.5").micro(), 1_500_000);
        assert_eq!(q(".5").micro(), 500_000);
        assert_eq!(q("2k").micro(), 2_000_000_000);
        assert_eq!(q("24Gi").value(), 24 * 1024 * 1024 * 1024);
        assert_eq!(q("81920Mi").value() / (1024 * 1024), 81920);
        assert_eq!(q("1e3").value(), 1000);
        assert_eq!(q("1E").value(), 1_000_000_000_000_000_000);
        assert_eq!(q("-2").micro(), -2_000_000);
        assert_eq!(q("1n").micro(), 1, "sub-micro rounds away from zero");
        assert_eq!(q("199999500m").value(), 200_000);
        assert_eq!(q("1e-9999").micro(), 1);
    }

    #[test]
    fn rejects_malformed_quantities_as_values() {
        for s in ["", "abc", "1x", "1.2.3", "--1", "Gi", "1e", "1e+", "."] {
            assert!(parse_quantity(s).is_err(), "{s}");
        }
        assert!(parse_quantity("99999999999999999999999999999999Ei").is_err());
    }

    #[test]
    fn prints_canonically() {
        for (input, out) in [
            ("1600000", "1600k"),
            ("1000000", "1M"),
            ("1.5", "1500m"),
            ("0.25", "250m"),
            ("3125", "3125"),
            ("0", "0"),
            ("2048Mi", "2Gi"),
            ("1025Ki", "1025Ki"),
            ("512Ki", "512Ki"),
            ("1e3", "1e3"),
            ("0.001953", "1953u"),
        ] {
            assert_eq!(q(input).to_string(), out, "{input}");
        }
    }

    #[test]
    fn credits_round_trip_and_round_up_first() {
        let credits = cards_to_credits(q("1")).unwrap();
        assert_eq!(credits.to_string(), "1600k");
        assert_eq!(credits_to_cards(credits).unwrap().to_string(), "1");
        assert_eq!(credits_to_cards(q("3125")).unwrap().to_string(), "1953u");
        assert_eq!(
            credits_to_cards(q("199999500m")).unwrap().to_string(),
            "125m"
        );
        assert_eq!(credits_to_cards(q("5800000")).unwrap().to_string(), "3625m");
    }

    #[test]
    fn slice_arithmetic() {
        assert!(!is_valid_sliced_partitions(1));
        assert!(is_valid_sliced_partitions(2));
        assert!(!is_valid_sliced_partitions(6));
        assert!(!is_valid_sliced_partitions(1024));
        assert_eq!(
            quantity_to_slice_count(q("0.25"), 8).unwrap().to_string(),
            "2"
        );
        assert_eq!(
            quantity_to_slice_count(q("1.5"), 1).unwrap().to_string(),
            "1"
        );
        assert_eq!(
            quantity_to_slice_count(q("1.5"), 3).unwrap().to_string(),
            "1500m"
        );
        assert_eq!(
            quantity_to_aligned_value(q("1"), 512).unwrap().to_string(),
            "3125"
        );
        assert_eq!(
            quantity_to_aligned_value(q("1"), 0).unwrap().to_string(),
            "1"
        );
        assert_eq!(
            quantity_to_original_value(q("2400000"), 1).to_string(),
            "1500m"
        );
    }

    #[test]
    fn memory_folds_floor() {
        // admission.md §11.6: 40960 MiB of an 81920 MiB card = 800,000 units.
        assert_eq!(memory_mib_to_units(40960, 81920), 800_000);
        assert_eq!(memory_mib_to_units(1, 3), 533_333);
        assert_eq!(memory_mib_to_units(1, 0), 0);
        assert_eq!(percent_to_units(50), 800_000);
    }

    #[test]
    fn denominator_invariants_hold() {
        let inv = denominator_invariants();
        assert_eq!(inv[0].1, 1_600_000);
        assert!(inv[2..].iter().all(|(_, v)| *v == 0));
    }
}
