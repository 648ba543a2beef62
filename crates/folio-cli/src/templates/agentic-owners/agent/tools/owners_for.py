"""owners_for: maps each file changed in pr/diff.patch to its owners. CODEOWNERS is read from the
workspace (CODEOWNERS, .github/CODEOWNERS or docs/CODEOWNERS), else fetched from the base branch of
the repository named in pr/meta.json through the GitHub API ($GITHUB_API_URL, $GITHUB_TOKEN).
Matching follows GitHub's rules: the last matching line wins, patterns are gitignore-style."""
import base64
import json
import os
import re
import sys
import urllib.error
import urllib.request

LOCATIONS = ["CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS"]


def read_workspace(workspace, relative):
    try:
        with open(os.path.join(workspace, relative), encoding="utf-8") as source:
            return source.read()
    except OSError:
        return None


def fetch_codeowners(workspace):
    meta_text = read_workspace(workspace, "pr/meta.json")
    token = os.environ.get("GITHUB_TOKEN")
    if meta_text is None or not token:
        sys.exit("no CODEOWNERS in the workspace, and no pr/meta.json plus GITHUB_TOKEN to fetch it")
    meta = json.loads(meta_text)
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    ref = meta.get("base") or "HEAD"
    for location in LOCATIONS:
        request = urllib.request.Request(
            f"{api}/repos/{meta['repository']}/contents/{location}?ref={ref}",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return location, base64.b64decode(json.load(answer)["content"]).decode()
        except urllib.error.HTTPError as err:
            if err.code != 404:
                sys.exit(f"cannot fetch {location}: HTTP {err.code}")
        except urllib.error.URLError as err:
            sys.exit(f"cannot reach {api}: {err}")
    sys.exit(f"{meta['repository']} has no CODEOWNERS ({', '.join(LOCATIONS)})")


def pattern_regex(pattern):
    """A CODEOWNERS pattern as a regex over a repository-relative path."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out, i = "", 0
    while i < len(body):
        if body.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif body.startswith("**", i):
            out, i = out + ".*", i + 2
        elif body[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif body[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(body[i]), i + 1
    prefix = "^" if anchored else "^(?:.*/)?"
    return re.compile(prefix + out + "(?:/.*)?$")


def parse(text):
    rules = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        pattern, *owners = line.split()
        rules.append((pattern, pattern_regex(pattern), owners, number))
    return rules


def changed_files(diff):
    files = []
    for line in diff.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            path = line[4:].strip()
            if path != "/dev/null":
                path = path[2:] if path[:2] in ("a/", "b/") else path
                if path not in files:
                    files.append(path)
    return files


def main():
    json.load(sys.stdin)
    workspace = os.environ.get("FOLIO_WORKSPACE", ".")
    diff = read_workspace(workspace, "pr/diff.patch")
    if diff is None:
        sys.exit("pr/diff.patch is missing: the GitHub channel writes it before each turn")
    found = next(((loc, text) for loc in LOCATIONS if (text := read_workspace(workspace, loc)) is not None), None)
    location, text = found or fetch_codeowners(workspace)
    rules = parse(text)
    files = []
    for path in changed_files(diff):
        matched = [rule for rule in rules if rule[1].match(path)]
        if matched:
            pattern, _, owners, number = matched[-1]
            files.append({"file": path, "owners": owners, "pattern": pattern, "line": number})
        else:
            files.append({"file": path, "owners": [], "pattern": None, "line": None})
    print(json.dumps({"codeowners": location, "files": files}))


main()
