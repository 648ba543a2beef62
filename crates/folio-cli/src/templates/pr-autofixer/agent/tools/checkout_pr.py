"""checkout_pr: clones the head branch of the PR named in pr/meta.json into repo/, through the
GitHub API ($GITHUB_API_URL, default https://api.github.com) with $GITHUB_TOKEN. The token is
passed per command as an HTTP header, never written into repo/.git/config."""
import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

json.load(sys.stdin)
workspace = os.environ.get("FOLIO_WORKSPACE", ".")
repo = os.path.join(workspace, "repo")
token = os.environ.get("GITHUB_TOKEN")
if not token:
    sys.exit("GITHUB_TOKEN is not set: export a token that can read and push the repository")
if os.path.exists(repo):
    sys.exit("repo/ already exists: work in it, or delete it to check out again")
try:
    with open(os.path.join(workspace, "pr", "meta.json"), encoding="utf-8") as meta_file:
        meta = json.load(meta_file)
except (OSError, ValueError) as err:
    sys.exit(f"cannot read pr/meta.json ({err}): the GitHub channel writes it before each turn")
api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
request = urllib.request.Request(
    f"{api}/repos/{meta['repository']}/pulls/{meta['number']}",
    headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
)
try:
    with urllib.request.urlopen(request, timeout=60) as answer:
        pull = json.load(answer)
except urllib.error.URLError as err:
    sys.exit(f"cannot read the pull request from {api}: {err}")
head = pull["head"]
if head["repo"] is None:
    sys.exit("the PR's head repository was deleted: nothing to push to")
basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
done = subprocess.run(
    ["git", "-c", f"http.extraHeader=Authorization: Basic {basic}", "clone", "--quiet",
     "--depth", "50", "--branch", head["ref"], head["repo"]["clone_url"], repo],
    capture_output=True, text=True,
)
if done.returncode != 0:
    sys.exit(f"git clone failed: {done.stderr.strip()}")
print(json.dumps({"repo": "repo/", "branch": head["ref"], "sha": head["sha"]}))
