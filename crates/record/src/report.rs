//! The typed result of a recording: what `sinkrate record --output-format json` prints
//! (inside the run envelope) and what `check`, `find-max` and later `compare` and `tune`
//! read back. Every figure carries its unit in its key.

pub use sinkrate_model::record::{
    DirtyLimits, FrameColumns, Interval, RecordReport, RecordRun, RestoredSetting, SamplerSection,
    StallReport, StreamReport, Totals,
};
