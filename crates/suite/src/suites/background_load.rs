//! `background-load` (seed 000): the recording alone, then beside a sequential reader, a
//! second writer and a CPU hog on every core, on the same device: what the recording loses
//! to each, and what the load itself got.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use sinkrate_platform::buf::AlignedBuf;

use crate::suites::recording;
use crate::{Ctx, SuiteConfig, SuiteError, WorkDir};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

#[derive(Clone, Copy, PartialEq)]
enum Load {
    Alone,
    Reader,
    Writer,
    CpuHog,
}

const LOADS: &[(Load, &str, &str)] = &[
    (Load::Alone, "alone", "the recording by itself"),
    (Load::Reader, "+ reader", "beside a sequential reader of another file on the device (1 MiB reads, past the page cache)"),
    (Load::Writer, "+ second writer", "beside an unpaced sequential writer of another file (1 MiB buffered writes, fdatasync every 4 MiB)"),
    (Load::CpuHog, "+ CPU hog", "beside one busy thread per CPU"),
];

const CHUNK: usize = 1 << 20;
/// The second writer's fdatasync interval.
const SYNC_EVERY: u64 = 4 << 20;

pub fn estimate_s(cfg: &SuiteConfig, rate: f64) -> f64 {
    let runs = cfg.runs_each();
    cfg.test_file_bytes() as f64 / rate
        + runs as f64 * LOADS.len() as f64 * (recording::duration(cfg).as_secs_f64() + 2.0)
}

/// A background load running on its own thread(s) until dropped; counts the bytes it moved.
struct Running {
    stop: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
    started: Instant,
}

impl Running {
    fn finish(mut self) -> f64 {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.bytes.load(Ordering::Relaxed) as f64 / self.started.elapsed().as_secs_f64().max(1e-9)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn start(load: Load, read_file: &Path, write_file: &Path, write_cap: u64) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    match load {
        Load::Alone => {}
        Load::Reader => {
            let (stop, bytes, path) = (stop.clone(), bytes.clone(), read_file.to_path_buf());
            threads.push(std::thread::spawn(move || read_loop(&path, &stop, &bytes)));
        }
        Load::Writer => {
            let (stop, bytes, path) = (stop.clone(), bytes.clone(), write_file.to_path_buf());
            threads.push(std::thread::spawn(move || {
                write_loop(&path, write_cap, &stop, &bytes)
            }));
        }
        Load::CpuHog => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            for _ in 0..cpus {
                let stop = stop.clone();
                threads.push(std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        }
                        std::hint::black_box(x);
                    }
                }));
            }
        }
    }
    Running {
        stop,
        bytes,
        threads,
        started: Instant::now(),
    }
}

/// Reads the file over and over with O_DIRECT (the device, not the page cache); where the
/// filesystem refuses O_DIRECT, buffered reads after dropping the file's cached pages.
fn read_loop(path: &PathBuf, stop: &AtomicBool, bytes: &AtomicU64) {
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(target_os = "linux")]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_DIRECT);
    let (file, direct) = match o.open(path) {
        Ok(f) => (f, true),
        Err(_) => match File::open(path) {
            Ok(f) => (f, false),
            Err(_) => return,
        },
    };
    let size = file.metadata().map_or(0, |m| m.len());
    let mut buf = AlignedBuf::new(CHUNK);
    let mut pos = 0u64;
    while !stop.load(Ordering::Relaxed) && size >= CHUNK as u64 {
        if pos + CHUNK as u64 > size {
            pos = 0;
            if !direct {
                drop_cache(&file);
            }
        }
        match file.read_at(&mut buf.as_mut_slice()[..CHUNK], pos) {
            Ok(0) | Err(_) => pos = size,
            Ok(n) => {
                bytes.fetch_add(n as u64, Ordering::Relaxed);
                pos += n as u64;
            }
        }
    }
}

fn write_loop(path: &PathBuf, cap: u64, stop: &AtomicBool, bytes: &AtomicU64) {
    let Ok(mut file) = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
    else {
        return;
    };
    let buf = crate::writer::incompressible(CHUNK, 0x5a);
    let mut written = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if written + CHUNK as u64 > cap {
            // Overwrite from the start: the load never fills the device.
            if file.seek(SeekFrom::Start(0)).is_err() {
                return;
            }
            written = 0;
        }
        if file.write_all(&buf.as_slice()[..CHUNK]).is_err() {
            return;
        }
        written += CHUNK as u64;
        // A writer that keeps its own dirty data small, as a second recorder would: without
        // it the load runs at memory speed into gigabytes of page cache, and the device's
        // contention comes only after the recording ends.
        if written % SYNC_EVERY == 0 && file.sync_data().is_err() {
            return;
        }
        bytes.fetch_add(CHUNK as u64, Ordering::Relaxed);
    }
}

fn drop_cache(file: &File) {
    #[cfg(target_os = "linux")]
    // SAFETY: posix_fadvise on a descriptor the caller owns.
    unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(file),
            0,
            0,
            libc::POSIX_FADV_DONTNEED,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let mut columns = recording::columns();
    columns.push(Column::new(
        "load_bytes_per_s",
        "the load's own rate",
        Unit::BytesPerS,
        Better::Neither,
    ));
    let mut table = Table::new(
        &format!(
            "{} for {} s, alone and beside a load",
            cfg.recording.label,
            recording::duration(cfg).as_secs()
        ),
        columns,
    );
    for (_, label, about) in LOADS {
        table.row(label, about);
    }
    let size = cfg.test_file_bytes();
    let work = WorkDir::for_suite(cfg, size * 3)?;
    let read_file = work.path().join("read-me");
    let write_file = work.path().join("second-writer");
    let free = work.free_bytes();
    ctx.phase("writing the file the reader reads");
    crate::writer::write_file(
        &crate::writer::WriteJob {
            path: &read_file,
            record: CHUNK,
            bytes: size,
            api: crate::writer::Api::Fd,
            direct: false,
            prep: crate::writer::Prep::None,
            fsync: true,
        },
        &ctx.stop,
    )?;
    if let Ok(f) = File::open(&read_file) {
        drop_cache(&f);
    }
    // The second writer overwrites its file in place past this size, so it never fills the
    // device, whatever its speed.
    let write_cap = (free / 4).min(1 << 30);
    let base = cfg.recording.clone();
    let rec_dir = work.path().join("recording");
    std::fs::create_dir(&rec_dir)
        .map_err(|e| SuiteError::Failed(format!("{}: {e}", rec_dir.display())))?;
    for run in 0..ctx.runs() {
        for (load, label, _) in LOADS {
            ctx.check_stop()?;
            ctx.phase(&format!("run {}: {label}", run + 1));
            let running = start(*load, &read_file, &write_file, write_cap);
            let rec = recording::record(ctx, &base, &rec_dir, &|_| {}, label, run);
            let load_rate = running.finish();
            let rec = rec?;
            recording::add(&mut table, label, &rec);
            if *load != Load::Alone && *load != Load::CpuHog {
                table.add(label, "load_bytes_per_s", load_rate);
            }
            let _ = std::fs::remove_file(&write_file);
            sinkrate_sys::sync_filesystem(&cfg.dir);
        }
    }
    Ok(vec![table])
}
