//! The real model weights that `scripts/fetch-weights.sh` puts under `.cache/weights` (MiniLM in
//! f32, bf16 and f16), for the tests that measure against them. On a machine without them such a
//! test is skipped, not failed: [`path_or_skip`] says so on stderr, naming the missing file and
//! the script that fetches it. `BITLENS_REQUIRE_WEIGHTS=1` turns the skip into a failure, for runs
//! that must cover these tests.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The script that downloads the weights, as the skip message names it.
pub const FETCH_SCRIPT: &str = "scripts/fetch-weights.sh";

/// The environment variable that makes a missing weights file a test failure.
pub const REQUIRE_VAR: &str = "BITLENS_REQUIRE_WEIGHTS";

/// `.cache/weights` in the workspace root, where [`FETCH_SCRIPT`] puts the weights.
pub fn dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // crates/test-support → the workspace root.
    let root = crate_dir.ancestors().nth(2).unwrap_or(crate_dir);
    root.join(".cache").join("weights")
}

/// The path of the weights file `name` (e.g. `"minilm-bf16.safetensors"`) in [`dir`], if it
/// exists. If it does not, writes one line on stderr, straight to the process's stderr so the test
/// harness does not hide it,
/// `skipped <test>: needs <path>, which is missing (run scripts/fetch-weights.sh)`, and returns
/// `None`: the caller returns early (`let Some(path) = path_or_skip(..) else { return };`). With
/// [`REQUIRE_VAR`] set to `1` it panics with that message instead (scripts that have just run
/// the fetch can set it, so a lost file cannot pass unnoticed).
pub fn path_or_skip(name: &str) -> Option<PathBuf> {
    let path = dir().join(name);
    if path.is_file() {
        return Some(path);
    }
    let missing = format!(
        "needs {}, which is missing (run {FETCH_SCRIPT})",
        path.display()
    );
    if std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1") {
        panic!("{missing}; {REQUIRE_VAR}=1 makes that a failure instead of a skip");
    }
    let line = skip_line(std::thread::current().name(), &missing);
    // Best effort: a closed stderr must not fail the test.
    let _ = writeln!(std::io::stderr(), "{line}");
    None
}

/// `skipped <test>: <why>`. libtest runs each test on a thread named after it; called from an
/// unnamed thread or `main` (outside a test harness), the line names no test.
fn skip_line(test: Option<&str>, why: &str) -> String {
    match test.filter(|n| *n != "main") {
        Some(name) => format!("skipped {name}: {why}"),
        None => format!("skipped: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_the_workspace_cache() {
        let dir = dir();
        assert!(dir.ends_with(".cache/weights"), "{}", dir.display());
        assert!(dir.join("../../Cargo.toml").is_file(), "{}", dir.display());
    }

    #[test]
    fn the_skip_line_names_the_test_and_says_why() {
        assert_eq!(skip_line(Some("t"), "needs x"), "skipped t: needs x");
        assert_eq!(skip_line(Some("main"), "needs x"), "skipped: needs x");
        assert_eq!(skip_line(None, "needs x"), "skipped: needs x");
    }
}
