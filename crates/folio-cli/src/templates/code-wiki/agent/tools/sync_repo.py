"""sync_repo: clones $CODE_WIKI_REPO (a git URL or path; $CODE_WIKI_BRANCH, default the remote's
default branch) into repo/ of the workspace, or fast-forwards it; prints the commit as JSON."""
import json
import os
import subprocess
import sys

json.load(sys.stdin)
url = os.environ.get("CODE_WIKI_REPO")
if not url:
    sys.exit("CODE_WIKI_REPO is not set: export the repository's git URL before `folio serve`")
repo = os.path.join(os.environ.get("FOLIO_WORKSPACE", "."), "repo")
branch = os.environ.get("CODE_WIKI_BRANCH")


def git(*args):
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


if os.path.isdir(os.path.join(repo, ".git")):
    git("-C", repo, "pull", "--ff-only", "--quiet")
    action = "pulled"
else:
    git("clone", "--depth", "1", "--quiet", *(["--branch", branch] if branch else []), url, repo)
    action = "cloned"
print(json.dumps({"repo": "repo/", action: git("-C", repo, "rev-parse", "HEAD")}))
