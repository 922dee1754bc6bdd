//! Memory budgets: how much the test may allocate on the host and on each GPU, and byte sizes
//! as people write and read them.

/// Bytes of host memory available to new allocations (`MemAvailable` in `/proc/meminfo`).
pub fn host_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    })
}

/// Parses `1000000`, `512M`, `8GiB`, `1.5G` (binary multiples: K, M, G, T with optional `iB`/`B`).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("`{s}` is not a byte size (examples: 1000000, 512M, 8GiB)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (use K, M, G or T)")),
    };
    let v = value * mult as f64;
    if !(v.is_finite() && v >= 1.0) {
        return Err(format!("`{s}` must be at least one byte"));
    }
    Ok(v as u64)
}

/// `1.50 GiB`, `512 B`...
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("1000").unwrap(), 1000);
        assert_eq!(parse_bytes("512M").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_bytes("1.5g").unwrap(), 3 << 29);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("3X").is_err());
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 29), "1.50 GiB");
    }

    #[test]
    fn meminfo_is_readable_here() {
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(host_available().unwrap() > 0);
        }
    }
}
