//! Feeding the model: one reflector per watched kind (Karpenter's kinds start when
//! discovery shows them), a dump followed for changes, or the demo; and [`start`], which
//! starts a cluster's sources and its analysis loop.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::Shared;
use crate::analysis;
use crate::model::*;
use crate::source::kinds::{self, Kind};
use crate::source::live::{self, Connection, Resource};
use crate::source::watch::{reflect, Change};

/// Where `serve` reads a cluster from.
pub enum Input {
    Live(live::Target),
    /// Files re-read when they change (a dump that is rewritten shows up live).
    Dump(Vec<PathBuf>),
    /// The bundled demo cluster.
    Demo,
}

fn spawn_reflector<T: Kind>(shared: &Arc<Shared>, conn: &Arc<Connection>, r: Resource) {
    use crate::source::watch::Progress;
    let (shared, conn) = (shared.clone(), conn.clone());
    tokio::spawn(async move {
        let s2 = shared.clone();
        let mut first = true;
        let karpenter = r.group.starts_with("karpenter.");
        reflect::<T, _>(
            &conn,
            r,
            |change: Change<T>| shared.feed(r, change),
            move |progress| {
                s2.health.progress(r.kind.as_str(), &progress);
                match progress {
                    Progress::Watching => {}
                    Progress::Listed => {
                        if std::mem::take(&mut first) {
                            s2.synced.fetch_add(1, Ordering::SeqCst);
                        }
                        if karpenter && s2.forbidden().is_some_and(|f| f.contains(r.plural)) {
                            s2.set_forbidden(None);
                        }
                    }
                    Progress::Failed(e) if karpenter && e.is_forbidden() => {
                        s2.set_forbidden(Some(format!(
                            "list and watch {}.{} are forbidden ({e})",
                            r.plural, r.group
                        )));
                        s2.changed.notify_one();
                    }
                    Progress::Failed(_) => {}
                }
            },
        )
        .await
    });
}

/// Starts a reflector for whichever projection a resource is read into.
struct Spawn<'a> {
    shared: &'a Arc<Shared>,
    conn: &'a Arc<Connection>,
}

impl kinds::ForKind for Spawn<'_> {
    type Output = ();
    fn run<T: Kind>(self, r: &Resource) {
        spawn_reflector::<T>(self.shared, self.conn, *r)
    }
}

/// Start watching every kind the cluster serves; Karpenter's kinds start when its APIs
/// appear (discovery is polled), without a restart.
async fn watch_cluster(
    shared: Arc<Shared>,
    conn: Arc<Connection>,
    first: crate::model::ApiInfo,
) -> anyhow::Result<()> {
    let mut started: Vec<ObjectKind> = Vec::new();
    let core: Vec<_> = kinds::core().collect();
    // Count every kind discovery already shows before any watch starts, so the first
    // analysis never runs on a model that has pods but not yet the NodePools.
    shared
        .kinds
        .store(live::resources_for(&first).len(), Ordering::SeqCst);
    let api = first.clone();
    shared.update(move |c| c.api = api);
    let spawn = || Spawn {
        shared: &shared,
        conn: &conn,
    };
    for r in &core {
        kinds::with_kind(r, spawn());
    }
    // The NodePool CRD says which Karpenter release shipped it: read at start, and again
    // every 10 minutes (an upgrade replaces it).
    let mut rounds = 0u32;
    loop {
        if rounds % 20 == 0 {
            if let Some(crd) = live::nodepool_crd(&conn).await {
                shared.update(move |c| kinds::Kind::apply(crd, c));
            }
        }
        rounds = rounds.wrapping_add(1);
        match live::discover(&conn).await {
            Ok(api) => {
                for r in live::resources_for(&api) {
                    if started.contains(&r.kind) || core.iter().any(|k| k.kind == r.kind) {
                        continue;
                    }
                    tracing::info!(resource = r.plural, "Karpenter API found; watching");
                    if !live::resources_for(&first).iter().any(|f| f.kind == r.kind) {
                        shared.kinds.fetch_add(1, Ordering::SeqCst);
                    }
                    kinds::with_kind(&r, spawn());
                    started.push(r.kind);
                }
                shared.update(move |c| c.api = api);
            }
            Err(e) => tracing::warn!(error = %e, "discovery failed"),
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
}

fn dump_name(paths: &[PathBuf]) -> String {
    paths
        .first()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && s != "-")
        .unwrap_or_else(|| "dump".into())
}

fn load_dump(paths: &[PathBuf]) -> anyhow::Result<Cluster> {
    let mut c = Cluster::default();
    let notes = crate::source::load_paths_copied(paths, &mut c)?;
    for line in notes.invalid_lines() {
        tracing::warn!("{line}");
    }
    Ok(c)
}

fn set_model(shared: &Shared, c: Cluster) {
    if let Ok(mut clock) = shared.clock.write() {
        *clock = c.captured_at.filter(|t| analysis::plausible_clock(*t));
    }
    // A catalogue given to serve (`--catalog`) wins over the one a re-read dump carries.
    let given = shared.given_catalog();
    shared.update(move |m| {
        *m = c;
        if given.is_some() {
            m.catalog = given;
        }
    });
}

fn mtimes(paths: &[PathBuf]) -> Vec<Option<std::time::SystemTime>> {
    paths
        .iter()
        .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .collect()
}

/// Re-read a dump when one of its files changes, so `serve --from` follows a file that
/// is rewritten. A file that does not parse keeps the previous model (and says why).
async fn follow_dump(shared: Arc<Shared>, paths: Vec<PathBuf>) {
    if paths.iter().any(|p| p.as_os_str() == "-") {
        return;
    }
    let mut seen = mtimes(&paths);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = mtimes(&paths);
        if now == seen {
            continue;
        }
        seen = now;
        let p2 = paths.clone();
        match tokio::task::spawn_blocking(move || load_dump(&p2)).await {
            Ok(Ok(c)) => {
                tracing::info!(paths = ?paths, "dump changed; reloaded");
                set_model(&shared, c);
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "dump changed but cannot be read; keeping the previous one")
            }
            Err(_) => {}
        }
    }
}

/// How often Karpenter's metrics are scraped for prices and offering availability.
pub async fn start(
    input: Input,
    series_ttl: Duration,
    karpenter_service: Option<&crate::source::controller::ScrapeTarget>,
    hook: impl FnOnce(&Arc<Shared>),
) -> anyhow::Result<Arc<Shared>> {
    let shared = match input {
        Input::Dump(paths) => {
            let shared = Shared::new(&dump_name(&paths), series_ttl);
            hook(&shared);
            set_model(&shared, load_dump(&paths)?);
            shared.kinds.store(0, Ordering::SeqCst);
            tokio::spawn(follow_dump(shared.clone(), paths));
            shared
        }
        Input::Demo => {
            let shared = Shared::new("demo", series_ttl);
            hook(&shared);
            shared.log_findings.store(false, Ordering::Relaxed);
            let mut c = crate::demo::cluster()?;
            c.captured_at = Some(crate::demo::now());
            set_model(&shared, c);
            shared.kinds.store(0, Ordering::SeqCst);
            shared
        }
        Input::Live(target) => {
            let conn = Arc::new(live::connect(&target).await?);
            // Fail fast, with one clear line, when the cluster cannot be read at all.
            let api = live::discover(&conn).await?;
            tracing::info!(server = %conn.server, context = %conn.context, "watching");
            let shared = Shared::new(&conn.context, series_ttl);
            let _ = shared.conn.set(conn.clone());
            hook(&shared);
            if let Some(t) = karpenter_service {
                tokio::spawn(super::prices::scrape_prices(
                    shared.clone(),
                    conn.clone(),
                    t.clone(),
                ));
            }
            tokio::spawn(watch_cluster(shared.clone(), conn, api));
            shared
        }
    };
    tokio::spawn(super::analyse_forever(shared.clone()));
    tokio::spawn(super::watchdog(shared.clone()));
    Ok(shared)
}
