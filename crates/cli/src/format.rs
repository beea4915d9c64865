//! Human-readable numbers for the tables.

/// `1234567` → `"1.23 M"`.
pub fn count(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n >= 1e9 => format!("{:.2} G", n / 1e9),
        n if n >= 1e6 => format!("{:.2} M", n / 1e6),
        n if n >= 1e3 => format!("{:.1} k", n / 1e3),
        n => format!("{n}"),
    }
}

/// Bytes in decimal units: `90868376` → `"90.9 MB"`.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n >= 1e9 => format!("{:.2} GB", n / 1e9),
        n if n >= 1e6 => format!("{:.1} MB", n / 1e6),
        n if n >= 1e3 => format!("{:.1} kB", n / 1e3),
        n => format!("{n} B"),
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
        assert_eq!(bytes(90_868_376), "90.9 MB");
        assert_eq!(shape(&[30522, 384]), "[30522, 384]");
        assert_eq!(shape(&[]), "[]");
        assert_eq!(groups(&[7.99, 2.614]), "2.61 7.99");
        assert_eq!(name("encoder.layer.0.weight", 10), "….0.weight");
        assert_eq!(name("short", 10), "short");
    }
}
