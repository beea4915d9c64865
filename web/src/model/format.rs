//! Human-readable numbers for the views, in one place: the same functions the CLI prints with,
//! speeds in MB/s and memory in MiB.

pub use bitlens_protocol::result::mbps;
pub use bitlens_stats::format::*;

/// Bytes as whole MiB, e.g. `"64 MiB"` (wasm memory sizes).
pub fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_and_speed() {
        assert_eq!(mib(64 << 20), "64 MiB");
        assert_eq!(mib(3 << 19), "2 MiB");
        assert_eq!(mbps(3_000_000, 2.0), 1.5);
        assert_eq!(
            format!("{:.0} MB/s", mbps(3_000_000, 2.0)),
            rate(3_000_000, 2.0)
        );
    }
}
