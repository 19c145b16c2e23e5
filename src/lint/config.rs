//! `.kelp.yaml`: the Karpenter release the manifests are for, per-rule severities (or
//! `off`) and ignores by rule and path glob.
//!
//! ```yaml
//! karpenterVersion: v1.14.3         # default: the newest release kelp knows
//! rules:
//!   missing-min-values: warning     # info | warning | critical | off
//!   ami-alias-latest: off
//! ignore:
//!   - paths: ["envs/dev/**"]        # these rules in these files
//!     rules: [ami-alias-latest, nodepool-missing-limits]
//!   - paths: ["vendor/**"]          # every rule in these files
//!   - rules: [nodeclass-not-found]  # these rules everywhere
//! ```
//!
//! Path globs are relative to the folder the configuration file is in.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use super::rules;
use super::Error;
use crate::findings::Severity;
use crate::karpenter::version::{self, Release};
use crate::source::limits;

/// The file kelp looks for in the current directory.
pub const FILE_NAME: &str = ".kelp.yaml";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warning,
    Critical,
    Off,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    #[serde(default)]
    karpenter_version: Option<String>,
    #[serde(default)]
    rules: BTreeMap<String, Level>,
    #[serde(default)]
    ignore: Vec<IgnoreEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IgnoreEntry {
    #[serde(default)]
    rules: Option<Vec<String>>,
    #[serde(default)]
    paths: Option<Vec<String>>,
}

#[derive(Debug)]
struct Ignore {
    /// `None`: every rule.
    rules: Option<Vec<String>>,
    /// `None`: every file.
    paths: Option<GlobSet>,
}

/// A loaded configuration; the default changes nothing.
#[derive(Debug, Default)]
pub struct Config {
    /// Where it came from, for messages.
    pub source: Option<PathBuf>,
    /// The folder path globs are relative to: the configuration file's own.
    base: Option<PathBuf>,
    levels: BTreeMap<String, Level>,
    ignores: Vec<Ignore>,
    /// The release the manifests are for (`karpenterVersion`, or `--karpenter-version`,
    /// which wins); None: the newest kelp knows.
    pub karpenter_version: Option<Release>,
}

fn glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern.trim_start_matches("./"))
        .literal_separator(true)
        .build()
}

/// A file name as globs see it: forward slashes, no leading `./`.
pub fn normalize(file: &str) -> String {
    let s = file.replace('\\', "/");
    s.trim_start_matches("./").to_string()
}

/// `path` made absolute against the current directory, with `.` and `..` resolved lexically.
fn absolute(path: &Path) -> PathBuf {
    let joined = match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl Config {
    /// Read and validate a configuration file.
    pub fn load(path: &Path) -> Result<Config, Error> {
        let read = |source| super::unreadable(path.to_path_buf(), source);
        let file = std::fs::File::open(path).map_err(read)?;
        let bytes = limits::read_at_most(file, limits::MAX_WHOLE_BYTES, 0)
            .map_err(read)?
            .ok_or_else(|| Error::Limit {
                path: path.to_path_buf(),
                limit: limits::Limit::FileSize,
            })?;
        let text = String::from_utf8(bytes)
            .map_err(|e| read(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        Config::parse(&text, path)
    }

    /// `--config PATH`, else `.kelp.yaml` in the current directory when there is one.
    pub fn discover(explicit: Option<&Path>) -> Result<Config, Error> {
        match explicit {
            Some(p) => Config::load(p),
            None if Path::new(FILE_NAME).is_file() => Config::load(Path::new(FILE_NAME)),
            None => Ok(Config::default()),
        }
    }

    pub fn parse(text: &str, path: &Path) -> Result<Config, Error> {
        let bad = |message: String| Error::Config {
            path: path.to_path_buf(),
            message,
        };
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            limits::check_yaml(text).map_err(|stop| match stop {
                limits::YamlStop::Limit(limit) => Error::Limit {
                    path: path.to_path_buf(),
                    limit,
                },
                other => bad(other.to_string()),
            })?;
            serde_norway::from_str(text).map_err(|e| bad(e.to_string()))?
        };
        let known = |id: &str| {
            if rules::rule(id).is_some() {
                Ok(())
            } else {
                Err(bad(format!(
                    "unknown rule {id:?} (see `kelp lint --list-rules`)"
                )))
            }
        };
        for id in file.rules.keys() {
            known(id)?;
        }
        let mut ignores = Vec::new();
        for entry in file.ignore {
            if entry.rules.is_none() && entry.paths.is_none() {
                return Err(bad("an ignore entry needs rules, paths or both".into()));
            }
            for id in entry.rules.iter().flatten() {
                known(id)?;
            }
            let paths = match entry.paths {
                None => None,
                Some(patterns) => {
                    let mut set = GlobSetBuilder::new();
                    for p in &patterns {
                        set.add(glob(p).map_err(|e| bad(format!("bad path glob: {e}")))?);
                    }
                    Some(
                        set.build()
                            .map_err(|e| bad(format!("bad path glob: {e}")))?,
                    )
                }
            };
            ignores.push(Ignore {
                rules: entry.rules,
                paths,
            });
        }
        let karpenter_version = match file.karpenter_version {
            None => None,
            Some(v) => Some(
                v.parse::<Release>()
                    .map_err(|e| bad(format!("karpenterVersion: {e}")))?,
            ),
        };
        Ok(Config {
            karpenter_version,
            source: Some(path.to_path_buf()),
            base: Some(absolute(path.parent().unwrap_or(Path::new("")))),
            levels: file.rules,
            ignores,
        })
    }

    /// A file name relative to the configuration's folder when it lies below it, else as given.
    fn relative(&self, file: &str) -> String {
        let under = self.base.as_ref().and_then(|b| {
            absolute(Path::new(file))
                .strip_prefix(b)
                .ok()
                .map(Path::to_path_buf)
        });
        match under {
            Some(rel) => normalize(&rel.to_string_lossy()),
            None => normalize(file),
        }
    }

    /// The release the rules are read for: the one given, else the newest kelp knows.
    pub fn target(&self) -> Release {
        self.karpenter_version.clone().unwrap_or(version::NEWEST)
    }

    /// The severity a result of `rule` in `file` gets, or `None` when it is ignored.
    pub fn severity(&self, rule: &str, default: Severity, file: &str) -> Option<Severity> {
        let file = self.relative(file);
        let ignored = self.ignores.iter().any(|i| {
            i.rules
                .as_ref()
                .is_none_or(|r| r.iter().any(|id| id == rule))
                && i.paths.as_ref().is_none_or(|p| p.is_match(&file))
        });
        if ignored {
            return None;
        }
        match self.levels.get(rule) {
            None => Some(default),
            Some(Level::Off) => None,
            Some(Level::Info) => Some(Severity::Info),
            Some(Level::Warning) => Some(Severity::Warning),
            Some(Level::Critical) => Some(Severity::Critical),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Result<Config, Error> {
        Config::parse(text, Path::new(".kelp.yaml"))
    }

    #[test]
    fn severities_and_ignores_apply() {
        let c = cfg("rules:\n  missing-min-values: critical\n  ami-alias-latest: off\nignore:\n  - paths: ['envs/dev/**']\n    rules: [nodepool-missing-limits]\n  - paths: ['vendor/**']\n").unwrap();
        let w = Severity::Warning;
        assert_eq!(
            c.severity("missing-min-values", Severity::Info, "a.yaml"),
            Some(Severity::Critical)
        );
        assert_eq!(c.severity("ami-alias-latest", w, "a.yaml"), None);
        assert_eq!(
            c.severity("nodepool-missing-limits", w, "./envs/dev/pools/a.yaml"),
            None
        );
        assert_eq!(
            c.severity("nodepool-missing-limits", w, "envs/prod/a.yaml"),
            Some(w)
        );
        assert_eq!(
            c.severity("expire-after-never", w, "envs/dev/a.yaml"),
            Some(w)
        );
        assert_eq!(c.severity("expire-after-never", w, "vendor/x/a.yaml"), None);
        // Globs are relative to the configuration file's folder.
        let sub = Config::parse(
            "ignore:\n  - paths: ['dev/**']\n",
            Path::new("repo/.kelp.yaml"),
        )
        .unwrap();
        assert_eq!(
            sub.severity("expire-after-never", w, "repo/dev/a.yaml"),
            None
        );
        assert_eq!(
            sub.severity("expire-after-never", w, "./repo/x/../dev/a.yaml"),
            None
        );
        assert_eq!(
            sub.severity("expire-after-never", w, "repo/prod/dev/a.yaml"),
            Some(w)
        );
    }

    #[test]
    fn mistakes_are_errors() {
        assert!(cfg("rules:\n  no-such-rule: off\n")
            .unwrap_err()
            .to_string()
            .contains("unknown rule \"no-such-rule\""));
        assert!(cfg("ignore:\n  - {}\n").is_err());
        assert!(cfg("rulez: {}\n").is_err());
        assert!(cfg("rules:\n  expire-after-never: loud\n").is_err());
        assert!(cfg("ignore:\n  - paths: ['a[']\n").is_err());
        assert!(cfg("").is_ok());
        let e = cfg("karpenterVersion: v0.37.0\n").unwrap_err().to_string();
        assert!(
            e.contains("karpenterVersion") && e.contains("not a Karpenter release"),
            "{e}"
        );
        assert_eq!(cfg("").unwrap().target().to_string(), "v1.15.0");
        assert_eq!(
            cfg("karpenterVersion: 1.14\n")
                .unwrap()
                .target()
                .to_string(),
            "v1.14.0"
        );
    }
}
