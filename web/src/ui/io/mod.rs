//! Input from the browser: `Blob` reads, dropped and picked files, the bundled demo.

pub mod blob;
pub mod demo;
pub mod files;
