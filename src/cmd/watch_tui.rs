//! `sinkrate watch --tui`: a full-screen live view (ratatui) on standard error, so standard
//! output still carries the summary or JSON when the view closes.

use std::io::Stderr;
use std::time::Duration;

use anyhow::Result;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::ExecutableCommand;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Sparkline};
use ratatui::Terminal;
use sinkrate_model::timeline::{Hog, Sample};

pub struct Tui {
    terminal: Terminal<CrosstermBackend<Stderr>>,
}

/// What the view shows besides the timeline.
pub struct Frame<'a> {
    pub elapsed: Duration,
    pub devices: &'a str,
    pub throttled_seconds: f64,
    pub hogs: &'a [Hog],
    pub command: &'a str,
}

fn gb(b: Option<u64>) -> String {
    b.map(|v| format!("{:.2} GB", v as f64 / 1e9))
        .unwrap_or_else(|| "-".into())
}

impl Tui {
    pub fn start() -> Result<Tui> {
        enable_raw_mode()?;
        let mut stderr = std::io::stderr();
        if let Err(e) = stderr.execute(EnterAlternateScreen) {
            let _ = disable_raw_mode();
            return Err(e.into());
        }
        let terminal = Terminal::new(CrosstermBackend::new(stderr))?;
        Ok(Tui { terminal })
    }

    /// True when the user asked to quit (q, Esc or Ctrl-C; raw mode turns Ctrl-C into a key).
    pub fn quit_requested(&mut self) -> bool {
        while event::poll(Duration::ZERO).unwrap_or(false) {
            if let Ok(Event::Key(k)) = event::read() {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                    return true;
                }
            }
        }
        false
    }

    pub fn draw(&mut self, timeline: &[Sample], f: &Frame<'_>) -> Result<()> {
        let Some(now) = timeline.last() else {
            return Ok(());
        };
        self.terminal.draw(|frame| {
            let rows = Layout::vertical([
                Constraint::Length(3),
                Constraint::Length(4),
                Constraint::Length(6),
                Constraint::Length(6),
                Constraint::Min(3),
            ])
            .split(frame.area());
            let pct = now.ceiling_pct().unwrap_or(0.0);
            let color = if now.throttled {
                Color::Red
            } else if pct > 75.0 {
                Color::Yellow
            } else {
                Color::Green
            };
            let title = format!(
                " sinkrate watch {:02}:{:02}{}  (q quits) ",
                f.elapsed.as_secs() / 60,
                f.elapsed.as_secs() % 60,
                if f.command.is_empty() { String::new() } else { format!("  {}", f.command) }
            );
            let gauge = Gauge::default()
                .block(Block::default().borders(Borders::ALL).title(title))
                .gauge_style(Style::default().fg(color))
                .ratio((pct / 100.0).clamp(0.0, 1.0))
                .label(format!(
                    "dirty + writeback {} of the freerun ceiling {} ({pct:.0}%){}",
                    gb(now.dirty_writeback_bytes()),
                    gb(now.freerun_ceiling_bytes),
                    if now.throttled { "  THROTTLED" } else { "" }
                ));
            frame.render_widget(gauge, rows[0]);
            let text = vec![
                Line::from(format!(
                    "avail {}   dirty {}   writeback {}   thresholds: background {}, hard {}",
                    gb(now.mem_available_bytes),
                    gb(now.dirty_bytes),
                    gb(now.writeback_bytes),
                    gb(now.background_threshold_bytes),
                    gb(now.dirty_threshold_bytes)
                )),
                Line::from(format!(
                    "{}: read {:.1} MB/s  write {:.1} MB/s  util {:.0}%   cpu iowait {:.0}%   io stall {:.0}%   throttled {:.1} s so far",
                    f.devices,
                    now.disk_read_bytes_per_s.unwrap_or(0.0) / 1e6,
                    now.disk_write_bytes_per_s.unwrap_or(0.0) / 1e6,
                    now.disk_util_pct.unwrap_or(0.0),
                    now.cpu_iowait_pct.unwrap_or(0.0),
                    now.psi_io_some_pct.unwrap_or(0.0),
                    f.throttled_seconds
                )),
            ];
            frame.render_widget(Paragraph::new(text).block(Block::default().borders(Borders::ALL).title(" now ")), rows[1]);
            let width = rows[2].width.saturating_sub(2) as usize;
            let recent = &timeline[timeline.len().saturating_sub(width)..];
            let writes: Vec<u64> = recent.iter().map(|s| (s.disk_write_bytes_per_s.unwrap_or(0.0) / 1e6) as u64).collect();
            let max_w = writes.iter().copied().max().unwrap_or(0);
            frame.render_widget(
                Sparkline::default()
                    .block(Block::default().borders(Borders::ALL).title(format!(" {} write MB/s (max {max_w}) ", f.devices)))
                    .data(&writes)
                    .style(Style::default().fg(Color::Cyan)),
                rows[2],
            );
            let dirty: Vec<u64> = recent.iter().map(|s| s.dirty_writeback_bytes().unwrap_or(0) >> 20).collect();
            frame.render_widget(
                Sparkline::default()
                    .block(Block::default().borders(Borders::ALL).title(format!(
                        " dirty + writeback MiB (ceiling {} MiB) ",
                        now.freerun_ceiling_bytes.unwrap_or(0) >> 20
                    )))
                    .data(&dirty)
                    .max(now.freerun_ceiling_bytes.unwrap_or(0) >> 20)
                    .style(Style::default().fg(color)),
                rows[3],
            );
            let hogs: Vec<Line> = f
                .hogs
                .iter()
                .map(|h| {
                    Line::from(format!(
                        "{:>7}  {:<32} {:>8.1} CPU s  peak {:>4.0}%  wrote {:>8.1} MB",
                        h.pid,
                        h.name,
                        h.cpu_seconds,
                        h.peak_cpu_pct,
                        h.write_bytes as f64 / 1e6
                    ))
                })
                .collect();
            frame.render_widget(Paragraph::new(hogs).block(Block::default().borders(Borders::ALL).title(" top CPU ")), rows[4]);
        })?;
        Ok(())
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = disable_raw_mode();
        let _ = self.terminal.backend_mut().execute(LeaveAlternateScreen);
        let _ = self.terminal.show_cursor();
    }
}
