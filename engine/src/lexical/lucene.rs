//! The Lucene analyzer Anserini indexes English with (`DefaultEnglishAnalyzer` with Porter
//! stemming), so that BM25 over it scores as Anserini's does:
//! - Lucene's `StandardTokenizer`: Unicode word boundaries (UAX #29), keeping the words that hold
//!   a letter or digit, each at most 255 characters (longer ones are cut into 255-character
//!   pieces, as the tokenizer does);
//! - `EnglishPossessiveFilter`: a trailing `'s` (or `’s`, `＇s`) is removed;
//! - `LowerCaseFilter`, then `StopFilter` with Lucene's 33 English stop words;
//! - `PorterStemFilter`: Martin Porter's 1980 algorithm as his reference implementation (and
//!   Lucene's port) has it, including its two departures (`bli` -> `ble`, `logi` -> `log`);
//!   words of one or two letters are left alone.
//!
//! Document length, as Lucene 9 stores it: the number of tokens, encoded in one byte by
//! `SmallFloat.intToByte4` (exact below 24, then four significant bits) and decoded by
//! `byte4ToInt`; BM25 reads the decoded length. tantivy's field norms use the same 256-value
//! table ([`lucene_norm`] is checked against it), so the index keeps tantivy's norms.

use serde::{Deserialize, Serialize};
use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};
use unicode_segmentation::UnicodeSegmentation;

use super::STOP_WORDS;

/// Which analyzer BM25 indexes and queries with.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Analyzer {
    /// tantivy's chain: simple tokenizer, lower-casing, Lucene's stop words, Snowball English
    /// stemming (ranklab's default).
    #[default]
    English,
    /// Lucene's StandardTokenizer, possessives, lower-casing, stop words, Porter stemming: the
    /// analyzer of Anserini's BM25 baselines.
    Lucene,
}

impl Analyzer {
    /// The tantivy analyzer.
    pub fn text_analyzer(self) -> TextAnalyzer {
        match self {
            Analyzer::English => super::analyzer(),
            Analyzer::Lucene => TextAnalyzer::builder(LuceneTokenizer).build(),
        }
    }

    /// The name used in configurations and reports (`english`, `lucene`).
    pub fn name(self) -> &'static str {
        match self {
            Analyzer::English => "english",
            Analyzer::Lucene => "lucene",
        }
    }

    /// Parses a name as [`Analyzer::name`] writes it.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "english" => Some(Analyzer::English),
            "lucene" => Some(Analyzer::Lucene),
            _ => None,
        }
    }
}

/// Lucene's `StandardTokenizer`'s longest token.
const MAX_TOKEN_CHARS: usize = 255;

/// The whole Lucene chain as one tantivy tokenizer.
#[derive(Debug, Clone, Copy, Default)]
pub struct LuceneTokenizer;

/// The tokens of one text.
pub struct LuceneTokenStream {
    tokens: Vec<Token>,
    next: usize,
}

impl Tokenizer for LuceneTokenizer {
    type TokenStream<'a> = LuceneTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> LuceneTokenStream {
        LuceneTokenStream {
            tokens: analyze(text),
            next: 0,
        }
    }
}

impl TokenStream for LuceneTokenStream {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

/// The terms of `text` under the Lucene chain, in order.
pub fn lucene_terms(text: &str) -> Vec<String> {
    analyze(text).into_iter().map(|t| t.text).collect()
}

fn analyze(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut position = 0;
    for (offset, word) in text.split_word_bound_indices() {
        if !word.chars().any(char::is_alphanumeric) {
            continue;
        }
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        for piece in chars.chunks(MAX_TOKEN_CHARS) {
            let start = offset + piece[0].0;
            let end = piece
                .last()
                .map_or(start, |&(i, c)| offset + i + c.len_utf8());
            let mut t: String = piece.iter().map(|&(_, c)| c).collect();
            strip_possessive(&mut t);
            let t = lower(&t);
            if t.is_empty() || STOP_WORDS.contains(&t.as_str()) {
                position += 1;
                continue;
            }
            out.push(Token {
                offset_from: start,
                offset_to: end,
                position,
                text: porter_stem(&t),
                position_length: 1,
            });
            position += 1;
        }
    }
    out
}

/// `EnglishPossessiveFilter`: drops a trailing `'s`, `’s` or `＇s` (either case of s).
fn strip_possessive(t: &mut String) {
    let mut it = t.chars().rev();
    if let (Some(s), Some(q)) = (it.next(), it.next()) {
        if (s == 's' || s == 'S') && matches!(q, '\'' | '\u{2019}' | '\u{FF07}') {
            let cut = t.len() - s.len_utf8() - q.len_utf8();
            t.truncate(cut);
        }
    }
}

/// `LowerCaseFilter`: Java's `Character.toLowerCase`, one code point to one.
fn lower(t: &str) -> String {
    t.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

/// Lucene 9's `SmallFloat.intToByte4`: a length in one byte.
pub fn int_to_byte4(i: u32) -> u8 {
    const NUM_FREE_VALUES: u32 = 24;
    if i < NUM_FREE_VALUES {
        i as u8
    } else {
        (NUM_FREE_VALUES + long_to_int4(u64::from(i - NUM_FREE_VALUES))) as u8
    }
}

fn long_to_int4(i: u64) -> u32 {
    let num_bits = 64 - i.leading_zeros();
    if num_bits < 4 {
        return i as u32;
    }
    let shift = num_bits - 4;
    let mut encoded = (i >> shift) as u32 & 0x07;
    encoded |= (shift + 1) << 3;
    encoded
}

/// Lucene 9's `SmallFloat.byte4ToInt`: the length BM25 reads back.
pub fn byte4_to_int(b: u8) -> u32 {
    const NUM_FREE_VALUES: u32 = 24;
    let i = u32::from(b);
    if i < NUM_FREE_VALUES {
        i
    } else {
        let j = i - NUM_FREE_VALUES;
        let bits = u64::from(j & 0x07);
        let shift = (j >> 3) as i32 - 1;
        let decoded = if shift == -1 {
            bits
        } else {
            (bits | 0x08) << shift
        };
        (u64::from(NUM_FREE_VALUES) + decoded) as u32
    }
}

/// The document length Lucene 9's BM25 uses for a field of `tokens` tokens.
pub fn lucene_norm(tokens: u32) -> u32 {
    byte4_to_int(int_to_byte4(tokens))
}

/// Porter's stemmer (the reference implementation's algorithm, as Lucene's `PorterStemmer`).
pub fn porter_stem(word: &str) -> String {
    let b: Vec<char> = word.chars().collect();
    if b.len() <= 2 {
        return word.to_string();
    }
    let k = b.len() as isize - 1;
    let mut s = Porter { b, k, j: 0 };
    s.step1ab();
    if s.k > 0 {
        s.step1c();
        s.step2();
        s.step3();
        s.step4();
        s.step5();
    }
    s.b[..=s.k as usize].iter().collect()
}

/// The reference implementation's state: the word in `b[0..=k]`, `j` a general offset
/// (it may be -1, as in the C code).
struct Porter {
    b: Vec<char>,
    k: isize,
    j: isize,
}

impl Porter {
    fn at(&self, i: isize) -> char {
        self.b[i as usize]
    }

    fn cons(&self, i: isize) -> bool {
        match self.at(i) {
            'a' | 'e' | 'i' | 'o' | 'u' => false,
            'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The number of consonant sequences between 0 and j.
    fn m(&self) -> usize {
        let mut n = 0;
        let mut i = 0;
        loop {
            if i > self.j {
                return n;
            }
            if !self.cons(i) {
                break;
            }
            i += 1;
        }
        i += 1;
        loop {
            loop {
                if i > self.j {
                    return n;
                }
                if self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
            n += 1;
            loop {
                if i > self.j {
                    return n;
                }
                if !self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
        }
    }

    fn vowel_in_stem(&self) -> bool {
        (0..=self.j).any(|i| !self.cons(i))
    }

    fn doublec(&self, j: isize) -> bool {
        j >= 1 && self.at(j) == self.at(j - 1) && self.cons(j)
    }

    fn cvc(&self, i: isize) -> bool {
        if i < 2 || !self.cons(i) || self.cons(i - 1) || !self.cons(i - 2) {
            return false;
        }
        !matches!(self.at(i), 'w' | 'x' | 'y')
    }

    fn ends(&mut self, s: &str) -> bool {
        let s: Vec<char> = s.chars().collect();
        let len = s.len() as isize;
        if len > self.k + 1 {
            return false;
        }
        if self.b[(self.k + 1 - len) as usize..=self.k as usize] != s[..] {
            return false;
        }
        self.j = self.k - len;
        true
    }

    fn setto(&mut self, s: &str) {
        self.b.truncate((self.j + 1) as usize);
        self.b.extend(s.chars());
        self.k = self.b.len() as isize - 1;
    }

    fn r(&mut self, s: &str) {
        if self.m() > 0 {
            self.setto(s);
        }
    }

    fn step1ab(&mut self) {
        if self.at(self.k) == 's' {
            if self.ends("sses") {
                self.k -= 2;
            } else if self.ends("ies") {
                self.setto("i");
            } else if self.at(self.k - 1) != 's' {
                self.k -= 1;
            }
        }
        if self.ends("eed") {
            if self.m() > 0 {
                self.k -= 1;
            }
        } else if (self.ends("ed") || self.ends("ing")) && self.vowel_in_stem() {
            self.k = self.j;
            if self.ends("at") {
                self.setto("ate");
            } else if self.ends("bl") {
                self.setto("ble");
            } else if self.ends("iz") {
                self.setto("ize");
            } else if self.doublec(self.k) {
                let ch = self.at(self.k);
                self.k -= 1;
                if matches!(ch, 'l' | 's' | 'z') {
                    self.k += 1;
                }
            } else if self.m() == 1 && self.cvc(self.k) {
                // j == k here (set above; a failed ends() leaves it)
                self.setto("e");
            }
        }
    }

    fn step1c(&mut self) {
        if self.ends("y") && self.vowel_in_stem() {
            let k = self.k as usize;
            self.b[k] = 'i';
        }
    }

    fn step2(&mut self) {
        let rules: &[(&str, &str)] = match self.at(self.k - 1) {
            'a' => &[("ational", "ate"), ("tional", "tion")],
            'c' => &[("enci", "ence"), ("anci", "ance")],
            'e' => &[("izer", "ize")],
            'l' => &[
                ("bli", "ble"),
                ("alli", "al"),
                ("entli", "ent"),
                ("eli", "e"),
                ("ousli", "ous"),
            ],
            'o' => &[("ization", "ize"), ("ation", "ate"), ("ator", "ate")],
            's' => &[
                ("alism", "al"),
                ("iveness", "ive"),
                ("fulness", "ful"),
                ("ousness", "ous"),
            ],
            't' => &[("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")],
            'g' => &[("logi", "log")],
            _ => &[],
        };
        for (suffix, to) in rules {
            if self.ends(suffix) {
                self.r(to);
                break;
            }
        }
    }

    fn step3(&mut self) {
        let rules: &[(&str, &str)] = match self.at(self.k) {
            'e' => &[("icate", "ic"), ("ative", ""), ("alize", "al")],
            'i' => &[("iciti", "ic")],
            'l' => &[("ical", "ic"), ("ful", "")],
            's' => &[("ness", "")],
            _ => &[],
        };
        for (suffix, to) in rules {
            if self.ends(suffix) {
                self.r(to);
                break;
            }
        }
    }

    fn step4(&mut self) {
        let suffixes: &[&str] = match self.at(self.k - 1) {
            'a' => &["al"],
            'c' => &["ance", "ence"],
            'e' => &["er"],
            'i' => &["ic"],
            'l' => &["able", "ible"],
            'n' => &["ant", "ement", "ment", "ent"],
            'o' => {
                if self.ends("ion") && self.j >= 0 && matches!(self.at(self.j), 's' | 't') {
                    self.cut_if_m_above_1();
                    return;
                }
                &["ou"]
            }
            's' => &["ism"],
            't' => &["ate", "iti"],
            'u' => &["ous"],
            'v' => &["ive"],
            'z' => &["ize"],
            _ => return,
        };
        for suffix in suffixes {
            if self.ends(suffix) {
                self.cut_if_m_above_1();
                return;
            }
        }
    }

    fn cut_if_m_above_1(&mut self) {
        if self.m() > 1 {
            self.k = self.j;
        }
    }

    fn step5(&mut self) {
        self.j = self.k;
        if self.at(self.k) == 'e' {
            let a = self.m();
            if a > 1 || (a == 1 && !self.cvc(self.k - 1)) {
                self.k -= 1;
            }
        }
        // m() still measures up to the original end (j), as in the reference code.
        if self.at(self.k) == 'l' && self.doublec(self.k) && self.m() > 1 {
            self.k -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::fieldnorm::FieldNormReader;

    #[test]
    fn porter_matches_the_reference_vocabulary() {
        // Pairs from Martin Porter's published voc.txt / output.txt (the reference algorithm).
        for (w, s) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("valenci", "valenc"),
            ("digitizer", "digit"),
            ("conformabli", "conform"),
            ("radicalli", "radic"),
            ("differentli", "differ"),
            ("vileli", "vile"),
            ("analogousli", "analog"),
            ("vietnamization", "vietnam"),
            ("predication", "predic"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("formaliti", "formal"),
            ("sensitiviti", "sensit"),
            ("sensibiliti", "sensibl"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electriciti", "electr"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("gyroscopic", "gyroscop"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("homologou", "homolog"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("angulariti", "angular"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
            ("generalizations", "gener"),
            ("oscillators", "oscil"),
            ("is", "is"),
            ("a", "a"),
        ] {
            assert_eq!(porter_stem(w), s, "{w}");
        }
    }

    #[test]
    fn standard_tokenizer_possessives_stop_words() {
        assert_eq!(
            lucene_terms("The COVID-19 patients' outcomes, Smith's 3.14 e.g. don't"),
            ["covid", "19", "patient", "outcom", "smith", "3.14", "e.g", "don't"]
        );
    }

    #[test]
    fn norms_are_lucene_9s_and_tantivys() {
        // Lucene: exact below 24, then 4 significant bits (SmallFloat.byte4ToInt(intToByte4(n))).
        for n in 0..40 {
            assert_eq!(lucene_norm(n), n, "{n}");
        }
        assert_eq!(lucene_norm(41), 40);
        assert_eq!(lucene_norm(43), 42);
        for n in 0..100_000u32 {
            let tantivy = FieldNormReader::constant(1, n).fieldnorm(0);
            assert_eq!(lucene_norm(n), tantivy, "{n}");
        }
    }
}
