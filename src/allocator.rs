//! The global allocator of the `refundsim` binary and of the benches: mimalloc, with the
//! usual layouts sent to its plain `mi_malloc`.
//!
//! Included by `src/main.rs` and by `benches/*.rs` (`#[path]`), not part of the library, which
//! leaves the choice of allocator to its users.
//!
//! `mimalloc::MiMalloc` hands every Rust allocation to `mi_malloc_aligned(size, align)`. That
//! costs a few checks even for alignment 8, and for blocks over 1 KiB whose size is not a power
//! of two (a run's task futures are 0.9–1.8 KB) mimalloc's aligned path over-allocates: it takes
//! a block from a larger size class and marks the page as holding interior pointers. Yet every
//! mimalloc block is aligned to the machine word at least — a page's first block is 16-byte
//! aligned and block sizes are whole words (`MI_PAGE_MIN_START_BLOCK_ALIGN`, `_mi_wsize_from_size`
//! in mimalloc's `types.h` and `internal.h`) — so a layout aligned to at most a word needs no
//! aligned call: [`Allocator`] sends those to `mi_malloc`, `mi_zalloc` and `mi_realloc`, and
//! everything else to `MiMalloc` unchanged. About 2 % of an incident run's instructions.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{mi_free, mi_malloc, mi_realloc, mi_zalloc};
use mimalloc::MiMalloc;

/// The largest alignment every `mi_malloc` block has: the machine word (8 bytes on 64-bit).
const WORD_ALIGN: usize = std::mem::size_of::<usize>();

/// mimalloc as the global allocator (see the module's docs for what differs from `MiMalloc`).
pub struct Allocator;

// SAFETY: every method either calls mimalloc's plain functions for a layout aligned to at most
// a word, which every mimalloc block satisfies (see the module's docs), or forwards to
// `MiMalloc`, which upholds `GlobalAlloc`'s contract. Blocks from either path are mimalloc
// blocks, which `mi_free` frees whichever function made them.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD_ALIGN {
            // SAFETY: `mi_malloc` takes any size; the contract says it is not 0.
            aligned(unsafe { mi_malloc(layout.size()).cast() }, layout.align())
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD_ALIGN {
            // SAFETY: as in `alloc`; `mi_zalloc` returns zeroed memory.
            aligned(unsafe { mi_zalloc(layout.size()).cast() }, layout.align())
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc (either path).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD_ALIGN {
            // SAFETY: `ptr` is a mimalloc block of this layout; the new block is word-aligned,
            // enough for the layout's alignment.
            aligned(
                unsafe { mi_realloc(ptr.cast::<c_void>(), new_size).cast() },
                layout.align(),
            )
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

/// `p`, checked in debug builds (every CLI test in `tests/it` runs such a build) to satisfy
/// `align`, the premise of [`Allocator`]'s plain path.
#[inline(always)]
fn aligned(p: *mut u8, align: usize) -> *mut u8 {
    debug_assert!(
        (p as usize).is_multiple_of(align),
        "mimalloc block {p:p} not aligned to {align}"
    );
    p
}
