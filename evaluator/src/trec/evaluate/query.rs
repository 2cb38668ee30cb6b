//! One query's values from its block, and a missing query's under `-c`.

use std::path::Path;

use super::block::{check_duplicates, rank_hits, Block, Scratch};
use super::index::Index;
use super::EvalOptions;
use crate::metrics::{relstring, Hit, Measure, QueryView};
use crate::trec::error::TrecError;

pub(super) struct Ctx<'a, 'q> {
    pub(super) index: &'a Index<'q>,
    pub(super) measures: &'a [Measure],
    pub(super) opts: &'a EvalOptions,
    pub(super) path: &'a Path,
    pub(super) relstring: bool,
}

/// One query's values and relstring.
#[derive(Clone)]
pub(super) struct QueryOut {
    pub(super) values: Vec<f64>,
    pub(super) relstring: Option<String>,
}

impl Ctx<'_, '_> {
    /// Checks a finished block and, for a judged query, returns its values.
    pub(super) fn finish(
        &self,
        block: &Block,
        scratch: &mut Scratch,
    ) -> Result<Option<QueryOut>, TrecError> {
        // trec_eval 10.0 looks for a document listed twice only in the queries it evaluates
        // (those of the qrels: a run query the qrels lack is never read again), and only among
        // the first -M documents in its order (`form_res_rels.c` cuts, then checks).
        let Some(q) = block.q else {
            return Ok(None);
        };
        check_duplicates(block, scratch, self.path, self.opts.max_docs)?;
        rank_hits(block, scratch);
        let mut num_ret = block.len();
        if let Some(max) = self.opts.max_docs {
            if num_ret > max {
                num_ret = max;
                let keep = scratch.ranked.partition_point(|h| h.rank < max);
                scratch.ranked.truncate(keep);
            }
        }
        if self.opts.judged_only {
            // trec_eval -J: unjudged documents leave the ranking; the judged keep their order.
            scratch.ranked.retain(|h| h.rel >= 0);
            for (i, h) in scratch.ranked.iter_mut().enumerate() {
                h.rank = i;
            }
            num_ret = scratch.ranked.len();
        }
        Ok(Some(self.values(q, num_ret, &scratch.ranked)))
    }

    pub(super) fn values(&self, q: usize, num_ret: usize, hits: &[Hit]) -> QueryOut {
        let view = QueryView {
            num_ret,
            hits,
            judgments: &self.index.judged[q].judgments,
            rel_level: self.opts.rel_level,
            params: &self.opts.params,
        };
        QueryOut {
            values: self.measures.iter().map(|m| m.compute(&view)).collect(),
            relstring: self
                .relstring
                .then(|| relstring(&view, self.opts.params.relstring_len)),
        }
    }

    /// A qrels query the run lacks, under `-c`: trec_eval 10.0 evaluates it as a ranking of one
    /// unjudged document, then zeroes num_ret, utility, unj, rbp_resid and relstring.
    pub(super) fn missing(&self, q: usize) -> QueryOut {
        let mut out = self.values(q, 1, &[]);
        for (v, m) in out.values.iter_mut().zip(self.measures) {
            if matches!(
                m,
                Measure::NumRet | Measure::Utility | Measure::Unj(_) | Measure::RbpResid
            ) {
                *v = 0.0;
            }
        }
        if out.relstring.is_some() {
            out.relstring = Some(String::new());
        }
        out
    }

    #[inline]
    pub(super) fn judgment(&self, q: Option<usize>, docno: &str) -> Option<i32> {
        q.and_then(|q| self.index.judged[q].lookup.get(docno.as_bytes()))
    }
}

pub(super) type Results = Vec<Option<QueryOut>>;
