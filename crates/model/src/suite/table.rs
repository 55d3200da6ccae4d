//! A suite's table: rows (the conditions) by columns (the figures), each cell every run's
//! value with their median and spread. Columns carry their unit in their key, as every
//! figure in sinkrate's JSON does.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    BytesPerS,
    Seconds,
    Bytes,
    Count,
    PerS,
    /// A plain ratio (device bytes per frame byte).
    Ratio,
    Percent,
}

/// Which way is better, for whoever highlights a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
    Neither,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// The JSON key of the figure, its unit in the name (`write_bytes_per_s`).
    pub key: String,
    /// The heading a person reads.
    pub title: String,
    pub unit: Unit,
    pub better: Better,
}

impl Column {
    pub fn new(key: &str, title: &str, unit: Unit, better: Better) -> Column {
        Column {
            key: key.into(),
            title: title.into(),
            unit,
            better,
        }
    }
}

/// One figure of one row: every run's value, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub values: Vec<f64>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Why the cell is empty (not measurable here), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

impl Cell {
    pub fn push(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.values.push(v);
        let mut sorted = self.values.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        self.median = Some(if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        });
        self.min = sorted.first().copied();
        self.max = sorted.last().copied();
    }

    /// The spread as a share of the median, for a note when runs disagree.
    pub fn spread_ratio(&self) -> Option<f64> {
        let (lo, hi, m) = (self.min?, self.max?, self.median?);
        (m.abs() > f64::EPSILON).then(|| (hi - lo) / m.abs())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub label: String,
    /// What the condition is, in words.
    pub about: String,
    /// A remark printed beside the row (the size the device reports as optimal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// Why the whole row could not be measured here (a filesystem the kernel lacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// One per column, in the columns' order.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    pub fn new(title: &str, columns: Vec<Column>) -> Table {
        Table {
            title: title.into(),
            columns,
            rows: Vec::new(),
        }
    }

    /// The row labelled `label`, added (empty) if it is not there yet.
    pub fn row(&mut self, label: &str, about: &str) -> &mut Row {
        let i = match self.rows.iter().position(|r| r.label == label) {
            Some(i) => i,
            None => {
                self.rows.push(Row {
                    label: label.into(),
                    about: about.into(),
                    mark: None,
                    not_run: None,
                    cells: vec![Cell::default(); self.columns.len()],
                });
                self.rows.len() - 1
            }
        };
        &mut self.rows[i]
    }

    /// Adds one run's figure of `key` to the row labelled `label`.
    pub fn add(&mut self, label: &str, key: &str, value: f64) {
        let Some(col) = self.columns.iter().position(|c| c.key == key) else {
            return;
        };
        if let Some(row) = self.rows.iter_mut().find(|r| r.label == label) {
            row.cells[col].push(value);
        }
    }

    /// The median of `key` in the row labelled `label`.
    pub fn median(&self, label: &str, key: &str) -> Option<f64> {
        let col = self.columns.iter().position(|c| c.key == key)?;
        self.rows
            .iter()
            .find(|r| r.label == label)?
            .cells
            .get(col)?
            .median
    }

    /// Marks a row as not measurable, with the reason.
    pub fn not_run(&mut self, label: &str, about: &str, why: &str) {
        let row = self.row(label, about);
        row.not_run = Some(why.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_keep_every_run_and_their_median_and_spread() {
        let mut c = Cell::default();
        for v in [3.0, 1.0, 2.0, f64::NAN] {
            c.push(v);
        }
        assert_eq!(c.values, vec![3.0, 1.0, 2.0]);
        assert_eq!((c.median, c.min, c.max), (Some(2.0), Some(1.0), Some(3.0)));
        c.push(4.0);
        assert_eq!(c.median, Some(2.5));
        assert_eq!(c.spread_ratio(), Some(1.2));
    }

    #[test]
    fn figures_land_in_their_row_and_column() {
        let mut t = Table::new(
            "t",
            vec![
                Column::new("a_bytes_per_s", "A", Unit::BytesPerS, Better::Higher),
                Column::new("b_s", "B", Unit::Seconds, Better::Lower),
            ],
        );
        t.row("x", "");
        t.add("x", "b_s", 0.5);
        t.add("x", "nope", 1.0);
        t.add("y", "b_s", 1.0);
        assert_eq!(t.median("x", "b_s"), Some(0.5));
        assert_eq!(t.median("x", "a_bytes_per_s"), None);
        assert_eq!(t.rows.len(), 1);
    }
}
