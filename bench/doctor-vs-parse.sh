#!/usr/bin/env bash
# kelp doctor vs the parse floor vs jq, on generated cluster dumps: CPU time, wall time and
# peak RSS, in one interleaved run.
#
#   bench/doctor-vs-parse.sh                  # both sizes below, 3 runs each, median
#   SIZES=medium RUNS=1 bench/doctor-vs-parse.sh
#
# Sizes (bench/gen-dump.py parameters; 20 NodePools, seed 1):
#   medium  1,000 nodes /  30,000 pods / 10,000 events   (about 200 MB of compact JSON)
#   large   5,000 nodes / 150,000 pods / 50,000 events   (about 1 GB)
#
# The three commands, each on the same file, the page cache warm:
#   kelp        kelp doctor --from FILE -o json --now 2026-11-21T10:00:00Z
#   raw-parse   target/release/examples/raw_parse FILE: the file mapped and parsed by
#               serde_json into IgnoredAny (no tree, no projection); what any reader of the
#               dump must at least do (examples/raw_parse.rs)
#   jq          jq empty FILE
#
# Printed per size: the median CPU (user+sys), wall time and peak RSS of each, kelp's CPU as
# a ratio to raw-parse's and to jq's, and kelp's peak RSS / file size.
# Goals (issue): kelp CPU <= 2.0x raw-parse; kelp peak RSS <= 1.0x the file.
#
# Environment: KELP_BENCH_DIR (default /tmp/kelp-bench), SIZES, RUNS (default 3), JQ (a jq
# binary; JQ=none skips it), KELP_BENCH_STRICT=1 (exit 1 when a goal is missed).
# `kelp doctor` exits 1 when it finds something critical: that is a successful run here.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
dir="${KELP_BENCH_DIR:-/tmp/kelp-bench}"
runs="${RUNS:-3}" sizes="${SIZES:-medium large}"
now="2026-11-21T10:00:00Z"
jq_bin="${JQ:-jq}"
timer=/usr/bin/time

for tool in "$timer" python3 cargo; do
    command -v "$tool" >/dev/null || { echo "doctor-vs-parse: $tool not found" >&2; exit 2; }
done
if [[ "$jq_bin" != none ]] && ! command -v "$jq_bin" >/dev/null; then
    echo "doctor-vs-parse: $jq_bin not found (JQ=none skips it)" >&2; exit 2
fi

echo "== building kelp and the raw parser (cargo build --release)"
(cd "$repo" && cargo build --release --quiet --bin kelp --example raw_parse)
kelp="$repo/target/release/kelp" raw="$repo/target/release/examples/raw_parse"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# run NAME CMD...: one timed run; appends "cpu wall kilobytes" to $tmp/NAME.
run() {
    local name="$1"; shift
    local status=0
    "$timer" -f '%U %S %e %M' -o "$tmp/last" "$@" >/dev/null 2>"$tmp/stderr" || status=$?
    if [[ "$name" == kelp && "$status" -eq 1 ]]; then
        status=0   # critical findings: a successful run
    fi
    if [[ "$status" -ne 0 ]]; then
        echo "doctor-vs-parse: $name failed (exit $status):" >&2
        cat "$tmp/stderr" >&2
        exit 2
    fi
    tail -n 1 "$tmp/last" | awk '{ print $1 + $2, $3, $4 }' >>"$tmp/$name"
    tail -n 1 "$tmp/$name" | awk -v n="$name" '{ printf "   %-10s cpu %6.2f s  wall %6.2f s  %7.0f MiB\n", n, $1, $2, $3/1024 }'
}

median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
col() { cut -d' ' -f"$2" "$tmp/$1" | median; }

missed=0
for size in $sizes; do
    case "$size" in
        medium) nodes=1000 pods=30000 events=10000 ;;
        large) nodes=5000 pods=150000 events=50000 ;;
        *) echo "doctor-vs-parse: unknown size $size (medium, large)" >&2; exit 2 ;;
    esac
    mkdir -p "$dir"
    dump="$dir/dump-n${nodes}-p${pods}-e${events}-np20-s1.json"
    if [[ ! -s "$dump" ]]; then
        echo "== generating $dump"
        python3 "$here/gen-dump.py" --nodes "$nodes" --pods "$pods" --events "$events" \
            --nodepools 20 --seed 1 -o "$dump.tmp"
        mv "$dump.tmp" "$dump"
    fi
    bytes=$(stat -c %s "$dump")
    echo "== $size: $dump ($(awk -v b="$bytes" 'BEGIN{printf "%.1f MB", b/1e6}'))"
    cat "$dump" >/dev/null   # warm the page cache: no tool pays for the first read
    rm -f "$tmp/kelp" "$tmp/raw-parse" "$tmp/jq"
    for ((i = 1; i <= runs; i++)); do
        run kelp "$kelp" doctor --from "$dump" -o json --now "$now"
        run raw-parse "$raw" "$dump"
        [[ "$jq_bin" == none ]] || run jq "$jq_bin" empty "$dump"
    done
    kc=$(col kelp 1) kw=$(col kelp 2) km=$(col kelp 3)
    rc=$(col raw-parse 1) rw=$(col raw-parse 2) rm_=$(col raw-parse 3)
    if [[ "$jq_bin" != none ]]; then jc=$(col jq 1) jw=$(col jq 2) jm=$(col jq 3); else jc=0 jw=0 jm=0; fi
    awk -v kc="$kc" -v kw="$kw" -v km="$km" -v rc="$rc" -v rw="$rw" -v rm="$rm_" \
        -v jc="$jc" -v jw="$jw" -v jm="$jm" -v bytes="$bytes" -v runs="$runs" -v size="$size" '
    BEGIN {
        mib = bytes / 1048576
        printf "\n%-8s median of %d   %10s %10s %14s\n", size, runs, "cpu (s)", "wall (s)", "peak RSS (MiB)"
        printf "  %-22s %10.2f %10.2f %14.0f\n", "kelp doctor -o json", kc, kw, km / 1024
        printf "  %-22s %10.2f %10.2f %14.0f\n", "raw-parse (IgnoredAny)", rc, rw, rm / 1024
        if (jc > 0) printf "  %-22s %10.2f %10.2f %14.0f\n", "jq empty", jc, jw, jm / 1024
        r = kc / (rc > 0 ? rc : 0.01); m = km / 1024 / mib
        printf "  kelp cpu / raw-parse:  %.2fx   (goal <= 2.0x: %s)\n", r, r <= 2.0 ? "met" : "MISSED"
        if (jc > 0) printf "  kelp cpu / jq:         %.2fx\n", kc / jc
        printf "  kelp peak RSS / file:  %.2fx   (goal <= 1.0x: %s)\n", m, m <= 1.0 ? "met" : "MISSED"
        exit (r <= 2.0 && m <= 1.0) ? 0 : 1
    }' || missed=1
done

if [[ "$missed" -eq 1 && "${KELP_BENCH_STRICT:-0}" == 1 ]]; then
    exit 1
fi
exit 0
