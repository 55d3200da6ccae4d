//! The page as one self-contained HTML file: words rendered here (readable without
//! scripts), charts drawn by uPlot (a small, fast canvas library for large time series,
//! vendored under `assets/uplot` with its licence) from columns embedded as JSON. A
//! Content-Security-Policy forbids any request, so the file behaves the same from an email
//! attachment, a CI artifact or a laptop without network.

use std::fmt::Write;

use crate::figures::{Column, Headline, Page, Section, Table, Tone};

const UPLOT_JS: &str = include_str!("../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uplot/uPlot.min.css");
const REPORT_JS: &str = include_str!("../assets/report.js");
const REPORT_CSS: &str = include_str!("../assets/report.css");

/// No request of any kind: scripts and styles are inline, images are data: URLs.
pub const CSP: &str =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

pub fn render(page: &Page, tool_version: &str) -> String {
    let mut out = String::with_capacity(256 * 1024 + page.columns.len() * 64);
    out.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{}</title>", esc(&page.title));
    let _ = writeln!(out, "<style>{UPLOT_CSS}\n{REPORT_CSS}</style></head><body>");
    let _ = writeln!(out, "<header><h1>{}</h1>", esc(&page.title));
    let _ = writeln!(
        out,
        "<p class=\"meta\">written by sinkrate {} from {}</p></header>",
        esc(tool_version),
        esc(&page
            .sections
            .iter()
            .map(|s| s.file.as_str())
            .collect::<Vec<_>>()
            .join(", "))
    );
    out.push_str("<main>\n<section class=\"answers\">\n");
    for s in &page.sections {
        answer(&mut out, s, page.sections.len() > 1);
    }
    out.push_str("</section>\n");
    if !page.charts.is_empty() {
        out.push_str("<section class=\"charts\"><h2>What happened</h2>\n<p class=\"hint\">Drag across a chart to zoom in time (charts over time follow), up or down to zoom its values; shift-drag to pan; Ctrl or Alt with the wheel to zoom around the cursor; double-click to zoom out. The legend under each chart shows the values under the cursor.</p>\n");
        for (i, c) in page.charts.iter().enumerate() {
            let _ = write!(
                out,
                "<figure class=\"chart\" id=\"chart-{}\" data-chart=\"{i}\" data-x-label=\"{}\" data-y-label=\"{}\"><figcaption><strong>{}</strong> {}</figcaption><div class=\"plot\"></div>",
                esc(&c.id),
                esc(&c.x_label),
                esc(&c.y_label),
                esc(&c.title),
                esc(&c.caption)
            );
            list(&mut out, "notes", &c.notes);
            out.push_str("</figure>\n");
        }
        out.push_str("<noscript><p>The charts need JavaScript; everything else on this page does not.</p></noscript>\n</section>\n");
    }
    for s in &page.sections {
        details(&mut out, s, page.sections.len() > 1);
    }
    out.push_str("</main>\n<pre id=\"selftest\" hidden></pre>\n");
    let page_json = serde_json::to_string(page).unwrap_or_else(|_| "{}".into());
    let _ = writeln!(
        out,
        "<script id=\"page\" type=\"application/json\">{}</script>",
        script_safe(&page_json)
    );
    out.push_str("<script id=\"columns\" type=\"application/json\">");
    columns_json(&mut out, &page.columns);
    out.push_str("</script>\n");
    let _ = writeln!(out, "<script>{UPLOT_JS}</script>");
    let _ = writeln!(out, "<script>{REPORT_JS}</script>");
    out.push_str("</body></html>\n");
    out
}

fn tone_class(t: Tone) -> &'static str {
    match t {
        Tone::Good => "good",
        Tone::Warn => "warn",
        Tone::Bad => "bad",
        Tone::Neutral => "neutral",
    }
}

fn answer(out: &mut String, s: &Section, several: bool) {
    let _ = write!(out, "<div class=\"answer\" data-kind=\"{}\">", esc(&s.kind));
    if several {
        let _ = write!(
            out,
            "<h2>{} <span class=\"kind\">{}</span></h2>",
            esc(&s.label),
            esc(&s.kind)
        );
    } else {
        let _ = write!(out, "<p class=\"kind\">{} run</p>", esc(&s.kind));
    }
    if let Some(Headline {
        verdict,
        tone,
        lines,
    }) = &s.headline
    {
        let _ = write!(
            out,
            "<p class=\"verdict {}\">{}</p>",
            tone_class(*tone),
            esc(verdict)
        );
        list(out, "lines", lines);
    }
    if !s.warnings.is_empty() {
        out.push_str("<div class=\"warnings\"><strong>How far to trust these figures</strong>");
        list(out, "", &s.warnings);
        out.push_str("</div>");
    }
    out.push_str("</div>\n");
}

/// A bulleted list of `items` (nothing when there are none).
fn list(out: &mut String, class: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    if class.is_empty() {
        out.push_str("<ul>");
    } else {
        let _ = write!(out, "<ul class=\"{class}\">");
    }
    for item in items {
        let _ = write!(out, "<li>{}</li>", esc(item));
    }
    out.push_str("</ul>");
}

fn details(out: &mut String, s: &Section, several: bool) {
    let _ = write!(
        out,
        "<section class=\"details\"><h2>{}</h2>",
        if several {
            format!("{}: findings, tables, configuration", esc(&s.label))
        } else {
            "Findings, tables, configuration".to_string()
        }
    );
    if !s.findings.is_empty() {
        out.push_str("<h3>Findings and their fixes</h3><table class=\"findings\"><thead><tr><th>severity</th><th>finding</th><th>why</th><th>fix</th></tr></thead><tbody>");
        for f in &s.findings {
            let _ = write!(
                out,
                "<tr class=\"sev-{}\"><td>{}</td><td><code>{}</code><br>{}</td><td>{}</td><td>",
                esc(&f.severity),
                esc(&f.severity),
                esc(&f.id),
                esc(&f.title),
                esc(&f.why)
            );
            for line in &f.fix {
                let _ = write!(out, "<div><code>{}</code></div>", esc(line));
            }
            out.push_str("</td></tr>");
        }
        out.push_str("</tbody></table>\n");
    }
    for t in &s.tables {
        table(out, t);
    }
    if !s.facts.is_empty() {
        out.push_str("<h3>Configuration and host</h3><table class=\"facts\"><tbody>");
        for (k, v) in &s.facts {
            let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
        }
        let _ = write!(out, "<tr><th>file</th><td>{}</td></tr>", esc(&s.file));
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>\n");
}

fn table(out: &mut String, t: &Table) {
    let _ = write!(
        out,
        "<h3>{}</h3><div class=\"scroll\"><table><thead><tr>",
        esc(&t.title)
    );
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
}

pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// JSON inside a <script> element: every `<`, `>` and `&` written as a JSON escape, so no
/// text (a job name holding `</script>` or `<!--<script>`) can end the element early or put
/// the HTML parser in its "double escaped" state, which swallows the rest of the page. U+2028
/// and U+2029 are escaped too (older script parsers end a line there). These characters
/// occur in JSON only inside strings, where the escapes mean the same characters.
fn script_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Columns as a JSON array of arrays, numbers as short as their precision allows.
fn columns_json(out: &mut String, columns: &[Column]) {
    out.push('[');
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        for (j, v) in c.values.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            match v {
                Some(v) if v.is_finite() => number(out, *v, c.decimals),
                _ => out.push_str("null"),
            }
        }
        out.push(']');
    }
    out.push(']');
}

fn number(out: &mut String, v: f64, decimals: Option<u8>) {
    let d = match decimals {
        Some(d) => d as usize,
        None if v == 0.0 => 0,
        None => (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize,
    };
    let start = out.len();
    let _ = write!(out, "{v:.d$}");
    if out[start..].contains('.') {
        while out.ends_with('0') {
            out.pop();
        }
        if out.ends_with('.') {
            out.pop();
        }
    }
    if &out[start..] == "-0" {
        out.truncate(start);
        out.push('0');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(v: f64, d: Option<u8>) -> String {
        let mut s = String::new();
        number(&mut s, v, d);
        s
    }

    #[test]
    fn numbers_keep_four_significant_digits_and_times_a_millisecond() {
        assert_eq!(fmt(1234.5678, None), "1235");
        assert_eq!(fmt(12.345678, None), "12.35");
        assert_eq!(fmt(0.0012346, None), "0.001235");
        assert_eq!(fmt(0.0, None), "0");
        assert_eq!(fmt(3.0, None), "3");
        assert_eq!(fmt(3599.1234, Some(3)), "3599.123");
        assert_eq!(fmt(2.5, Some(3)), "2.5");
        assert_eq!(fmt(-0.0001, Some(3)), "0");
    }

    #[test]
    fn text_is_escaped_and_scripts_cannot_be_closed_early() {
        assert_eq!(
            esc("<b>\"x\" & 'y'"),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;"
        );
        let name = "{\"a\":\"<!--<script> & </script>\u{2028}\"}";
        let safe = script_safe(name);
        assert_eq!(
            safe,
            "{\"a\":\"\\u003c!--\\u003cscript\\u003e \\u0026 \\u003c/script\\u003e\\u2028\"}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        let orig: serde_json::Value = serde_json::from_str(name).expect("JSON");
        assert_eq!(back, orig);
    }

    #[test]
    fn the_vendored_library_closes_no_script_element() {
        assert!(!UPLOT_JS.contains("</script"));
        assert!(!REPORT_JS.contains("</script"));
    }
}
