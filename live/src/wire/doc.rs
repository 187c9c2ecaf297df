//! A listed object read straight into the typed parts a reader reads, borrowing its texts from
//! the input where it can: from an audited dump's text or from a `serde_json::Value` (the
//! twin's store, kube-rs), with one deserialization for both (`&Value` is a deserializer too).
//! Issue [M15]: building a Node's labels and managed fields as a `Value` (a `BTreeMap` and a
//! `String` per member) only to copy them out again was most of `verify audit --snapshot`.
//!
//! Members a part does not name are skipped unparsed. A member present as `null` reads as
//! absent, as the readers read it from a value.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Why a listed object could not be read into a part: the field path as the object spells it
/// (`metadata.labels.kubernetes.io/hostname`, `spec.groups[0].accelerators[1].index`) and what
/// was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocError {
    pub path: String,
    pub message: String,
}

/// `text` (one JSON value) read as `T`, its texts borrowed from `text`.
pub fn from_text<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, DocError> {
    // the untraced pass is the common one; a refusal is read again for its field path
    serde_json::from_str(text).or_else(|_| {
        let mut de = serde_json::Deserializer::from_str(text);
        let read = traced(serde_path_to_error::deserialize(&mut de))?;
        de.end().map_err(|e| DocError {
            path: String::new(),
            message: without_position(&e),
        })?;
        Ok(read)
    })
}

/// `value` read as `T`, its texts borrowed from `value`.
pub fn from_value<'a, T: Deserialize<'a>>(value: &'a Value) -> Result<T, DocError> {
    T::deserialize(value).or_else(|_| traced(serde_path_to_error::deserialize(value)))
}

fn traced<T>(
    read: Result<T, serde_path_to_error::Error<serde_json::Error>>,
) -> Result<T, DocError> {
    read.map_err(|e| DocError {
        path: e.path().to_string(),
        message: without_position(e.inner()),
    })
}

/// What `e` says, without the line and column within one object's text (which the path
/// replaces): the same message for an object read from its text as from its value.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&position) {
        Some(message) if e.line() > 0 => message.to_string(),
        _ => text,
    }
}

/// A reader's typed parts read one member of a listed object at a time, by a caller that reads
/// the object's other members itself (the audit reads a dump's items in one pass).
pub trait MemberWise<'de>: Default {
    /// Reads the value of member `name` (its key already read from `map`) into the parts, or
    /// skips it.
    fn read_member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error>;
}

/// A JSON string, borrowed from the input when it has no escapes.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Text<'a>(pub Cow<'a, str>);

impl Text<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(TextVisitor(PhantomData))
    }
}

/// A JSON object of strings (labels, annotations), its members in the input's order; a
/// non-string member is refused, naming it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StringMap<'a>(pub Vec<(Text<'a>, Text<'a>)>);

impl StringMap<'_> {
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl Serialize for StringMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StringMap<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for MapVisitor<'a> {
            type Value = StringMap<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringMap<'a>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(pair) = map.next_entry()? {
                    out.push(pair);
                }
                Ok(StringMap(out))
            }
        }
        d.deserialize_map(MapVisitor(PhantomData))
    }
}

/// The member names of a JSON object, its values skipped (`fieldsV1`'s owned paths).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberNames<'a>(pub Vec<Text<'a>>);

impl Serialize for MemberNames<'_> {
    /// Each name with an empty object (`fieldsV1`'s leaves).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let empty = serde_json::Map::new();
        s.collect_map(self.0.iter().map(|name| (name, &empty)))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MemberNames<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NamesVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for NamesVisitor<'a> {
            type Value = MemberNames<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MemberNames<'a>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((name, IgnoredAny)) = map.next_entry()? {
                    out.push(name);
                }
                Ok(MemberNames(out))
            }
        }
        d.deserialize_map(NamesVisitor(PhantomData))
    }
}

/// The visitor methods of a lenient part for the JSON values it does not read (but strings and
/// objects): each is skipped, and the part is its default.
macro_rules! default_for_other_values {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}
pub(crate) use default_for_other_values;

/// A string where one is expected, and nothing (not a refusal) for any other value: what an
/// item's head reads, whose absence the caller reports with its own field path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LooseText<'a>(pub Option<Text<'a>>);

impl LooseText<'_> {
    /// The string, when it is one and not empty.
    pub fn non_empty(&self) -> Option<&str> {
        self.0.as_ref().map(Text::as_str).filter(|s| !s.is_empty())
    }
}

impl Serialize for LooseText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LooseText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LooseVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for LooseVisitor<'a> {
            type Value = LooseText<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<LooseText<'a>, E> {
                Ok(LooseText(Some(Text(Cow::Borrowed(s)))))
            }
            fn visit_str<E>(self, s: &str) -> Result<LooseText<'a>, E> {
                Ok(LooseText(Some(Text(Cow::Owned(s.to_string())))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LooseText<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LooseText(None))
            }
            default_for_other_values!();
        }
        d.deserialize_any(LooseVisitor(PhantomData))
    }
}

/// An object's `metadata.name` and `.namespace` where they are strings ([`LooseText`]), and
/// neither where `metadata` is not an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LooseName<'a> {
    pub name: LooseText<'a>,
    pub namespace: LooseText<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for LooseName<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for NameVisitor<'a> {
            type Value = LooseName<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LooseName<'a>, A::Error> {
                let mut out = LooseName::default();
                while let Some(Text(key)) = map.next_key()? {
                    match key.as_ref() {
                        "name" => out.name = map.next_value()?,
                        "namespace" => out.namespace = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
            fn visit_str<E>(self, _: &str) -> Result<LooseName<'a>, E> {
                Ok(LooseName::default())
            }
            default_for_other_values!();
        }
        d.deserialize_any(NameVisitor(PhantomData))
    }
}

/// `T` where the value is an object, and nothing (not a refusal) for any other value: a
/// listed item's `metadata`, whose name the caller checks with its own field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectOrNothing<T>(pub Option<T>);

impl<T> Default for ObjectOrNothing<T> {
    fn default() -> Self {
        ObjectOrNothing(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOrNothing<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = ObjectOrNothing<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| ObjectOrNothing(Some(t)))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(ObjectOrNothing(None))
            }
            default_for_other_values!();
        }
        d.deserialize_any(ObjectVisitor(PhantomData))
    }
}

/// A Kubernetes quantity as listed: its text, or a JSON number's (as `serde_json` writes it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantityText<'a>(pub Cow<'a, str>);

impl Serialize for QuantityText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for QuantityText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct QuantityVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for QuantityVisitor<'a> {
            type Value = QuantityText<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a quantity (a string or a number)")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Owned(s.to_string())))
            }
            fn visit_i64<E>(self, n: i64) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Owned(n.to_string())))
            }
            fn visit_u64<E>(self, n: u64) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Owned(n.to_string())))
            }
            fn visit_f64<E>(self, n: f64) -> Result<QuantityText<'a>, E> {
                let text = serde_json::Number::from_f64(n).map_or(n.to_string(), |n| n.to_string());
                Ok(QuantityText(Cow::Owned(text)))
            }
        }
        d.deserialize_any(QuantityVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Part<'a> {
        #[serde(borrow)]
        labels: Option<StringMap<'a>>,
        #[serde(borrow)]
        owned: Option<MemberNames<'a>>,
        #[serde(borrow)]
        cpu: Option<QuantityText<'a>>,
    }

    #[test]
    fn a_part_reads_the_same_from_text_and_from_a_value_and_borrows_from_text() {
        let text = r#"{"labels": {"b": "1", "a": "x\u0079"}, "owned": {"f:a": {}, "f:b": {"x": 1}},
                       "cpu": 1.5, "other": [1, {"deep": null}]}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let from_text: Part = from_text(text).unwrap();
        let labels = from_text.labels.as_ref().unwrap();
        assert_eq!(labels.iter().collect::<Vec<_>>(), [("b", "1"), ("a", "xy")]);
        assert!(
            matches!(labels.0[0].0 .0, Cow::Borrowed(_)),
            "no escape: borrowed"
        );
        assert!(
            matches!(labels.0[1].1 .0, Cow::Owned(_)),
            "an escape: unescaped"
        );
        let names: Vec<&str> = from_text
            .owned
            .iter()
            .flat_map(|o| &o.0)
            .map(Text::as_str)
            .collect();
        assert_eq!(names, ["f:a", "f:b"]);
        assert_eq!(from_text.cpu.as_ref().map(|q| q.0.as_ref()), Some("1.5"));
        // a value's map is sorted; the pairs are the same
        let from_value: Part = from_value(&value).unwrap();
        let mut pairs: Vec<_> = labels.iter().collect();
        pairs.sort();
        assert_eq!(from_value.labels.unwrap().iter().collect::<Vec<_>>(), pairs);
        assert_eq!(from_value.cpu, from_text.cpu);
    }

    #[test]
    fn a_refusal_names_the_field_path_from_either_input() {
        let text = r#"{"labels": {"a": "1", "kubernetes.io/hostname": 3}}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let e = from_text::<Part>(text).unwrap_err();
        assert_eq!(e.path, "labels.kubernetes.io/hostname");
        assert!(e.message.contains("expected a string"), "{e:?}");
        assert_eq!(from_value::<Part>(&value).unwrap_err(), e);
        let e = from_text::<Part>(r#"{"cpu": true}"#).unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.message.contains("a quantity")),
            ("cpu", true)
        );
        assert!(
            from_text::<Part>(r#"{"labels": {}} x"#).is_err(),
            "trailing text"
        );
    }

    #[test]
    fn a_loose_name_reads_strings_and_nothing_else() {
        for (v, want) in [
            (
                json!({"name": "n", "namespace": "ns", "labels": {"a": "b"}}),
                (Some("n"), Some("ns")),
            ),
            (
                json!({"managedFields": [{"name": "x"}], "name": "n"}),
                (Some("n"), None),
            ),
            (json!({"name": 1, "namespace": ["ns"]}), (None, None)),
            (json!("metadata"), (None, None)),
            (json!([{"name": "n"}]), (None, None)),
        ] {
            let text = v.to_string();
            let read: LooseName = from_text(&text).unwrap();
            let got = (
                read.name.0.as_ref().map(Text::as_str),
                read.namespace.0.as_ref().map(Text::as_str),
            );
            assert_eq!(got, want, "{v}");
        }
    }

    #[test]
    fn a_loose_text_is_a_string_or_nothing() {
        for (v, want) in [
            (json!("n"), Some("n")),
            (json!(1), None),
            (json!(null), None),
            (json!([1, {"a": "b"}]), None),
            (json!({"a": ["b"]}), None),
        ] {
            let read: LooseText = from_value(&v).unwrap();
            assert_eq!(read.0.as_ref().map(Text::as_str), want, "{v}");
            let text = v.to_string();
            let read: LooseText = from_text(&text).unwrap();
            assert_eq!(read.0.as_ref().map(Text::as_str), want, "{v}");
        }
    }
}
