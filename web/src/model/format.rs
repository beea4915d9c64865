//! Human-readable numbers for the views: the same functions the CLI prints with.

pub use bitlens_stats::format::*;
