//! Dumps as `kubectl get ... -o yaml|json` writes them: a `v1/List`, a multi-document
//! YAML stream, JSON objects (one or several), or folders of such files, or stdin (`-`).
//!
//! JSON is parsed in one pass straight into the trimmed projections ([`super::json`]): a
//! file is mapped into memory and parsed in place, and its pages are let go behind the
//! parser, so a dump of any size costs little more resident memory than the model kelp
//! keeps of it. Gzip files (`.gz`, or any file that starts like one) and stdin are
//! streamed. YAML is cut into its objects, each parsed alone through a generic value
//! ([`super::yaml`]). Where the objects go is [`super::ingest`]'s. All are held to
//! [`limits`].

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use chrono::{DateTime, Utc};

pub use super::ingest::{
    LoadNotes, CAPTURED_AT, CATALOG, HISTORY, KARPENTER_METRICS, OBJECTS_READ,
};
use super::json;
use super::limits::{self, JsonGuard, Limit};
use super::yaml;
use crate::model::*;
use crate::source::error::{Error, Result};

/// A `v1/List` of `items` as `kelp snapshot` writes it, stamped with its capture time.
pub fn snapshot_list(
    items: Vec<serde_json::Value>,
    captured_at: DateTime<Utc>,
) -> serde_json::Value {
    let at = captured_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {CAPTURED_AT: at}},
        "items": items,
    })
}

/// Load files and folders (recursively: `*.yaml`, `*.yml`, `*.json`, and each of them
/// gzipped, `*.json.gz`); `-` reads stdin. Files are mapped into memory (see
/// [`load_paths_copied`] for files that may be rewritten while they are read).
pub fn load_paths(paths: &[PathBuf], cluster: &mut Cluster) -> Result<LoadNotes> {
    load_all(paths, Reading::Mapped, cluster)
}

/// As [`load_paths`], but each file is read into memory first, never mapped: for a file
/// that may be rewritten while it is read (`kelp serve --from` reloads a dump when it
/// changes), which a mapping would turn into a crash (SIGBUS) when it shrinks.
pub fn load_paths_copied(paths: &[PathBuf], cluster: &mut Cluster) -> Result<LoadNotes> {
    load_all(paths, Reading::Copied, cluster)
}

/// How a plain (not gzipped) file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Mapped,
    Copied,
}

fn load_all(paths: &[PathBuf], reading: Reading, cluster: &mut Cluster) -> Result<LoadNotes> {
    bulk(cluster, |cluster, notes| {
        for path in paths {
            if path.as_os_str() == "-" {
                use std::io::BufRead;
                let mut stdin = std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock());
                let gzip = stdin
                    .fill_buf()
                    .map_err(read_error(path))?
                    .starts_with(&GZIP_MAGIC);
                if gzip {
                    load_gzip("<stdin>", stdin, read_error(path), cluster, notes)?;
                } else {
                    load_reader("<stdin>", stdin, 0, read_error(path), cluster, notes)?;
                }
                continue;
            }
            for file in dump_files(path).map_err(|(path, source)| Error::Read { path, source })? {
                load_file(&file, reading, cluster, notes)?;
            }
        }
        Ok(())
    })
}

/// Run a load as one bulk load of the model ([`Cluster::begin_load`]), ending it (and
/// packing the model) whether or not it fails part way.
fn bulk(
    cluster: &mut Cluster,
    load: impl FnOnce(&mut Cluster, &mut LoadNotes) -> Result<()>,
) -> Result<LoadNotes> {
    let mut notes = LoadNotes::default();
    cluster.begin_load();
    let loaded = load(cluster, &mut notes);
    cluster.compact();
    loaded.map(|()| notes)
}

/// The two bytes every gzip stream starts with.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Load one file: JSON parsed in place (mapped, or read whole), gzip and YAML as streams.
fn load_file(
    file: &Path,
    reading: Reading,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    use std::io::Read;
    let name = file.display().to_string();
    let mut f = std::fs::File::open(file).map_err(read_error(file))?;
    let meta = f.metadata().map_err(read_error(file))?;
    let (size, regular) = (meta.len(), meta.is_file());
    // The first two bytes say gzip or not. Anything streamed (gzip, a pipe, a FIFO, a
    // device) gets them put back in front, as a stream cannot seek back; a regular file is
    // parsed in place from its start.
    let mut magic = Vec::with_capacity(2);
    (&mut f)
        .take(2)
        .read_to_end(&mut magic)
        .map_err(read_error(file))?;
    let gzip = magic == GZIP_MAGIC;
    let streamed = || std::io::Cursor::new(magic.clone()).chain(&f);
    if gzip {
        let compressed = std::io::BufReader::with_capacity(1 << 16, streamed());
        return load_gzip(&name, compressed, read_error(file), cluster, notes);
    }
    if !regular || size == 0 {
        let reader = std::io::BufReader::with_capacity(1 << 20, streamed());
        return load_reader(&name, reader, size, read_error(file), cluster, notes);
    }
    std::io::Seek::rewind(&mut f).map_err(read_error(file))?;
    match reading {
        Reading::Mapped => {
            // SAFETY: the mapping is read only, and only while this function runs. A file
            // truncated meanwhile would fault (SIGBUS); `load_paths_copied` is for files
            // that may be rewritten while they are read.
            let map = unsafe { memmap2::Mmap::map(&f) }.map_err(read_error(file))?;
            let _ = map.advise(memmap2::Advice::Sequential);
            load_bytes(&name, &map, Some(&map), read_error(file), cluster, notes)
        }
        Reading::Copied => {
            let mut bytes = Vec::with_capacity(size as usize);
            f.read_to_end(&mut bytes).map_err(read_error(file))?;
            load_bytes(&name, &bytes, None, read_error(file), cluster, notes)
        }
    }
}

/// Load a gzip stream (a `.gz` file, or gzip on stdin): its content is streamed.
fn load_gzip(
    name: &str,
    compressed: impl std::io::BufRead,
    io_error: impl Fn(std::io::Error) -> Error,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    let decoder = flate2::bufread::MultiGzDecoder::new(compressed);
    let reader = std::io::BufReader::with_capacity(1 << 20, decoder);
    load_reader(name, reader, 0, io_error, cluster, notes)
}

/// How many bytes behind the parser a mapped file's pages are let go, at a time.
const RELEASE_BEHIND: usize = 32 << 20;

/// Load a whole input held in memory: JSON parsed in place, anything else as YAML (whose
/// size is capped). `map`, when the bytes are a mapped file, has its pages let go behind
/// the parser as it goes.
fn load_bytes(
    name: &str,
    bytes: &[u8],
    map: Option<&memmap2::Mmap>,
    io_error: impl Fn(std::io::Error) -> Error,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    let before = notes.seen();
    let json = bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'['));
    if let (true, Some(map)) = (json, map) {
        // Let the pages behind the parser go, RELEASE_BEHIND at a time.
        let base = bytes.as_ptr() as usize;
        let mut released = 0usize;
        let mut release = |at: *const u8| {
            let at = (at as usize).saturating_sub(base);
            if at >= released + RELEASE_BEHIND && at <= bytes.len() {
                let page = 4096;
                let upto = at / page * page;
                // SAFETY: a read-only private file mapping: its pages come back from the
                // file if touched again, and nothing before `at` is read again.
                let _ = unsafe {
                    map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        released,
                        upto - released,
                    )
                };
                released = upto;
            }
        };
        load_json(name, bytes, Some(&mut release), Parts::Once, cluster, notes)?;
    } else if json {
        load_json(name, bytes, None, Parts::Once, cluster, notes)?;
    } else {
        if bytes.len() as u64 > limits::MAX_WHOLE_BYTES {
            return Err(Error::Limit {
                path: name.to_string(),
                limit: Limit::YamlSize,
            });
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| io_error(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        yaml::load(name, text, cluster, notes)?;
    }
    some_loaded(name, before, notes)
}

/// An input in which no object was met, of the `before` met before it, is an error.
fn some_loaded(name: &str, before: usize, notes: &LoadNotes) -> Result<()> {
    if notes.seen() == before {
        return Err(Error::Empty {
            path: name.to_string(),
        });
    }
    Ok(())
}

fn read_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// Load a stream (stdin, a gzip file, a pipe) of about `size` bytes: JSON is parsed as it
/// is read (memory holds the model and one item at a time, never the whole input); YAML
/// is read whole, up to [`limits::MAX_WHOLE_BYTES`].
fn load_reader(
    name: &str,
    mut reader: impl std::io::BufRead,
    size: u64,
    io_error: impl Fn(std::io::Error) -> Error,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    // Look past leading blanks to see whether JSON starts (consuming them only when a
    // whole buffer holds nothing else, and counting their lines for error messages).
    let mut skipped_lines = 0;
    let json = loop {
        let buf = reader.fill_buf().map_err(&io_error)?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => break matches!(buf[i], b'{' | b'['),
            None if buf.is_empty() => break false,
            None => {
                let n = buf.len();
                skipped_lines += buf.iter().filter(|b| **b == b'\n').count();
                reader.consume(n);
            }
        }
    };
    if !json {
        let bytes = limits::read_at_most(reader, limits::MAX_WHOLE_BYTES, size)
            .map_err(&io_error)?
            .ok_or_else(|| Error::Limit {
                path: name.to_string(),
                limit: Limit::YamlSize,
            })?;
        let text = String::from_utf8(bytes)
            .map_err(|e| io_error(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        let text = match skipped_lines {
            0 => text,
            n => "\n".repeat(n) + &text,
        };
        return load_into(name, &text, Parts::Once, cluster, notes);
    }
    let before = notes.seen();
    let guard = Rc::new(RefCell::new(JsonGuard::stream(skipped_lines + 1)));
    let guarded = Guarded {
        inner: reader,
        guard: guard.clone(),
    };
    // The guard reads a chunk ahead of serde_json, which reads a byte at a time.
    let reader = std::io::BufReader::with_capacity(1 << 16, guarded);
    let mut ctx = json::Ctx::new(name, cluster, notes);
    ctx.lines_before = skipped_lines;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let read = json::read(&mut ctx, &mut de);
    // A limit the guard stopped the input at is the error, whatever the parser made of it.
    if let Some(limit) = guard.borrow_mut().take_failure() {
        return Err(Error::Limit {
            path: name.to_string(),
            limit,
        });
    }
    if let Err(e) = read {
        return Err(ctx.error(e));
    }
    some_loaded(name, before, notes)
}

/// A reader whose bytes pass a [`JsonGuard`], a chunk at a time, before anything parses them.
struct Guarded<R> {
    inner: R,
    guard: Rc<RefCell<JsonGuard>>,
}

impl<R: std::io::Read> std::io::Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.guard
            .borrow_mut()
            .feed(&buf[..n])
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(n)
    }
}

/// Load one document set from text; `name` labels errors.
pub fn load_str(name: &str, text: &str, cluster: &mut Cluster) -> Result<LoadNotes> {
    bulk(cluster, |cluster, notes| {
        load_into(name, text, Parts::Once, cluster, notes)
    })
}

/// [`load_str`], with every part of every object parsed as it comes (no
/// [`crate::model::memo`]): what tests and fuzzing compare `load_str` with.
#[doc(hidden)]
pub fn load_str_parsing_each_part(
    name: &str,
    text: &str,
    cluster: &mut Cluster,
) -> Result<LoadNotes> {
    bulk(cluster, |cluster, notes| {
        load_into(name, text, Parts::EachParsed, cluster, notes)
    })
}

/// Tag an I/O error with the path it came from.
fn at(p: &Path) -> impl FnOnce(std::io::Error) -> (PathBuf, std::io::Error) + '_ {
    move |e| (p.to_path_buf(), e)
}

/// A manifest's name: `*.yaml`, `*.yml` or `*.json`.
fn is_manifest(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// `path` itself, or the `*.yaml`, `*.yml` and `*.json` files below it (recursively,
/// sorted). An error carries the path that could not be read, for the caller's own error.
pub(crate) fn manifest_files(
    path: &Path,
) -> std::result::Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    files_below(path, is_manifest)
}

/// As [`manifest_files`], and gzipped manifests (`*.json.gz`, ...) too: what a dump folder
/// (a support bundle) holds.
fn dump_files(path: &Path) -> std::result::Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    files_below(path, |p| {
        is_manifest(p)
            || (p.extension().is_some_and(|e| e == "gz")
                && p.file_stem().is_some_and(|s| is_manifest(Path::new(s))))
    })
}

fn files_below(
    path: &Path,
    keep: impl Fn(&Path) -> bool,
) -> std::result::Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    if !std::fs::metadata(path).map_err(at(path))?.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(at(&dir))? {
            let p = entry.map_err(at(&dir))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn load_into(
    name: &str,
    text: &str,
    parts: Parts,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    let before = notes.seen();
    let first = text.trim_start().chars().next();
    if matches!(first, Some('{' | '[')) {
        load_json(name, text.as_bytes(), None, parts, cluster, notes)?;
    } else {
        yaml::load(name, text, cluster, notes)?;
    }
    some_loaded(name, before, notes)
}

// ------------------------------------------------------------------ JSON

/// How the parts replicas share (containers, tolerations, labels, ...) are read.
#[derive(Clone, Copy, PartialEq)]
enum Parts {
    /// Once per distinct text ([`crate::model::memo`]).
    Once,
    /// Each as it comes.
    EachParsed,
}

/// JSON already in memory (a mapped file, a buffer, text), parsed in place; `progress` is
/// told where each object started (see [`json::Ctx::progress`]).
///
/// With [`Parts::Once`], a part that fails to read has the whole input read again, each
/// part as it comes: the error then names the fault's own line and column, not the part's
/// end; and a part the memo could not take as text (bytes that are not UTF-8, in a string
/// the projection skips) is read as before. The second read applies the objects again by
/// name, as a watch would; what the first one counted and listed is undone first.
fn load_json<'a>(
    name: &'a str,
    bytes: &[u8],
    mut progress: Option<&'a mut dyn FnMut(*const u8)>,
    parts: Parts,
    cluster: &'a mut Cluster,
    notes: &'a mut LoadNotes,
) -> Result<()> {
    if parts == Parts::EachParsed {
        return parse_json(name, bytes, progress, cluster, notes);
    }
    let (notes_before, legacy_before) = (notes.clone(), cluster.api.legacy_objects.len());
    let memo = crate::model::memo::scope();
    let told = progress
        .as_mut()
        .map(|p| &mut **p as &mut dyn FnMut(*const u8));
    let first = parse_json(name, bytes, told, &mut *cluster, &mut *notes);
    if first.is_err() && memo.failed() {
        drop(memo);
        *notes = notes_before;
        cluster.api.legacy_objects.truncate(legacy_before);
        return parse_json(name, bytes, progress, cluster, notes);
    }
    first
}

fn parse_json<'a>(
    name: &'a str,
    bytes: &[u8],
    progress: Option<&'a mut dyn FnMut(*const u8)>,
    cluster: &'a mut Cluster,
    notes: &'a mut LoadNotes,
) -> Result<()> {
    let mut ctx = json::Ctx::new(name, cluster, notes);
    ctx.progress = progress;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    json::read(&mut ctx, &mut de).map_err(|e| ctx.error(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\n  namespace: shop\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{}'\n    karpenter.sh/do-not-disrupt: \"true\"\nspec:\n  nodeName: n1\n  containers: [{name: app, resources: {requests: {cpu: 250m}}}]\n";

    #[test]
    fn yaml_documents_json_lists_and_json_streams_load_the_same_pod() {
        let yaml =
            format!("{POD_YAML}---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n");
        let mut a = Cluster::default();
        let notes = load_str("a.yaml", &yaml, &mut a).unwrap();
        assert_eq!(notes.loaded, 1);
        assert_eq!(notes.skipped.get("ConfigMap"), Some(&1));

        let pod: serde_json::Value = serde_norway::from_str(POD_YAML).unwrap();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [pod.clone()]});
        let mut b = Cluster::default();
        load_str("b.json", &list.to_string(), &mut b).unwrap();
        let mut c = Cluster::default();
        load_str("c.json", &format!("{pod}\n{pod}"), &mut c).unwrap();
        for cl in [&a, &b, &c] {
            let p = &cl.pods[&("shop".to_string(), "web-1".to_string())];
            assert_eq!(
                p.metadata.annotations.len(),
                1,
                "only karpenter annotations are kept"
            );
            assert_eq!(cl.pods_on("n1").count(), 1);
        }
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let mut c = Cluster::default();
        let e = load_str("bad.json", "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":3}}]}", &mut c).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("bad.json: line 2"), "{msg}");
        let e = load_str("bad.yaml", "kind: Pod\n  nope: [\n", &mut c).unwrap_err();
        assert!(e.to_string().starts_with("bad.yaml: line"), "{e}");
        let e = load_str("empty.yaml", "# nothing\n", &mut c).unwrap_err();
        assert!(e.to_string().contains("no Kubernetes objects"), "{e}");
    }

    #[test]
    fn streamed_files_load_like_text_and_keep_exact_error_lines() {
        let dir = tempfile::tempdir().unwrap();
        let pod: serde_json::Value = serde_norway::from_str(POD_YAML).unwrap();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [pod.clone(), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}],
            "metadata": {"annotations": {CAPTURED_AT: "2026-11-21T10:00:00Z"}}});
        let cases = [
            ("list.json", serde_json::to_string_pretty(&list).unwrap()),
            ("stream.json", format!("  \n{pod}\n{pod}")),
            (
                "array.json",
                serde_json::Value::Array(vec![pod.clone()]).to_string(),
            ),
            ("single.json", pod.to_string()),
        ];
        for (file, text) in cases {
            let path = dir.path().join(file);
            std::fs::write(&path, &text).unwrap();
            let (mut streamed, mut whole) = (Cluster::default(), Cluster::default());
            load_paths(&[path], &mut streamed).unwrap();
            load_str(file, &text, &mut whole).unwrap();
            assert_eq!(streamed.counts(), whole.counts(), "{file}");
            assert_eq!(streamed.captured_at, whole.captured_at, "{file}");
            assert_eq!(streamed.pods_on("n1").count(), 1, "{file}");
        }
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"kind\": \"List\", \"apiVersion\": \"v1\", \"items\": [\n\n{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": 3}}]}").unwrap();
        let e = load_paths(&[bad], &mut Cluster::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.json: line 3"), "{e}");
        let empty = dir.path().join("empty.json");
        std::fs::write(
            &empty,
            "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": null}",
        )
        .unwrap();
        assert!(load_paths(&[empty], &mut Cluster::default())
            .unwrap_err()
            .to_string()
            .contains("no Kubernetes objects"));
    }

    /// Run `f` on a thread with tokio's blocking-thread stack (2 MiB), as `serve` reloads.
    fn on_2_mib_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .expect("no panic")
    }

    fn nest(open: &str, inner: &str, close: &str, n: usize) -> String {
        format!("{}{inner}{}", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn every_loader_fits_a_2_mib_stack_at_the_deepest_it_reads() {
        use limits::MAX_DEPTH;
        const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#;
        // Each case is exactly MAX_DEPTH deep, then one level deeper.
        let cases = |extra: usize| {
            let d = MAX_DEPTH + extra;
            vec![
                ("arrays.json", nest("[", POD, "]", d - 2)),
                (
                    "field.json",
                    POD.replace(
                        r#""a"}"#,
                        &format!(r#""a","x":{}}}"#, nest("[", "", "]", d - 2)),
                    ),
                ),
                (
                    "seqs.yaml",
                    format!(
                        "{}apiVersion: v1\n{indent}kind: Pod\n{indent}metadata: {{name: a}}\n",
                        "- ".repeat(d - 2),
                        indent = " ".repeat(2 * (d - 2))
                    ),
                ),
                (
                    "flow.yaml",
                    format!(
                        "apiVersion: v1\nkind: Pod\nmetadata: {{name: a}}\nspec: {{x: {}}}\n",
                        nest("[", "", "]", d - 2)
                    ),
                ),
                (
                    "block.yaml",
                    format!(
                        "apiVersion: v1\nkind: Pod\nmetadata: {{name: a}}\nspec:\n{}",
                        (1..d)
                            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                            .collect::<String>()
                    ),
                ),
            ]
        };
        for (name, text) in cases(0) {
            let got = on_2_mib_stack(move || load_str(name, &text, &mut Cluster::default()));
            assert!(got.as_ref().is_ok_and(|n| n.loaded == 1), "{name}: {got:?}");
        }
        for (name, text) in cases(1) {
            let got = on_2_mib_stack(move || load_str(name, &text, &mut Cluster::default()));
            if name == "field.json" {
                // A field kelp does not read is passed over without recursion: any depth.
                assert!(got.is_ok_and(|n| n.loaded == 1), "{name}");
                continue;
            }
            let e = got.map(|_| ()).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{name}: line ")), "{e}");
            assert!(
                e.ends_with(&format!(
                    "nested deeper than {MAX_DEPTH} levels, the most kelp reads"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn a_dump_rewritten_5000_deep_is_an_error_on_a_2_mib_stack() {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in [
            ("deep.json", nest("[", "", "]", 5000)),
            ("deep.yaml", "- ".repeat(5000) + "x\n"),
            ("flow.yaml", format!("a: {}", nest("[", "", "]", 5000))),
        ] {
            let path = dir.path().join(file);
            std::fs::write(&path, text).unwrap();
            let e = on_2_mib_stack(move || load_paths(&[path], &mut Cluster::default()))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!(
                    "{file}: line 1: nested deeper than {}",
                    limits::MAX_DEPTH
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn lone_objects_and_leading_blank_lines_keep_their_error_lines() {
        let dir = tempfile::tempdir().unwrap();
        let pod = "\n\n{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"metadata\": {\n    \"name\": \"p\",\n    \"labels\": {\n      \"a\": 3\n    }\n  }\n}\n";
        let path = dir.path().join("one.json");
        std::fs::write(&path, pod).unwrap();
        let e = load_paths(&[path], &mut Cluster::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("one.json: line 9"), "{e}");
        let e = load_str("one.json", pod, &mut Cluster::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("one.json: line 9"), "{e}");
        // YAML after blank lines, indented: the lines are the file's.
        let path = dir.path().join("one.yaml");
        std::fs::write(
            &path,
            "\n\n  kind: Pod\n  apiVersion: v1\n  metadata: {name: [x]}\n",
        )
        .unwrap();
        let e = load_paths(&[path], &mut Cluster::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("one.yaml: document 1: Pod: "),
            "not a syntax error: {e}"
        );
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, "\n\nkind: Pod\n  nope: [\n").unwrap();
        let e = load_paths(&[path], &mut Cluster::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "{}: line 4, column ",
                dir.path().join("bad.yaml").display()
            )),
            "{e}"
        );
        assert_eq!(e.matches("line").count(), 1, "the location once: {e}");
    }

    #[test]
    fn a_list_larger_than_the_object_limit_streams_one_item_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let filler = "x".repeat(60 << 10);
        let item = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c"}},"data":{{"a":"{filler}"}}}}"#
        );
        let n = (limits::MAX_OBJECT_BYTES as usize / item.len()) + 8;
        let items = vec![item.as_str(); n].join(",\n");
        let path = dir.path().join("list.json");
        std::fs::write(
            &path,
            format!(r#"{{"apiVersion":"v1","kind":"List","items":[{items}]}}"#),
        )
        .unwrap();
        let notes = load_paths(&[path], &mut Cluster::default()).unwrap();
        assert_eq!(notes.skipped.get("ConfigMap"), Some(&n));
    }

    /// A List of `n` replicas alike (containers, tolerations, affinity, spread, node
    /// selector, volumes, labels, owner), each bound to its own node, and `last` after them.
    fn replicas(n: usize, last: &str) -> String {
        let pod = |i: usize| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"web-{i}","namespace":"shop","labels":{{"app":"web"}},"ownerReferences":[{{"kind":"ReplicaSet","name":"web-1","controller":true}}]}},"spec":{{"nodeName":"n{i}","containers":[{{"name":"app","image":"x","env":[{{"name":"A","value":"1"}}],"resources":{{"requests":{{"cpu":"250m"}}}}}}],"tolerations":[{{"key":"k","operator":"Exists"}}],"affinity":{{"podAntiAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":[{{"labelSelector":{{"matchLabels":{{"app":"web"}}}},"topologyKey":"kubernetes.io/hostname"}}]}}}},"topologySpreadConstraints":[{{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}}],"nodeSelector":{{"disk":"ssd"}},"volumes":[{{"name":"data","persistentVolumeClaim":{{"claimName":"data-web-{i}"}}}},{{"name":"tmp","emptyDir":{{}}}}]}}}}"#
            )
        };
        let items: Vec<String> = (0..n).map(pod).chain([last.to_string()]).collect();
        format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n{}\n]}}",
            items.join(",\n")
        )
    }

    #[test]
    fn parts_read_once_load_as_parts_parsed_each_and_fail_at_the_same_place() {
        let last = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other","namespace":"shop"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1"}}}]}}"#;
        let text = replicas(3, last);
        let (mut once, mut each) = (Cluster::default(), Cluster::default());
        let a = load_str("r.json", &text, &mut once).unwrap();
        let b = load_str_parsing_each_part("r.json", &text, &mut each).unwrap();
        assert_eq!((a.loaded, &once.pods), (b.loaded, &each.pods));
        assert_eq!(once.pods.len(), 4);
        // In the model's order: other, web-0, web-1, web-2.
        let p: Vec<&Pod> = once.pods.values().collect();
        assert!(Shared::ptr_eq(&p[1].spec.containers, &p[3].spec.containers));
        assert_eq!(p[1].spec.topology_spread_constraints.len(), 1);
        assert_eq!(p[3].spec.volume_claims, ["data"]);
        assert_eq!(p[3].spec.node_selector.get("disk").unwrap(), "ssd");
        // A fault inside a part read before (a resource that is not a map): the error
        // names its own line and column, as when each part is parsed.
        for bad in [
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"containers":[{"name":"app","resources":3}]}}"#,
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad","labels":{"app":7}}}"#,
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"tolerations":[{"key":"k",,}]}}"#,
        ] {
            let text = replicas(2, bad);
            let a = load_str("r.json", &text, &mut Cluster::default()).unwrap_err();
            let b =
                load_str_parsing_each_part("r.json", &text, &mut Cluster::default()).unwrap_err();
            assert_eq!(a.to_string(), b.to_string());
            // Named as Kubernetes names it, not as kelp's reader does.
            if bad.contains("resources") {
                assert!(
                    a.to_string()
                        .ends_with("expected struct ResourceRequirements"),
                    "{a}"
                );
            }
            let column = bad
                .find("3}")
                .or(bad.find("7}"))
                .or(bad.find(",}"))
                .unwrap();
            assert!(
                a.to_string()
                    .starts_with(&format!("r.json: line 4, column {}", column + 1))
                    || a.to_string()
                        .starts_with(&format!("r.json: line 4, column {}", column + 2)),
                "{a}"
            );
        }
    }

    #[test]
    fn a_file_with_bytes_that_are_not_utf8_in_a_skipped_string_loads() {
        // The projection skips a container's env; its value is not UTF-8. The parts are
        // read again as they come, after a legacy object the first read listed once.
        let text = replicas(
            2,
            r#"{"apiVersion":"karpenter.sh/v1alpha5","kind":"Provisioner","metadata":{"name":"old"}},
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"app","env":[{"name":"A","value":"AB"}]}]}}"#,
        );
        let bytes = text.replace("\"AB\"", "\"A\u{1}B\"").into_bytes();
        let bytes: Vec<u8> = bytes
            .into_iter()
            .map(|b| if b == 1 { 0xff } else { b })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("latin1.json");
        std::fs::write(&file, &bytes).unwrap();
        for load in [load_paths, load_paths_copied] {
            let mut c = Cluster::default();
            assert_eq!(load(std::slice::from_ref(&file), &mut c).unwrap().loaded, 4);
            assert_eq!(c.pods.len(), 3);
            assert_eq!(
                c.api.legacy_objects,
                ["karpenter.sh/v1alpha5 Provisioner old"]
            );
        }
    }

    #[test]
    fn pods_keep_only_what_the_analysis_reads() {
        let mut c = Cluster::default();
        load_str("p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: n}\nspec:\n  containers:\n  - name: a\n    image: x\n    resources: {requests: {cpu: 100m}, limits: {cpu: 200m, memory: 1Gi}}\nstatus:\n  conditions:\n  - {type: Ready, status: 'True'}\n  - {type: Initialized, status: 'False'}\n  - {type: PodScheduled, status: 'False', reason: Unschedulable}\n", &mut c).unwrap();
        let p = &c.pods[&("n".to_string(), "p".to_string())];
        let r = &p.spec.containers[0].resources.requests;
        assert_eq!(
            (r["cpu"].0.as_str(), r["memory"].0.as_str()),
            ("100m", "1Gi"),
            "a missing request comes from the limit"
        );
        assert_eq!(p.status.conditions.len(), 1);
        assert_eq!(p.status.conditions[0].type_, "PodScheduled");
        // Ready is kept only when False (a PDB may let an unready pod go).
        let mut c = Cluster::default();
        load_str("p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: n}\nstatus:\n  conditions:\n  - {type: Ready, status: 'False'}\n  - {type: PodScheduled, status: 'True'}\n", &mut c).unwrap();
        let p = &c.pods[&("n".to_string(), "p".to_string())];
        let kept: Vec<&str> = p.status.conditions.iter().map(|c| &*c.type_).collect();
        assert_eq!(kept, ["Ready", "PodScheduled"]);
    }

    #[test]
    fn crds_and_events_k8s_io_events_load_through_the_kind_table() {
        let mut c = Cluster::default();
        let notes = load_str(
            "k.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: nodepools.karpenter.sh}\nspec: {group: karpenter.sh, versions: [{name: v1, served: true}, {name: v1beta1, served: false}]}\n---\napiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e1, namespace: ml, uid: u1}\nregarding: {kind: Pod, namespace: ml, name: p}\nreason: FailedScheduling\nnote: no nodes\n---\napiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\n",
            &mut c,
        )
        .unwrap();
        assert_eq!(notes.loaded, 3);
        assert!(c.api.authoritative);
        assert_eq!(
            c.api.served.iter().collect::<Vec<_>>(),
            ["karpenter.k8s.aws/v1", "karpenter.sh/v1"]
        );
        assert!(c.crds.contains_key("nodepools.karpenter.sh"));
        assert_eq!(
            c.events_for(ObjectKind::Pod, Some("ml"), "p", "")[0].message,
            "no nodes"
        );
        let class = &c.nodeclasses[&("EC2NodeClass".to_string(), "default".to_string())];
        assert_eq!(class.group, "karpenter.k8s.aws");
    }

    #[test]
    fn legacy_karpenter_objects_are_recorded_not_loaded() {
        let mut c = Cluster::default();
        load_str("old.yaml", "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: default}\nspec: {}\n", &mut c).unwrap();
        assert!(c.nodepools.is_empty());
        assert_eq!(
            c.api.legacy_objects,
            vec!["karpenter.sh/v1beta1 NodePool default".to_string()]
        );
        assert!(c.api.served.contains("karpenter.sh/v1beta1"));
    }

    #[test]
    fn snapshot_capture_time_is_read_from_the_list() {
        let mut c = Cluster::default();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List",
            "metadata": {"annotations": {CAPTURED_AT: "2026-11-21T10:00:00Z"}},
            "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]});
        load_str("s.json", &list.to_string(), &mut c).unwrap();
        assert_eq!(
            c.captured_at.unwrap().to_rfc3339(),
            "2026-11-21T10:00:00+00:00"
        );
    }
}
