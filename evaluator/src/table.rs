//! Tables: named, typed columns rendered as Markdown, CSV and JSON, byte-for-byte stable.
//!
//! A [`Table`] is what every report table is: a list of columns, each of one type (text, float,
//! unsigned integer, each cell possibly empty), all of one height. Nothing is computed on the
//! table itself, so a dataframe library would only be a bag of columns here; the CSV goes
//! through the `csv` crate (RFC 4180 quoting), Markdown and JSON are written here.
//!
//! Floats are printed with a fixed number of decimals (4, trec_eval's precision) so the same
//! numbers always give the same bytes; strings are escaped for each format.

use anyhow::{bail, Result};

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// No value: empty in Markdown and CSV, `null` in JSON.
    Null,
    /// Text, printed as it is.
    Text(String),
    /// A float, printed with 4 decimals.
    Float(f64),
    /// A count.
    Int(u64),
}

/// A type a column can hold; numeric columns are right-aligned in Markdown.
pub trait CellValue {
    /// Whether a column of this type is numeric.
    const NUMERIC: bool;
    /// The cell.
    fn cell(self) -> Cell;
}

impl CellValue for String {
    const NUMERIC: bool = false;
    fn cell(self) -> Cell {
        Cell::Text(self)
    }
}

impl CellValue for &str {
    const NUMERIC: bool = false;
    fn cell(self) -> Cell {
        Cell::Text(self.to_string())
    }
}

impl CellValue for f64 {
    const NUMERIC: bool = true;
    fn cell(self) -> Cell {
        Cell::Float(self)
    }
}

impl CellValue for u32 {
    const NUMERIC: bool = true;
    fn cell(self) -> Cell {
        Cell::Int(self.into())
    }
}

impl CellValue for u64 {
    const NUMERIC: bool = true;
    fn cell(self) -> Cell {
        Cell::Int(self)
    }
}

impl<T: CellValue> CellValue for Option<T> {
    const NUMERIC: bool = T::NUMERIC;
    fn cell(self) -> Cell {
        self.map_or(Cell::Null, T::cell)
    }
}

/// A named column of one type.
#[derive(Debug, Clone)]
pub struct Column {
    name: String,
    numeric: bool,
    cells: Vec<Cell>,
}

impl Column {
    /// A column named `name` holding `values`.
    pub fn new<T: CellValue>(name: impl Into<String>, values: Vec<T>) -> Self {
        Column {
            name: name.into(),
            numeric: T::NUMERIC,
            cells: values.into_iter().map(CellValue::cell).collect(),
        }
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether it has no cell.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The cell of row `r`.
    pub fn get(&self, r: usize) -> Option<&Cell> {
        self.cells.get(r)
    }
}

impl std::fmt::Display for Cell {
    /// As [`cell`] renders it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&cell(self))
    }
}

/// Columns of one height with distinct names.
#[derive(Debug, Clone)]
pub struct Table {
    columns: Vec<Column>,
}

impl Table {
    /// A table of `columns`; refuses columns of unequal heights or a repeated name.
    pub fn new(columns: Vec<Column>) -> Result<Self> {
        let mut t = Table {
            columns: Vec::with_capacity(columns.len()),
        };
        for c in columns {
            t.with_column(c)?;
        }
        Ok(t)
    }

    /// Appends a column (same height, a new name).
    pub fn with_column(&mut self, c: Column) -> Result<()> {
        if self.columns.iter().any(|x| x.name == c.name) {
            bail!("internal: two table columns named {:?}", c.name);
        }
        if let Some(first) = self.columns.first() {
            if first.cells.len() != c.cells.len() {
                bail!(
                    "internal: column {:?} has {} rows, the table {}",
                    c.name,
                    c.cells.len(),
                    first.cells.len()
                );
            }
        }
        self.columns.push(c);
        Ok(())
    }

    /// The number of rows.
    pub fn height(&self) -> usize {
        self.columns.first().map_or(0, |c| c.cells.len())
    }

    fn rows(&self) -> impl Iterator<Item = impl Iterator<Item = &Cell>> {
        (0..self.height()).map(move |r| self.columns.iter().map(move |c| &c.cells[r]))
    }
}

/// Renders a cell: floats with 4 decimals, integers plainly, strings as they are, null as "".
pub fn cell(v: &Cell) -> String {
    match v {
        Cell::Null => String::new(),
        Cell::Float(x) => format!("{x:.4}"),
        Cell::Text(s) => s.clone(),
        Cell::Int(n) => n.to_string(),
    }
}

/// The text of one Markdown table cell: `|` escaped as `\|` (GitHub-flavoured Markdown reads an
/// unescaped one as the end of the cell, shifting the row), line breaks and other control
/// characters as spaces. Every table ranklab writes in Markdown (reports, the gate's table and
/// `$GITHUB_STEP_SUMMARY`) passes its text cells through it.
pub fn md_cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A GitHub-flavoured Markdown table.
pub fn markdown(t: &Table) -> String {
    let esc = md_cell;
    let names: Vec<String> = t.columns.iter().map(|c| esc(&c.name)).collect();
    let mut s = format!("| {} |\n", names.join(" | "));
    let aligns: Vec<&str> = t
        .columns
        .iter()
        .map(|c| if c.numeric { "---:" } else { "---" })
        .collect();
    s.push_str(&format!("|{}|\n", aligns.join("|")));
    for row in t.rows() {
        let row: Vec<String> = row.map(|c| esc(&cell(c))).collect();
        s.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    s
}

/// RFC 4180 CSV with a header line (`\n` line ends; a field is quoted only when it holds a
/// comma, a quote or a line break).
pub fn csv(t: &Table) -> Result<String> {
    let mut w = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(t.columns.iter().map(|c| c.name.as_str()))?;
    for row in t.rows() {
        w.write_record(row.map(cell))?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// JSON array of row objects; keys in column order; floats rounded to 4 decimals.
pub fn json_rows(t: &Table) -> serde_json::Value {
    let rows = t.rows().map(|row| {
        let obj = t.columns.iter().zip(row).map(|(c, v)| {
            let v = match v {
                Cell::Null => serde_json::Value::Null,
                Cell::Float(x) => round4(*x),
                Cell::Int(n) => (*n).into(),
                Cell::Text(s) => s.as_str().into(),
            };
            (c.name.clone(), v)
        });
        serde_json::Value::Object(obj.collect())
    });
    serde_json::Value::Array(rows.collect())
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

    fn sample() -> Table {
        Table::new(vec![
            Column::new("configuration", vec!["a|b", "c,\"d\""]),
            Column::new("MRR", vec![0.5f64, 1.0 / 3.0]),
            Column::new("n", vec![Some(3u32), None]),
        ])
        .unwrap()
    }

    #[test]
    fn renders_all_three_formats() {
        // Expected bytes written by hand from GFM's and RFC 4180's rules.
        assert_eq!(
            markdown(&sample()),
            "| configuration | MRR | n |\n|---|---:|---:|\n| a\\|b | 0.5000 | 3 |\n| c,\"d\" | 0.3333 |  |\n"
        );
        assert_eq!(
            csv(&sample()).unwrap(),
            "configuration,MRR,n\na|b,0.5000,3\n\"c,\"\"d\"\"\",0.3333,\n"
        );
        let j = json_rows(&sample());
        assert_eq!(j[1]["MRR"], serde_json::json!(0.3333));
        assert_eq!(j[1]["n"], serde_json::Value::Null);
        assert_eq!(j[0]["n"], serde_json::json!(3));
    }

    #[test]
    fn refuses_a_repeated_name_and_unequal_heights() {
        let e = Table::new(vec![
            Column::new("x", vec![1.0f64]),
            Column::new("x", vec![2.0f64]),
        ])
        .unwrap_err();
        assert!(
            e.to_string().contains("two table columns named \"x\""),
            "{e}"
        );
        let e = Table::new(vec![
            Column::new("x", vec![1.0f64]),
            Column::new("y", vec![2.0f64, 3.0]),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("has 2 rows"), "{e}");
    }
}
