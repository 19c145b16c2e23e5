//! The history on disk: one SQLite database (`history.sqlite3`) in the state directory, in
//! WAL mode so that `kelp history` reads while serve writes, with a lock file that keeps a
//! second serve out. Rows are upserted by key in one transaction per batch; old rows go by
//! age and by size. A file that is not kelp's history, or is damaged, is moved aside (kept
//! for its owner) and a fresh store started, unless the caller asks to stop there.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{params, Connection, OpenFlags};

use super::record::{Kind, Record, Subject};

/// The database's file name in the state directory.
pub const FILE: &str = "history.sqlite3";
/// The lock file a running serve holds.
pub const LOCK: &str = "kelp.lock";
/// `PRAGMA application_id`: "kelp" in ASCII, so a foreign SQLite file is told apart.
const APPLICATION_ID: i32 = 0x6b65_6c70;
/// The schema's version (`PRAGMA user_version`).
const SCHEMA: i32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{dir} is in use by another kelp serve ({holder}); give each serve its own --state-dir"
    )]
    Locked { dir: PathBuf, holder: String },
    #[error("{path} is not kelp's history ({why})")]
    Foreign { path: PathBuf, why: String },
    #[error("no history in {0} (kelp serve --state-dir writes one)")]
    Missing(PathBuf),
}

/// What `open` did with a file it could not use.
#[derive(Debug, Clone, PartialEq)]
pub struct MovedAside {
    pub to: PathBuf,
    pub why: String,
}

/// A store open for writing: the connection and the lock, held while it lives.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    _lock: File,
}

fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sql {
        path: path.to_path_buf(),
        source,
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// Open (or create) the store in `dir` for writing, taking its lock. A file there that
    /// is not kelp's history or does not read back is moved aside and a fresh one started
    /// (returned as [`MovedAside`]), unless `strict`, which fails instead.
    pub fn open(dir: &Path, strict: bool) -> Result<(Store, Option<MovedAside>), StoreError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let lock = take_lock(dir)?;
        let path = dir.join(FILE);
        let mut moved = None;
        let conn = match open_checked(&path) {
            Ok(conn) => conn,
            Err(e @ StoreError::Foreign { .. }) if !strict => {
                let to = dir.join(format!(
                    "{FILE}.unreadable-{}",
                    Utc::now().format("%Y%m%dT%H%M%SZ")
                ));
                std::fs::rename(&path, &to).map_err(io(&path))?;
                for side in ["-wal", "-shm"] {
                    let _ = std::fs::remove_file(dir.join(format!("{FILE}{side}")));
                }
                moved = Some(MovedAside {
                    to,
                    why: e.to_string(),
                });
                open_checked(&path)?
            }
            Err(e) => return Err(e),
        };
        Ok((
            Store {
                conn,
                path,
                _lock: lock,
            },
            moved,
        ))
    }

    /// Write a batch in one transaction: a new key inserts, a known one updates the row's
    /// end, message and details (its start stays).
    pub fn write(&mut self, batch: &[Record]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(sql(&path))?;
        {
            let mut upsert = tx
                .prepare(
                    "INSERT INTO records (key, at, until, kind, what, object_kind, namespace, name, node, nodeclaim, nodepool, message, details)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                     ON CONFLICT(key) DO UPDATE SET
                       until = CASE WHEN kind = 'event'
                         THEN max(coalesce(excluded.until, excluded.at), coalesce(until, at))
                         ELSE excluded.until END,
                       message = excluded.message,
                       details = excluded.details, node = coalesce(excluded.node, node),
                       nodeclaim = coalesce(excluded.nodeclaim, nodeclaim), nodepool = coalesce(excluded.nodepool, nodepool)",
                )
                .map_err(sql(&path))?;
            for r in batch {
                let details = serde_json::to_string(&r.details).unwrap_or_else(|_| "{}".into());
                upsert
                    .execute(params![
                        r.key,
                        r.at.timestamp_millis(),
                        r.until.map(|t| t.timestamp_millis()),
                        r.kind.as_str(),
                        r.what,
                        r.object.kind,
                        r.object.namespace,
                        r.object.name,
                        r.node,
                        r.nodeclaim,
                        r.nodepool,
                        r.message,
                        details,
                    ])
                    .map_err(sql(&path))?;
            }
        }
        tx.commit().map_err(sql(&path))
    }

    /// Drop rows that ended (or began, if open) before `before`, then the oldest until
    /// the file is under `max_bytes`; returns how many went.
    pub fn prune(&mut self, before: DateTime<Utc>, max_bytes: u64) -> Result<usize, StoreError> {
        let path = self.path.clone();
        let mut gone = self
            .conn
            .execute(
                "DELETE FROM records WHERE coalesce(until, at) < ?1",
                params![before.timestamp_millis()],
            )
            .map_err(sql(&path))?;
        // Past the cap: the oldest tenth, again while it is still over.
        for _ in 0..64 {
            if self.bytes()? <= max_bytes {
                break;
            }
            let n = self
                .conn
                .execute(
                    "DELETE FROM records WHERE id IN (SELECT id FROM records ORDER BY coalesce(until, at) LIMIT max(1, (SELECT count(*) FROM records) / 10))",
                    [],
                )
                .map_err(sql(&path))?;
            gone += n;
            self.conn
                .execute_batch("PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);")
                .map_err(sql(&path))?;
            if n == 0 {
                break;
            }
        }
        if gone > 0 {
            self.conn
                .execute_batch("PRAGMA incremental_vacuum;")
                .map_err(sql(&path))?;
        }
        Ok(gone)
    }

    /// Cap the file at `pages` (SQLite's `max_page_count`): past it writes fail as on a full
    /// disk. For tests of that path.
    #[cfg(test)]
    pub fn cap_pages(&self, pages: u32) {
        let _: i64 = self
            .conn
            .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |r| {
                r.get(0)
            })
            .unwrap();
    }

    /// The database's size in use: its pages, less those free for reuse.
    pub fn bytes(&self) -> Result<u64, StoreError> {
        let pages: i64 = self
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .map_err(sql(&self.path))?;
        let free: i64 = self
            .conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .map_err(sql(&self.path))?;
        let pages = pages - free;
        let size: i64 = self
            .conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .map_err(sql(&self.path))?;
        Ok((pages.max(0) as u64) * (size.max(0) as u64))
    }

    /// The rows still open (an episode or finding not ended): what a restarted serve
    /// carries on from.
    pub fn open_rows(&self) -> Result<Vec<Record>, StoreError> {
        query(
            &self.conn,
            &self.path,
            "WHERE until IS NULL AND kind IN ('finding', 'pod')",
            &[],
        )
    }

    /// The NodeClaims with a `created` row and no `deleted` one.
    pub fn live_claims(&self) -> Result<Vec<Record>, StoreError> {
        query(
            &self.conn,
            &self.path,
            "WHERE kind = 'nodeclaim' AND what = 'created' AND NOT EXISTS
               (SELECT 1 FROM records d WHERE d.kind = 'nodeclaim' AND d.what = 'deleted' AND d.nodeclaim = records.nodeclaim)",
            &[],
        )
    }
}

/// Take the directory's lock, writing who holds it; fail naming the holder if another has it.
fn take_lock(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    match file.try_lock() {
        Ok(()) => {
            let me = format!(
                "pid {} on {}",
                std::process::id(),
                std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_else(|_| "this host".into())
            );
            file.set_len(0).map_err(io(&path))?;
            file.write_all(me.as_bytes()).map_err(io(&path))?;
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path)
                .ok()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "holder unknown".into());
            Err(StoreError::Locked {
                dir: dir.to_path_buf(),
                holder: holder.trim().to_string(),
            })
        }
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::Io { path, source: e }),
    }
}

/// Open the database, creating the schema in a new file; a file that is not ours or does
/// not pass SQLite's own check is [`StoreError::Foreign`].
fn open_checked(path: &Path) -> Result<Connection, StoreError> {
    let foreign = |why: String| StoreError::Foreign {
        path: path.to_path_buf(),
        why,
    };
    let conn = Connection::open(path).map_err(|e| foreign(e.to_string()))?;
    let check = || -> rusqlite::Result<Result<(), String>> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if id == 0 && tables == 0 {
            // New: the settings that only take before the first table.
            conn.execute_batch(&format!(
                "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA application_id = {APPLICATION_ID};"
            ))?;
        } else if id != APPLICATION_ID {
            return Ok(Err(format!("application_id {id:#x}, not kelp's")));
        }
        let ok: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if ok != "ok" {
            return Ok(Err(format!("SQLite's quick_check says: {ok}")));
        }
        let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA {
            return Ok(Err(format!(
                "written by a newer kelp (schema {version}, this one knows {SCHEMA})"
            )));
        }
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS records (
               id INTEGER PRIMARY KEY,
               key TEXT NOT NULL UNIQUE,
               at INTEGER NOT NULL,
               until INTEGER,
               kind TEXT NOT NULL,
               what TEXT NOT NULL,
               object_kind TEXT NOT NULL,
               namespace TEXT,
               name TEXT NOT NULL,
               node TEXT,
               nodeclaim TEXT,
               nodepool TEXT,
               message TEXT NOT NULL,
               details TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS records_at ON records (coalesce(until, at));
             CREATE INDEX IF NOT EXISTS records_name ON records (name, at);
             CREATE INDEX IF NOT EXISTS records_node ON records (node, at);
             CREATE INDEX IF NOT EXISTS records_claim ON records (nodeclaim, at);
             CREATE INDEX IF NOT EXISTS records_pool ON records (nodepool, at);
             PRAGMA user_version = {SCHEMA};"
        ))?;
        Ok(Ok(()))
    };
    match check() {
        Ok(Ok(())) => Ok(conn),
        Ok(Err(why)) => Err(foreign(why)),
        // "file is not a database", a damaged header: not ours to read.
        Err(e) => Err(foreign(e.to_string())),
    }
}

/// The subject a query asks about.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    Node(String),
    NodeClaim(String),
    /// `namespace/name`, or a name alone in any namespace.
    Pod(Option<String>, String),
    NodePool(String),
    Cluster,
}

/// Read the store in `dir` without taking its lock (a running serve may hold it): the rows
/// about `ask` from `since` on, oldest first, at most `limit`.
pub fn read(
    dir: &Path,
    ask: &Ask,
    since: Option<DateTime<Utc>>,
    limit: usize,
) -> Result<Vec<Record>, StoreError> {
    let path = dir.join(FILE);
    if !path.exists() {
        return Err(StoreError::Missing(dir.to_path_buf()));
    }
    let conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql(&path))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(sql(&path))?;
    let id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(|e| StoreError::Foreign {
            path: path.clone(),
            why: e.to_string(),
        })?;
    if id != APPLICATION_ID {
        return Err(StoreError::Foreign {
            path,
            why: format!("application_id {id:#x}, not kelp's"),
        });
    }
    let since = since.map_or(i64::MIN, |t| t.timestamp_millis());
    let (filter, args): (&str, Vec<String>) = match ask {
        // A node's rows and its NodeClaim's (rows written before the claim had a node
        // name only the claim), and the other way round.
        Ask::Node(n) => (
            "(node = ?2 OR (object_kind = 'Node' AND name = ?2) OR nodeclaim IN
               (SELECT nodeclaim FROM records WHERE node = ?2 AND nodeclaim IS NOT NULL))",
            vec![n.clone()],
        ),
        Ask::NodeClaim(n) => (
            "(nodeclaim = ?2 OR (object_kind = 'NodeClaim' AND name = ?2) OR node IN
               (SELECT node FROM records WHERE nodeclaim = ?2 AND node IS NOT NULL))",
            vec![n.clone()],
        ),
        Ask::Pod(Some(ns), n) => (
            "object_kind = 'Pod' AND namespace = ?3 AND name = ?2",
            vec![n.clone(), ns.clone()],
        ),
        Ask::Pod(None, n) => ("object_kind = 'Pod' AND name = ?2", vec![n.clone()]),
        Ask::NodePool(p) => (
            "(nodepool = ?2 OR (object_kind = 'NodePool' AND name = ?2))",
            vec![p.clone()],
        ),
        Ask::Cluster => ("1", vec![]),
    };
    let clause = format!(
        "WHERE coalesce(until, at) >= ?1 AND {filter} ORDER BY at, id LIMIT {}",
        limit.min(i64::MAX as usize)
    );
    let mut all: Vec<&dyn rusqlite::ToSql> = vec![&since];
    for a in &args {
        all.push(a);
    }
    query(&conn, &path, &clause, &all)
}

/// The rows of `rows` about `ask` from `since` on, as [`read`] selects them from a store:
/// for a history carried in a dump (`kelp snapshot --history`).
pub fn select(rows: &[Record], ask: &Ask, since: Option<DateTime<Utc>>) -> Vec<Record> {
    use std::collections::HashSet;
    let eq = |a: &Option<String>, b: &str| a.as_deref() == Some(b);
    // A node's claims (and a claim's nodes), from any row that names both.
    let linked: HashSet<&str> = match ask {
        Ask::Node(n) => rows
            .iter()
            .filter(|r| eq(&r.node, n))
            .filter_map(|r| r.nodeclaim.as_deref())
            .collect(),
        Ask::NodeClaim(n) => rows
            .iter()
            .filter(|r| eq(&r.nodeclaim, n))
            .filter_map(|r| r.node.as_deref())
            .collect(),
        _ => HashSet::new(),
    };
    let is = |r: &Record, kind: &str, name: &str| r.object.kind == kind && r.object.name == name;
    let mut out: Vec<Record> = rows
        .iter()
        .filter(|r| since.is_none_or(|s| r.until.unwrap_or(r.at) >= s))
        .filter(|r| match ask {
            Ask::Node(n) => {
                eq(&r.node, n)
                    || is(r, "Node", n)
                    || r.nodeclaim.as_deref().is_some_and(|c| linked.contains(c))
            }
            Ask::NodeClaim(n) => {
                eq(&r.nodeclaim, n)
                    || is(r, "NodeClaim", n)
                    || r.node.as_deref().is_some_and(|c| linked.contains(c))
            }
            Ask::Pod(ns, n) => {
                is(r, "Pod", n) && ns.as_deref().is_none_or(|ns| eq(&r.object.namespace, ns))
            }
            Ask::NodePool(p) => eq(&r.nodepool, p) || is(r, "NodePool", p),
            Ask::Cluster => true,
        })
        .cloned()
        .collect();
    out.sort_by(|a, b| a.at.cmp(&b.at));
    out
}

fn query(
    conn: &Connection,
    path: &Path,
    clause: &str,
    args: &[&dyn rusqlite::ToSql],
) -> Result<Vec<Record>, StoreError> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT key, at, until, kind, what, object_kind, namespace, name, node, nodeclaim, nodepool, message, details FROM records {clause}"
        ))
        .map_err(sql(path))?;
    let time = |ms: i64| Utc.timestamp_millis_opt(ms).single().unwrap_or_default();
    let rows = stmt
        .query_map(args, |r| {
            let kind: String = r.get(3)?;
            let details: String = r.get(12)?;
            Ok(Record {
                key: r.get(0)?,
                at: time(r.get(1)?),
                until: r.get::<_, Option<i64>>(2)?.map(time),
                kind: Kind::parse(&kind).unwrap_or(Kind::Event),
                what: r.get(4)?,
                object: Subject {
                    kind: r.get(5)?,
                    namespace: r.get(6)?,
                    name: r.get(7)?,
                },
                node: r.get(8)?,
                nodeclaim: r.get(9)?,
                nodepool: r.get(10)?,
                message: r.get(11)?,
                details: serde_json::from_str(&details).unwrap_or_default(),
            })
        })
        .map_err(sql(path))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(sql(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn row(key: &str, at: DateTime<Utc>, what: &str, node: &str) -> Record {
        let mut r = Record::new(
            key.into(),
            at,
            Kind::Event,
            what,
            Subject {
                kind: "Node".into(),
                namespace: None,
                name: node.into(),
            },
        );
        r.node = Some(node.into());
        r
    }

    fn t(h: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap() + Duration::hours(h)
    }

    #[test]
    fn rows_upsert_by_key_and_read_back_by_subject_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, moved) = Store::open(dir.path(), false).unwrap();
        assert!(moved.is_none());
        s.write(&[
            row("e/1", t(0), "Unconsolidatable", "n1"),
            row("e/2", t(1), "Evicted", "n2"),
        ])
        .unwrap();
        // The same key later: its end and message move, its start stays.
        let mut again = row("e/1", t(5), "Unconsolidatable", "n1");
        again.until = Some(t(6));
        again.message = "Can't replace with a cheaper node".into();
        again.details.insert("count".into(), "4".into());
        s.write(&[again]).unwrap();
        let rows = read(dir.path(), &Ask::Node("n1".into()), None, 100).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!((rows[0].at, rows[0].until), (t(0), Some(t(6))));
        assert_eq!(rows[0].details["count"], "4");
        assert_eq!(rows[0].message, "Can't replace with a cheaper node");
        // Since: a row that ended before is left out, the whole cluster otherwise.
        assert_eq!(
            read(dir.path(), &Ask::Cluster, Some(t(2)), 100)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(read(dir.path(), &Ask::Cluster, None, 100).unwrap().len(), 2);
        assert_eq!(read(dir.path(), &Ask::Cluster, None, 1).unwrap().len(), 1);
        // A claim's row from before it had a node is the node's history too, once a row
        // ties the two.
        let mut created = row("c/1", t(-1), "created", "c1");
        created.object.kind = "NodeClaim".into();
        (created.node, created.nodeclaim) = (None, Some("c1".into()));
        let mut launched = created.clone();
        (launched.key, launched.what, launched.node) =
            ("c/2".into(), "launched".into(), Some("n1".into()));
        s.write(&[created, launched]).unwrap();
        let rows = read(dir.path(), &Ask::Node("n1".into()), None, 100).unwrap();
        let whats: Vec<&str> = rows.iter().map(|r| r.what.as_str()).collect();
        assert_eq!(whats, ["created", "launched", "Unconsolidatable"]);
        assert_eq!(
            read(dir.path(), &Ask::NodeClaim("c1".into()), None, 100)
                .unwrap()
                .len(),
            3
        );
    }

    #[test]
    fn a_dumps_rows_are_selected_as_the_store_selects_them() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _) = Store::open(dir.path(), false).unwrap();
        let mut rows = vec![
            row("e/1", t(0), "Unconsolidatable", "n1"),
            row("e/2", t(1), "Evicted", "n2"),
        ];
        let mut created = row("c/1", t(-1), "created", "c1");
        created.object.kind = "NodeClaim".into();
        (created.node, created.nodeclaim, created.nodepool) =
            (None, Some("c1".into()), Some("p".into()));
        let mut launched = created.clone();
        (launched.key, launched.what, launched.node) =
            ("c/2".into(), "launched".into(), Some("n1".into()));
        let mut pod = row("p/1", t(2), "pending", "x");
        pod.object = Subject {
            kind: "Pod".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        pod.node = None;
        rows.extend([created, launched, pod]);
        s.write(&rows).unwrap();
        let stored = read(dir.path(), &Ask::Cluster, None, 100).unwrap();
        for ask in [
            Ask::Node("n1".into()),
            Ask::Node("n2".into()),
            Ask::NodeClaim("c1".into()),
            Ask::NodePool("p".into()),
            Ask::Pod(Some("shop".into()), "web".into()),
            Ask::Pod(None, "web".into()),
            Ask::Pod(Some("other".into()), "web".into()),
            Ask::Cluster,
        ] {
            for since in [None, Some(t(1))] {
                let keys = |v: Vec<Record>| v.into_iter().map(|r| r.key).collect::<Vec<_>>();
                assert_eq!(
                    keys(select(&stored, &ask, since)),
                    keys(read(dir.path(), &ask, since, 100).unwrap()),
                    "{ask:?} since {since:?}"
                );
            }
        }
    }

    #[test]
    fn prune_drops_rows_by_age_then_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _) = Store::open(dir.path(), false).unwrap();
        let rows: Vec<Record> = (0..2000)
            .map(|i| {
                let mut r = row(&format!("e/{i}"), t(i), "Evicted", "n1");
                r.message = "x".repeat(400);
                r
            })
            .collect();
        s.write(&rows).unwrap();
        assert_eq!(s.prune(t(100), u64::MAX).unwrap(), 100);
        let before = s.bytes().unwrap();
        let gone = s.prune(t(0), before / 2).unwrap();
        assert!(
            gone > 0 && s.bytes().unwrap() <= before / 2,
            "{gone} {}",
            s.bytes().unwrap()
        );
        // The newest stay.
        let left = read(dir.path(), &Ask::Cluster, None, 10_000).unwrap();
        assert_eq!(left.last().map(|r| r.key.as_str()), Some("e/1999"));
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let (_s, _) = Store::open(dir.path(), false).unwrap();
        let Err(e) = Store::open(dir.path(), false) else {
            panic!("a second store opened on a locked directory");
        };
        let text = e.to_string();
        assert!(
            text.contains("in use by another kelp serve")
                && text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
    }

    #[test]
    fn a_foreign_or_damaged_file_is_moved_aside_or_refused_when_strict() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE),
            b"not a database, but someone's notes",
        )
        .unwrap();
        let e = Store::open(dir.path(), true).err().expect("strict refuses");
        assert!(e.to_string().contains("is not kelp's history"), "{e}");
        let (mut s, moved) = Store::open(dir.path(), false).unwrap();
        let moved = moved.expect("moved aside");
        assert_eq!(
            std::fs::read(&moved.to).unwrap(),
            b"not a database, but someone's notes"
        );
        s.write(&[row("e/1", t(0), "Evicted", "n1")]).unwrap();
        drop(s);
        // Another program's SQLite database: not ours either.
        let other = tempfile::tempdir().unwrap();
        let c = Connection::open(other.path().join(FILE)).unwrap();
        c.execute_batch("CREATE TABLE notes (x TEXT);").unwrap();
        drop(c);
        let e = Store::open(other.path(), true).err().expect("not ours");
        assert!(e.to_string().contains("application_id"), "{e}");
        let e = read(other.path(), &Ask::Cluster, None, 10)
            .err()
            .expect("not ours");
        assert!(e.to_string().contains("not kelp's"), "{e}");
        let e = read(&other.path().join("nothing"), &Ask::Cluster, None, 10)
            .err()
            .expect("missing");
        assert!(e.to_string().contains("no history in"), "{e}");
    }
}
