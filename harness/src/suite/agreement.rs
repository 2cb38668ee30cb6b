//! The (task, document)s graded by both a person and an LLM, on which their agreement is
//! measured.

use std::collections::BTreeMap;

use super::Suite;

/// A (task, document) graded by a person and by an LLM ([`Suite::agreement_pairs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgreementPair {
    /// Task id.
    pub task: String,
    /// Document id.
    pub document: String,
    /// The person's grade and the LLM's.
    pub grades: crate::stats::agreement::GradePair,
}

impl Suite {
    /// For each LLM judge (`llm:<model>@<hash12>`), the (task, document)s it graded that a
    /// person graded too (in `suite.yaml` or `judgments.yaml`), with both grades: what the
    /// agreement of [`crate::stats::agreement`] is measured on. Task order, then document order.
    /// A person's grade outside 0..=3 (a suite file may grade on another scale) is left out.
    pub fn agreement_pairs(&self) -> BTreeMap<String, Vec<AgreementPair>> {
        let mut out: BTreeMap<String, Vec<AgreementPair>> = BTreeMap::new();
        let Some(j) = &self.judgments else {
            return out;
        };
        for t in &self.tasks {
            for (doc, &human) in &t.expected {
                if j.find(&t.id, doc).is_some_and(|g| g.is_llm()) {
                    continue; // an LLM's grade merged with --judgments all, not a person's
                }
                if !(0..=crate::judgments::MAX_GRADE).contains(&human) {
                    continue; // suite.yaml on another scale: not comparable with 0..=3
                }
                for g in j.all_llm().filter(|g| g.task == t.id && &g.document == doc) {
                    out.entry(g.judge.clone()).or_default().push(AgreementPair {
                        task: t.id.clone(),
                        document: doc.clone(),
                        grades: crate::stats::agreement::GradePair {
                            human: human as u8,
                            llm: g.grade as u8,
                        },
                    });
                }
            }
        }
        out
    }
}
