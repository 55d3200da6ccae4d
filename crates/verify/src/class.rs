//! `sinkrate verify --class`: does the card keep the speed class it claims, measured the way
//! the SD Physical Layer Simplified Specification 4.10 (section 4.13) defines the classes?
//!
//! In files of its own on the card's filesystem, recording units (RU: 512 KiB for Class 10 and
//! every UHS and video class, 64 KiB for Class 6, 32 KiB for Class 2 and 4) are written back
//! to back through whole 4 MiB units of the allocation unit, each write timed. After each unit
//! a FAT update cycle (a 16 KiB FAT, a 4 KiB bitmap and a 4 KiB directory entry, written to a
//! second file and synced) is timed too. The class holds when the slowest unit's rate (Pw)
//! reaches the class's minimum, no write after the first is busy over 250 ms, the first (the
//! card's preparation for a recording) takes at most 1 s, no FAT update takes over 750 ms and
//! at most one of any 8 consecutive ones is long (sinkrate counts one over the 250 ms write
//! bound as long). The application classes add random 4 KiB reads and writes, one at a time.
//!
//! What the specification measures at the card's bus is measured here through the kernel
//! and the filesystem: O_DIRECT keeps the page cache out (else each write is followed by
//! fdatasync, said), and the filesystem places the files, so an AU of the file is not an AU
//! of the card. A card that meets a class here meets it for a recorder on this filesystem.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sinkrate_model::sdclass::{
    ClaimSource, ClassFamily, ClassPass, ClassReport, ClassVerdict, RandomIops, SdClass,
    FAT_CYCLES_WINDOW, MAX_FAT_UPDATE_NS, MAX_PREPARATION_NS, MAX_WRITE_BUSY_NS, PW_UNIT_BYTES,
};
use sinkrate_platform::buf::AlignedBuf;
use sinkrate_platform::rng::Rng;

/// What the qualification is asked to do.
#[derive(Debug, Clone)]
pub struct ClassConfig {
    /// A directory on the card.
    pub dir: PathBuf,
    /// The class to judge against; None: the card's own claim, else Class 10 (said).
    pub claim: Option<&'static SdClass>,
    /// The allocation unit; None: the card's, else 4 MiB (said).
    pub au_bytes: Option<u64>,
    /// Bytes each pass writes; None: eight 4 MiB units (32 MiB).
    pub area_bytes: Option<u64>,
    /// How long each of random reading and random writing lasts.
    pub random_seconds: f64,
    /// The stream the card must carry: its name and bytes/s.
    pub stream: Option<(String, f64)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ClassError {
    /// Refused before anything is written.
    #[error("{0}")]
    Input(String),
    #[error("interrupted: the qualification stopped and its files are removed")]
    Interrupted,
    #[error("{0}")]
    Failed(String),
}

/// The qualification as planned, before anything is written: what the command says first.
#[derive(Debug, Clone)]
pub struct Prepared {
    cfg: ClassConfig,
    report: ClassReport,
    /// The claimed classes judged (the card's, the one given, or Class 10 assumed).
    claims: Vec<&'static SdClass>,
    unit_bytes: u64,
    units: u64,
    devices: Vec<String>,
}

impl Prepared {
    /// Bytes one pass writes.
    pub fn pass_bytes(&self) -> u64 {
        self.unit_bytes * self.units
    }

    /// The line said before anything is written: what will be written and about how long
    /// it takes at the claimed rate.
    pub fn plan_line(&self) -> String {
        let rate = self
            .claims
            .iter()
            .map(|c| c.min_write_bytes_per_s)
            .fold(0.0f64, f64::max)
            .max(1e6);
        format!(
            "writes {} MiB of RUs (at most 3 passes; about {:.0} s at {}'s rate) in {}, then {:.0} s each of random 4 KiB reads and writes; its files are removed",
            self.pass_bytes() >> 20,
            self.pass_bytes() as f64 / rate + 2.0 * self.cfg.random_seconds,
            self.claims.iter().map(|c| c.name).collect::<Vec<_>>().join(", "),
            self.cfg.dir.display(),
            self.cfg.random_seconds
        )
    }

    pub fn report(&self) -> &ClassReport {
        &self.report
    }
}

/// The classes `s` claims, as the table names them.
fn claimed(s: &sinkrate_model::health::SdStatus) -> Vec<&'static SdClass> {
    s.class_names()
        .iter()
        .filter_map(|n| SdClass::parse(n).ok())
        .collect()
}

/// Checks the target and resolves the claim and the AU; nothing is written.
pub fn prepare(cfg: &ClassConfig) -> Result<Prepared, ClassError> {
    let dir = &cfg.dir;
    if !dir.is_dir() {
        return Err(ClassError::Input(format!(
            "{}: not a directory (give a directory on the card: the qualification writes its own files there)",
            dir.display()
        )));
    }
    if !(0.2..=60.0).contains(&cfg.random_seconds) {
        return Err(ClassError::Input(format!(
            "--random-seconds {}: from 0.2 to 60",
            cfg.random_seconds
        )));
    }
    let resolved = sinkrate_sys::host::resolve_target(dir, false);
    if let Some(fs_type) = resolved
        .facts
        .fs_type
        .as_deref()
        .filter(|f| !sinkrate_sys::mounts::is_storage(f))
    {
        return Err(ClassError::Input(format!(
            "{} is on {fs_type}, which keeps files in memory: nothing written there reaches a card",
            dir.display()
        )));
    }
    let mut report = ClassReport {
        target: dir.display().to_string(),
        ..ClassReport::default()
    };
    let (health, health_notes) = sinkrate_sys::health::of_mount(resolved.mount.as_ref());
    report.notes.extend(health_notes);
    let status = health.mmc.as_ref().and_then(|m| m.sd_status.clone());
    if let Some(s) = &status {
        report.card_classes = Some(s.label());
    }
    let card_claims = status.as_ref().map(claimed).unwrap_or_default();
    let (claims, source) = match cfg.claim {
        Some(c) => {
            if status.is_some() && !card_claims.iter().any(|k| k.name == c.name) {
                report.notes.push(format!(
                    "the card claims {}; judged against {} as asked",
                    report.card_classes.as_deref().unwrap_or("no class"),
                    c.name
                ));
            }
            (vec![c], ClaimSource::Given)
        }
        None if !card_claims.is_empty() => (card_claims, ClaimSource::Card),
        None => {
            report.notes.push(if status.is_some() {
                "the card's SD Status claims no class: Class 10 assumed (--claim names one)".into()
            } else {
                "the card's SD Status is not readable here (not an SD card on an MMC host): Class 10 assumed (--claim names one)".into()
            });
            (vec![class("C10")?], ClaimSource::Assumed)
        }
    };
    report.claim = Some(claims.iter().map(|c| c.name).collect::<Vec<_>>().join(", "));
    report.claim_source = Some(source);
    let card_au = status.as_ref().and_then(|s| s.au_bytes);
    report.au_bytes = match (cfg.au_bytes, card_au) {
        (Some(au), _) => au,
        (None, Some(au)) => {
            report.au_from_card = true;
            au
        }
        (None, None) => {
            report.notes.push(
                "the card's allocation unit is not known here: 4 MiB assumed (--au names it)"
                    .into(),
            );
            PW_UNIT_BYTES
        }
    };
    if report.au_bytes < 16 << 10 || report.au_bytes % (16 << 10) != 0 {
        return Err(ClassError::Input(format!(
            "--au {}: a multiple of 16 KiB (the SD specification's AUs are 16 KiB to 64 MiB)",
            report.au_bytes
        )));
    }
    // Pw of a larger AU is measured in 4 MiB units (Table 4-60).
    let unit_bytes = report.au_bytes.min(PW_UNIT_BYTES);
    let area = cfg.area_bytes.unwrap_or(8 * PW_UNIT_BYTES);
    let units = area / unit_bytes;
    if units < 2 {
        return Err(ClassError::Input(format!(
            "--size {area}: at least two units of {} KiB",
            unit_bytes >> 10
        )));
    }
    let needed = units * unit_bytes + (1 << 20);
    let free = sinkrate_sys::space::free_bytes(dir)
        .map_err(|e| ClassError::Input(format!("{}: {e}", dir.display())))?;
    if free < needed {
        return Err(ClassError::Input(format!(
            "{}: {} MiB free, and the qualification writes {} MiB (--size less)",
            dir.display(),
            free >> 20,
            needed >> 20
        )));
    }
    if let Some((name, rate)) = &cfg.stream {
        report.stream = Some(name.clone());
        report.stream_bytes_per_s = Some(*rate);
        report.stream_needs = SdClass::video_class_for(*rate).map(|c| c.name.to_string());
        if report.stream_needs.is_none() {
            report.notes.push(format!(
                "{name} needs more than any video class promises ({:.1} MB/s)",
                rate / 1e6
            ));
        }
    }
    let devices = sinkrate_sys::host::device_names(std::slice::from_ref(&resolved.facts));
    Ok(Prepared {
        cfg: cfg.clone(),
        report,
        claims,
        unit_bytes,
        units,
        devices,
    })
}

fn class(name: &str) -> Result<&'static SdClass, ClassError> {
    SdClass::parse(name).map_err(ClassError::Failed)
}

/// The recording units to measure in: 512 KiB always; the smaller ones of Class 6 and of
/// Class 2 and 4 when one of them is claimed or the card missed Class 10 at 512 KiB (to find
/// the speed class it meets).
fn ru_sizes(claims: &[&SdClass]) -> Vec<u64> {
    let mut sizes = vec![512 << 10];
    for c in claims {
        if !sizes.contains(&c.ru_bytes) {
            sizes.push(c.ru_bytes);
        }
    }
    sizes
}

/// Runs the qualification: every pass, the random I/O, the verdicts.
pub fn run(
    prepared: &Prepared,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<ClassReport, ClassError> {
    let started = Instant::now();
    let mut report = prepared.report.clone();
    let root = sinkrate_sys::SysRoot::live();
    let names: Vec<&str> = prepared.devices.iter().map(String::as_str).collect();
    let device_before = sinkrate_sys::disks::written_bytes(&root, &names);
    let mut files = Files::default();
    let result = measure(prepared, stop, progress, &mut report, &mut files);
    files.remove();
    result?;
    report.device_written_bytes = device_before.and_then(|before| {
        sinkrate_sys::disks::written_bytes(&root, &names).map(|after| after.saturating_sub(before))
    });
    judge(prepared, &mut report);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The run's own files, removed at the end if they are still the files it made.
#[derive(Default)]
struct Files(Vec<PathBuf>);

impl Files {
    fn create(&mut self, path: PathBuf) -> Result<(File, bool), ClassError> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut how = std::fs::OpenOptions::new();
        how.read(true).write(true).custom_flags(libc::O_DIRECT);
        let made = match sinkrate_sys::owned::create_new(&path, &mut how) {
            Ok(f) => Ok((f, true)),
            // A filesystem without O_DIRECT: buffered, each write then synced.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => sinkrate_sys::owned::create_new(
                &path,
                std::fs::OpenOptions::new().read(true).write(true),
            )
            .map(|f| (f, false)),
            Err(e) => Err(e),
        };
        let made = made.map_err(|e| ClassError::Failed(format!("{}: {e}", path.display())))?;
        self.0.push(path);
        Ok(made)
    }

    fn remove(&mut self) {
        for path in self.0.drain(..) {
            let _ = sinkrate_sys::owned::remove(&path);
        }
    }
}

fn measure(
    prepared: &Prepared,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str, u64, u64),
    report: &mut ClassReport,
    files: &mut Files,
) -> Result<(), ClassError> {
    let dir = &prepared.cfg.dir;
    let tag = format!("sinkrate-class-{}", std::process::id());
    let (fat, fat_direct) = files.create(dir.join(format!("{tag}.fat")))?;
    // The FAT's place exists before the first cycle, as a filesystem's tables do.
    let mut meta = AlignedBuf::new(24 << 10);
    write_at(&fat, meta.as_slice(), 0, fat_direct, "the FAT file")?;
    fat.sync_all()
        .map_err(|e| ClassError::Failed(format!("the FAT file: fsync: {e}")))?;
    report.written_bytes += meta.as_slice().len() as u64;
    let mut rng = Rng::new(u64::from(std::process::id()) ^ sinkrate_sys::host::unix_ms_now());
    rng.fill(meta.as_mut_slice());
    let mut sizes = ru_sizes(&prepared.claims);
    let mut k = 0;
    let mut random_done = false;
    report.direct = true;
    while k < sizes.len() {
        let ru = sizes[k];
        let path = dir.join(format!("{tag}-{}k.dat", ru >> 10));
        let (data, direct) = files.create(path.clone())?;
        report.direct &= direct && fat_direct;
        let pass = one_pass(
            prepared, ru, &data, direct, &fat, fat_direct, &meta, &mut rng, stop, progress,
        )?;
        report.written_bytes += pass.writes * ru + pass.fat_cycles * (24 << 10);
        report.passes.push(pass);
        if !random_done {
            // In the first pass's file, which is written through by now.
            report.random = random_io(
                &data,
                direct,
                prepared.pass_bytes(),
                prepared.cfg.random_seconds,
                &mut rng,
                stop,
                progress,
                report,
            )?;
            random_done = true;
        }
        drop(data);
        let _ = sinkrate_sys::owned::remove(&path);
        // A card that missed Class 10 at 512 KiB: the smaller RUs find the speed class it meets.
        if k == 0 {
            let c10 = class("C10")?;
            if !verdict_of(c10, &report.passes[0], report.random.as_ref()).met {
                for smaller in [64 << 10, 32 << 10] {
                    if !sizes.contains(&smaller) {
                        sizes.push(smaller);
                    }
                }
            }
        }
        k += 1;
    }
    if !report.direct {
        report.notes.push(
            "this filesystem refuses O_DIRECT: each write was followed by fdatasync, so a write's time includes the filesystem's own".into(),
        );
    }
    Ok(())
}

fn write_at(f: &File, buf: &[u8], at: u64, direct: bool, what: &str) -> Result<(), ClassError> {
    f.write_all_at(buf, at)
        .map_err(|e| ClassError::Failed(format!("{what}: write at {at}: {e}")))?;
    if !direct {
        f.sync_data()
            .map_err(|e| ClassError::Failed(format!("{what}: fdatasync: {e}")))?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn one_pass(
    prepared: &Prepared,
    ru: u64,
    data: &File,
    direct: bool,
    fat: &File,
    fat_direct: bool,
    meta: &AlignedBuf,
    rng: &mut Rng,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<ClassPass, ClassError> {
    let mut buf = AlignedBuf::new(ru as usize);
    rng.fill(buf.as_mut_slice());
    let total = prepared.pass_bytes();
    let per_unit = prepared.unit_bytes / ru;
    let mut pass = ClassPass {
        ru_bytes: ru,
        min_unit_bytes_per_s: f64::INFINITY,
        ..ClassPass::default()
    };
    let mut fat_times: Vec<u64> = Vec::new();
    let mut busy_total = Duration::ZERO;
    let label = format!("RU {} KiB", ru >> 10);
    for unit in 0..prepared.units {
        let mut unit_time = Duration::ZERO;
        let mut unit_bytes = 0u64;
        for i in 0..per_unit {
            if stop.load(Ordering::Relaxed) {
                return Err(ClassError::Interrupted);
            }
            let at = (unit * per_unit + i) * ru;
            let t = Instant::now();
            write_at(data, buf.as_slice(), at, direct, "the test file")?;
            let took = t.elapsed();
            let ns = took.as_nanos() as u64;
            if pass.writes == 0 {
                // The card's preparation for a recording: judged on its own, and not part of
                // the first unit's Pw (section 4.13.3.4).
                pass.preparation_ns = ns;
            } else {
                unit_time += took;
                unit_bytes += ru;
                busy_total += took;
                pass.worst_write_ns = pass.worst_write_ns.max(ns);
                if ns > MAX_WRITE_BUSY_NS {
                    pass.writes_over_busy_limit += 1;
                }
            }
            pass.writes += 1;
            progress(&label, at + ru, total);
        }
        if unit_bytes > 0 {
            let rate = unit_bytes as f64 / unit_time.as_secs_f64().max(1e-9);
            pass.min_unit_bytes_per_s = pass.min_unit_bytes_per_s.min(rate);
        }
        // The FAT update cycle after the unit: FAT, bitmap, directory entry, then synced.
        let t = Instant::now();
        let m = meta.as_slice();
        write_at(fat, &m[..16 << 10], 0, fat_direct, "the FAT file")?;
        write_at(
            fat,
            &m[16 << 10..20 << 10],
            16 << 10,
            fat_direct,
            "the FAT file",
        )?;
        write_at(fat, &m[20 << 10..], 20 << 10, fat_direct, "the FAT file")?;
        fat.sync_data()
            .map_err(|e| ClassError::Failed(format!("the FAT file: fdatasync: {e}")))?;
        fat_times.push(t.elapsed().as_nanos() as u64);
    }
    if !pass.min_unit_bytes_per_s.is_finite() {
        pass.min_unit_bytes_per_s = 0.0;
    }
    let timed_bytes = (pass.writes.saturating_sub(1)) * ru;
    pass.mean_bytes_per_s = timed_bytes as f64 / busy_total.as_secs_f64().max(1e-9);
    pass.fat_cycles = fat_times.len() as u64;
    pass.worst_fat_ns = fat_times.iter().copied().max().unwrap_or(0);
    let window = FAT_CYCLES_WINDOW.min(fat_times.len()).max(1);
    for w in fat_times.windows(window) {
        pass.worst_fat_mean8_ns = pass
            .worst_fat_mean8_ns
            .max(w.iter().sum::<u64>() / w.len() as u64);
        pass.long_fat_cycles_in_8 = pass
            .long_fat_cycles_in_8
            .max(w.iter().filter(|t| **t > MAX_WRITE_BUSY_NS).count() as u64);
    }
    Ok(pass)
}

/// Random 4 KiB reads, then writes, one at a time within the first `span` bytes of `f`,
/// each for `seconds`. Reads need O_DIRECT (else the page cache answers them): without it,
/// only writes are measured, and that is said.
#[allow(clippy::too_many_arguments)]
fn random_io(
    f: &File,
    direct: bool,
    span: u64,
    seconds: f64,
    rng: &mut Rng,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str, u64, u64),
    report: &mut ClassReport,
) -> Result<Option<RandomIops>, ClassError> {
    const IO: u64 = 4 << 10;
    let mut buf = AlignedBuf::new(IO as usize);
    rng.fill(buf.as_mut_slice());
    let blocks = span / IO;
    let limit = Duration::from_secs_f64(seconds);
    let mut rates = [0.0f64; 2];
    for (k, writing) in [false, true].into_iter().enumerate() {
        if !writing && !direct {
            report.notes.push(
                "random reads not measured: without O_DIRECT the page cache would answer them"
                    .into(),
            );
            continue;
        }
        let started = Instant::now();
        let mut ops = 0u64;
        while started.elapsed() < limit {
            if stop.load(Ordering::Relaxed) {
                return Err(ClassError::Interrupted);
            }
            let at = rng.below(blocks) * IO;
            if writing {
                write_at(f, buf.as_slice(), at, direct, "the test file")?;
            } else {
                f.read_exact_at(buf.as_mut_slice(), at)
                    .map_err(|e| ClassError::Failed(format!("the test file: read at {at}: {e}")))?;
            }
            ops += 1;
            let done = (started.elapsed().as_secs_f64() / seconds * 1000.0) as u64;
            progress(
                if writing {
                    "random writes"
                } else {
                    "random reads"
                },
                done.min(1000),
                1000,
            );
        }
        rates[k] = ops as f64 / started.elapsed().as_secs_f64().max(1e-9);
        if writing {
            report.written_bytes += ops * IO;
        }
    }
    Ok(Some(RandomIops {
        read_iops: rates[0],
        write_iops: rates[1],
        seconds,
    }))
}

fn ms(ns: u64) -> String {
    sinkrate_units::product::ms_text(Some(ns))
}

/// One class judged on the pass of its RU size (and the random I/O for A1/A2).
fn verdict_of(c: &SdClass, pass: &ClassPass, random: Option<&RandomIops>) -> ClassVerdict {
    let mut reasons = Vec::new();
    if pass.min_unit_bytes_per_s < c.min_write_bytes_per_s {
        reasons.push(format!(
            "its slowest unit was written at {}, under {}'s {}",
            sinkrate_units::product::mb_per_s(pass.min_unit_bytes_per_s),
            c.name,
            sinkrate_units::product::mb_per_s(c.min_write_bytes_per_s)
        ));
    }
    if pass.writes_over_busy_limit > 0 {
        reasons.push(format!(
            "{} of {} RU writes took over 250 ms (worst {})",
            pass.writes_over_busy_limit,
            pass.writes.saturating_sub(1),
            ms(pass.worst_write_ns)
        ));
    }
    if pass.preparation_ns > MAX_PREPARATION_NS {
        reasons.push(format!(
            "its first write (the card's preparation) took {}, over 1 s",
            ms(pass.preparation_ns)
        ));
    }
    if pass.worst_fat_ns > MAX_FAT_UPDATE_NS {
        reasons.push(format!(
            "a FAT update took {}, over 750 ms",
            ms(pass.worst_fat_ns)
        ));
    }
    if pass.long_fat_cycles_in_8 > 1 {
        reasons.push(format!(
            "{} of 8 consecutive FAT updates took over 250 ms (one may)",
            pass.long_fat_cycles_in_8
        ));
    }
    if let Some((read, write)) = c.random_iops {
        match random {
            Some(r) => {
                if r.read_iops < f64::from(read) && r.read_iops > 0.0 {
                    reasons.push(format!(
                        "{:.0} random 4 KiB reads a second, under {}'s {read}",
                        r.read_iops, c.name
                    ));
                }
                if r.read_iops == 0.0 {
                    reasons.push("random reads could not be measured here".into());
                }
                if r.write_iops < f64::from(write) {
                    reasons.push(format!(
                        "{:.0} random 4 KiB writes a second, under {}'s {write}",
                        r.write_iops, c.name
                    ));
                }
            }
            None => reasons.push("random I/O was not measured".into()),
        }
    }
    ClassVerdict {
        class: c.name.to_string(),
        met: reasons.is_empty(),
        reasons,
    }
}

fn judge(prepared: &Prepared, report: &mut ClassReport) {
    let mut families = vec![ClassFamily::Speed, ClassFamily::Uhs, ClassFamily::Video];
    if prepared.claims.iter().any(|c| c.family == ClassFamily::App) {
        families.push(ClassFamily::App);
    }
    let pass_of = |ru: u64| report.passes.iter().find(|p| p.ru_bytes == ru).cloned();
    let mut verdicts = Vec::new();
    for family in &families {
        let mut highest = None;
        for c in SdClass::of_family(*family) {
            let Some(pass) = pass_of(c.ru_bytes) else {
                continue;
            };
            let v = verdict_of(c, &pass, report.random.as_ref());
            if v.met {
                highest = Some(c.name.to_string());
            }
            verdicts.push(v);
        }
        if let Some(h) = highest {
            report.highest_met.push(h);
        }
    }
    let met = |name: &str| verdicts.iter().find(|v| v.class == name).map(|v| v.met);
    report.claim_met = Some(prepared.claims.iter().all(|c| met(c.name) == Some(true)));
    report.stream_met = report.stream_needs.as_deref().and_then(met);
    let mut text = if report.highest_met.is_empty() {
        "meets no class".to_string()
    } else {
        format!("meets {}", report.highest_met.join(", "))
    };
    let whose = match report.claim_source {
        Some(ClaimSource::Card) => "claims",
        Some(ClaimSource::Given) => "asked for",
        _ => "assumed",
    };
    for c in &prepared.claims {
        if let Some(v) = verdicts.iter().find(|v| v.class == c.name) {
            if v.met {
                text.push_str(&format!("; {whose} {}: met", c.name));
            } else {
                text.push_str(&format!(
                    "; {whose} {} but {}",
                    c.name,
                    v.reasons.join("; ")
                ));
            }
        }
    }
    if let (Some(stream), Some(needs)) = (&report.stream, &report.stream_needs) {
        let rate = report.stream_bytes_per_s.unwrap_or(0.0);
        text.push_str(&format!(
            "; {stream} ({:.1} MB/s) needs {needs}: {}",
            rate / 1e6,
            if report.stream_met == Some(true) {
                "met"
            } else {
                "not met"
            }
        ));
    }
    report.classes = verdicts;
    report.verdict_text = text;
}

/// The exit code of a qualification: 0 when the claim (and the stream's class) is met, else 1.
pub fn exit_code(r: &ClassReport) -> u8 {
    if r.claim_met == Some(true) && r.stream_met != Some(false) {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass() -> ClassPass {
        ClassPass {
            ru_bytes: 512 << 10,
            writes: 65,
            preparation_ns: 5_000_000,
            min_unit_bytes_per_s: 12e6,
            mean_bytes_per_s: 14e6,
            worst_write_ns: 60_000_000,
            writes_over_busy_limit: 0,
            fat_cycles: 8,
            worst_fat_ns: 20_000_000,
            worst_fat_mean8_ns: 10_000_000,
            long_fat_cycles_in_8: 0,
        }
    }

    #[test]
    fn a_class_is_met_by_rate_and_every_bound() {
        let c = SdClass::parse("V10").expect("V10");
        assert!(verdict_of(c, &pass(), None).met);
        let v30 = SdClass::parse("V30").expect("V30");
        let v = verdict_of(v30, &pass(), None);
        assert!(!v.met);
        assert!(
            v.reasons[0].contains("12.0 MB/s, under V30's 30.0 MB/s"),
            "{v:?}"
        );
    }

    #[test]
    fn a_long_busy_a_slow_fat_and_a_slow_start_each_fail_the_class() {
        let c = SdClass::parse("C10").expect("C10");
        let mut p = pass();
        p.writes_over_busy_limit = 3;
        p.worst_write_ns = 610_000_000;
        p.preparation_ns = 1_400_000_000;
        p.worst_fat_ns = 900_000_000;
        p.long_fat_cycles_in_8 = 2;
        let v = verdict_of(c, &p, None);
        let all = v.reasons.join(" | ");
        assert!(
            all.contains("3 of 64 RU writes took over 250 ms (worst 610"),
            "{all}"
        );
        assert!(all.contains("preparation) took 1400.0 ms"), "{all}");
        assert!(all.contains("a FAT update took 900"), "{all}");
        assert!(all.contains("2 of 8 consecutive FAT updates"), "{all}");
    }

    #[test]
    fn a_cards_sd_status_names_the_classes_it_is_judged_against() {
        let status = sinkrate_model::health::SdStatus {
            speed_class: Some(10),
            uhs_grade: Some(3),
            video_class: Some(30),
            app_class: Some(1),
            au_bytes: Some(4 << 20),
        };
        let names: Vec<&str> = claimed(&status).iter().map(|c| c.name).collect();
        assert_eq!(names, ["C10", "U3", "V30", "A1"]);
        assert!(claimed(&sinkrate_model::health::SdStatus::default()).is_empty());
    }

    #[test]
    fn the_application_classes_need_their_random_iops() {
        let a1 = SdClass::parse("A1").expect("A1");
        let slow = RandomIops {
            read_iops: 2000.0,
            write_iops: 34.0,
            seconds: 2.0,
        };
        let v = verdict_of(a1, &pass(), Some(&slow));
        assert!(!v.met);
        assert!(v
            .reasons
            .join(" ")
            .contains("34 random 4 KiB writes a second, under A1's 500"));
    }
}
