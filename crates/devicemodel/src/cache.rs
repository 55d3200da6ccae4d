//! A volatile write cache: writes are acknowledged when they are in the cache, reach the
//! medium when the host flushes (or sends FUA) or when the cache needs room, and are lost if
//! the power goes first.

use std::collections::VecDeque;

/// The medium under the cache.
pub trait Medium {
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
    fn write(&mut self, offset: u64, data: &[u8]) -> std::io::Result<()>;
}

#[derive(Debug, Default)]
pub struct WriteCache {
    capacity_bytes: u64,
    held_bytes: u64,
    /// Writes in arrival order: later ones win where they overlap.
    entries: VecDeque<(u64, Vec<u8>)>,
    pub written_back_bytes: u64,
}

impl WriteCache {
    pub fn new(capacity_bytes: u64) -> WriteCache {
        WriteCache {
            capacity_bytes,
            ..WriteCache::default()
        }
    }

    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Takes a write; the oldest writes go to the medium first when it is full.
    pub fn write(
        &mut self,
        medium: &mut dyn Medium,
        offset: u64,
        data: &[u8],
    ) -> std::io::Result<()> {
        if data.len() as u64 > self.capacity_bytes {
            self.flush(medium)?;
            self.written_back_bytes += data.len() as u64;
            return medium.write(offset, data);
        }
        while self.held_bytes + data.len() as u64 > self.capacity_bytes {
            let Some((at, old)) = self.entries.pop_front() else {
                break;
            };
            self.held_bytes -= old.len() as u64;
            self.written_back_bytes += old.len() as u64;
            medium.write(at, &old)?;
        }
        self.held_bytes += data.len() as u64;
        self.entries.push_back((offset, data.to_vec()));
        Ok(())
    }

    /// What the host reads: the medium, with the cache's newer data laid over it.
    pub fn read(
        &self,
        medium: &mut dyn Medium,
        offset: u64,
        buf: &mut [u8],
    ) -> std::io::Result<()> {
        medium.read(offset, buf)?;
        let end = offset + buf.len() as u64;
        for (at, data) in &self.entries {
            let (a, b) = (*at, *at + data.len() as u64);
            if b <= offset || a >= end {
                continue;
            }
            let from = a.max(offset);
            let to = b.min(end);
            buf[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&data[(from - a) as usize..(to - a) as usize]);
        }
        Ok(())
    }

    pub fn flush(&mut self, medium: &mut dyn Medium) -> std::io::Result<()> {
        while let Some((at, data)) = self.entries.pop_front() {
            self.held_bytes -= data.len() as u64;
            self.written_back_bytes += data.len() as u64;
            medium.write(at, &data)?;
        }
        Ok(())
    }

    /// The power went: what the cache held is gone. Returns the bytes lost.
    pub fn lose(&mut self) -> u64 {
        let lost = self.held_bytes;
        self.entries.clear();
        self.held_bytes = 0;
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ram(Vec<u8>);
    impl Medium for Ram {
        fn read(&mut self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            let o = offset as usize;
            buf.copy_from_slice(&self.0[o..o + buf.len()]);
            Ok(())
        }
        fn write(&mut self, offset: u64, data: &[u8]) -> std::io::Result<()> {
            let o = offset as usize;
            self.0[o..o + data.len()].copy_from_slice(data);
            Ok(())
        }
    }

    #[test]
    fn reads_see_cached_writes_and_the_medium_sees_them_after_a_flush() {
        let mut m = Ram(vec![0; 64]);
        let mut c = WriteCache::new(32);
        c.write(&mut m, 8, &[1; 8]).unwrap();
        c.write(&mut m, 12, &[2; 8]).unwrap();
        let mut buf = [0u8; 16];
        c.read(&mut m, 4, &mut buf).unwrap();
        assert_eq!(buf, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2]);
        assert_eq!(m.0[8], 0);
        c.flush(&mut m).unwrap();
        assert_eq!(&m.0[8..20], &[1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2]);
        assert_eq!(c.held_bytes(), 0);
    }

    #[test]
    fn a_power_cut_loses_what_was_not_flushed_and_a_full_cache_writes_back_the_oldest() {
        let mut m = Ram(vec![0; 64]);
        let mut c = WriteCache::new(16);
        c.write(&mut m, 0, &[1; 8]).unwrap();
        c.write(&mut m, 8, &[2; 8]).unwrap();
        c.write(&mut m, 16, &[3; 8]).unwrap();
        assert_eq!(&m.0[0..8], &[1; 8]);
        assert_eq!(c.lose(), 16);
        assert_eq!(&m.0[8..24], &[0; 16]);
    }
}
