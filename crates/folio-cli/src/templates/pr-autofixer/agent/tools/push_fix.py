"""push_fix: commits every change in repo/ with {"input": {"message": ...}} and pushes the branch
it was cloned from, authenticating with $GITHUB_TOKEN as an HTTP header (never stored)."""
import base64
import json
import os
import subprocess
import sys

message = json.load(sys.stdin)["input"]["message"]
repo = os.path.join(os.environ.get("FOLIO_WORKSPACE", "."), "repo")
if not os.path.isdir(os.path.join(repo, ".git")):
    sys.exit("repo/ is not a git checkout: call checkout_pr first")
token = os.environ.get("GITHUB_TOKEN")
if not token:
    sys.exit("GITHUB_TOKEN is not set: export a token that can push to the repository")


def git(*args):
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout.strip()


git("add", "-A")
if not git("status", "--porcelain"):
    sys.exit("nothing to push: repo/ has no changes")
git("-c", "user.name=folio-autofixer", "-c", "user.email=folio-autofixer@users.noreply.github.com",
    "commit", "--quiet", "-m", message)
basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
git("-c", f"http.extraHeader=Authorization: Basic {basic}", "push", "--quiet", "origin", "HEAD")
print(json.dumps({"pushed": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD")}))
