#!/usr/bin/env bash
# What the consolidation answer costs `kelp doctor` when kelp must place every node's pods
# itself, and when those pods carry the filters that cost most (required anti-affinity and
# DoNotSchedule topology spread), against the same cluster without them.
#
#   bench/consolidation.sh            # 3 runs each, the fastest
#   RUNS=5 bench/consolidation.sh
#
# The cluster: bench/gen-dump.py with 1,000 nodes / 30,000 pods / 2,000 events (seed 3),
# every NodeClaim made Consolidatable (so every node that nothing else holds reaches kelp's
# fit check). Two files:
#   plain      as generated
#   affinity   every bound pod of a workload also has hostname anti-affinity against its
#              own app and a zone spread (maxSkew 1, DoNotSchedule) over it
# Printed: the fastest wall time of `kelp doctor --from FILE -o json` on each, the ratio,
# and how many consolidation-blocked findings each reports (the answers must not change
# with the files' size: the same nodes, the same reasons but for the filters).
#
# Environment: KELP_BENCH_DIR (default /tmp/kelp-bench-consolidation, removed at the end),
# RUNS (default 3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
dir="${KELP_BENCH_DIR:-/tmp/kelp-bench-consolidation}"
runs="${RUNS:-3}"
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT

(cd "$repo" && cargo build --release --locked --quiet --bin kelp)
kelp="$repo/target/release/kelp"

python3 "$here/gen-dump.py" --nodes 1000 --pods 30000 --events 2000 --seed 3 -o "$dir/gen.json" 2>/dev/null
python3 - "$dir" <<'EOF'
import json, sys
d = sys.argv[1]
dump = json.load(open(f"{d}/gen.json"))
for item in dump["items"]:
    if item.get("kind") == "NodeClaim":
        status = item.setdefault("status", {})
        conds = [c for c in status.get("conditions", []) if c["type"] != "Consolidatable"]
        conds.append({"type": "Consolidatable", "status": "True", "reason": "Consolidatable",
                      "lastTransitionTime": "2026-11-21T08:00:00Z", "message": ""})
        status["conditions"] = conds
json.dump(dump, open(f"{d}/plain.json", "w"))
for item in dump["items"]:
    app = item.get("metadata", {}).get("labels", {}).get("app")
    if item.get("kind") == "Pod" and item["spec"].get("nodeName") and app:
        sel = {"matchLabels": {"app": app}}
        item["spec"].setdefault("affinity", {})["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": sel}]}
        item["spec"]["topologySpreadConstraints"] = [
            {"labelSelector": sel, "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
             "whenUnsatisfiable": "DoNotSchedule"}]
json.dump(dump, open(f"{d}/affinity.json", "w"))
EOF
rm -f "$dir/gen.json"

fastest() { # FILE -> the fastest wall time of RUNS runs, in seconds
  local best="" t i
  for ((i = 0; i < runs; i++)); do
    t="$( { /usr/bin/time -f '%e' "$kelp" doctor --from "$1" -o json --now 2026-11-21T10:00:00Z >/dev/null; } 2>&1 | tail -n1)"
    if [[ -z "$best" ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best="$t"; fi
  done
  echo "$best"
}
blocked() { # FILE -> the consolidation-blocked findings by reason
  "$kelp" doctor --from "$1" -o json --now 2026-11-21T10:00:00Z --code consolidation-blocked |
    python3 -c 'import json, sys, collections; r = json.load(sys.stdin); print(dict(collections.Counter(f["details"]["reason"] for f in r["findings"])))' || true
}
plain="$(fastest "$dir/plain.json")"
affinity="$(fastest "$dir/affinity.json")"
echo "plain     ${plain} s   $(blocked "$dir/plain.json")"
echo "affinity  ${affinity} s   $(blocked "$dir/affinity.json")"
awk -v a="$affinity" -v p="$plain" 'BEGIN { printf "ratio     %.2fx\n", a / p }'
