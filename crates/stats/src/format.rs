//! Human-readable numbers for reports: decimal units, shapes, percentages, rates. The CLI tables
//! and the web app print the same strings through these functions.

/// `1234567` → `"1.23 M"`.
pub fn count(n: u64) -> String {
    let x = n as f64;
    match x {
        x if x >= 1e9 => format!("{:.2} G", x / 1e9),
        x if x >= 1e6 => format!("{:.2} M", x / 1e6),
        x if x >= 1e3 => format!("{:.1} k", x / 1e3),
        _ => format!("{n}"),
    }
}

/// Bytes in decimal units: `90868376` → `"90.9 MB"`.
pub fn bytes(n: u64) -> String {
    let x = n as f64;
    match x {
        x if x >= 1e9 => format!("{:.2} GB", x / 1e9),
        x if x >= 1e6 => format!("{:.1} MB", x / 1e6),
        x if x >= 1e3 => format!("{:.1} kB", x / 1e3),
        _ => format!("{n} B"),
    }
}

/// A shape as `[a, b, c]`.
pub fn shape(s: &[u64]) -> String {
    let parts: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// Entropies per byte group, most significant first as people read numbers: `7.99 2.61`.
pub fn groups(g: &[f64]) -> String {
    let parts: Vec<String> = g.iter().rev().map(|e| format!("{e:.2}")).collect();
    parts.join(" ")
}

/// A fraction as a percentage with enough digits for small values: `0.5` → `"50.0%"`,
/// `0.00012` → `"0.012%"`.
pub fn percent(f: f64) -> String {
    let p = 100.0 * f;
    if p == 0.0 || p >= 1.0 {
        format!("{p:.1}%")
    } else if p >= 0.01 {
        format!("{p:.3}%")
    } else {
        format!("{p:.2e}%")
    }
}

/// A throughput in decimal megabytes per second.
pub fn rate(bytes: u64, seconds: f64) -> String {
    format!("{:.0} MB/s", bytes as f64 / seconds.max(1e-9) / 1e6)
}

/// A number with at most `digits` significant digits, switching to exponent form for very small or
/// large magnitudes (chart ticks and hover values).
pub fn number(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-3..6).contains(&mag) {
        return format!("{:.*e}", digits.saturating_sub(1), x);
    }
    let decimals = (digits as i32 - 1 - mag).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// Truncates a name to `width` characters, keeping its end (the informative part).
pub fn name(s: &str, width: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= width {
        s.to_owned()
    } else {
        let tail: String = chars[chars.len() - (width - 1)..].iter().collect();
        format!("…{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(22_713_216), "22.71 M");
        assert_eq!(count(999), "999");
        assert_eq!(bytes(90_868_376), "90.9 MB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(shape(&[30522, 384]), "[30522, 384]");
        assert_eq!(groups(&[7.99, 2.614]), "2.61 7.99");
        assert_eq!(percent(0.5), "50.0%");
        assert_eq!(percent(0.00012), "0.012%");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(number(0.25, 3), "0.25");
        assert_eq!(number(1234.6, 3), "1235");
        assert_eq!(number(0.000012, 2), "1.2e-5");
        assert_eq!(rate(500_000_000, 1.0), "500 MB/s");
        assert_eq!(name("encoder.layer.0.weight", 10), "….0.weight");
        assert_eq!(name("short", 10), "short");
    }
}
