//! The main charts as PNG images for tickets and slides, drawn with plotters into a bitmap
//! with a vendored font (DejaVu Sans Mono, `assets/fonts`) through ab_glyph: pure Rust, no
//! fontconfig or freetype, so static builds draw the same pictures. The bitmap is encoded
//! by the `png` crate here and the bytes handed back: the command writes them as it writes
//! every output (plotters' own file encoder would open the path itself, and brings a whole
//! image library, JPEG decoder included, into the board build).

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::figures::{Chart, MarkKind, Page, Style};

const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSansMono-subset.ttf");
const WIDTH: u32 = 1200;
const HEIGHT: u32 = 480;
const COLOURS: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x7f, 0x7f, 0x7f),
];

#[derive(Debug, thiserror::Error)]
pub enum PngError {
    #[error("{chart}: {what}")]
    Draw { chart: String, what: String },
    #[error("the vendored font cannot be read")]
    Font,
}

/// One chart's picture: its file name (`ID.png`) and the PNG's bytes.
pub struct Picture {
    pub file_name: String,
    pub png: Vec<u8>,
}

/// Each chart of `page` with a series, drawn and encoded as PNG.
pub fn render_all(page: &Page) -> Result<Vec<Picture>, PngError> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if !ok {
        return Err(PngError::Font);
    }
    let mut pictures = Vec::new();
    for chart in &page.charts {
        if chart.series.is_empty() {
            continue;
        }
        let failed = |what: String| PngError::Draw {
            chart: chart.id.to_string(),
            what,
        };
        let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
        if !draw(page, chart, &mut rgb).map_err(failed)? {
            continue;
        }
        pictures.push(Picture {
            file_name: format!("{}.png", chart.id),
            png: encode(&rgb).map_err(|e| failed(e.to_string()))?,
        });
    }
    Ok(pictures)
}

/// An RGB bitmap of WIDTH x HEIGHT as PNG.
fn encode(rgb: &[u8]) -> Result<Vec<u8>, png::EncodingError> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(bytes)
}

/// A series' points on the chart's axes (log axes as log10), split at gaps, at most a
/// few points per pixel column (each column's first, lowest, highest and last).
fn segments(page: &Page, chart: &Chart, i: usize) -> Vec<Vec<(f64, f64)>> {
    let s = &chart.series[i];
    let xs = &page.columns[s.x].values;
    let ys = &page.columns[s.y].values;
    let tx = |v: f64| if chart.x_log { v.max(1e-3).log10() } else { v };
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (x, y) in xs.iter().zip(ys) {
        match (x, y) {
            (Some(x), Some(y)) if !(chart.y_log && *y <= 0.0) => {
                let y = if chart.y_log { y.log10() } else { *y };
                if let Some(seg) = out.last_mut() {
                    seg.push((tx(*x), y));
                }
            }
            (_, None) if s.style == Style::Line && out.last().is_some_and(|s| !s.is_empty()) => {
                out.push(Vec::new());
            }
            _ => {}
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn decimate(seg: Vec<(f64, f64)>, x0: f64, x1: f64) -> Vec<(f64, f64)> {
    let columns = WIDTH as usize;
    if seg.len() <= columns * 4 || x1 <= x0 {
        return seg;
    }
    let mut out = Vec::with_capacity(columns * 4);
    let col = |x: f64| (((x - x0) / (x1 - x0)) * columns as f64) as i64;
    let mut i = 0;
    while i < seg.len() {
        let c = col(seg[i].0);
        let start = i;
        let (mut lo, mut hi) = (seg[i], seg[i]);
        while i < seg.len() && col(seg[i].0) == c {
            if seg[i].1 < lo.1 {
                lo = seg[i];
            }
            if seg[i].1 > hi.1 {
                hi = seg[i];
            }
            i += 1;
        }
        let mut pts = [seg[start], lo, hi, seg[i - 1]];
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        out.extend(pts);
    }
    out
}

/// Draws `chart` into `rgb`; false when it has no point to draw.
fn draw(page: &Page, chart: &Chart, rgb: &mut [u8]) -> Result<bool, String> {
    let all: Vec<Vec<Vec<(f64, f64)>>> = (0..chart.series.len())
        .map(|i| segments(page, chart, i))
        .collect();
    let pts = all.iter().flatten().flatten();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in pts {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if x0 > x1 {
        return Ok(false);
    }
    if !chart.y_log {
        y0 = y0.min(0.0);
        y1 = match chart.y_max {
            Some(top) => top,
            None if y1 > 0.0 => y1 * 1.05,
            None => 1.0,
        };
    } else if y1 - y0 < 1.0 {
        y0 -= 0.5;
        y1 += 0.5;
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let root = BitMapBackend::with_buffer(rgb, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut c = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| e.to_string())?;
    let pow = |v: &f64| {
        let p = 10f64.powf(*v);
        if p >= 100.0 {
            format!("{p:.0}")
        } else if p >= 1.0 {
            format!("{p:.1}")
        } else {
            format!("{p:.3}")
        }
    };
    let plain = |v: &f64| {
        if v.abs() >= 100.0 || *v == v.trunc() {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    let x_fmt = |v: &f64| if chart.x_log { pow(v) } else { plain(v) };
    let y_fmt = |v: &f64| if chart.y_log { pow(v) } else { plain(v) };
    c.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(|e| e.to_string())?;
    for b in &chart.bands {
        c.draw_series(std::iter::once(Rectangle::new(
            [(b.from, y0), (b.to, y1)],
            RGBColor(0xcf, 0x22, 0x2e).mix(0.13).filled(),
        )))
        .map_err(|e| e.to_string())?;
    }
    for (i, segs) in all.into_iter().enumerate() {
        let s = &chart.series[i];
        let colour = COLOURS[i % COLOURS.len()];
        let style = colour.stroke_width(if s.style == Style::Limit { 1 } else { 2 });
        let mut first = true;
        for seg in segs {
            let seg = decimate(seg, x0, x1);
            let anno = if s.style == Style::Limit {
                c.draw_series(DashedLineSeries::new(seg, 8, 5, style))
            } else {
                c.draw_series(LineSeries::new(seg, style))
            }
            .map_err(|e| e.to_string())?;
            if first {
                anno.label(s.label.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
                first = false;
            }
        }
    }
    let tick = (y1 - y0) * 0.04;
    for m in &chart.marks {
        if m.x < x0 || m.x > x1 {
            continue;
        }
        match m.kind {
            MarkKind::Drop => c.draw_series(std::iter::once(PathElement::new(
                vec![(m.x, y1), (m.x, y1 - tick)],
                RGBColor(0xcf, 0x22, 0x2e).stroke_width(1),
            ))),
            MarkKind::Stall => c.draw_series(std::iter::once(PathElement::new(
                vec![(m.x, y0), (m.x, y1)],
                BLACK.mix(0.6).stroke_width(1),
            ))),
        }
        .map_err(|e| e.to_string())?;
        if m.kind == MarkKind::Stall {
            let label = m.label.rsplit(": ").next().unwrap_or(&m.label).to_string();
            c.draw_series(std::iter::once(Text::new(
                label,
                (m.x, y1 - 2.0 * tick),
                ("sans-serif", 13),
            )))
            .map_err(|e| e.to_string())?;
        }
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(true)
}
