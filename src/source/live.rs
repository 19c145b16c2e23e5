//! One-shot reads of a live cluster with kube-rs: the connection, discovery of the
//! Karpenter APIs, then one paginated (so consistent) list of each kind [`kinds`] names,
//! deserialised straight into the trimmed projections (`paged` is the one loop over
//! `continue` tokens, which the watch's relists use too). Read-only: only GETs, and never
//! Secrets.

use std::path::PathBuf;

use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::kinds;
use crate::model::event::CoreEvent;
use crate::model::*;
use crate::source::error::{Error, Result};

/// How to reach a cluster.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// A connected client and where it points.
pub struct Connection {
    pub client: Client,
    /// The same, with a read timeout just above a watch's own length
    /// ([`super::watch::WATCH_SECONDS`]): a healthy watch always ends before it, a silent
    /// connection never outlives it.
    pub watch_client: Client,
    /// The same cluster and credentials without kube-rs's default retry of 429/503/504:
    /// through the service proxy a 503 is an answer ("no endpoints available", "no service
    /// port"), which the retry would repeat for minutes (see `source::controller`).
    pub client_no_retry: Client,
    pub server: String,
    /// The kubeconfig context name, or `in-cluster`.
    pub context: String,
}

/// What kelp sends as its User-Agent, so API server audit logs name it.
pub const USER_AGENT: &str = concat!("kelp/", env!("CARGO_PKG_VERSION"));

/// The watch client's read timeout: a few seconds more than a watch lasts.
pub const WATCH_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(11);

/// Build a client from `--kubeconfig`/`--context`, `$KUBECONFIG`, `~/.kube/config`, or the in-cluster config.
pub async fn connect(target: &Target) -> Result<Connection> {
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..Default::default()
    };
    let (mut config, context) = match &target.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display())))?;
            let ctx = options
                .context
                .clone()
                .or_else(|| kc.current_context.clone())
                .unwrap_or_default();
            (
                Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(|e| Error::Kubeconfig(e.to_string()))?,
                ctx,
            )
        }
        None if target.context.is_some() => {
            let ctx = options.context.clone().unwrap_or_default();
            (
                Config::from_kubeconfig(&options)
                    .await
                    .map_err(|e| Error::Kubeconfig(e.to_string()))?,
                ctx,
            )
        }
        None => {
            let ctx = Kubeconfig::read()
                .ok()
                .and_then(|k| k.current_context)
                .unwrap_or_else(|| "in-cluster".into());
            (
                Config::infer()
                    .await
                    .map_err(|e| Error::Kubeconfig(e.to_string()))?,
                ctx,
            )
        }
    };
    config.connect_timeout = Some(std::time::Duration::from_secs(10));
    config.read_timeout = Some(std::time::Duration::from_secs(60));
    // API server audit logs name the client: `kelp/VERSION`.
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    let server = config.cluster_url.to_string();
    let mut watching = config.clone();
    watching.read_timeout = Some(WATCH_READ_TIMEOUT);
    let watch_client = Client::try_from(watching).map_err(|e| Error::Kubeconfig(e.to_string()))?;
    let mut no_retry = config.clone();
    no_retry.default_retry = false;
    let client_no_retry =
        Client::try_from(no_retry).map_err(|e| Error::Kubeconfig(e.to_string()))?;
    let client = Client::try_from(config).map_err(|e| Error::Kubeconfig(e.to_string()))?;
    Ok(Connection {
        client,
        client_no_retry,
        watch_client,
        server,
        context,
    })
}

/// Map a kube error for `resource` to one clear line.
fn api_error(conn: &Connection, verb: &str, resource: &str, e: kube::Error) -> Error {
    match e {
        kube::Error::Api(s) if s.code == 403 => Error::Forbidden {
            verb: verb.into(),
            resource: resource.into(),
            message: s.message,
        },
        kube::Error::Api(s) if s.code == 401 => Error::Forbidden {
            verb: verb.into(),
            resource: resource.into(),
            message: format!("unauthorized (credentials rejected): {}", s.message),
        },
        kube::Error::Api(s) => Error::Api {
            resource: resource.into(),
            code: Some(s.code),
            message: s.message,
        },
        kube::Error::BuildRequest(e) => Error::Api {
            resource: resource.into(),
            code: None,
            message: e.to_string(),
        },
        other => Error::Unreachable {
            server: conn.server.clone(),
            message: root_cause(&other),
        },
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

// Where `serve`'s watch wiring finds them; the table is `kinds`.
pub use super::kinds::{Resource, DAEMONSETS, EVENTS, NODES, PDBS, PODS};

/// The Karpenter API versions the cluster serves, from discovery.
pub async fn discover(conn: &Connection) -> Result<ApiInfo> {
    let groups = conn
        .client
        .list_api_groups()
        .await
        .map_err(|e| api_error(conn, "discover", "API groups (/apis)", e))?;
    let mut info = ApiInfo {
        authoritative: true,
        ..ApiInfo::default()
    };
    for g in groups
        .groups
        .iter()
        .filter(|g| kinds::is_karpenter_group(&g.name))
    {
        for v in &g.versions {
            info.served.insert(v.group_version.clone());
        }
    }
    Ok(info)
}

/// The resources to list, given what discovery found.
pub fn resources_for(api: &ApiInfo) -> Vec<Resource> {
    kinds::listed(api)
}

/// One page of a list response.
#[derive(Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct Page<T> {
    #[serde(default)]
    metadata: PageMeta,
    #[serde(default)]
    items: Vec<T>,
}

#[derive(Deserialize, Default)]
struct PageMeta {
    #[serde(default, rename = "continue")]
    continue_: Option<String>,
    /// Where a watch starts after the last page.
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

/// List every object of a resource, 500 a page (following `continue` tokens, so the list
/// is one consistent read), handing each item to `each` as its page arrives. Returns the
/// list's resourceVersion, where a watch picks up. A request that cannot be built is a
/// [`kube::Error::BuildRequest`].
pub(crate) async fn paged<T: DeserializeOwned>(
    client: &Client,
    r: &Resource,
    mut each: impl FnMut(T),
) -> Result<String, kube::Error> {
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(500);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let req = kube::core::Request::new(r.path())
            .list(&lp)
            .map_err(kube::Error::BuildRequest)?;
        let page: Page<T> = client.request(req).await?;
        page.items.into_iter().for_each(&mut each);
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(page.metadata.resource_version.unwrap_or_default()),
        }
    }
}

/// List every object of a resource, page by page, into `T`.
pub async fn list_all<T: DeserializeOwned>(
    conn: &Connection,
    r: &Resource,
    each: impl FnMut(T),
) -> Result<()> {
    paged(&conn.client, r, each)
        .await
        .map(drop)
        .map_err(|e| api_error(conn, "list", r.plural, e))
}

/// Lists one kind into a model (see [`kinds::with_kind`]).
struct ListInto<'a> {
    conn: &'a Connection,
    cluster: &'a mut Cluster,
}

impl<'a> kinds::ForKind for ListInto<'a> {
    type Output = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;
    fn run<T: kinds::Kind>(self, r: &Resource) -> Self::Output {
        let r = *r;
        Box::pin(async move {
            list_all(self.conn, &r, |mut o: T| {
                o.fix(&r);
                o.apply(self.cluster)
            })
            .await
        })
    }
}

/// Read everything kelp needs into a fresh model.
pub async fn load(conn: &Connection) -> Result<Cluster> {
    let mut c = Cluster::default();
    c.api = discover(conn).await?;
    for r in resources_for(&c.api) {
        let cluster = &mut c;
        if let Some(listing) = kinds::with_kind(&r, ListInto { conn, cluster }) {
            listing.await?;
        }
    }
    if let Some(crd) = nodepool_crd(conn).await {
        kinds::Kind::apply(crd, &mut c);
    }
    Ok(c)
}

/// Karpenter's NodePool CRD, for what its schema says of the release that shipped it
/// (one GET by name, as the chart's RBAC allows). Optional: absent (404) or forbidden
/// (403), the release is read from elsewhere or not at all.
pub async fn nodepool_crd(conn: &Connection) -> Option<crate::model::Crd> {
    let req = http_get(&format!(
        "{}/{}",
        kinds::CRDS.path(),
        kinds::NODEPOOLS.crd_name()
    ));
    conn.client.request::<crate::model::Crd>(req).await.ok()
}

/// Full objects for `kelp snapshot`: every kind kelp reads (plus Karpenter's CRDs where
/// RBAC allows), with `apiVersion`/`kind` set on each item and managedFields removed.
pub async fn snapshot_items(conn: &Connection) -> Result<Vec<serde_json::Value>> {
    let api = discover(conn).await?;
    let mut items = Vec::new();
    for r in kinds::karpenter() {
        let req = http_get(&format!("{}/{}", kinds::CRDS.path(), r.crd_name()));
        // Optional: absent CRDs (404) and missing RBAC (403) leave discovery to speak for the install.
        if let Ok(mut crd) = conn.client.request::<serde_json::Value>(req).await {
            crd["apiVersion"] = kinds::CRDS.api_version().into();
            crd["kind"] = kinds::CRDS.kind.as_str().into();
            strip(&mut crd);
            items.push(crd);
        }
    }
    for r in resources_for(&api) {
        list_all(conn, &r, |mut o: serde_json::Value| {
            o["apiVersion"] = r.api_version().into();
            o["kind"] = r.kind.as_str().into();
            strip(&mut o);
            // Only the events kelp reads: the rest are most of a cluster's objects.
            let keep = r != EVENTS || {
                let e: Event = serde_json::from_value::<CoreEvent>(o.clone())
                    .map(Into::into)
                    .unwrap_or_default();
                e.is_relevant()
            };
            if keep {
                items.push(o);
            }
        })
        .await?;
    }
    Ok(items)
}

fn http_get(path: &str) -> http::Request<Vec<u8>> {
    let mut req = http::Request::new(Vec::new());
    *req.uri_mut() = path.parse().unwrap_or_default();
    req
}

/// Remove managedFields and the last-applied annotation (noise, and sometimes sensitive).
fn strip(o: &mut serde_json::Value) {
    if let Some(meta) = o.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
        if let Some(ann) = meta.get_mut("annotations").and_then(|a| a.as_object_mut()) {
            ann.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn resources_follow_discovery() {
        let mut api = ApiInfo::default();
        let names = |api: &ApiInfo| {
            resources_for(api)
                .iter()
                .map(|r| r.kind.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&api),
            ["Node", "Pod", "DaemonSet", "PodDisruptionBudget", "Event"]
        );
        api.served.extend([
            "karpenter.sh/v1".to_string(),
            "karpenter.kwok.sh/v1alpha1".to_string(),
        ]);
        assert_eq!(names(&api)[..3], ["NodePool", "NodeClaim", "KWOKNodeClass"]);
        assert_eq!(
            kinds::EC2NODECLASSES.path(),
            "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"
        );
        assert_eq!(NODES.path(), "/api/v1/nodes");
    }

    #[test]
    fn strip_removes_managed_fields_and_last_applied() {
        let mut o = serde_json::json!({"metadata": {"name": "x", "managedFields": [{}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "a": "b"}}});
        strip(&mut o);
        assert_eq!(
            o,
            serde_json::json!({"metadata": {"name": "x", "annotations": {"a": "b"}}})
        );
    }

    /// A connection to a fake API server on loopback that answers each GET with
    /// `answer(path and query)`: a status code and a JSON body.
    async fn fake_api(answer: fn(&str) -> (u16, String)) -> Connection {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head);
                    let target = head.split(' ').nth(1).unwrap_or_default();
                    let (code, body) = answer(target);
                    let reply = format!(
                        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(reply.as_bytes()).await;
                });
            }
        });
        connect_to_port(port).await
    }

    /// A connection to a fake API server on 127.0.0.1:`port` (plain HTTP, no credentials),
    /// through a kubeconfig as a user would have one.
    pub(crate) async fn connect_to_port(port: u16) -> Connection {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("config");
        std::fs::write(
            &kubeconfig,
            format!("apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"http://127.0.0.1:{port}\"}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]\ncurrent-context: ctx\n"),
        )
        .unwrap();
        connect(&Target {
            kubeconfig: Some(kubeconfig),
            context: None,
        })
        .await
        .unwrap()
    }

    fn answer(target: &str) -> (u16, String) {
        let json = |v: serde_json::Value| (200, v.to_string());
        let node = |name: &str| serde_json::json!({"metadata": {"name": name}});
        match target {
            "/apis" => json(serde_json::json!({"kind": "APIGroupList", "groups": [{
                "name": "karpenter.kwok.sh",
                "versions": [{"groupVersion": "karpenter.kwok.sh/v1alpha1", "version": "v1alpha1"}]}]})),
            "/api/v1/nodes?&limit=500" => json(serde_json::json!({
                "metadata": {"continue": "t1", "resourceVersion": "41"}, "items": [node("a")]})),
            "/api/v1/nodes?&limit=500&continue=t1" => json(serde_json::json!({
                "metadata": {"resourceVersion": "42"}, "items": [node("b")]})),
            t if t.starts_with("/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses?") => {
                json(serde_json::json!({"items": [node("x")]}))
            }
            t if t.starts_with("/api/v1/refused?") => (
                500,
                serde_json::json!({"kind": "Status", "message": "boom", "code": 500}).to_string(),
            ),
            _ => json(serde_json::json!({"items": []})),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_load_follows_continue_tokens_and_the_kind_table() {
        let conn = fake_api(answer).await;
        let mut names = Vec::new();
        let version = paged(&conn.client, &NODES, |n: Node| names.push(n.metadata.name))
            .await
            .unwrap();
        assert_eq!(
            (names, version.as_str()),
            (vec!["a".to_string(), "b".to_string()], "42")
        );

        let c = load(&conn).await.unwrap();
        assert_eq!(c.nodes.keys().collect::<Vec<_>>(), ["a", "b"]);
        let key = ("KWOKNodeClass".to_string(), "x".to_string());
        assert_eq!(
            c.nodeclasses[&key].group, "karpenter.kwok.sh",
            "fixed up from the resource"
        );
        assert!(
            c.nodepools.is_empty(),
            "karpenter.sh is not served, so not listed"
        );

        let refused = Resource {
            plural: "refused",
            ..NODES
        };
        let e = list_all(&conn, &refused, |_: serde_json::Value| {})
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Api {
                    code: Some(500),
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "the API server refused to list refused: boom (500)"
        );
    }
}
