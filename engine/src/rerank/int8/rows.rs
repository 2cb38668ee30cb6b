//! Exporter 4: the feed-forward's inner activations quantized one scale per row (per token).
//!
//! **Why.** The pinned graph quantizes each activation tensor `[tokens, hidden]` with one uint8
//! scale and zero point (`DynamicQuantizeLinear`), so a token whose values are small is rounded
//! on the grid of the largest token's. For the pinned model that noise is most of its own error
//! against its float weights (0.086 mean |Δlogit| on eval48); the fine-tuned fold models, whose
//! logits are 1.6–2.5× as steep, scored 0.14–0.18 from their float models whatever their
//! weights' rounding did (docs/speed.md, "Fold models as int8 exports"). One scale per row cuts
//! that noise at its source. Only the widest activations are rewritten: the 12 entering the
//! feed-forward's output matrices (after the GELU, 1,536 wide), whose rows are the most uneven.
//! Measured on docir's fold models and SciFact pairs: 0.05 mean (per row everywhere 0.04) at
//! 0.97× the pinned graph's pairs/s (per row everywhere 0.92×).
//!
//! **The graph.** Each such `DynamicQuantizeLinear(x) → (q, s, zp)` becomes
//!
//! ```text
//! s  = max(ReduceMax(|x|, axis −1, keepdims), 1e−8) / 127        [.., rows, 1]
//! q  = Reshape(QuantizeLinear(Reshape(x, [−1, K]), Reshape(s, [−1]), 128 per row, axis 0),
//!              Shape(x))                                          uint8, zero point 128
//! ```
//!
//! symmetric around the fixed zero point 128 (ONNX Runtime's `MatMulInteger` and
//! `MatMulIntegerToFloat` take only one activation zero point: "Per-Channel is not supported
//! yet"; `QuantizeLinear` with `axis` takes one scale and zero point per row in one pass). Each
//! `MatMulInteger(q, W, zp, wzp) → Cast → Mul(·, Mul(s, w_scale))` it feeds becomes one
//! `com.microsoft.MatMulIntegerToFloat(q, W, s, w_scale, zp, wzp)` under the `MatMulInteger`'s
//! name, **without a bias input**: ONNX Runtime's own fusion of that chain with the following
//! bias `Add` scales the bias by the activation scale, right for one scale per tensor and wrong
//! for one per row (mean error 7.4 logits, no error raised:
//! `bench/score-speed/pertoken_bias_check.py`); written explicitly, the graph's bias `Add` stays
//! after it. The weights, their scales and every other node are the per-column export's
//! ([`super::export_with`]), copied byte for byte.
//!
//! **Batches.** A row is one token of one pair, so a pair's score does not depend on the
//! others in its batch (the scorers run batch 1 anyway).

use std::collections::{BTreeMap, BTreeSet};

use super::wire::{fields, len_field, put_varint};
use crate::models::onnx::Graph;

use crate::models::onnx::dtype::{FLOAT, INT64, UINT8};

/// An attribute of a node written here.
enum Attr {
    Int(&'static str, i64),
    Ints(&'static str, Vec<i64>),
}

/// A `NodeProto`: inputs 1, outputs 2, name 3, op_type 4, attribute 5, domain 7.
fn node(
    op: &str,
    domain: &str,
    inputs: &[&str],
    outputs: &[&str],
    name: &str,
    attrs: &[Attr],
) -> Vec<u8> {
    let mut n = Vec::new();
    for i in inputs {
        len_field(1, i.as_bytes(), &mut n);
    }
    for o in outputs {
        len_field(2, o.as_bytes(), &mut n);
    }
    len_field(3, name.as_bytes(), &mut n);
    len_field(4, op.as_bytes(), &mut n);
    for a in attrs {
        // AttributeProto: name 1, i 3, ints 8, type 20 (INT 2, INTS 7).
        let mut b = Vec::new();
        match a {
            Attr::Int(key, v) => {
                len_field(1, key.as_bytes(), &mut b);
                put_varint(3 << 3, &mut b);
                put_varint(*v as u64, &mut b);
                put_varint(20 << 3, &mut b);
                put_varint(2, &mut b);
            }
            Attr::Ints(key, vs) => {
                len_field(1, key.as_bytes(), &mut b);
                for v in vs {
                    put_varint(8 << 3, &mut b);
                    put_varint(*v as u64, &mut b);
                }
                put_varint(20 << 3, &mut b);
                put_varint(7, &mut b);
            }
        }
        len_field(5, &b, &mut n);
    }
    if !domain.is_empty() {
        len_field(7, domain.as_bytes(), &mut n);
    }
    n
}

/// A `TensorProto` initializer: dims 1, data_type 2, name 8, raw_data 9.
fn tensor(name: &str, dims: &[i64], data_type: i32, raw: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    for d in dims {
        put_varint(1 << 3, &mut t);
        put_varint(*d as u64, &mut t);
    }
    put_varint(2 << 3, &mut t);
    put_varint(data_type as u64, &mut t);
    len_field(8, name.as_bytes(), &mut t);
    len_field(9, raw, &mut t);
    t
}

/// What happens to each node of the base graph, by its index.
enum Plan {
    /// A `DynamicQuantizeLinear` replaced by the per-row quantizer of inputs of width `k`.
    Quantizer { k: i64 },
    /// A `MatMulInteger` replaced by `MatMulIntegerToFloat(q, W, s, w_scale, zp, wzp)` writing
    /// `out` (the output of the `Mul` it replaces).
    Product {
        w_scale: String,
        s: String,
        out: String,
    },
    /// A `Cast` or `Mul` the product above takes the place of.
    Dropped,
}

/// The graph `model` (an ONNX file as [`super::export_with`] writes it, of the pinned graph's
/// nodes) with its activations quantized one scale per row (see the module's documentation).
pub fn per_row_activations(model: &[u8]) -> Result<Vec<u8>, String> {
    let graph = Graph::parse(model)?;
    let plan = plan(&graph)?;
    let names: BTreeSet<&str> = graph
        .nodes
        .iter()
        .flat_map(|n| n.outputs.iter().map(String::as_str))
        .chain(graph.initializers.iter().map(|i| i.name.as_str()))
        .collect();
    for name in [EPS, Q127, U128, MINUS_ONE] {
        if names.contains(name) {
            return Err(format!("the base graph already names a value {name}"));
        }
    }
    let mut widths = BTreeSet::new();
    let mut new_nodes: BTreeMap<usize, Vec<Vec<u8>>> = BTreeMap::new();
    let mut zero_points = Vec::new();
    for (i, p) in &plan {
        let n = &graph.nodes[*i];
        let written = match p {
            Plan::Quantizer { k } => {
                widths.insert(*k);
                zero_points.push(n.outputs[2].clone());
                quantizer(n, *k)
            }
            Plan::Product { w_scale, s, out } => {
                let i = &n.inputs;
                vec![node(
                    "MatMulIntegerToFloat",
                    "com.microsoft",
                    &[&i[0], &i[1], s, w_scale, &i[2], &i[3]],
                    &[out],
                    &n.name,
                    &[],
                )]
            }
            Plan::Dropped => Vec::new(),
        };
        new_nodes.insert(*i, written);
    }
    let mut inits = vec![
        tensor(EPS, &[], FLOAT, &1e-8f32.to_le_bytes()),
        tensor(Q127, &[], FLOAT, &127f32.to_le_bytes()),
        tensor(U128, &[], UINT8, &[128]),
        tensor(MINUS_ONE, &[1], INT64, &(-1i64).to_le_bytes()),
    ];
    for k in &widths {
        let raw: Vec<u8> = [-1i64, *k].iter().flat_map(|v| v.to_le_bytes()).collect();
        inits.push(tensor(&rows_of(*k), &[2], INT64, &raw));
    }
    for zp in &zero_points {
        inits.push(tensor(zp, &[], UINT8, &[128]));
    }

    let mut out = Vec::with_capacity(model.len() + 64 * 1024);
    let mut opsets_done = false;
    for f in fields(model)? {
        match (f.number, f.wire) {
            (7, 2) => {
                let mut g = Vec::with_capacity(f.value.len() + 64 * 1024);
                let mut index = 0;
                for gf in fields(f.value)? {
                    if gf.number == 1 && gf.wire == 2 {
                        match new_nodes.get(&index) {
                            Some(written) => written.iter().for_each(|b| len_field(1, b, &mut g)),
                            None => g.extend_from_slice(gf.whole),
                        }
                        index += 1;
                    } else {
                        g.extend_from_slice(gf.whole);
                    }
                }
                for t in &inits {
                    len_field(5, t, &mut g);
                }
                len_field(7, &g, &mut out);
            }
            (8, 2) => {
                out.extend_from_slice(f.whole);
                if !opsets_done {
                    // OperatorSetIdProto { domain 1, version 2 }
                    let mut o = Vec::new();
                    len_field(1, b"com.microsoft", &mut o);
                    put_varint(2 << 3, &mut o);
                    put_varint(1, &mut o);
                    len_field(8, &o, &mut out);
                    opsets_done = true;
                }
            }
            _ => out.extend_from_slice(f.whole),
        }
    }
    if !opsets_done {
        return Err("the base graph imports no operator set".into());
    }
    Ok(out)
}

const EPS: &str = "rows/eps";
const Q127: &str = "rows/127";
const U128: &str = "rows/128";
const MINUS_ONE: &str = "rows/-1";

fn rows_of(k: i64) -> String {
    format!("rows/[-1,{k}]")
}

/// The nodes replacing `DynamicQuantizeLinear` node `n` (inputs of width `k`).
fn quantizer(n: &crate::models::onnx::Node, k: i64) -> Vec<Vec<u8>> {
    let x = n.inputs[0].as_str();
    let (q, s) = (n.outputs[0].as_str(), n.outputs[1].as_str());
    let v = |step: &str| format!("{q}/rows/{step}");
    let (abs, max, floor, s1, x2, shape_s, zp1, q2, shape_x) = (
        v("abs"),
        v("max"),
        v("floor"),
        v("scale"),
        v("x"),
        v("scale_shape"),
        v("zero_point"),
        v("q"),
        v("x_shape"),
    );
    let name = |step: &str| v(&format!("{step}/node"));
    let rows = rows_of(k);
    vec![
        node("Abs", "", &[x], &[&abs], &name("abs"), &[]),
        node(
            "ReduceMax",
            "",
            &[&abs],
            &[&max],
            &name("max"),
            &[Attr::Ints("axes", vec![-1]), Attr::Int("keepdims", 1)],
        ),
        node("Max", "", &[&max, EPS], &[&floor], &name("floor"), &[]),
        node("Div", "", &[&floor, Q127], &[s], &name("scale"), &[]),
        node(
            "Reshape",
            "",
            &[s, MINUS_ONE],
            &[&s1],
            &name("scale_rows"),
            &[],
        ),
        node("Reshape", "", &[x, &rows], &[&x2], &name("x_rows"), &[]),
        node("Shape", "", &[&s1], &[&shape_s], &name("scale_shape"), &[]),
        node(
            "Expand",
            "",
            &[U128, &shape_s],
            &[&zp1],
            &name("zero_point"),
            &[],
        ),
        node(
            "QuantizeLinear",
            "",
            &[&x2, &s1, &zp1],
            &[&q2],
            &name("quantize"),
            &[Attr::Int("axis", 0)],
        ),
        node("Shape", "", &[x], &[&shape_x], &name("x_shape"), &[]),
        node("Reshape", "", &[&q2, &shape_x], &[q], &name("q"), &[]),
    ]
}

/// Which nodes change and how; refuses a graph that is not of the pinned graph's pattern.
fn plan(graph: &Graph) -> Result<BTreeMap<usize, Plan>, String> {
    let mut consumers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut producer: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        for x in &n.inputs {
            consumers.entry(x.as_str()).or_default().push(i);
        }
        for o in &n.outputs {
            producer.insert(o.as_str(), i);
        }
    }
    let only = |value: &str, op: &str| -> Result<usize, String> {
        match consumers.get(value).map(Vec::as_slice) {
            Some([c]) if graph.nodes[*c].op_type == op => Ok(*c),
            _ => Err(format!("{value} is not read by exactly one {op}")),
        }
    };
    let width = |mm: &crate::models::onnx::Node| -> Result<i64, String> {
        let w = graph
            .initializer(mm.inputs.get(1).map_or("", String::as_str))
            .ok_or_else(|| format!("{} multiplies by no initializer", mm.name))?;
        w.dims
            .first()
            .copied()
            .ok_or("a matrix without a shape".into())
    };
    let mut widest = 0;
    for mm in graph.nodes.iter().filter(|n| n.op_type == "MatMulInteger") {
        widest = widest.max(width(mm)?);
    }
    let mut plan = BTreeMap::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        if n.op_type != "DynamicQuantizeLinear" {
            continue;
        }
        let [q, s, zp] = n.outputs.as_slice() else {
            return Err(format!("{} does not have three outputs", n.name));
        };
        let readers = consumers.get(q.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        // Only the feed-forward's inner activations (the widest inputs) are quantized per row.
        match readers.first() {
            Some(&m) if graph.nodes[m].op_type == "MatMulInteger" => {
                if width(&graph.nodes[m])? != widest {
                    continue;
                }
            }
            _ => return Err(format!("{q} is read by no MatMulInteger")),
        }
        let mut k = None;
        for &m in readers {
            let mm = &graph.nodes[m];
            if mm.op_type != "MatMulInteger" || mm.inputs.len() != 4 || mm.inputs[2] != *zp {
                return Err(format!("{q} is read by {}, not a MatMulInteger", mm.name));
            }
            let width = width(mm)?;
            if k.is_some_and(|k| k != width) {
                return Err(format!("{q} is multiplied by matrices of other widths"));
            }
            k = Some(width);
            let cast = only(&mm.outputs[0], "Cast")?;
            let mul = only(&graph.nodes[cast].outputs[0], "Mul")?;
            let m_in = &graph.nodes[mul].inputs;
            let other = m_in
                .iter()
                .find(|x| **x != graph.nodes[cast].outputs[0])
                .ok_or("a Mul of one input")?;
            let scales = *producer
                .get(other.as_str())
                .filter(|&&p| graph.nodes[p].op_type == "Mul")
                .ok_or_else(|| format!("{} is not scaled by a product of scales", mm.name))?;
            only(other, "Mul")?;
            let w_scale = graph.nodes[scales]
                .inputs
                .iter()
                .find(|x| *x != s)
                .filter(|x| graph.initializer(x).is_some())
                .ok_or_else(|| format!("{} is not scaled by {s} and a weight scale", mm.name))?;
            plan.insert(
                m,
                Plan::Product {
                    w_scale: w_scale.clone(),
                    s: s.clone(),
                    out: graph.nodes[mul].outputs[0].clone(),
                },
            );
            for d in [cast, mul, scales] {
                plan.insert(d, Plan::Dropped);
            }
        }
        let k = k.ok_or_else(|| format!("{q} is read by no MatMulInteger"))?;
        // The scale's other readers, if any, are the products' scale Muls being dropped.
        for &c in consumers.get(s.as_str()).map(Vec::as_slice).unwrap_or(&[]) {
            if !matches!(plan.get(&c), Some(Plan::Dropped)) {
                return Err(format!("{s} is read by {}", graph.nodes[c].name));
            }
        }
        plan.insert(i, Plan::Quantizer { k });
    }
    if plan.is_empty() {
        return Err("the base graph has no DynamicQuantizeLinear".into());
    }
    Ok(plan)
}
