#!/usr/bin/env bash
# kelp doctor vs `jq empty` on one large cluster dump: wall time and peak RSS.
#
#   bench/doctor-vs-jq.sh                 # 5000 nodes / 150000 pods / 50000 events / 20 NodePools
#   NODES=500 PODS=15000 EVENTS=5000 bench/doctor-vs-jq.sh      # a quick, smaller run
#
# Environment: KELP_BENCH_DIR (where the dump goes, default /tmp/kelp-bench), NODES, PODS,
# EVENTS, NODEPOOLS, SEED (generator parameters), RUNS (runs of each tool, default 3),
# KELP_BENCH_STRICT=1 (exit 1 when a goal is missed). See bench/README.md.
#
# Goals (from the issue): kelp wall time <= 1.0x jq's; kelp peak RSS <= 1.5x the file size.
# `kelp doctor` exits 1 when it finds something critical: that is a successful run here;
# only exit status 2 or more (or a signal) counts as a failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
dir="${KELP_BENCH_DIR:-/tmp/kelp-bench}"
nodes="${NODES:-5000}" pods="${PODS:-150000}" events="${EVENTS:-50000}"
nodepools="${NODEPOOLS:-20}" seed="${SEED:-1}" runs="${RUNS:-3}"
now="2026-11-21T10:00:00Z"
jq_bin="${JQ:-/usr/bin/jq}"
timer=/usr/bin/time

for tool in "$jq_bin" "$timer" python3 cargo; do
    command -v "$tool" >/dev/null || { echo "doctor-vs-jq: $tool not found" >&2; exit 2; }
done

echo "== building kelp (cargo build --release)"
(cd "$repo" && cargo build --release --quiet)
kelp="$repo/target/release/kelp"

mkdir -p "$dir"
dump="$dir/dump-n${nodes}-p${pods}-e${events}-np${nodepools}-s${seed}.json"
if [[ ! -s "$dump" ]]; then
    echo "== generating $dump"
    python3 "$here/gen-dump.py" --nodes "$nodes" --pods "$pods" --events "$events" \
        --nodepools "$nodepools" --seed "$seed" -o "$dump.tmp"
    mv "$dump.tmp" "$dump"
fi
size=$(stat -c %s "$dump")
echo "== dump: $dump ($(awk -v b="$size" 'BEGIN{printf "%.1f MiB", b/1048576}'))"
cat "$dump" >/dev/null   # warm the page cache so neither tool pays for the first read

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# run NAME CMD...: one timed run; appends "seconds kilobytes" to $tmp/NAME.
run() {
    local name="$1"; shift
    local status=0
    "$timer" -f '%e %M' -o "$tmp/last" "$@" >/dev/null 2>"$tmp/stderr" || status=$?
    if [[ "$name" == kelp && "$status" -eq 1 ]]; then
        status=0   # critical findings: a successful run
    fi
    if [[ "$status" -ne 0 ]]; then
        echo "doctor-vs-jq: $name failed (exit $status):" >&2
        cat "$tmp/stderr" >&2
        exit 2
    fi
    tail -n 1 "$tmp/last" >>"$tmp/$name"
    echo "   $name run: $(tail -n 1 "$tmp/last" | awk '{printf "%6.2f s  %7.0f MiB", $1, $2/1024}')"
}

echo "== $runs runs each, interleaved"
for ((i = 1; i <= runs; i++)); do
    run kelp "$kelp" doctor --from "$dump" -o json --now "$now"
    run jq "$jq_bin" empty "$dump"
done

median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
kt=$(cut -d' ' -f1 "$tmp/kelp" | median); km=$(cut -d' ' -f2 "$tmp/kelp" | median)
jt=$(cut -d' ' -f1 "$tmp/jq" | median);   jm=$(cut -d' ' -f2 "$tmp/jq" | median)

awk -v kt="$kt" -v km="$km" -v jt="$jt" -v jm="$jm" -v size="$size" -v runs="$runs" '
BEGIN {
    mb = size / 1048576
    printf "\n%-34s %12s %14s %14s\n", "median of " runs " runs", "wall (s)", "peak RSS (MiB)", "RSS / file"
    printf "%-34s %12.2f %14.0f %13.2fx\n", "kelp doctor -o json", kt, km / 1024, km / 1024 / mb
    printf "%-34s %12.2f %14.0f %13.2fx\n", "jq empty", jt, jm / 1024, jm / 1024 / mb
    printf "%-34s %12.1f\n", "file size (MiB)", mb
    tr = kt / jt; rr = km / 1024 / mb
    printf "\nwall time kelp/jq:      %.2fx   (goal <= 1.00x: %s)\n", tr, tr <= 1.0 ? "met" : "MISSED"
    printf "kelp peak RSS / file:   %.2fx   (goal <= 1.50x: %s)\n", rr, rr <= 1.5 ? "met" : "MISSED"
    exit (tr <= 1.0 && rr <= 1.5) ? 0 : 1
}' && met=1 || met=0

if [[ "$met" -eq 0 && "${KELP_BENCH_STRICT:-0}" == 1 ]]; then
    exit 1
fi
exit 0
