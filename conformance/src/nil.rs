//! Go's `nil` in a vector input: the operator's vectors write a nil slice, map or pointer as
//! JSON `null` (FULL-SET.md: "treat it as the empty map, list or object"). [`NilAsEmpty`]
//! deserializes a `serde_json::Value` so that `null` at any depth (the value itself, a list
//! element, a map value, a struct field) reads as Go reads it into a typed value: an empty
//! sequence when a list is wanted, an empty map when a map is wanted, `None` when an `Option`
//! is wanted, and the zero value otherwise — a struct of zero fields, `""`, `0`, `false`
//! (encoding/json leaves a non-nillable value untouched on `null`).

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde::forward_to_deserialize_any;
use serde_json::{Error, Map, Value};

/// Deserializes `T` from `v`, reading every `null` as Go's nil (empty).
pub fn from_value_nil_as_empty<T: de::DeserializeOwned>(v: &Value) -> Result<T, Error> {
    T::deserialize(NilAsEmpty(v))
}

/// A deserializer over a borrowed JSON value that reads `null` as empty (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct NilAsEmpty<'a>(pub &'a Value);

/// The elements of a list, each read through [`NilAsEmpty`]; empty for `null`.
struct Seq<'a>(std::slice::Iter<'a, Value>);

/// The entries of an object, each value read through [`NilAsEmpty`]; empty for `null`.
struct Entries<'a> {
    iter: serde_json::map::Iter<'a>,
    value: Option<&'a Value>,
}

impl<'a> Entries<'a> {
    fn new(map: &'a Map<String, Value>) -> Self {
        Entries {
            iter: map.iter(),
            value: None,
        }
    }
}

/// The one empty object `null` stands for when a map is wanted.
fn empty_map() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

impl<'de> Deserializer<'de> for NilAsEmpty<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(a) => visitor.visit_seq(Seq(a.iter())),
            Value::Object(m) => visitor.visit_map(Entries::new(m)),
            // Bools and numbers carry no null inside: serde_json reads them as it always does.
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_seq(Seq([].iter())),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_map(Entries::new(empty_map())),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            // Go's zero struct: every field at its own zero value.
            Value::Null => visitor.visit_map(ZeroFields(fields.iter())),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_bool(false),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_borrowed_str(""),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(m) if m.len() == 1 => visitor.visit_enum(Variant(m.iter().next())),
            other => other.deserialize_enum(name, variants, visitor),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            _ => self.deserialize_any(visitor),
        }
    }

    zero_numbers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }

    forward_to_deserialize_any! {
        char bytes byte_buf unit_struct identifier ignored_any
    }
}

/// Number deserializers that read `null` as 0, anything else as serde_json reads it.
macro_rules! zero_numbers {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                match self.0 {
                    Value::Null => visitor.visit_u64(0),
                    _ => self.deserialize_any(visitor),
                }
            }
        )*
    };
}
use zero_numbers;

/// The fields of a zero struct, each valued `null` (so each reads as its own zero value).
struct ZeroFields(std::slice::Iter<'static, &'static str>);

/// The `null` every field of a zero struct reads from.
static NULL: Value = Value::Null;

impl<'de> MapAccess<'de> for ZeroFields {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        self.0
            .next()
            .map(|f| seed.deserialize(BorrowedStrDeserializer::new(f)))
            .transpose()
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(NilAsEmpty(&NULL))
    }
}

impl<'de> SeqAccess<'de> for Seq<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(NilAsEmpty(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.iter.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(BorrowedStrDeserializer::new(k.as_str()))
                    .map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(NilAsEmpty(v)),
            None => Err(de::Error::custom(
                "a map value was asked for before its key",
            )),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An externally tagged enum value `{variant: content}`, its content read through
/// [`NilAsEmpty`].
struct Variant<'a>(Option<(&'a String, &'a Value)>);

/// The content of one enum variant.
struct Content<'a>(&'a Value);

impl<'de> EnumAccess<'de> for Variant<'de> {
    type Error = Error;
    type Variant = Content<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Content<'de>), Error> {
        let (tag, content) = self
            .0
            .ok_or_else(|| <Error as de::Error>::custom("an enum needs one variant key"))?;
        let tag = seed.deserialize(BorrowedStrDeserializer::new(tag.as_str()))?;
        Ok((tag, Content(content)))
    }
}

impl<'de> VariantAccess<'de> for Content<'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            Value::Null => Ok(()),
            other => Err(de::Error::invalid_type(
                de::Unexpected::Other(&other.to_string()),
                &"a unit variant",
            )),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(NilAsEmpty(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        NilAsEmpty(self.0).deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        NilAsEmpty(self.0).deserialize_map(visitor)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::from_value_nil_as_empty;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Inner {
        #[serde(default)]
        tags: Vec<String>,
        #[serde(default)]
        labels: BTreeMap<String, String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        list: Vec<Inner>,
        map: BTreeMap<String, Vec<u32>>,
        inner: Inner,
        maybe: Option<Vec<u32>>,
        number: i64,
    }

    #[test]
    fn null_at_top_level_is_the_empty_list_map_or_struct() {
        assert_eq!(
            from_value_nil_as_empty::<Vec<u32>>(&json!(null)).unwrap(),
            Vec::<u32>::new()
        );
        assert!(
            from_value_nil_as_empty::<BTreeMap<String, String>>(&json!(null))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            from_value_nil_as_empty::<Inner>(&json!(null)).unwrap(),
            Inner::default()
        );
        assert_eq!(
            from_value_nil_as_empty::<Option<String>>(&json!(null)).unwrap(),
            None
        );
    }

    #[test]
    fn null_nested_in_lists_maps_and_fields_is_empty() {
        let v = json!({
            "list": [null, {"tags": null, "labels": {"a": "b"}}],
            "map": {"k": null, "j": [1, 2]},
            "inner": {"tags": ["x"], "labels": null},
            "maybe": null,
            "number": 7,
        });
        let got: Outer = from_value_nil_as_empty(&v).unwrap();
        assert_eq!(got.list.len(), 2);
        assert_eq!(got.list[0], Inner::default());
        assert!(got.list[1].tags.is_empty());
        assert_eq!(got.list[1].labels.get("a").map(String::as_str), Some("b"));
        assert_eq!(got.map.get("k"), Some(&Vec::new()));
        assert_eq!(got.map.get("j"), Some(&vec![1, 2]));
        assert_eq!(got.inner.tags, ["x"]);
        assert!(got.inner.labels.is_empty());
        assert_eq!(got.maybe, None);
        assert_eq!(got.number, 7);
    }

    #[test]
    fn a_present_value_still_reads_as_itself_and_bad_types_still_fail() {
        let got: Option<Vec<u32>> = from_value_nil_as_empty(&json!([3])).unwrap();
        assert_eq!(got, Some(vec![3]));
        assert!(from_value_nil_as_empty::<Vec<u32>>(&json!("no")).is_err());
        // Go leaves a non-nillable value at its zero value on null.
        assert_eq!(from_value_nil_as_empty::<i64>(&json!(null)).unwrap(), 0);
        assert_eq!(from_value_nil_as_empty::<String>(&json!(null)).unwrap(), "");
        assert!(!from_value_nil_as_empty::<bool>(&json!(null)).unwrap());
        let v: Inner = from_value_nil_as_empty(&json!({"tags": ["a"]})).unwrap();
        assert_eq!(v.tags, ["a"]);
    }

    /// A struct with required fields, as most vector input types are.
    #[derive(Debug, Deserialize, PartialEq)]
    struct Required {
        name: String,
        count: u32,
        on: bool,
        inner: Inner,
        list: Vec<String>,
    }

    #[test]
    fn a_null_struct_is_the_zero_struct_even_with_required_fields() {
        let got: Vec<Required> = from_value_nil_as_empty(&json!([null, {
            "name": "a", "count": null, "on": true, "inner": null, "list": null
        }]))
        .unwrap();
        let zero = Required {
            name: String::new(),
            count: 0,
            on: false,
            inner: Inner::default(),
            list: Vec::new(),
        };
        assert_eq!(got[0], zero);
        assert_eq!(got[1].name, "a");
        assert_eq!(got[1].count, 0);
        assert!(got[1].on);
        // A present object still needs its required fields: a missing one is malformed input.
        assert!(from_value_nil_as_empty::<Required>(&json!({"name": "a"})).is_err());
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Shape {
        Unit,
        Wrap(Vec<u32>),
        Pair { list: Vec<u32> },
    }

    #[test]
    fn enum_contents_read_null_as_empty_too() {
        assert_eq!(
            from_value_nil_as_empty::<Shape>(&json!("Unit")).unwrap(),
            Shape::Unit
        );
        assert_eq!(
            from_value_nil_as_empty::<Shape>(&json!({"Wrap": null})).unwrap(),
            Shape::Wrap(Vec::new())
        );
        assert_eq!(
            from_value_nil_as_empty::<Shape>(&json!({"Pair": {"list": null}})).unwrap(),
            Shape::Pair { list: Vec::new() }
        );
    }
}
