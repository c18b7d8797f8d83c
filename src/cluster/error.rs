//! `ClusterError`: what talking to the cluster can end in, and which of it is worth a retry.

/// A harness error talking to the cluster (exit code 2 at preflight; a case error later).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "no cluster: {tried}: {reason} (to see podlife work without a cluster, use `podlife run --replay tests/fixtures/recordings`)"
    )]
    NoConfig { tried: String, reason: String },
    #[error("cluster unreachable ({tried}): {reason}")]
    Unreachable { tried: String, reason: String },
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("no Ready node: {0}")]
    NoReadyNode(String),
    #[error("{what}: {reason}")]
    Api {
        what: String,
        reason: String,
        /// The HTTP status the server answered with, when it answered.
        code: Option<u16>,
    },
    /// The API did not answer, or answered that it cannot right now (429, 5xx): worth a retry.
    #[error("{what}: {reason}")]
    Unavailable { what: String, reason: String },
    /// The run was interrupted while the request was outstanding.
    #[error("interrupted")]
    Interrupted,
}

impl From<crate::util::backoff::RetryEnd<ClusterError>> for ClusterError {
    fn from(end: crate::util::backoff::RetryEnd<ClusterError>) -> Self {
        match end {
            crate::util::backoff::RetryEnd::Failed(e) => e,
            crate::util::backoff::RetryEnd::Cancelled => ClusterError::Interrupted,
        }
    }
}

impl ClusterError {
    /// Whether trying again later may succeed (the API server is restarting, overloaded or
    /// unreachable), as opposed to an answer that will not change.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(self, ClusterError::Unavailable { .. })
    }
}

/// One-line description of a kube error (`403 Forbidden: pods is forbidden: ...`).
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => other.to_string().lines().next().unwrap_or_default().to_string(),
    }
}

pub(super) fn api_err(what: impl Into<String>, e: &kube::Error) -> ClusterError {
    let what = what.into();
    match e {
        kube::Error::Api(s) if s.code == 403 => ClusterError::Forbidden(format!("{what}: {}", s.message)),
        // Throttled or a server-side failure (etcd timeout, apiserver restarting behind a proxy).
        kube::Error::Api(s) if matches!(s.code, 429 | 500 | 502 | 503 | 504) => ClusterError::Unavailable {
            what,
            reason: describe(e),
        },
        kube::Error::Api(s) => ClusterError::Api {
            what,
            reason: describe(e),
            code: Some(s.code),
        },
        // No answer at all: connection refused or reset, TLS or read timeouts.
        kube::Error::HyperError(_) | kube::Error::Service(_) => ClusterError::Unavailable {
            what,
            reason: describe(e),
        },
        _ => ClusterError::Api {
            what,
            reason: describe(e),
            code: None,
        },
    }
}
