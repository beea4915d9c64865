//! Files in and out of the browser: `Blob` reads, dropped and picked files, remote files read
//! with `Range` requests, the page URL as view state, the bundled demo, downloads of file sets.

pub mod blob;
pub mod demo;
pub mod download;
pub mod files;
pub mod location;
pub mod remote;
