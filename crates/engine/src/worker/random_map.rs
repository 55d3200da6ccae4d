//! fio's random map for jobs whose block sizes vary (bsrange, bssplit): which of the file's
//! smallest blocks a pass has touched, so that a random pass touches each once.
//!
//! A plain bitmap, by hand: the one operation this needs besides set and test, the first
//! clear bit at or after an index (wrapping), is a word scan that the bitset crates do not
//! offer from an index.

pub(super) struct RandomMap {
    words: Vec<u64>,
    blocks: u64,
    touched: u64,
}

impl RandomMap {
    pub(super) fn new(blocks: u64) -> RandomMap {
        RandomMap {
            words: vec![0; blocks.div_ceil(64) as usize],
            blocks,
            touched: 0,
        }
    }

    fn is_set(&self, block: u64) -> bool {
        self.words[(block / 64) as usize] & (1 << (block % 64)) != 0
    }

    /// The first untouched block at or after `from`, wrapping to the start, as fio's
    /// axmap_next_free; `None` when the pass has touched every block.
    pub(super) fn next_free(&self, from: u64) -> Option<u64> {
        if self.touched >= self.blocks {
            return None;
        }
        let start = from % self.blocks;
        let nwords = self.words.len() as u64;
        for step in 0..=nwords {
            let w = (start / 64 + step) % nwords;
            // The first word scanned is masked below `start`; past the wrap, whole words.
            let mut free = !self.words[w as usize];
            if step == 0 {
                free &= !0u64 << (start % 64);
            }
            while free != 0 {
                let block = w * 64 + u64::from(free.trailing_zeros());
                if block < self.blocks {
                    return Some(block);
                }
                free &= free - 1;
            }
        }
        // Only bits below `start` in its own word remain.
        (0..self.blocks).find(|&b| !self.is_set(b))
    }

    /// Touches up to `count` blocks from `first`, stopping at the first one already
    /// touched (fio's mark_random_map shortens the I/O there); returns how many.
    pub(super) fn touch_run(&mut self, first: u64, count: u64) -> u64 {
        let mut done = 0;
        while done < count && first + done < self.blocks && !self.is_set(first + done) {
            let b = first + done;
            self.words[(b / 64) as usize] |= 1 << (b % 64);
            done += 1;
        }
        self.touched += done;
        done
    }

    /// A new pass: every block untouched again.
    pub(super) fn restart(&mut self) {
        self.words.fill(0);
        self.touched = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_touches_every_block_once_and_runs_stop_at_touched_ones() {
        let mut m = RandomMap::new(130);
        assert_eq!(m.touch_run(5, 3), 3);
        assert_eq!(m.next_free(5), Some(8));
        assert_eq!(m.touch_run(3, 4), 2, "stops at block 5");
        assert_eq!(m.next_free(129), Some(129));
        assert_eq!(m.touch_run(129, 8), 1, "stops at the end");
        assert_eq!(m.next_free(129), Some(0), "wraps");
        let mut total = 6;
        while let Some(b) = m.next_free(77) {
            total += m.touch_run(b, 3);
        }
        assert_eq!(total, 130);
        m.restart();
        assert_eq!(m.next_free(64), Some(64));
    }
}
