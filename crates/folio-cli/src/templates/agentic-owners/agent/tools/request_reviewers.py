"""request_reviewers: reads {"input": {"owners", "reason"}} on stdin and requests those reviewers
on the pull request of pr/meta.json through the GitHub API ($GITHUB_API_URL, $GITHUB_TOKEN)."""
import json
import os
import sys
import urllib.error
import urllib.request

request_input = json.load(sys.stdin)["input"]
workspace = os.environ.get("FOLIO_WORKSPACE", ".")
token = os.environ.get("GITHUB_TOKEN")
if not token:
    sys.exit("GITHUB_TOKEN is not set: export a token that can request reviewers")
try:
    with open(os.path.join(workspace, "pr", "meta.json"), encoding="utf-8") as meta_file:
        meta = json.load(meta_file)
except (OSError, ValueError) as err:
    sys.exit(f"cannot read pr/meta.json ({err}): the GitHub channel writes it before each turn")
users = [o[1:] for o in request_input["owners"] if "/" not in o]
teams = [o.split("/", 1)[1] for o in request_input["owners"] if "/" in o]
api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
request = urllib.request.Request(
    f"{api}/repos/{meta['repository']}/pulls/{meta['number']}/requested_reviewers",
    data=json.dumps({"reviewers": users, "team_reviewers": teams}).encode(),
    headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
    method="POST",
)
try:
    with urllib.request.urlopen(request, timeout=20):
        pass
except urllib.error.HTTPError as err:
    sys.exit(f"GitHub refused the request: HTTP {err.code} {err.read().decode(errors='replace')[:300]}")
except urllib.error.URLError as err:
    sys.exit(f"cannot reach {api}: {err}")
print(json.dumps({"requested": request_input["owners"], "reason": request_input["reason"]}))
