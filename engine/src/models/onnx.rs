//! A reader of the parts of an ONNX model file that dequantizing its weights needs: the graph's
//! nodes (name, operator, inputs, outputs) and its initializers (name, shape, element type,
//! data). ONNX files are protocol buffers (`onnx.proto3`, `ModelProto`); this reads the wire
//! format directly — varints, length-delimited fields, packed repeated fields — and skips every
//! field it does not name, so no protobuf compiler or generated code is needed.
//!
//! Field numbers, from `onnx.proto3`: `ModelProto.graph = 7`; `GraphProto.node = 1`,
//! `initializer = 5`; `NodeProto.input = 1`, `output = 2`, `name = 3`, `op_type = 4`;
//! `TensorProto.dims = 1`, `data_type = 2`, `float_data = 4`, `int32_data = 5`, `name = 8`,
//! `raw_data = 9`.

use crate::{Error, Result};

/// `TensorProto.DataType` values this reader decodes.
pub mod dtype {
    /// 32-bit float.
    pub const FLOAT: i32 = 1;
    /// Unsigned byte.
    pub const UINT8: i32 = 2;
    /// Signed byte.
    pub const INT8: i32 = 3;
    /// 64-bit signed integer (shapes).
    pub const INT64: i32 = 7;
}

/// One node of the graph.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// The node's name (exporters keep the module path: `/bert/encoder/layer.0/…/MatMul_quant`).
    pub name: String,
    /// The operator (`MatMulInteger`, `Add`, …).
    pub op_type: String,
    /// Input value names, in order.
    pub inputs: Vec<String>,
    /// Output value names.
    pub outputs: Vec<String>,
}

/// One initializer (a constant tensor of the graph).
#[derive(Debug, Clone, Default)]
pub struct Initializer {
    /// Its name.
    pub name: String,
    /// Its shape (empty: a scalar).
    pub dims: Vec<i64>,
    /// Its element type ([`dtype`]).
    pub data_type: i32,
    /// `raw_data`: the elements, little-endian, when stored that way.
    pub raw: Vec<u8>,
    /// `float_data`, when stored that way.
    pub floats: Vec<f32>,
    /// `int32_data` (also holds 8-bit elements), when stored that way.
    pub int32s: Vec<i32>,
}

impl Initializer {
    /// Number of elements its shape holds.
    pub fn len(&self) -> usize {
        self.dims.iter().map(|&d| d.max(0) as usize).product()
    }

    /// True when the shape holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as f32 (a float tensor).
    pub fn f32s(&self) -> std::result::Result<Vec<f32>, String> {
        if self.data_type != dtype::FLOAT {
            return Err(format!("{} is not a float tensor", self.name));
        }
        let v: Vec<f32> = if self.raw.is_empty() {
            self.floats.clone()
        } else {
            self.raw
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        self.checked(v)
    }

    /// The elements of an 8-bit tensor (int8 or uint8) as i32.
    pub fn ints8(&self) -> std::result::Result<Vec<i32>, String> {
        let v: Vec<i32> = match self.data_type {
            dtype::INT8 if !self.raw.is_empty() => {
                self.raw.iter().map(|&b| i32::from(b as i8)).collect()
            }
            dtype::UINT8 if !self.raw.is_empty() => {
                self.raw.iter().map(|&b| i32::from(b)).collect()
            }
            dtype::INT8 | dtype::UINT8 => self.int32s.clone(),
            t => {
                return Err(format!(
                    "{} has element type {t}, not int8 or uint8",
                    self.name
                ))
            }
        };
        self.checked(v)
    }

    fn checked<T>(&self, v: Vec<T>) -> std::result::Result<Vec<T>, String> {
        if v.len() == self.len() {
            Ok(v)
        } else {
            Err(format!(
                "{} holds {} elements for shape {:?}",
                self.name,
                v.len(),
                self.dims
            ))
        }
    }
}

/// The graph of a model file: its nodes and initializers, in file order.
#[derive(Debug, Default)]
pub struct Graph {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The initializers.
    pub initializers: Vec<Initializer>,
}

impl Graph {
    /// Reads `path`, an ONNX model file.
    pub fn read(path: &std::path::Path) -> Result<Graph> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Graph::parse(&bytes).map_err(|message| Error::Model {
            model: path.display().to_string(),
            message: format!("not a readable ONNX file: {message}"),
        })
    }

    /// Parses the bytes of an ONNX model file.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Graph, String> {
        let mut graph = None;
        for field in Fields::new(bytes) {
            let (number, value) = field?;
            if let (7, Value::Bytes(b)) = (number, value) {
                graph = Some(b);
            }
        }
        let bytes = graph.ok_or("no graph (ModelProto field 7)")?;
        let mut g = Graph::default();
        for field in Fields::new(bytes) {
            match field? {
                (1, Value::Bytes(b)) => g.nodes.push(node(b)?),
                (5, Value::Bytes(b)) => g.initializers.push(initializer(b)?),
                _ => {}
            }
        }
        Ok(g)
    }

    /// The initializer named `name`.
    pub fn initializer(&self, name: &str) -> Option<&Initializer> {
        self.initializers.iter().find(|i| i.name == name)
    }
}

fn node(bytes: &[u8]) -> std::result::Result<Node, String> {
    let mut n = Node::default();
    for field in Fields::new(bytes) {
        match field? {
            (1, Value::Bytes(b)) => n.inputs.push(text(b)?),
            (2, Value::Bytes(b)) => n.outputs.push(text(b)?),
            (3, Value::Bytes(b)) => n.name = text(b)?,
            (4, Value::Bytes(b)) => n.op_type = text(b)?,
            _ => {}
        }
    }
    Ok(n)
}

fn initializer(bytes: &[u8]) -> std::result::Result<Initializer, String> {
    let mut t = Initializer::default();
    for field in Fields::new(bytes) {
        match field? {
            (1, Value::Varint(d)) => t.dims.push(d as i64),
            (1, Value::Bytes(b)) => t.dims.extend(varints(b)?.into_iter().map(|d| d as i64)),
            (2, Value::Varint(d)) => t.data_type = d as i32,
            (4, Value::Fixed32(f)) => t.floats.push(f32::from_bits(f)),
            (4, Value::Bytes(b)) => t.floats.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            (5, Value::Varint(v)) => t.int32s.push(v as i32),
            (5, Value::Bytes(b)) => t.int32s.extend(varints(b)?.into_iter().map(|v| v as i32)),
            (8, Value::Bytes(b)) => t.name = text(b)?,
            (9, Value::Bytes(b)) => t.raw = b.to_vec(),
            _ => {}
        }
    }
    Ok(t)
}

fn text(b: &[u8]) -> std::result::Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a name that is not UTF-8".to_string())
}

fn varints(mut b: &[u8]) -> std::result::Result<Vec<u64>, String> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (v, rest) = varint(b)?;
        out.push(v);
        b = rest;
    }
    Ok(out)
}

fn varint(b: &[u8]) -> std::result::Result<(u64, &[u8]), String> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((v, &b[i + 1..]));
        }
    }
    Err("a varint that does not end".to_string())
}

/// A field's value by wire type.
enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// The fields of one message, in order: `(field number, value)`.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Fields { rest: bytes }
    }

    fn next_field(&mut self) -> std::result::Result<(u32, Value<'a>), String> {
        let (key, rest) = varint(self.rest)?;
        let (number, wire) = ((key >> 3) as u32, key & 7);
        let (value, rest) = match wire {
            0 => {
                let (v, rest) = varint(rest)?;
                (Value::Varint(v), rest)
            }
            1 => (Value::Fixed64, rest.get(8..).ok_or("a cut 64-bit field")?),
            2 => {
                let (len, rest) = varint(rest)?;
                let len = usize::try_from(len).map_err(|_| "a field too long")?;
                if len > rest.len() {
                    return Err(format!("field {number} runs past the end"));
                }
                (Value::Bytes(&rest[..len]), &rest[len..])
            }
            5 => {
                let b = rest.get(..4).ok_or("a cut 32-bit field")?;
                (
                    Value::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    &rest[4..],
                )
            }
            w => {
                return Err(format!(
                    "field {number} has wire type {w}, which ONNX does not use"
                ))
            }
        };
        self.rest = rest;
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = std::result::Result<(u32, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = self.next_field();
        if item.is_err() {
            self.rest = &[];
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-encoded ModelProto: graph { node { input "a" output "b" name "n" op_type "Add" }
    /// initializer { dims [2, 1] data_type 3 name "w" raw_data [0xff, 0x02] } }, bytes worked
    /// out from the wire format by hand.
    #[test]
    fn a_hand_encoded_model_reads_back() {
        let node = [
            0x0a, 1, b'a', 0x12, 1, b'b', 0x1a, 1, b'n', 0x22, 3, b'A', b'd', b'd',
        ];
        let init = [
            0x08, 2, 0x08, 1, 0x10, 3, 0x42, 1, b'w', 0x4a, 2, 0xff, 0x02,
        ];
        let mut graph = vec![0x0a, node.len() as u8];
        graph.extend_from_slice(&node);
        graph.extend_from_slice(&[0x2a, init.len() as u8]);
        graph.extend_from_slice(&init);
        let mut model = vec![0x08, 7]; // ir_version 7, skipped
        model.extend_from_slice(&[0x3a, graph.len() as u8]);
        model.extend_from_slice(&graph);
        let g = Graph::parse(&model).unwrap();
        assert_eq!(g.nodes.len(), 1);
        assert_eq!(g.nodes[0].op_type, "Add");
        assert_eq!(
            (g.nodes[0].inputs.clone(), g.nodes[0].outputs.clone()),
            (vec!["a".to_string()], vec!["b".to_string()])
        );
        let w = g.initializer("w").unwrap();
        assert_eq!(w.dims, vec![2, 1]);
        assert_eq!(w.ints8().unwrap(), vec![-1, 2]);
        assert!(
            Graph::parse(&model[..model.len() - 1]).is_err(),
            "a cut file is refused"
        );
    }
}
