//! What `/proc` says about the servers and the machine.

/// Every process below `pid` (children, their children, …), from each `/proc/N/stat`'s parent.
pub fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|child| Some((child, parent(child)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut found = vec![pid];
    let mut next = 0;
    while next < found.len() {
        let of = found[next];
        found.extend(parents.iter().filter(|(_, p)| *p == of).map(|(c, _)| *c));
        next += 1;
    }
    found.remove(0);
    found
}

/// The parent of process `pid` (the field after the parenthesised command in `/proc/N/stat`).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The peak resident set (`VmHWM`, KiB) of `pid` plus that of each of its descendants.
pub fn peak_rss_kib(pid: u32) -> u64 {
    std::iter::once(pid)
        .chain(descendants(pid))
        .filter_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// The machine's load averages over 1, 5 and 15 minutes, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_string())
}
