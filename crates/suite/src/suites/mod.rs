//! One module per suite; this one sends a config to its suite.

pub mod background_load;
pub mod capture_buffers;
pub mod filesystems;
pub mod metadata;
pub mod page_cache;
pub mod power_cut;
pub mod pregrow;
pub mod record_size;
pub mod recording;

use crate::{assumed_rate, Ctx, SuiteConfig, SuiteError, SuiteName};
use sinkrate_model::suite::table::Table;

pub fn estimate_s(cfg: &SuiteConfig) -> f64 {
    let rate = assumed_rate(&cfg.dir);
    match cfg.suite {
        SuiteName::RecordSize => record_size::estimate_s(cfg, rate),
        SuiteName::Pregrow => pregrow::estimate_s(cfg, rate),
        SuiteName::Metadata => metadata::estimate_s(cfg),
        SuiteName::PageCache => page_cache::estimate_s(cfg, rate),
        SuiteName::Filesystems => filesystems::estimate_s(cfg),
        SuiteName::BackgroundLoad => background_load::estimate_s(cfg, rate),
        SuiteName::CaptureBuffers => capture_buffers::estimate_s(cfg),
        SuiteName::PowerCut => power_cut::estimate_s(cfg),
    }
}

/// Refusals particular to a suite, before anything is done.
pub fn preflight(cfg: &SuiteConfig) -> Result<(), SuiteError> {
    let makes_filesystems = matches!(
        cfg.suite,
        SuiteName::Metadata | SuiteName::Filesystems | SuiteName::PowerCut
    );
    // Without root, metadata runs its rows on the directory and lists the mounts as not run.
    if makes_filesystems && cfg.scratch.is_none() && sinkrate_sys::is_root() {
        let missing: Vec<&str> = ["nbdkit", "nbdfuse", "losetup"]
            .into_iter()
            .filter(|t| sinkrate_emulate::tools::find_in_path(t).is_none())
            .collect();
        if !missing.is_empty() {
            return Err(SuiteError::Usage(format!(
                "suite {}: the emulated devices it makes need {} (fix: apt-get install -y nbdkit libnbd-bin fuse3 mount; or give --scratch DEVICE)",
                cfg.suite.id(),
                missing.join(", ")
            )));
        }
        crate::devices::card_for(&cfg.dir, &cfg.model).map_err(SuiteError::Usage)?;
    }
    if cfg.suite == SuiteName::PowerCut {
        if cfg.scratch.is_some() {
            return Err(SuiteError::Usage(
                "suite power-cut: --scratch: the cut needs an emulated card (its volatile cache and power are the emulator's); leave --scratch out".into(),
            ));
        }
        sinkrate_emulate::tools::nbdkit_plugin().map_err(SuiteError::Usage)?;
    }
    if cfg.suite == SuiteName::Filesystems {
        if let Some(line) = filesystems::missing_packages() {
            return Err(SuiteError::Usage(line));
        }
    }
    Ok(())
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    match ctx.cfg.suite {
        SuiteName::RecordSize => record_size::run(ctx),
        SuiteName::Pregrow => pregrow::run(ctx),
        SuiteName::Metadata => metadata::run(ctx),
        SuiteName::PageCache => page_cache::run(ctx),
        SuiteName::Filesystems => filesystems::run(ctx),
        SuiteName::BackgroundLoad => background_load::run(ctx),
        SuiteName::CaptureBuffers => capture_buffers::run(ctx),
        SuiteName::PowerCut => power_cut::run(ctx),
    }
}
