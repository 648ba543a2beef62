"""label_issue: reads {"input": {"issue", "label", "reason"}} on stdin; records the label locally."""
import json
import os
import sys

request = json.load(sys.stdin)
issue = request["input"]
log = os.path.join(os.environ.get("FOLIO_WORKSPACE", "."), "labels.jsonl")
with open(log, "a", encoding="utf-8") as out:
    out.write(json.dumps(issue) + "\n")
print(json.dumps({"labeled": issue["issue"], "label": issue["label"]}))
