//! JSON that keeps its keys in the order written: a tool's input schema is copied into the
//! starting scenario as its author ordered it (`type`, `properties`, `required`), and the
//! scenario's sections come out in reading order, `$comment` first. (`serde_json::Value`
//! sorts keys; its `preserve_order` feature would change every other output of the crate.)

use std::fmt;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON value whose objects keep their keys in order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ordered {
    /// A string, number, boolean or null.
    Leaf(Value),
    /// An array.
    Array(Vec<Ordered>),
    /// An object, keys in order (a repeated key keeps its first place and its last value).
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    /// An object of `pairs`, in order.
    pub(crate) fn object<K: Into<String>>(pairs: Vec<(K, Ordered)>) -> Ordered {
        Ordered::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A string.
    pub(crate) fn str(s: impl Into<String>) -> Ordered {
        Ordered::Leaf(Value::String(s.into()))
    }

    /// A number, boolean or other leaf.
    pub(crate) fn leaf(v: impl Into<Value>) -> Ordered {
        Ordered::Leaf(v.into())
    }

    /// The value of `key` in an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Ordered> {
        match self {
            Ordered::Object(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at an index of an array or a key of an object, by path segment.
    pub(crate) fn at(&self, seg: &str) -> Option<&Ordered> {
        match self {
            Ordered::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            Ordered::Object(_) => self.get(seg),
            Ordered::Leaf(_) => None,
        }
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ordered::Leaf(v) => v.serialize(s),
            Ordered::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Ordered::Object(pairs) => {
                let mut map = s.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
        Ok(Ordered::leaf(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
        Ok(Ordered::leaf(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
        Ok(Ordered::leaf(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Ordered, E> {
        Ok(Ordered::leaf(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
        Ok(Ordered::str(v))
    }
    fn visit_string<E>(self, v: String) -> Result<Ordered, E> {
        Ok(Ordered::str(v))
    }
    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Leaf(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Leaf(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Ordered::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut pairs: Vec<(String, Ordered)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Ordered>()? {
            match pairs.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => pairs.push((k, v)),
            }
        }
        Ok(Ordered::Object(pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order() {
        let text = r#"{"z":1,"a":{"type":"object","properties":{"b":[true,null,1.5]}}}"#;
        let o: Ordered = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&o).unwrap(), text);
    }
}
