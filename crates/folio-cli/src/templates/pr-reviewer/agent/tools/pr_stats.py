"""pr_stats: reads {"input": {"diff": ...}} on stdin and prints the size of the diff as JSON."""
import json
import sys

diff = json.load(sys.stdin)["input"]["diff"]
files, added, removed = [], 0, 0
for line in diff.splitlines():
    if line.startswith("+++ "):
        files.append(line[4:].removeprefix("b/"))
    elif line.startswith("+") and not line.startswith("+++"):
        added += 1
    elif line.startswith("-") and not line.startswith("---"):
        removed += 1
print(json.dumps({"files": files, "added": added, "removed": removed}))
