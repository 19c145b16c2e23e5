#!/usr/bin/env bash
# The dashboard at scale: generate a 5,000-node / 150,000-pod dump, serve it with
# `kelp serve --from`, and measure the page payload and the overview API under 50
# concurrent clients with wrk (Debian package `wrk`), each as a client that asks for the
# whole body and as one that accepts gzip. Prints one line per figure.
#
#   bench/dashboard.sh [--nodes N] [--pods N] [--duration 20s] [--connections 50]
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=5000 pods=150000 duration=20s connections=50
while (($#)); do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    *) echo "usage: $0 [--nodes N] [--pods N] [--duration 20s] [--connections 50]" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "bench/dashboard.sh: wrk is required (apt-get install wrk)" >&2; exit 2; }
dir=${KELP_BENCH_DIR:-/tmp/kelp-bench}
mkdir -p "$dir"
dump="$dir/cluster-${nodes}n-${pods}p.json"
[[ -s "$dump" ]] || bench/gen-dump.py --nodes "$nodes" --pods "$pods" --seed 1 -o "$dump"
cargo build --release --locked -q
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
dash=$(free_port) metrics=$(free_port)
target/release/kelp serve --from "$dump" --dashboard-addr "127.0.0.1:$dash" \
  --metrics-addr "127.0.0.1:$metrics" --no-cost-scrape >"$dir/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
name=$(basename "$dump" .json)
page="http://127.0.0.1:$dash/clusters/$name/karpenter"
api="http://127.0.0.1:$dash/api/v1/clusters/$name/karpenter"
for _ in $(seq 600); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$page") == 200 ]] && break
  sleep 0.5
done
size() { curl -s -o /dev/null -w '%{size_download}' "$@"; }
gz=(-H 'Accept-Encoding: gzip')
echo "dump: $(du -h "$dump" | cut -f1) ($nodes nodes, $pods pods)"
echo "page payload: $(($(size "$page") / 1024)) KiB, gzipped $(($(size "${gz[@]}" "$page") / 1024)) KiB (goal <= 300 KB)"
echo "overview API payload: $(($(size "$api") / 1024)) KiB, gzipped $(($(size "${gz[@]}" "$api") / 1024)) KiB"
# Each URL twice: as wrk asks (no Accept-Encoding: the whole body), and gzipped, as a
# browser and Go's and Python's HTTP clients ask.
for what in api page "api gzip" "page gzip"; do
  url=$api; [[ $what == page* ]] && url=$page
  headers=(); [[ $what == *gzip ]] && headers=("${gz[@]}")
  out=$(wrk -t2 -c"$connections" -d"$duration" --latency "${headers[@]}" "$url")
  p99=$(awk '/^ +99%/ {print $2}' <<<"$out")
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  echo "$what: p99 $p99 at $connections connections, $rps req/s (wrk -t2 -c$connections -d$duration)"
done
echo "serve RSS: $(awk '/VmRSS/ {print int($2/1024)" MiB"}' /proc/$pid/status)"
