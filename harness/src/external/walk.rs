//! Reading an HTTP engine's hits straight from the response bytes: a walk along the JSON
//! pointers (RFC 6901) that keeps only the values they name and builds no JSON tree.
//!
//! The walk parses the whole response with serde_json's own parser (so it refuses exactly what
//! parsing it into a `serde_json::Value` refuses: invalid JSON or UTF-8, numbers out of range,
//! nesting deeper than 128, trailing characters) and resolves each pointer as
//! [`super::http::Pointer::get`] resolves it in the parsed tree: object members by their
//! unescaped key, the last of duplicate keys winning; array elements by a decimal index without
//! sign or leading zero. It answers only for a well-formed response whose every pointer matches
//! a value of the right kind (the hits a list, each id and score a string, a number or null, which
//! the caller judges as it judges the tree's); anything else is `None`, and the caller reads the response the slow way, through the
//! tree, which words the error. So the fast way never decides an outcome the tree would decide
//! differently (the unit tests compare the two on every case).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A scalar a pointer found at the end of its path.
#[derive(Debug, Clone, PartialEq)]
enum Leaf {
    Str(String),
    Num(serde_json::Number),
    Null,
}

impl Leaf {
    fn into_value(self) -> Value {
        match self {
            Leaf::Str(s) => Value::String(s),
            Leaf::Num(n) => Value::Number(n),
            Leaf::Null => Value::Null,
        }
    }
}

/// The token of an array index (RFC 6901: `0`, or digits without a leading zero).
fn index(t: &str) -> Option<usize> {
    if t == "0" || !(t.starts_with('0') || t.starts_with('+')) {
        t.parse::<usize>().ok()
    } else {
        None
    }
}

/// Any JSON value, checked and dropped (what parsing into a tree checks, without the tree).
struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Skip, A::Error> {
        while a.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Skip, A::Error> {
        while a.next_key::<IgnoredAny>()?.is_some() {
            a.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

/// A member's key, compared with up to two tokens without keeping it.
struct KeyIs<'a>([Option<&'a str>; 2]);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = [bool; 2];
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<[bool; 2], D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = [bool; 2];
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<[bool; 2], E> {
        Ok(self.0.map(|t| t == Some(v)))
    }
}

/// What a pointer found in one value.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// Nothing (the pointer goes on into a scalar, or names a member or element that is not
    /// there).
    Missing,
    /// A value that is no id or score (true, false, an object, a list): the tree words it.
    Bad,
    /// A scalar.
    Leaf(Leaf),
}

/// Up to two pointers (what is left of their tokens) walked through one value at once: a hit's
/// id and score. `None` for a pointer not walked here.
#[derive(Clone, Copy)]
struct Two<'a>([Option<&'a [String]>; 2]);

impl<'de> DeserializeSeed<'de> for Two<'_> {
    type Value = [Slot; 2];
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'a> Two<'a> {
    /// The pointers that end at this value.
    fn ends_here(&self) -> [bool; 2] {
        self.0.map(|p| p.is_some_and(<[String]>::is_empty))
    }

    /// A scalar: the pointers that end here found it; those that go on found nothing.
    fn scalar(self, leaf: Option<Leaf>) -> [Slot; 2] {
        let e = self.ends_here();
        let slot = |ends: bool| match (&leaf, ends) {
            (_, false) => Slot::Missing,
            (Some(l), true) => Slot::Leaf(l.clone()),
            (None, true) => Slot::Bad,
        };
        [slot(e[0]), slot(e[1])]
    }

    /// The pointers that go on into a member or element: `matched` says which.
    fn next(&self, matched: [bool; 2]) -> Two<'a> {
        Two([0, 1].map(|j| match self.0[j] {
            Some(p) if matched[j] && !p.is_empty() => Some(&p[1..]),
            _ => None,
        }))
    }

    /// What a container gives: `Bad` for the pointers that end at it, else what was found.
    fn settle(&self, got: [Slot; 2]) -> [Slot; 2] {
        let e = self.ends_here();
        let [a, b] = got;
        [
            if e[0] { Slot::Bad } else { a },
            if e[1] { Slot::Bad } else { b },
        ]
    }
}

impl<'de> Visitor<'de> for Two<'_> {
    type Value = [Slot; 2];
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(self.scalar(None))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.scalar(Some(Leaf::Num(v.into()))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.scalar(Some(Leaf::Num(v.into()))))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.scalar(serde_json::Number::from_f64(v).map(Leaf::Num)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.scalar(Some(Leaf::Str(v.to_string()))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.scalar(Some(Leaf::Null)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let want = self
            .0
            .map(|p| p.filter(|p| !p.is_empty()).and_then(|p| index(&p[0])));
        let mut got = [Slot::Missing, Slot::Missing];
        let mut i = 0;
        loop {
            let m = want.map(|w| w == Some(i));
            if m.iter().any(|&m| m) {
                let Some(found) = a.next_element_seed(self.next(m))? else {
                    break;
                };
                for (j, f) in found.into_iter().enumerate() {
                    if m[j] {
                        got[j] = f;
                    }
                }
            } else if a.next_element::<Skip>()?.is_none() {
                break;
            }
            i += 1;
        }
        Ok(self.settle(got))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let tokens = self
            .0
            .map(|p| p.filter(|p| !p.is_empty()).map(|p| p[0].as_str()));
        let mut got = [Slot::Missing, Slot::Missing];
        while let Some(m) = a.next_key_seed(KeyIs(tokens))? {
            if m.iter().any(|&m| m) {
                let found = a.next_value_seed(self.next(m))?;
                // The last of duplicate keys wins, as in the tree.
                for (j, f) in found.into_iter().enumerate() {
                    if m[j] {
                        got[j] = f;
                    }
                }
            } else {
                a.next_value::<Skip>()?;
            }
        }
        Ok(self.settle(got))
    }
}

/// The hits pointer walked to the list; each element read with the id and score pointers.
#[derive(Clone, Copy)]
struct ToHits<'a> {
    rest: &'a [String],
    id: &'a [String],
    score: Option<&'a [String]>,
}

/// Per hit, the id and (when the configuration reads one) the score the pointers found.
type Found = Vec<(Value, Option<Value>)>;

/// What the hits pointer found in one value.
enum Hits {
    /// Nothing.
    Missing,
    /// Something the fast way does not read (not a list, a hit without an id): the tree words it.
    Unread,
    /// The hits.
    Found(Found),
}

impl<'de> DeserializeSeed<'de> for ToHits<'_> {
    type Value = Hits;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl ToHits<'_> {
    fn scalar(&self) -> Hits {
        if self.rest.is_empty() {
            // The hits pointer names a scalar, not a list.
            return Hits::Unread;
        }
        Hits::Missing
    }
}

impl<'de> Visitor<'de> for ToHits<'_> {
    type Value = Hits;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        if self.rest.is_empty() {
            // The list of hits.
            let each = Two([Some(self.id), self.score]);
            let mut out = Vec::with_capacity(a.size_hint().unwrap_or(16));
            let mut unread = false;
            while let Some([id, score]) = a.next_element_seed(each)? {
                if unread {
                    continue;
                }
                let (Slot::Leaf(id), score) = (id, score) else {
                    unread = true;
                    continue;
                };
                let score = match (self.score, score) {
                    (None, _) => None,
                    (Some(_), Slot::Leaf(s)) => Some(s.into_value()),
                    (Some(_), _) => {
                        unread = true;
                        continue;
                    }
                };
                out.push((id.into_value(), score));
            }
            return Ok(if unread {
                Hits::Unread
            } else {
                Hits::Found(out)
            });
        }
        let want = index(&self.rest[0]);
        let mut got = Hits::Missing;
        let mut i = 0;
        loop {
            if want == Some(i) {
                let next = ToHits {
                    rest: &self.rest[1..],
                    ..self
                };
                match a.next_element_seed(next)? {
                    Some(found) => got = found,
                    None => break,
                }
            } else if a.next_element::<Skip>()?.is_none() {
                break;
            }
            i += 1;
        }
        Ok(got)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        if self.rest.is_empty() {
            // The hits pointer names an object, not a list.
            while a.next_key::<IgnoredAny>()?.is_some() {
                a.next_value::<Skip>()?;
            }
            return Ok(Hits::Unread);
        }
        let mut got = Hits::Missing;
        while let Some([m, _]) = a.next_key_seed(KeyIs([Some(&self.rest[0]), None]))? {
            if m {
                // The last of duplicate keys wins, as in the tree.
                got = a.next_value_seed(ToHits {
                    rest: &self.rest[1..],
                    ..self
                })?;
            } else {
                a.next_value::<Skip>()?;
            }
        }
        Ok(got)
    }
}

/// The (id, score) values the pointers find in each hit of `body`, or None when the response is
/// not one the fast way reads (the tree then reads it and words the outcome).
pub fn hits(
    body: &[u8],
    hits: &[String],
    id: &[String],
    score: Option<&[String]>,
) -> Option<Vec<(Value, Option<Value>)>> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let found = ToHits {
        rest: hits,
        id,
        score,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    match found {
        Hits::Found(f) => Some(f),
        Hits::Missing | Hits::Unread => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::http::Pointer;

    /// The oracle: the tree (`serde_json::Value`) and [`Pointer::get`] (itself checked against
    /// `Value::pointer`): the hits list, and per hit the id and score values, when every pointer
    /// matches a scalar (a string, number or null; what a scalar means is then judged alike for
    /// both, by `rank_hits`).
    fn by_tree(body: &[u8], hits: &str, id: &str, score: Option<&str>) -> Option<Found> {
        let v: Value = serde_json::from_slice(body).ok()?;
        let list = Pointer::new(hits).get(&v)?.as_array()?;
        list.iter()
            .map(|h| {
                let id = Pointer::new(id).get(h)?;
                if !(id.is_string() || id.is_number() || id.is_null()) {
                    return None;
                }
                let score = match score {
                    None => None,
                    Some(s) => {
                        let s = Pointer::new(s).get(h)?;
                        if !(s.is_string() || s.is_number() || s.is_null()) {
                            return None;
                        }
                        Some(s.clone())
                    }
                };
                Some((id.clone(), score))
            })
            .collect()
    }

    fn tokens(p: &str) -> Vec<String> {
        p.split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect()
    }

    #[test]
    fn the_walk_finds_what_the_tree_finds_or_gives_up_where_the_tree_fails() {
        let bodies: &[&str] = &[
            r#"{"hits": {"hits": [{"_id": "a", "_score": 2.5}, {"_id": "b", "_score": 1}]}}"#,
            r#"{"results": [{"id": "pay-1", "score": 128.37511694200015, "terms": ["x"], "match": {"x": ["title"]}}]}"#,
            r#"{"results": [{"id": 7, "score": -3}, {"id": 18446744073709551615, "score": 1e300}, {"id": -2.5e-3, "score": null}]}"#,
            // Duplicate keys: the last wins, for the list and within a hit.
            r#"{"results": [{"id": "first"}], "results": [{"id": "a", "id": "b", "score": 1, "score": 2}]}"#,
            r#"{"results": [{"id": "a", "score": 1}], "results": 3}"#,
            r#"{"r": {"d": [{"document": {"id": "a"}, "document": {"title": "no id"}, "score": 1}]}}"#,
            // Escaped keys and keys needing `~0`/`~1`.
            r#"{"a/b": {"m~n": [{"i\u0064": "esc", "s": 0.5}]}}"#,
            // Arrays along the path.
            r#"{"list": [[{"id": "no"}], [{"id": "yes", "score": 3}]], "0": 1}"#,
            // Not the right kinds.
            r#"{"results": {"id": "a"}}"#,
            r#"{"results": "none"}"#,
            r#"{"results": [{"id": true, "score": 1}]}"#,
            r#"{"results": [{"id": {"x": 1}, "score": 1}]}"#,
            r#"{"results": [{"id": "a", "score": "high"}]}"#,
            r#"{"results": [{"id": "a", "score": [1]}]}"#,
            r#"{"results": [{"score": 1}]}"#,
            r#"{"results": []}"#,
            r#"[{"id": "top", "score": 1}]"#,
            // Not JSON, or JSON the tree refuses.
            r#"{"results": [{"id": "a", "score": 1}]} x"#,
            r#"{"results": [{"id": "a", "score": 1}], "n": 1e400}"#,
            r#"{"results": [{"id": "a", "score": 1}], "s": "\ud800"}"#,
            "{\"results\": [{\"id\": \"a\", \"score\": 1}], \"s\": \"\u{1}\"}",
            r#"<html>login</html>"#,
            "",
        ];
        let mut invalid_utf8 = br#"{"results": [{"id": "a", "score": 1}], "s": ""#.to_vec();
        invalid_utf8.extend_from_slice(&[0xff, b'"', b'}']);
        let deep = format!(
            "{{\"results\": [{{\"id\": \"a\"}}], \"d\": {}{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        let pointers: &[(&str, &str, Option<&str>)] = &[
            ("/hits/hits", "/_id", Some("/_score")),
            ("/results", "/id", Some("/score")),
            ("/results", "/id", None),
            ("/results", "/id", Some("/id")),
            ("/r/d", "/document/id", Some("/score")),
            ("/a~1b/m~0n", "/id", Some("/s")),
            ("/list/1", "/id", Some("/score")),
            ("/list/01", "/id", None),
            ("/list/+1", "/id", None),
            ("/list/0", "/id", Some("")),
            ("", "/id", Some("/score")),
            ("/results/0", "", None),
        ];
        let mut fast = 0;
        let mut all: Vec<Vec<u8>> = bodies.iter().map(|b| b.as_bytes().to_vec()).collect();
        all.push(invalid_utf8);
        all.push(deep.into_bytes());
        for body in &all {
            for (h, i, s) in pointers {
                let (ht, it, st) = (tokens(h), tokens(i), s.map(tokens));
                let got = hits(body, &ht, &it, st.as_deref());
                let want = by_tree(body, h, i, *s);
                let shown = String::from_utf8_lossy(body);
                match &got {
                    Some(g) => {
                        fast += 1;
                        assert_eq!(Some(g), want.as_ref(), "{shown} {h} {i} {s:?}");
                    }
                    // Giving up is right only where the tree finds no scalars either.
                    None => assert_eq!(want, None, "gave up on {shown} {h} {i} {s:?}"),
                }
            }
        }
        assert!(fast >= 12, "the walk read only {fast} cases");
    }
}
