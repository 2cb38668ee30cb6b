//! The fields and variant names a `Deserialize` type accepts, read from serde itself: a
//! deserializer that feeds the type's own `Deserialize` impl and records what it asks for
//! (`deserialize_struct` names every field, `deserialize_enum` every variant), descending into
//! every field. The formats reference test (`docs/formats.md` must name every accepted field)
//! is built on it, so the list cannot drift from the types.
//!
//! How it explores: a struct is offered every one of its fields, each value traced in turn;
//! an `Option` is `Some`, a list holds one element, a map one entry, an enum is its first
//! variant. A value the tracer cannot produce (a type with its own `Deserialize` that asks for
//! a string it then parses, an untagged enum) fails; that field is then left out on the next
//! pass, so the fields after it are still explored. Names only: defaults and rules are not.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::Deserialize;

/// What a type accepts: for each struct (by its Rust name) its field names, for each enum its
/// variant names, as serde spells them (renames applied).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Struct name -> field names, in declaration order.
    pub fields: BTreeMap<&'static str, Vec<&'static str>>,
    /// Enum name -> variant names.
    pub variants: BTreeMap<&'static str, Vec<&'static str>>,
}

impl Shape {
    /// Every field and variant name, once.
    pub fn names(&self) -> BTreeSet<&'static str> {
        self.fields
            .values()
            .chain(self.variants.values())
            .flatten()
            .copied()
            .collect()
    }
}

/// The text of the `## {heading}` section of a Markdown `reference` (up to the next `## `);
/// the whole text when `heading` is empty.
pub fn section<'a>(reference: &'a str, heading: &str) -> Option<&'a str> {
    if heading.is_empty() {
        return Some(reference);
    }
    let mark = format!("\n## {heading}");
    let start = reference.find(&mark)? + 1;
    let rest = &reference[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    Some(&rest[..end])
}

/// The names of `shape` that `text` does not mention: a field must appear as `name:`,
/// `` `name` `` or `"name"`; a variant as a whole word (letters, digits, `-`, `_`). Sorted.
pub fn unmentioned(shape: &Shape, text: &str) -> Vec<String> {
    let word = |n: &str| {
        text.match_indices(n).any(|(i, _)| {
            let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
            !text[..i].ends_with(ident) && !text[i + n.len()..].starts_with(ident)
        })
    };
    let mut out = BTreeSet::new();
    for (owner, names) in &shape.fields {
        for n in names {
            let forms = [format!("{n}:"), format!("`{n}`"), format!("\"{n}\"")];
            if !forms.iter().any(|f| {
                text.match_indices(f.as_str())
                    .any(|(i, _)| !text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            }) {
                out.insert(format!("field `{n}` (of {owner})"));
            }
        }
    }
    for (owner, names) in &shape.variants {
        for n in names {
            if !word(n) {
                out.insert(format!("value `{n}` (of {owner})"));
            }
        }
    }
    out.into_iter().collect()
}

/// Every field and value `T` accepts is mentioned in the `## {heading}` section of
/// `reference`, except those of the types named in `elsewhere` (documented in another file);
/// else the list of what is missing, for a test to fail with.
pub fn documented<T: for<'de> Deserialize<'de>>(
    reference: &str,
    heading: &str,
    elsewhere: &[&str],
) -> Result<(), String> {
    let text = section(reference, heading).ok_or_else(|| format!("no section `## {heading}`"))?;
    let mut shape = of::<T>();
    shape.fields.retain(|k, _| !elsewhere.contains(k));
    shape.variants.retain(|k, _| !elsewhere.contains(k));
    let missing = unmentioned(&shape, text);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the reference's section `{heading}` does not mention: {}",
            missing.join(", ")
        ))
    }
}

/// The shape of `T`.
pub fn of<T: for<'de> Deserialize<'de>>() -> Shape {
    let state = State::default();
    // Each pass may find one more field whose value cannot be traced; a pass that finds none
    // has explored everything reachable.
    for _ in 0..1000 {
        let before = state.skip.borrow().len();
        let _ = T::deserialize(Tracer {
            state: &state,
            depth: 0,
        });
        if state.skip.borrow().len() == before {
            break;
        }
    }
    state.shape.into_inner()
}

#[derive(Default)]
struct State {
    shape: RefCell<Shape>,
    /// (struct, field) whose value failed: not offered again.
    skip: RefCell<BTreeSet<(&'static str, &'static str)>>,
}

/// The tracer's error; `placed` once a struct has taken the blame for it.
#[derive(Debug)]
struct Error {
    placed: bool,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not traceable")
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Error { placed: false }
    }
}

const MAX_DEPTH: usize = 32;

#[derive(Clone, Copy)]
struct Tracer<'s> {
    state: &'s State,
    depth: usize,
}

impl<'s> Tracer<'s> {
    fn deeper(self) -> Result<Self, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(Error { placed: true });
        }
        Ok(Tracer {
            state: self.state,
            depth: self.depth + 1,
        })
    }
}

macro_rules! leaf {
    ($($method:ident => $visit:ident($value:expr)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            v.$visit($value)
        })*
    };
}

impl<'de, 's> de::Deserializer<'de> for Tracer<'s> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(Error { placed: false })
    }

    leaf! {
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i8(0),
        deserialize_i16 => visit_i16(0),
        deserialize_i32 => visit_i32(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u8(0),
        deserialize_u16 => visit_u16(0),
        deserialize_u32 => visit_u32(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f32(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('x'),
        deserialize_str => visit_str(""),
        deserialize_string => visit_string(String::new()),
        deserialize_bytes => visit_bytes(&[]),
        deserialize_byte_buf => visit_byte_buf(Vec::new()),
        deserialize_identifier => visit_str(""),
    }

    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_unit()
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_some(self.deeper()?)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self.deeper()?)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_seq(Seq {
            tracer: self.deeper()?,
            left: 1,
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Error> {
        v.visit_seq(Seq {
            tracer: self.deeper()?,
            left: len,
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_tuple(len, v)
    }

    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_map(OneEntry {
            tracer: self.deeper()?,
            left: true,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        self.state
            .shape
            .borrow_mut()
            .fields
            .entry(name)
            .or_insert_with(|| fields.to_vec());
        let skip = self.state.skip.borrow();
        let offered: Vec<&'static str> = fields
            .iter()
            .copied()
            .filter(|f| !skip.contains(&(name, *f)))
            .collect();
        drop(skip);
        v.visit_map(Fields {
            tracer: self.deeper()?,
            name,
            offered,
            next: 0,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        self.state
            .shape
            .borrow_mut()
            .variants
            .entry(name)
            .or_insert_with(|| variants.to_vec());
        v.visit_enum(FirstVariant {
            tracer: self.deeper()?,
        })
    }
}

struct Seq<'s> {
    tracer: Tracer<'s>,
    left: usize,
}

impl<'de, 's> de::SeqAccess<'de> for Seq<'s> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.tracer).map(Some)
    }
}

struct OneEntry<'s> {
    tracer: Tracer<'s>,
    left: bool,
}

impl<'de, 's> de::MapAccess<'de> for OneEntry<'s> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if !std::mem::take(&mut self.left) {
            return Ok(None);
        }
        seed.deserialize(self.tracer).map(Some)
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self.tracer)
    }
}

/// A struct's fields, each once, by name.
struct Fields<'s> {
    tracer: Tracer<'s>,
    name: &'static str,
    offered: Vec<&'static str>,
    next: usize,
}

impl<'de, 's> de::MapAccess<'de> for Fields<'s> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(field) = self.offered.get(self.next) else {
            return Ok(None);
        };
        let key: de::value::StrDeserializer<'_, Error> = field.into_deserializer();
        seed.deserialize(key).map(Some)
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        let field = self.offered[self.next];
        self.next += 1;
        seed.deserialize(self.tracer).map_err(|e| {
            if !e.placed {
                self.tracer
                    .state
                    .skip
                    .borrow_mut()
                    .insert((self.name, field));
            }
            Error { placed: true }
        })
    }
}

struct FirstVariant<'s> {
    tracer: Tracer<'s>,
}

impl<'de, 's> de::EnumAccess<'de> for FirstVariant<'s> {
    type Error = Error;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let index: de::value::U32Deserializer<Error> = 0u32.into_deserializer();
        Ok((seed.deserialize(index)?, self))
    }
}

impl<'de, 's> de::VariantAccess<'de> for FirstVariant<'s> {
    type Error = Error;
    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self.tracer)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_tuple(self.tracer, len, v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_struct(self.tracer, "variant", fields, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        #[serde(rename = "x-y")]
        xy: u8,
        mode: Mode,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "kebab-case")]
    #[allow(dead_code)]
    enum Mode {
        FirstOne,
        Second,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        a: Option<Inner>,
        #[serde(deserialize_with = "needs_a_real_string")]
        b: String,
        c: Vec<std::collections::BTreeMap<String, Inner2>>,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Inner2 {
        z: f32,
    }

    fn needs_a_real_string<'de, D: de::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("empty"));
        }
        Ok(s)
    }

    #[test]
    fn unmentioned_names_what_a_section_leaves_out() {
        let s = of::<Inner>();
        let doc = "# R\n## A\nx-y: 1, mode: second\n## B\n`x-y` first-one\n";
        assert_eq!(section(doc, "B"), Some("## B\n`x-y` first-one\n"));
        assert_eq!(
            unmentioned(&s, section(doc, "A").unwrap()),
            ["value `first-one` (of Mode)"]
        );
        assert_eq!(
            unmentioned(&s, section(doc, "B").unwrap()),
            ["field `mode` (of Inner)", "value `second` (of Mode)"]
        );
    }

    #[test]
    fn every_field_and_variant_is_found_past_a_field_that_cannot_be_traced() {
        // Written from the types above: b fails to trace, and c (after it) is still explored.
        let s = of::<Outer>();
        assert_eq!(s.fields["Outer"], ["a", "b", "c"]);
        assert_eq!(s.fields["Inner"], ["x-y", "mode"]);
        assert_eq!(s.fields["Inner2"], ["z"]);
        assert_eq!(s.variants["Mode"], ["first-one", "second"]);
    }
}
