//! A global allocator for Linux that maps large buffers in transparent huge pages and takes
//! everything else from the system allocator — the `bitlens` CLI's (a helper, not from a paper).
//!
//! A `compress` / `decompress` run works through a few MiB of frame buffers (docs/FORMAT.md §1:
//! 1 MiB LMC frames; the container's ring of slots and per-thread scratch), and each is new to the
//! process, so every 4 KiB page of it costs a page fault on first touch — about 1.2 µs in these
//! VMs, 1 ms of a 13 ms decompression on one thread and 2 ms of CPU on two (BENCHMARKS.md, issue
//! 16). Mapped in 2 MiB-aligned runs with `MADV_HUGEPAGE`, such a buffer faults once per 2 MiB
//! (the kernel hands out a zeroed huge page: ~30 µs when measured for issue 16). Allocations of
//! [`HUGE_FROM`] bytes or more take that path, smaller ones go to [`System`]. Where the kernel
//! gives no huge page (THP off, memory fragmented) the mapping is an ordinary one. Up to 32 MiB
//! of freed mappings are kept for reuse, as the system allocator keeps its heap: code that frees
//! and allocates a large buffer again and again (`inspect`'s windows) then faults it once, not
//! every time.
//!
//! The cost: such an allocation is rounded up to 2 MiB, so a 1 MiB frame buffer can hold 2 MiB
//! of memory once touched; peak RSS stays bounded by the frame size and thread count. And the
//! kernel zeroes the whole 2 MiB on the first touch, used or not (0.07–0.2 ms a huge page here,
//! against ~1 µs a 4 KiB page): for a buffer of less than about 1 MiB, small pages cost less.
//! So the mapped path starts at 1 MiB (the frame buffers), and a decoder's 256 KiB row of byte
//! groups stays on the system allocator: one thread compressing or decompressing a 13 MB
//! checkpoint ran 4–7 % faster than with the mapped path from 256 KiB (BENCHMARKS.md, issue 28,
//! sixth session).
//!
//! The operating system's part is in `os`: under Miri (the test command runs this crate's tests
//! in it) the mapping calls are replaced by an aligned allocation of the same size, because Miri
//! models `mmap` but neither the partial `munmap` that aligns a mapping nor `madvise`; Miri then
//! checks everything above the system calls — sizes, the reuse cache, resizing, zeroing — and the
//! aligning itself is checked by the native tests.
#![cfg(target_os = "linux")]
// The allocator is `unsafe` by nature (the `GlobalAlloc` contract, mmap): every block says why it
// is sound, and the test command runs this crate's tests under Miri.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations this large or larger are mapped in huge pages (see the module doc for why 1 MiB).
pub const HUGE_FROM: usize = 1 << 20;

/// A huge page's size on x86-64 and aarch64 with 4 KiB base pages.
const HUGE_PAGE: usize = 2 << 20;

/// The global allocator described in the module doc.
pub struct HugePageAlloc;

/// True when an allocation of `layout` takes the mapped path (and so must be freed by it).
fn mapped(layout: &Layout) -> bool {
    layout.size() >= HUGE_FROM && layout.align() <= HUGE_PAGE
}

/// `n` rounded up to whole huge pages (`None` on overflow).
fn huge_len(n: usize) -> Option<usize> {
    n.checked_add(HUGE_PAGE - 1).map(|n| n & !(HUGE_PAGE - 1))
}

mod map {
    //! The mapped path: anonymous, private, 2 MiB-aligned mappings, and a few freed ones kept
    //! for reuse.
    use super::{huge_len, HUGE_PAGE};
    use std::ptr::null_mut;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Freed mappings kept for the next allocation of the same length: `address | length in
    /// huge pages` (an address is 2 MiB-aligned, so its low 21 bits are free), 0 when empty.
    static KEPT: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

    /// Bytes held in [`KEPT`], at most [`KEEP_AT_MOST`].
    static KEPT_BYTES: AtomicUsize = AtomicUsize::new(0);

    /// The most freed memory kept for reuse.
    const KEEP_AT_MOST: usize = 32 << 20;

    /// Maps `size` bytes (rounded up to 2 MiB) at a 2 MiB boundary and asks for huge pages, or
    /// reuses a kept mapping of that length; null when the kernel refuses. `zeroed` says the
    /// caller wants zeros (a fresh mapping has them; a reused one is cleared).
    pub fn map(size: usize, zeroed: bool) -> *mut u8 {
        let Some(len) = huge_len(size) else {
            return null_mut();
        };
        if let Some(p) = take_kept(len) {
            if zeroed {
                // SAFETY: `p` is a kept mapping of `len` ≥ `size` bytes that nobody else holds
                // (taking it out of `KEPT` was the one successful exchange).
                unsafe { std::ptr::write_bytes(p, 0, size) };
            }
            return p;
        }
        super::os::map_aligned(len)
    }

    /// Releases what [`map`] returned for `size` bytes at `ptr`: kept for reuse while there is
    /// room, unmapped otherwise.
    pub fn unmap(ptr: *mut u8, size: usize) {
        let Some(len) = huge_len(size) else {
            return;
        };
        if keep(ptr, len) {
            return;
        }
        // SAFETY: `ptr` and `len` are those of a mapping made by `map` for `size` bytes (the
        // caller's contract), which nothing uses any more.
        unsafe { super::os::unmap_aligned(ptr, len) }
    }

    /// Takes a kept mapping of exactly `len` bytes out of [`KEPT`].
    fn take_kept(len: usize) -> Option<*mut u8> {
        let pages = len / HUGE_PAGE;
        for cell in &KEPT {
            let v = cell.load(Ordering::Relaxed);
            if v != 0
                && v & (HUGE_PAGE - 1) == pages
                && cell
                    .compare_exchange(v, 0, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                KEPT_BYTES.fetch_sub(len, Ordering::Relaxed);
                return Some(std::ptr::with_exposed_provenance_mut(v & !(HUGE_PAGE - 1)));
            }
        }
        None
    }

    /// Puts the mapping at `ptr` of `len` bytes into [`KEPT`] if a cell is free and the bytes
    /// kept stay within [`KEEP_AT_MOST`]; false when it was not kept.
    fn keep(ptr: *mut u8, len: usize) -> bool {
        let pages = len / HUGE_PAGE;
        if pages >= HUGE_PAGE || KEPT_BYTES.fetch_add(len, Ordering::Relaxed) + len > KEEP_AT_MOST {
            KEPT_BYTES.fetch_sub(len, Ordering::Relaxed);
            return false;
        }
        let v = ptr.expose_provenance() | pages;
        for cell in &KEPT {
            if cell
                .compare_exchange(0, v, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
        }
        KEPT_BYTES.fetch_sub(len, Ordering::Relaxed);
        false
    }
}

mod os {
    //! The operating system's part of the mapped path: `len` bytes (a multiple of [`HUGE_PAGE`])
    //! at a 2 MiB boundary, and their release.
    use super::HUGE_PAGE;
    use std::ptr::null_mut;

    /// Maps `len` bytes (a multiple of [`HUGE_PAGE`]) at a 2 MiB boundary and asks for huge
    /// pages; null when the kernel refuses.
    #[cfg(not(miri))]
    pub fn map_aligned(len: usize) -> *mut u8 {
        let Some(span) = len.checked_add(HUGE_PAGE) else {
            return null_mut();
        };
        // SAFETY: an anonymous private mapping of `span` bytes at an address of the kernel's
        // choosing aliases no memory of this process; the result is checked before use.
        let p = unsafe {
            libc::mmap(
                null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return null_mut();
        }
        let start = p as usize;
        let aligned = (start + HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
        let (head, tail) = (aligned - start, start + span - (aligned + len));
        // SAFETY: the head `[start, aligned)` and the tail `[aligned + len, start + span)` lie
        // inside the mapping just made and are handed to nobody; unmapping them leaves exactly
        // `[aligned, aligned + len)`, page-aligned (mmap returns page-aligned addresses and both
        // lengths are multiples of the page size). `madvise` only advises on that range.
        unsafe {
            if head > 0 {
                libc::munmap(p, head);
            }
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        aligned as *mut u8
    }

    /// Releases a mapping [`map_aligned`] made.
    ///
    /// # Safety
    /// `ptr` and `len` are those of a mapping `map_aligned` made that nothing uses any more.
    #[cfg(not(miri))]
    pub unsafe fn unmap_aligned(ptr: *mut u8, len: usize) {
        // SAFETY: the caller's contract: a whole mapping of ours, unused.
        unsafe {
            libc::munmap(ptr.cast(), len);
        }
    }

    /// Under Miri: a zeroed allocation of `len` bytes aligned to 2 MiB (see the crate doc).
    #[cfg(miri)]
    pub fn map_aligned(len: usize) -> *mut u8 {
        use std::alloc::GlobalAlloc;
        match std::alloc::Layout::from_size_align(len, HUGE_PAGE) {
            // SAFETY: `len` is a non-zero multiple of `HUGE_PAGE` (the caller's contract).
            Ok(layout) => unsafe { std::alloc::System.alloc_zeroed(layout) },
            Err(_) => null_mut(),
        }
    }

    /// Under Miri: frees what [`map_aligned`] allocated.
    ///
    /// # Safety
    /// As the native version.
    #[cfg(miri)]
    pub unsafe fn unmap_aligned(ptr: *mut u8, len: usize) {
        use std::alloc::GlobalAlloc;
        // SAFETY: `ptr` came from `map_aligned(len)`, which used exactly this layout.
        unsafe {
            std::alloc::System.dealloc(
                ptr,
                std::alloc::Layout::from_size_align_unchecked(len, HUGE_PAGE),
            )
        }
    }
}

// SAFETY: the layout alone decides the path (`mapped`), so a block is always freed by the path
// that made it: the system allocator's blocks go back to it, and a mapped block is a fresh
// mapping of at least `layout.size()` bytes at a 2 MiB boundary (≥ `layout.align()`, which
// `mapped` bounds) that `unmap` releases with the same size. A mapping the kernel refuses is
// reported as a failed allocation (null), never replaced by a system block `dealloc` would unmap.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map::map(layout.size(), false)
        } else {
            // SAFETY: forwarded with the caller's layout (non-zero size, GlobalAlloc's contract).
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map::map(layout.size(), true)
        } else {
            // SAFETY: as in `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mapped(&layout) {
            map::unmap(ptr, layout.size());
        } else {
            // SAFETY: `ptr` came from `System` with this layout (the caller's contract and the
            // path split above).
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded up to `layout.align()`, fits an isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (mapped(&layout), mapped(&new_layout)) {
            // SAFETY: a system block resized by the system allocator.
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            (true, true) if huge_len(layout.size()) == huge_len(new_size) => ptr,
            _ => {
                // SAFETY: `new_layout` is valid (above); the new block holds `min` bytes, which
                // the old one holds too; the old block is freed by the path that made it.
                unsafe {
                    let new = self.alloc(new_layout);
                    if !new.is_null() {
                        let min = layout.size().min(new_size);
                        std::ptr::copy_nonoverlapping(ptr, new, min);
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes between the bytes a test writes and checks: every one natively; under Miri, which
    /// interprets each access, a sample (still every block's first and last byte).
    const STEP: usize = if cfg!(miri) { 4093 } else { 1 };

    /// Every size class and both paths: blocks are aligned, writable to their last byte, keep
    /// their bytes across every kind of resize, and a mapped block reads as zeros when asked.
    #[test]
    fn blocks_hold_their_bytes_through_every_resize() {
        let a = HugePageAlloc;
        let sizes = [
            1,
            4095,
            HUGE_FROM - 1,
            HUGE_FROM,
            HUGE_PAGE - 1,
            HUGE_PAGE,
            HUGE_PAGE + 1,
            5 * HUGE_PAGE + 17,
        ];
        for &from in &sizes {
            for &to in &sizes {
                let layout = Layout::from_size_align(from, 16).unwrap();
                // SAFETY: a non-zero layout; the block is written within its size, resized
                // with its own layout and freed with the resized one.
                unsafe {
                    let p = a.alloc_zeroed(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % 16, 0);
                    assert!((0..from).step_by(4093).all(|i| *p.add(i) == 0));
                    for i in (0..from).step_by(STEP).chain([from - 1]) {
                        *p.add(i) = (i % 251) as u8;
                    }
                    let q = a.realloc(p, layout, to);
                    assert!(!q.is_null());
                    let kept = from.min(to);
                    assert!(
                        (0..kept)
                            .step_by(STEP)
                            .chain(Some(from - 1).filter(|&i| i < kept))
                            .all(|i| *q.add(i) == (i % 251) as u8),
                        "{from} -> {to}"
                    );
                    *q.add(to - 1) = 7;
                    a.dealloc(q, Layout::from_size_align(to, 16).unwrap());
                }
            }
        }
    }

    /// Large alignments stay on the system allocator's path and are honoured.
    #[test]
    fn over_aligned_layouts_are_the_system_allocators() {
        let layout = Layout::from_size_align(HUGE_FROM, 2 * HUGE_PAGE).unwrap();
        assert!(!mapped(&layout));
        // SAFETY: a non-zero layout, freed with itself.
        unsafe {
            let p = HugePageAlloc.alloc(layout);
            assert!(!p.is_null());
            assert_eq!(p as usize % (2 * HUGE_PAGE), 0);
            HugePageAlloc.dealloc(p, layout);
        }
    }

    /// A mapped block starts at a 2 MiB boundary, where a huge page can back it; a freed one is
    /// reused for the next block of its length (other tests may take it first, so only the
    /// contents are asserted), and a reused block asked for zeroed is zeroed.
    #[test]
    fn mapped_blocks_are_aligned_kept_and_zeroed_on_reuse() {
        let layout = Layout::from_size_align(3 * HUGE_PAGE + 5, 8).unwrap();
        for _ in 0..4 {
            // SAFETY: a non-zero layout; the block is written within its size and freed with
            // its layout.
            unsafe {
                let p = HugePageAlloc.alloc_zeroed(layout);
                assert_eq!(p as usize % HUGE_PAGE, 0);
                assert!((0..layout.size())
                    .step_by(STEP)
                    .chain([layout.size() - 1])
                    .all(|i| *p.add(i) == 0));
                std::ptr::write_bytes(p, 0xA5, layout.size());
                HugePageAlloc.dealloc(p, layout);
            }
        }
    }
}
