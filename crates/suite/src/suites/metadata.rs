//! `metadata` (seed 002): empty files created and deleted per second, and the worst create,
//! with no sync, fsync after each, O_DSYNC, and on filesystems mounted `dirsync` and `sync`
//! (made on emulated devices of the card under the directory, or on `--scratch`). The seed
//! gave QNX's commit levels; Linux's nearest are these.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::devices::{self, FsSpec, Maker};
use crate::{Ctx, SuiteConfig, SuiteError, WorkDir};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

#[derive(Clone, Copy, PartialEq)]
enum Sync {
    None,
    FsyncEach,
    Dsync,
}

struct Variant {
    label: &'static str,
    about: &'static str,
    sync: Sync,
    /// Mount options of a filesystem made for the variant; None: the directory itself.
    mount: Option<&'static str>,
}

const VARIANTS: &[Variant] = &[
    Variant {
        label: "no sync",
        about: "open(O_CREAT) + close, unlink",
        sync: Sync::None,
        mount: None,
    },
    Variant {
        label: "fsync each",
        about: "fsync of each new file; fsync of the directory after each unlink",
        sync: Sync::FsyncEach,
        mount: None,
    },
    Variant {
        label: "O_DSYNC",
        about: "files opened with O_DSYNC",
        sync: Sync::Dsync,
        mount: None,
    },
    Variant {
        label: "made, default mount",
        about: "no sync, on a filesystem made like the two below",
        sync: Sync::None,
        mount: Some(""),
    },
    Variant {
        label: "dirsync mount",
        about: "no sync, on a filesystem mounted dirsync",
        sync: Sync::None,
        mount: Some("dirsync"),
    },
    Variant {
        label: "sync mount",
        about: "no sync, on a filesystem mounted sync",
        sync: Sync::None,
        mount: Some("sync"),
    },
];

fn limits(cfg: &SuiteConfig) -> (usize, Duration) {
    if cfg.quick {
        (500, Duration::from_secs(2))
    } else {
        (2000, Duration::from_secs(8))
    }
}

pub fn estimate_s(cfg: &SuiteConfig) -> f64 {
    let (_, t) = limits(cfg);
    let runs = cfg.runs_each();
    // Creates and deletes each bounded by the time limit; a made filesystem takes seconds.
    runs as f64 * VARIANTS.len() as f64 * (2.0 * t.as_secs_f64() + 0.5) + 3.0 * 3.0 * runs as f64
}

struct Counts {
    files: usize,
    create_per_s: f64,
    delete_per_s: f64,
    worst_create_s: f64,
}

fn churn(
    dir: &Path,
    sync: Sync,
    max: usize,
    limit: Duration,
    ctx: &Ctx,
) -> Result<Counts, SuiteError> {
    let fail = |what: &str, e: std::io::Error| {
        SuiteError::Failed(format!("{}: {what}: {e}", dir.display()))
    };
    std::fs::create_dir(dir).map_err(|e| fail("mkdir", e))?;
    let dirfd = std::fs::File::open(dir).map_err(|e| fail("open", e))?;
    let started = Instant::now();
    let mut worst = 0.0f64;
    let mut n = 0;
    while n < max && started.elapsed() < limit {
        ctx.check_stop()?;
        let path = dir.join(format!("f{n:06}"));
        let t = Instant::now();
        let mut o = OpenOptions::new();
        o.write(true).create_new(true);
        if sync == Sync::Dsync {
            o.custom_flags(libc::O_DSYNC);
        }
        let f = o.open(&path).map_err(|e| fail("create", e))?;
        if sync == Sync::FsyncEach {
            f.sync_all().map_err(|e| fail("fsync", e))?;
        }
        drop(f);
        worst = worst.max(t.elapsed().as_secs_f64());
        n += 1;
    }
    let create_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for i in 0..n {
        ctx.check_stop()?;
        std::fs::remove_file(dir.join(format!("f{i:06}"))).map_err(|e| fail("unlink", e))?;
        if sync == Sync::FsyncEach {
            dirfd
                .sync_all()
                .map_err(|e| fail("fsync of the directory", e))?;
        }
    }
    let delete_s = started.elapsed().as_secs_f64();
    drop(dirfd);
    let _ = std::fs::remove_dir(dir);
    Ok(Counts {
        files: n,
        create_per_s: n as f64 / create_s.max(1e-9),
        delete_per_s: n as f64 / delete_s.max(1e-9),
        worst_create_s: worst,
    })
}

/// The filesystem the made devices get: the directory's own where it can be made, else ext4.
fn made_fs(dir: &Path) -> &'static str {
    let fs = sinkrate_sys::host::target_facts(dir, false)
        .fs_type
        .unwrap_or_default();
    ["ext4", "xfs", "btrfs", "f2fs"]
        .into_iter()
        .find(|f| *f == fs)
        .unwrap_or("ext4")
}

pub fn maker(cfg: &SuiteConfig) -> Result<Maker, SuiteError> {
    Ok(match &cfg.scratch {
        Some(s) => Maker::Scratch(s.clone()),
        None => Maker::Emulated(Box::new(
            devices::card_for(&cfg.dir, &cfg.model).map_err(SuiteError::Usage)?,
        )),
    })
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let (max, limit) = limits(cfg);
    let mut table = Table::new(
        &format!(
            "empty files created and deleted per second (up to {max} files or {} s each)",
            limit.as_secs()
        ),
        vec![
            Column::new("created_per_s", "created/s", Unit::PerS, Better::Higher),
            Column::new("deleted_per_s", "deleted/s", Unit::PerS, Better::Higher),
            Column::new(
                "worst_create_s",
                "worst create",
                Unit::Seconds,
                Better::Lower,
            ),
            Column::new("files", "files", Unit::Count, Better::Neither),
        ],
    );
    for v in VARIANTS {
        table.row(v.label, v.about);
    }
    let fs = made_fs(&cfg.dir);
    let maker = if sinkrate_sys::is_root() {
        let m = maker(cfg)?;
        ctx.made_on = Some(format!("{}, {fs}", m.describe()));
        Some(m)
    } else {
        for v in VARIANTS.iter().filter(|v| v.mount.is_some()) {
            table.not_run(
                v.label,
                v.about,
                "needs root (the filesystem is made and mounted on an emulated or --scratch device)",
            );
        }
        None
    };
    let work = WorkDir::for_suite(cfg, 0)?;
    for run in 0..ctx.runs() {
        for (i, v) in VARIANTS.iter().enumerate() {
            let maker = match (&maker, v.mount) {
                (_, None) => None,
                (Some(m), Some(_)) => Some(m),
                (None, Some(_)) => continue,
            };
            ctx.check_stop()?;
            ctx.phase(&format!("run {}: {}", run + 1, v.label));
            let counts = match v.mount {
                None => churn(
                    &work.path().join(format!("r{run}v{i}")),
                    v.sync,
                    max,
                    limit,
                    ctx,
                )?,
                Some(opts) => {
                    let Some(maker) = maker else { continue };
                    let spec = FsSpec {
                        fs,
                        mkfs_opts: Vec::new(),
                        mount_opts: opts.into(),
                    };
                    let made = devices::make(maker, &spec, 512 << 20).map_err(|e| {
                        SuiteError::Failed(format!("{}: making {fs} -o {opts}: {e}", v.label))
                    })?;
                    churn(&made.dir.join("files"), v.sync, max, limit, ctx)?
                }
            };
            table.add(v.label, "created_per_s", counts.create_per_s);
            table.add(v.label, "deleted_per_s", counts.delete_per_s);
            table.add(v.label, "worst_create_s", counts.worst_create_s);
            table.add(v.label, "files", counts.files as f64);
            let json = serde_json::json!({
                "suite": "metadata", "variant": v.label, "run": run + 1, "files": counts.files,
                "created_per_s": counts.create_per_s, "deleted_per_s": counts.delete_per_s,
                "worst_create_s": counts.worst_create_s,
            });
            ctx.keep_run(v.label, run, &json)?;
        }
    }
    Ok(vec![table])
}
