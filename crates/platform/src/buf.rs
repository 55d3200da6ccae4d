//! Page-aligned, zero-initialised I/O buffers: O_DIRECT needs the alignment, and a buffer
//! handed to the kernel (io_uring) must not move while it is in flight.

use std::alloc::{alloc_zeroed, dealloc, Layout};

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
