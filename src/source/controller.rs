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
mod tests;
