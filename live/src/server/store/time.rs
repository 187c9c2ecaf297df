//! The store's clock: RFC 3339 stamps, the injectable clock and uid sources, and the twin's
//! virtual clock, moved only by [`Store::advance_clock`].

use super::*;

/// 2025-01-01T00:00:00Z in Unix seconds, the default clock's start.
pub const EPOCH_2025: u64 = 1_735_689_600;

/// A deterministic UUID-shaped uid for the n-th object.
pub fn sequential_uid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// A logical clock: `start`, then `start + step`, … seconds, as RFC 3339.
pub fn step_clock(start: u64, step: u64) -> Clock {
    let mut now = start;
    Box::new(move || {
        let t = rfc3339(now);
        now = now.saturating_add(step);
        t
    })
}

/// The machine's clock (what `verify twin serve` uses; tests keep the deterministic
/// [`step_clock`]).
pub fn wall_clock() -> Clock {
    Box::new(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(EPOCH_2025, |d| d.as_secs());
        rfc3339(now)
    })
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub fn rfc3339(unix_seconds: u64) -> String {
    let days = unix_seconds / 86_400;
    let secs = unix_seconds % 86_400;
    // civil-from-days (Howard Hinnant's algorithm), shifted to start on 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` (what [`rfc3339`] writes, fractional seconds ignored) as Unix
/// seconds; `None` when it is not one.
pub fn unix_seconds_of(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<u64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, m, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    // days-from-civil (Howard Hinnant's algorithm), the inverse of `rfc3339`'s.
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y / 400;
    let yoe = y % 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3600 + m * 60 + sec)
}

/// A clock reading `t` moved `advanced` seconds on (unreadable readings are kept as they are).
pub(super) fn offset_stamp(t: String, advanced: u64) -> String {
    if advanced == 0 {
        return t;
    }
    match unix_seconds_of(&t) {
        Some(u) => rfc3339(u.saturating_add(advanced)),
        None => t,
    }
}

impl Store {
    /// The store's clock now, RFC 3339 (what it stamps creations with), for writers that set
    /// a timestamp field themselves (`lastTransitionTime`).
    pub fn now(&mut self) -> String {
        self.stamp()
    }

    /// The clock's reading plus what [`Store::advance_clock`] added.
    pub(super) fn stamp(&mut self) -> String {
        offset_stamp((self.clock)(), self.advanced)
    }

    /// Moves the twin's virtual clock `seconds` forward (the twin-only admin request
    /// `POST /verify/v1/clock`): later stamps read that much later, and
    /// [`Store::advanced_since`] counts it. It is a write, so the resourceVersion moves and
    /// the reference operator reconciles (nothing else changes: no watch event is sent).
    pub fn advance_clock(&mut self, seconds: u64) {
        let at = self.stamp();
        let at = unix_seconds_of(&at).unwrap_or(0);
        self.advanced = self.advanced.saturating_add(seconds);
        self.advances.push((at, seconds));
        self.resource_version += 1;
    }

    /// The seconds [`Store::advance_clock`] added in all.
    pub fn advanced(&self) -> u64 {
        self.advanced
    }

    /// The seconds the virtual clock was advanced since `stamp` (an RFC 3339 time this store
    /// wrote): what a bound measured from a `lastTransitionTime` counts on the twin. The
    /// second a stamp ticks per write is bookkeeping, not time passing, so only advances
    /// count: nothing on the twin times out unless a client moves its clock. An unreadable
    /// stamp has seen no advance.
    pub fn advanced_since(&self, stamp: &str) -> u64 {
        let Some(since) = unix_seconds_of(stamp) else {
            return 0;
        };
        self.advances
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, s)| s)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(EPOCH_2025), "2025-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400 + 3661), "2000-02-29T01:01:01Z");
        for t in [0, EPOCH_2025, 951_782_400 + 3661, 4_102_444_799] {
            assert_eq!(unix_seconds_of(&rfc3339(t)), Some(t), "{t}");
        }
        assert_eq!(unix_seconds_of("2025-13-01T00:00:00Z"), None);
        assert_eq!(unix_seconds_of("yesterday"), None);
    }

    /// Only an advance moves the virtual clock's count; stamps after it read later.
    #[test]
    fn the_virtual_clock_counts_only_advances() {
        let mut store = Store::default();
        let before = store.now();
        for _ in 0..5000 {
            store.now();
        }
        assert_eq!(store.advanced_since(&before), 0);
        let rv = store.resource_version();
        store.advance_clock(1800);
        assert_eq!(store.resource_version(), rv + 1);
        assert_eq!(store.advanced_since(&before), 1800);
        let after = store.now();
        assert!(
            unix_seconds_of(&after) >= unix_seconds_of(&before).map(|b| b + 1800 + 5000),
            "{before} → {after}"
        );
        assert_eq!(store.advanced_since(&after), 0);
    }
}
