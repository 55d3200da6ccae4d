//! The nbdkit plugin behind `sinkrate emulate up`'s device models: it serves the card that
//! `sinkrate-devicemodel` describes. Loaded by nbdkit as `nbdkit /path/libsinkrate_nbdkit.so
//! size=... write-rate=...`.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nbdkit::{plugin, FuaFlags, Result, Server, ThreadModel};
use sinkrate_devicemodel::cache::{Medium, WriteCache};
use sinkrate_devicemodel::fake::pieces;
use sinkrate_devicemodel::timing::{Served, Timeline};
use sinkrate_devicemodel::{Settings, SettingsBuilder};

static BUILDER: Mutex<Option<SettingsBuilder>> = Mutex::new(None);
static DEVICE: OnceLock<Device> = OnceLock::new();

/// Where the flash's bytes are kept.
enum Flash {
    /// Zero-filled on allocation: pages are only touched when written.
    Memory(Vec<u8>),
    File(File),
}

impl Medium for Flash {
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        match self {
            Flash::Memory(v) => {
                buf.copy_from_slice(&v[span(v.len(), offset, buf.len())?]);
                Ok(())
            }
            Flash::File(f) => f.read_exact_at(buf, offset),
        }
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        match self {
            Flash::Memory(v) => {
                let at = span(v.len(), offset, data.len())?;
                v[at].copy_from_slice(data);
                Ok(())
            }
            Flash::File(f) => f.write_all_at(data, offset),
        }
    }
}

/// The bytes `len` at `offset` of a memory of `size`, or EINVAL when they lie outside it.
fn span(size: usize, offset: u64, len: usize) -> std::io::Result<std::ops::Range<usize>> {
    usize::try_from(offset)
        .ok()
        .and_then(|at| Some(at..at.checked_add(len)?))
        .filter(|r| r.end <= size)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))
}

struct State {
    flash: Flash,
    timeline: Timeline,
    cache: Option<WriteCache>,
    power_cut: bool,
    power_cuts: u64,
    cache_lost_bytes: u64,
    written_bytes: u64,
    read_bytes: u64,
    flushes: u64,
    stats_written: Option<Instant>,
    wear: Wear,
}

/// The card's wear: bytes written since the device was made ready (mkfs and mount not
/// counted), when it wore out, and what its writes have met since.
#[derive(Default)]
struct Wear {
    armed_at: Option<Instant>,
    written: u64,
    worn_out_ms: Option<u64>,
    worn_out_written: u64,
    failed_writes: u64,
    lost_bytes: u64,
    rng: u64,
}

impl Wear {
    /// A uniform draw in [0, 1) (xorshift64*: the plugin needs chance, not cryptography).
    fn draw(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Device {
    settings: Settings,
    origin: Instant,
    state: Mutex<State>,
}

fn io_error(e: std::io::Error) -> nbdkit::Error {
    nbdkit::Error::new(e.raw_os_error().unwrap_or(libc::EIO), e.to_string())
}

fn device() -> Result<&'static Device> {
    DEVICE
        .get()
        .ok_or_else(|| nbdkit::Error::new(libc::EIO, "the device was not set up"))
}

impl Device {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another request must not take the device down with it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// The power goes when the cut file appears: the cache is lost, the flash keeps what it
    /// holds, and nothing later reaches it. It comes back, with an empty cache, when the file
    /// is removed.
    fn check_power(&self, st: &mut State) -> Result<()> {
        let cut = self
            .settings
            .power_cut_file
            .as_ref()
            .is_some_and(|f| f.exists());
        if cut != st.power_cut {
            st.power_cut = cut;
            if cut {
                st.power_cuts += 1;
                st.cache_lost_bytes += st.cache.as_mut().map_or(0, WriteCache::lose);
            }
            self.write_stats(st, true);
        }
        if st.power_cut {
            return Err(nbdkit::Error::new(libc::EIO, "the power was cut"));
        }
        Ok(())
    }

    /// One request: the power checked, `work` done on the device's state, the account
    /// written (at once with `stats_now`), and the caller held until the model says the
    /// request completes (outside the lock, so time passes as on a card's bus).
    fn serve(
        &self,
        stats_now: bool,
        work: impl FnOnce(&mut State, u64) -> Result<Served>,
    ) -> Result<()> {
        let served = {
            let mut st = self.lock();
            self.check_power(&mut st)?;
            let served = work(&mut st, self.now_ns())?;
            self.write_stats(&mut st, stats_now);
            served
        };
        self.complete(served);
        Ok(())
    }

    /// A write of `len` bytes meets the card's wear: Err when a worn card refuses it, false
    /// when a stale one takes it without storing it. The write that crosses the threshold is
    /// the last one stored.
    fn wear(&self, st: &mut State, len: u64) -> Result<bool> {
        let Some(w) = self.settings.wear_out else {
            return Ok(true);
        };
        if st.wear.armed_at.is_none() {
            if self
                .settings
                .armed_file
                .as_ref()
                .is_some_and(|f| !f.exists())
            {
                return Ok(true);
            }
            st.wear.armed_at = Some(Instant::now());
        }
        let before = st.wear.written;
        if before >= w.after_bytes && st.wear.worn_out_ms.is_none() {
            st.wear.worn_out_ms = st.wear.armed_at.map(|t| t.elapsed().as_millis() as u64);
            st.wear.worn_out_written = before;
            self.write_stats(st, true);
        }
        let chance = w.failure_chance(before);
        if chance > 0.0 && (chance >= 1.0 || st.wear.draw() < chance) {
            st.wear.failed_writes += 1;
            // The first refusal is in the account at once; later ones as it is rewritten.
            let first = st.wear.failed_writes == 1;
            self.write_stats(st, first);
            return Err(nbdkit::Error::new(
                if w.mode == sinkrate_devicemodel::WearMode::ReadOnly {
                    libc::EROFS
                } else {
                    libc::EIO
                },
                format!(
                    "the card is worn out ({} written): write refused",
                    st.wear.written
                ),
            ));
        }
        st.wear.written += len;
        if before >= w.after_bytes && w.mode == sinkrate_devicemodel::WearMode::Stale {
            st.wear.lost_bytes += len;
            return Ok(false);
        }
        Ok(true)
    }

    /// A request that touches the bad sectors fails, once they are armed.
    fn check_bad(&self, offset: u64, len: usize) -> Result<()> {
        let s = &self.settings;
        if s.touches_bad(offset, len as u64) && s.armed_file.as_ref().is_none_or(|f| f.exists()) {
            return Err(nbdkit::Error::new(
                libc::EIO,
                format!("bad sectors at byte {offset} (+{len})"),
            ));
        }
        Ok(())
    }

    fn write_stats(&self, st: &mut State, now: bool) {
        let Some(path) = &self.settings.stats_file else {
            return;
        };
        if !now
            && st
                .stats_written
                .is_some_and(|t| t.elapsed() < Duration::from_millis(200))
        {
            return;
        }
        st.stats_written = Some(Instant::now());
        let text = format!(
            "{{\"busy_ns\": {}, \"gc_pauses\": {}, \"written_bytes\": {}, \"read_bytes\": {}, \"flushes\": {}, \"cache_held_bytes\": {}, \"cache_lost_bytes\": {}, \"slc_used_bytes\": {}, \"power_cut\": {}, \"power_cuts\": {}, \"wear_written_bytes\": {}, \"worn_out\": {}, \"worn_out_at_ms\": {}, \"worn_out_after_bytes\": {}, \"wear_failed_writes\": {}, \"wear_lost_bytes\": {}}}\n",
            st.timeline.busy_ns,
            st.timeline.gc_pauses,
            st.written_bytes,
            st.read_bytes,
            st.flushes,
            st.cache.as_ref().map_or(0, WriteCache::held_bytes),
            st.cache_lost_bytes,
            st.timeline.slc_used_bytes(),
            st.power_cut,
            st.power_cuts,
            st.wear.written,
            st.wear.worn_out_ms.is_some(),
            st.wear.worn_out_ms.map_or("null".to_string(), |m| m.to_string()),
            st.wear.worn_out_ms.map_or("null".to_string(), |_| st.wear.worn_out_written.to_string()),
            st.wear.failed_writes,
            st.wear.lost_bytes
        );
        write_atomically(path, &text);
    }

    /// Sleeps until the model says the request completes.
    fn complete(&self, served: Served) {
        let now = self.now_ns();
        if served.done_ns > now {
            std::thread::sleep(Duration::from_nanos(served.done_ns - now));
        }
    }
}

fn write_atomically(path: &Path, text: &str) {
    let _ = sinkrate_platform::durable::replace(path, text.as_bytes(), 0o644);
}

#[derive(Default)]
struct Card;

impl Server for Card {
    fn name() -> &'static str {
        "sinkrate"
    }

    fn description() -> Option<&'static str> {
        Some("a flash card: service time, GC pauses, SLC cache, volatile cache, fake capacity")
    }

    fn config(key: &str, value: &str) -> Result<()> {
        let mut b = BUILDER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        b.get_or_insert_with(SettingsBuilder::default)
            .set(key, value)
            .map_err(|e| nbdkit::Error::new(libc::EINVAL, e))
    }

    fn config_help() -> Option<&'static str> {
        Some(sinkrate_devicemodel::KEYS)
    }

    fn get_ready() -> Result<()> {
        let b = BUILDER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let settings = match b.as_ref() {
            Some(b) => b.build(),
            None => Err("size= and write-rate= are required".to_string()),
        }
        .map_err(|e| nbdkit::Error::new(libc::EINVAL, e))?;
        let media = settings.media_bytes();
        let flash = match &settings.file {
            Some(path) => {
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(path)
                    .map_err(io_error)?;
                if f.metadata().map_err(io_error)?.len() < media {
                    f.set_len(media).map_err(io_error)?;
                }
                Flash::File(f)
            }
            None => {
                let n = usize::try_from(media)
                    .map_err(|_| nbdkit::Error::new(libc::ENOMEM, "too large for memory"))?;
                Flash::Memory(vec![0; n])
            }
        };
        let seed = std::process::id() as u64 ^ 0x5EED;
        let state = State {
            flash,
            timeline: Timeline::new(settings.timing.clone(), seed),
            cache: settings.volatile_cache_bytes.map(WriteCache::new),
            power_cut: false,
            power_cuts: 0,
            cache_lost_bytes: 0,
            written_bytes: 0,
            read_bytes: 0,
            flushes: 0,
            stats_written: None,
            wear: Wear {
                rng: seed | 1,
                ..Wear::default()
            },
        };
        let _ = DEVICE.set(Device {
            settings,
            origin: Instant::now(),
            state: Mutex::new(state),
        });
        Ok(())
    }

    fn thread_model() -> Result<ThreadModel> {
        Ok(ThreadModel::Parallel)
    }

    fn open(_readonly: bool) -> Result<Box<dyn Server>> {
        Ok(Box::new(Card))
    }

    fn get_size(&self) -> Result<i64> {
        Ok(device()?.settings.size_bytes as i64)
    }

    fn can_flush(&self) -> Result<bool> {
        Ok(true)
    }

    fn can_fua(&self) -> Result<FuaFlags> {
        Ok(FuaFlags::Native)
    }

    fn can_multi_conn(&self) -> Result<bool> {
        Ok(false)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let dev = device()?;
        dev.check_bad(offset, buf.len())?;
        dev.serve(false, |st, now| {
            for p in pieces(dev.settings.fake, offset, buf.len()) {
                let part = &mut buf[p.request_offset..p.request_offset + p.len];
                match p.media_offset {
                    Some(at) => match &st.cache {
                        Some(c) => c.read(&mut st.flash, at, part),
                        None => st.flash.read(at, part),
                    }
                    .map_err(io_error)?,
                    None => part.fill(0),
                }
            }
            st.read_bytes += buf.len() as u64;
            Ok(st.timeline.read(now, buf.len() as u64))
        })
    }

    fn write_at(&self, buf: &[u8], offset: u64, flags: nbdkit::Flags) -> Result<()> {
        let dev = device()?;
        dev.check_bad(offset, buf.len())?;
        dev.serve(false, |st, now| {
            let keep = dev.wear(st, buf.len() as u64)?;
            if !keep {
                st.written_bytes += buf.len() as u64;
                return Ok(st.timeline.write_at(now, offset, buf.len() as u64));
            }
            for p in pieces(dev.settings.fake, offset, buf.len()) {
                let Some(at) = p.media_offset else {
                    continue;
                };
                let part = &buf[p.request_offset..p.request_offset + p.len];
                match &mut st.cache {
                    Some(c) => c.write(&mut st.flash, at, part),
                    None => st.flash.write(at, part),
                }
                .map_err(io_error)?;
            }
            if flags.contains(nbdkit::Flags::FUA) {
                if let Some(c) = &mut st.cache {
                    c.flush(&mut st.flash).map_err(io_error)?;
                }
            }
            st.written_bytes += buf.len() as u64;
            Ok(st.timeline.write_at(now, offset, buf.len() as u64))
        })
    }

    fn flush(&self) -> Result<()> {
        let dev = device()?;
        dev.serve(true, |st, now| {
            if let Some(c) = &mut st.cache {
                c.flush(&mut st.flash).map_err(io_error)?;
            }
            if let Flash::File(f) = &st.flash {
                f.sync_data().map_err(io_error)?;
            }
            st.flushes += 1;
            Ok(st.timeline.command(now))
        })
    }

    fn unload() {
        if let Some(dev) = DEVICE.get() {
            let mut st = dev.lock();
            dev.write_stats(&mut st, true);
        }
    }
}

plugin!(Card {
    config,
    get_ready,
    thread_model,
    can_flush,
    can_fua,
    can_multi_conn,
    write_at,
    flush,
    unload
});
