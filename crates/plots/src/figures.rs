//! What a report shows, independent of how it is drawn: sections of words and tables per
//! run, and charts whose series point into shared numeric columns. The HTML page and the
//! PNG files are two renderings of one [`Page`].

use serde::Serialize;

/// A numeric column: one value per point, `None` where there is none (a gap).
#[derive(Debug, Clone, Default)]
pub struct Column {
    pub values: Vec<Option<f64>>,
    /// Fixed decimals (times: 3, a millisecond); None: four significant digits, plenty for
    /// a plot and a third of the bytes of full precision.
    pub decimals: Option<u8>,
}

impl Column {
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Column {
        Column {
            values: values.into_iter().collect(),
            decimals: None,
        }
    }
    /// Seconds, kept to the millisecond.
    pub fn time(values: impl IntoIterator<Item = f64>) -> Column {
        Column {
            decimals: Some(3),
            ..Column::dense(values)
        }
    }
    pub fn dense(values: impl IntoIterator<Item = f64>) -> Column {
        Column::of(values.into_iter().map(Some))
    }
    pub fn is_empty_of_values(&self) -> bool {
        self.values.iter().all(Option::is_none)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    Line,
    /// A threshold: dashed, drawn through gaps.
    Limit,
    /// Values that hold until the next (a step line).
    Step,
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub label: String,
    /// Index of the run it belongs to (its colour family).
    pub run: usize,
    /// Indexes into [`Page::columns`].
    pub x: usize,
    pub y: usize,
    pub style: Style,
}

/// A shaded stretch of the x axis (writers throttled).
#[derive(Debug, Clone, Serialize)]
pub struct Band {
    pub run: usize,
    pub from: f64,
    pub to: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    Drop,
    Stall,
}

/// A moment on the x axis: a dropped frame, or a stall with its number in the list below
/// the chart.
#[derive(Debug, Clone, Serialize)]
pub struct Mark {
    pub run: usize,
    pub x: f64,
    pub kind: MarkKind,
    pub label: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    /// Stable, for tests and file names (`throughput`, `page_cache`, ...).
    pub id: String,
    pub title: String,
    /// What the chart says, in a sentence under its title.
    pub caption: String,
    pub x_label: String,
    pub y_label: String,
    /// Charts over the run's time zoom and pan together.
    pub x_is_time: bool,
    pub x_log: bool,
    pub y_log: bool,
    pub series: Vec<Series>,
    pub bands: Vec<Band>,
    pub marks: Vec<Mark>,
    /// Lines of annotation under the chart (what the sampler saw at each stall).
    pub notes: Vec<String>,
}

impl Chart {
    pub fn new(id: &str, title: &str, x_label: &str, y_label: &str) -> Chart {
        Chart {
            id: id.into(),
            title: title.into(),
            caption: String::new(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_is_time: x_label.starts_with("time"),
            x_log: false,
            y_log: false,
            series: Vec::new(),
            bands: Vec::new(),
            marks: Vec::new(),
            notes: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Neutral,
}

/// The answer first: the verdict in words.
#[derive(Debug, Clone, Serialize)]
pub struct Headline {
    pub verdict: String,
    pub tone: Tone,
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub severity: String,
    pub id: String,
    pub title: String,
    pub why: String,
    pub fix: Vec<String>,
}

/// One input file's words: verdict, findings, tables, configuration and host.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub label: String,
    pub file: String,
    pub kind: String,
    pub headline: Option<Headline>,
    pub warnings: Vec<String>,
    pub findings: Vec<Finding>,
    pub tables: Vec<Table>,
    /// Configuration and host, as key/value pairs.
    pub facts: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Page {
    pub title: String,
    pub sections: Vec<Section>,
    pub charts: Vec<Chart>,
    #[serde(skip)]
    pub columns: Vec<Column>,
}

impl Page {
    /// Adds a column and returns its index.
    pub fn column(&mut self, c: Column) -> usize {
        self.columns.push(c);
        self.columns.len() - 1
    }

    /// The chart `id`, created by `make` the first time a run asks for it, so several runs
    /// overlay their series in one chart.
    pub fn chart(&mut self, id: &str, make: impl FnOnce() -> Chart) -> &mut Chart {
        let i = match self.charts.iter().position(|c| c.id == id) {
            Some(i) => i,
            None => {
                self.charts.push(make());
                self.charts.len() - 1
            }
        };
        &mut self.charts[i]
    }

    /// Adds a series of `x`/`y` to chart `id`, unless `y` has no value at all.
    pub fn series(
        &mut self,
        chart: (&str, fn() -> Chart),
        run: usize,
        label: String,
        x: usize,
        y: Column,
        style: Style,
    ) {
        if y.is_empty_of_values() {
            return;
        }
        let y = self.column(y);
        self.chart(chart.0, chart.1).series.push(Series {
            label,
            run,
            x,
            y,
            style,
        });
    }
}
