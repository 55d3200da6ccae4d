//! `record --frames-log FILE`: one CSV row per frame, in capture order per stream.

use anyhow::Result;
use sinkrate_model::record::RecordRun;

use super::Exporter;

pub struct FramesCsv;

impl Exporter<RecordRun> for FramesCsv {
    fn export(&self, run: &RecordRun) -> Result<Vec<u8>> {
        let mut out = csv::Writer::from_writer(Vec::new());
        out.write_record([
            "stream",
            "frame",
            "size_bytes",
            "capture_s",
            "write_start_s",
            "write_end_s",
            "dropped",
        ])?;
        let s = |us: Option<u64>| {
            us.map(|v| format!("{:.6}", v as f64 / 1e6))
                .unwrap_or_default()
        };
        for c in &run.result.frames {
            for i in 0..c.frame.len() {
                out.write_record([
                    c.stream.clone(),
                    c.frame[i].to_string(),
                    c.size_bytes[i].to_string(),
                    s(Some(c.capture_us[i])),
                    s(c.write_start_us[i]),
                    s(c.write_end_us[i]),
                    u8::from(c.write_end_us[i].is_none()).to_string(),
                ])?;
            }
        }
        out.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
    }
}
