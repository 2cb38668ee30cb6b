//! A regression tree fitted to gradients with Newton leaf values, grown best-first.
//!
//! A split of a node's rows on feature `f` at threshold `t` sends a row left when
//! `x[f] <= t`; its gain is the least-squares reduction of the gradients,
//! `G_L²/n_L + G_R²/n_R − G²/n`. The leaf to split next is the one whose best split gains
//! most (the earlier leaf on a tie); within a leaf, the earlier feature and then the smaller
//! threshold win ties. A leaf's value is `Σ gradient / Σ hessian` (0 when the hessians sum to
//! 0). Rows are visited in a presorted order per feature (value, then row), so the tree is a
//! pure function of its inputs.

use serde::{Deserialize, Serialize};

/// How big a tree may grow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Most leaves.
    pub leaves: usize,
    /// Most depth (0: no limit but `leaves`).
    pub depth: usize,
    /// Fewest rows in a leaf.
    pub min_leaf: usize,
}

/// A node: a split or a leaf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Node {
    /// `x[feature] <= threshold` goes to `left`, else `right` (indices into the tree's nodes).
    Split {
        /// The feature's column.
        feature: usize,
        /// The threshold.
        threshold: f64,
        /// The node for rows at or below the threshold.
        left: usize,
        /// The node for rows above it.
        right: usize,
    },
    /// The output of the rows that reach it.
    Leaf {
        /// The output.
        value: f64,
    },
}

/// A tree; its root is node 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// The nodes.
    pub nodes: Vec<Node>,
}

impl Tree {
    /// The output for row `x`.
    pub fn predict(&self, x: &[f64]) -> f64 {
        let mut i = 0;
        loop {
            match &self.nodes[i] {
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => {
                    i = if x[*feature] <= *threshold {
                        *left
                    } else {
                        *right
                    }
                }
                Node::Leaf { value } => return *value,
            }
        }
    }
}

/// The best split of one leaf.
#[derive(Debug, Clone, Copy)]
struct Split {
    gain: f64,
    feature: usize,
    threshold: f64,
}

/// Rows sorted by each feature (value with `total_cmp`, then row), computed once per data set.
pub fn presort(rows: &[Vec<f64>], features: usize) -> Vec<Vec<usize>> {
    (0..features)
        .map(|f| {
            let mut idx: Vec<usize> = (0..rows.len()).collect();
            idx.sort_unstable_by(|&a, &b| rows[a][f].total_cmp(&rows[b][f]).then(a.cmp(&b)));
            idx
        })
        .collect()
}

/// The best split of the rows whose `leaf_of` is `leaf`.
fn best_split(
    rows: &[Vec<f64>],
    sorted: &[Vec<usize>],
    grad: &[f64],
    leaf_of: &[usize],
    leaf: usize,
    min_leaf: usize,
) -> Option<Split> {
    let mut best: Option<Split> = None;
    for (f, order) in sorted.iter().enumerate() {
        let members: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&r| leaf_of[r] == leaf)
            .collect();
        let n = members.len();
        if n < 2 * min_leaf.max(1) {
            return None;
        }
        let total: f64 = members.iter().map(|&r| grad[r]).sum();
        let parent = total * total / n as f64;
        let mut left = 0.0;
        for i in 1..n {
            left += grad[members[i - 1]];
            let (a, b) = (rows[members[i - 1]][f], rows[members[i]][f]);
            if i < min_leaf.max(1) || n - i < min_leaf.max(1) || a >= b {
                continue;
            }
            let right = total - left;
            let gain = left * left / i as f64 + right * right / (n - i) as f64 - parent;
            if gain > 1e-12 && best.is_none_or(|s| gain > s.gain) {
                let mid = a + (b - a) / 2.0;
                let threshold = if mid < b { mid } else { a };
                best = Some(Split {
                    gain,
                    feature: f,
                    threshold,
                });
            }
        }
    }
    best
}

/// Fits a tree to `grad` (hessians `hess`) over `rows`, presorted by [`presort`].
pub fn fit(
    rows: &[Vec<f64>],
    sorted: &[Vec<usize>],
    grad: &[f64],
    hess: &[f64],
    limits: Limits,
) -> Tree {
    let mut nodes = vec![Node::Leaf { value: 0.0 }];
    let mut leaf_of = vec![0usize; rows.len()];
    // Open leaves: (node, depth, best split).
    let mut open: Vec<(usize, usize, Option<Split>)> = vec![(
        0,
        0,
        best_split(rows, sorted, grad, &leaf_of, 0, limits.min_leaf),
    )];
    let mut leaves = 1;
    while leaves < limits.leaves.max(1) {
        let pick = open
            .iter()
            .enumerate()
            .filter(|(_, (_, d, s))| s.is_some() && (limits.depth == 0 || *d < limits.depth))
            .max_by(|(_, a), (_, b)| {
                let (ga, gb) = (a.2.unwrap().gain, b.2.unwrap().gain);
                ga.total_cmp(&gb).then(b.0.cmp(&a.0))
            })
            .map(|(i, _)| i);
        let Some(i) = pick else { break };
        let (node, depth, split) = open.swap_remove(i);
        let split = split.expect("filtered");
        let (l, r) = (nodes.len(), nodes.len() + 1);
        nodes.push(Node::Leaf { value: 0.0 });
        nodes.push(Node::Leaf { value: 0.0 });
        nodes[node] = Node::Split {
            feature: split.feature,
            threshold: split.threshold,
            left: l,
            right: r,
        };
        for (row, x) in rows.iter().enumerate() {
            if leaf_of[row] == node {
                leaf_of[row] = if x[split.feature] <= split.threshold {
                    l
                } else {
                    r
                };
            }
        }
        for child in [l, r] {
            let s = best_split(rows, sorted, grad, &leaf_of, child, limits.min_leaf);
            open.push((child, depth + 1, s));
        }
        leaves += 1;
    }
    let mut g = vec![0.0; nodes.len()];
    let mut h = vec![0.0; nodes.len()];
    for (row, &leaf) in leaf_of.iter().enumerate() {
        g[leaf] += grad[row];
        h[leaf] += hess[row];
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        if let Node::Leaf { value } = node {
            *value = if h[i] > 0.0 { g[i] / h[i] } else { 0.0 };
        }
    }
    Tree { nodes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(x: &[f64]) -> Vec<Vec<f64>> {
        x.iter().map(|&v| vec![v]).collect()
    }

    /// One feature x = [1, 2, 3, 4], gradients [3, 1, −1, 0], hessians 1. By hand, G = 3,
    /// G²/n = 2.25; split after x=1: 9/1 + 0/3 = 9 (gain 6.75); after 2: 16/2 + 1/2 = 8.5
    /// (6.25); after 3: 9/3 + 0/1 = 3 (0.75). Best: threshold 1.5, leaves 3/1 = 3 and
    /// 0/3 = 0. With at least 2 rows a leaf only "after 2" is allowed: threshold 2.5, leaves
    /// 4/2 = 2 and −1/2 = −0.5.
    #[test]
    fn a_one_split_tree_matches_the_hand_computation() {
        let r = rows(&[1.0, 2.0, 3.0, 4.0]);
        let s = presort(&r, 1);
        let (g, h) = ([3.0, 1.0, -1.0, 0.0], [1.0; 4]);
        let lim = |min_leaf| Limits {
            leaves: 2,
            depth: 0,
            min_leaf,
        };
        let t = fit(&r, &s, &g, &h, lim(1));
        assert_eq!(
            t.nodes[0],
            Node::Split {
                feature: 0,
                threshold: 1.5,
                left: 1,
                right: 2
            }
        );
        assert_eq!(t.nodes[1], Node::Leaf { value: 3.0 });
        assert_eq!(t.nodes[2], Node::Leaf { value: 0.0 });
        let t = fit(&r, &s, &g, &h, lim(2));
        assert_eq!(t.predict(&[2.0]), 2.0);
        assert_eq!(t.predict(&[2.6]), -0.5);
        assert!(matches!(t.nodes[0], Node::Split { threshold, .. } if threshold == 2.5));
    }

    /// Three rows with one value: no threshold separates them, so the tree is one leaf of
    /// value (1 − 1 + 2) / 3.
    #[test]
    fn equal_values_never_split() {
        let r = rows(&[5.0, 5.0, 5.0]);
        let t = fit(
            &r,
            &presort(&r, 1),
            &[1.0, -1.0, 2.0],
            &[1.0; 3],
            Limits {
                leaves: 4,
                depth: 0,
                min_leaf: 1,
            },
        );
        assert_eq!(t.nodes, vec![Node::Leaf { value: 2.0 / 3.0 }]);
    }
}
