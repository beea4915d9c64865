//! One module per `bitlens` command: its options checked, the engine called, the result printed.

pub mod bench;
pub mod chain;
pub mod compress;
pub mod decompress;
pub mod diff;
pub mod inshrink;
pub mod inspect;
pub mod sidecar;
pub mod snapshot;
