//! kelp's library errors, named after what failed. Each renders as one clear line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    /// An input over one of kelp's limits (depth, size): see [`super::limits`].
    #[error("{path}: {limit}")]
    Limit {
        path: String,
        limit: super::limits::Limit,
    },
    #[error("{path}: no Kubernetes objects found (expected a v1/List, YAML documents or JSON objects as `kubectl get -o yaml|json` writes them)")]
    Empty { path: String },
    #[error("--now: {0:?} is not an RFC 3339 time (e.g. 2026-11-21T10:00:00Z)")]
    BadTime(String),
    #[error("cannot load the kubeconfig: {0} (point kelp at a cluster with --kubeconfig/--context, or read a dump with --from)")]
    Kubeconfig(String),
    #[error("cannot reach the cluster at {server}: {message}")]
    Unreachable { server: String, message: String },
    #[error("forbidden: kelp cannot {verb} {resource} (RBAC: grant get/list/watch on {resource}): {message}")]
    Forbidden {
        verb: String,
        resource: String,
        message: String,
    },
    /// Any other refusal, with the HTTP status when the API server answered (none: the
    /// request could not be made).
    #[error("the API server refused to list {resource}: {message}{}", .code.map(|c| format!(" ({c})")).unwrap_or_default())]
    Api {
        resource: String,
        code: Option<u16>,
        message: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
