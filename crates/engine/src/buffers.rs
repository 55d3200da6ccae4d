//! Page-aligned I/O buffers (O_DIRECT needs alignment) and their contents.

use std::alloc::{alloc_zeroed, dealloc, Layout};

use sinkrate_jobspec::JobOptions;

use crate::rng::Rng;

pub const ALIGN: usize = 4096;

/// One aligned, zero-initialised buffer.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// The buffer owns its memory exclusively; moving it to a worker thread is sound.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let size = len.max(1).div_ceil(ALIGN) * ALIGN;
        let layout = Layout::from_size_align(size, ALIGN)
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(Layout::new::<u8>()));
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() bytes for the lifetime of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// How write buffers are filled, from the job's buffer options.
#[derive(Clone, Debug, PartialEq)]
pub enum Contents {
    Zero,
    Pattern(Vec<u8>),
    /// Random data, refilled before every write.
    RandomRefill,
    /// Random data once, with a few bytes changed per write so no two blocks are equal
    /// (fio's scramble_buffers, which defeats deduplicating devices cheaply).
    RandomScrambled,
    Random,
}

impl Contents {
    pub fn from_options(o: &JobOptions) -> Contents {
        if let Some(p) = &o.buffer_pattern {
            Contents::Pattern(p.clone())
        } else if o.zero_buffers {
            Contents::Zero
        } else if o.refill_buffers {
            Contents::RandomRefill
        } else if o.scramble_buffers {
            Contents::RandomScrambled
        } else {
            Contents::Random
        }
    }

    pub fn initial_fill(&self, buf: &mut [u8], rng: &mut Rng) {
        match self {
            Contents::Zero => buf.fill(0),
            Contents::Pattern(p) => {
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = p[i % p.len()];
                }
            }
            _ => rng.fill(buf),
        }
    }

    /// Called before each write of `len` bytes from `buf`.
    #[inline]
    pub fn before_write(&self, buf: &mut [u8], len: usize, offset: u64, rng: &mut Rng) {
        match self {
            Contents::RandomRefill => rng.fill(&mut buf[..len]),
            Contents::RandomScrambled if len >= 16 => {
                let stamp = offset ^ rng.next_u64();
                buf[..8].copy_from_slice(&stamp.to_le_bytes());
                let at = (rng.below((len / 8) as u64) as usize) * 8;
                let at = at.min(len - 8);
                buf[at..at + 8].copy_from_slice(&rng.next_u64().to_le_bytes());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_filled() {
        let mut b = AlignedBuf::new(10_000);
        assert_eq!(b.as_mut_ptr() as usize % ALIGN, 0);
        assert_eq!(b.as_slice().len(), 12_288);
        let mut rng = Rng::new(3);
        Contents::Pattern(vec![0xde, 0xad]).initial_fill(b.as_mut_slice(), &mut rng);
        assert_eq!(&b.as_slice()[..4], &[0xde, 0xad, 0xde, 0xad]);
        let before = b.as_slice()[..64].to_vec();
        Contents::RandomScrambled.before_write(b.as_mut_slice(), 64, 0, &mut rng);
        assert_ne!(before, b.as_slice()[..64].to_vec());
    }
}
