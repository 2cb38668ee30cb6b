//! The grading prompt of an LLM judge, and how a grade is read from the model's answer.
//!
//! `ranklab judge --llm` asks a model to grade a (query, passage) pair on trec_eval's 0–3 scale,
//! in the manner of UMBRELA (Upadhyay, Pradeep, Thakur, Craswell and Lin 2024, "UMBRELA:
//! UMbrela is the (Open-Source Reproduction of the) Bing RELevance Assessor",
//! arXiv:2406.06519): the query, the passage, and the scale with a definition of each grade,
//! answered with one digit. The wording here is ranklab's own ([`SYSTEM`], [`USER`]).
//!
//! Forms, as in [`super::prompt`] (the reranker's yes/no prompt, whose substitution rule this
//! one shares: `{query}` and `{passage}` replaced once, left to right):
//! - [`GradePrompt::messages`]: `[("system", ..), ("user", ..)]`, for a chat endpoint;
//! - [`GradePrompt::chatml`]: the same two messages in ChatML followed by the opening of the
//!   assistant turn: what the in-process model reads and what a completions endpoint is sent.
//!
//! The grade is read at the first answer position from the values (logits, or an endpoint's
//! log-probabilities: they differ by one constant, which cancels) of the tokens that spell the
//! digits "0".."3" ([`GradeDist::from_logits`]): a softmax over the four gives the probability of
//! each grade, whose mean is the **expected grade** and whose most probable is the **argmax
//! grade** (a tie goes to the lower grade: a judge unsure between two grades gives the lesser).
//! Where only the text of an answer is available (`--parse-text`), [`GradeDist::from_text`]
//! reads the leading number and gives all probability to it. Missing digits, non-finite values
//! and answers outside 0..=3 are errors ([`GradeError`]), never a guessed grade.
//!
//! Identity: [`GradePrompt::hash`] is the sha256 of the format version, the system message and
//! the user message; its first 12 hex digits name the judge (`llm:<model>@<hash12>`).

use sha2::{Digest, Sha256};

use super::prompt::PromptTemplate;

/// The system message of the grading prompt.
pub const SYSTEM: &str =
    "You are a search quality rater who judges how relevant a passage is to a search query.";

/// The user message of the grading prompt: the query, the passage, the scale and its meaning.
pub const USER: &str = "Grade how well the passage serves the query, on this scale:
3 = the passage is about the query and contains its exact answer;
2 = the passage contains an answer, but it is partial, unclear or buried in unrelated text;
1 = the passage is on the query's topic but does not answer it;
0 = the passage has nothing to do with the query.
Think of what the person searching wants, and whether the passage can be trusted to give it.

Query: {query}
Passage: {passage}

Answer with the grade alone: one digit, 0, 1, 2 or 3.";

/// Bumped when the rendering (ChatML layout, substitution rule) changes.
const FORMAT: &str = "ranklab-llm-grade-v1";

/// The grading prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GradePrompt {
    user: PromptTemplate,
    hash: String,
}

impl Default for GradePrompt {
    fn default() -> Self {
        let user = PromptTemplate::new(USER, "grade").expect("the grading prompt is valid");
        let mut h = Sha256::new();
        for part in [FORMAT, SYSTEM, USER] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        GradePrompt {
            user,
            hash: format!("{:x}", h.finalize()),
        }
    }
}

impl GradePrompt {
    /// The sha256 (hex) of the format, system message and user message.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The first 12 hex digits of [`GradePrompt::hash`]: what a judge's name carries.
    pub fn short_hash(&self) -> &str {
        &self.hash[..12]
    }

    /// The user message for one pair.
    pub fn user_message(&self, query: &str, passage: &str) -> String {
        self.user.user_message(query, passage)
    }

    /// The chat messages for one pair: system, then user.
    pub fn messages(&self, query: &str, passage: &str) -> [(&'static str, String); 2] {
        [
            ("system", SYSTEM.to_string()),
            ("user", self.user_message(query, passage)),
        ]
    }

    /// The pair's prompt in ChatML, ending where the assistant's answer begins.
    pub fn chatml(&self, query: &str, passage: &str) -> String {
        super::prompt::chatml(SYSTEM, &self.user_message(query, passage))
    }
}

/// Why no grade could be read from an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GradeError {
    /// Some of the digits "0".."3" are not among the tokens given.
    #[error(
        "the answer position lacks the token(s) {missing:?} (all of \"0\"..\"3\" are needed to \
         read a grade; ask the endpoint for more top log-probabilities, or use --parse-text)"
    )]
    MissingDigits {
        /// The grades whose digit is absent.
        missing: Vec<u8>,
    },
    /// A digit's value is NaN or infinite.
    #[error("the value of token {token:?} is not finite ({value})")]
    NotFinite {
        /// The token.
        token: String,
        /// Its value.
        value: f32,
    },
    /// A text answer whose number is not a grade.
    #[error("the answer {answer:?} gives {number}, outside the scale 0..=3")]
    OutsideScale {
        /// The answer, trimmed.
        answer: String,
        /// The number it begins with.
        number: String,
    },
    /// A text answer that does not begin with a number.
    #[error("the answer {answer:?} does not begin with a grade 0..=3")]
    NoGrade {
        /// The answer, trimmed.
        answer: String,
    },
}

/// The probability of each grade 0..=3 at the answer position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradeDist {
    /// p(0), p(1), p(2), p(3); they sum to 1.
    pub probs: [f64; 4],
}

/// The grade a token spells: "0".."3", surrounding white space (and the byte-level BPE space
/// `Ġ`) ignored.
pub fn digit_of(token: &str) -> Option<u8> {
    match token.trim().trim_start_matches('Ġ').trim() {
        "0" => Some(0),
        "1" => Some(1),
        "2" => Some(2),
        "3" => Some(3),
        _ => None,
    }
}

impl GradeDist {
    /// The distribution from `(token text, logit or log-probability)` pairs of one answer
    /// position: for each grade the largest value among the tokens spelling its digit, then a
    /// softmax over the four. Other tokens are ignored.
    pub fn from_logits<'a>(
        tokens: impl IntoIterator<Item = (&'a str, f32)>,
    ) -> Result<GradeDist, GradeError> {
        let mut best = [None::<f32>; 4];
        for (t, v) in tokens {
            let Some(g) = digit_of(t) else { continue };
            if !v.is_finite() {
                return Err(GradeError::NotFinite {
                    token: t.to_string(),
                    value: v,
                });
            }
            let b = &mut best[usize::from(g)];
            *b = Some(b.map_or(v, |x| x.max(v)));
        }
        let missing: Vec<u8> = (0..4u8)
            .filter(|&g| best[usize::from(g)].is_none())
            .collect();
        if !missing.is_empty() {
            return Err(GradeError::MissingDigits { missing });
        }
        let v = best.map(|b| f64::from(b.expect("every digit present")));
        let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e = v.map(|x| (x - m).exp());
        let z: f64 = e.iter().sum();
        Ok(GradeDist {
            probs: e.map(|x| x / z),
        })
    }

    /// The distribution of a text answer (`--parse-text`): the number it begins with, all
    /// probability on it.
    pub fn from_text(answer: &str) -> Result<GradeDist, GradeError> {
        let a = answer.trim();
        let number: String = a.chars().take_while(char::is_ascii_digit).collect();
        if number.is_empty() {
            return Err(GradeError::NoGrade {
                answer: a.to_string(),
            });
        }
        match number.as_str() {
            "0" | "1" | "2" | "3" => {
                let mut probs = [0.0; 4];
                probs[usize::from(number.as_bytes()[0] - b'0')] = 1.0;
                Ok(GradeDist { probs })
            }
            _ => Err(GradeError::OutsideScale {
                answer: a.to_string(),
                number,
            }),
        }
    }

    /// Σ g · p(g).
    pub fn expected(&self) -> f64 {
        self.probs
            .iter()
            .enumerate()
            .map(|(g, p)| g as f64 * p)
            .sum()
    }

    /// The most probable grade; on a tie, the lower.
    pub fn argmax(&self) -> u8 {
        let mut best = 0;
        for g in 1..4 {
            if self.probs[g] > self.probs[best] {
                best = g;
            }
        }
        best as u8
    }
}

/// An LLM that grades pairs: the in-process model or an OpenAI-compatible endpoint.
pub trait Grader {
    /// The model's name as a judge shows it (`llm:<name>@<hash12>`).
    fn model(&self) -> &str;

    /// Everything that determines a grade (model file or endpoint, prompt hash, how the grade
    /// is read): the key of the grade cache.
    fn identity(&self) -> &str;

    /// The grade distribution of one pair, from the [`GradePrompt`]. An answer without a
    /// readable grade is an error naming the model.
    fn grade(&mut self, query: &str, passage: &str) -> crate::Result<GradeDist>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: values 0, ln 2, ln 3, ln 4 → probabilities 1/10, 2/10, 3/10, 4/10; expected
    /// 0·0.1 + 1·0.2 + 2·0.3 + 3·0.4 = 2.0, argmax 3. Adding a constant (logits → log-probs)
    /// changes nothing; a second token for "2" (" 2", lower) and other tokens are ignored.
    #[test]
    fn expected_and_argmax_by_hand() {
        let (l2, l3, l4) = (2f32.ln(), 3f32.ln(), 4f32.ln());
        let d = GradeDist::from_logits([
            ("0", 0.0),
            ("1", l2),
            ("2", l3),
            ("Ġ2", l3 - 5.0),
            ("3", l4),
            ("The", 9.0),
        ])
        .unwrap();
        let want = [0.1, 0.2, 0.3, 0.4];
        for (p, w) in d.probs.iter().zip(want) {
            assert!((p - w).abs() < 1e-6, "{:?}", d.probs);
        }
        assert!((d.expected() - 2.0).abs() < 1e-6);
        assert_eq!(d.argmax(), 3);
        let shifted = GradeDist::from_logits([
            ("0", -7.0),
            ("1", l2 - 7.0),
            ("2", l3 - 7.0),
            ("3", l4 - 7.0),
        ])
        .unwrap();
        assert!((shifted.expected() - 2.0).abs() < 1e-6);
    }

    /// By hand: "0" and "1" equal and highest, "2", "3" far below: p ≈ (½, ½, 0, 0), expected
    /// ≈ 0.5, argmax the lower, 0.
    #[test]
    fn a_tie_goes_to_the_lower_grade() {
        let d =
            GradeDist::from_logits([("1", 5.0), ("0", 5.0), ("2", -30.0), ("3", -30.0)]).unwrap();
        assert_eq!(d.argmax(), 0);
        assert!((d.expected() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn missing_digits_and_non_finite_values_are_errors() {
        let e = GradeDist::from_logits([("0", 1.0), ("2", 0.0), ("yes", 3.0)]).unwrap_err();
        assert_eq!(
            e,
            GradeError::MissingDigits {
                missing: vec![1, 3]
            }
        );
        assert!(e.to_string().contains("--parse-text"), "{e}");
        let e = GradeDist::from_logits([("0", 1.0), ("1", f32::NAN)]).unwrap_err();
        assert!(matches!(e, GradeError::NotFinite { .. }), "{e}");
    }

    #[test]
    fn text_answers_are_read_and_outside_the_scale_refused() {
        let d = GradeDist::from_text(" 2\n").unwrap();
        assert_eq!((d.argmax(), d.expected()), (2, 2.0));
        assert_eq!(GradeDist::from_text("0 - unrelated").unwrap().argmax(), 0);
        let e = GradeDist::from_text("4").unwrap_err();
        assert!(matches!(e, GradeError::OutsideScale { .. }), "{e}");
        let e = GradeDist::from_text("12").unwrap_err();
        assert!(e.to_string().contains("gives 12"), "{e}");
        let e = GradeDist::from_text("Relevant.").unwrap_err();
        assert!(matches!(e, GradeError::NoGrade { .. }), "{e}");
    }

    #[test]
    fn the_prompt_has_the_scale_and_the_pair_in_both_forms() {
        let p = GradePrompt::default();
        let [(sr, s), (ur, u)] = p.messages("flea life cycle", "Fleas live {query} weeks.");
        assert_eq!((sr, s.as_str(), ur), ("system", SYSTEM, "user"));
        assert!(u.contains("Query: flea life cycle\nPassage: Fleas live {query} weeks.\n"));
        for g in ["3 = ", "2 = ", "1 = ", "0 = "] {
            assert!(u.contains(g), "{u}");
        }
        let c = p.chatml("q", "p");
        assert!(c.starts_with(&format!(
            "<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
        )));
        assert!(c.ends_with("one digit, 0, 1, 2 or 3.<|im_end|>\n<|im_start|>assistant\n"));
        assert_eq!(p.hash().len(), 64);
        assert_eq!(p.short_hash(), &p.hash()[..12]);
        // Not the reranker's prompt.
        assert_ne!(
            p.hash(),
            super::super::prompt::PromptTemplate::default().hash()
        );
    }
}
