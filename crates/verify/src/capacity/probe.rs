//! The fast capacity probe, on anything that reads and writes at offsets: a few well-placed
//! writes find whether the device holds what it reports, and if not, where its real end is
//! and what it does past it.
//!
//! Every 512-byte sector written carries the address it was written to. A counterfeit that
//! wraps stores a write at `a` in the cell `a mod R`, so a sector written at `q` turns up at
//! `q - R`. The probe writes a low region `[0, L)` in full, then one unit at every multiple
//! of `L` up to the end and the last unit: the first multiple past `R` lands within `L` of
//! `R`, so its wrapped copy falls in the low region, where a read finds a sector naming
//! another address, and the distance is `R` to the sector. A card that drops writes past
//! `R` reads back zeros or old data there instead; a binary search between the last good
//! and the first bad unit finds `R`, again to the sector.

use sinkrate_platform::buf::AlignedBuf;

use sinkrate_formats::capacity_tag::{fill_unit, read_tag, SECTOR};
use sinkrate_model::verify::Behaviour;

/// Units the probe writes: O_DIRECT-aligned for any logical block size up to 4 KiB.
pub const UNIT: u64 = 4096;
/// The low region is written in pieces of this size.
const CHUNK: u64 = 1 << 20;
/// Below this there is too little to tell a real card from a fake.
pub const MIN_DEVICE: u64 = 4 << 20;

/// A device the probe can use; the real one opens with O_DIRECT.
pub trait Device {
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
    fn write_at(&mut self, buf: &[u8], offset: u64) -> std::io::Result<()>;
    /// Past the device's own cache: the medium has every write so far.
    fn sync(&mut self) -> std::io::Result<()>;
}

/// Called with every (offset, length) before they are written: the undo journal saves what
/// the probe overwrites, durably, in one go.
pub trait BeforeWrite {
    fn save(&mut self, dev: &mut dyn Device, places: &[(u64, u64)]) -> std::io::Result<()>;
}

/// Saves nothing: `--destructive`.
pub struct NoUndo;
impl BeforeWrite for NoUndo {
    fn save(&mut self, _: &mut dyn Device, _: &[(u64, u64)]) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub reported_bytes: u64,
    /// Bytes that keep their data, counted from the start; the reported size when genuine.
    pub real_bytes: u64,
    pub behaviour: Behaviour,
    /// For a wrap: the address whose data turned up at a lower one.
    pub wrap_evidence: Option<(u64, u64)>,
    pub low_region_bytes: u64,
    pub units_written: u64,
    pub bytes_written: u64,
}

/// What the sectors of a buffer read back at `offset` hold, against run `run_id`.
enum SectorState {
    Own,
    /// A sector of this run written to another address.
    From(u64),
    Other,
}

fn sector_states(
    buf: &[u8],
    offset: u64,
    run_id: u64,
) -> impl Iterator<Item = (u64, SectorState)> + '_ {
    buf.chunks_exact(SECTOR).enumerate().map(move |(i, s)| {
        let at = offset + (i * SECTOR) as u64;
        let state = match read_tag(s) {
            Some((run, addr)) if run == run_id && addr == at => SectorState::Own,
            Some((run, addr)) if run == run_id => SectorState::From(addr),
            _ => SectorState::Other,
        };
        (at, state)
    })
}

/// The low region: about the square root of (size x 50 ms of a card's 1 MB/s-class random
/// writes), so that writing it and the units above it take similar time; a power of two
/// from 1 MiB to 64 MiB, at most a quarter of the device.
pub fn low_region(size: u64) -> u64 {
    let ideal = ((size as f64) * 50_000.0).sqrt() as u64;
    let mut l = 1u64 << 20;
    while l < ideal && l < 64 << 20 {
        l <<= 1;
    }
    while l > size / 4 && l > UNIT {
        l >>= 1;
    }
    l
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub struct Probe<'a> {
    dev: &'a mut dyn Device,
    undo: &'a mut dyn BeforeWrite,
    run_id: u64,
    size: u64,
    stop: &'a dyn Fn() -> bool,
    progress: &'a mut dyn FnMut(&str, u64, u64),
    units_written: u64,
    bytes_written: u64,
}

#[derive(Debug)]
pub enum ProbeError {
    Io(&'static str, u64, std::io::Error),
    Interrupted,
}

impl<'a> Probe<'a> {
    pub fn new(
        dev: &'a mut dyn Device,
        undo: &'a mut dyn BeforeWrite,
        run_id: u64,
        size: u64,
        stop: &'a dyn Fn() -> bool,
        progress: &'a mut dyn FnMut(&str, u64, u64),
    ) -> Probe<'a> {
        Probe {
            dev,
            undo,
            run_id,
            size: size / UNIT * UNIT,
            stop,
            progress,
            units_written: 0,
            bytes_written: 0,
        }
    }

    fn save(&mut self, places: &[(u64, u64)]) -> Result<(), ProbeError> {
        let at = places.first().map_or(0, |p| p.0);
        self.undo
            .save(self.dev, places)
            .map_err(|e| ProbeError::Io("saving what the probe overwrites", at, e))
    }

    /// Writes tagged sectors at `offset`, whose old contents are already saved.
    fn write_tagged(&mut self, offset: u64, len: u64) -> Result<(), ProbeError> {
        if (self.stop)() {
            return Err(ProbeError::Interrupted);
        }
        let mut buf = AlignedBuf::new(len as usize);
        for (i, unit) in buf
            .as_mut_slice()
            .chunks_exact_mut(UNIT as usize)
            .enumerate()
        {
            fill_unit(unit, self.run_id, offset + i as u64 * UNIT);
        }
        self.dev
            .write_at(buf.as_slice(), offset)
            .map_err(|e| ProbeError::Io("writing", offset, e))?;
        self.units_written += len / UNIT;
        self.bytes_written += len;
        Ok(())
    }

    fn read(&mut self, offset: u64, len: u64) -> Result<AlignedBuf, ProbeError> {
        let mut buf = AlignedBuf::new(len as usize);
        self.dev
            .read_at(buf.as_mut_slice(), offset)
            .map_err(|e| ProbeError::Io("reading", offset, e))?;
        Ok(buf)
    }

    fn sync(&mut self) -> Result<(), ProbeError> {
        self.dev
            .sync()
            .map_err(|e| ProbeError::Io("flushing", 0, e))
    }

    /// The bytes from `offset` that read back as written (within one unit).
    fn good_prefix(&mut self, offset: u64) -> Result<u64, ProbeError> {
        let buf = self.read(offset, UNIT)?;
        let good = sector_states(buf.as_slice(), offset, self.run_id)
            .take_while(|(_, s)| matches!(s, SectorState::Own))
            .count();
        Ok((good * SECTOR) as u64)
    }

    pub fn run(mut self) -> Result<Outcome, ProbeError> {
        let size = self.size;
        let low = low_region(size);
        let highs: Vec<u64> = {
            let mut v: Vec<u64> = (1..)
                .map(|k| k * low)
                .take_while(|q| q + UNIT <= size)
                .collect();
            if v.last() != Some(&(size - UNIT)) && size - UNIT >= low {
                v.push(size - UNIT);
            }
            v
        };
        let total = low + highs.len() as u64 * UNIT;
        // Low region first, then the units above it: a wrapped high write overwrites the low
        // copy, never the other way round.
        let low_chunks: Vec<(u64, u64)> = (0..low.div_ceil(CHUNK))
            .map(|i| (i * CHUNK, CHUNK.min(low - i * CHUNK)))
            .collect();
        self.save(&low_chunks)?;
        let high_units: Vec<(u64, u64)> = highs.iter().map(|&q| (q, UNIT)).collect();
        self.save(&high_units)?;
        let mut done = 0;
        while done < low {
            let n = CHUNK.min(low - done);
            self.write_tagged(done, n)?;
            done += n;
            (self.progress)("writing", done, total);
        }
        // Highest first: a cell of the low region that several wrapped units reach keeps
        // the lowest of them, the one that wrapped only once.
        for (i, &q) in highs.iter().rev().enumerate() {
            self.write_tagged(q, UNIT)?;
            (self.progress)("writing", low + (i as u64 + 1) * UNIT, total);
        }
        self.sync()?;

        // Every distance seen is a multiple of the period; their greatest common divisor is
        // the period itself (a sector may show the second or third wrap, not the first).
        let mut wrap: Option<(u64, u64)> = None;
        let mut period = 0u64;
        let mut first_low_bad: Option<u64> = None;
        let mut done = 0;
        while done < low {
            let n = CHUNK.min(low - done);
            let buf = self.read(done, n)?;
            for (at, s) in sector_states(buf.as_slice(), done, self.run_id) {
                match s {
                    SectorState::Own => {}
                    SectorState::From(addr) if addr > at => {
                        period = gcd(period, addr - at);
                        if wrap.is_none_or(|(a, p)| addr - at < a - p) {
                            wrap = Some((addr, at));
                        }
                    }
                    _ => {
                        first_low_bad.get_or_insert(at);
                    }
                }
            }
            done += n;
            (self.progress)("reading", done, total);
        }
        let mut first_high_bad: Option<(usize, u64)> = None;
        for (i, &q) in highs.iter().enumerate() {
            let good = self.good_prefix(q)?;
            if good < UNIT {
                first_high_bad = Some((i, q + good));
                break;
            }
        }
        let outcome = |real: u64, behaviour, wrap_evidence, p: &Probe| Outcome {
            reported_bytes: size,
            real_bytes: real,
            behaviour,
            wrap_evidence,
            low_region_bytes: low,
            units_written: p.units_written,
            bytes_written: p.bytes_written,
        };
        if wrap.is_some() {
            return Ok(outcome(period, Behaviour::Wraps, wrap, &self));
        }
        if let Some(bad) = first_low_bad {
            return Ok(outcome(bad, Behaviour::Damages, None, &self));
        }
        let Some((i, bad_at)) = first_high_bad else {
            return Ok(outcome(size, Behaviour::Genuine, None, &self));
        };
        // The real end lies between the last unit that kept its data and `bad_at`.
        let mut lo = if i == 0 { low } else { highs[i - 1] + UNIT };
        let mut hi = bad_at / UNIT * UNIT;
        if bad_at % UNIT != 0 {
            return Ok(outcome(bad_at, Behaviour::Drops, None, &self));
        }
        // Invariant: units below `lo` are good, the unit at `hi` is bad.
        while lo < hi {
            let mid = lo + (hi - lo) / UNIT / 2 * UNIT;
            self.save(&[(mid, UNIT)])?;
            self.write_tagged(mid, UNIT)?;
            self.sync()?;
            let good = self.good_prefix(mid)?;
            if good == UNIT {
                lo = mid + UNIT;
            } else {
                hi = mid;
                if good > 0 {
                    return Ok(outcome(mid + good, Behaviour::Drops, None, &self));
                }
            }
        }
        Ok(outcome(hi, Behaviour::Drops, None, &self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_devicemodel::fake::{pieces, FakeCapacity, FakeMode};

    /// A card in memory, honest or counterfeit, served by the emulator's own address model.
    struct Card {
        reported: u64,
        fake: Option<FakeCapacity>,
        flash: Vec<u8>,
    }

    impl Card {
        fn new(reported: u64, real: Option<(u64, FakeMode)>) -> Card {
            let fake = real.map(|(r, mode)| FakeCapacity {
                real_bytes: r,
                mode,
            });
            let flash_len = fake.map_or(reported, |f| f.real_bytes) as usize;
            // What was on the card before: a recognisable pattern to restore.
            let flash = (0..flash_len).map(|i| (i % 251) as u8).collect();
            Card {
                reported,
                fake,
                flash,
            }
        }
    }

    impl Device for Card {
        fn read_at(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            for p in pieces(self.fake, offset, buf.len()) {
                let part = &mut buf[p.request_offset..p.request_offset + p.len];
                match p.media_offset {
                    Some(m) => part.copy_from_slice(&self.flash[m as usize..m as usize + p.len]),
                    None => part.fill(0),
                }
            }
            Ok(())
        }
        fn write_at(&mut self, buf: &[u8], offset: u64) -> std::io::Result<()> {
            assert!(offset + buf.len() as u64 <= self.reported);
            for p in pieces(self.fake, offset, buf.len()) {
                if let Some(m) = p.media_offset {
                    self.flash[m as usize..m as usize + p.len]
                        .copy_from_slice(&buf[p.request_offset..p.request_offset + p.len]);
                }
            }
            Ok(())
        }
        fn sync(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn probe(card: &mut Card) -> Outcome {
        let size = card.reported;
        let mut undo = NoUndo;
        let mut progress = |_: &str, _: u64, _: u64| {};
        Probe::new(card, &mut undo, 42, size, &|| false, &mut progress)
            .run()
            .unwrap()
    }

    const GIB: u64 = 1 << 30;

    fn probe_min() -> u64 {
        MIN_DEVICE
    }

    #[test]
    fn a_genuine_card_is_genuine() {
        let mut card = Card::new(256 << 20, None);
        let o = probe(&mut card);
        assert_eq!((o.behaviour, o.real_bytes), (Behaviour::Genuine, 256 << 20));
    }

    #[test]
    fn a_wrapping_card_is_caught_at_its_real_size_to_the_sector() {
        for real in [64 << 20, (64 << 20) + 1536, 195_327 * 512, 3 << 20] {
            let mut card = Card::new(GIB, Some((real, FakeMode::Wrap)));
            let o = probe(&mut card);
            assert_eq!(
                (o.behaviour, o.real_bytes),
                (Behaviour::Wraps, real),
                "{real}"
            );
            assert!(o.bytes_written < 64 << 20, "{}", o.bytes_written);
        }
    }

    #[test]
    fn a_dropping_card_is_caught_at_its_real_size_to_the_sector() {
        for real in [
            512 << 20,
            (300 << 20) + 4096 * 3,
            (200 << 20) + 2048,
            409_611 * 512,
        ] {
            let mut card = Card::new(GIB, Some((real, FakeMode::Drop)));
            let o = probe(&mut card);
            assert_eq!(
                (o.behaviour, o.real_bytes),
                (Behaviour::Drops, real),
                "{real}"
            );
        }
    }

    #[test]
    fn the_undo_journal_puts_back_every_byte_also_on_a_wrapping_card() {
        let dir = tempfile::tempdir().unwrap();
        let device = dir.path().join("device");
        std::fs::write(&device, b"stands for the device").unwrap();
        let mut card = Card::new(GIB, Some((64 << 20, FakeMode::Wrap)));
        let before = card.flash.clone();
        let mut journal =
            super::super::undo::Journal::create(dir.path(), &device, GIB, 42).unwrap();
        let path = journal.path.clone();
        let mut progress = |_: &str, _: u64, _: u64| {};
        let o = Probe::new(&mut card, &mut journal, 42, GIB, &|| false, &mut progress)
            .run()
            .unwrap();
        assert_eq!(o.real_bytes, 64 << 20);
        assert!(card.flash != before);
        assert_eq!(journal.saved_bytes, o.bytes_written);
        // A running probe's journal is not another run's to play back; a killed one's is,
        // for one run at a time.
        assert!(super::super::undo::claim(&path).unwrap().is_none());
        drop(journal);
        let claimed = super::super::undo::claim(&path).unwrap();
        assert!(claimed.is_some());
        assert!(super::super::undo::claim(&path).unwrap().is_none());
        drop(claimed);
        let saved = super::super::undo::read(&path).unwrap();
        assert_eq!(saved.size, GIB);
        super::super::undo::play_back(&saved, &mut card).unwrap();
        assert!(card.flash == before);
        // A record cut short by a kill (its write never happened) is left out.
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 100).unwrap();
        let cut = super::super::undo::read(&path).unwrap();
        assert_eq!(cut.records.len(), saved.records.len() - 1);
    }

    #[test]
    fn the_low_region_grows_with_the_device_within_bounds() {
        assert_eq!(low_region(8 * GIB), 32 << 20);
        assert_eq!(low_region(64 * GIB), 64 << 20);
        assert_eq!(low_region(8 << 20), 1 << 20);
        assert_eq!(low_region(probe_min()), 1 << 20);
    }
}
