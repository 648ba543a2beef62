//! Runs every fuzz target over its seed corpus (`fuzz/corpus/<target>/`), every input that
//! ever made it fail (`fuzz/regressions/<target>/`), and 1,500 deterministic
//! mutations of the seeds: a short fuzz run in every `cargo test`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Mutated inputs per target (`FOLIO_FUZZ_MUTATIONS` sets another number, for a longer run).
fn mutations() -> usize {
    std::env::var("FOLIO_FUZZ_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1500)
}

/// Byte strings the mutator splices in: the syntax of the formats under test.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"=",
    b"\n",
    b"\r\n",
    b"\\u0000",
    b"\\ud800",
    b"---\n",
    b"data: ",
    b"event: ",
    b"\n\n",
    b"[[",
    b"]]",
    b"-1",
    b"0",
    b"1e999",
    b"18446744073709551616",
    b"-9223372036854775808",
    b"null",
    b"true",
    b"/..",
    b"//",
    b"\0",
    b"{{",
    b"}}",
    b"{%",
    b"%}",
    b"${",
    b"&a",
    b"*a",
    b"!!",
    b"\xff",
    b"\xe2\x80",
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files directly in `dir`, sorted (none when it is missing).
fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file());
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let data = std::fs::read(&path).expect("read an input");
            (path, data)
        })
        .collect()
}

/// SplitMix64: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One to four edits of `input`: flips, overwrites, inserted tokens, deletions, duplications and
/// splices from `others`.
fn mutate(rng: &mut Rng, input: &[u8], others: &[(PathBuf, Vec<u8>)]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(7) {
            0 if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] = rng.next() as u8;
            }
            2 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                out.splice(at..at, token.iter().copied());
            }
            3 => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            4 => {
                let end = (at + 1 + rng.below(64)).min(out.len());
                let copy = out[at.min(end)..end].to_vec();
                out.splice(at..at, copy.iter().copied());
            }
            5 => {
                let (_, other) = &others[rng.below(others.len())];
                let from = rng.below(other.len() + 1);
                let end = (from + rng.below(128)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
            _ => out.insert(at, rng.next() as u8),
        }
    }
    out
}

/// Runs `target` on `input`; a panic names the target and keeps the input for triage.
fn run(name: &str, target: fn(&[u8]), what: &str, input: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| target(input))).is_err() {
        let kept = std::env::temp_dir().join(format!("folio-fuzz-{name}-failure"));
        std::fs::write(&kept, input).expect("keep the failing input");
        panic!(
            "fuzz target {name} failed on {what}; the input is in {} (copy it into fuzz/regressions/{name}/ once fixed)",
            kept.display()
        );
    }
}

/// Runs target `name` over its seeds, its regressions and [`mutations`] mutations of the seeds.
fn check(name: &str) {
    let (_, target) = folio_fuzz::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a target of folio_fuzz::TARGETS");
    let fuzz = fuzz_dir();
    let seeds = inputs(&fuzz.join("corpus").join(name));
    assert!(!seeds.is_empty(), "fuzz/corpus/{name}/ holds no seeds");
    for (path, data) in seeds
        .iter()
        .chain(&inputs(&fuzz.join("regressions").join(name)))
    {
        run(name, *target, &path.display().to_string(), data);
    }
    let mut rng = Rng(name
        .bytes()
        .fold(0x5eed, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))));
    for n in 0..mutations() {
        let (_, seed) = &seeds[n % seeds.len()];
        let input = mutate(&mut rng, seed, &seeds);
        run(name, *target, &format!("mutation {n}"), &input);
    }
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check(stringify!($name));
            }
        )*

        #[test]
        fn every_harness_is_a_target_and_tested_here() {
            let mut harnesses: Vec<String> = std::fs::read_dir(fuzz_dir().join("fuzz_targets"))
                .expect("fuzz/fuzz_targets/")
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.strip_suffix(".rs").map(String::from))
                .collect();
            harnesses.sort();
            let mut targets: Vec<&str> = folio_fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
            targets.sort();
            assert_eq!(harnesses, targets, "fuzz/fuzz_targets/ and folio_fuzz::TARGETS differ");
            let mut tested = vec![$(stringify!($name)),*];
            tested.sort();
            assert_eq!(tested, targets, "a target is not tested here");
        }
    };
}

targets!(
    manifest,
    frontmatter,
    event_log,
    path,
    webhook,
    http_body,
    mcp_message,
    sse
);
