"""security_scan: reads {"input": {"path": ...}} on stdin, scans the added lines of that unified
diff (relative to the workspace) and prints the findings as JSON."""
import json
import os
import re
import sys

# (rule, severity, pattern, secret): secret findings never echo the matched text.
RULES = [
    ("aws-access-key", "high", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), True),
    ("private-key", "high", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), True),
    ("github-token", "high", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b"), True),
    ("slack-token", "high", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), True),
    ("hardcoded-password", "high", re.compile(r"(?i)\b(?:password|passwd|secret|api_?key|token)\s*[:=]\s*[\"'][^\"']{8,}[\"']"), True),
    ("shell-injection", "high", re.compile(r"shell\s*=\s*True|os\.system\(|child_process\.exec\("), False),
    ("eval", "medium", re.compile(r"(?<![\w.])(?:eval|exec)\("), False),
    ("unsafe-deserialization", "high", re.compile(r"pickle\.loads?\(|yaml\.load\((?![^)]*SafeLoader)|marshal\.loads\("), False),
    ("sql-string-building", "high", re.compile(r"(?i)\bexecute\(\s*f[\"']|\bexecute\([^)]*[\"']\s*(?:%|\+)"), False),
    ("tls-verification-off", "medium", re.compile(r"verify\s*=\s*False|rejectUnauthorized\s*:\s*false|InsecureSkipVerify:\s*true"), False),
    ("weak-hash", "low", re.compile(r"(?i)\b(?:md5|sha1)\s*\("), False),
]
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def scan(diff):
    findings, path, line = [], None, 0
    for text in diff.splitlines():
        if text.startswith("+++ "):
            path = text[4:].removeprefix("b/")
            continue
        if text.startswith("--- "):
            continue
        hunk = HUNK.match(text)
        if hunk:
            line = int(hunk.group(1))
            continue
        if text.startswith("+"):
            for rule, severity, pattern, secret in RULES:
                match = pattern.search(text[1:])
                if match:
                    shown = "<redacted>" if secret else text[1:].strip()[:160]
                    findings.append({"rule": rule, "severity": severity, "file": path, "line": line, "text": shown})
            line += 1
        elif not text.startswith("-") and not text.startswith("\\"):
            line += 1
    return findings


def main():
    path = json.load(sys.stdin)["input"]["path"]
    workspace = os.path.realpath(os.environ.get("FOLIO_WORKSPACE", "."))
    target = os.path.realpath(os.path.join(workspace, path))
    if os.path.commonpath([workspace, target]) != workspace:
        sys.exit(f"{path} is outside the workspace: pass a path relative to it")
    try:
        with open(target, encoding="utf-8", errors="replace") as source:
            diff = source.read()
    except OSError as err:
        sys.exit(f"cannot read {path}: {err.strerror}")
    findings = scan(diff)
    counts = {level: sum(1 for f in findings if f["severity"] == level) for level in ("high", "medium", "low")}
    print(json.dumps({"findings": findings, "counts": counts}))


main()
