//! Rejects JSON objects with the same key twice (serde_json keeps the last one silently, which
//! would hide a typo in a policy file or a contradictory `expect` bound).

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Walks a JSON value, failing at the first repeated key with `PATH: duplicate key …`.
struct Walk(String);

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

fn child(parent: &str, seg: &str) -> String {
    if parent.is_empty() {
        seg.to_string()
    } else {
        format!("{parent}.{seg}")
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = child(&self.0, &key);
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!(
                    "{path}: duplicate key `{key}`; expected each key once"
                )));
            }
            map.next_value_seed(Walk(path))?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Walk(child(&self.0, &i.to_string())))?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// `Err(serde_json error)` (with line and column) at the first duplicated key of `text`; syntax
/// errors are left to the regular parser.
pub(super) fn check(text: &str) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    match Walk(String::new()).deserialize(&mut de) {
        Err(e) if e.to_string().contains("duplicate key") => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_duplicates_with_their_path_and_line() {
        assert!(check(r#"{"a":1,"b":{"c":[1,{"d":2}]}}"#).is_ok());
        let e =
            check("{\"expect\":{\"tickets\":{\"min\":1},\n\"tickets\":{\"max\":0}}}").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("expect.tickets: duplicate key `tickets`"),
            "{e}"
        );
        assert_eq!(e.line(), 2);
        let e = check(r#"{"x":[{"k":1,"k":2}]}"#).unwrap_err();
        assert!(e.to_string().starts_with("x.0.k: duplicate key"), "{e}");
        assert!(
            check("{oops").is_ok(),
            "syntax errors are reported by the parser"
        );
    }
}
