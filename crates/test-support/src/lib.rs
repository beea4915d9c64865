//! Helpers the bitlens test suites share, one documented copy each: a seeded xorshift generator
//! and the random bytes it makes ([`rng`]), the bit patterns of special float values and the
//! truncating bf16 conversion ([`floats`]), a safetensors file builder ([`safetensors`]) and the
//! lookup of the real weights that `scripts/fetch-weights.sh` downloads, which skips a test with
//! a line on stderr when they are missing ([`weights`]).
//!
//! Dev-only (`publish = false`) and std + serde_json only, so it also builds for
//! `wasm32-unknown-unknown` (the wasm API's tests use it). The generators' output is part of what
//! the tests assert: a change to any sequence changes the tests' data, so this crate's own tests
//! pin the first values of each.

pub mod floats;
pub mod rng;
pub mod safetensors;
pub mod weights;
