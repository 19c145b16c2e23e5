#!/usr/bin/env bash
# `kelp serve` on a live control plane, side by side with kube-state-metrics and
# eks-node-viewer: memory, CPU to a complete first view, steady and churn CPU, freshness.
#
#   bench/live.sh                                   # 1,000 nodes, 30,000 pods, 120 s windows
#   NODES=100 PODS=3000 WINDOW=30 bench/live.sh     # a quick run (about 3 min)
#   KELP_BIN=/tmp/kelp bench/live.sh                # measure that binary (no cargo)
#
# It starts the project's real control plane with the real Karpenter (testenv/up, in its
# own KELP_TESTENV_DIR), and loads it with NODES kwok nodes and PODS pods already bound to
# them: Node objects annotated kwok.x-k8s.io/node=fake (kwok plays their kubelet, as for
# Karpenter's nodes), 9 in 10 labelled karpenter.sh/nodepool (NODEPOOLS pools live-N), and
# Pods with spec.nodeName set that tolerate every taint. Both are created by a small client,
# LOAD_PARALLEL requests at a time (at most LOAD_RATE a second), each worker on its own
# keep-alive connection; past
# LOAD_TIMEOUT it stops creating and the results say which size was reached. testenv's kwok runs
# without node leases, so the node lifecycle controller and kwok would keep flipping every
# node's Ready condition (and mark its pods NotReady); a small helper plays the kubelets'
# heartbeats instead, spread evenly: each node's Lease renewed every LEASE_INTERVAL seconds
# and its status reported every STATUS_INTERVAL seconds (a kubelet's defaults: 10 s and 5
# min), or, in the steady windows, at each of STEADY_RATES node updates a second. A report
# also restarts kwok's own heartbeat timer (10 min, in a burst for all the nodes created
# together), so the node updates of the steady windows are an even stream.
#
# The peers are built from the Go module proxy into KELP_TOOLS_DIR (as scripts/chart builds
# helm): kube-state-metrics (k8s.io/kube-state-metrics/v2, KSM_VERSION) and eks-node-viewer
# (github.com/awslabs/eks-node-viewer/cmd/eks-node-viewer, ENV_VERSION), with `go install
# PKG@VERSION`, or, when the proxy refuses the module's version list (which `go install`
# reads for deprecations), with `go build` in the downloaded module against its own go.mod.
# eks-node-viewer (a TUI) runs in a detached 200x50 tmux session with -disable-pricing.
# kube-state-metrics runs with its default collectors. A peer that cannot be built or run
# is reported and skipped; the others go on.
#
# Each tool is started alone (the next once the previous one has its first view), then all
# three run side by side against the same API server. For each it prints:
#   1. RSS (VmRSS, MiB) at the end of the steady window, and the highest sample;
#   2. CPU seconds (utime+stime, /proc/PID/stat) and wall seconds from its start to a
#      complete first view: kelp: /readyz is 200, the nodepool_nodes series of /metrics sum
#      to the pool-labelled nodes, and the dashboard API counts every node and pod; KSM:
#      /metrics has a kube_pod_info for every pod and a kube_node_info for every node (read
#      at the start of the scrape that shows them, so the checking scrape is not counted);
#      eks-node-viewer: its screen says "N nodes" and "P pods" for the whole cluster;
#   3. CPU over WINDOW seconds with only heartbeats, once per rate of STEADY_RATES (node
#      status reports a second; kelp's and KSM's /metrics scraped every SCRAPE_EVERY
#      seconds, as a Prometheus would), with the watch events a second each window saw;
#   4. CPU over CHURN_WINDOW seconds while CHURN_RATE pods a second are deleted and as many
#      created (the pod count stays put);
#   5. freshness, FRESH_REPEATS times (median): seconds from the API server's answer to a new
#      node's create until kelp's dashboard API counts it (polled every 2 ms) and
#      eks-node-viewer's screen counts it; then, each alone on a node of its own, until
#      kelp's /metrics has it in its pool (polled every 2 ms) and KSM's /metrics has its
#      kube_node_info (scraped back to back; the time the line arrives). Each count must first show the value before the create
#      (the previous repeat's node is deleted). The pool row's node count is timed too, for
#      information: kelp shows Karpenter's own count there (NodePool status.nodes), so it
#      waits on Karpenter. Then a pod no node can take: seconds from the scheduler's verdict
#      (its status update, as a watch of the pod sees it) until kelp's dashboard API lists it
#      among the pending pods it diagnoses (the pass's answer, not the model's alone);
# then each kelp figure over each peer's. Results also go to $KELP_LIVE_DIR/results.txt.
# Everything is stopped at the end (trap): the tools, the helpers, the tmux server and
# testenv/down; the generated files and etcd's data go too (logs stay in $KELP_LIVE_DIR/logs).
#
# Environment: NODES (1000), PODS (30000), NODEPOOLS (10), NAMESPACES (20), WINDOW (120),
# CHURN_WINDOW (WINDOW), CHURN_RATE (10 pods/s), SCRAPE_EVERY (30 s; 0 = no scrapes),
# LEASE_INTERVAL (10 s), STATUS_INTERVAL (300 s; 0 leaves kwok's bursts), STEADY_RATES ("3 10
# 30": one steady window per rate of node status reports a second), FRESH_REPEATS (3),
# LOAD_PARALLEL (16), LOAD_RATE (100 objects/s at most, so kwok keeps up marking the pods
# Running; 0 = no cap: at 180/s kwok fell minutes behind here), LOAD_TIMEOUT (600 s: past it loading stops and the run goes on with
# what was created, saying so), SETTLE_TIMEOUT (300), VIEW_TIMEOUT (600 s per tool),
# FRESH_TIMEOUT (60), KSM_VERSION (v2.18.0) and ENV_VERSION (v0.7.4), or `latest` for the
# newest `go list -m -versions` reports; KSM_ARGS (extra kube-state-metrics flags, e.g.
# --resources=nodes,pods), KELP_ARGS (extra kelp serve flags, e.g. --state-dir DIR to keep
# its history while measured), PEERS ("ksm env": which peers to run), KELP_BIN (default
# target/release/kelp, built with cargo only when missing), KELP_LIVE_DIR (/tmp/kelp-live),
# KELP_TESTENV_DIR ($KELP_LIVE_DIR/testenv), KELP_TESTENV_CACHE, KELP_TOOLS_DIR
# (~/.cache/kelp-tools), GO, KEEP=1 (keep the generated files and the testenv's etcd data).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
case "${1:-}" in
  "") ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "bench/live.sh: no arguments (settings are environment variables; see --help)" >&2; exit 2 ;;
esac

NODES="${NODES:-1000}" PODS="${PODS:-30000}" NODEPOOLS="${NODEPOOLS:-10}" NAMESPACES="${NAMESPACES:-20}"
WINDOW="${WINDOW:-120}" CHURN_WINDOW="${CHURN_WINDOW:-$WINDOW}" CHURN_RATE="${CHURN_RATE:-10}"
SCRAPE_EVERY="${SCRAPE_EVERY:-30}" LEASE_INTERVAL="${LEASE_INTERVAL:-10}" STATUS_INTERVAL="${STATUS_INTERVAL:-300}"
FRESH_REPEATS="${FRESH_REPEATS:-3}"
LOAD_PARALLEL="${LOAD_PARALLEL:-16}" LOAD_RATE="${LOAD_RATE:-100}" LOAD_TIMEOUT="${LOAD_TIMEOUT:-600}" SETTLE_TIMEOUT="${SETTLE_TIMEOUT:-300}"
VIEW_TIMEOUT="${VIEW_TIMEOUT:-600}" FRESH_TIMEOUT="${FRESH_TIMEOUT:-60}"
KSM_VERSION="${KSM_VERSION:-v2.18.0}" ENV_VERSION="${ENV_VERSION:-v0.7.4}" KSM_ARGS="${KSM_ARGS:-}"
PEERS="${PEERS:-ksm env}" STEADY_RATES="${STEADY_RATES:-3 10 30}"
dir="${KELP_LIVE_DIR:-/tmp/kelp-live}"
export KELP_TESTENV_DIR="${KELP_TESTENV_DIR:-$dir/testenv}"
TOOLS="${KELP_TOOLS_DIR:-${HOME:-/root}/.cache/kelp-tools}"
KSM_PINNED=v2.18.0 ENV_PINNED=v0.7.4 # the newest the module proxy served here on 2026-11-26
for v in NODES PODS NODEPOOLS NAMESPACES WINDOW CHURN_WINDOW CHURN_RATE SCRAPE_EVERY LEASE_INTERVAL STATUS_INTERVAL \
  FRESH_REPEATS LOAD_PARALLEL LOAD_RATE LOAD_TIMEOUT SETTLE_TIMEOUT VIEW_TIMEOUT FRESH_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "bench/live.sh: $v must be a whole number, not '${!v}'" >&2; exit 2; }
done
for rate in $STEADY_RATES; do
  [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v r="$rate" 'BEGIN {exit !(r > 0)}' ||
    { echo "bench/live.sh: STEADY_RATES must be node updates a second above 0, not '$rate'" >&2; exit 2; }
done
[[ -n "${STEADY_RATES// /}" ]] || { echo "bench/live.sh: STEADY_RATES is empty" >&2; exit 2; }
((NODES >= 10 && LEASE_INTERVAL >= 1 && PODS >= 1 && NODEPOOLS >= 1 && NAMESPACES >= 1 && CHURN_RATE >= 1 && WINDOW >= 5)) ||
  { echo "bench/live.sh: need NODES >= 10, WINDOW >= 5 and PODS, NODEPOOLS, NAMESPACES, CHURN_RATE >= 1" >&2; exit 2; }

log() { printf '[live %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf 'bench/live.sh: error: %s\n' "$*" >&2; exit 1; }
warn() { printf '[live %(%H:%M:%S)T] WARNING: %s\n' -1 "$*" >&2; }

for tool in python3 curl awk flock; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
mkdir -p "$dir/logs"
exec 8>"$dir/.lock"
flock -n 8 || die "another bench/live.sh runs with KELP_LIVE_DIR=$dir"
gen="$dir/gen"
rm -rf "$gen" && mkdir -p "$gen"
results="$dir/results.txt"
CLK_TCK=$(getconf CLK_TCK)

# ---- stopping everything we start ------------------------------------------------------
bg_pids=()        # processes this script started (kelp, KSM, helpers), stopped by PID
tmux_sock="kelp-live-$$"
tmux_started=0 testenv_started=0
# mine PID: still our own child (so a recycled PID is never signalled)
mine() {
  local s
  { s=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
  s=${s##*) }
  local -a fields
  read -ra fields <<<"$s"
  [[ "${fields[1]}" == "$$" && "${fields[0]}" != Z ]]
}
cleanup() {
  local rc=$? pid i left
  set +e
  trap - EXIT INT TERM
  for pid in "${bg_pids[@]+"${bg_pids[@]}"}"; do mine "$pid" && kill "$pid" 2>/dev/null; done
  for ((i = 0; i < 100; i++)); do
    left=0
    for pid in "${bg_pids[@]+"${bg_pids[@]}"}"; do mine "$pid" && left=1; done
    ((left)) || break
    sleep 0.1
  done
  for pid in "${bg_pids[@]+"${bg_pids[@]}"}"; do mine "$pid" && kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  ((tmux_started)) && tmux -L "$tmux_sock" kill-server 2>/dev/null
  if ((testenv_started)); then
    log "testenv/down"
    "$repo/testenv/down" >>"$dir/logs/testenv.log" 2>&1 || warn "testenv/down failed (see $dir/logs/testenv.log)"
  fi
  if [[ "${KEEP:-0}" != 1 ]]; then
    rm -rf "$gen" "$KELP_TESTENV_DIR/etcd"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- small helpers -------------------------------------------------------------------------
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}'; }
cpu_ticks() { # PID -> utime+stime in clock ticks (fields 14 and 15 of /proc/PID/stat)
  local s
  { s=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
  s=${s##*) }
  local -a fields
  read -ra fields <<<"$s"
  echo $((fields[11] + fields[12]))
}
rss_kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status" 2>/dev/null; }
ticks_s() { awk -v t="$1" -v h="$CLK_TCK" 'BEGIN {printf "%.2f", t / h}'; }
alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kc() { timeout 300 "$KUBECTL" "$@"; }
count() { { kc get "$@" -o name 2>/dev/null || true; } | wc -l; }
# The overview JSON's counts ("counts":{...,"nodes":N,"pods":N,...}) without a JSON tool.
overview_counts() { grep -o '"counts":{[^}]*}' "$1" | sed -E 's/.*"nodes":([0-9]+).*"pods":([0-9]+).*/\1 \2/'; }

# ---- kelp ------------------------------------------------------------------------------------
if [[ -n "${KELP_BIN:-}" ]]; then
  kelp="$KELP_BIN"
else
  kelp="$repo/target/release/kelp"
  if [[ ! -x "$kelp" ]]; then
    log "building kelp (cargo build --release)"
    (cd "$repo" && cargo build --release --locked --quiet) || die "cargo build --release failed"
  fi
fi
[[ -x "$kelp" ]] || die "no kelp binary at $kelp"
"$kelp" serve --help >/dev/null 2>&1 || die "$kelp serve --help failed: is it a kelp binary?"

# ---- the peers: built from the Go module proxy, cached per version --------------------------
find_go() {
  if [[ -n "${GO:-}" ]]; then echo "$GO"; return 0; fi
  command -v go 2>/dev/null && return 0
  [[ -x /usr/local/go/bin/go ]] && { echo /usr/local/go/bin/go; return 0; }
  return 1
}
# resolve_version MODULE WANTED PINNED: WANTED, or for `latest` the newest release
# `go list -m -versions` lists (the pin when the proxy will not list the module).
resolve_version() {
  local mod=$1 want=$2 pin=$3 go list
  [[ "$want" == latest ]] || { echo "$want"; return 0; }
  go="$(find_go)" || { echo "$pin"; return 0; }
  if list="$(cd / && GOTOOLCHAIN=local timeout 120 "$go" list -m -versions "$mod" 2>"$dir/logs/go-list.log")" &&
    v="$(tr ' ' '\n' <<<"$list" | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | tail -n1)" && [[ -n "$v" ]]; then
    echo "$v"
  else
    warn "go list -m -versions $mod failed ($(head -n1 "$dir/logs/go-list.log")); using $pin"
    echo "$pin"
  fi
}
# build_peer NAME MODULE SUBDIR VERSION -> prints the binary's path; returns 1 (after saying
# why) when it cannot be built. One Go build at a time.
build_peer() {
  local name=$1 mod=$2 sub=$3 version=$4 out go blog src t0=$SECONDS
  out="$TOOLS/$name-$version"
  if [[ -x "$out/$name" ]]; then echo "$out/$name"; return 0; fi
  go="$(find_go)" || { warn "no Go toolchain (set GO=...): cannot build $name"; return 1; }
  blog="$dir/logs/build-$name.log"
  log "building $name $version from the Go module proxy into $out (a few minutes; log $blog)"
  mkdir -p "$out"
  rm -rf "$out.tmp"
  local pkg="$mod${sub:+/$sub}"
  if (cd / && GOBIN="$out.tmp" GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    nice -n 10 "$go" install -trimpath -ldflags=-s "$pkg@$version") >"$blog" 2>&1; then
    mv "$out.tmp/$name" "$out/$name" && rmdir "$out.tmp"
  else
    log "go install $pkg@$version failed ($(grep -m1 . "$blog")); building in the downloaded module instead"
    src="$(cd / && GOTOOLCHAIN=local timeout 600 "$go" mod download -json "$mod@$version" 2>>"$blog" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    if [[ -z "$src" || ! -d "$src" ]]; then
      warn "cannot download $mod@$version from the module proxy (see $blog): $name skipped"
      rmdir "$out" 2>/dev/null
      return 1
    fi
    local work
    work="$(mktemp -d "$dir/build-$name.XXXXXX")"
    cp -r "$src/." "$work/" && chmod -R u+w "$work"
    if ! (cd "$work" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
      nice -n 10 "$go" build -mod=readonly -trimpath -ldflags=-s -o "$out.tmp/$name" "./${sub:-.}") >>"$blog" 2>&1; then
      rm -rf "$work" "$out.tmp"
      rmdir "$out" 2>/dev/null
      warn "building $name $version failed; last lines of $blog:"
      tail -n 15 "$blog" >&2
      return 1
    fi
    rm -rf "$work"
    mv "$out.tmp/$name" "$out/$name" && rmdir "$out.tmp"
  fi
  log "$name $version built in $((SECONDS - t0)) s"
  echo "$out/$name"
}

ksm_bin="" env_bin=""
if [[ " $PEERS " == *" ksm "* ]]; then
  KSM_VERSION="$(resolve_version k8s.io/kube-state-metrics/v2 "$KSM_VERSION" "$KSM_PINNED")"
  ksm_bin="$(build_peer kube-state-metrics k8s.io/kube-state-metrics/v2 "" "$KSM_VERSION")" ||
    { ksm_bin=""; warn "kube-state-metrics: not built; going on without it"; }
fi
if [[ " $PEERS " == *" env "* ]]; then
  ENV_VERSION="$(resolve_version github.com/awslabs/eks-node-viewer "$ENV_VERSION" "$ENV_PINNED")"
  env_bin="$(build_peer eks-node-viewer github.com/awslabs/eks-node-viewer cmd/eks-node-viewer "$ENV_VERSION")" ||
    { env_bin=""; warn "eks-node-viewer: not built; going on without it"; }
  if [[ -n "$env_bin" ]] && ! command -v tmux >/dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      log "installing tmux (apt-get) to run eks-node-viewer's terminal UI"
      apt-get install -y -q tmux >"$dir/logs/apt-tmux.log" 2>&1 ||
        (apt-get update -q && apt-get install -y -q tmux) >>"$dir/logs/apt-tmux.log" 2>&1 || true
    fi
    command -v tmux >/dev/null || { warn "no tmux: eks-node-viewer (a terminal UI) cannot run; going on without it"; env_bin=""; }
  fi
fi

# ---- the API helper (generation, leases, churn, freshness) --------------------------------
kapi="$gen/kapi.py"
cat >"$kapi" <<'PY'
# bench/live.sh's helper: object generation and a small API client (stdlib only).
import base64, http.client, json, os, re, signal, ssl, subprocess, sys, tempfile, threading, time
import urllib.parse

BENCH_LABEL = "kelp.dev/live-bench"


def node_obj(name, pool, i):
    labels = {
        BENCH_LABEL: "1", "type": "kwok", "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "c-16x-amd64-linux",
        "topology.kubernetes.io/zone": "test-zone-" + "abcd"[i % 4],
        "karpenter.sh/capacity-type": "spot" if i % 3 == 0 else "on-demand",
        "eks-node-viewer/instance-price": "0.272000" if i % 3 == 0 else "0.680000",
    }
    if pool:
        labels["karpenter.sh/nodepool"] = pool
    return {
        "apiVersion": "v1", "kind": "Node",
        # kwok plays the kubelet of nodes annotated kwok.x-k8s.io/node=fake (testenv's selector).
        "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"providerID": "kwok://" + name},
        "status": {"allocatable": {"cpu": "15900m", "memory": "30Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                   "capacity": {"cpu": "16", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}},
    }


def node_name(i):
    return "live-node-%05d" % i


def pool_of(i, pools):
    # Every 10th node has no NodePool (like a managed node group beside Karpenter's).
    return None if i % 10 == 9 else "live-%d" % (i % pools)


def pod_obj(name, ns, node, i):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {BENCH_LABEL: "1", "app": "app-%d" % (i % 50)}},
        "spec": {
            "nodeName": node, "automountServiceAccountToken": False,
            # Tolerate every taint (karpenter.sh/unregistered, the node lifecycle controller's
            # unreachable/not-ready ...), so the taint-eviction controller leaves them be.
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
        },
    }


def pod_args(i, nodes, namespaces):
    return ("live-pod-%06d" % i, "live-%d" % (i % namespaces), node_name(i % nodes))


def cmd_gen(args):
    """gen DIR NODES PODS POOLS NAMESPACES CHUNK: List files nodes-*.json, pods-*.json."""
    out, nodes, pods, pools, namespaces, chunk = args[0], *map(int, args[1:6])
    def write(prefix, objs):
        for c in range(0, len(objs), chunk):
            with open(os.path.join(out, "%s-%05d.json" % (prefix, c // chunk)), "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": objs[c:c + chunk]}, f)
    write("nodes", [node_obj(node_name(i), pool_of(i, pools), i) for i in range(nodes)])
    write("pods", [pod_obj(*pod_args(i, nodes, namespaces), i) for i in range(pods)])


class Api:
    """One keep-alive HTTPS connection to the API server, from testenv's kubeconfig."""

    def __init__(self, kubeconfig):
        text = open(kubeconfig).read()
        def field(k):
            m = re.search(r"^\s*%s:\s*(\S+)\s*$" % re.escape(k), text, re.M)
            if not m:
                sys.exit("kapi: %s not in %s" % (k, kubeconfig))
            return m.group(1)
        u = urllib.parse.urlparse(field("server"))
        self.host, self.port = u.hostname, u.port or 443
        d = tempfile.mkdtemp(prefix="kapi-")
        try:
            cert, key = os.path.join(d, "c"), os.path.join(d, "k")
            for path, k in ((cert, "client-certificate-data"), (key, "client-key-data")):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                    f.write(base64.b64decode(field(k)))
            self.ctx = ssl.create_default_context(cadata=base64.b64decode(field("certificate-authority-data")).decode())
            self.ctx.load_cert_chain(cert, key)
        finally:
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
            os.rmdir(d)
        self.conn = None
        self.last_error = b""

    def req(self, method, path, body=None, ctype="application/json"):
        for attempt in range(5):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
                data = json.dumps(body).encode() if body is not None else None
                self.conn.request(method, path, body=data, headers={"Content-Type": ctype} if data else {})
                r = self.conn.getresponse()
                out = r.read()
                if r.status == 429 or r.status >= 500:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                return r.status, out
            except (OSError, http.client.HTTPException) as e:
                self.last_error = repr(e).encode()
                self.conn = None
                time.sleep(0.2 * (attempt + 1))
        return 0, b""


def now_rfc3339_micro():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def cmd_leases(args):
    """leases KUBECONFIG LEASE_INTERVAL STATUS NAME...|@FILE: a kubelet's heartbeats for each
    node, spread evenly, until SIGTERM: its Lease renewed every LEASE_INTERVAL seconds, and its
    status reported every STATUS seconds (the conditions' lastHeartbeatTime, as a kubelet's
    nodeStatusReportFrequency; 0: never). STATUS is a number, or @FILE holding one, read again
    every second (so the rate of node updates can change without a restart). testenv's kwok
    runs without node leases: without them the node lifecycle controller and kwok would keep
    flipping every node's Ready condition (and mark its pods NotReady). A status report also
    restarts kwok's own 10-minute heartbeat timer, so with STATUS under 600 kwok's heartbeats
    (which come in bursts, as the nodes were created together) never fire and the node updates
    are a steady stream."""
    kubeconfig, interval, status_arg, names = args[0], float(args[1]), args[2], args[3:]
    if len(names) == 1 and names[0].startswith("@"):
        names = open(names[0][1:]).read().split()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    nthreads = max(1, min(4, len(names) // 100 + 1))
    base = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    stats = {"renewed": 0, "reported": 0, "errors": 0}
    read_at, status_now = [0.0], [0.0]

    def status_interval():
        if not status_arg.startswith("@"):
            return float(status_arg)
        if time.monotonic() - read_at[0] >= 1:
            read_at[0] = time.monotonic()
            try:
                status_now[0] = float(open(status_arg[1:]).read().strip() or 0)
            except (OSError, ValueError):
                pass
        return status_now[0]

    def paced(part, every, fn):
        """fn for each of part in turn, forever, every() seconds round (0: paused)."""
        nxt = time.monotonic()
        while not stop.is_set():
            for n in part:
                e = every()
                while e <= 0 and not stop.is_set():
                    stop.wait(1)
                    e = every()
                    nxt = time.monotonic()
                if stop.is_set():
                    return
                fn(n)
                nxt += e / max(1, len(part))
                d = nxt - time.monotonic()
                if d > 0:
                    stop.wait(d)
                elif d < -1:
                    nxt = time.monotonic()  # fell behind: do not burst to catch up

    def lease_worker(part):
        api = Api(kubeconfig)
        for n in part:  # create the leases once
            st, _ = api.req("POST", base, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                            "metadata": {"name": n, "namespace": "kube-node-lease"},
                                            "spec": {"holderIdentity": n, "leaseDurationSeconds": 40,
                                                     "renewTime": now_rfc3339_micro()}})
            if st not in (201, 409):
                stats["errors"] += 1
        def renew(n):
            st, _ = api.req("PATCH", base + "/" + n, {"spec": {"renewTime": now_rfc3339_micro()}},
                            "application/merge-patch+json")
            stats["renewed" if st == 200 else "errors"] += 1
        paced(part, lambda: interval, renew)

    def status_worker(part):
        api = Api(kubeconfig)
        def report(n):
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            conds = [{"type": t, "lastHeartbeatTime": now} for t in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")]
            st, _ = api.req("PATCH", "/api/v1/nodes/%s/status" % n, {"status": {"conditions": conds}},
                            "application/strategic-merge-patch+json")
            stats["reported" if st == 200 else "errors"] += 1
        paced(part, status_interval, report)

    threads = [threading.Thread(target=lease_worker, args=(names[i::nthreads],), daemon=True) for i in range(nthreads)]
    # Several connections, so that 30 reports a second keep up on a busy box.
    threads += [threading.Thread(target=status_worker, args=(names[i::nthreads],), daemon=True) for i in range(nthreads)]
    for t in threads:
        t.start()
    print("leases: %d nodes, leases renewed every %.0f s by %d connections, status every %s s" %
          (len(names), interval, nthreads, status_arg), flush=True)
    stop.wait()
    print("leases: %d lease renewals, %d status reports, %d errors" % (stats["renewed"], stats["reported"], stats["errors"]), flush=True)


def cmd_churn(args):
    """churn KUBECONFIG RATE SECONDS NODES PODS NAMESPACES: for SECONDS, delete RATE of the
    bench's pods a second (in name order) and create RATE new ones a second on the same nodes,
    each on its own connection; never faster than RATE (more than 1 s behind, the schedule
    slips rather than bursting). Prints a JSON summary; progress every 10 s on stderr."""
    kubeconfig, rate, seconds = args[0], float(args[1]), float(args[2])
    nodes, pods, namespaces = map(int, args[3:6])
    tag = "%05d" % (int(time.time()) % 100000)  # new names never clash with an earlier run's
    step = 1.0 / rate
    start = time.monotonic()
    end = start + seconds
    st = {"delete": [0, 0, 0.0], "create": [0, 0, 0.0]}  # ok, errors, seconds spent

    def worker(kind):
        api = Api(kubeconfig)
        t0, k = start, 0
        while time.monotonic() < end:
            d = t0 + k * step - time.monotonic()
            if d > 0:
                time.sleep(min(d, max(0.0, end - time.monotonic())))
                if time.monotonic() >= end:
                    break
            elif d < -1.0:
                t0 = time.monotonic() - k * step
            i = k % pods
            name, ns, node = pod_args(i, nodes, namespaces)
            t = time.monotonic()
            if kind == "delete":
                target = name if k < pods else "%s-c%s-%d" % (name, tag, k // pods)
                code, body = api.req("DELETE", "/api/v1/namespaces/%s/pods/%s" % (ns, target))
                ok = code in (200, 202)
            else:
                target = "%s-c%s-%d" % (name, tag, 1 + k // pods)
                code, body = api.req("POST", "/api/v1/namespaces/%s/pods" % ns, pod_obj(target, ns, node, i))
                ok = code == 201
            st[kind][2] += time.monotonic() - t
            st[kind][0 if ok else 1] += 1
            if not ok:
                print("churn: %s %s/%s: HTTP %s %s" % (kind, ns, target, code, (body or api.last_error)[:200]),
                      file=sys.stderr, flush=True)
            k += 1

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in ("delete", "create")]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(10)
        print("churn: %d deleted, %d created, %d errors" % (st["delete"][0], st["create"][0],
              st["delete"][1] + st["create"][1]), file=sys.stderr, flush=True)
    took = time.monotonic() - start
    def ms(kind):
        n = st[kind][0] + st[kind][1]
        return round(1000 * st[kind][2] / n) if n else None
    print(json.dumps({"seconds": round(took, 1), "deleted": st["delete"][0], "created": st["create"][0],
                      "errors": st["delete"][1] + st["create"][1], "rate": round(st["create"][0] / took, 2),
                      "ms_per_delete": ms("delete"), "ms_per_create": ms("create")}), flush=True)


def cmd_create(args):
    """create KUBECONFIG PARALLEL RATE SECONDS FILE...: create every item of the List FILEs
    (Nodes, Pods), PARALLEL at a time, each worker on its own keep-alive connection, a shared
    queue between them, never more than RATE a second (0: no cap); an item that exists already
    (a retry) counts as created. Stops taking new items after SECONDS. Progress every 10 s on
    stderr; prints a JSON summary."""
    kubeconfig, parallel, rate, seconds, files = args[0], int(args[1]), float(args[2]), float(args[3]), args[4:]
    items = []
    for f in files:
        items.extend(json.load(open(f))["items"])
    start = time.monotonic()
    deadline = start + seconds
    lock = threading.Lock()
    st = {"created": 0, "existed": 0, "errors": 0, "next": 0, "cut": False}
    first_errors = []

    def path(o):
        ns = o["metadata"].get("namespace")
        plural = o["kind"].lower() + "s"
        return "/api/v1/namespaces/%s/%s" % (ns, plural) if ns else "/api/v1/" + plural

    def worker():
        api = Api(kubeconfig)
        while True:
            with lock:
                if st["next"] >= len(items):
                    return
                if time.monotonic() >= deadline:
                    st["cut"] = True
                    return
                o = items[st["next"]]
                due = start + st["next"] / rate if rate > 0 else 0
                st["next"] += 1
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            code, body = api.req("POST", path(o), o)
            with lock:
                if code == 201:
                    st["created"] += 1
                elif code == 409:
                    st["existed"] += 1
                else:
                    st["errors"] += 1
                    if len(first_errors) < 3:
                        first_errors.append("%s: HTTP %s %s" % (o["metadata"]["name"], code, (body or api.last_error)[:200]))

    def progress():
        while any(t.is_alive() for t in threads):
            time.sleep(10)
            with lock:
                done = st["created"] + st["existed"]
            print("create: %d of %d after %.0f s (%.0f/s)" % (done, len(items), time.monotonic() - start,
                                                            done / max(0.001, time.monotonic() - start)),
                  file=sys.stderr, flush=True)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, parallel))]
    for t in threads:
        t.start()
    threading.Thread(target=progress, daemon=True).start()
    for t in threads:
        t.join()
    took = time.monotonic() - start
    done = st["created"] + st["existed"]
    print(json.dumps({"items": len(items), "created": done, "errors": st["errors"], "cut": st["cut"],
                      "seconds": round(took, 2), "rate": round(done / max(0.001, took), 1),
                      "first_errors": first_errors}), flush=True)


def cmd_fresh_pod(args):
    """fresh-pod KUBECONFIG NAME NAMESPACE TIMEOUT URL: create pod NAME that no node can take
    (a nodeSelector no node or NodePool has), watch it until the scheduler marks it
    unschedulable (the event kelp's pod-unschedulable answer follows), and poll kelp's
    overview JSON at URL until its pending rows name it. Prints one JSON line: seconds from
    the create's 201 to the scheduler's status update reaching the watch, and to kelp's
    answer; then deletes the pod."""
    kubeconfig, name, ns, timeout, url = args[0], args[1], args[2], float(args[3]), args[4]
    api = Api(kubeconfig)
    path = "/api/v1/namespaces/%s/pods" % ns
    pod = pod_obj(name, ns, None, 0)
    del pod["spec"]["nodeName"]
    pod["spec"]["nodeSelector"] = {"kelp.dev/live-bench-nowhere": "1"}
    res, t0 = {}, [None]
    watching = threading.Event()

    def watch():
        st, body = api.req("GET", path + "?limit=1")
        rv = json.loads(body)["metadata"]["resourceVersion"] if st == 200 else "0"
        conn = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=timeout)
        conn.request("GET", "%s?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s&timeoutSeconds=%d"
                     % (path, name, rv, int(timeout)))
        r = conn.getresponse()
        watching.set()
        while True:
            line = r.readline()
            if not line:
                return
            ev = json.loads(line)
            conds = ev.get("object", {}).get("status", {}).get("conditions", [])
            if any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conds):
                res["scheduler"] = round(time.monotonic() - t0[0], 3) if t0[0] else 0.0
                conn.close()
                return

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    watching.wait(10)
    st, body = Api(kubeconfig).req("POST", path, pod)
    t0[0] = time.monotonic()
    if st != 201:
        sys.exit("kapi fresh-pod: creating pod %s: HTTP %s %s" % (name, st, body[:300]))
    needle = ('"%s"' % name).encode()
    polls = 0
    while time.monotonic() < t0[0] + timeout:
        polls += 1
        try:
            r, c = http_get(url)
            body = r.read()
            c.close()
            d = json.loads(body)
            if needle in json.dumps(d.get("pending", {})).encode():
                res["kelp-pending"] = round(time.monotonic() - t0[0], 3)
                break
        except Exception:
            pass
        time.sleep(0.02)
    w.join(timeout)
    api.req("DELETE", "%s/%s?gracePeriodSeconds=0" % (path, name))
    out = {"pod": name, "seconds": res, "polls": polls}
    if "scheduler" in res and "kelp-pending" in res:
        out["kelp_after_scheduler"] = round(res["kelp-pending"] - res["scheduler"], 3)
    print(json.dumps(out), flush=True)


def cmd_count_events(args):
    """count-events KUBECONFIG SECONDS OUT: watch nodes and pods (all namespaces) from now for
    SECONDS, then write "NODE_EVENTS POD_EVENTS" to OUT (no initial list is replayed)."""
    kubeconfig, seconds, out = args[0], float(args[1]), args[2]
    counts = {}
    end = time.monotonic() + seconds

    def watch(kind, path):
        api = Api(kubeconfig)
        st, body = api.req("GET", path + "?limit=1")
        rv = json.loads(body)["metadata"]["resourceVersion"] if st == 200 else "0"
        n = 0
        conn = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=5)
        conn.request("GET", "%s?watch=1&resourceVersion=%s&timeoutSeconds=%d" % (path, rv, int(seconds) + 5))
        r = conn.getresponse()
        while time.monotonic() < end:
            try:
                line = r.readline()
            except (OSError, http.client.HTTPException):  # a quiet watch: the 5 s read timeout
                if time.monotonic() >= end:
                    break
                conn.close()
                conn = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=5)
                conn.request("GET", "%s?watch=1&resourceVersion=%s&timeoutSeconds=%d" % (path, rv, int(seconds) + 5))
                r = conn.getresponse()
                continue
            if not line:
                break
            try:
                ev = json.loads(line)
                rv = ev["object"]["metadata"].get("resourceVersion", rv)
                if ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    n += 1
            except (ValueError, KeyError, TypeError):
                pass
        counts[kind] = n
        conn.close()

    ts = [threading.Thread(target=watch, args=a, daemon=True) for a in (("nodes", "/api/v1/nodes"), ("pods", "/api/v1/pods"))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(seconds + 30)
    with open(out, "w") as f:
        f.write("%d %d\n" % (counts.get("nodes", 0), counts.get("pods", 0)))


def http_get(url, timeout=10):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    c.request("GET", u.path + ("?" + u.query if u.query else ""))
    r = c.getresponse()
    return r, c


def cmd_fresh(args):
    """fresh KUBECONFIG NAME POOL TIMEOUT CHECK...: wait until every counting CHECK shows its
    N - 1 (what was there before; so a count still settling from an earlier node cannot pass
    early), create node NAME (in POOL, or '-'), then poll each CHECK until it shows the node.
    Prints one JSON line: seconds from the API server's 201 to each. CHECK is one of
      kelp-api=URL:N           the overview JSON's counts.nodes is N
      kelp-pool=URL:POOL:N     the overview JSON's row of POOL has N nodes
      kelp-metrics=URL:POOL:N  karpenter_helper_nodepool_nodes{nodepool=POOL} is N
      tmux=SOCKET:TARGET:N     the pane shows "N nodes" (eks-node-viewer)
      ksm=URL                  kube_node_info{node=NAME} is in the (streamed) scrape"""
    kubeconfig, name, pool, timeout = args[0], args[1], args[2], float(args[3])

    def overview(url):
        r, c = http_get(url)
        d = json.loads(r.read())
        c.close()
        return d

    def overview_nodes(url):
        # The counts alone, read from the raw body (parsing the whole JSON would add its own
        # milliseconds to every poll).
        r, c = http_get(url)
        body = r.read()
        c.close()
        m = re.search(rb'"counts":\{[^}]*"nodes":(\d+)', body)
        return int(m.group(1)) if m else None

    def kelp_metric(url, p):
        r, c = http_get(url)
        text = r.read().decode()
        c.close()
        m = re.search(r'^karpenter_helper_nodepool_nodes\{nodepool="%s"\} (\S+)' % re.escape(p), text, re.M)
        return int(float(m.group(1))) if m else None

    def tmux_nodes(sock, target):
        out = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", target],
                             capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"^\s*([\d,]+) nodes", out, re.M)
        return int(m.group(1).replace(",", "")) if m else None

    def ksm_has(url, needle):
        r, c = http_get(url, timeout=60)
        tail = b""
        try:
            while True:
                chunk = r.read(1 << 16)
                if not chunk:
                    return False
                if needle in tail + chunk:
                    return True  # stop reading: the scrape showed it
                tail = chunk[-len(needle):]
        finally:
            c.close()

    checks = []  # (key, value-function or None, expected after, poll interval, presence-function)
    for chk in args[4:]:
        kind, _, rest = chk.partition("=")
        if kind == "kelp-api":
            url, n = rest.rsplit(":", 1)
            checks.append((kind, lambda url=url: overview_nodes(url), int(n), 0.002))
        elif kind == "kelp-pool":
            url, p, n = rest.rsplit(":", 2)
            checks.append((kind, lambda url=url, p=p: next((r["nodes"] for r in overview(url)["nodepools"]
                                                           if r["name"] == p), None), int(n), 0.05))
        elif kind == "kelp-metrics":
            url, p, n = rest.rsplit(":", 2)
            checks.append((kind, lambda url=url, p=p: kelp_metric(url, p), int(n), 0.002))
        elif kind == "tmux":
            sock, target, n = rest.split(":")
            checks.append((kind, lambda sock=sock, target=target: tmux_nodes(sock, target), int(n), 0.05))
        elif kind == "ksm":
            needle = ('kube_node_info{node="%s"' % name).encode()
            checks.append((kind, lambda url=rest, needle=needle: 1 if ksm_has(url, needle) else 0, 1, 0.002))
        else:
            sys.exit("kapi fresh: unknown check " + chk)

    def value(fn):
        try:
            return fn()
        except Exception:
            return None

    unsettled = []
    deadline = time.monotonic() + timeout
    for key, fn, want, _ in checks:
        if key == "ksm":
            continue  # a new name: nothing to settle (and a miss costs a whole scrape)
        while value(fn) != want - 1:
            if time.monotonic() >= deadline:
                unsettled.append(key)
                break
            time.sleep(0.2)

    api = Api(kubeconfig)
    st, body = api.req("POST", "/api/v1/nodes", node_obj(name, None if pool == "-" else pool, 0))
    t0 = time.monotonic()
    if st != 201:
        sys.exit("kapi fresh: creating node %s: HTTP %s %s" % (name, st, body[:300]))
    res, polls = {}, {}

    def poll(key, fn, want, interval):
        n = 0
        while time.monotonic() < t0 + timeout:
            n += 1
            v = value(fn)
            if v is not None and v >= want:
                res[key], polls[key] = round(time.monotonic() - t0, 3), n
                return
            time.sleep(interval)
        res[key], polls[key] = None, n

    threads = [threading.Thread(target=poll, args=c, daemon=True) for c in checks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = {"node": name, "seconds": res, "polls": polls}
    if unsettled:
        out["unsettled_before"] = unsettled
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    cmd = sys.argv[1]
    {"gen": cmd_gen, "create": cmd_create, "leases": cmd_leases, "churn": cmd_churn, "fresh": cmd_fresh, "fresh-pod": cmd_fresh_pod,
     "count-events": cmd_count_events}[cmd](sys.argv[2:])
PY

# ---- the control plane, loaded ------------------------------------------------------------
log "box: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
log "testenv/up (state dir $KELP_TESTENV_DIR, log $dir/logs/testenv.log)"
testenv_started=1
if ! "$repo/testenv/up" >"$dir/logs/testenv.log" 2>&1; then
  tail -n 20 "$dir/logs/testenv.log" >&2
  grep -q 'already up' "$dir/logs/testenv.log" && testenv_started=0
  die "testenv/up failed (log $dir/logs/testenv.log)"
fi
# shellcheck disable=SC1091
. "$KELP_TESTENV_DIR/env"
log "control plane up: Kubernetes $KUBERNETES_VERSION, Karpenter $KARPENTER_VERSION, kwok $KWOK_VERSION"

python3 "$kapi" gen "$gen" "$NODES" "$PODS" "$NODEPOOLS" "$NAMESPACES" 500
{
  echo '{"apiVersion": "v1", "kind": "List", "items": ['
  for ((i = 0; i < NODEPOOLS; i++)); do
    printf '%s{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "live-%d"},
      "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
      "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}}}}\n' "$([[ $i == 0 ]] || echo ,)" "$i"
  done
  for ((i = 0; i < NAMESPACES; i++)); do
    printf ',{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "live-%d"}}\n' "$i"
  done
  echo ']}'
} >"$gen/setup.json"
kc create -f "$gen/setup.json" >>"$dir/logs/load.log" 2>&1 || die "creating the NodePools and namespaces failed (see $dir/logs/load.log)"

# load_files LABEL FILE...: every object of the List FILEs created over LOAD_PARALLEL keep-alive
# connections (kapi create); new creates stop at the LOAD_TIMEOUT deadline (load_cut=1), and
# the run goes on with what was created, saying so.
load_deadline=$((SECONDS + LOAD_TIMEOUT)) load_cut=0
load_files() {
  local label=$1 left out
  shift
  left=$((load_deadline - SECONDS))
  if ((left <= 0)); then
    load_cut=1
    warn "LOAD_TIMEOUT (${LOAD_TIMEOUT} s) reached before loading $label"
    return 0
  fi
  out=$(python3 "$kapi" create "$KUBECONFIG" "$LOAD_PARALLEL" "$LOAD_RATE" "$left" "$@" 2>>"$dir/logs/load.log") ||
    die "creating the $label failed (see $dir/logs/load.log)"
  echo "$label: $out" >>"$dir/logs/load.log"
  if [[ "$out" == *'"cut": true'* ]]; then
    load_cut=1
    warn "LOAD_TIMEOUT (${LOAD_TIMEOUT} s) reached while loading $label: $out"
  fi
  [[ "$out" == *'"errors": 0,'* ]] || warn "errors creating the $label: $out"
}

t=$(now)
load_files nodes "$gen"/nodes-*.json
node_load_s=$(since "$t")
kc get nodes -l kelp.dev/live-bench=1 -o name >"$gen/node-names" || die "cannot list the nodes"
sed -i 's|^node/||' "$gen/node-names"
bench_nodes=$(wc -l <"$gen/node-names")
log "created $bench_nodes nodes in ${node_load_s} s"
((bench_nodes > 0)) || die "no node was created (see $dir/logs/load.log)"
echo "$STATUS_INTERVAL" >"$gen/status-interval"
python3 "$kapi" leases "$KUBECONFIG" "$LEASE_INTERVAL" "@$gen/status-interval" "@$gen/node-names" >"$dir/logs/leases.log" 2>&1 &
bg_pids+=($!) leases_pid=$!

# The ServiceAccount admission plugin refuses pods until a namespace has its default account.
deadline=$((SECONDS + 120))
until (($(kc get serviceaccounts -A --field-selector metadata.name=default -o name 2>/dev/null |
  grep -c . || true) >= NAMESPACES + 4)); do
  ((SECONDS < deadline)) || { warn "default ServiceAccounts still missing after 120 s; loading anyway"; break; }
  sleep 0.5
done

t=$(now)
load_files pods "$gen"/pods-*.json
pod_load_s=$(since "$t")
bench_pods=$(count pods -A -l kelp.dev/live-bench=1)
log "created $bench_pods pods in ${pod_load_s} s ($(awk -v n="$bench_pods" -v s="$pod_load_s" 'BEGIN {printf "%.0f", n / s}') pods/s)"

# Settled: kwok has every bench pod Running.
t=$(now) deadline=$((SECONDS + SETTLE_TIMEOUT))
while :; do
  pending=$({ kc get pods -A -l kelp.dev/live-bench=1 --field-selector=status.phase!=Running -o name 2>/dev/null || echo unknown; } | wc -l)
  ((pending == 0)) && break
  if ((SECONDS >= deadline)); then warn "$pending pods still not Running after ${SETTLE_TIMEOUT} s; going on"; break; fi
  sleep 3
done
settle_s=$(since "$t")
log "all pods Running ${settle_s} s after the last create; letting the control plane settle 20 s"
sleep 20
alive "$leases_pid" || die "the lease helper died (see $dir/logs/leases.log)"

nodes_total=$(count nodes)
pooled=$(count nodes -l karpenter.sh/nodepool)
pods_total=$(count pods -A)
reached="$bench_nodes nodes, $bench_pods pods"
if ((bench_nodes < NODES || bench_pods < PODS)); then
  reached="$reached (target $NODES nodes, $PODS pods: this box reached $bench_nodes and $bench_pods$( ((load_cut)) && echo " within LOAD_TIMEOUT=${LOAD_TIMEOUT} s"))"
  warn "size reached: $reached"
fi
log "cluster: $nodes_total nodes ($pooled in NodePools), $pods_total pods"

# ---- the tools ------------------------------------------------------------------------------
declare -A R=()   # results: R[tool.figure]
tools=(kelp)
kelp_pid="" ksm_pid="" env_pid=""

name_of() { case $1 in kelp) echo "kelp serve" ;; ksm) echo kube-state-metrics ;; env) echo eks-node-viewer ;; esac; }
# first_view TOOL PID CHECK-FUNCTION: poll until CHECK succeeds; records the wall time and the
# CPU read just before the check that passed (the check's own reads are not counted).
first_view() {
  local tool=$1 pid=$2 check=$3 start=$4 t c deadline=$((SECONDS + VIEW_TIMEOUT))
  while :; do
    t=$EPOCHREALTIME
    c=$(cpu_ticks "$pid") || { warn "$(name_of "$tool") exited before its first view"; return 1; }
    if "$check"; then
      R[$tool.view_cpu]=$(ticks_s "$c")
      R[$tool.view_wall]=$(awk -v a="$start" -v b="$t" 'BEGIN {printf "%.2f", b - a}')
      log "$(name_of "$tool"): complete first view after ${R[$tool.view_wall]} s, ${R[$tool.view_cpu]} CPU s (RSS $(($(rss_kib "$pid") / 1024)) MiB)"
      return 0
    fi
    alive "$pid" || { warn "$(name_of "$tool") exited before its first view"; return 1; }
    ((SECONDS < deadline)) || { warn "$(name_of "$tool"): no complete first view within ${VIEW_TIMEOUT} s"; return 1; }
    sleep "${poll_every:-0.2}"
  done
}

kelp_metrics_port=$(free_port) kelp_dash_port=$(free_port)
kelp_metrics="http://127.0.0.1:$kelp_metrics_port/metrics"
kelp_check() {
  [[ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$kelp_metrics_port/readyz")" == 200 ]] || return 1
  local sum
  sum=$(curl -s --max-time 5 "$kelp_metrics" | awk '/^karpenter_helper_nodepool_nodes\{/ {s += $NF} END {printf "%d", s}')
  ((sum == pooled)) || return 1
  if [[ -z "${kelp_cluster:-}" ]]; then # the cluster's name in the API (the kubeconfig context)
    kelp_cluster=$(curl -s --max-time 5 "http://127.0.0.1:$kelp_dash_port/api/v1/clusters" |
      grep -o '"name":"[^"]*"' | head -n1 | cut -d'"' -f4) || true
    [[ -n "$kelp_cluster" ]] || return 1
    kelp_api="http://127.0.0.1:$kelp_dash_port/api/v1/clusters/$kelp_cluster/karpenter"
  fi
  curl -s --max-time 5 -o "$gen/overview.json" "$kelp_api" || return 1
  [[ "$(overview_counts "$gen/overview.json")" == "$nodes_total $pods_total" ]]
}
log "starting kelp serve ($kelp${KELP_ARGS:+ $KELP_ARGS})"
start=$(now)
"$kelp" serve --kubeconfig "$KUBECONFIG" --metrics-addr "127.0.0.1:$kelp_metrics_port" \
  --dashboard-addr "127.0.0.1:$kelp_dash_port" --no-cost-scrape --log-format json ${KELP_ARGS:-} \
  >"$dir/logs/kelp.log" 2>&1 &
kelp_pid=$!
bg_pids+=("$kelp_pid")
first_view kelp "$kelp_pid" kelp_check "$start" || { tail -n 20 "$dir/logs/kelp.log" >&2; die "kelp serve has no first view (log $dir/logs/kelp.log)"; }

ksm_metrics=""
ksm_check() {
  curl -s --max-time 5 "http://127.0.0.1:$ksm_tport/metrics" |
    awk '/^kube_state_metrics_list_total\{resource="\*v1\.(Pod|Node)",result="success"\}/ && $NF >= 1 {n++} END {exit n == 2 ? 0 : 1}' || return 1
  local got
  got=$(curl -s --max-time 120 "$ksm_metrics" | awk '/^kube_pod_info\{/ {p++} /^kube_node_info\{/ {n++} END {printf "%d %d", p, n}')
  [[ "$got" == "$pods_total $nodes_total" ]] && return 0
  sleep 0.8 # a full scrape is large: no faster than about once a second
  return 1
}
if [[ -n "$ksm_bin" ]]; then
  ksm_port=$(free_port) ksm_tport=$(free_port)
  ksm_metrics="http://127.0.0.1:$ksm_port/metrics"
  log "starting kube-state-metrics $KSM_VERSION"
  start=$(now)
  # shellcheck disable=SC2086 # KSM_ARGS is a list of flags
  "$ksm_bin" --kubeconfig "$KUBECONFIG" --host 127.0.0.1 --port "$ksm_port" \
    --telemetry-host 127.0.0.1 --telemetry-port "$ksm_tport" $KSM_ARGS >"$dir/logs/kube-state-metrics.log" 2>&1 &
  ksm_pid=$!
  bg_pids+=("$ksm_pid")
  if first_view ksm "$ksm_pid" ksm_check "$start"; then
    tools+=(ksm)
  else
    tail -n 10 "$dir/logs/kube-state-metrics.log" >&2
    warn "kube-state-metrics: left out of the figures (log $dir/logs/kube-state-metrics.log)"
    kill "$ksm_pid" 2>/dev/null || true
    ksm_pid="" ksm_metrics=""
  fi
fi

env_screen() { tmux -L "$tmux_sock" capture-pane -p -t live-env 2>/dev/null; }
env_check() {
  local s n p
  s=$(env_screen) || return 1
  n=$(grep -oE '^ *[0-9,]+ nodes' <<<"$s" | head -n1 | tr -dc '0-9')
  p=$(grep -oE '^ *[0-9,]+ pods' <<<"$s" | head -n1 | tr -dc '0-9')
  [[ "$n" == "$nodes_total" && "$p" == "$pods_total" ]]
}
if [[ -n "$env_bin" ]]; then
  log "starting eks-node-viewer $ENV_VERSION in tmux (-disable-pricing)"
  start=$(now)
  if tmux -L "$tmux_sock" -f /dev/null new-session -d -s live-env -x 200 -y 50 \
    "exec '$env_bin' -kubeconfig '$KUBECONFIG' -disable-pricing 2>>'$dir/logs/eks-node-viewer.log'"; then
    tmux_started=1
    # The pane's process is eks-node-viewer itself (exec); killing the tmux server ends it.
    env_pid=$(tmux -L "$tmux_sock" display-message -p -t live-env '#{pane_pid}')
    if poll_every=0.1 first_view env "$env_pid" env_check "$start"; then
      tools+=(env)
    else
      env_screen | head -n 5 >&2 || true
      tail -n 5 "$dir/logs/eks-node-viewer.log" >&2 || true
      warn "eks-node-viewer: left out of the figures (log $dir/logs/eks-node-viewer.log)"
      env_pid=""
    fi
  else
    warn "eks-node-viewer: tmux could not start it; going on without it"
  fi
fi
pid_of() { case $1 in kelp) echo "$kelp_pid" ;; ksm) echo "$ksm_pid" ;; env) echo "$env_pid" ;; esac; }

# ---- windows -------------------------------------------------------------------------------
# window NAME SECONDS: CPU of each tool over SECONDS, scraping kelp's and KSM's /metrics every
# SCRAPE_EVERY s; RSS sampled every 2 s. Also counts the node and pod watch events.
window() {
  local name=$1 secs=$2 tool pid i end w0
  local -A c0=()
  rm -f "$gen/events-$name"
  python3 "$kapi" count-events "$KUBECONFIG" "$secs" "$gen/events-$name" 2>>"$dir/logs/count-events.log" &
  local wc_pid=$!
  bg_pids+=("$wc_pid")
  sleep 1
  for tool in "${tools[@]}"; do c0[$tool]=$(cpu_ticks "$(pid_of "$tool")"); done
  w0=$EPOCHREALTIME
  end=$((SECONDS + secs))
  i=0
  while ((SECONDS < end)); do
    sleep 1
    i=$((i + 1))
    if ((SCRAPE_EVERY > 0 && i % SCRAPE_EVERY == 0)); then
      curl -s --max-time 60 -o /dev/null "$kelp_metrics" || true
      [[ -z "$ksm_metrics" ]] || curl -s --max-time 120 -o /dev/null "$ksm_metrics" || true
    fi
    if ((i % 2 == 0)); then
      for tool in "${tools[@]}"; do
        pid=$(pid_of "$tool")
        local r
        r=$(rss_kib "$pid") || r=0
        ((${r:-0} > ${R[$tool.rss_max]:-0})) && R[$tool.rss_max]=$r
      done
    fi
  done
  local took
  took=$(awk -v a="$w0" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}')
  for tool in "${tools[@]}"; do
    pid=$(pid_of "$tool")
    alive "$pid" || { warn "$(name_of "$tool") died during the $name window"; continue; }
    R[$tool.$name]=$(ticks_s $(($(cpu_ticks "$pid") - ${c0[$tool]})))
    R[$tool.rss_$name]=$(rss_kib "$pid")
  done
  timeout 60 tail --pid="$wc_pid" -f /dev/null || true
  local ev
  ev="$(cat "$gen/events-$name" 2>/dev/null || echo "? ?")"
  R[events.$name]="$(awk -v n="${ev% *}" -v p="${ev#* }" -v s="$took" \
    'BEGIN {if (n == "?") print "? node and ? pod watch events/s"; else printf "%.1f node and %.1f pod watch events/s", n / s, p / s}')"
  R[load.$name]=$(cut -d' ' -f1 /proc/loadavg)
  local line="$name window (${secs} s): ${R[events.$name]}, load average ${R[load.$name]}; CPU s:"
  for tool in "${tools[@]}"; do line+=" $(name_of "$tool") ${R[$tool.$name]:-?},"; done
  line=${line%,}
  log "$line"
}

log "all tools up; 10 s before the steady windows"
sleep 10
# One steady window per rate of node status reports (heartbeats only), each after 10 s at its
# rate; then the status reports go back to every STATUS_INTERVAL s for the churn window.
steady_names=()
for rate in $STEADY_RATES; do
  awk -v n="$bench_nodes" -v r="$rate" 'BEGIN {printf "%.3f\n", n / r}' >"$gen/status-interval"
  sleep 10
  log "steady window: ${WINDOW} s, heartbeats only, each node's status reported every $(cat "$gen/status-interval") s (${rate}/s)"
  window "steady-$rate" "$WINDOW"
  steady_names+=("steady-$rate")
done
echo "$STATUS_INTERVAL" >"$gen/status-interval"
steady_last=${steady_names[-1]}

log "churn window: ${CHURN_WINDOW} s, ${CHURN_RATE} pods/s deleted and as many created"
python3 "$kapi" churn "$KUBECONFIG" "$CHURN_RATE" "$((CHURN_WINDOW + 2))" "$bench_nodes" "$bench_pods" "$NAMESPACES" \
  >"$gen/churn.json" 2>"$dir/logs/churn.log" &
churn_pid=$!
bg_pids+=("$churn_pid")
window churn "$CHURN_WINDOW"
timeout 60 tail --pid="$churn_pid" -f /dev/null || warn "churn helper still running"
churn_summary="$(cat "$gen/churn.json" 2>/dev/null || true)"
churn_rate=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["rate"])' "$churn_summary" 2>/dev/null || echo "?")
log "churn: $churn_summary"
sleep 5

# ---- freshness ------------------------------------------------------------------------------
# fresh_node NAME LABEL CHECK...: create node NAME in live-0, time each CHECK seeing it, record
# and log the result (LABEL tags the log line), then delete the node.
fresh_node() {
  local name=$1 label=$2 out
  shift 2
  out=$(python3 "$kapi" fresh "$KUBECONFIG" "$name" live-0 "$FRESH_TIMEOUT" "$@") ||
    die "creating a node for the freshness check failed"
  echo "$out" >>"$gen/fresh.jsonl"
  log "freshness $r/$FRESH_REPEATS$label: $out"
  kc delete node "$name" --wait=false >/dev/null
  sleep 2
}
: >"$gen/fresh.jsonl"
for ((r = 1; r <= FRESH_REPEATS; r++)); do
  total=$(count nodes) in_pool=$(count nodes -l karpenter.sh/nodepool=live-0)
  checks=("kelp-api=$kelp_api:$((total + 1))" "kelp-pool=$kelp_api:live-0:$((in_pool + 1))")
  [[ -z "$env_pid" ]] || checks+=("tmux=$tmux_sock:live-env:$((total + 1))")
  fresh_node "live-fresh-$r-a" "" "${checks[@]}"
  # Each /metrics alone, on a node of its own: no other check's polling (the overview's
  # JSON parsed, tmux run) shares the checker's time with it.
  fresh_node "live-fresh-$r-c" " (kelp /metrics)" "kelp-metrics=$kelp_metrics:live-0:$((in_pool + 1))"
  [[ -z "$ksm_pid" ]] || fresh_node "live-fresh-$r-b" " (KSM)" "ksm=$ksm_metrics"
done
fresh_med() { # CHECK -> median seconds over the repeats (">FRESH_TIMEOUT" when not seen in time)
  python3 -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[2]) if l.strip()]
v=[r["seconds"][sys.argv[1]] for r in rows
   if sys.argv[1] in r["seconds"] and sys.argv[1] not in r.get("unsettled_before", [])]
v=sorted(float("inf") if x is None else x for x in v)
n=len(v)
m=None if n == 0 else v[n//2] if n % 2 else (v[n//2-1]+v[n//2])/2
print("-" if m is None else ">" + sys.argv[3] if m == float("inf") else round(m, 3))' "$1" "$gen/fresh.jsonl" "$FRESH_TIMEOUT"
}
# A pod no node can take: seconds from the scheduler's verdict (its status update, as a watch
# sees it) to the pod in kelp's dashboard API, among the pending pods it diagnoses.
: >"$gen/fresh-pod.jsonl"
for ((r = 1; r <= FRESH_REPEATS; r++)); do
  out=$(python3 "$kapi" fresh-pod "$KUBECONFIG" "live-fresh-pod-$r" live-0 "$FRESH_TIMEOUT" "$kelp_api") ||
    die "creating a pod for the freshness check failed"
  echo "$out" >>"$gen/fresh-pod.jsonl"
  log "freshness, a pending pod $r/$FRESH_REPEATS: $out"
  sleep 2
done
R[kelp.fresh_pending]=$(python3 -c 'import json,sys
v=sorted(json.loads(l).get("kelp_after_scheduler", float("inf")) for l in open(sys.argv[1]) if l.strip())
n=len(v)
m=None if n == 0 else v[n//2] if n % 2 else (v[n//2-1]+v[n//2])/2
print("-" if m is None else ">" + sys.argv[2] if m == float("inf") else round(m, 3))' "$gen/fresh-pod.jsonl" "$FRESH_TIMEOUT")
R[kelp.fresh_api]=$(fresh_med kelp-api)
R[kelp.fresh_pool]=$(fresh_med kelp-pool)
R[kelp.fresh_metrics]=$(fresh_med kelp-metrics)
R[ksm.fresh_metrics]=$(fresh_med ksm)
R[env.fresh_screen]=$(fresh_med tmux)

# ---- report -----------------------------------------------------------------------------------
has() { [[ " ${tools[*]} " == *" $1 "* ]]; }
mib() { [[ -n "${1:-}" ]] && awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}' || echo -; }
ratio() { awk -v a="${1:--}" -v b="${2:--}" 'BEGIN {if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2fx", a / b}'; }
{
  echo
  echo "bench/live.sh on $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores: $reached"
  echo "  kelp $("$kelp" --version 2>/dev/null | awk '{print $2}') ($kelp)$(has ksm && echo ", kube-state-metrics $KSM_VERSION")$(has env && echo ", eks-node-viewer $ENV_VERSION")"
  echo "  Kubernetes $KUBERNETES_VERSION, Karpenter $KARPENTER_VERSION (kwok provider), kwok $KWOK_VERSION; $nodes_total nodes ($pooled in $NODEPOOLS NodePools), $pods_total pods"
  echo "  loading: nodes ${node_load_s} s, pods ${pod_load_s} s ($(awk -v n="$bench_pods" -v s="$pod_load_s" 'BEGIN {printf "%.0f", n / s}')/s, LOAD_PARALLEL=$LOAD_PARALLEL, LOAD_RATE=$LOAD_RATE), all Running ${settle_s} s later"
  echo "  heartbeats: each node's Lease renewed every ${LEASE_INTERVAL} s ($(awk -v n="$bench_nodes" -v i="$LEASE_INTERVAL" 'BEGIN {printf "%.0f", n / i}') renewals/s); its status reported at STEADY_RATES ($STEADY_RATES a second) in the steady windows, every ${STATUS_INTERVAL} s otherwise (0: kwok's own, every ~10 min)"
  for w in "${steady_names[@]}"; do
    echo "  $w: ${R[events.$w]}, load average ${R[load.$w]}"
  done
  echo "  churn: ${R[events.churn]}, load average ${R[load.churn]}, achieved ${churn_rate} pods/s deleted and created"
  echo
  printf '%-44s %10s %10s %10s %9s %9s\n' "figure" "kelp" "KSM" "e-n-viewer" "kelp/KSM" "kelp/ENV"
  row() { # LABEL KELP KSM ENV
    printf '%-44s %10s %10s %10s %9s %9s\n' "$1" "${2:--}" "${3:--}" "${4:--}" "$(ratio "${2:--}" "${3:--}")" "$(ratio "${2:--}" "${4:--}")"
  }
  row "RSS end of the last steady window (MiB)" "$(mib "${R[kelp.rss_$steady_last]:-}")" "$(mib "${R[ksm.rss_$steady_last]:-}")" "$(mib "${R[env.rss_$steady_last]:-}")"
  row "RSS highest sample, all windows (MiB)" "$(mib "${R[kelp.rss_max]:-}")" "$(mib "${R[ksm.rss_max]:-}")" "$(mib "${R[env.rss_max]:-}")"
  row "first complete view: CPU s" "${R[kelp.view_cpu]:-}" "${R[ksm.view_cpu]:-}" "${R[env.view_cpu]:-}"
  row "first complete view: wall s" "${R[kelp.view_wall]:-}" "${R[ksm.view_wall]:-}" "${R[env.view_wall]:-}"
  for w in "${steady_names[@]}"; do
    row "$w/s, ${WINDOW} s: CPU s" "${R[kelp.$w]:-}" "${R[ksm.$w]:-}" "${R[env.$w]:-}"
  done
  row "churn ${CHURN_WINDOW} s at ${CHURN_RATE} pods/s: CPU s" "${R[kelp.churn]:-}" "${R[ksm.churn]:-}" "${R[env.churn]:-}"
  row "new node seen: /metrics (s, median of $FRESH_REPEATS)" "${R[kelp.fresh_metrics]}" "${R[ksm.fresh_metrics]}" ""
  row "new node seen: dashboard API / screen (s)" "${R[kelp.fresh_api]}" "" "${R[env.fresh_screen]}"
  row "new node: its pool row (s)" "${R[kelp.fresh_pool]}" "" ""
  row "pending pod on the dashboard, after the scheduler (s)" "${R[kelp.fresh_pending]}" "" ""
  echo
  echo "CPU in % of one core:$(for w in "${steady_names[@]}"; do echo -n " $w"; for t in "${tools[@]}"; do awk -v t="$t" -v c="${R[$t.$w]:-0}" -v w="$WINDOW" 'BEGIN {printf " %s %.1f%%", t, 100 * c / w}'; done; echo -n ";"; done)" \
    "churn$(for t in "${tools[@]}"; do awk -v t="$t" -v c="${R[$t.churn]:-0}" -v w="$CHURN_WINDOW" 'BEGIN {printf " %s %.1f%%", t, 100 * c / w}'; done)"
  [[ " $PEERS " != *" ksm "* ]] || has ksm || echo "kube-state-metrics: not measured (it could not be built or run; see the warnings above)"
  [[ " $PEERS " != *" env "* ]] || has env || echo "eks-node-viewer: not measured (it could not be built or run; see the warnings above)"
} | tee "$results"
log "results in $results; logs in $dir/logs"
