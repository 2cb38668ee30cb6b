//! "Did you mean": the known names nearest to a misspelt one, for messages about unknown ids,
//! configurations and measures. Nearness is the Levenshtein distance (strsim's), counted in
//! characters after lower-casing; a name is suggested when it is at most a third of the longer
//! name's length away (at least 2 edits allowed), or when one name contains the other.

/// Up to three `known` names nearest to `name`, nearest first (ties in byte order).
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = known
        .into_iter()
        .filter(|k| *k != name)
        .filter_map(|k| {
            let kl = k.to_lowercase();
            let d = strsim::levenshtein(&lower, &kl);
            let longest = lower.chars().count().max(kl.chars().count());
            let close = d <= (longest / 3).max(2);
            let contains = lower.len() >= 3 && (kl.contains(&lower) || lower.contains(&kl));
            (close || contains).then_some((d, k))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, k)| k).collect()
}

/// `"; did you mean `a`?"` (or `` `a`, `b` or `c` ``), or `""` when nothing is near.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let near = nearest(name, known);
    match near.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        [init @ .., last] => format!(
            "; did you mean {} or `{last}`?",
            init.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_names_a_few_edits_away_nearest_first() {
        let known = ["alpha", "beta", "gamma", "alphabet"];
        // alpah -> alpha: 2 edits (a transposition is two substitutions); alphabet: 5.
        assert_eq!(nearest("alpah", known), vec!["alpha"]);
        // "alph" is 1 edit from alpha and contained in alphabet (4 edits).
        assert_eq!(nearest("alph", known), vec!["alpha", "alphabet"]);
        assert_eq!(nearest("zzzzzz", known), Vec::<&str>::new());
        assert_eq!(did_you_mean("bta", known), "; did you mean `beta`?");
        assert_eq!(did_you_mean("zzzzzz", known), "");
        assert_eq!(
            did_you_mean("alph", known),
            "; did you mean `alpha` or `alphabet`?"
        );
    }
}
