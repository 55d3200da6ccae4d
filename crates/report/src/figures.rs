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
    /// The top of the y axis when the data alone would be crushed by far-away thresholds
    /// (named in `notes` instead).
    pub y_max: Option<f64>,
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
            y_max: None,
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

    /// A chart whose data stays below a quarter of its lowest threshold shows the data, and
    /// names the thresholds above the chart: 100 MB of dirty data under a 4.9 GB limit is
    /// otherwise a flat line at the bottom.
    pub fn fit_limits(&mut self) {
        let columns = &self.columns;
        let max_of = |i: usize| {
            columns[i]
                .values
                .iter()
                .flatten()
                .copied()
                .fold(f64::NAN, f64::max)
        };
        for chart in &mut self.charts {
            let data_max = chart
                .series
                .iter()
                .filter(|s| s.style != Style::Limit)
                .map(|s| max_of(s.y))
                .fold(f64::NAN, f64::max);
            let limits: Vec<(&str, f64)> = chart
                .series
                .iter()
                .filter(|s| s.style == Style::Limit)
                .map(|s| (s.label.as_str(), max_of(s.y)))
                .filter(|(_, v)| v.is_finite())
                .collect();
            let lowest = limits.iter().map(|(_, v)| *v).fold(f64::NAN, f64::min);
            if !(data_max > 0.0 && data_max < 0.25 * lowest) {
                continue;
            }
            chart.y_max = Some(data_max * 1.3);
            let unit = chart
                .y_label
                .rsplit_once('(')
                .map(|(_, u)| u.trim_end_matches(')').to_string())
                .unwrap_or_default();
            chart.notes.insert(
                0,
                format!(
                    "Above the chart's scale: {}.",
                    limits
                        .iter()
                        .map(|(l, v)| format!("{l} {v:.0} {unit}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chart_with(page: &mut Page, data: f64, limit: f64) {
        let x = page.column(Column::time([0.0, 1.0]));
        let make: fn() -> Chart = || Chart::new("c", "c", "time (s)", "data (MB)");
        page.series(
            ("c", make),
            0,
            "dirty".into(),
            x,
            Column::dense([0.0, data]),
            Style::Line,
        );
        page.series(
            ("c", make),
            0,
            "hard limit".into(),
            x,
            Column::dense([limit, limit]),
            Style::Limit,
        );
    }

    #[test]
    fn far_thresholds_are_named_not_drawn_flat() {
        let mut page = Page::default();
        chart_with(&mut page, 100.0, 4900.0);
        page.fit_limits();
        assert_eq!(page.charts[0].y_max, Some(130.0));
        assert_eq!(
            page.charts[0].notes[0],
            "Above the chart's scale: hard limit 4900 MB."
        );
    }

    #[test]
    fn near_thresholds_stay_on_the_chart() {
        let mut page = Page::default();
        chart_with(&mut page, 3000.0, 4900.0);
        page.fit_limits();
        assert_eq!(page.charts[0].y_max, None);
        assert!(page.charts[0].notes.is_empty());
    }
}
