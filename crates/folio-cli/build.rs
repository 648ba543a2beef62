//! Stamps the commit `folio --version` prints: `FOLIO_BUILD_COMMIT` when set (a packager's
//! choice), else `git rev-parse` of the checkout being built, else `unknown` (a crates.io
//! source has no git).

use std::path::Path;
use std::process::Command;

/// The trimmed stdout of `git ARGS` run beside this crate, or `None` when git fails.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .filter(|out| !out.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=FOLIO_BUILD_COMMIT");
    let commit = std::env::var("FOLIO_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.is_empty())
        .or_else(|| {
            let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
            let date = git(&["log", "-1", "--format=%cs", "HEAD"]).unwrap_or_default();
            Some(format!("{hash} {date}").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FOLIO_COMMIT={commit}");
    // Build again when HEAD moves: HEAD itself (a branch switch) and the file of the branch it
    // names (a commit), or packed-refs where the branch is packed.
    if let (Some(git_dir), Some(common_dir)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
    ) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        let loose = git(&["symbolic-ref", "-q", "HEAD"])
            .map(|branch| Path::new(&common_dir).join(branch))
            .filter(|path| path.exists());
        match loose {
            Some(path) => println!("cargo:rerun-if-changed={}", path.display()),
            None => println!("cargo:rerun-if-changed={common_dir}/packed-refs"),
        }
    }
}
