//! The cost scrape: the Karpenter controller's own `/metrics`, read through the API
//! server's service proxy (`GET /api/v1/namespaces/NS/services/SVC:PORT/proxy/metrics`),
//! so kelp needs no network path to the controller, only `get` on `services/proxy` for that
//! one Service. Read-only: one GET, and never a Secret.
//!
//! [`scrape`] does one read; [`ScrapeError`] says what went wrong in a way a person can act
//! on ([`ScrapeError::hint`], and for a 403 the Role and RoleBinding that fix it);
//! [`PriceCache`] keeps the last good read and the last error for a caller that scrapes
//! periodically (it never reads a clock itself: the caller passes `Instant`s);
//! [`PriceProblem`] is that error as the views tell why the cost columns are hidden.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Limited};
use serde::Serialize;

use crate::model::ControllerMetrics;
use crate::source::live::Connection;

/// Where Karpenter's Service is unless told otherwise.
pub const DEFAULT_TARGET: &str = "karpenter/karpenter:8080";
/// How long one scrape may take, end to end.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest response kelp reads (the AWS provider's price series for every offering
/// are a few MiB; anything far beyond that is not a Karpenter controller).
const MAX_BODY: usize = 64 << 20;
/// The name of the Role (and RoleBinding) [`rbac_yaml`] writes, as the chart names it for a
/// release called `kelp`.
pub const ROLE_NAME: &str = "kelp-karpenter-metrics";

/// A Service port: its number or its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Port {
    Number(u16),
    Name(String),
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Port::Number(n) => write!(f, "{n}"),
            Port::Name(s) => f.write_str(s),
        }
    }
}

/// Karpenter's metrics Service: `NAMESPACE/SERVICE:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScrapeTarget {
    pub namespace: String,
    pub service: String,
    pub port: Port,
}

impl Default for ScrapeTarget {
    fn default() -> Self {
        ScrapeTarget {
            namespace: "karpenter".into(),
            service: "karpenter".into(),
            port: Port::Number(8080),
        }
    }
}

impl fmt::Display for ScrapeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}:{}", self.namespace, self.service, self.port)
    }
}

/// A `--karpenter-service` value that is not `NAMESPACE/SERVICE:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Karpenter service {input:?}: {problem} (expected NAMESPACE/SERVICE:PORT, e.g. karpenter/karpenter:8080)")]
pub struct TargetError {
    pub input: String,
    pub problem: String,
}

impl FromStr for ScrapeTarget {
    type Err = TargetError;

    fn from_str(input: &str) -> Result<Self, TargetError> {
        let fail = |problem: String| TargetError {
            input: input.to_string(),
            problem,
        };
        let s = input.trim();
        let (namespace, rest) = s
            .split_once('/')
            .ok_or_else(|| fail("no NAMESPACE/ before the service".into()))?;
        let (service, port) = rest
            .split_once(':')
            .ok_or_else(|| fail("no :PORT after the service".into()))?;
        check_dns_label(namespace, false).map_err(|p| fail(format!("namespace: {p}")))?;
        check_dns_label(service, true).map_err(|p| fail(format!("service: {p}")))?;
        let port = parse_port(port).map_err(|p| fail(format!("port: {p}")))?;
        Ok(ScrapeTarget {
            namespace: namespace.to_string(),
            service: service.to_string(),
            port,
        })
    }
}

/// A namespace (RFC 1123 label) or, with `letter_first`, a Service name (RFC 1035 label).
fn check_dns_label(s: &str, letter_first: bool) -> Result<(), String> {
    if s.is_empty() {
        return Err("empty".into());
    }
    if s.len() > 63 {
        return Err(format!("{s:?} is longer than 63 characters"));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "{s:?} has {c:?}; only lowercase letters, digits and '-' are allowed"
        ));
    }
    let first = s.as_bytes()[0];
    if letter_first && !first.is_ascii_lowercase() {
        return Err(format!("{s:?} must start with a letter"));
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Err(format!("{s:?} must start and end with a letter or digit"));
    }
    Ok(())
}

/// A port number (1-65535) or a port name (IANA service name: at most 15 lowercase
/// letters, digits and single '-', with at least one letter).
fn parse_port(s: &str) -> Result<Port, String> {
    if s.is_empty() {
        return Err("empty".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return match s.parse::<u16>() {
            Ok(n) if n > 0 => Ok(Port::Number(n)),
            _ => Err(format!("{s} is not a port number (1-65535)")),
        };
    }
    let valid_chars = s
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid_chars || s.len() > 15 || s.starts_with('-') || s.ends_with('-') || s.contains("--") {
        return Err(format!(
            "{s:?} is neither a number nor a port name (at most 15 lowercase letters, digits and single '-')"
        ));
    }
    Ok(Port::Name(s.to_string()))
}

impl ScrapeTarget {
    /// The name the API server (and RBAC `resourceNames`) sees: `SERVICE:PORT`.
    pub fn resource_name(&self) -> String {
        format!("{}:{}", self.service, self.port)
    }

    /// The service-proxy path of the controller's `/metrics`.
    pub fn path(&self) -> String {
        format!(
            "/api/v1/namespaces/{}/services/{}/proxy/metrics",
            self.namespace,
            self.resource_name()
        )
    }
}

/// Why a scrape gave no metrics. Messages from the API server are kept as it wrote them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScrapeError {
    /// 403 from the API server: RBAC refuses `get` on `services/proxy`.
    #[error("forbidden: {message}")]
    Forbidden { message: String },
    /// 404 from the API server: no such Service (or no such namespace; the API server says
    /// the same of a selector-less Service that has no Endpoints object).
    #[error("service not found: {message}")]
    NotFound { message: String },
    /// The Service has no port with that number (503 `no service port N found`).
    #[error("no such port: {message}")]
    PortNotFound { message: String },
    /// The Service exists but nothing ready serves that port (503 `no endpoints available`),
    /// which is also what a port *name* the Service lacks looks like.
    #[error("no endpoints: {message}")]
    NoEndpoints { message: String },
    /// No complete answer within the timeout.
    #[error("no answer within {}s", .after.as_secs_f64())]
    Timeout { after: Duration },
    /// The API server could not connect to the endpoint, or kelp could not reach the API server.
    #[error("unreachable: {message}")]
    Unreachable { message: String },
    /// The controller's endpoint itself answered with an error (passed through by the proxy).
    #[error("the metrics endpoint answered {code}: {message}")]
    Endpoint { code: u16, message: String },
    /// Any other refusal by the API server (`code`), or a target kelp will not request (no code).
    #[error("{}{message}", .code.map(|c| format!("the API server answered {c}: ")).unwrap_or_default())]
    Other { code: Option<u16>, message: String },
    /// A 200 whose body is not a Karpenter controller's Prometheus exposition.
    #[error("not Karpenter's metrics: {message}")]
    Unparseable { message: String },
}

impl ScrapeError {
    /// A stable, machine-readable name for the cause.
    pub fn kind(&self) -> &'static str {
        match self {
            ScrapeError::Forbidden { .. } => "forbidden",
            ScrapeError::NotFound { .. } => "not-found",
            ScrapeError::PortNotFound { .. } => "port-not-found",
            ScrapeError::NoEndpoints { .. } => "no-endpoints",
            ScrapeError::Timeout { .. } => "timeout",
            ScrapeError::Unreachable { .. } => "unreachable",
            ScrapeError::Endpoint { .. } => "endpoint-error",
            ScrapeError::Other { .. } => "other",
            ScrapeError::Unparseable { .. } => "unparseable",
        }
    }

    /// One line saying what to do about it.
    pub fn hint(&self, t: &ScrapeTarget) -> String {
        let (ns, svc, port) = (&t.namespace, &t.service, &t.port);
        match self {
            ScrapeError::Forbidden { .. } => format!(
                "kelp may not read Karpenter's metrics: grant get on services/proxy for {svc}:{port} in namespace {ns} (a Role and RoleBinding; the Helm chart's karpenter.costScrape.enabled does it)"
            ),
            ScrapeError::NotFound { .. } => format!(
                "there is no Service {svc} in namespace {ns}: point --karpenter-service at Karpenter's metrics Service (NAMESPACE/SERVICE:PORT)"
            ),
            ScrapeError::PortNotFound { .. } => format!(
                "Service {ns}/{svc} has no port {port}: give the number or name of its metrics port (Karpenter's chart: 8080, named http-metrics)"
            ),
            ScrapeError::NoEndpoints { .. } => format!(
                "Service {ns}/{svc} has no ready endpoint for port {port}: check that the Karpenter controller is running and that the port name is right"
            ),
            ScrapeError::Timeout { after } => format!(
                "Karpenter's metrics at {t} did not answer within {}s: the controller may be overloaded, or a NetworkPolicy may keep the API server from reaching it",
                after.as_secs_f64()
            ),
            ScrapeError::Unreachable { .. } => format!(
                "the API server could not connect to Karpenter's metrics behind {t}: check the port and that the API server may reach the controller's pods (NetworkPolicy, firewall)"
            ),
            ScrapeError::Endpoint { .. } => format!(
                "the endpoint behind {t} refused the request: is {port} Karpenter's metrics port (and not a health or webhook port)?"
            ),
            ScrapeError::Other { .. } => format!(
                "the API server would not proxy to {t}; its message says why"
            ),
            ScrapeError::Unparseable { .. } => format!(
                "{t} answered, but not with Karpenter's Prometheus metrics: is {port} the controller's metrics port?"
            ),
        }
    }

    /// For a 403: the user the API server named (`system:serviceaccount:NS:NAME` for a
    /// ServiceAccount).
    pub fn forbidden_user(&self) -> Option<&str> {
        let ScrapeError::Forbidden { message } = self else {
            return None;
        };
        let rest = &message[message.find("User \"")? + 6..];
        Some(&rest[..rest.find('"')?])
    }

    /// For a 403: the Role and RoleBinding that grant what is missing, bound to the user
    /// the API server named (a ServiceAccount, or a plain user); `None` for other errors or
    /// when the message names nobody.
    pub fn rbac_yaml(&self, t: &ScrapeTarget) -> Option<String> {
        let user = self.forbidden_user()?;
        Some(match service_account(user) {
            Some((ns, name)) => rbac_yaml(t, ns, name),
            None => role_and_binding(t, &Grantee::User(user)),
        })
    }
}

/// `system:serviceaccount:NS:NAME` as (NS, NAME).
pub fn service_account(user: &str) -> Option<(&str, &str)> {
    let (ns, name) = user
        .strip_prefix("system:serviceaccount:")?
        .split_once(':')?;
    (!ns.is_empty() && !name.is_empty()).then_some((ns, name))
}

/// Whom the RoleBinding binds.
enum Grantee<'a> {
    ServiceAccount { namespace: &'a str, name: &'a str },
    User(&'a str),
}

/// The Role and RoleBinding (two YAML documents) that let a ServiceAccount read
/// Karpenter's metrics through the service proxy: `get` on `services/proxy`, in the
/// target's namespace, for that Service only (with and without the port, as the proxy
/// path names it).
pub fn rbac_yaml(t: &ScrapeTarget, sa_namespace: &str, sa_name: &str) -> String {
    role_and_binding(
        t,
        &Grantee::ServiceAccount {
            namespace: sa_namespace,
            name: sa_name,
        },
    )
}

/// A YAML comment line: `#` and `text` on one line, whatever `text` holds.
fn comment(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| match c {
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => ' ',
            c => c,
        })
        .collect();
    format!("# {one_line}\n")
}

/// The Role and RoleBinding as k8s-openapi objects, written as two YAML documents under
/// a comment that says what they grant.
fn role_and_binding(t: &ScrapeTarget, grantee: &Grantee) -> String {
    use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let (who, subject) = match *grantee {
        Grantee::ServiceAccount { namespace, name } => (
            format!("ServiceAccount {namespace}/{name}"),
            Subject {
                kind: "ServiceAccount".into(),
                name: name.into(),
                namespace: Some(namespace.into()),
                api_group: None,
            },
        ),
        Grantee::User(user) => (
            format!("user {user}"),
            Subject {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "User".into(),
                name: user.into(),
                namespace: None,
            },
        ),
    };
    let metadata = ObjectMeta {
        name: Some(ROLE_NAME.into()),
        namespace: Some(t.namespace.clone()),
        ..ObjectMeta::default()
    };
    let role = Role {
        metadata: metadata.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["services/proxy".into()]),
            resource_names: Some(vec![t.service.clone(), t.resource_name()]),
            verbs: vec!["get".into()],
            non_resource_urls: None,
        }]),
    };
    let binding = RoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: ROLE_NAME.into(),
        },
        subjects: Some(vec![subject]),
    };
    // Neither can fail: both are maps, lists and strings only.
    let yaml = |v: &dyn erased_serde::Serialize| serde_norway::to_string(v).unwrap_or_default();
    [
        comment(&format!(
            "Lets {who} read Karpenter's /metrics through the API server's service proxy"
        )),
        comment(&format!("(GET {}), and nothing else.", t.path())),
        yaml(&role),
        "---\n".into(),
        yaml(&binding),
    ]
    .concat()
}

/// Classify a non-2xx answer to the proxy GET. The API server's own refusals are JSON
/// `Status` objects; anything else was written by the controller's endpoint and passed
/// through by the proxy.
pub fn classify(code: u16, body: &str) -> ScrapeError {
    let status = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .filter(|v| v["kind"] == "Status");
    let Some(status) = status else {
        return ScrapeError::Endpoint {
            code,
            message: first_line(body),
        };
    };
    let message = status["message"]
        .as_str()
        .filter(|m| !m.is_empty())
        .or_else(|| status["reason"].as_str())
        .unwrap_or("no message")
        .to_string();
    match code {
        401 => ScrapeError::Other {
            code: Some(code),
            message: format!("unauthorized (credentials rejected): {message}"),
        },
        403 => ScrapeError::Forbidden { message },
        404 => ScrapeError::NotFound { message },
        503 if message.starts_with("no endpoints available") => {
            ScrapeError::NoEndpoints { message }
        }
        503 if message.starts_with("no service port") => ScrapeError::PortNotFound { message },
        500 | 502 | 503 | 504 => ScrapeError::Unreachable { message },
        _ => ScrapeError::Other {
            code: Some(code),
            message,
        },
    }
}

/// The first non-empty line of a body, cut to 200 characters.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(empty body)");
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_string(),
    }
}

/// Turn a 200's body into metrics.
pub fn parse_body(t: &ScrapeTarget, body: &[u8]) -> Result<ControllerMetrics, ScrapeError> {
    let unparseable = |message: String| ScrapeError::Unparseable { message };
    let text =
        std::str::from_utf8(body).map_err(|_| unparseable("the body is not UTF-8".into()))?;
    if text.trim().is_empty() {
        return Err(unparseable("the body is empty".into()));
    }
    let metrics = super::metrics::parse(&t.to_string(), text).map_err(|e| {
        unparseable(match e {
            crate::Error::Parse { message, .. } => message,
            other => other.to_string(),
        })
    })?;
    if !text.lines().any(|l| l.starts_with("karpenter_")) {
        return Err(unparseable(
            "a Prometheus exposition without one karpenter_ series".into(),
        ));
    }
    Ok(metrics)
}

/// The innermost error's text (hyper and rustls wrap the useful part deep).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// GET the controller's `/metrics` through the API server's service proxy and parse it.
pub async fn scrape(
    conn: &Connection,
    target: &ScrapeTarget,
    timeout: Duration,
) -> Result<ControllerMetrics, ScrapeError> {
    scrape_text(conn, target, timeout).await.map(|(m, _)| m)
}

/// [`scrape`], keeping the exposition's text too (a snapshot embeds it).
pub async fn scrape_text(
    conn: &Connection,
    target: &ScrapeTarget,
    timeout: Duration,
) -> Result<(ControllerMetrics, String), ScrapeError> {
    let unreachable =
        |what: &str, e: &(dyn std::error::Error + 'static)| ScrapeError::Unreachable {
            message: format!("{what} {}: {}", conn.server, root_cause(e)),
        };
    // The fields are public: a target that is not a clean NAMESPACE/SERVICE:PORT (so could
    // steer the path elsewhere, e.g. with "..") is refused before any request.
    if target.to_string().parse::<ScrapeTarget>().as_ref() != Ok(target) {
        return Err(ScrapeError::Other {
            code: None,
            message: format!(
                "refusing to scrape {:?}: not a valid NAMESPACE/SERVICE:PORT",
                target.to_string()
            ),
        });
    }
    let read = async {
        let req = http::Request::get(target.path())
            .header(
                http::header::ACCEPT,
                "text/plain;version=0.0.4;q=1, */*;q=0.1",
            )
            .body(kube::client::Body::from(Vec::new()))
            .map_err(|e| ScrapeError::Other {
                code: None,
                message: format!("cannot build the request: {e}"),
            })?;
        let res = conn
            .client_no_retry
            .send(req)
            .await
            .map_err(|e| unreachable("cannot reach the API server at", &e))?;
        let code = res.status().as_u16();
        let body = Limited::new(res.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    ScrapeError::Unparseable {
                        message: format!("the response is larger than {} MiB", MAX_BODY >> 20),
                    }
                } else {
                    unreachable("reading the response from", e.as_ref())
                }
            })?
            .to_bytes();
        if (200..300).contains(&code) {
            let metrics = parse_body(target, &body)?;
            Ok((metrics, String::from_utf8_lossy(&body).into_owned()))
        } else {
            Err(classify(code, &String::from_utf8_lossy(&body)))
        }
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(ScrapeError::Timeout { after: timeout }),
    }
}

/// The last good scrape and the last error, for a caller that scrapes periodically.
/// It never reads a clock: every method takes the caller's `now`.
#[derive(Debug, Clone)]
pub struct PriceCache {
    pub target: ScrapeTarget,
    /// The least time between two scrapes.
    pub interval: Duration,
    /// The timeout of one scrape.
    pub timeout: Duration,
    good: Option<(ControllerMetrics, Instant)>,
    error: Option<(ScrapeError, Instant)>,
    attempted: Option<Instant>,
}

/// What the cache knows, for a page or an API to show.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriceStatus {
    /// `NAMESPACE/SERVICE:PORT`.
    pub target: String,
    /// `pending` (never tried), `ok` (the last scrape worked), `stale` (the last one failed
    /// but an earlier one worked: its metrics are still served) or `error` (none worked).
    pub state: &'static str,
    /// Seconds since the metrics kept were read.
    pub age_seconds: Option<u64>,
    /// [`ScrapeError::kind`] of the last failure, when the last scrape failed.
    pub error_kind: Option<&'static str>,
    pub error: Option<String>,
    pub hint: Option<String>,
    /// For `forbidden`: the Role and RoleBinding that fix it.
    pub rbac_yaml: Option<String>,
}

impl PriceCache {
    pub fn new(target: ScrapeTarget, interval: Duration) -> Self {
        PriceCache {
            target,
            interval,
            timeout: DEFAULT_TIMEOUT,
            good: None,
            error: None,
            attempted: None,
        }
    }

    /// Whether a scrape is due: never tried, or the last try began `interval` ago or more.
    pub fn due(&self, now: Instant) -> bool {
        self.attempted
            .is_none_or(|t| now.saturating_duration_since(t) >= self.interval)
    }

    /// Note that a scrape starts now (so concurrent callers of [`due`](Self::due) skip it).
    pub fn begin(&mut self, now: Instant) {
        self.attempted = Some(now);
    }

    /// Store a scrape's result. A failure keeps the last good metrics (prices change
    /// slowly; [`PriceStatus::age_seconds`] says how old they are).
    pub fn record(&mut self, now: Instant, result: Result<ControllerMetrics, ScrapeError>) {
        if self.attempted.is_none_or(|t| t > now) {
            self.attempted = Some(now);
        }
        match result {
            Ok(m) => {
                self.good = Some((m, now));
                self.error = None;
            }
            Err(e) => self.error = Some((e, now)),
        }
    }

    /// Scrape if due (`now` is when it starts, and what the result is recorded at);
    /// returns whether it scraped. A caller that shares the cache behind a lock can
    /// instead call [`due`](Self::due) and [`begin`](Self::begin) under the lock,
    /// [`scrape`] without it, then [`record`](Self::record).
    pub async fn refresh(&mut self, conn: &Connection, now: Instant) -> bool {
        if !self.due(now) {
            return false;
        }
        self.begin(now);
        let result = scrape(conn, &self.target, self.timeout).await;
        self.record(now, result);
        true
    }

    /// The last good metrics.
    pub fn metrics(&self) -> Option<&ControllerMetrics> {
        self.good.as_ref().map(|(m, _)| m)
    }

    /// When the last good metrics were read.
    pub fn fetched_at(&self) -> Option<Instant> {
        self.good.as_ref().map(|(_, t)| *t)
    }

    /// The last scrape's error, if the last scrape failed.
    pub fn last_error(&self) -> Option<&ScrapeError> {
        self.error.as_ref().map(|(e, _)| e)
    }

    pub fn status(&self, now: Instant) -> PriceStatus {
        let err = self.last_error();
        PriceStatus {
            target: self.target.to_string(),
            state: match (&self.good, err) {
                (None, None) => "pending",
                (Some(_), None) => "ok",
                (Some(_), Some(_)) => "stale",
                (None, Some(_)) => "error",
            },
            age_seconds: self
                .fetched_at()
                .map(|t| now.saturating_duration_since(t).as_secs()),
            error_kind: err.map(ScrapeError::kind),
            error: err.map(ToString::to_string),
            hint: err.map(|e| e.hint(&self.target)),
            rbac_yaml: err.and_then(|e| e.rbac_yaml(&self.target)),
        }
    }
}

/// Why the cost columns are hidden, when they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "cause", rename_all = "kebab-case")]
pub enum PriceProblem {
    /// The API server refused `services/proxy` (403): grant it with this YAML.
    Forbidden { message: String, rbac: String },
    /// The scrape did not answer in time.
    Timeout { message: String },
    /// The Karpenter service (or its namespace) does not exist.
    NotFound { message: String },
    /// Anything else (no endpoints, a parse error...).
    Other { message: String },
    /// Reading from a dump with no controller metrics in it.
    NotScraped { message: String },
}

impl PriceProblem {
    /// The words for a scrape failure (the dashboard shows them, with the RBAC to grant
    /// when the API server refused).
    pub fn of(e: &ScrapeError, target: &ScrapeTarget) -> Self {
        let message = format!("{e} ({})", e.hint(target));
        match e {
            ScrapeError::Forbidden { .. } => PriceProblem::Forbidden {
                rbac: e
                    .rbac_yaml(target)
                    .unwrap_or_else(|| rbac_yaml(target, "kelp", "kelp")),
                message,
            },
            ScrapeError::Timeout { .. } => PriceProblem::Timeout { message },
            ScrapeError::NotFound { .. } | ScrapeError::PortNotFound { .. } => {
                PriceProblem::NotFound { message }
            }
            _ => PriceProblem::Other { message },
        }
    }

    pub fn message(&self) -> &str {
        match self {
            PriceProblem::Forbidden { message, .. }
            | PriceProblem::Timeout { message }
            | PriceProblem::NotFound { message }
            | PriceProblem::Other { message }
            | PriceProblem::NotScraped { message } => message,
        }
    }
    pub fn cause(&self) -> &'static str {
        match self {
            PriceProblem::Forbidden { .. } => "forbidden",
            PriceProblem::Timeout { .. } => "timeout",
            PriceProblem::NotFound { .. } => "not-found",
            PriceProblem::Other { .. } => "other",
            PriceProblem::NotScraped { .. } => "not-scraped",
        }
    }
    pub fn rbac(&self) -> Option<&str> {
        match self {
            PriceProblem::Forbidden { rbac, .. } => Some(rbac),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn t(s: &str) -> ScrapeTarget {
        s.parse().unwrap()
    }

    #[test]
    fn targets_parse() {
        assert_eq!(t(DEFAULT_TARGET), ScrapeTarget::default());
        assert_eq!(
            t(" kube-system/karpenter:http-metrics "),
            ScrapeTarget {
                namespace: "kube-system".into(),
                service: "karpenter".into(),
                port: Port::Name("http-metrics".into()),
            }
        );
        let d = ScrapeTarget::default();
        assert_eq!(d.to_string(), DEFAULT_TARGET);
        assert_eq!(
            d.path(),
            "/api/v1/namespaces/karpenter/services/karpenter:8080/proxy/metrics"
        );
        assert_eq!(d.resource_name(), "karpenter:8080");
        assert_eq!(t("0ns/a1:65535").port, Port::Number(65535));
    }

    #[test]
    fn bad_targets_say_what_is_wrong() {
        for (input, says) in [
            ("", "no NAMESPACE/"),
            ("karpenter", "no NAMESPACE/"),
            ("karpenter:8080", "no NAMESPACE/"),
            ("karpenter/karpenter", "no :PORT"),
            ("/karpenter:8080", "namespace: empty"),
            ("karpenter/:8080", "service: empty"),
            ("karpenter/karpenter:", "port: empty"),
            (
                "Karpenter/karpenter:8080",
                "namespace: \"Karpenter\" has 'K'",
            ),
            ("kar_penter/karpenter:8080", "has '_'"),
            ("-k/karpenter:8080", "must start and end"),
            ("k/1karpenter:8080", "must start with a letter"),
            ("k/karpenter-:8080", "must start and end"),
            ("k/a/b:8080", "has '/'"),
            ("k/karpenter:0", "not a port number"),
            ("k/karpenter:65536", "not a port number"),
            ("k/karpenter:99999999999999999999", "not a port number"),
            ("k/karpenter:8080:9", "neither a number nor a port name"),
            ("k/karpenter:http--metrics", "neither"),
            ("k/karpenter:-http", "neither"),
            ("k/karpenter:a-very-long-port-name", "neither"),
            ("k/karpenter:HTTP", "neither"),
        ] {
            let e = input.parse::<ScrapeTarget>().unwrap_err();
            let text = e.to_string();
            assert!(text.contains(says), "{input:?}: {text}");
            assert!(text.contains("expected NAMESPACE/SERVICE:PORT"), "{text}");
        }
        let long = format!("{}/karpenter:8080", "a".repeat(64));
        assert!(long
            .parse::<ScrapeTarget>()
            .unwrap_err()
            .problem
            .contains("longer than 63"));
    }

    fn status(code: u16, reason: &str, message: &str) -> String {
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code})
        .to_string()
    }

    const FORBIDDEN: &str = "services \"karpenter:8080\" is forbidden: User \"system:serviceaccount:kelp:kelp\" cannot get resource \"services/proxy\" in API group \"\" in the namespace \"karpenter\"";

    #[test]
    fn api_server_answers_are_classified() {
        let cases = [
            (403, "Forbidden", FORBIDDEN, "forbidden"),
            (404, "NotFound", "services \"karpenter\" not found", "not-found"),
            (
                503,
                "ServiceUnavailable",
                "no service port 9999 found for service \"karpenter\"",
                "port-not-found",
            ),
            (
                503,
                "ServiceUnavailable",
                "no endpoints available for service \"karpenter:http-metrics\"",
                "no-endpoints",
            ),
            (
                503,
                "ServiceUnavailable",
                "error trying to reach service: dial tcp 10.0.0.1:8080: connect: connection refused",
                "unreachable",
            ),
            (
                504,
                "Timeout",
                "Timeout: request did not complete within 1m0s",
                "unreachable",
            ),
            (401, "Unauthorized", "Unauthorized", "other"),
            (
                400,
                "BadRequest",
                "invalid service request \"a:b:c:d\"",
                "other",
            ),
        ];
        for (code, reason, message, kind) in cases {
            let e = classify(code, &status(code, reason, message));
            assert_eq!(e.kind(), kind, "{code} {message}: {e:?}");
            assert!(e.to_string().contains(message), "{e}");
        }
        // The API server's message is kept whole.
        assert_eq!(
            classify(403, &status(403, "Forbidden", FORBIDDEN)),
            ScrapeError::Forbidden {
                message: FORBIDDEN.into()
            }
        );
        // A Status without a message still says something.
        let e = classify(404, r#"{"kind":"Status","reason":"NotFound","code":404}"#);
        assert_eq!(e.to_string(), "service not found: NotFound");
    }

    #[test]
    fn endpoint_answers_are_not_mistaken_for_the_api_server() {
        // Passed through by the proxy: Karpenter's mux, or a kube-rbac-proxy in front of it.
        let e = classify(404, "404 page not found\n");
        assert_eq!(
            e,
            ScrapeError::Endpoint {
                code: 404,
                message: "404 page not found".into()
            }
        );
        assert_eq!(
            classify(403, "Forbidden (user=x, verb=get)").kind(),
            "endpoint-error"
        );
        // JSON that is not a Status is the endpoint's, too.
        assert_eq!(classify(403, r#"{"error":"no"}"#).kind(), "endpoint-error");
        assert_eq!(
            classify(500, "").to_string(),
            "the metrics endpoint answered 500: (empty body)"
        );
        let long = classify(502, &"é".repeat(500)).to_string();
        assert!(
            long.ends_with("...") && long.chars().count() < 260,
            "{long}"
        );
    }

    #[test]
    fn hints_name_the_target_and_the_fix() {
        let target = t("kube-system/karpenter:http-metrics");
        let hint = |e: ScrapeError| e.hint(&target);
        let msg = || "m".to_string();
        let forbidden = hint(ScrapeError::Forbidden { message: msg() });
        assert!(
            forbidden.contains("services/proxy")
                && forbidden.contains("karpenter:http-metrics")
                && forbidden.contains("namespace kube-system"),
            "{forbidden}"
        );
        let not_found = hint(ScrapeError::NotFound { message: msg() });
        assert!(
            not_found.contains("no Service karpenter in namespace kube-system")
                && not_found.contains("--karpenter-service"),
            "{not_found}"
        );
        assert!(
            hint(ScrapeError::PortNotFound { message: msg() }).contains("has no port http-metrics")
        );
        assert!(hint(ScrapeError::NoEndpoints { message: msg() }).contains("controller is running"));
        assert!(hint(ScrapeError::Timeout {
            after: Duration::from_secs(15)
        })
        .contains("within 15s"));
        assert!(hint(ScrapeError::Unreachable { message: msg() }).contains("could not connect"));
        assert!(hint(ScrapeError::Endpoint {
            code: 404,
            message: msg()
        })
        .contains("metrics port"));
        assert!(hint(ScrapeError::Other {
            code: Some(400),
            message: msg()
        })
        .contains("kube-system/karpenter:http-metrics"));
        assert!(hint(ScrapeError::Unparseable { message: msg() })
            .contains("not with Karpenter's Prometheus metrics"));
        for e in [
            ScrapeError::Forbidden { message: msg() },
            ScrapeError::Timeout {
                after: Duration::from_millis(1500),
            },
        ] {
            assert!(!hint(e.clone()).contains('\n'), "{e:?}");
        }
        assert_eq!(
            ScrapeError::Timeout {
                after: Duration::from_millis(1500)
            }
            .to_string(),
            "no answer within 1.5s"
        );
    }

    fn docs(yaml: &str) -> Vec<serde_json::Value> {
        serde_norway::Deserializer::from_str(yaml)
            .map(|d| serde_json::Value::deserialize(d).unwrap())
            .collect()
    }

    #[test]
    fn rbac_yaml_grants_exactly_the_proxy_get() {
        let target = t("karpenter/karpenter:8080");
        let yaml = rbac_yaml(&target, "kelp", "kelp-sa");
        let d = docs(&yaml);
        assert_eq!(d.len(), 2, "{yaml}");
        let (role, binding) = (&d[0], &d[1]);
        assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(role["kind"], "Role");
        assert_eq!(role["metadata"]["namespace"], "karpenter");
        assert_eq!(role["metadata"]["name"], ROLE_NAME);
        let rules = role["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0]["apiGroups"], serde_json::json!([""]));
        assert_eq!(rules[0]["resources"], serde_json::json!(["services/proxy"]));
        assert_eq!(rules[0]["verbs"], serde_json::json!(["get"]));
        assert_eq!(
            rules[0]["resourceNames"],
            serde_json::json!(["karpenter", "karpenter:8080"])
        );
        assert_eq!(binding["kind"], "RoleBinding");
        assert_eq!(binding["metadata"]["namespace"], "karpenter");
        assert_eq!(
            binding["roleRef"],
            serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME})
        );
        assert_eq!(
            binding["subjects"],
            serde_json::json!([{"kind": "ServiceAccount", "name": "kelp-sa", "namespace": "kelp"}])
        );
        // Odd input stays data, never YAML structure.
        let odd = rbac_yaml(
            &target,
            "a\"b",
            "x\n- kind: User\n  name: admin\u{2028}\u{85}",
        );
        let d = docs(&odd);
        assert_eq!(d[1]["subjects"].as_array().unwrap().len(), 1);
        assert_eq!(d[1]["subjects"][0]["namespace"], "a\"b");
        assert_eq!(
            d[1]["subjects"][0]["name"],
            "x\n- kind: User\n  name: admin\u{2028}\u{85}"
        );
    }

    #[test]
    fn a_403_names_whom_to_bind() {
        let target = t("karpenter/karpenter:8080");
        let e = ScrapeError::Forbidden {
            message: FORBIDDEN.into(),
        };
        assert_eq!(e.forbidden_user(), Some("system:serviceaccount:kelp:kelp"));
        let d = docs(&e.rbac_yaml(&target).unwrap());
        assert_eq!(
            d[1]["subjects"],
            serde_json::json!([{"kind": "ServiceAccount", "name": "kelp", "namespace": "kelp"}])
        );
        let human = ScrapeError::Forbidden {
            message: "services \"karpenter:8080\" is forbidden: User \"jane@example.com\" cannot get resource \"services/proxy\"".into(),
        };
        let d = docs(&human.rbac_yaml(&target).unwrap());
        assert_eq!(
            d[1]["subjects"],
            serde_json::json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane@example.com"}])
        );
        for e in [
            ScrapeError::Forbidden {
                message: "forbidden".into(),
            },
            ScrapeError::Forbidden {
                message: "User \"unterminated".into(),
            },
            ScrapeError::NotFound {
                message: FORBIDDEN.into(),
            },
        ] {
            assert_eq!(e.rbac_yaml(&target), None, "{e:?}");
        }
        assert_eq!(service_account("system:serviceaccount:ns:"), None);
        assert_eq!(
            service_account("system:serviceaccount:ns:n"),
            Some(("ns", "n"))
        );
    }

    #[test]
    fn bodies_parse_or_say_why_not() {
        let target = ScrapeTarget::default();
        let m = parse_body(
            &target,
            b"# TYPE karpenter_nodepools_cost_total gauge\nkarpenter_nodepools_cost_total{nodepool=\"default\"} 0.5\n",
        )
        .unwrap();
        assert_eq!(m.nodepool_cost["default"], 0.5);
        for (body, says) in [
            (&b""[..], "empty"),
            (b"  \n", "empty"),
            (b"\xff\xfe", "not UTF-8"),
            (b"<html><body>hello</body></html>", "no samples"),
            (b"go_goroutines 12\n", "without one karpenter_ series"),
        ] {
            let e = parse_body(&target, body).unwrap_err();
            assert_eq!(e.kind(), "unparseable");
            assert!(e.to_string().contains(says), "{e}");
        }
    }

    #[test]
    fn the_cache_keeps_the_last_good_read_and_the_last_error() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut c = PriceCache::new(ScrapeTarget::default(), Duration::from_secs(60));
        assert!(c.due(at(0)));
        assert_eq!(c.status(at(0)).state, "pending");
        c.begin(at(0));
        assert!(!c.due(at(59)));
        assert!(c.due(at(60)));
        let mut m = ControllerMetrics::default();
        m.nodepool_cost.insert("default".into(), 1.0);
        c.record(at(1), Ok(m.clone()));
        assert_eq!(c.metrics(), Some(&m));
        assert_eq!(c.fetched_at(), Some(at(1)));
        let s = c.status(at(31));
        assert_eq!(
            (s.state, s.age_seconds, s.error_kind),
            ("ok", Some(30), None)
        );

        c.begin(at(60));
        c.record(
            at(61),
            Err(ScrapeError::Forbidden {
                message: FORBIDDEN.into(),
            }),
        );
        // The prices stay, marked stale, with what went wrong and how to fix it.
        assert_eq!(c.metrics(), Some(&m));
        let s = c.status(at(61));
        assert_eq!(s.state, "stale");
        assert_eq!(s.age_seconds, Some(60));
        assert_eq!(s.error_kind, Some("forbidden"));
        assert!(s.hint.unwrap().contains("services/proxy"));
        assert!(s.rbac_yaml.unwrap().contains("kind: RoleBinding"));
        assert!(!c.due(at(100)) && c.due(at(120)));

        c.record(at(121), Ok(ControllerMetrics::default()));
        assert_eq!(c.last_error(), None);
        assert_eq!(c.status(at(121)).state, "ok");

        // Never a good read: `error`, no age.
        let mut never = PriceCache::new(ScrapeTarget::default(), Duration::from_secs(60));
        never.record(
            at(5),
            Err(ScrapeError::Timeout {
                after: DEFAULT_TIMEOUT,
            }),
        );
        let s = never.status(at(6));
        assert_eq!(
            (s.state, s.age_seconds, s.rbac_yaml.as_deref()),
            ("error", None, None)
        );
        assert!(!never.due(at(64)) && never.due(at(65)));
        // Serialises for the page's API.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["error_kind"], "timeout");
    }

    /// A client for `http://127.0.0.1:PORT` (no TLS, no credentials).
    fn conn(port: u16) -> Connection {
        let url: http::Uri = format!("http://127.0.0.1:{port}").parse().unwrap();
        let mut config = kube::Config::new(url);
        let client = kube::Client::try_from(config.clone()).unwrap();
        config.default_retry = false;
        Connection {
            watch_client: client.clone(),
            client,
            client_no_retry: kube::Client::try_from(config).unwrap(),
            server: format!("http://127.0.0.1:{port}"),
            context: "test".into(),
        }
    }

    /// An HTTP server that answers one request with `response` (after `delay`) and hands
    /// back the request's head.
    fn answer_once(response: String, delay: Duration) -> (u16, std::thread::JoinHandle<String>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                head.extend_from_slice(&buf[..n]);
            }
            std::thread::sleep(delay);
            let _ = s.write_all(response.as_bytes());
            String::from_utf8_lossy(&head).to_string()
        });
        (port, handle)
    }

    fn http(code: u16, content_type: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {code} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    #[tokio::test]
    async fn a_scrape_gets_the_proxy_path_and_parses() {
        let body = "# TYPE karpenter_nodepools_cost_total gauge\nkarpenter_nodepools_cost_total{nodepool=\"a\"} 2.5\n";
        let (port, server) = answer_once(http(200, "text/plain", body), Duration::ZERO);
        let target = t("kube-system/karpenter:http-metrics");
        let m = scrape(&conn(port), &target, DEFAULT_TIMEOUT).await.unwrap();
        assert_eq!(m.nodepool_cost["a"], 2.5);
        let head = server.join().unwrap();
        assert!(
            head.starts_with("GET /api/v1/namespaces/kube-system/services/karpenter:http-metrics/proxy/metrics HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(head.to_lowercase().contains("accept: text/plain"), "{head}");
    }

    #[tokio::test]
    async fn scrape_failures_are_classified() {
        let target = ScrapeTarget::default();
        let forbidden = status(403, "Forbidden", FORBIDDEN);
        let (port, _) = answer_once(http(403, "application/json", &forbidden), Duration::ZERO);
        let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(
            e,
            ScrapeError::Forbidden {
                message: FORBIDDEN.into()
            }
        );

        // A 503 is the proxy's answer, not overload: not retried (the server answers once;
        // a retry would meet a closed port).
        let no_endpoints = status(
            503,
            "ServiceUnavailable",
            "no endpoints available for service \"karpenter\"",
        );
        let (port, _) = answer_once(http(503, "application/json", &no_endpoints), Duration::ZERO);
        let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "no-endpoints", "{e}");

        let (port, _) = answer_once(
            http(404, "text/plain", "404 page not found\n"),
            Duration::ZERO,
        );
        let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "endpoint-error");

        let (port, _) = answer_once(http(200, "text/html", "<html>hi</html>"), Duration::ZERO);
        let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "unparseable");

        let (port, _) = answer_once(http(200, "text/plain", ""), Duration::from_secs(3));
        let e = scrape(&conn(port), &target, Duration::from_millis(300))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            ScrapeError::Timeout {
                after: Duration::from_millis(300)
            }
        );

        // Nothing listens: the API server itself is unreachable.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "unreachable", "{e}");
        assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    }

    /// A scrape whose answer never ends (a proxy or endpoint gone wrong) stops at the cap:
    /// one error, not memory without end.
    #[tokio::test]
    async fn an_endless_answer_stops_at_the_cap() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
            );
            let line = "# HELP x y\n".repeat(6000);
            while s.write_all(line.as_bytes()).is_ok() {}
        });
        let e = scrape(&conn(port), &ScrapeTarget::default(), DEFAULT_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(
            e,
            ScrapeError::Unparseable {
                message: "the response is larger than 64 MiB".into()
            }
        );
    }

    #[tokio::test]
    async fn a_target_that_could_steer_the_path_is_never_requested() {
        for (namespace, service, port) in [
            ("..", "secrets", Port::Number(80)),
            ("kube-system", "karpenter/../../secrets", Port::Number(80)),
            (
                "kube-system",
                "karpenter",
                Port::Name("x/../../../secrets".into()),
            ),
            (" kube-system", "karpenter", Port::Number(80)),
        ] {
            let target = ScrapeTarget {
                namespace: namespace.into(),
                service: service.into(),
                port,
            };
            // Port 1 on loopback: a request would fail as unreachable, not as refused.
            let e = scrape(&conn(1), &target, DEFAULT_TIMEOUT)
                .await
                .unwrap_err();
            assert!(
                matches!(&e, ScrapeError::Other { code: None, message } if message.contains("refusing")),
                "{target:?}: {e:?}"
            );
        }
    }
}
