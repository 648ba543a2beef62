#!/usr/bin/env bash
# folio-fs grep/glob/search-index benchmark: generates bench/data/tree (deterministic, ~525 MB,
# 50,000 files; skipped when present), then runs crates/folio-fs/benches/fs_grep.rs, which times
# host_dir/local_fs against `rg -j1`, `find` and `fd` and prints a markdown table.
# Needs rg (scripts/install-test-deps) and fdfind (apt-get install fd-find).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tree="$root/bench/data/tree"
if [ ! -f "$tree/p09/d49/f49999.ts" ]; then
  rm -rf "$tree"
  time python3 "$root/bench/gen_tree.py" "$tree"
fi
cd "$root"
cargo bench -p folio-fs --bench fs_grep -- "$tree"
