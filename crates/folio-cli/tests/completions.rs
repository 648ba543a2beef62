//! `folio --version`, `folio completions SHELL` and `folio man`: the version names the commit
//! built; bash completes a real command line with the generated script; the man pages cover
//! every command.

mod common;

use std::process::{Command, Output};

use common::folio_bin;

fn folio(args: &[&str]) -> Output {
    let output = Command::new(folio_bin()).args(args).output().unwrap();
    assert!(output.status.success(), "folio {args:?}: {output:?}");
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn version_names_the_crate_version_and_the_commit_built() {
    let version = stdout(&folio(&["--version"]));
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8(output.stdout).unwrap().trim().to_string());
    let expected = format!("folio {} (", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(&expected), "{version}");
    match head {
        Some(head) => assert!(
            version.contains(&format!("({head} ")),
            "{version} vs {head}"
        ),
        None => assert!(version.contains("(unknown)"), "{version}"),
    }
}

#[test]
fn bash_completes_commands_and_flags_with_the_generated_script() {
    let script = stdout(&folio(&["completions", "bash"]));
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("folio.bash");
    std::fs::write(&file, script).unwrap();
    // What bash offers for `folio se<TAB>` and `folio serve --po<TAB>`.
    let complete = |words: &str, cword: usize| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; _folio folio \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let output = Command::new("bash")
            .args(["-c", &program])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        stdout(&output)
    };
    let commands = complete("folio se", 1);
    assert!(commands.lines().any(|line| line == "serve"), "{commands}");
    assert!(!commands.lines().any(|line| line == "run"), "{commands}");
    let flags = complete("folio serve --po", 2);
    assert!(flags.lines().any(|line| line == "--port"), "{flags}");
}

#[test]
fn every_shell_gets_a_script_naming_the_commands() {
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let script = stdout(&folio(&["completions", shell]));
        for command in ["serve", "eval", "doctor"] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
    }
    let output = Command::new(folio_bin())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("possible values: bash"),
        "{output:?}"
    );
}

#[test]
fn man_prints_the_folio_page_and_writes_one_page_per_command() {
    let page = stdout(&folio(&["man"]));
    assert!(page.contains(".TH folio 1"), "{page}");
    assert!(page.contains("folio\\-serve"), "{page}");
    assert!(page.contains(env!("CARGO_PKG_VERSION")), "{page}");

    let temp = tempfile::tempdir().unwrap();
    let out = temp.path().join("man1");
    folio(&["man", "--out", out.to_str().unwrap()]);
    for name in [
        "folio",
        "folio-serve",
        "folio-eval",
        "folio-store-migrate",
        "folio-doctor",
    ] {
        let page = std::fs::read_to_string(out.join(format!("{name}.1")))
            .unwrap_or_else(|err| panic!("{name}.1: {err}"));
        assert!(page.contains(&format!(".TH {name} 1")), "{name}.1:\n{page}");
    }
    let serve = std::fs::read_to_string(out.join("folio-serve.1")).unwrap();
    assert!(serve.contains("\\-\\-port"), "{serve}");
}
