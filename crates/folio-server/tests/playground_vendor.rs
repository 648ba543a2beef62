//! The playground's vendored libraries (src/playground/assets/vendor/) are the pinned npm
//! packages' files, unchanged: every copy has the SHA-256 that src/playground/vendor.txt records,
//! and, where `scripts/install-test-deps` installed the pinned packages, is byte for byte the
//! package's file. Nothing else is in the folder but the hand-written type declarations.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use sha2::Digest;

/// One line of vendor.txt: a file of a pinned package and its copy.
#[derive(Debug)]
struct Vendored {
    /// `name@version`.
    package: String,
    /// The file's path inside the package.
    file: String,
    /// The copy's name under assets/vendor/.
    name: String,
    /// The copy's SHA-256, lowercase hex.
    sha256: String,
}

fn playground() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/playground")
}

fn manifest() -> Vec<Vendored> {
    let text = std::fs::read_to_string(playground().join("vendor.txt")).unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [package, file, name, sha256] = fields[..] else {
                panic!("vendor.txt: not four fields: {line}");
            };
            Vendored {
                package: package.into(),
                file: file.into(),
                name: name.into(),
                sha256: sha256.into(),
            }
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[test]
fn every_vendored_file_is_listed_with_its_checksum() {
    let vendor = playground().join("assets/vendor");
    let lines = manifest();
    assert!(!lines.is_empty());
    for line in &lines {
        let bytes = std::fs::read(vendor.join(&line.name))
            .unwrap_or_else(|error| panic!("{}: {error}", line.name));
        assert_eq!(
            sha256_hex(&bytes),
            line.sha256,
            "{} differs from {}'s {} (run scripts/vendor-playground)",
            line.name,
            line.package,
            line.file
        );
    }
    let listed: BTreeSet<&str> = lines.iter().map(|line| line.name.as_str()).collect();
    let unlisted: Vec<String> = std::fs::read_dir(&vendor)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| !listed.contains(name.as_str()))
        .filter(|name| !name.ends_with(".d.ts") && !name.ends_with(".d.mts"))
        .collect();
    assert_eq!(unlisted, Vec::<String>::new(), "files not in vendor.txt");
}

#[test]
fn every_vendored_file_is_the_pinned_packages_file() {
    let npm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/npm/node_modules");
    let vendor = playground().join("assets/vendor");
    for line in manifest() {
        let (name, version) = line.package.rsplit_once('@').unwrap();
        let package = npm.join(name);
        let Ok(manifest) = std::fs::read_to_string(package.join("package.json")) else {
            eprintln!(
                "skipping: {} is missing (run scripts/install-test-deps)",
                package.display()
            );
            return;
        };
        let installed: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        assert_eq!(
            installed["version"],
            version,
            "{} is not the pinned {} (run scripts/install-test-deps)",
            package.display(),
            line.package
        );
        let original = std::fs::read(package.join(&line.file)).unwrap();
        let copy = std::fs::read(vendor.join(&line.name)).unwrap();
        assert!(
            original == copy,
            "{} is not {}'s {} (run scripts/vendor-playground)",
            line.name,
            line.package,
            line.file
        );
    }
}
