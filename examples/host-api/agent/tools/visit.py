"""The `visit` tool: everything it keeps goes through Folio's host API (folio_client.host).

- a per-principal counter in storage, incremented with compare-and-set (safe when two of the
  visitor's sessions run this tool at once, and kept across sessions and server restarts);
- the visit's note appended to a file in the session's workspace;
- an artifact per visitor with the latest note;
- a reminder that wakes this session (`FOLIO_VISIT_REMINDER`, default 1h) to follow up;
- the host connection `ops` (an MCP server the model never sees) asked to echo the visit;
- a counter metric `app.visits`, and an attribute on this call's span.
"""

import json
import os
import sys

from folio_client import ConflictError, host

request = json.load(sys.stdin)
note = request["input"].get("note", "")

# The visitor's counter: read, then write over the version read; on a conflict, read again.
while True:
    entry = host.kv.get("visits", scope="principal")
    count = (entry["value"] if entry else 0) + 1
    try:
        host.kv.put("visits", count, scope="principal", if_version=entry["version"] if entry else 0)
        break
    except ConflictError:
        continue

me = host.whoami()
host.files.write(f"visits/{count}.md", f"# Visit {count}\n\n{note}\n")
host.artifacts.put(
    f"visitor-{me['principal']}", f"Visits of {me['principal']}", data={"visits": count}, contents=note
)
reminder = host.reminders.set(
    f"Follow up on visit {count}", in_=os.environ.get("FOLIO_VISIT_REMINDER", "1h")
)
echoed = host.connections.call("ops", "echo", {"message": f"visit {count}"})
host.telemetry.metric("app.visits", 1, unit="{visit}")
host.telemetry.attributes({"app.visit.number": count})

print(json.dumps({"visit": count, "reminder": reminder["reminderId"], "ops": echoed["result"]}))
