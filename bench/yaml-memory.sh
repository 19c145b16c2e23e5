#!/usr/bin/env bash
# Peak memory of kelp's YAML readers against the size of the file: a kubectl-style YAML
# List, a List of objects made of tiny entries, and one Pod of 560,000 containers.
#
#   bench/yaml-memory.sh            # builds target/release/kelp if needed
#
# The inputs (in KELP_BENCH_DIR, default /tmp/kelp-bench):
#   real.yaml   bench/gen-dump.py at 100 nodes / 3,000 pods / 1,000 events, written as block
#               YAML the way kubectl writes it (about 24 MB)
#   tiny.yaml   100 Pods of 9,000 one-key containers each (`- {name: cN}`): the most tree
#               per byte kelp accepts (about 18 MB)
#   huge.yaml   one Pod of 560,000 containers (about 29 MB): past the 10,000-entry cap
#
# Printed per input and command (doctor --from, lint, what-if --pod for huge.yaml): the exit
# status, peak RSS, the file size and their ratio. Goal (issue 41): peak <= 10x the file.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
dir="${KELP_BENCH_DIR:-/tmp/kelp-bench}"
kelp="$repo/target/release/kelp"
mkdir -p "$dir"
[[ -x "$kelp" ]] || (cd "$repo" && cargo build --release --locked)

if [[ ! -s "$dir/real.yaml" ]]; then
    python3 "$here/gen-dump.py" --nodes 100 --pods 3000 --events 1000 --nodepools 5 --seed 1 \
        -o "$dir/real.json" >/dev/null
    # Block YAML as kubectl writes it (no PyYAML needed: strings as JSON strings, which are
    # YAML double-quoted scalars).
    python3 - "$dir/real.json" "$dir/real.yaml" <<'PY'
import json, sys
out = open(sys.argv[2], "w")
def scalar(v):
    return json.dumps(v)
def emit(v, ind, first_prefix):
    pad = " " * ind
    if isinstance(v, dict) and v:
        first = True
        for k, x in v.items():
            lead = first_prefix if first else pad
            first = False
            if isinstance(x, (dict, list)) and x:
                out.write(f"{lead}{json.dumps(k)}:\n")
                emit(x, ind + 2 if isinstance(x, dict) else ind, pad + ("  " if isinstance(x, dict) else ""))
            else:
                out.write(f"{lead}{json.dumps(k)}: {scalar(x) if not isinstance(x, (dict, list)) else json.dumps(x)}\n")
    elif isinstance(v, list) and v:
        for x in v:
            if isinstance(x, dict) and x:
                emit(x, ind + 2, pad + "- ")
            elif isinstance(x, list) and x:
                out.write(f"{pad}- {json.dumps(x)}\n")
            else:
                out.write(f"{pad}- {json.dumps(x)}\n")
    else:
        out.write(f"{first_prefix}{json.dumps(v)}\n")
emit(json.load(open(sys.argv[1])), 0, "")
PY
fi
if [[ ! -s "$dir/tiny.yaml" ]]; then
    python3 - "$dir/tiny.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for p in range(100):
        f.write(f"- apiVersion: v1\n  kind: Pod\n  metadata: {{name: p{p}, namespace: shop}}\n  spec:\n    containers:\n")
        f.writelines(f"    - {{name: c{i}}}\n" for i in range(9000))
PY
fi
if [[ ! -s "$dir/huge.yaml" ]]; then
    python3 - "$dir/huge.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("apiVersion: v1\nkind: Pod\nmetadata: {name: huge, namespace: shop}\nspec:\n  containers:\n")
    f.writelines(f"  - name: c{i}\n    image: registry.example/app:1\n" for i in range(560000))
PY
fi
printf 'apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements: []\n' >"$dir/pools.yaml"

measure() { # name file args...
    local name="$1" file="$2"; shift 2
    local out rc kb
    out="$(mktemp)"
    rc=0
    /usr/bin/time -f '%M' -o "$out" "$kelp" "$@" >/dev/null 2>&1 || rc=$?
    kb="$(tail -1 "$out")"
    rm -f "$out"
    python3 -c "import sys; kb, size = int(sys.argv[1]), int(sys.argv[2]); print(f'{sys.argv[3]:<34} exit {sys.argv[4]}  peak {kb/1024:7.1f} MiB  file {size/2**20:6.1f} MiB  {kb*1024/size:5.1f}x')" \
        "$kb" "$(stat -c %s "$file")" "$name" "$rc"
}
for f in real tiny huge; do
    y="$dir/$f.yaml"
    measure "doctor --from $f.yaml" "$y" doctor --from "$y" --now 2026-11-21T10:00:00Z
    measure "lint $f.yaml" "$y" lint "$y"
done
measure "what-if --pod huge.yaml" "$dir/huge.yaml" what-if --pod "$dir/huge.yaml" --nodepools "$dir/pools.yaml"
