//! Grep, glob and search-index throughput of the host trees, against `rg -j1`, `find` and `fd`.
//!
//! Run through `bench/fs-grep.sh` (which generates the tree), or directly:
//! `cargo bench -p folio-fs --bench fs_grep -- /abs/path/to/bench/data/tree`.
//! Every case is run once to warm the page cache, then `RUNS` times; the table shows the best and
//! the median wall time, and the ratio of folio's best to the reference tool's best.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use folio_fs::{FileSystem, GrepQuery, SearchQuery, host_dir, indexed, local_fs};
use futures::StreamExt;

const RUNS: usize = 5;

struct Timing {
    best: Duration,
    median: Duration,
    count: usize,
}

fn time(mut run: impl FnMut() -> usize) -> Timing {
    let count = run();
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let n = run();
            assert_eq!(n, count, "runs disagree");
            start.elapsed()
        })
        .collect();
    samples.sort();
    Timing {
        best: samples[0],
        median: samples[RUNS / 2],
        count,
    }
}

/// Runs `command`, counting the lines it prints (output is read, as a terminal or pipe would).
fn lines_of(command: &mut Command) -> usize {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    let mut stdout = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 1 << 16];
    let mut lines = 0;
    loop {
        let n = stdout.read(&mut buf).expect("read output");
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
    child.wait().expect("wait");
    lines
}

fn rg(tree: &Path, query: &GrepQuery) -> Command {
    let mut command = Command::new("rg");
    command.args([
        "-j1",
        "--no-ignore",
        "--hidden",
        "--no-follow",
        "--no-config",
        "--line-number",
        "--no-heading",
        "--color=never",
    ]);
    if query.case_insensitive {
        command.arg("-i");
    }
    if let Some(glob) = &query.glob {
        command.args(["--glob", glob]);
    }
    command.arg("-e").arg(&query.pattern).arg(tree);
    command
}

fn folio_grep(rt: &tokio::runtime::Runtime, fs: &Arc<dyn FileSystem>, query: &GrepQuery) -> usize {
    rt.block_on(async {
        let mut stream = fs.grep(query.clone());
        let mut n = 0;
        while let Some(hit) = stream.next().await {
            hit.expect("grep");
            n += 1;
        }
        n
    })
}

fn folio_glob(
    rt: &tokio::runtime::Runtime,
    fs: &Arc<dyn FileSystem>,
    pattern: &str,
    dir: Option<&str>,
) -> usize {
    rt.block_on(async {
        let mut stream = fs.glob(pattern, dir);
        let mut n = 0;
        while let Some(entry) = stream.next().await {
            entry.expect("glob");
            n += 1;
        }
        n
    })
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1000.0)
}

fn row(case: &str, ours: &Timing, theirs: Option<(&str, &Timing)>) {
    match theirs {
        Some((tool, t)) => println!(
            "| {case} | {} | {} / {} | {tool}: {} / {} | {:.2}x |",
            ours.count,
            ms(ours.best),
            ms(ours.median),
            ms(t.best),
            ms(t.median),
            ours.best.as_secs_f64() / t.best.as_secs_f64()
        ),
        None => println!(
            "| {case} | {} | {} / {} | | |",
            ours.count,
            ms(ours.best),
            ms(ours.median)
        ),
    }
}

fn main() {
    let tree: PathBuf = match std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        Some(tree) => PathBuf::from(tree),
        None => {
            eprintln!(
                "fs_grep: pass the tree made by bench/gen_tree.py (bench/fs-grep.sh does); skipping"
            );
            return;
        }
    };
    let tree = std::fs::canonicalize(&tree).expect("tree exists");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mounted = host_dir(&tree, true).expect("mount");
    let local = local_fs(&tree);

    println!("| case | hits | folio best / median ms | reference best / median ms | folio/ref |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut cases = vec![
        (
            "grep rare literal `zqxjv_needle`",
            GrepQuery::new("zqxjv_needle"),
        ),
        (
            "grep regex `[A-Z][a-z]+Error` (many hits)",
            GrepQuery::new("[A-Z][a-z]+Error"),
        ),
        (
            "grep word `\\bkalo\\w*ra\\b`",
            GrepQuery::new(r"\bkalo\w*ra\b"),
        ),
    ];
    let mut insensitive = GrepQuery::new("todo quka");
    insensitive.case_insensitive = true;
    cases.push(("grep -i `todo quka`", insensitive));
    let mut ts_only = GrepQuery::new("zqxjv_needle");
    ts_only.glob = Some("*.ts".into());
    cases.push(("grep `zqxjv_needle` --glob '*.ts'", ts_only));
    for (case, query) in &cases {
        let ours = time(|| folio_grep(&rt, &mounted, query));
        let theirs = time(|| lines_of(&mut rg(&tree, query)));
        assert_eq!(ours.count, theirs.count, "{case}: folio and rg disagree");
        row(
            &format!("host_dir {case}"),
            &ours,
            Some(("rg -j1", &theirs)),
        );
    }
    let (case, query) = &cases[0];
    let ours = time(|| {
        let mut q = query.clone();
        q.path = Some(tree.to_string_lossy().into_owned());
        folio_grep(&rt, &local, &q)
    });
    let theirs = time(|| lines_of(&mut rg(&tree, query)));
    row(
        &format!("local_fs {case}"),
        &ours,
        Some(("rg -j1", &theirs)),
    );

    let ours = time(|| folio_glob(&rt, &mounted, "**/*.rs", None));
    let find = time(|| {
        lines_of(
            Command::new("find")
                .arg(&tree)
                .args(["-type", "f", "-name", "*.rs"]),
        )
    });
    row("host_dir glob `**/*.rs`", &ours, Some(("find", &find)));
    let fd = time(|| {
        lines_of(
            Command::new("fdfind")
                .args([
                    "-j1",
                    "--no-ignore",
                    "--hidden",
                    "--type",
                    "f",
                    "-e",
                    "rs",
                    ".",
                ])
                .arg(&tree),
        )
    });
    row("host_dir glob `**/*.rs`", &ours, Some(("fd -j1", &fd)));
    let ours = time(|| folio_glob(&rt, &local, "**/*", Some(&tree.to_string_lossy())));
    let find = time(|| lines_of(Command::new("find").arg(&tree).args(["-type", "f"])));
    row(
        "local_fs glob `**/*` (all files)",
        &ours,
        Some(("find", &find)),
    );
    let ours = time(|| folio_glob(&rt, &mounted, "p03/d07/*.md", None));
    let find = time(|| {
        lines_of(Command::new("find").arg(tree.join("p03/d07")).args([
            "-maxdepth",
            "1",
            "-type",
            "f",
            "-name",
            "*.md",
        ]))
    });
    row(
        "host_dir glob `p03/d07/*.md` (literal base)",
        &ours,
        Some(("find", &find)),
    );

    // The search index over one part of the tree (5,000 files).
    let part = tree.join("p00");
    let bytes: u64 = walk_size(&part);
    let start = Instant::now();
    let index = rt
        .block_on(indexed(host_dir(&part, true).expect("mount")))
        .expect("index");
    let built = start.elapsed();
    println!(
        "| index build `p00` (5,000 files, {:.1} MB) | | {} | | {:.1} MB/s |",
        bytes as f64 / 1e6,
        ms(built),
        bytes as f64 / 1e6 / built.as_secs_f64()
    );
    for text in ["zqxjv_needle", "kalo stra", "ChaError result"] {
        let t = time(|| {
            rt.block_on(async {
                let query = SearchQuery {
                    query: text.to_string(),
                    path: None,
                    max_results: Some(10),
                };
                index.search(query).count().await
            })
        });
        println!(
            "| search `{text}` (top 10, snippets) | {} | {:.2} / {:.2} | | |",
            t.count,
            t.best.as_secs_f64() * 1000.0,
            t.median.as_secs_f64() * 1000.0
        );
    }
}

fn walk_size(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            walk_size(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}
