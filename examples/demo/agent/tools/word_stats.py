"""word_stats: reads {"input": {"text": ...}, "context": {...}} on stdin, prints JSON counts."""
import json
import sys

request = json.load(sys.stdin)
text = request["input"]["text"]
print(json.dumps({
    "words": len(text.split()),
    "lines": len(text.splitlines()),
    "characters": len(text),
}))
