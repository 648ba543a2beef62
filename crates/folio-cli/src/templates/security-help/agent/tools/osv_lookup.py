"""osv_lookup: reads {"input": {"ecosystem", "name", "version"}} on stdin, asks the OSV API
($OSV_API_URL, default https://api.osv.dev) for the advisories of that version, prints JSON."""
import json
import os
import sys
import urllib.error
import urllib.request

package = json.load(sys.stdin)["input"]
api = os.environ.get("OSV_API_URL", "https://api.osv.dev").rstrip("/")
query = {
    "version": package["version"],
    "package": {"name": package["name"], "ecosystem": package["ecosystem"]},
}
request = urllib.request.Request(
    f"{api}/v1/query",
    data=json.dumps(query).encode(),
    headers={"Content-Type": "application/json"},
)
try:
    with urllib.request.urlopen(request, timeout=20) as answer:
        vulns = json.load(answer).get("vulns", [])
except urllib.error.URLError as err:
    sys.exit(f"cannot reach {api}: {err}; answer from the policy and say the lookup failed")


def fixed_versions(vuln):
    return sorted({
        event["fixed"]
        for affected in vuln.get("affected", [])
        for ranges in affected.get("ranges", [])
        for event in ranges.get("events", [])
        if "fixed" in event
    })


print(json.dumps({
    "package": f"{package['ecosystem']}/{package['name']}@{package['version']}",
    "advisories": [
        {"id": v["id"], "summary": v.get("summary", ""), "fixed": fixed_versions(v)} for v in vulns
    ],
}))
