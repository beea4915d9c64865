//! Files in and out of the browser: `Blob` reads, dropped and picked files, the bundled demo,
//! downloads of file sets.

pub mod blob;
pub mod demo;
pub mod download;
pub mod files;
