//! Tables: a polars `DataFrame` rendered as Markdown, CSV and JSON, byte-for-byte stable.
//!
//! Floats are printed with a fixed number of decimals (4, trec_eval's precision) so the same
//! numbers always give the same bytes; strings are escaped for each format.

use anyhow::Result;
use polars::prelude::*;

/// Renders a cell: floats with 4 decimals, integers plainly, strings as they are, null as "".
pub fn cell(v: &AnyValue) -> String {
    match v {
        AnyValue::Null => String::new(),
        AnyValue::Float64(x) => format!("{x:.4}"),
        AnyValue::Float32(x) => format!("{x:.4}"),
        AnyValue::String(s) => s.to_string(),
        AnyValue::StringOwned(s) => s.to_string(),
        other => other.to_string(),
    }
}

fn rows(df: &DataFrame) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::with_capacity(df.height());
    for r in 0..df.height() {
        let mut row = Vec::with_capacity(df.width());
        for c in df.columns() {
            row.push(cell(&c.get(r)?));
        }
        out.push(row);
    }
    Ok(out)
}

/// A GitHub-flavoured Markdown table.
pub fn markdown(df: &DataFrame) -> Result<String> {
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| esc(n.as_str()))
        .collect();
    let mut s = format!("| {} |\n", names.join(" | "));
    let aligns: Vec<&str> = df
        .columns()
        .iter()
        .map(|c| {
            if c.dtype().is_primitive_numeric() {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    s.push_str(&format!("|{}|\n", aligns.join("|")));
    for row in rows(df)? {
        let row: Vec<String> = row.iter().map(|c| esc(c)).collect();
        s.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    Ok(s)
}

/// RFC 4180 CSV with a header line.
pub fn csv(df: &DataFrame) -> Result<String> {
    let esc = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| esc(n.as_str()))
        .collect();
    let mut s = names.join(",") + "\n";
    for row in rows(df)? {
        s.push_str(&row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(","));
        s.push('\n');
    }
    Ok(s)
}

/// JSON array of row objects; keys in column order; floats rounded to 4 decimals.
pub fn json_rows(df: &DataFrame) -> Result<serde_json::Value> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut out = Vec::with_capacity(df.height());
    for r in 0..df.height() {
        let mut obj = serde_json::Map::new();
        for (name, c) in names.iter().zip(df.columns()) {
            let v = match c.get(r)? {
                AnyValue::Null => serde_json::Value::Null,
                AnyValue::Float64(x) => round4(x),
                AnyValue::Float32(x) => round4(x as f64),
                AnyValue::Int64(x) => x.into(),
                AnyValue::UInt32(x) => x.into(),
                AnyValue::UInt64(x) => x.into(),
                AnyValue::Int32(x) => x.into(),
                AnyValue::Boolean(b) => b.into(),
                other => cell(&other).into(),
            };
            obj.insert(name.clone(), v);
        }
        out.push(serde_json::Value::Object(obj));
    }
    Ok(serde_json::Value::Array(out))
}

fn round4(x: f64) -> serde_json::Value {
    // Through the 4-decimal string, so JSON and Markdown always agree.
    format!("{x:.4}")
        .parse::<f64>()
        .map(serde_json::Value::from)
        .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_all_three_formats() {
        let df = df!("configuration" => ["a|b", "c"], "MRR" => [0.5f64, 1.0 / 3.0]).unwrap();
        let md = markdown(&df).unwrap();
        assert_eq!(
            md,
            "| configuration | MRR |\n|---|---:|\n| a\\|b | 0.5000 |\n| c | 0.3333 |\n"
        );
        assert_eq!(
            csv(&df).unwrap(),
            "configuration,MRR\na|b,0.5000\nc,0.3333\n"
        );
        let j = json_rows(&df).unwrap();
        assert_eq!(j[1]["MRR"], serde_json::json!(0.3333));
    }
}
