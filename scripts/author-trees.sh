#!/usr/bin/env bash
# The seeds' author's four newest public trees that tests/author_labels.tsv judges, each at
# its commit pinned in tests/author_trees.txt, extracted (no .git) into DIR (default $BATON_AUTHOR_TREES, else
# ~/.cache/baton-author-trees). Needs git and access to github.com, or a local mirror of each
# repository under $AUTHOR_TREES_MIRROR/<owner>+<name>/repo. A tree already extracted at its
# commit (DIR/<name>/.baton-tree) is kept. tests/test_author_labels.py skips when DIR is
# absent; `python benchmarks/fidelity.py --trees` measures precision on it.
# With AUTHOR_TREES_LIST=benchmarks/recall_trees.txt and DIR ~/.cache/baton-recall-trees it
# extracts the further trees `benchmarks/recall.py` injects defects into.
set -euo pipefail
dir=${1:-${BATON_AUTHOR_TREES:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-author-trees}}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cd "$(dirname "$0")/.."
while read -r repo commit; do
  name=${repo#*/}
  out="$dir/$name"
  if [ -f "$out/.baton-tree" ] && [ "$(cat "$out/.baton-tree")" = "$repo@$commit" ]; then
    echo "author trees: $name up to date"
    continue
  fi
  tmp=$(mktemp -d)
  mirror="${AUTHOR_TREES_MIRROR:-}/${repo/\//+}/repo"
  if [ -n "${AUTHOR_TREES_MIRROR:-}" ] && [ -d "$mirror" ]; then
    git -C "$mirror" archive "$commit" | tar -x -C "$tmp"
  else
    git -C "$tmp" init -q
    git -C "$tmp" fetch -q --depth 1 "https://github.com/$repo" "$commit"
    git -C "$tmp" archive FETCH_HEAD | tar -x -C "$tmp" --exclude=.git
    rm -rf "$tmp/.git"
  fi
  rm -rf "$out"
  chmod 755 "$tmp"
  mv "$tmp" "$out"
  echo "$repo@$commit" > "$out/.baton-tree"
  echo "author trees: $name at ${commit:0:7}"
done < "${AUTHOR_TREES_LIST:-tests/author_trees.txt}"
