"""code_outline: reads {"input": {"path": ...}} on stdin and prints, as JSON, each source file
under the path (relative to the workspace) with its line count and top-level definitions."""
import json
import os
import re
import sys

# Top-level definitions per file extension: a line-anchored pattern whose first matched group is
# the name (Python's constants too).
PATTERNS = {
    ".py": re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)|^([A-Z][A-Z0-9_]*)\s*(?::[^=]*)?="),
    ".rs": re.compile(r"^pub(?:\([^)]*\))?\s+(?:async\s+)?(?:fn|struct|enum|trait|type|const|mod)\s+([A-Za-z_]\w*)"),
    ".go": re.compile(r"^(?:func(?:\s+\([^)]*\))?|type)\s+([A-Za-z_]\w*)"),
    ".js": re.compile(r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\*?|class|const)\s+([A-Za-z_$][\w$]*)"),
    ".ts": re.compile(r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\*?|class|const|interface|type|enum)\s+([A-Za-z_$][\w$]*)"),
}
PATTERNS[".jsx"] = PATTERNS[".js"]
PATTERNS[".tsx"] = PATTERNS[".ts"]
SKIPPED_DIRS = {".git", ".folio", "node_modules", "target", "__pycache__", "memory"}


def outline(full, shown):
    pattern = PATTERNS[os.path.splitext(full)[1]]
    definitions, lines = [], 0
    with open(full, encoding="utf-8", errors="replace") as source:
        for lines, line in enumerate(source, start=1):
            match = pattern.match(line)
            if match:
                name = next(group for group in match.groups() if group)
                definitions.append({"name": name, "line": lines})
    return {"file": shown, "lines": lines, "definitions": definitions}


def main():
    path = json.load(sys.stdin)["input"]["path"]
    workspace = os.path.realpath(os.environ.get("FOLIO_WORKSPACE", "."))
    target = os.path.realpath(os.path.join(workspace, path))
    if os.path.commonpath([workspace, target]) != workspace:
        sys.exit(f"{path} is outside the workspace: pass a path relative to it")
    if not os.path.exists(target):
        sys.exit(f"{path} does not exist in the workspace: list it with Glob first")
    if os.path.isfile(target):
        candidates = [target]
    else:
        candidates = []
        for root, dirs, names in os.walk(target):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            candidates.extend(os.path.join(root, name) for name in sorted(names))
    files = [
        outline(full, os.path.relpath(full, workspace))
        for full in candidates
        if os.path.splitext(full)[1] in PATTERNS
    ]
    if not files:
        sys.exit(f"no source file under {path} (known: {', '.join(sorted(PATTERNS))})")
    print(json.dumps({"files": files}))


main()
