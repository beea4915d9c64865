//! Runtime CPU dispatch for the hot loops (not from a paper: an implementation choice).
//!
//! A kernel is written once as an `#[inline(always)]` function and compiled twice: for the
//! target's baseline and, on x86-64, for x86-64-v3 (AVX2, BMI1/2, LZCNT), which lets LLVM
//! vectorize byte shuffles with 256-bit registers and shift by register without `cl`. The v3 copy
//! runs when the CPU reports those features (checked once, cached by `std`). Both copies compute
//! the same bytes: the choice changes speed only, never the format.
//!
//! Measured on this project's machine kind (AMD EPYC, x86-64-v4 capable), single thread: bf16
//! byte-group merge 0.22 → 0.045 ns per element, split 0.23 → 0.09 (see `examples/group_speed`).
//! Besides the Huffman decoder's unchecked batches (`huffman::decode_kernels`), this module holds
//! the crate's only `unsafe`: the call of a `#[target_feature]` function, sound
//! because the features were detected first, and the prefetch hint of [`prefetch`].
#![allow(unsafe_code)]

/// Environment variable that, set to `baseline`, keeps every kernel on its portable build (so
/// the test suite can cover both builds on one machine).
#[cfg(target_arch = "x86_64")]
pub const CPU_ENV: &str = "BITLENS_CPU";

/// Whether the x86-64-v3 kernels run: the CPU has AVX2, BMI1/2 and LZCNT, and [`CPU_ENV`] is not
/// `baseline`. Decided once per process.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn has_v3() -> bool {
    static V3: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V3.get_or_init(|| {
        std::env::var(CPU_ENV).map_or(true, |v| v != "baseline")
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("lzcnt")
    })
}

/// Asks the CPU to bring the cache line at `addr` into its caches (a hint; no-op off x86-64).
/// The encoder requests the next block row while it codes the current one, so that byte
/// grouping the next row reads from cache rather than from memory.
#[inline(always)]
pub fn prefetch(addr: usize) {
    // Not under Miri: a hint changes no memory, and an address made from an integer would hide
    // the kernels' pointers from Miri's provenance checks.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: PREFETCHT0 is only a hint: it never faults, whatever the address, and changes no
    // memory or register (the addresses passed here lie in a live input slice anyway).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::with_exposed_provenance::<i8>(addr),
        )
    };
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    let _ = addr;
}

/// Defines `fn NAME(args) -> R` that calls `IMPL(args)`, or, when [`has_v3`], `V3_IMPL(args)`
/// compiled for x86-64-v3 in a function named `V3` (written `= [IMPL] / V3[V3_IMPL]`;
/// `= IMPL / V3` uses `IMPL` for both). The
/// implementations should be `#[inline(always)]` so that their whole bodies are compiled into
/// each build.
macro_rules! dispatch {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $imp:ident / $v3:ident;
    ) => {
        $crate::cpu::dispatch! {
            $(#[$meta])*
            $vis fn $name($($arg: $ty),*) -> $ret = [$imp] / $v3[$imp];
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty
            = [$imp:path] / $v3:ident[$v3imp:path];
    ) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
        fn $v3($($arg: $ty),*) -> $ret {
            $v3imp($($arg),*)
        }

        $(#[$meta])*
        #[allow(unsafe_code)]
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            if $crate::cpu::has_v3() {
                // SAFETY: `$v3` only requires the CPU features that `has_v3` just detected.
                return unsafe { $v3($($arg),*) };
            }
            $imp($($arg),*)
        }
    };
}
pub(crate) use dispatch;
