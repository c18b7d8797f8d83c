//! Cluster access: the labels podlife puts on what it creates, and `CaseApi`, the bounded,
//! counted, cancellable requests of one case (namespace create/wait/delete, pod delete). Connecting
//! and the preflight are in `connect`, applying objects in `apply`, exec in `exec`, errors in
//! `error`, the client that reports a watch's requests in `watch_probe`; the fingerprint it fills
//! in belongs to `results`.

mod apply;
pub mod clean;
mod connect;
mod error;
mod exec;
mod namespaces;
mod target;
mod update;
mod watch_probe;
mod websocket;
pub use target::Target;
pub use update::UpdateDone;
pub use watch_probe::{WatchRequests, probe_watches};

pub use connect::{CONNECT_TIMEOUT, Cluster, ConnectOptions, FreshClient, READ_TIMEOUT};
use error::api_err;
pub use error::{ClusterError, describe};
pub use exec::exec_status;
pub use namespaces::{PodlifeNamespace, namespaces_labelled};
pub use websocket::StreamError;

// The fingerprint is part of the results; `cluster` fills it in, under its old paths too.
pub use crate::results::fingerprint::{Fingerprint, NodeInfo, RuntimeClassInfo};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};

use crate::util::backoff::{Backoff, Pauses};

/// Label every podlife namespace carries: the run id.
pub(crate) const RUN_LABEL: &str = "podlife.dev/run";
pub(crate) const CASE_LABEL: &str = "podlife.dev/case";
pub(crate) const SUITE_LABEL: &str = "podlife.dev/suite";
/// The node an `--each-node` copy of a case was pinned to (when the name fits a label value).
pub(crate) const NODE_LABEL: &str = "podlife.dev/node";
pub(crate) const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Annotation on every namespace a run creates: the latest instant (RFC 3339) its attempt can
/// still be using it, from the case's bounds (timeout, outage budget, settle, cleanup). Until
/// then `podlife clean` takes the run for one in progress and leaves it alone unless named.
pub(crate) const IN_USE_UNTIL: &str = "podlife.dev/in-use-until";
pub(crate) const FIELD_MANAGER: &str = crate::observe::observer::OUR_FIELD_MANAGER;
/// The well-known label the kubelet sets to its hostname; `--each-node` pins pods with it.
pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// How long one ordinary request (create, apply, patch, delete, get) may take by default before
/// podlife gives up on it: far above a healthy apiserver's latency (milliseconds), well below a
/// case timeout. `--request-timeout` overrides it.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The API calls one case makes, counted (watches and log streams separately), each bounded in
/// time and raced against the run's cancellation.
#[derive(Clone)]
pub(crate) struct CaseApi {
    pub client: Client,
    pub namespace: String,
    requests: Arc<AtomicU64>,
    request_timeout: Duration,
    cancel: Option<tokio::sync::watch::Receiver<bool>>,
    /// `--each-node`: the node the case is pinned to, labelled on its namespace.
    node: Option<String>,
    /// When the latest request was sent: a step retried through an outage took effect with its
    /// last try, and is recorded as sent then.
    last_sent: Arc<std::sync::Mutex<Option<jiff::Timestamp>>>,
}

impl CaseApi {
    pub fn new(client: Client, namespace: &str) -> Self {
        CaseApi {
            client,
            namespace: namespace.to_string(),
            requests: Arc::new(AtomicU64::new(0)),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            cancel: None,
            node: None,
            last_sent: Arc::default(),
        }
    }

    /// When the latest request was sent (see `last_sent`).
    pub(crate) fn last_sent(&self) -> Option<jiff::Timestamp> {
        *self.last_sent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Labels the namespace with the node an `--each-node` copy runs on (`podlife.dev/node`),
    /// so `kubectl get ns -l podlife.dev/node=<node>` finds one node's cases. A node name longer
    /// than a label value may be (63 characters; node names may have up to 253) is left out.
    pub fn on_node(mut self, node: Option<&str>) -> Self {
        self.node = node.filter(|n| n.len() <= 63).map(str::to_string);
        self
    }

    /// Bounds every request by `timeout` and abandons it when `cancel` flips to true (Ctrl-C).
    /// Cleanup requests ignore `cancel`: they are what an interrupt is followed by.
    pub fn bounded(mut self, timeout: Duration, cancel: Option<tokio::sync::watch::Receiver<bool>>) -> Self {
        self.request_timeout = timeout;
        self.cancel = cancel;
        self
    }

    /// The same case's requests in another namespace it owns (`secondNamespace:`): bounded and
    /// cancelled alike, counted with the case's own.
    pub(crate) fn in_namespace(&self, namespace: &str) -> Self {
        CaseApi {
            namespace: namespace.to_string(),
            ..self.clone()
        }
    }

    /// Non-watch requests made so far (namespace, apply, delete, log fetches).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    pub fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Sends one request: bounded by the request timeout (and `deadline`, if earlier), abandoned
    /// on cancellation when `cancellable`.
    async fn call<T>(
        &self,
        what: &str,
        deadline: Option<tokio::time::Instant>,
        cancellable: bool,
        request: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        self.count();
        *self.last_sent.lock().unwrap_or_else(|p| p.into_inner()) = Some(jiff::Timestamp::now());
        let mut limit = crate::util::after_tokio(self.request_timeout);
        if let Some(d) = deadline {
            limit = limit.min(d);
        }
        let after = limit.saturating_duration_since(tokio::time::Instant::now());
        let mut cancel = self.cancel.clone().filter(|_| cancellable);
        let cancelled = async {
            match cancel.as_mut() {
                Some(rx) => {
                    let _ = rx.wait_for(|v| *v).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            r = request => r.map_err(|e| api_err(what, &e)),
            _ = tokio::time::sleep_until(limit) => Err(ClusterError::Unavailable {
                what: what.to_string(),
                reason: format!("no answer within {}", crate::util::fmt_secs(after.as_secs_f64())),
            }),
            _ = cancelled => Err(ClusterError::Interrupted),
        }
    }

    /// Retries `attempt` while the API is unavailable (connection refused, timeouts, 429, 5xx),
    /// with back-off, until it answers or `budget` has passed; cancellation ends it at once.
    async fn retrying<T, F, Fut>(&self, budget: Duration, attempt: F) -> Result<T, ClusterError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ClusterError>>,
    {
        let give_up = crate::util::after_tokio(budget);
        Backoff::new()
            .retry(give_up, &self.pauses(), ClusterError::is_transient, attempt)
            .await
            .map_err(ClusterError::from)
    }

    /// This client's pauses: cut short by its cancellation, if it has one.
    fn pauses(&self) -> Pauses {
        Pauses::Cancellable(self.cancel.clone())
    }

    /// Sleeps; true when cancelled meanwhile.
    async fn sleep_or_cancel(&self, d: Duration) -> bool {
        let Some(mut rx) = self.cancel.clone() else {
            tokio::time::sleep(d).await;
            return false;
        };
        tokio::select! {
            _ = tokio::time::sleep(d) => false,
            _ = rx.wait_for(|v| *v) => true,
        }
    }

    /// Creates the case namespace with the run labels and returns its UID, waiting up to
    /// `outage_budget` for an unavailable API. A name that already exists is an error — the
    /// namespace is not ours and is never deleted — unless it carries this run's label and case
    /// (our own earlier try whose answer was lost in an outage), which is adopted.
    pub(crate) async fn create_namespace(
        &self,
        run_id: &str,
        suite: &str,
        case: &str,
        outage_budget: Duration,
        in_use_until: jiff::Timestamp,
    ) -> Result<String, ClusterError> {
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": self.namespace,
                "labels": { RUN_LABEL: run_id, SUITE_LABEL: suite, CASE_LABEL: case, MANAGED_BY: "podlife" },
                "annotations": { IN_USE_UNTIL: in_use_until.to_string() }
            }
        }))
        .expect("static namespace object");
        let mut ns = ns;
        if let Some(n) = &self.node {
            ns.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(NODE_LABEL.to_string(), n.clone());
        }
        let api = Api::<Namespace>::all(self.client.clone());
        let what = format!("create namespace {}", self.namespace);
        let pp = PostParams::default();
        let created = self
            .retrying(outage_budget, || self.call(&what, None, true, api.create(&pp, &ns)))
            .await;
        match created {
            Ok(n) => n.metadata.uid.ok_or_else(|| ClusterError::Api {
                what,
                reason: "the server returned no uid".into(),
                code: None,
            }),
            Err(ClusterError::Api { code: Some(409), .. }) => {
                let get = format!("get namespace {}", self.namespace);
                let existing = self
                    .retrying(outage_budget, || self.call(&get, None, true, api.get(&self.namespace)))
                    .await?;
                let labels = existing.metadata.labels.unwrap_or_default();
                let ours = labels.get(RUN_LABEL).map(String::as_str) == Some(run_id)
                    && labels.get(CASE_LABEL).map(String::as_str) == Some(case);
                match existing.metadata.uid {
                    Some(uid) if ours && existing.metadata.deletion_timestamp.is_none() => Ok(uid),
                    _ => Err(ClusterError::Api {
                        what,
                        reason: "409 AlreadyExists: a namespace of that name exists and was not created by this run; podlife leaves it alone".into(),
                        code: Some(409),
                    }),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Waits until the new namespace is usable as upstream's e2e framework waits for it: its
    /// `default` ServiceAccount exists (else the API refuses the pod: "error looking up service
    /// account", as when the controller-manager was down in an outage) and its `kube-root-ca.crt`
    /// ConfigMap too (else the pod's token volume waits in ContainerCreating). Polled, within
    /// `budget`, abandoned on cancellation.
    pub(crate) async fn wait_namespace_ready(&self, budget: Duration) -> Result<(), ClusterError> {
        let give_up = crate::util::after_tokio(budget);
        let sa = Api::<ServiceAccount>::namespaced(self.client.clone(), &self.namespace);
        let cm = Api::<ConfigMap>::namespaced(self.client.clone(), &self.namespace);
        // Both objects come within milliseconds of the namespace on a healthy cluster: poll soon,
        // then at most once a second.
        let mut backoff = Backoff::between(Duration::from_millis(50), Duration::from_secs(1));
        let mut missing = vec![];
        loop {
            missing.clear();
            let what = format!("get serviceaccount {}/default", self.namespace);
            if !self
                .exists(&what, Some(give_up), sa.get_metadata_opt("default"))
                .await?
            {
                missing.push("ServiceAccount default");
            }
            let what = format!("get configmap {}/kube-root-ca.crt", self.namespace);
            if !self
                .exists(&what, Some(give_up), cm.get_metadata_opt("kube-root-ca.crt"))
                .await?
            {
                missing.push("ConfigMap kube-root-ca.crt");
            }
            if missing.is_empty() {
                return Ok(());
            }
            if !backoff.fits_before(give_up) {
                return Err(ClusterError::Unavailable {
                    what: format!("namespace {}", self.namespace),
                    reason: format!(
                        "{} not created within {} (is the controller-manager running?)",
                        missing.join(" and "),
                        crate::util::fmt_secs(budget.as_secs_f64())
                    ),
                });
            }
            if backoff.pause(&self.pauses()).await {
                return Err(ClusterError::Interrupted);
            }
        }
    }

    /// Whether a GET found its object; an unavailable API counts as "not yet" (the caller's
    /// budget bounds the wait), other errors are errors.
    async fn exists<T>(
        &self,
        what: &str,
        deadline: Option<tokio::time::Instant>,
        get: impl std::future::Future<Output = Result<Option<T>, kube::Error>>,
    ) -> Result<bool, ClusterError> {
        match self.call(what, deadline, true, get).await {
            Ok(o) => Ok(o.is_some()),
            Err(e) if e.is_transient() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes the pod, optionally overriding the grace period. Retried while the API is
    /// unavailable, within `outage_budget`: a DELETE whose answer was lost and that is sent again
    /// finds the pod terminating (same grace, or the shorter) or gone (404, done).
    pub(crate) async fn delete_pod(
        &self,
        name: &str,
        grace: Option<i64>,
        outage_budget: Duration,
    ) -> Result<(), ClusterError> {
        let mut dp = DeleteParams::background();
        if let Some(g) = grace {
            // `validate` keeps it within 0..=MAX_GRACE_SECONDS; saturate rather than wrap to 0 (which
            // would mean "kill now") should anything larger ever get here.
            dp.grace_period_seconds = Some(u32::try_from(g.max(0)).unwrap_or(u32::MAX));
        }
        let what = format!("delete pod {}/{name}", self.namespace);
        let pods = self.pods();
        match self
            .retrying(outage_budget, || self.call(&what, None, true, pods.delete(name, &dp)))
            .await
        {
            Ok(_) => Ok(()),
            Err(ClusterError::Api { code: Some(404), .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Reads the pod once (no retry: a closing read that fails only leaves the gaps as they are).
    pub(crate) async fn read_pod(&self, name: &str) -> Result<Pod, ClusterError> {
        let what = format!("read pod {}/{name}", self.namespace);
        let pods = self.pods();
        self.call(&what, None, true, pods.get(name)).await
    }

    /// Asks every pod of this case's namespace to stop within a second (one DELETE of the
    /// collection, grace 1 s). Called once the case is over, before the namespace's DELETE: the
    /// namespace controller deletes pods with their own grace period, so a container that
    /// ignores SIGTERM would keep its namespace 30 s (the default grace) after nothing observes
    /// it any more. Best effort: the namespace DELETE follows whatever this answers.
    pub(crate) async fn stop_pods_now(&self) {
        let pods = Api::<Pod>::namespaced(self.client.clone(), &self.namespace);
        let dp = DeleteParams {
            grace_period_seconds: Some(1),
            ..DeleteParams::background()
        };
        let what = format!("delete pods of namespace {}", self.namespace);
        let _ = self
            .call(
                &what,
                None,
                false,
                pods.delete_collection(&dp, &kube::api::ListParams::default()),
            )
            .await;
    }

    /// Deletes the namespace this run created (the DELETE carries its UID as a precondition, so
    /// a namespace of the same name that is not ours is never touched) and waits until it is
    /// gone. While the API is unavailable the DELETE is retried for up to `outage_budget` (or
    /// `wait`, if longer): an API server restart must not leave the namespace behind. Once the
    /// DELETE is accepted, waiting for the namespace to go ends by `wait` (zero: no wait). Returns false when the
    /// namespace is still there at the end.
    pub(crate) async fn delete_namespace(
        &self,
        uid: &str,
        wait: Duration,
        outage_budget: Duration,
    ) -> Result<bool, ClusterError> {
        let mut deadline = crate::util::after_tokio(wait.max(outage_budget));
        let api = Api::<Namespace>::all(self.client.clone());
        let mut dp = DeleteParams::background();
        dp.preconditions = Some(kube::api::Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        });
        let what = format!("delete namespace {}", self.namespace);
        // One back-off for the DELETE's retries and the wait after it: a wait restarted after
        // retries does not start over from the shortest pause.
        let mut backoff = Backoff::new();
        // Uninterrupted pauses, unlike `retrying`: this is the cleanup, which Ctrl-C and SIGTERM
        // start rather than stop (a namespace abandoned here would leak); the deadline bounds it.
        let deleted = backoff
            .retry(deadline, &Pauses::Uninterrupted, ClusterError::is_transient, || async {
                match self
                    .call(&what, Some(deadline), false, api.delete(&self.namespace, &dp))
                    .await
                {
                    Ok(_) => Ok(Ok(true)),
                    Err(ClusterError::Api { code: Some(404), .. }) => Ok(Ok(false)),
                    // A 409 is either the UID precondition (the name now belongs to a namespace
                    // that is not ours: ours is gone) or ours already terminating ("The system is
                    // ensuring all content is removed", a DELETE sent again after a lost answer
                    // or by the sweep): only a look tells, and a terminating one is waited for.
                    // The look is not retried: its failure ends the deletion.
                    Err(ClusterError::Api { code: Some(409), .. }) => {
                        let get = format!("get namespace {}", self.namespace);
                        Ok(self
                            .call(&get, Some(deadline), false, api.get_opt(&self.namespace))
                            .await
                            .map(|n| n.is_some_and(|n| n.metadata.uid.as_deref() == Some(uid))))
                    }
                    Err(e) => Err(e),
                }
            })
            .await;
        // `Ok(Ok(true))`: the namespace is ours and terminating; `Ok(Ok(false))`: it is gone.
        match deleted.map_err(ClusterError::from)?? {
            true => deadline = crate::util::after_tokio(wait),
            false => return Ok(true),
        }
        // Not waiting at all: no request for the wait either.
        if wait.is_zero() {
            return Ok(false);
        }
        self.wait_namespace_gone(uid, deadline, backoff).await
    }

    /// Waits until the namespace (by UID) is gone, by `deadline`: true when it went. A watch
    /// (which resumes by itself), restarted after an error until the deadline, so an API blip
    /// during the wait does not end it.
    pub(crate) async fn wait_namespace_gone(
        &self,
        uid: &str,
        deadline: tokio::time::Instant,
        mut backoff: Backoff,
    ) -> Result<bool, ClusterError> {
        let api = Api::<Namespace>::all(self.client.clone());
        loop {
            let cond = kube::runtime::wait::conditions::is_deleted::<Namespace>(uid);
            let waited = tokio::time::timeout_at(
                deadline,
                kube::runtime::wait::await_condition(api.clone(), &self.namespace, cond),
            )
            .await;
            match waited {
                Ok(Ok(_)) => return Ok(true),
                Err(_) => return Ok(false),
                Ok(Err(_)) => {
                    if tokio::time::timeout_at(deadline, tokio::time::sleep(backoff.next_pause()))
                        .await
                        .is_err()
                    {
                        return Ok(false);
                    }
                }
            }
        }
    }
}
