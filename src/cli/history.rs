//! `kelp history`: what Karpenter did and kelp found, as `kelp serve --state-dir` kept it,
//! per node, NodeClaim, pod or pool, or for the whole cluster. Read straight from the state
//! directory, while serve runs or after.

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Utc};

use super::output::{self, AnswerFormat, Style};
use crate::history::{store, Ask, Record};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    Node,
    Nodeclaim,
    Pod,
    Nodepool,
    /// Rebuild history from Karpenter's controller logs (JSON lines): the FILEs
    Import,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp history node ip-10-0-1-7.ec2.internal --state-dir /var/lib/kelp
      its NodeClaim's steps (launched with type, zone and price; drifted; disrupting, why),
      Karpenter's decisions about it, and the pods evicted from it
  kelp history pod shop/web-7d9f --since 7d
      each wait for a node (from when to when, the node it got, kelp's verdict meanwhile),
      and any eviction by a disruption
  kelp history nodepool default -o json
  kelp history --cluster --since 1h
  kubectl logs -n kube-system deploy/karpenter --since 24h > karpenter.log
  kelp history import karpenter.log --state-dir ./history
      a history from Karpenter's own log, for a cluster kelp never watched: each NodeClaim's
      creation, launch, registration, initialization and deletion, each disruption (reason,
      decision, savings, replacements), each pod it could not schedule

Rows are kept by `kelp serve --state-dir DIR` (default retention 14 days). This reads the
directory directly (no lock is taken), so it works while serve runs and after it stopped.
Times are when Karpenter acted (a claim's condition times), not when kelp saw it.")]
pub struct Args {
    /// What to ask about (with its NAME): node, nodeclaim, pod or nodepool; or import
    #[arg(value_enum, required_unless_present = "cluster")]
    pub what: Option<What>,
    /// Its name (a pod as NAMESPACE/NAME, or NAME with -n); for import, the log files (- for
    /// stdin)
    #[arg(value_name = "NAME|FILE", required_unless_present = "cluster")]
    pub name: Vec<String>,
    /// Everything in the history, every object
    #[arg(long, conflicts_with_all = ["what", "name"])]
    pub cluster: bool,
    /// The pod's namespace (default: any)
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Only what happened (or was still going on) this long ago or later: a Go duration
    /// (90m, 24h) or days (7d)
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = crate::history::age)]
    pub since: chrono::Duration,
    /// Where `kelp serve --state-dir` keeps its history
    #[arg(
        long,
        value_name = "DIR",
        env = "KELP_STATE_DIR",
        required_unless_present = "server"
    )]
    pub state_dir: Option<PathBuf>,
    /// Ask a running `kelp serve` instead, at its dashboard's address (http://HOST:PORT;
    /// through `kubectl port-forward` when it runs in the cluster)
    #[arg(
        long,
        value_name = "URL",
        env = "KELP_SERVER",
        conflicts_with = "state_dir"
    )]
    pub server: Option<String>,
    /// With --server: the cluster's name there (default: its first)
    #[arg(long, value_name = "NAME", requires = "server")]
    pub context: Option<String>,
    /// With --server: the dashboard's token (--auth-token of serve)
    #[arg(
        long,
        value_name = "TOKEN",
        env = "KELP_AUTH_TOKEN",
        hide_env_values = true,
        requires = "server"
    )]
    pub token: Option<String>,
    /// At most this many rows, oldest first
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub limit: usize,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = AnswerFormat::Table)]
    pub output: AnswerFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.what == Some(What::Import) {
        return import(&args);
    }
    let name = match args.name.as_slice() {
        [] => None,
        [one] => Some(one.as_str()),
        more => anyhow::bail!("one NAME at a time, not {}", more.len()),
    };
    let ask = match (args.cluster, args.what, name) {
        (true, _, _) => Ask::Cluster,
        (false, Some(what), Some(name)) => match what {
            What::Import => unreachable!("handled above"),
            What::Node => Ask::Node(name.into()),
            What::Nodeclaim => Ask::NodeClaim(name.into()),
            What::Nodepool => Ask::NodePool(name.into()),
            What::Pod => match name.split_once('/') {
                Some((ns, n)) => Ask::Pod(Some(ns.into()), n.into()),
                None => Ask::Pod(args.namespace.clone(), name.into()),
            },
        },
        _ => {
            anyhow::bail!("say what to ask about (node|nodeclaim|pod|nodepool NAME), or --cluster")
        }
    };
    let rows = match (&args.server, &args.state_dir) {
        (Some(server), _) => from_server(server, &args, &ask)?,
        (None, Some(dir)) => {
            let since: DateTime<Utc> = Utc::now() - args.since;
            store::read(dir, &ask, Some(since), args.limit)?
        }
        (None, None) => anyhow::bail!("--state-dir DIR or --server URL"),
    };
    let style = Style::detect();
    let text = match args.output {
        AnswerFormat::Table => table(&rows, &ask),
        format => output::structured(format.into(), &rows)?,
    };
    output::emit(&text, style)?;
    Ok(ExitCode::SUCCESS)
}

/// The rows a running serve's API gives (`/api/v1/clusters/{cluster}/history`).
fn from_server(server: &str, args: &Args, ask: &Ask) -> anyhow::Result<Vec<Record>> {
    let base = server.trim_end_matches('/');
    let token = args.token.as_deref().filter(|t| !t.is_empty());
    let cluster = match &args.context {
        Some(c) => c.clone(),
        None => {
            let v: serde_json::Value =
                serde_json::from_str(&get(&format!("{base}/api/v1/clusters"), token)?)?;
            v["clusters"][0]["name"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("{base} serves no cluster"))?
                .to_string()
        }
    };
    let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let subject = match ask {
        Ask::Node(n) => format!("node={}&", enc(n)),
        Ask::NodeClaim(n) => format!("nodeclaim={}&", enc(n)),
        Ask::NodePool(n) => format!("nodepool={}&", enc(n)),
        Ask::Pod(Some(ns), n) => format!("pod={}&", enc(&format!("{ns}/{n}"))),
        Ask::Pod(None, n) => format!("pod={}&", enc(n)),
        Ask::Cluster => String::new(),
    };
    let url = format!(
        "{base}/api/v1/clusters/{}/history?{subject}since={}s&limit={}",
        enc(&cluster),
        args.since.num_seconds(),
        args.limit
    );
    Ok(serde_json::from_str(&get(&url, token)?)?)
}

/// One GET over plain HTTP (kelp serves nothing else), with at most 64 MiB of answer.
fn get(url: &str, token: Option<&str>) -> anyhow::Result<String> {
    use http_body_util::BodyExt;
    let uri: http::Uri = url
        .parse()
        .map_err(|e| anyhow::anyhow!("--server: {url}: {e}"))?;
    if uri.scheme_str() != Some("http") {
        anyhow::bail!("--server: {url}: only http:// (kelp serves plain HTTP; reach one in a cluster with kubectl port-forward)");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
        let mut req = http::Request::get(uri).header(http::header::ACCEPT, "application/json");
        if let Some(t) = token {
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let resp = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            client.request(req.body(http_body_util::Empty::new())?),
        )
        .await
        .map_err(|_| anyhow::anyhow!("{url}: no answer in 30 s"))?
        .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
        let status = resp.status();
        let body = http_body_util::Limited::new(resp.into_body(), 64 << 20)
            .collect()
            .await
            .map_err(|e| anyhow::anyhow!("{url}: {e}"))?
            .to_bytes();
        let text = String::from_utf8_lossy(&body).into_owned();
        if !status.is_success() {
            let first = text.lines().next().unwrap_or_default().trim().to_string();
            anyhow::bail!("{url}: {status}: {first}");
        }
        Ok(text)
    })
}

/// `kelp history import FILE...`: each log's rows into the store (taking its lock: not
/// while a serve keeps it).
fn import(args: &Args) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    if args.name.is_empty() {
        anyhow::bail!("kelp history import needs the log files (- for stdin)");
    }
    let Some(dir) = &args.state_dir else {
        anyhow::bail!("kelp history import writes into --state-dir DIR");
    };
    let (mut store, moved) = store::Store::open(dir, true)?;
    if let Some(m) = moved {
        eprintln!("kelp: {}; kept as {}", m.why, m.to.display());
    }
    for file in &args.name {
        let mut text = String::new();
        let read = if file == "-" {
            std::io::stdin()
                .take(LOG_LIMIT + 1)
                .read_to_string(&mut text)
        } else {
            std::fs::File::open(file).and_then(|f| f.take(LOG_LIMIT + 1).read_to_string(&mut text))
        };
        read.map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
        if text.len() as u64 > LOG_LIMIT {
            anyhow::bail!("{file}: larger than {} MiB; split it", LOG_LIMIT >> 20);
        }
        let rows = crate::history::import::parse_log(&text);
        store.write(&rows)?;
        eprintln!("kelp: {file}: {} rows", rows.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// The most of one log file `import` reads (it is read whole).
const LOG_LIMIT: u64 = 256 << 20;

fn table(rows: &[Record], ask: &Ask) -> String {
    if rows.is_empty() {
        return format!("No history for {} in that time.\n", describe(ask));
    }
    let mut out = String::new();
    for r in rows {
        out.push_str(&r.line());
        out.push('\n');
    }
    out
}

fn describe(ask: &Ask) -> String {
    match ask {
        Ask::Node(n) => format!("node {n}"),
        Ask::NodeClaim(n) => format!("NodeClaim {n}"),
        Ask::NodePool(n) => format!("NodePool {n}"),
        Ask::Pod(Some(ns), n) => format!("pod {ns}/{n}"),
        Ask::Pod(None, n) => format!("pod {n}"),
        Ask::Cluster => "the cluster".into(),
    }
}
