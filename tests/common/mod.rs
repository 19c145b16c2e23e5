//! Helpers shared by the end-to-end suites: the testenv's environment, kubectl, kelp
//! runs and polling.
#![allow(dead_code)]

pub mod half_empty;
pub mod web;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub struct Env {
    pub kubeconfig: String,
    pub kubectl: String,
}

/// The running testenv, or `None` (with a note) when there is none: its env file is
/// missing, or its API server does not answer (a testenv that was brought down).
pub fn env() -> Option<Env> {
    let dir = std::env::var("KELP_TESTENV_DIR").unwrap_or_else(|_| "/tmp/kelp-testenv".into());
    let text = std::fs::read_to_string(PathBuf::from(&dir).join("env")).unwrap_or_default();
    let var = |k: &str| {
        text.lines()
            .filter_map(|l| l.strip_prefix("export "))
            .find_map(|l| {
                l.strip_prefix(&format!("{k}="))
                    .map(|v| v.trim_matches(['"', '\'']).to_string())
            })
    };
    let up = var("KELP_TESTENV_APISERVER_PORT")
        .and_then(|p| p.parse::<u16>().ok())
        .is_some_and(|p| std::net::TcpStream::connect(("127.0.0.1", p)).is_ok());
    if !up {
        assert!(
            std::env::var_os("KELP_E2E").is_none(),
            "KELP_E2E is set but no testenv is up in {dir}: run testenv/up"
        );
        eprintln!("e2e: skipped, no testenv up in {dir} (run testenv/up, or set KELP_E2E=1 to require it)");
        return None;
    }
    let need = |k: &str| var(k).unwrap_or_else(|| panic!("{k} missing from {dir}/env"));
    Some(Env {
        kubeconfig: need("KUBECONFIG"),
        kubectl: need("KUBECTL"),
    })
}

impl Env {
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(&self.kubectl);
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().expect("kubectl");
        if let Some(input) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// Delete pods left by an earlier run against the same testenv, so each run starts clean.
    pub fn fresh(&self, ns: &str, pods: &[&str]) {
        let mut args = vec![
            "delete",
            "pod",
            "-n",
            ns,
            "--ignore-not-found",
            "--grace-period=0",
            "--force",
        ];
        args.extend(pods);
        let _ = self.kubectl(&args, None);
    }

    /// `kubectl apply` the YAML, then wait for every NodePool in it to be Ready. Karpenter
    /// skips a pool until it is (and so does kelp's verdict), so a scenario that created its
    /// pod at once would race the pool's first reconcile.
    pub fn apply(&self, yaml: &str) {
        for object in self.apply_as_is(yaml) {
            if object.starts_with("nodepool.karpenter.sh/") {
                self.ok(&["wait", "--for=condition=Ready", "--timeout=60s", &object]);
            }
        }
    }

    /// `kubectl apply` the YAML and wait for nothing (a pool meant never to be Ready);
    /// returns the objects applied, as `kind.group/name`.
    pub fn apply_as_is(&self, yaml: &str) -> Vec<String> {
        let out = self.kubectl(&["apply", "-o", "name", "-f", "-"], Some(yaml));
        assert!(
            out.status.success(),
            "kubectl apply: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args, None);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).unwrap()
    }

    pub fn kelp(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kelp"))
            .env_remove("KUBECONFIG")
            .args(args)
            .args(["--kubeconfig", &self.kubeconfig])
            .output()
            .unwrap()
    }

    pub fn kelp_json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        let out = self.kelp(&a);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "kelp {a:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "kelp {a:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    pub fn doctor(&self) -> Value {
        self.kelp_json(&["doctor"])
    }
}

/// A value of the running testenv's env file (`KARPENTER_VERSION`, a port, ...).
pub fn testenv_value(key: &str) -> String {
    let dir = std::env::var("KELP_TESTENV_DIR").unwrap_or_else(|_| "/tmp/kelp-testenv".into());
    let text = std::fs::read_to_string(PathBuf::from(&dir).join("env")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(|v| v.trim_matches(['"', '\'']).to_string())
        .unwrap_or_else(|| panic!("{key} missing from {dir}/env"))
}

/// Poll until `f` yields, or fail naming `what`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub const MINUTES: Duration = Duration::from_secs(60);

pub fn findings<'a>(report: &'a Value, code: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

pub fn find<'a>(report: &'a Value, code: &str, name: &str) -> Option<&'a Value> {
    findings(report, code)
        .into_iter()
        .find(|f| f["object"]["name"] == name)
}

/// A NodePool for one scenario: it carries the label `e2e.kelp.dev/scenario=<scenario>`,
/// which only that scenario's pods select, and a taint of the same name, which only they
/// tolerate (so no other pod lands on it). `extra_spec` goes under `template.spec`.
pub fn pool(name: &str, scenario: &str, extra_spec: &str, limits_cpu: &str) -> String {
    pool_with(
        name,
        scenario,
        "",
        extra_spec,
        limits_cpu,
        "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 10m",
    )
}

/// [`pool`] with more requirements (lines of `- {key: ...}`, indented as the others) and
/// its `spec.disruption`: a flow mapping (`{consolidationPolicy: ...}`) or block lines.
pub fn pool_with(
    name: &str,
    scenario: &str,
    requirements: &str,
    extra_spec: &str,
    limits_cpu: &str,
    disruption: &str,
) -> String {
    format!(
        r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {name}
spec:
  template:
    metadata:
      labels:
        e2e.kelp.dev/scenario: {scenario}
    spec:
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}
      requirements:
        - {{key: kubernetes.io/os, operator: In, values: [linux]}}
        - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
{requirements}
      expireAfter: 720h
      taints:
        - {{key: e2e.kelp.dev/scenario, value: {scenario}, effect: NoSchedule}}
{extra_spec}
  limits:
    cpu: "{limits_cpu}"
  disruption:{sep}{disruption}
"#,
        sep = if disruption.starts_with('{') {
            " "
        } else {
            "\n"
        },
    )
}

/// A Deployment of `replicas` pods of `cpu` on a scenario's nodes (they select its label
/// and tolerate its taint; being a controller's, a pod evicted while its node comes up comes
/// back). `selector` adds nodeSelector lines (`key: value`), `spec` pod spec lines.
pub fn deployment(
    ns: &str,
    name: &str,
    scenario: &str,
    replicas: u32,
    cpu: &str,
    selector: &str,
    spec: &str,
) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {ns}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}, e2e.kelp.dev/scenario: {scenario}}}}}
    spec:
      nodeSelector:
        e2e.kelp.dev/scenario: {scenario}
{selector}
      tolerations:
        - {{key: e2e.kelp.dev/scenario, value: {scenario}, effect: NoSchedule}}
      terminationGracePeriodSeconds: 0
      containers:
        - name: app
          image: registry.k8s.io/pause:3.10
          resources: {{requests: {{cpu: "{cpu}", memory: 64Mi}}}}
{spec}
"#
    )
}

/// A number for this run's object names (fresh pools each run: a node an earlier run left
/// would change what the scenario sees).
pub fn run_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 100_000
}

pub fn pod(ns: &str, name: &str, scenario: &str, cpu: &str, extra: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: {name}, e2e.kelp.dev/scenario: {scenario}}}
spec:
  nodeSelector:
    e2e.kelp.dev/scenario: {scenario}
  tolerations:
    - {{key: e2e.kelp.dev/scenario, value: {scenario}, effect: NoSchedule}}
    # The taint-eviction controller can act on a stale view of a node whose
    # karpenter.sh/unregistered:NoExecute taint was just removed, and delete a bare pod
    # the scheduler had bound there (seen under load). These pods have no controller to
    # bring them back, so they tolerate it; Karpenter's simulation ignores that taint.
    - {{key: karpenter.sh/unregistered, operator: Exists, effect: NoExecute}}
  containers:
    - name: app
      image: registry.k8s.io/pause:3.10
      resources: {{requests: {{cpu: "{cpu}", memory: 64Mi}}}}
{extra}
"#
    )
}

/// Create a namespace and wait for its `default` ServiceAccount: until the controller
/// manager makes it, the API server refuses pods there (slow right after an API server
/// restart). Tests running side by side may share one namespace: when two create it at
/// once, the loser's `AlreadyExists` means it is there.
pub fn namespace(e: &Env, ns: &str) {
    let out = e.kubectl(&["create", "namespace", ns], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || stderr.contains("AlreadyExists"),
        "kubectl create namespace {ns}: {stderr}"
    );
    wait_for(
        &format!("the default ServiceAccount of {ns}"),
        Duration::from_secs(120),
        || {
            e.kubectl(&["get", "serviceaccount", "default", "-n", ns], None)
                .status
                .success()
                .then_some(())
        },
    );
}

pub fn verdict<'a>(why: &'a Value, pool: &str) -> &'a Value {
    why["diagnosis"]["nodepools"]
        .as_array()
        .unwrap_or_else(|| panic!("no diagnosis: {why:#}"))
        .iter()
        .find(|v| v["name"] == pool)
        .unwrap_or_else(|| panic!("no verdict for {pool}: {why:#}"))
}

/// The pool of the NodeClaim Karpenter launched for a pod, once the pod is bound.
pub fn launched_pool(e: &Env, ns: &str, pod: &str) -> String {
    let node = wait_for(&format!("{ns}/{pod} to be bound"), 3 * MINUTES, || {
        let p = e.json(&["get", "pod", "-n", ns, pod]);
        p["spec"]["nodeName"].as_str().map(str::to_string)
    });
    let n = e.json(&["get", "node", &node]);
    n["metadata"]["labels"]["karpenter.sh/nodepool"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A `kelp serve` process on a free loopback port, killed when dropped.
pub struct Serve {
    child: std::process::Child,
    pub port: u16,
    /// The dashboard's port.
    pub dashboard: u16,
    pub log: tempfile::NamedTempFile,
}

impl Serve {
    pub fn start(e: &Env) -> Serve {
        Self::start_with(e, &[])
    }

    /// As [`Serve::start`], with more arguments.
    pub fn start_with(e: &Env, extra: &[&str]) -> Serve {
        let free = || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let (port, dashboard) = (free(), free());
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_kelp"))
            .args([
                "serve",
                "--kubeconfig",
                &e.kubeconfig,
                "--metrics-addr",
                &format!("127.0.0.1:{port}"),
                "--log-format",
                "json",
                "--dashboard-addr",
                &format!("127.0.0.1:{dashboard}"),
                // As the chart runs it by default (the cost scrape is opt-in there).
                "--no-cost-scrape",
            ])
            .args(extra)
            .env_remove("KELP_LOG")
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        Serve {
            child,
            port,
            dashboard,
            log,
        }
    }

    /// GET a path: (status, whole response).
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        get_from(self.port, path)
    }

    /// GET a path of the dashboard: (status, whole response).
    pub fn dash(&self, path: &str) -> Option<(u16, String)> {
        get_from(self.dashboard, path)
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

/// GET a path on a loopback port: (status, whole response).
pub fn get_from(port: u16, path: &str) -> Option<(u16, String)> {
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        // A server that stopped answering is a failure to see, not a test that hangs.
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        let code = out.split_whitespace().nth(1)?.parse().ok()?;
        Some((code, out))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A copy of the admin kubeconfig whose user impersonates `system:serviceaccount:NS:NAME`
/// (the kubeconfig `as:` field, which kube-rs and kubectl both honour).
pub fn impersonating(e: &Env, ns: &str, name: &str) -> (Env, tempfile::NamedTempFile) {
    let text = std::fs::read_to_string(&e.kubeconfig).unwrap();
    let mut kc: Value = serde_norway::from_str(&text).unwrap();
    for user in kc["users"].as_array_mut().expect("users in kubeconfig") {
        user["user"]["as"] = format!("system:serviceaccount:{ns}:{name}").into();
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_string_pretty(&kc).unwrap()).unwrap();
    let env = Env {
        kubeconfig: file.path().to_str().unwrap().to_string(),
        kubectl: e.kubectl.clone(),
    };
    (env, file)
}

/// Karpenter's `DisruptionTerminating` message about a NodeClaim ("Disrupting NodeClaim:
/// Drifted", ": Empty", ...), if it wrote one.
pub fn disruption_message(e: &Env, claim: &str) -> Option<String> {
    let events = e.json(&[
        "get",
        "events",
        "-A",
        "--field-selector",
        &format!("involvedObject.name={claim},reason=DisruptionTerminating"),
    ]);
    events["items"]
        .as_array()?
        .iter()
        .find_map(|ev| ev["message"].as_str().map(str::to_string))
}

/// [`disruption_message`], once Karpenter writes it.
pub fn disruption_terminating(e: &Env, claim: &str, timeout: Duration) -> String {
    wait_for(&format!("Karpenter to disrupt {claim}"), timeout, || {
        disruption_message(e, claim)
    })
}

/// The NodeClaim of a node, once it has one.
pub fn claim_of(e: &Env, node: &str) -> String {
    wait_for(&format!("the NodeClaim of {node}"), MINUTES, || {
        let claims = e.json(&["get", "nodeclaims"]);
        claims["items"]
            .as_array()?
            .iter()
            .find(|c| c["status"]["nodeName"] == node)
            .and_then(|c| c["metadata"]["name"].as_str().map(str::to_string))
    })
}

/// A name carrying what could drive a terminal or forge a line: a newline and a fake
/// line, an OSC title change ending in BEL, CR, a bidi override and a C1 CSI.
/// [`HOSTILE_ESCAPED`] is how kelp must print it.
pub const HOSTILE_RAW: &str = "\nFAKE: critical line\u{1b}]0;t\u{7}\r\u{202e}\u{9b}x";
pub const HOSTILE_ESCAPED: &str = "\\nFAKE: critical line\\x1b]0;t\\x07\\r\\u{202e}\\x9bx";
/// A pending pod the hostile dump adds, whose name holds NUL (no argument can), and how
/// kelp must print it.
pub const HOSTILE_NUL_POD_ESCAPED: &str = "nul\\x00pod";

/// `tests/data/small.yaml` with the pending pod `ml/trainer-0` and the node `ip-10-0-1-1`
/// renamed to end in [`HOSTILE_RAW`], and a pending pod `ml/nul<NUL>pod`, written into
/// `dir`.
pub fn hostile_dump(dir: &std::path::Path) -> PathBuf {
    let yaml_raw = "\\nFAKE: critical line\\e]0;t\\a\\r\\u202e\\x9bx";
    let small = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/small.yaml"),
    )
    .unwrap();
    let pod = format!("\"trainer-0{yaml_raw}\"");
    let node = format!("\"ip-10-0-1-1{yaml_raw}\"");
    let mut hostile = small
        .replace("{name: trainer-0,", &format!("{{name: {pod},"))
        .replace(
            "name: trainer-0, namespace",
            &format!("name: {pod}, namespace"),
        )
        .replace("ip-10-0-1-1", &node);
    assert_ne!(hostile, small);
    hostile.push_str("---\napiVersion: v1\nkind: Pod\nmetadata: {name: \"nul\\0pod\", namespace: ml, uid: u9, creationTimestamp: \"2026-11-21T09:40:00Z\"}\nspec:\n  containers: [{name: c, resources: {requests: {cpu: \"1\"}}}]\nstatus:\n  phase: Pending\n  conditions:\n  - {type: PodScheduled, status: \"False\", reason: Unschedulable, lastTransitionTime: \"2026-11-21T09:46:00Z\"}\n");
    let path = dir.join("hostile.yaml");
    std::fs::write(&path, hostile).unwrap();
    path
}
