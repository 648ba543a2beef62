//! The diagnostics formats `ReadLints` reads, each turned into the one [`Diagnostic`] shape:
//! SARIF 2.1.0, rustc / cargo JSON lines, ruff JSON, ESLint JSON and gcc-style text lines.

use std::sync::LazyLock;

use folio_project::LintFormat;
use regex::Regex;
use serde::Deserialize;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    /// Must be fixed.
    Error,
    /// Should be looked at.
    Warning,
    /// A note, hint or style remark.
    Info,
}

impl Severity {
    /// The lower-case word shown to the model.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }

    /// Reads a linter's own level word (`error`, `warning`, `note`, `help`, `style`, …).
    fn from_word(word: &str) -> Severity {
        match word.to_ascii_lowercase().as_str() {
            w if w.starts_with("error") || w == "fatal" || w == "failure-note" => Severity::Error,
            "warning" | "warn" => Severity::Warning,
            _ => Severity::Info,
        }
    }
}

/// One diagnostic, whatever linter reported it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Diagnostic {
    /// The file, as the linter named it (made workspace-relative by the caller).
    pub path: String,
    /// 1-based line (0 when the linter gave none).
    pub line: u64,
    /// 1-based column (0 when the linter gave none).
    pub column: u64,
    /// Error, warning or info.
    pub severity: Severity,
    /// The linter's rule code (`F401`, `SC2086`, `E0308`), when it has one.
    pub code: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// Why a linter's output could not be read as its declared format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormatError(pub String);

/// Reads the diagnostics `output` carries in `format`. Empty output is no diagnostics; JSON
/// formats fail on anything else that does not parse, line formats skip lines that do not match.
pub(crate) fn parse(format: LintFormat, output: &str) -> Result<Vec<Diagnostic>, FormatError> {
    if output.trim().is_empty() {
        return Ok(Vec::new());
    }
    match format {
        LintFormat::Sarif => parse_json(output, "SARIF").map(sarif),
        LintFormat::Ruff => parse_json(output, "ruff JSON").map(ruff),
        LintFormat::Eslint => parse_json(output, "ESLint JSON").map(eslint),
        LintFormat::Rustc => Ok(rustc(output)),
        LintFormat::Text => Ok(text(output)),
    }
}

fn parse_json<T: for<'de> Deserialize<'de>>(output: &str, what: &str) -> Result<T, FormatError> {
    serde_json::from_str(output.trim()).map_err(|err| FormatError(format!("not {what}: {err}")))
}

// --- SARIF 2.1.0 (the fields used) ---

#[derive(Deserialize)]
struct SarifLog {
    #[serde(default)]
    runs: Vec<SarifRun>,
}

#[derive(Deserialize)]
struct SarifRun {
    #[serde(default)]
    results: Vec<SarifResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: Option<String>,
    level: Option<String>,
    message: SarifMessage,
    #[serde(default)]
    locations: Vec<SarifLocation>,
}

#[derive(Deserialize)]
struct SarifMessage {
    text: Option<String>,
    markdown: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SarifLocation {
    physical_location: Option<SarifPhysical>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SarifPhysical {
    artifact_location: Option<SarifArtifact>,
    region: Option<SarifRegion>,
}

#[derive(Deserialize)]
struct SarifArtifact {
    uri: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SarifRegion {
    start_line: Option<u64>,
    start_column: Option<u64>,
}

fn sarif(log: SarifLog) -> Vec<Diagnostic> {
    let results = log.runs.into_iter().flat_map(|run| run.results);
    results
        .map(|result| {
            let physical = result
                .locations
                .into_iter()
                .find_map(|l| l.physical_location);
            let (uri, region) = match physical {
                Some(p) => (p.artifact_location.and_then(|a| a.uri), p.region),
                None => (None, None),
            };
            Diagnostic {
                path: uri
                    .map(|uri| uri.strip_prefix("file://").unwrap_or(&uri).to_string())
                    .unwrap_or_default(),
                line: region.as_ref().and_then(|r| r.start_line).unwrap_or(0),
                column: region.as_ref().and_then(|r| r.start_column).unwrap_or(0),
                // SARIF's default level is "warning"; "none" is informational.
                severity: result
                    .level
                    .as_deref()
                    .map_or(Severity::Warning, Severity::from_word),
                code: result.rule_id,
                message: result
                    .message
                    .text
                    .or(result.message.markdown)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

// --- ruff check --output-format=json ---

#[derive(Deserialize)]
struct RuffDiagnostic {
    code: Option<String>,
    /// Newer ruff versions say it; every finding fails `ruff check` otherwise.
    severity: Option<String>,
    message: String,
    filename: String,
    location: Option<RuffLocation>,
}

#[derive(Deserialize)]
struct RuffLocation {
    row: u64,
    column: u64,
}

fn ruff(items: Vec<RuffDiagnostic>) -> Vec<Diagnostic> {
    items
        .into_iter()
        .map(|item| Diagnostic {
            path: item.filename,
            line: item.location.as_ref().map_or(0, |l| l.row),
            column: item.location.as_ref().map_or(0, |l| l.column),
            severity: item
                .severity
                .as_deref()
                .map_or(Severity::Error, Severity::from_word),
            code: item.code,
            message: item.message,
        })
        .collect()
}

// --- eslint --format json ---

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EslintFile {
    file_path: String,
    #[serde(default)]
    messages: Vec<EslintMessage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EslintMessage {
    rule_id: Option<String>,
    #[serde(default)]
    severity: u8,
    message: String,
    line: Option<u64>,
    column: Option<u64>,
}

fn eslint(files: Vec<EslintFile>) -> Vec<Diagnostic> {
    files
        .into_iter()
        .flat_map(|file| {
            let path = file.file_path;
            file.messages.into_iter().map(move |m| Diagnostic {
                path: path.clone(),
                line: m.line.unwrap_or(0),
                column: m.column.unwrap_or(0),
                severity: match m.severity {
                    2 => Severity::Error,
                    1 => Severity::Warning,
                    _ => Severity::Info,
                },
                code: m.rule_id,
                message: m.message,
            })
        })
        .collect()
}

// --- rustc --error-format=json / cargo --message-format=json (clippy too) ---

#[derive(Deserialize)]
#[serde(untagged)]
enum RustcLine {
    /// A cargo message; only `compiler-message` carries a diagnostic.
    Cargo {
        reason: String,
        message: Option<RustcDiagnostic>,
    },
    /// A bare rustc diagnostic.
    Rustc(RustcDiagnostic),
}

#[derive(Deserialize)]
struct RustcDiagnostic {
    message: String,
    level: String,
    code: Option<RustcCode>,
    #[serde(default)]
    spans: Vec<RustcSpan>,
}

#[derive(Deserialize)]
struct RustcCode {
    code: String,
}

#[derive(Deserialize)]
struct RustcSpan {
    file_name: String,
    line_start: u64,
    column_start: u64,
    #[serde(default)]
    is_primary: bool,
}

fn rustc(output: &str) -> Vec<Diagnostic> {
    output
        .lines()
        .filter_map(|line| serde_json::from_str::<RustcLine>(line.trim()).ok())
        .filter_map(|line| match line {
            RustcLine::Cargo { reason, message } => {
                message.filter(|_| reason == "compiler-message")
            }
            RustcLine::Rustc(diagnostic) => Some(diagnostic),
        })
        .filter_map(|d| {
            // Summaries ("aborting due to …", "N warnings emitted") have no span: not a finding.
            let span = d.spans.iter().find(|s| s.is_primary).or(d.spans.first())?;
            Some(Diagnostic {
                path: span.file_name.clone(),
                line: span.line_start,
                column: span.column_start,
                severity: Severity::from_word(&d.level),
                code: d.code.map(|c| c.code),
                message: d.message,
            })
        })
        .collect()
}

// --- file:line:col: [severity:] message ---

static TEXT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+):\s*(?:(?P<sev>fatal error|error|warning|warn|note|info|style|hint|help)\s*:\s*)?(?P<msg>.*?)(?:\s*\[(?P<code>[A-Za-z][A-Za-z0-9_/-]*\d)\])?\s*$",
    )
    .expect("the text diagnostic pattern compiles")
});

fn text(output: &str) -> Vec<Diagnostic> {
    output
        .lines()
        .filter_map(|line| TEXT_LINE.captures(line))
        .filter_map(|caps| {
            Some(Diagnostic {
                path: caps["file"].trim().to_string(),
                line: caps["line"].parse().ok()?,
                column: caps["col"].parse().ok()?,
                severity: caps
                    .name("sev")
                    .map_or(Severity::Warning, |s| Severity::from_word(s.as_str())),
                code: caps.name("code").map(|c| c.as_str().to_string()),
                message: caps["msg"].to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(
        path: &str,
        line: u64,
        column: u64,
        severity: Severity,
        code: Option<&str>,
        message: &str,
    ) -> Diagnostic {
        Diagnostic {
            path: path.into(),
            line,
            column,
            severity,
            code: code.map(Into::into),
            message: message.into(),
        }
    }

    #[test]
    fn eslint_json_as_eslint_prints_it() {
        let output = r#"[{"filePath":"/w/src/a.js","messages":[{"ruleId":"no-unused-vars","severity":2,"message":"'x' is assigned a value but never used.","line":1,"column":7,"nodeType":"Identifier","messageId":"unusedVar","endLine":1,"endColumn":8},{"ruleId":null,"fatal":true,"severity":2,"message":"Parsing error: Unexpected token","line":3,"column":1}],"suppressedMessages":[],"errorCount":2,"fatalErrorCount":1,"warningCount":0,"fixableErrorCount":0,"fixableWarningCount":0,"source":"let x = 1;\n"},{"filePath":"/w/src/b.js","messages":[{"ruleId":"semi","severity":1,"message":"Missing semicolon.","line":2,"column":10}]}]"#;
        assert_eq!(
            parse(LintFormat::Eslint, output).unwrap(),
            vec![
                d(
                    "/w/src/a.js",
                    1,
                    7,
                    Severity::Error,
                    Some("no-unused-vars"),
                    "'x' is assigned a value but never used."
                ),
                d(
                    "/w/src/a.js",
                    3,
                    1,
                    Severity::Error,
                    None,
                    "Parsing error: Unexpected token"
                ),
                d(
                    "/w/src/b.js",
                    2,
                    10,
                    Severity::Warning,
                    Some("semi"),
                    "Missing semicolon."
                ),
            ]
        );
    }

    #[test]
    fn cargo_and_rustc_json_lines() {
        let output = concat!(
            r#"{"reason":"compiler-artifact","package_id":"x","target":{},"profile":{},"features":[],"filenames":[],"executable":null,"fresh":true}"#,
            "\n",
            r#"{"reason":"compiler-message","package_id":"x","manifest_path":"Cargo.toml","target":{},"message":{"rendered":"warning: unused variable","$message_type":"diagnostic","children":[],"code":{"code":"unused_variables","explanation":null},"level":"warning","message":"unused variable: `a`","spans":[{"byte_end":1,"byte_start":0,"column_end":2,"column_start":9,"expansion":null,"file_name":"src/main.rs","is_primary":true,"label":null,"line_end":2,"line_start":2,"suggested_replacement":null,"suggestion_applicability":null,"text":[]}]}}"#,
            "\n",
            "not json at all\n",
            r#"{"$message_type":"diagnostic","message":"mismatched types","code":{"code":"E0308","explanation":"..."},"level":"error","spans":[{"file_name":"bad.rs","byte_start":0,"byte_end":1,"line_start":1,"line_end":1,"column_start":14,"column_end":15,"is_primary":false},{"file_name":"bad.rs","byte_start":0,"byte_end":1,"line_start":1,"line_end":1,"column_start":20,"column_end":27,"is_primary":true}],"children":[],"rendered":"error"}"#,
            "\n",
            r#"{"$message_type":"diagnostic","message":"aborting due to 1 previous error","code":null,"level":"error","spans":[],"children":[],"rendered":"error: aborting"}"#,
            "\n",
        );
        assert_eq!(
            parse(LintFormat::Rustc, output).unwrap(),
            vec![
                d(
                    "src/main.rs",
                    2,
                    9,
                    Severity::Warning,
                    Some("unused_variables"),
                    "unused variable: `a`"
                ),
                d(
                    "bad.rs",
                    1,
                    20,
                    Severity::Error,
                    Some("E0308"),
                    "mismatched types"
                ),
            ]
        );
    }

    #[test]
    fn text_lines_with_and_without_levels_and_codes() {
        let output = "a.sh:3:6: warning: Double quote to prevent globbing and word splitting. [SC2086]\n\
                      In a.sh line 3:\n\
                      src/x.c:10:2: error: expected ';'\n\
                      lib/y.py:1:1: E999 SyntaxError\n";
        assert_eq!(
            parse(LintFormat::Text, output).unwrap(),
            vec![
                d(
                    "a.sh",
                    3,
                    6,
                    Severity::Warning,
                    Some("SC2086"),
                    "Double quote to prevent globbing and word splitting."
                ),
                d("src/x.c", 10, 2, Severity::Error, None, "expected ';'"),
                d(
                    "lib/y.py",
                    1,
                    1,
                    Severity::Warning,
                    None,
                    "E999 SyntaxError"
                ),
            ]
        );
    }

    #[test]
    fn bad_json_is_a_format_error_and_empty_output_is_clean() {
        assert_eq!(parse(LintFormat::Ruff, "  \n").unwrap(), vec![]);
        let err = parse(LintFormat::Ruff, "ruff: command crashed").unwrap_err();
        assert!(err.0.starts_with("not ruff JSON: "), "{err:?}");
        let err = parse(LintFormat::Sarif, "[1, 2]").unwrap_err();
        assert!(err.0.starts_with("not SARIF: "), "{err:?}");
    }

    proptest! {
        /// Whatever a linter prints, reading it never panics.
        #[test]
        fn any_output_is_read_without_panicking(output in "\\PC{0,400}", json in prop::bool::ANY) {
            let output = if json { format!("[{output}]") } else { output };
            for format in [LintFormat::Sarif, LintFormat::Rustc, LintFormat::Ruff, LintFormat::Eslint, LintFormat::Text] {
                let _ = parse(format, &output);
            }
        }

        /// A gcc-style line round-trips through the text reader.
        #[test]
        fn text_lines_round_trip(file in "[a-z][a-z0-9_/.-]{0,20}", line in 1u64..100_000, col in 1u64..500, msg in "[A-Za-z][A-Za-z0-9 ,.'`]{0,60}[A-Za-z.]") {
            let parsed = parse(LintFormat::Text, &format!("{file}:{line}:{col}: error: {msg}")).unwrap();
            prop_assert_eq!(parsed, vec![d(&file, line, col, Severity::Error, None, &msg)]);
        }
    }
}
