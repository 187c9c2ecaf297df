//! `InstanceType.status.detail` (research/chain.md §4, §8.2, §9.5; instance_type.go
//! `computeDetail`, pkg/device/sliced.go `AggregateAcceleratorSlicedDetail`).
//!
//! The `cpuDetail` flavor note is JSON. The model must not depend on serde_json, so it is read
//! by the small JSON reader at the bottom of this file, which turns any syntax or type error
//! into a value; a malformed note then leaves the Detail untouched, as in the operator.

use crate::devices::{Capability, Devices, PartitionProfile};
use crate::labels::{Labels, Text};
use crate::objects::{Detail, InstanceTypeSpec, LogicalDetail, PhysicalDetail, SlicedDetail};

/// `AggregateAcceleratorSlicedDetail`: logical counts and physical ceilings summed, overcommit
/// taken from any card with logical slices, profiles summed by name in first-seen order with
/// `memory_mib` carried from the first card; chain.md §4 (pkg/device/sliced.go @0f78a46).
pub fn aggregate_sliced_detail<'c>(caps: impl IntoIterator<Item = &'c Capability>) -> SlicedDetail {
    let mut logical = LogicalDetail::default();
    let mut physical = PhysicalDetail::default();
    for cap in caps {
        logical.count += u64::from(cap.logical_sliced_count);
        if cap.logical_sliced_count > 0 && cap.cores_percentage_overcommit {
            logical.cores_percentage_overcommit = true;
        }
        physical.count += u64::from(cap.physical_sliced_count);
        for p in &cap.physical_profiles {
            add_profile(&mut physical.profiles, p);
        }
    }
    SlicedDetail { logical, physical }
}

/// Adds one card's catalog profile to the aggregate, summing counts by name.
fn add_profile(into: &mut Vec<PartitionProfile>, p: &PartitionProfile) {
    match into.iter_mut().find(|q| q.name == p.name) {
        Some(q) => q.count = q.count.saturating_add(p.count),
        None => into.push(PartitionProfile {
            name: p.name.clone(),
            count: p.count,
            memory_mib: p.memory_mib,
            placements: Vec::new(),
        }),
    }
}

/// `poolAcceleratorSlicedDetail`: the aggregate over every spec card of the pool's own group
/// on every node (a card without a spec entry has no capability to add); chain.md §9.5.
pub fn pool_sliced_detail(devices: &[&Devices], pool_key: &str) -> SlicedDetail {
    let caps = devices
        .iter()
        .flat_map(|d| d.groups_of(pool_key))
        .flat_map(|g| g.cards.iter())
        .filter_map(|c| c.capability.as_ref());
    aggregate_sliced_detail(caps)
}

/// Pool-level `IsLogicallySliceable`: the aggregate offers logical slices; chain.md §8.2.
pub fn pool_is_logically_sliceable(d: &SlicedDetail) -> bool {
    d.logical.count > 0
}

/// Pool-level `IsPhysicallySliceable`: the aggregate offers partitions (independent of the
/// logical predicate; a mixed pool has both); chain.md §8.2.
pub fn pool_is_physically_sliceable(d: &SlicedDetail) -> bool {
    d.physical.count > 0
}

/// `splitRuntimeVersion`: `major[.minor]` as numbers; an absent minor is 0, a present segment
/// that does not parse makes the whole string a non-version (instance_type.go).
pub fn split_runtime_version(v: &str) -> Option<(i64, i64)> {
    let (major, minor) = match v.split_once('.') {
        Some((major, minor)) => (major, Some(minor)),
        None => (v, None),
    };
    let major = major.parse::<i64>().ok()?;
    let minor = match minor {
        Some(m) => m.parse::<i64>().ok()?,
        None => 0,
    };
    Some((major, minor))
}

/// `poolAcceleratorRuntimeVersions`: every distinct runtime version of the pool's own group,
/// numerically ascending, empty and unparsable versions dropped, duplicates (`9` = `9.0`)
/// collapsed to the first seen; empty = nothing observed; chain.md §9.5 (instance_type.go).
/// The order is `compareRuntimeVersions`' numeric (major, minor); the sort is stable, so which
/// spelling of a duplicate survives is the first node's.
pub fn runtime_versions(devices: &[&Devices], pool_key: &str) -> Vec<Text> {
    // Each version parsed once, as it is met (a pool's nodes repeat a few versions).
    let mut versions: Vec<((i64, i64), &str)> = devices
        .iter()
        .flat_map(|d| d.groups_of(pool_key))
        .filter_map(|g| {
            Some((
                split_runtime_version(&g.runtime_version)?,
                &*g.runtime_version,
            ))
        })
        .collect();
    versions.sort_by_key(|(number, _)| *number);
    versions.dedup_by_key(|(number, _)| *number);
    versions.into_iter().map(|(_, v)| Text::from(v)).collect()
}

/// `isGenericCollapsedPool`: a CPU pool with CPU-manufacturer awareness off folds many CPU kinds
/// and has no representative flavor, so its Detail stays empty; chain.md §9.5.
pub fn is_generic_collapsed_pool(spec: &InstanceTypeSpec, aware_cpu_manufacturer: bool) -> bool {
    !spec.acceleratable && !aware_cpu_manufacturer
}

/// `computeDetail`: empty for a collapsed generic pool or when no flavor matched
/// (`flavor_notes: None`); else manufacturer/product/family from the first matching flavor's
/// notes (keys without the `note.gpustack.ai/` prefix); an accelerated pool adds `memory`,
/// `cores`, the sliced detail and runtime versions of its own group and, only when aware, the
/// accelerator's CPU from the `cpuDetail` note; a CPU pool folds the note into the top-level
/// CPU fields; chain.md §9.5 (instance_type.go @01712e2 and newer).
pub fn instance_type_detail(
    spec: &InstanceTypeSpec,
    aware_cpu_manufacturer: bool,
    flavor_notes: Option<&Labels>,
    devices: &[&Devices],
) -> Detail {
    if is_generic_collapsed_pool(spec, aware_cpu_manufacturer) {
        return Detail::default();
    }
    let Some(notes) = flavor_notes else {
        return Detail::default();
    };
    let note = |k: &str| notes.get(k).cloned().unwrap_or_default();
    let mut detail = Detail {
        manufacturer: note("manufacturer"),
        product: note("product"),
        family: note("family"),
        ..Detail::default()
    };
    let cpu_note = note(CPU_DETAIL_NOTE);
    if spec.acceleratable {
        let pool_key = spec.accelerator_group.as_str();
        detail.memory = note("memory");
        detail.cores = note("cores");
        detail.sliced_detail = pool_sliced_detail(devices, pool_key);
        detail.runtime_versions = runtime_versions(devices, pool_key);
        detail.runtime_version = detail.runtime_versions.first().cloned().unwrap_or_default();
        if aware_cpu_manufacturer {
            fold_detail_cpu(&mut detail, &cpu_note, true);
        }
    } else {
        fold_detail_cpu(&mut detail, &cpu_note, false);
    }
    detail
}

/// The flavor note carrying the CPU descriptor as JSON.
pub const CPU_DETAIL_NOTE: &str = "cpuDetail";

/// Inline CPU fields of `InstanceTypeCPU` (CRD `detail`); `cache` is a nested object whose
/// fields are stored as `cache.<field>`.
pub const CPU_FIELDS: [&str; 7] = [
    "physicalCores",
    "threadsPerPhysicalCore",
    "logicalCores",
    "stepping",
    "clockSpeed",
    "maxClockSpeed",
    "cacheLine",
];
/// Fields of the nested `cache` object.
pub const CPU_CACHE_FIELDS: [&str; 4] = ["l1i", "l1d", "l2", "l3"];
/// Extra identity fields of `InstanceTypeAcceleratorCPU` (the accelerated pool's `detail.cpu`).
pub const ACCELERATOR_CPU_FIELDS: [&str; 3] = ["manufacturer", "product", "family"];

/// `foldDetailCPU`: a non-empty, well-formed `cpuDetail` note replaces `detail.cpu` wholesale —
/// an accelerated pool's `detail.cpu` object (identity + CPU fields) or a CPU pool's inline CPU
/// fields; an empty or malformed note leaves the Detail untouched (instance_type.go). Returns
/// whether the Detail was changed.
pub fn fold_detail_cpu(detail: &mut Detail, raw: &str, acceleratable: bool) -> bool {
    if raw.is_empty() {
        return false;
    }
    match parse_cpu_note(raw, acceleratable) {
        Ok(cpu) => {
            detail.cpu = cpu;
            true
        }
        Err(_) => false,
    }
}

/// Decodes a `cpuDetail` note the way Go's `json.Unmarshal` fills the CPU struct: known fields
/// (matched case-insensitively) must be strings or null, `cache` an object or null; unknown
/// fields are ignored; a top-level `null` decodes to the empty struct.
pub fn parse_cpu_note(raw: &str, acceleratable: bool) -> Result<Labels, JsonError> {
    let value = json::parse(raw)?;
    let members = match value {
        json::Value::Null => return Ok(Labels::new()),
        json::Value::Object(m) => m,
        _ => return Err(JsonError::new("cpuDetail note is not a JSON object")),
    };
    let extra: &[&str] = if acceleratable {
        &ACCELERATOR_CPU_FIELDS
    } else {
        &[]
    };
    let mut out = Labels::new();
    for (key, v) in members {
        if key.eq_ignore_ascii_case("cache") {
            fold_cache(&mut out, v)?;
        } else if let Some(field) = known_field(&key, CPU_FIELDS.iter().chain(extra)) {
            set_string_field(&mut out, field.to_string(), v)?;
        }
    }
    Ok(out)
}

/// The canonical field name `key` matches (Go's case-insensitive field matching), if any.
fn known_field<'a>(key: &str, fields: impl Iterator<Item = &'a &'a str>) -> Option<&'a str> {
    fields.copied().find(|f| f.eq_ignore_ascii_case(key))
}

/// Stores a string member; null leaves the field unset; any other type is a decode error.
fn set_string_field(out: &mut Labels, field: String, v: json::Value) -> Result<(), JsonError> {
    match v {
        json::Value::String(s) => {
            out.insert(field.into(), s.into());
            Ok(())
        }
        json::Value::Null => Ok(()),
        _ => Err(JsonError::new(format!("{field}: expected a string"))),
    }
}

/// Folds the nested `cache` object as `cache.<field>` entries.
fn fold_cache(out: &mut Labels, v: json::Value) -> Result<(), JsonError> {
    let members = match v {
        json::Value::Null => return Ok(()),
        json::Value::Object(m) => m,
        _ => return Err(JsonError::new("cache: expected an object")),
    };
    for (key, v) in members {
        if let Some(field) = known_field(&key, CPU_CACHE_FIELDS.iter()) {
            set_string_field(out, format!("cache.{field}"), v)?;
        }
    }
    Ok(())
}

/// Why a JSON note could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError(pub String);

impl JsonError {
    fn new(msg: impl Into<String>) -> Self {
        JsonError(msg.into())
    }
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed JSON: {}", self.0)
    }
}

impl std::error::Error for JsonError {}

/// A minimal RFC 8259 reader: enough to decode a flavor note, errors as values, bounded depth.
mod json {
    use super::JsonError;

    /// Nesting deeper than this is refused rather than risking the stack.
    const MAX_DEPTH: usize = 128;

    #[derive(Clone, Debug, PartialEq)]
    pub enum Value {
        Null,
        Bool(bool),
        /// The number's text, validated against the JSON grammar.
        Number(String),
        String(String),
        Array(Vec<Value>),
        /// Members in document order (a repeated key appears twice; the later wins on fold).
        Object(Vec<(String, Value)>),
    }

    /// Parses one JSON document; trailing non-whitespace is an error.
    pub fn parse(text: &str) -> Result<Value, JsonError> {
        let mut p = Parser {
            bytes: text.as_bytes(),
            pos: 0,
        };
        let v = p.value(0)?;
        p.skip_ws();
        if p.pos != p.bytes.len() {
            return Err(p.error("trailing characters after the value"));
        }
        Ok(v)
    }

    struct Parser<'a> {
        bytes: &'a [u8],
        pos: usize,
    }

    impl Parser<'_> {
        fn error(&self, what: &str) -> JsonError {
            JsonError::new(format!("{what} at byte {}", self.pos))
        }

        fn peek(&self) -> Option<u8> {
            self.bytes.get(self.pos).copied()
        }

        fn bump(&mut self) -> Option<u8> {
            let b = self.peek()?;
            self.pos += 1;
            Some(b)
        }

        fn skip_ws(&mut self) {
            while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                self.pos += 1;
            }
        }

        fn expect(&mut self, b: u8) -> Result<(), JsonError> {
            if self.bump() == Some(b) {
                Ok(())
            } else {
                Err(self.error(&format!("expected `{}`", b as char)))
            }
        }

        fn literal(&mut self, word: &str, v: Value) -> Result<Value, JsonError> {
            let end = self.pos + word.len();
            if self.bytes.get(self.pos..end) == Some(word.as_bytes()) {
                self.pos = end;
                Ok(v)
            } else {
                Err(self.error("invalid literal"))
            }
        }

        fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
            if depth > MAX_DEPTH {
                return Err(self.error("nesting too deep"));
            }
            self.skip_ws();
            match self.peek() {
                Some(b'{') => self.object(depth),
                Some(b'[') => self.array(depth),
                Some(b'"') => self.string().map(Value::String),
                Some(b't') => self.literal("true", Value::Bool(true)),
                Some(b'f') => self.literal("false", Value::Bool(false)),
                Some(b'n') => self.literal("null", Value::Null),
                Some(b'-' | b'0'..=b'9') => self.number(),
                Some(_) => Err(self.error("unexpected character")),
                None => Err(self.error("unexpected end of input")),
            }
        }

        fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
            self.expect(b'{')?;
            let mut members = Vec::new();
            self.skip_ws();
            if self.peek() == Some(b'}') {
                self.pos += 1;
                return Ok(Value::Object(members));
            }
            loop {
                self.skip_ws();
                let key = self.string()?;
                self.skip_ws();
                self.expect(b':')?;
                let v = self.value(depth + 1)?;
                members.push((key, v));
                self.skip_ws();
                match self.bump() {
                    Some(b',') => continue,
                    Some(b'}') => return Ok(Value::Object(members)),
                    _ => return Err(self.error("expected `,` or `}`")),
                }
            }
        }

        fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
            self.expect(b'[')?;
            let mut items = Vec::new();
            self.skip_ws();
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(Value::Array(items));
            }
            loop {
                items.push(self.value(depth + 1)?);
                self.skip_ws();
                match self.bump() {
                    Some(b',') => continue,
                    Some(b']') => return Ok(Value::Array(items)),
                    _ => return Err(self.error("expected `,` or `]`")),
                }
            }
        }

        fn digits(&mut self) -> usize {
            let start = self.pos;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            self.pos - start
        }

        fn number(&mut self) -> Result<Value, JsonError> {
            let start = self.pos;
            if self.peek() == Some(b'-') {
                self.pos += 1;
            }
            match self.peek() {
                Some(b'0') => self.pos += 1,
                Some(b'1'..=b'9') => {
                    self.digits();
                }
                _ => return Err(self.error("invalid number")),
            }
            if self.peek() == Some(b'.') {
                self.pos += 1;
                if self.digits() == 0 {
                    return Err(self.error("invalid number fraction"));
                }
            }
            if matches!(self.peek(), Some(b'e' | b'E')) {
                self.pos += 1;
                if matches!(self.peek(), Some(b'+' | b'-')) {
                    self.pos += 1;
                }
                if self.digits() == 0 {
                    return Err(self.error("invalid number exponent"));
                }
            }
            let text = String::from_utf8_lossy(self.bytes.get(start..self.pos).unwrap_or(&[]));
            Ok(Value::Number(text.into_owned()))
        }

        fn hex4(&mut self) -> Result<u32, JsonError> {
            let mut v = 0u32;
            for _ in 0..4 {
                let d = self
                    .bump()
                    .and_then(|b| (b as char).to_digit(16))
                    .ok_or_else(|| self.error("invalid \\u escape"))?;
                v = v * 16 + d;
            }
            Ok(v)
        }

        fn unicode_escape(&mut self) -> Result<char, JsonError> {
            let hi = self.hex4()?;
            let code = if (0xD800..0xDC00).contains(&hi) {
                if self.bump() != Some(b'\\') || self.bump() != Some(b'u') {
                    return Err(self.error("unpaired surrogate"));
                }
                let lo = self.hex4()?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return Err(self.error("unpaired surrogate"));
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            } else {
                hi
            };
            char::from_u32(code).ok_or_else(|| self.error("invalid code point"))
        }

        fn string(&mut self) -> Result<String, JsonError> {
            self.expect(b'"')?;
            let mut out: Vec<u8> = Vec::new();
            loop {
                match self.bump() {
                    None => return Err(self.error("unterminated string")),
                    Some(b'"') => break,
                    Some(b'\\') => {
                        let c = match self.bump() {
                            Some(b'"') => '"',
                            Some(b'\\') => '\\',
                            Some(b'/') => '/',
                            Some(b'b') => '\u{8}',
                            Some(b'f') => '\u{c}',
                            Some(b'n') => '\n',
                            Some(b'r') => '\r',
                            Some(b't') => '\t',
                            Some(b'u') => self.unicode_escape()?,
                            _ => return Err(self.error("invalid escape")),
                        };
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                    Some(b) if b < 0x20 => return Err(self.error("control character in string")),
                    Some(b) => out.push(b),
                }
            }
            String::from_utf8(out).map_err(|_| self.error("invalid UTF-8 in string"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Card, DeviceGroup};

    fn logical(count: u32, overcommit: bool) -> Capability {
        Capability {
            logical_sliced_count: count,
            cores_percentage_overcommit: overcommit,
            ..Capability::default()
        }
    }

    fn mig(profiles: &[(&str, u32, Option<u64>)]) -> Capability {
        Capability {
            physical_sliced_count: profiles.iter().map(|p| p.1).max().unwrap_or(0),
            physical_profiles: profiles
                .iter()
                .map(|(name, count, memory_mib)| PartitionProfile {
                    name: (*name).into(),
                    count: *count,
                    memory_mib: *memory_mib,
                    ..PartitionProfile::default()
                })
                .collect(),
            ..Capability::default()
        }
    }

    fn names_counts(d: &SlicedDetail) -> Vec<(&str, u32)> {
        d.physical
            .profiles
            .iter()
            .map(|p| (p.name.as_str(), p.count))
            .collect()
    }

    #[test]
    fn aggregate_mixed_logical_and_mig() {
        let m = mig(&[
            ("1g.5gb", 7, None),
            ("2g.10gb", 3, None),
            ("7g.40gb", 1, None),
        ]);
        let d = aggregate_sliced_detail(&[logical(128, true), logical(128, true), m]);
        assert_eq!(d.logical.count, 256);
        assert!(d.logical.cores_percentage_overcommit);
        assert_eq!(d.physical.count, 7);
        assert_eq!(
            names_counts(&d),
            [("1g.5gb", 7), ("2g.10gb", 3), ("7g.40gb", 1)]
        );
        assert!(pool_is_logically_sliceable(&d));
        assert!(pool_is_physically_sliceable(&d));
    }

    #[test]
    fn aggregate_sums_profiles_by_name_and_carries_memory() {
        let m = mig(&[("1g.10gb", 7, Some(10240)), ("2g.20gb", 3, None)]);
        let d = aggregate_sliced_detail(&[m.clone(), m]);
        assert_eq!(d.physical.count, 14);
        assert_eq!(names_counts(&d), [("1g.10gb", 14), ("2g.20gb", 6)]);
        assert_eq!(d.physical.profiles[0].memory_mib, Some(10240));
        assert!(!pool_is_logically_sliceable(&d));
        assert!(!d.logical.cores_percentage_overcommit);
    }

    #[test]
    fn overcommit_flag_needs_a_sliceable_card() {
        let d = aggregate_sliced_detail(&[logical(0, true)]);
        assert!(!d.logical.cores_percentage_overcommit);
        assert!(!pool_is_physically_sliceable(&d));
    }

    fn group(manufacturer: &str, id: &str, runtime: &str, caps: Vec<Capability>) -> DeviceGroup {
        DeviceGroup {
            manufacturer: manufacturer.into(),
            id: id.into(),
            runtime_version: runtime.into(),
            cards: caps
                .into_iter()
                .enumerate()
                .map(|(i, c)| Card {
                    id: format!("card-{i}"),
                    index: i as u32,
                    capability: Some(c),
                    ledger: None,
                })
                .collect(),
            ..DeviceGroup::default()
        }
    }

    fn versions(nodes: &[Vec<DeviceGroup>]) -> Vec<Text> {
        let devices: Vec<Devices> = nodes
            .iter()
            .map(|groups| Devices {
                groups: groups.clone(),
            })
            .collect();
        let refs: Vec<&Devices> = devices.iter().collect();
        runtime_versions(&refs, "nvidia-a10g")
    }

    #[test]
    fn runtime_versions_sort_numerically_and_dedupe() {
        let g = |v: &str| vec![group("nvidia", "a10g", v, vec![])];
        assert_eq!(versions(&[g("12.9"), g("9.0")]), ["9.0", "12.9"]);
        assert_eq!(versions(&[g("12.10"), g("12.9")]), ["12.9", "12.10"]);
        assert_eq!(versions(&[g("9"), g("9.0"), g("12.4")]), ["9", "12.4"]);
        assert_eq!(versions(&[g("9.0"), g("12.4"), g("9")]), ["9.0", "12.4"]);
        assert_eq!(versions(&[g("12.9"), g(""), g("N/A"), g("12.x")]), ["12.9"]);
        assert!(versions(&[]).is_empty());
    }

    #[test]
    fn runtime_versions_count_only_the_pools_group() {
        let node = vec![
            group("amd", "a10g", "6.4", vec![]),
            group("nvidia", "l4", "11.0", vec![]),
            group("nvidia", "a10g", "12.9", vec![]),
        ];
        assert_eq!(versions(&[node]), ["12.9"]);
    }

    #[test]
    fn split_runtime_version_rules() {
        assert_eq!(split_runtime_version("12.9"), Some((12, 9)));
        assert_eq!(split_runtime_version("9"), Some((9, 0)));
        assert_eq!(split_runtime_version("12."), None);
        assert_eq!(split_runtime_version("N/A"), None);
        assert_eq!(split_runtime_version(""), None);
    }

    fn notes(pairs: &[(&str, &str)]) -> Labels {
        crate::labels::from_pairs(pairs)
    }

    fn accelerated_spec() -> InstanceTypeSpec {
        InstanceTypeSpec {
            acceleratable: true,
            accelerator_group: "nvidia-a10g".into(),
            ..InstanceTypeSpec::default()
        }
    }

    #[test]
    fn accelerated_detail_from_notes_and_devices() {
        let a = Devices {
            groups: vec![group(
                "nvidia",
                "a10g",
                "12.9",
                vec![logical(128, true), logical(128, true)],
            )],
        };
        let b = Devices {
            groups: vec![group("nvidia", "a10g", "12.4", vec![])],
        };
        let n = notes(&[
            ("manufacturer", "nvidia"),
            ("product", "A10G"),
            ("family", "Ampere"),
            ("memory", "24576Mi"),
            ("cores", "9216"),
            (
                CPU_DETAIL_NOTE,
                r#"{"manufacturer":"amd","physicalCores":"32"}"#,
            ),
        ]);
        let d = instance_type_detail(&accelerated_spec(), false, Some(&n), &[&a, &b]);
        assert_eq!(d.manufacturer, "nvidia");
        assert_eq!(d.memory, "24576Mi");
        assert_eq!(d.cores, "9216");
        assert_eq!(d.sliced_detail.logical.count, 256);
        assert_eq!(d.runtime_versions, ["12.4", "12.9"]);
        assert_eq!(d.runtime_version, "12.4");
        assert!(
            d.cpu.is_empty(),
            "cpuDetail folds into an accelerated pool only when aware"
        );

        let aware = instance_type_detail(&accelerated_spec(), true, Some(&n), &[&a, &b]);
        assert_eq!(aware.cpu.get("manufacturer").map(Text::as_str), Some("amd"));
        assert_eq!(aware.cpu.get("physicalCores").map(Text::as_str), Some("32"));
    }

    #[test]
    fn collapsed_generic_pool_and_missing_flavor_give_empty_detail() {
        let n = notes(&[("manufacturer", "amd")]);
        let cpu_spec = InstanceTypeSpec::default();
        assert_eq!(
            instance_type_detail(&cpu_spec, false, Some(&n), &[]),
            Detail::default()
        );
        assert_eq!(
            instance_type_detail(&accelerated_spec(), false, None, &[]),
            Detail::default()
        );
        let aware = instance_type_detail(&cpu_spec, true, Some(&n), &[]);
        assert_eq!(aware.manufacturer, "amd");
        assert!(
            aware.memory.is_empty(),
            "a CPU pool has no accelerator memory"
        );
    }

    #[test]
    fn cpu_note_folds_into_a_cpu_pool() {
        let mut d = Detail::default();
        let raw = r#"{"physicalCores":"32","logicalCores":"64","manufacturer":"x",
                      "cache":{"l2":"1048576","bogus":[1,2]},"extra":{"a":[true,null,1.5e3]}}"#;
        assert!(fold_detail_cpu(&mut d, raw, false));
        assert_eq!(d.cpu.get("physicalCores").map(Text::as_str), Some("32"));
        assert_eq!(d.cpu.get("logicalCores").map(Text::as_str), Some("64"));
        assert_eq!(d.cpu.get("cache.l2").map(Text::as_str), Some("1048576"));
        assert!(
            !d.cpu.contains_key("manufacturer"),
            "not a field of the inline CPU"
        );
    }

    #[test]
    fn empty_or_malformed_notes_leave_the_detail_untouched() {
        for (raw, acc) in [
            ("", false),
            ("{not json", false),
            ("{not json", true),
            (r#"{"physicalCores":32}"#, false),
            (r#"{"cache":"big"}"#, false),
            (r#"{"physicalCores":"32"} x"#, false),
            ("[1,2]", false),
            (r#"{"a":"\ud800"}"#, false),
        ] {
            let mut d = Detail::default();
            assert!(!fold_detail_cpu(&mut d, raw, acc), "{raw}");
            assert_eq!(d, Detail::default(), "{raw}");
        }
    }

    #[test]
    fn json_reader_handles_escapes_and_depth() {
        let got = parse_cpu_note(r#"{"Stepping":"a\"b\u00e9\n"}"#, false);
        assert_eq!(
            got.ok().and_then(|m| m.get("stepping").cloned()).as_deref(),
            Some("a\"b\u{e9}\n")
        );
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        assert!(json::parse(&deep).is_err());
        assert_eq!(parse_cpu_note("null", false), Ok(Labels::new()));
    }
}
