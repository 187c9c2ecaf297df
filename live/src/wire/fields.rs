//! Reading only the members of an object that a reader reads ([`Fields`]): an audited dump's
//! objects are JSON text, and parsing a Node whole into a `serde_json::Value` (its allocatable,
//! conditions, images, every managed field) only to read its labels and a few fields was about
//! a third of `verify audit --snapshot` (issue [M15]). The members left out are skipped
//! unparsed; the ones kept are parsed as a whole value would parse them, so a reader given the
//! projection reads what it would read from the whole object.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The members of an object a reader reads, as a tree of member names: a member with no
/// members of its own listed ([`Fields::ALL`]) is kept whole; within an array, each element is
/// projected alike (`metadata.managedFields[*].manager`).
#[derive(Debug)]
pub struct Fields(pub &'static [(&'static str, Fields)]);

impl Fields {
    /// The whole value.
    pub const ALL: Fields = Fields(&[]);

    fn keeps_all(&self) -> bool {
        self.0.is_empty()
    }

    fn member(&self, name: &str) -> Option<&Fields> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, f)| f)
    }

    /// `text` (one JSON value) with only these members; an error when it is not JSON.
    pub fn parse(&self, text: &str) -> serde_json::Result<Value> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Projected(self).deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }
}

/// The member of `o` at `pointer` (`/metadata/labels`), as `Value::pointer` finds it for a
/// pointer without `~` escapes, without that function's allocation per step: the readers ask
/// a few per object, for thousands of objects in an audit.
pub fn at<'v>(o: &'v Value, pointer: &str) -> Option<&'v Value> {
    debug_assert!(!pointer.contains('~'), "an escaped pointer: {pointer}");
    let Some(path) = pointer.strip_prefix('/') else {
        return pointer.is_empty().then_some(o);
    };
    path.split('/').try_fold(o, |v, step| match v {
        Value::Array(items)
            if !step.starts_with('+') && (step == "0" || !step.starts_with('0')) =>
        {
            items.get(step.parse::<usize>().ok()?)
        }
        _ => v.get(step),
    })
}

/// The seed that parses one value with only the members of its [`Fields`].
struct Projected<'f>(&'f Fields);

impl<'de> DeserializeSeed<'de> for Projected<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.0.keeps_all() {
            serde::Deserialize::deserialize(d)
        } else {
            d.deserialize_any(self)
        }
    }
}

/// A member name, borrowed from the text when it has no escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(s.into()))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(s.to_string().into()))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A projected value: an object keeps its listed members, an array projects each element, and
/// any other value (where an object was expected: the reader refuses it) is kept as it is.
impl<'de> Visitor<'de> for Projected<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(Key(name)) = map.next_key()? {
            match self.0.member(&name) {
                Some(fields) => {
                    out.insert(name.into_owned(), map.next_value_seed(Projected(fields))?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Projected(self.0))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NAME_AND_OWNERS: Fields = Fields(&[
        (
            "metadata",
            Fields(&[
                ("name", Fields::ALL),
                ("managedFields", Fields(&[("manager", Fields::ALL)])),
            ]),
        ),
        ("spec", Fields::ALL),
    ]);

    #[test]
    fn only_the_listed_members_are_kept_and_kept_ones_whole() {
        let text = r#"{"apiVersion": "v1", "metadata": {"name": "n\u0031", "uid": "u",
            "managedFields": [{"manager": "a", "fieldsV1": {"f:x": {}}}, {"manager": "b"}]},
            "spec": {"a": [1, 2.5, null, true, {"b": "c"}]}, "status": {"big": [1, 2, 3]}}"#;
        assert_eq!(
            NAME_AND_OWNERS.parse(text).unwrap(),
            json!({"metadata": {"name": "n1", "managedFields": [{"manager": "a"}, {"manager": "b"}]},
                   "spec": {"a": [1, 2.5, null, true, {"b": "c"}]}})
        );
    }

    #[test]
    fn a_pointer_finds_what_value_pointer_finds() {
        let o = json!({"metadata": {"labels": {"a": "b"}}, "list": [{"x": 1}]});
        for p in [
            "",
            "x",
            "/metadata",
            "/metadata/labels/a",
            "/metadata/nope",
            "/list/0/x",
            "/list/x",
            "/list/00",
            "/list/+0",
        ] {
            assert_eq!(at(&o, p), o.pointer(p), "{p}");
        }
    }

    #[test]
    fn a_scalar_where_an_object_was_expected_is_kept_for_the_reader_to_refuse() {
        let text = r#"{"metadata": "oops", "spec": 3}"#;
        assert_eq!(
            NAME_AND_OWNERS.parse(text).unwrap(),
            json!({"metadata": "oops", "spec": 3})
        );
        assert!(NAME_AND_OWNERS.parse(r#"{"metadata": {"#).is_err());
        assert!(NAME_AND_OWNERS.parse(r#"{} x"#).is_err());
    }
}
