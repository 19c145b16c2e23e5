#!/usr/bin/env bash
# `kelp what-if --nodepools CHANGED --from DUMP` (the impact of a NodePool change) on the
# 1,000-node / 30,000-pod / 10,000-event dump of bench/gen-dump.py (about 200 MB, made once
# into $KELP_BENCH_DIR): the whole command, reading the dump included, beside `kelp doctor`
# on the same file (the read both pay). Two changes, each a new template label, so every node
# of the changed pools drifts and their pods are judged against the pools after:
#   one   the first NodePool (about 125 nodes)
#   all   all 20 NodePools (every node)
#
#   bench/what-if.sh            # 3 runs each, median wall time and peak RSS
#   RUNS=5 bench/what-if.sh
#
# Goal (issue): an answer under 2 s at this size. `cargo bench --bench what_if` times the
# analysis alone (criterion).
#
# Environment: KELP_BENCH_DIR (default /tmp/kelp-bench), RUNS (3), KELP_BIN (default
# target/release/kelp, built when missing).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
case "${1:-}" in
  "") ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "bench/what-if.sh: no arguments (see --help)" >&2; exit 2 ;;
esac
dir="${KELP_BENCH_DIR:-/tmp/kelp-bench}" runs="${RUNS:-3}"
kelp="${KELP_BIN:-$repo/target/release/kelp}"
if [[ -z "${KELP_BIN:-}" && ! -x "$kelp" ]]; then
  (cd "$repo" && cargo build --release --locked --quiet)
fi
dump="$dir/dump-n1000-p30000-e10000-np20-s1.json"
mkdir -p "$dir"
[[ -f "$dump" ]] || python3 "$here/gen-dump.py" --nodes 1000 --pods 30000 --events 10000 \
  --nodepools 20 --seed 1 -o "$dump"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The changed manifests: the dump's pools, stripped to what Git holds, with a new label.
python3 - "$dump" "$work" <<'PY'
import json, sys
dump, work = sys.argv[1], sys.argv[2]
pools = [o for o in json.load(open(dump))["items"] if o.get("kind") == "NodePool"]
docs = []
for p in pools:
    p = {"apiVersion": p["apiVersion"], "kind": "NodePool",
         "metadata": {"name": p["metadata"]["name"]}, "spec": p["spec"]}
    p["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})["kelp.dev/bench"] = "changed"
    docs.append(p)
json.dump({"apiVersion": "v1", "kind": "List", "items": docs[:1]}, open(f"{work}/one.json", "w"))
json.dump({"apiVersion": "v1", "kind": "List", "items": docs}, open(f"{work}/all.json", "w"))
PY
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() { # name, command...: median wall s and peak KB over $runs
  local name="$1"; shift
  local walls=() rss=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$work/t" "$@" >/dev/null 2>"$work/err" || [[ $? -le 3 ]] ||
      { cat "$work/err" >&2; exit 1; }
    read -r w m < <(tail -n 1 "$work/t"); walls+=("$w"); rss+=("$m")
  done
  printf '%-28s wall %6.2f s   peak RSS %5d MiB\n' "$name" \
    "$(printf '%s\n' "${walls[@]}" | median)" "$(( $(printf '%s\n' "${rss[@]}" | median) / 1024 ))"
}
echo "bench/what-if.sh on $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $runs runs each: $dump"
now=--now=2026-11-21T10:00:00Z
measure "doctor (the read)" "$kelp" doctor --from "$dump" -o json "$now"
measure "what-if, one pool changed" "$kelp" what-if --nodepools "$work/one.json" --from "$dump" -o json "$now"
measure "what-if, all 20 changed" "$kelp" what-if --nodepools "$work/all.json" --from "$dump" -o json "$now"
