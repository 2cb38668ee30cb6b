//! Measure parameters that are not cutoffs: custom gains (`ndcg.1=3,2=9`), RBP's persistence,
//! utility's coefficients, set_F's beta, relstring's length, 11pt_avg's recall points, and the
//! collection size (`-N`). One set per evaluation: trec_eval keeps the first parameters given for
//! a measure, so every measure family has exactly one.

/// A relevance level mapped to a gain (`ndcg.2=9` gives level 2 gain 9).
pub type GainPairs = Vec<(i32, f64)>;

/// Parameters of an evaluation's measures.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Gains for `ndcg` (empty: each level's gain is its value).
    pub ndcg_gains: GainPairs,
    /// Gains for `ndcg_rel`.
    pub ndcg_rel_gains: GainPairs,
    /// Gains for `Rndcg`.
    pub rndcg_gains: GainPairs,
    /// Gains for `G`.
    pub g_gains: GainPairs,
    /// Gains for `rbp` (normalized to [0, 1] as trec_eval does).
    pub rbp_gains: GainPairs,
    /// Persistence of trec_eval's `rbp` (`rbp.p=0.8`; default 0.9).
    pub rbp_p: f64,
    /// `utility` coefficients a, b, c, d: a·rel_ret + b·nonrel_ret + c·rel_not_ret +
    /// d·nonrel_not_ret (default 1, -1, 0, 0).
    pub utility: [f64; 4],
    /// `set_F`'s beta (default 1).
    pub set_f_beta: f64,
    /// Number of documents `relstring` shows (default 10).
    pub relstring_len: usize,
    /// Recall points averaged by `11pt_avg` (default 0.0, 0.1, ..., 1.0).
    pub pt11_points: Vec<f64>,
    /// Documents in the collection (trec_eval `-N`; only `utility`'s d term reads it).
    pub num_docs_in_coll: i64,
}

/// trec_eval's recall points for `iprec_at_recall` and `11pt_avg`.
pub const ELEVEN_POINTS: [f64; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

impl Default for Params {
    fn default() -> Self {
        Params {
            ndcg_gains: Vec::new(),
            ndcg_rel_gains: Vec::new(),
            rndcg_gains: Vec::new(),
            g_gains: Vec::new(),
            rbp_gains: Vec::new(),
            rbp_p: 0.9,
            utility: [1.0, -1.0, 0.0, 0.0],
            set_f_beta: 1.0,
            relstring_len: 10,
            pt11_points: ELEVEN_POINTS.to_vec(),
            num_docs_in_coll: 0,
        }
    }
}

impl Params {
    /// True when some family has custom gains (then documents judged 0 can gain, and every
    /// judged document must be seen).
    pub fn has_custom_gains(&self) -> bool {
        !(self.ndcg_gains.is_empty()
            && self.ndcg_rel_gains.is_empty()
            && self.rndcg_gains.is_empty()
            && self.g_gains.is_empty()
            && self.rbp_gains.is_empty())
    }
}
