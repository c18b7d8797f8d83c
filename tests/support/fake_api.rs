//! `FakeApi`: an in-process Kubernetes API server for runner tests, behind
//! `tower_test::mock::pair` and `kube::Client::new`. It replays real recordings as the
//! cluster: once podlife applies a pod named like a recording, the recorded watch events, Event
//! objects and log lines are served (streamed) at their recorded offsets from the apply, and
//! those recorded after the DELETE at their offsets from podlife's own DELETE.
//!
//! It is as hostile as real servers are when asked: 409 and never-answered requests, status
//! bursts (429 with Retry-After, 500) on watches and lists, an outage in which every request
//! fails to connect and every open stream breaks, log streams that break mid-line or carry
//! invalid UTF-8, events forbidden at runtime, 410 Gone on the first watch resumed after an
//! outage, watch streams that break while nothing changes, and a slow first list. Watches honour
//! `resourceVersion` and log requests `sinceTime`, so resumed streams behave as on a real server.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, StreamBody};
use jiff::Timestamp;
use kube::client::Body;
use serde_json::{Value, json};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type RespBody = BoxBody<Bytes, BoxError>;
type Frames = UnboundedSender<Result<http_body::Frame<Bytes>, BoxError>>;

fn data(b: impl Into<Bytes>) -> Result<http_body::Frame<Bytes>, BoxError> {
    Ok(http_body::Frame::data(b.into()))
}

/// A stream that breaks: the client sees a body error, as when a connection is reset.
fn broken() -> Result<http_body::Frame<Bytes>, BoxError> {
    Err("connection reset by peer".into())
}

/// One recorded item and when it is due.
#[derive(Clone, Debug)]
struct Item {
    /// Seconds after the anchor (apply, or our DELETE for `after_delete`).
    offset: f64,
    after_delete: bool,
    rv: u64,
    kind: String,
    object: Value,
}

/// A recorded log line of one container instance.
#[derive(Clone, Debug)]
struct Line {
    offset: f64,
    after_delete: bool,
    instance: u32,
    /// The kubelet's timestamp of the line, as recorded.
    time: Timestamp,
    body: String,
    /// `<time> <body>`, as `kubectl logs --timestamps` serves it.
    text: String,
}

/// How the fake answers one exec request.
#[derive(Clone, Debug)]
pub enum FakeExec {
    /// A websocket (v4.channel.k8s.io) that sends these stdout and stderr frames, then the
    /// status (a metav1.Status JSON) on channel 3, as the kubelet's streaming server does.
    Run {
        stdout: Vec<String>,
        stderr: String,
        status: Value,
    },
    /// An HTTP error status before any upgrade (e.g. 500, or 400 "container not found").
    Status(u16, String),
    /// Upgraded, sends this stdout, then nothing: never a status, never closed.
    Stall(String),
    /// Upgraded, sends this stdout, then the connection drops (no close frame, no status).
    Break(String),
}

impl FakeExec {
    /// A command that exits 0 after printing `stdout`.
    pub fn ok(stdout: &str) -> FakeExec {
        FakeExec::Run {
            stdout: vec![stdout.to_string()],
            stderr: String::new(),
            status: json!({"metadata": {}, "status": "Success"}),
        }
    }
    /// A command that exits `code` (NonZeroExitCode, as the kubelet reports it).
    pub fn exit(stdout: &str, code: i32) -> FakeExec {
        FakeExec::Run {
            stdout: vec![stdout.to_string()],
            stderr: String::new(),
            status: json!({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                "message": format!("command terminated with non-zero exit code: error executing command [...], exit code {code}"),
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}}),
        }
    }
}

/// The websocket protocols the client offered, in its order.
fn offered(parts: &http::request::Parts) -> Vec<String> {
    (parts
        .headers
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok()))
    .map(|v| v.split(',').map(|p| p.trim().to_string()).collect())
    .unwrap_or_default()
}

type ServerSocket = tokio_tungstenite::WebSocketStream<tokio::io::DuplexStream>;

/// Answers a websocket upgrade as an API server would, choosing `protocol` (hyper client over
/// an in-memory pipe to a tungstenite server, so the response carries a real upgrade), and
/// then lets `serve` speak on the socket.
async fn upgrade<F, Fut>(parts: http::request::Parts, protocol: &str, serve: F) -> Response<RespBody>
where
    F: FnOnce(ServerSocket) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let protocol = protocol.to_string();
    tokio::spawn(async move {
        // The callback's signature is tungstenite's (its error type is large).
        #[allow(clippy::result_large_err)]
        let pick = |_: &tokio_tungstenite::tungstenite::handshake::server::Request,
                    mut resp: tokio_tungstenite::tungstenite::handshake::server::Response| {
            resp.headers_mut()
                .insert("sec-websocket-protocol", protocol.parse().unwrap());
            Ok(resp)
        };
        if let Ok(ws) = tokio_tungstenite::accept_hdr_async(server_io, pick).await {
            serve(ws).await;
        }
    });
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, http_body_util::Empty<Bytes>>(
        hyper_util::rt::TokioIo::new(client_io),
    )
    .await
    .unwrap();
    tokio::spawn(conn.with_upgrades());
    let req = Request::from_parts(parts, http_body_util::Empty::<Bytes>::new());
    let resp = sender.send_request(req).await.unwrap();
    resp.map(|b| b.map_err(|e| -> BoxError { Box::new(e) }).boxed())
}

/// Answers an exec request as an API server would: a websocket upgrade or an error. Offered
/// only the base `channel.k8s.io` (proxied to the kubelet unchanged), it speaks that protocol:
/// nothing on the error stream for success, the status's message for a failure. Otherwise
/// v4.channel.k8s.io, with the status as JSON on channel 3.
async fn exec(parts: http::request::Parts, how: FakeExec) -> Response<RespBody> {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    if let FakeExec::Status(code, message) = &how {
        return status(*code, "BadRequest", message);
    }
    let base = offered(&parts) == ["channel.k8s.io"];
    let protocol = if base { "channel.k8s.io" } else { "v4.channel.k8s.io" };
    upgrade(parts, protocol, move |mut ws| async move {
        let frame = |ch: u8, s: &str| {
            let mut v = vec![ch];
            v.extend_from_slice(s.as_bytes());
            Message::binary(v)
        };
        match how {
            FakeExec::Run { stdout, stderr, status } => {
                if base {
                    // The base protocol's server opens each channel with an empty message.
                    for ch in [1, 2, 3] {
                        let _ = ws.send(frame(ch, "")).await;
                    }
                }
                for s in stdout {
                    let _ = ws.send(frame(1, &s)).await;
                }
                if !stderr.is_empty() {
                    let _ = ws.send(frame(2, &stderr)).await;
                }
                if !base {
                    let _ = ws.send(frame(3, &status.to_string())).await;
                } else if status["status"] != "Success" {
                    let _ = ws.send(frame(3, status["message"].as_str().unwrap_or(""))).await;
                }
                let _ = ws.close(None).await;
            }
            FakeExec::Stall(s) => {
                let _ = ws.send(frame(1, &s)).await;
                std::future::pending::<()>().await;
            }
            FakeExec::Break(s) => {
                let _ = ws.send(frame(1, &s)).await;
                // Dropped without a close frame: the client sees the stream end abruptly.
                drop(ws);
            }
            FakeExec::Status(..) => {}
        }
    })
    .await
}

/// A log request upgraded to a websocket, as the API server serves it (its own wsstream
/// reader over the kubelet's log): the log's bytes as one binary message (`binary.k8s.io`) or
/// base64 text (`base64.binary.k8s.io`), then a close. An error answer stays an HTTP error.
async fn log_websocket(parts: http::request::Parts, log: Response<RespBody>, timestamps: bool) -> Response<RespBody> {
    use base64::Engine;
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    if log.status() != 200 {
        return log;
    }
    let mut bytes = log
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    // The fake's log lines always carry their time; a real server adds it only when asked.
    if !timestamps {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let lines: String = text
            .split_inclusive('\n')
            .map(|l| l.split_once(' ').map_or(l, |(_, b)| b))
            .collect();
        bytes = Bytes::from(lines);
    }
    let Some(protocol) = (offered(&parts).into_iter()).find(|p| p == "binary.k8s.io" || p == "base64.binary.k8s.io")
    else {
        return status(400, "BadRequest", "no websocket protocol the log endpoint speaks");
    };
    let base64 = protocol == "base64.binary.k8s.io";
    upgrade(parts, &protocol, move |mut ws| async move {
        let m = if base64 {
            Message::text(base64::engine::general_purpose::STANDARD.encode(&bytes))
        } else {
            Message::binary(bytes.to_vec())
        };
        let _ = ws.send(m).await;
        let _ = ws.close(None).await;
    })
    .await
}

/// A node the fake presents (`FakeState::nodes`); pods pinned to it (nodeSelector on
/// `kubernetes.io/hostname`, or nodeName) run there.
#[derive(Clone, Debug)]
pub struct FakeNode {
    pub name: String,
    pub kubelet: String,
    pub runtime: String,
    pub labels: BTreeMap<String, String>,
    pub ready: bool,
    pub unschedulable: bool,
    /// `(key, effect)`.
    pub taints: Vec<(String, String)>,
    /// A slow node: everything its pods do (watch events, log lines and their timestamps)
    /// happens this many times later after the apply than recorded (1.0: as recorded).
    pub stretch: f64,
}

impl FakeNode {
    /// A Ready node labelled with its hostname, running the recordings' kubelet and runtime.
    pub fn new(name: &str) -> FakeNode {
        FakeNode {
            name: name.to_string(),
            kubelet: "v1.36.2".into(),
            runtime: "containerd://2.1.9".into(),
            labels: [("kubernetes.io/hostname".to_string(), name.to_string())].into(),
            ready: true,
            unschedulable: false,
            taints: vec![],
            stretch: 1.0,
        }
    }

    fn object(&self) -> Value {
        let taints: Vec<Value> = self
            .taints
            .iter()
            .map(|(k, e)| json!({"key": k, "effect": e}))
            .collect();
        json!({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": self.name, "labels": self.labels},
            "spec": {"unschedulable": self.unschedulable, "taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": if self.ready { "True" } else { "False" }}],
                "runtimeHandlers": [{"name": "", "features": {"recursiveReadOnlyMounts": true}}],
                "nodeInfo": {"kubeletVersion": self.kubelet, "containerRuntimeVersion": self.runtime,
                    "kernelVersion": "6.18", "osImage": "Debian", "architecture": "amd64", "bootID": "", "machineID": "",
                    "systemUUID": "", "kubeProxyVersion": "", "operatingSystem": "linux"}}})
    }
}

#[derive(Clone, Debug)]
struct Script {
    pods: Vec<Item>,
    events: Vec<Item>,
    logs: BTreeMap<String, Vec<Line>>,
    rec_namespace: String,
    /// When the recorded create and DELETE were sent (the anchors of the offsets).
    created: Timestamp,
    deleted: Option<Timestamp>,
}

fn load_script(dir: &Path) -> Script {
    let actions = std::fs::read_to_string(dir.join("actions.jsonl")).unwrap();
    let mut create = None;
    let mut delete = None;
    for l in actions.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let sent = v
            .get("sent")
            .and_then(|s| s.as_str())
            .map(|s| s.parse::<Timestamp>().unwrap());
        match v["action"].as_str() {
            Some("create-pod" | "apply-pod") => create = sent,
            Some("delete") => delete = sent,
            _ => {}
        }
    }
    let create = create.expect("recording has a create-pod action");
    let at = |t: Timestamp| -> (f64, bool) {
        match delete {
            Some(d) if t >= d => (t.duration_since(d).as_secs_f64(), true),
            _ => (t.duration_since(create).as_secs_f64().max(0.0), false),
        }
    };
    let items = |file: &str| -> Vec<Item> {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        text.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let (offset, after_delete) = at(v["received"].as_str().unwrap().parse().unwrap());
                let object = v["event"]["object"].clone();
                let rv = object["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                Item {
                    offset,
                    after_delete,
                    rv,
                    kind: v["event"]["type"].as_str().unwrap().to_string(),
                    object,
                }
            })
            .collect()
    };
    let pods = items("pods.watch.jsonl");
    let rec_namespace = pods[0].object["metadata"]["namespace"].as_str().unwrap().to_string();
    // podlife's own reader gives each log line its container instance.
    let tl = podlife::observe::Recording::read(dir).unwrap().timeline();
    let mut logs: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for l in &tl.logs {
        let (offset, after_delete) = at(l.time);
        logs.entry(l.container.clone()).or_default().push(Line {
            offset,
            after_delete,
            instance: l.instance,
            time: l.time,
            body: l.text.clone(),
            text: format!("{} {}", l.time, l.text),
        });
    }
    Script {
        pods,
        events: items("events.watch.jsonl"),
        logs,
        rec_namespace,
        created: create,
        deleted: delete,
    }
}

#[derive(Debug)]
struct PodRun {
    /// Shared by every pod made from the same recording (see `FakeState::scripts`).
    script: Arc<Script>,
    namespace: String,
    applied: Instant,
    deleted: Option<Instant>,
    /// The node it runs on (`FakeState::nodes`), when the fake presents nodes.
    node: Option<String>,
    stretch: f64,
    /// Versions written after the apply by pod PUTs and the fake kubelet's answers to them.
    extra: Vec<Item>,
    /// `metadata.generation`: 1 at creation, bumped by each PUT that changes the spec.
    generation: i64,
}

impl PodRun {
    /// The newest version due now (recorded or written since), with its generation.
    fn current(&self, now: Instant) -> Option<Item> {
        let mut latest = self
            .script
            .pods
            .iter()
            .chain(&self.extra)
            .filter(|i| self.due(i.offset, i.after_delete).is_some_and(|d| d <= now))
            .max_by_key(|i| i.rv)
            // The pod exists from its apply on, before the first recorded version is due.
            .or(self.script.pods.first())
            .cloned()?;
        latest.object = self.localize(&latest.object);
        latest.object["metadata"]["generation"] = json!(self.generation);
        latest.object["metadata"]["resourceVersion"] = json!(latest.rv.to_string());
        Some(latest)
    }

    /// A version written now (`delay` later for the kubelet's), after every other.
    fn write(&mut self, object: Value, delay: Duration) -> u64 {
        let rv = self
            .script
            .pods
            .iter()
            .chain(&self.extra)
            .map(|i| i.rv)
            .max()
            .unwrap_or(0)
            .max(100_000)
            + 1;
        let mut object = object;
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let at = self.applied.elapsed() + delay;
        self.extra.push(Item {
            offset: at.as_secs_f64() / self.stretch,
            after_delete: false,
            rv,
            kind: "MODIFIED".into(),
            object,
        });
        rv
    }
}

impl PodRun {
    fn due(&self, offset: f64, after_delete: bool) -> Option<Instant> {
        let anchor = if after_delete { self.deleted? } else { self.applied };
        Some(anchor + Duration::from_secs_f64(offset * self.stretch))
    }
    fn localize(&self, v: &Value) -> Value {
        let s = v.to_string().replace(&self.script.rec_namespace, &self.namespace);
        let mut v: Value = serde_json::from_str(&s).unwrap();
        if let Some(n) = &self.node
            && v.pointer("/spec/nodeName").is_some()
        {
            v["spec"]["nodeName"] = json!(n);
        }
        v
    }
    /// A log line as served: on a stretched node its timestamp moves with it.
    fn line_text(&self, l: &Line) -> String {
        if self.stretch == 1.0 {
            return l.text.clone();
        }
        let anchor = if l.after_delete {
            self.script.deleted.unwrap_or(self.script.created)
        } else {
            self.script.created
        };
        let nanos = (l.offset * self.stretch * 1e9) as i64;
        let t = anchor
            .checked_add(jiff::SignedDuration::from_nanos(nanos))
            .unwrap_or(l.time);
        format!("{t} {}", l.body)
    }
}

#[derive(Debug, Default)]
struct Ns {
    uid: String,
    gone_at: Option<Instant>,
    labels: Value,
    /// As created (`podlife.dev/in-use-until`, ...); Null when none.
    annotations: Value,
    created: String,
}

/// What the fake does and what it saw.
#[derive(Debug, Default)]
pub struct FakeState {
    /// `METHOD path?query` of every request, in order.
    pub requests: Vec<String>,
    /// Grace periods sent with pod DELETEs.
    pub delete_graces: Vec<Option<i64>>,
    /// Merge patches sent to pods.
    pub merge_patches: Vec<Value>,
    /// Their content types (strategic or JSON merge patch).
    pub patch_content_types: Vec<String>,
    /// Pods as applied (after podlife's rendering), by name.
    pub applied: BTreeMap<String, Value>,
    /// Auxiliary objects as applied, in order: `(namespace, resource, name, body)`.
    pub objects: Vec<(String, String, String, Value)>,
    /// Requests to `pods/<name>/ephemeralcontainers`: `(method, content type, body)`.
    pub ephemeral: Vec<(String, String, Value)>,
    /// Bodies of pod PUTs (an `update` step), in order, as sent.
    pub pod_puts: Vec<Value>,
    /// The next this many pod PUTs answer 409 although their resourceVersion is current (the
    /// pod changed between the read and the PUT).
    pub pod_put_conflicts: u32,
    /// The next this many pod PUTs answer 500 without applying (etcd timing out).
    pub pod_put_errors: u32,
    /// The next this many pod PUTs are applied and then answered 500 (an answer lost after the
    /// write): only a read tells the client the change took effect.
    pub pod_put_lost_answers: u32,
    /// The fake kubelet never writes `status.observedGeneration` (a kubelet before 1.34, or a
    /// broken one); otherwise it writes each new generation 50 ms after the API bumped it.
    pub kubelet_ignores_generation: bool,
    /// The ephemeral containers the pod has (by patch or update), in order.
    pub ephemeral_containers: Vec<Value>,
    /// The next this many ephemeral-container PUTs answer 409: the pod changed between the
    /// read and the PUT (the kubelet writing its status, live after an API outage).
    pub ephemeral_conflicts: u32,
    /// Writes to `pods/<name>/resize`: `(method, content type, body)`.
    pub resize: Vec<(String, String, Value)>,
    /// The resources the fake's pod has, by container, as resized so far.
    pub resized: BTreeMap<String, Value>,
    /// How the next writes to `pods/<name>/resize` are answered, by method (`PATCH`, `PUT`), in
    /// order, before any is applied: 409 (the pod changed since it was read) or 500 (the API
    /// server failing).
    pub resize_answers: Vec<(&'static str, u16)>,
    /// How exec requests (`pods/<name>/exec`) are answered, in order (the last one repeats);
    /// empty: a 404.
    pub exec: Vec<FakeExec>,
    /// The exec requests' query strings (container, command, streams), in order.
    pub exec_queries: Vec<String>,
    /// Labels of created namespaces.
    pub namespace_labels: BTreeMap<String, Value>,
    /// SelfSubjectAccessReviews answered "not allowed": `(verb, resource)`.
    pub deny: BTreeSet<(String, String)>,
    /// Status code for GET /version (default 200).
    pub version_status: Option<u16>,
    /// Pods whose apply answers 500.
    pub fail_apply: BTreeSet<String>,
    /// Namespace deletes never complete.
    pub stuck_namespaces: bool,
    /// A created namespace's `default` ServiceAccount appears this long after the create (the
    /// controller-manager's delay; default at once).
    pub service_account_delay: Option<Duration>,
    /// When each namespace's ServiceAccount appears.
    service_account_at: BTreeMap<String, Instant>,
    /// End the first pod watch stream after this many events (tests resume).
    pub end_first_pod_watch_after: Option<usize>,
    /// Requests (`METHOD /path` prefixes) that are accepted and never answered.
    pub hang: Vec<String>,
    /// An API outage: the first request starting with `.0` begins it, and for `.1` from then every
    /// new request is refused as a connection error (an apiserver restart), then all is normal.
    pub outage_on: Option<(String, Duration)>,
    outage_until: Option<Instant>,
    /// Requests refused during the outage.
    pub refused: usize,
    /// Names whose namespace DELETE was sent with a UID precondition that did not match (and
    /// was refused with 409).
    pub refused_deletes: Vec<String>,
    /// `(resource, code, for)`: lists and watches of `pods` or `events` answer `code` (429 with
    /// Retry-After 1 s, or e.g. 500) for this long after the first such request.
    pub watch_status: Vec<(String, u16, Duration)>,
    /// `(code, for)`: log requests answer `code` for this long after the first one.
    pub log_status: Option<(u16, Duration)>,
    log_status_until: Option<Instant>,
    /// `(start, length)` after the first apply: every request fails to connect and every open
    /// stream (watch, log) breaks.
    pub outage: Option<(Duration, Duration)>,
    /// `(start, length)` after the first apply: GET /version is not answered (held until the
    /// window ends) while everything else is: a stalled connection of the client's own.
    pub version_silent: Option<(Duration, Duration)>,
    version_silent_window: Option<(Instant, Instant)>,
    /// After the outage, the first watch of each resource that resumes from a resourceVersion
    /// gets `410 Gone` ("too old resource version", as when etcd compacted during the outage),
    /// as an ERROR event in a 200 stream like a real API server: the watcher must re-list.
    pub gone_after_outage: bool,
    /// The resources (`pods`, `events`) that were answered 410 Gone.
    pub gone_sent: BTreeSet<String>,
    /// `(start, length)` after podlife's pod DELETE: an outage as `outage` (for a pod that
    /// finishes deleting while the API is away).
    pub outage_after_delete: Option<(Duration, Duration)>,
    /// This long after the first apply, every pod and event watch stream open then breaks
    /// (once; new watches are served as usual): a connection reset while nothing changes.
    pub break_watches_at: Option<Duration>,
    watch_break: Option<Instant>,
    /// The first list of pods is answered only after this long (an `ANSWERED` line is added to
    /// `requests` as it is).
    pub pod_list_delay: Option<Duration>,
    /// `(resource, type)` of every event the watch streams sent, in order.
    pub streamed: Vec<(String, String)>,
    /// The first follow of each container's log breaks in the middle of its fourth line.
    pub log_break_mid_line: bool,
    /// The second line of every log response carries invalid UTF-8 (bytes FF FE).
    pub log_invalid_utf8: bool,
    /// Once a follow of a pod's log has ended cleanly, every later log request of that pod
    /// answers 404 (the pod was deleted right after its container ended, before the pod
    /// watch showed the exit: live under load).
    pub log_gone_after_end: bool,
    /// With `log_gone_after_end`: the kubelet's answer for a log file that is gone, as live
    /// (an evicted pod, a removed container): 200 with its error as the body, not a 404.
    pub log_gone_as_text: bool,
    /// Every log request is answered 200 with this text as the body (no timestamps: the
    /// kubelet's error for a log it could not read).
    pub log_body_error: Option<String>,
    /// Pods whose log follow ended cleanly (with `log_gone_after_end`).
    log_ended: BTreeSet<(String, String)>,
    /// Lists and watches of events answer 403 (RBAC changed after the preflight).
    pub forbid_events: bool,
    /// Every pod version is served this much later than recorded, the log lines on time: the
    /// kubelet's status write trailing the runtime under load (live: a container's exit shown
    /// after its immediate restart had already printed).
    pub pod_watch_lag: Option<Duration>,
    /// `n → d`: the n-th log request (from 0) is answered only after `d`, with the log as it
    /// is then (a kubelet slow to serve one fetch while it serves the next at once).
    pub log_request_delays: BTreeMap<usize, Duration>,
    log_requests: usize,
    /// The nodes the cluster has (empty: the single Ready node `fake-node`).
    pub nodes: Vec<FakeNode>,
    /// `(namespace, pod, node)` of every apply, in order (node: where the pod was pinned).
    pub placed: Vec<(String, String, Option<String>)>,
    outage_window: Option<(Instant, Instant)>,
    burst_until: BTreeMap<(String, u16), Instant>,
    log_follows: BTreeMap<String, usize>,
    pod_watches: usize,
    /// Pod and Event watches open now, and the most that were open at once.
    pub open_watches: usize,
    pub peak_watches: usize,
    /// How often an open watch looks for versions that became due (default 20 ms).
    pub watch_poll: Option<Duration>,
    /// Each recording read once, however many pods (a fleet's copies) replay it.
    scripts: BTreeMap<PathBuf, Arc<Script>>,
    pub recordings: PathBuf,
    namespaces: BTreeMap<String, Ns>,
    pods: BTreeMap<(String, String), PodRun>,
}

impl FakeState {
    /// True while the configured outage is on.
    pub fn outage_active(&self) -> bool {
        self.outage_window
            .is_some_and(|(a, b)| (a..b).contains(&Instant::now()))
    }

    pub fn count(&self, needle: &str) -> usize {
        self.requests.iter().filter(|r| r.contains(needle)).count()
    }

    /// A namespace that exists before the run (someone else's, or a leftover of an earlier run).
    pub fn add_namespace(&mut self, name: &str, labels: Value, created: &str) {
        self.add_namespace_annotated(name, labels, Value::Null, created);
    }

    /// `add_namespace` with annotations (e.g. `podlife.dev/in-use-until` of a run in progress).
    pub fn add_namespace_annotated(&mut self, name: &str, labels: Value, annotations: Value, created: &str) {
        self.namespaces.insert(
            name.to_string(),
            Ns {
                uid: format!("uid-preexisting-{name}"),
                gone_at: None,
                labels,
                annotations,
                created: created.to_string(),
            },
        );
    }

    /// The annotations a namespace was created with (Null when none).
    pub fn namespace_annotations(&self, name: &str) -> Value {
        self.namespaces.get(name).map_or(Value::Null, |n| n.annotations.clone())
    }

    /// DELETEs of namespaces whose name starts with `prefix` (not of objects in them).
    pub fn namespace_deletes(&self, prefix: &str) -> usize {
        let needle = format!("DELETE /api/v1/namespaces/{prefix}");
        self.requests
            .iter()
            .filter(|r| {
                r.starts_with(&needle) && !r.split('?').next().unwrap_or_default()[needle.len()..].contains('/')
            })
            .count()
    }

    /// Whether the namespace exists (not deleted, or still terminating).
    pub fn namespace_exists(&self, name: &str) -> bool {
        self.namespaces
            .get(name)
            .is_some_and(|ns| ns.gone_at.is_none_or(|g| Instant::now() < g))
    }
}

/// Starts the fake on the current runtime; returns the client and the shared state.
pub fn start(recordings: &Path) -> (kube::Client, Arc<Mutex<FakeState>>) {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<RespBody>>();
    let state = Arc::new(Mutex::new(FakeState {
        recordings: recordings.to_path_buf(),
        ..FakeState::default()
    }));
    let st = state.clone();
    tokio::spawn(async move {
        while let Some((req, send)) = handle.next_request().await {
            let st = st.clone();
            if outage(&st, &format!("{} {}", req.method(), req.uri().path())) {
                send.send_error(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "fake outage: connection refused",
                ));
                continue;
            }
            tokio::spawn(async move {
                if st.lock().unwrap().outage_active() {
                    let line = format!("{} {} (outage)", req.method(), req.uri());
                    st.lock().unwrap().requests.push(line);
                    send.send_error(std::io::Error::new(
                        std::io::ErrorKind::ConnectionRefused,
                        "connection refused",
                    ));
                    return;
                }
                let resp = route(req, st).await;
                send.send_response(resp);
            });
        }
    });
    (kube::Client::new(svc, "default"), state)
}

/// Whether a request arriving now falls in the outage (starting it if this request triggers it).
fn outage(st: &Arc<Mutex<FakeState>>, line: &str) -> bool {
    let mut s = st.lock().unwrap();
    let now = Instant::now();
    if s.outage_until.is_none()
        && let Some((trigger, lasting)) = s.outage_on.clone()
        && line.starts_with(&trigger)
    {
        s.outage_until = Some(now + lasting);
    }
    let down = s.outage_until.is_some_and(|u| now < u);
    if down {
        s.refused += 1;
        s.requests.push(format!("REFUSED {line}"));
    }
    down
}

/// 200 with `text` as a plain body, as the kubelet answers a log it cannot read.
fn text_resp(text: &str) -> Response<RespBody> {
    let body = http_body_util::Full::new(Bytes::from(text.to_string()))
        .map_err(|e| -> BoxError { match e {} })
        .boxed();
    Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(body)
        .unwrap()
}

fn json_resp(code: u16, v: Value) -> Response<RespBody> {
    let body = http_body_util::Full::new(Bytes::from(v.to_string()))
        .map_err(|e| -> BoxError { match e {} })
        .boxed();
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
}

fn status(code: u16, reason: &str, message: &str) -> Response<RespBody> {
    json_resp(
        code,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason, "code": code}),
    )
}

fn streaming() -> (Frames, Response<RespBody>) {
    let (tx, rx): (Frames, UnboundedReceiver<_>) = unbounded();
    let body = BodyExt::boxed(StreamBody::new(rx));
    (
        tx,
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(body)
            .unwrap(),
    )
}

fn query(req: &Request<Body>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for pair in req.uri().query().unwrap_or("").split('&') {
        if let Some((k, v)) = pair.split_once('=') {
            out.insert(k.to_string(), decode(v));
        }
    }
    out
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(x) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(x);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}

async fn route(req: Request<Body>, st: Arc<Mutex<FakeState>>) -> Response<RespBody> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let q = query(&req);
    let hang = {
        let mut s = st.lock().unwrap();
        s.requests.push(format!("{method} {}", req.uri()));
        let line = format!("{method} {path}");
        s.hang.iter().any(|h| line.starts_with(h.as_str()))
    };
    if hang {
        // Accepted, never answered: only the client's own bounds end this request.
        std::future::pending::<()>().await;
    }
    if method == "GET" && path.ends_with("/exec") {
        let how = {
            let mut s = st.lock().unwrap();
            s.exec_queries.push(req.uri().query().unwrap_or("").to_string());
            let n = s.exec_queries.len();
            s.exec.get(n - 1).or(s.exec.last()).cloned()
        };
        let Some(how) = how else {
            return status(404, "NotFound", "the fake has no exec configured");
        };
        let (parts, _) = req.into_parts();
        return exec(parts, how).await;
    }
    // A log request asking for a websocket keeps its head for the upgrade.
    let (parts, body) = req.into_parts();
    let mut upgrading = (parts.headers.get("upgrade").and_then(|v| v.to_str().ok()))
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
        .then(|| parts.clone());
    let req = Request::from_parts(parts, body);
    let body: Value = {
        let bytes = req
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    let seg: Vec<&str> = path.trim_matches('/').split('/').collect();
    let watch = q.get("watch").is_some_and(|v| v == "true" || v == "1");
    match (method.as_str(), seg.as_slice()) {
        ("GET", ["version"]) => {
            let silent = st
                .lock()
                .unwrap()
                .version_silent_window
                .filter(|(a, b)| (*a..*b).contains(&Instant::now()));
            if let Some((_, until)) = silent {
                tokio::time::sleep_until(until.into()).await;
            }
            let code = st.lock().unwrap().version_status.unwrap_or(200);
            if code != 200 {
                return status(
                    code,
                    "Forbidden",
                    "forbidden: User \"system:anonymous\" cannot get path \"/version\"",
                );
            }
            json_resp(
                200,
                json!({"major": "1", "minor": "36", "gitVersion": "v1.36.2", "platform": "linux/amd64",
                "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "go1.26", "compiler": "gc"}),
            )
        }
        ("POST", ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"]) => {
            let ra = &body["spec"]["resourceAttributes"];
            let key = (
                ra["verb"].as_str().unwrap_or("").to_string(),
                ra["resource"].as_str().unwrap_or("").to_string(),
            );
            let allowed = !st.lock().unwrap().deny.contains(&key);
            let mut out = body.clone();
            out["status"] = json!({"allowed": allowed});
            json_resp(201, out)
        }
        ("GET", ["api", "v1", "nodes"]) if !st.lock().unwrap().nodes.is_empty() => {
            let s = st.lock().unwrap();
            let name = q.get("fieldSelector").and_then(|f| f.strip_prefix("metadata.name="));
            let items: Vec<Value> = s
                .nodes
                .iter()
                .filter(|n| name.is_none_or(|x| x == n.name))
                .map(FakeNode::object)
                .filter(|o| {
                    q.get("labelSelector")
                        .is_none_or(|l| selector_matches(l, &o["metadata"]["labels"]))
                })
                .collect();
            json_resp(
                200,
                json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
        }
        ("GET", ["api", "v1", "nodes"]) => {
            let node = json!({
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": "fake-node", "labels": {"pool": "runc"}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}],
                    "nodeInfo": {"kubeletVersion": "v1.36.2", "containerRuntimeVersion": "containerd://2.1.9",
                        "kernelVersion": "6.18", "osImage": "Debian", "architecture": "amd64", "bootID": "", "machineID": "",
                        "systemUUID": "", "kubeProxyVersion": "", "operatingSystem": "linux"}}});
            // Enough selector support for --node and --node-selector: name and one label.
            let by_name = q
                .get("fieldSelector")
                .and_then(|f| f.strip_prefix("metadata.name="))
                .is_none_or(|n| n == "fake-node");
            let by_label = q.get("labelSelector").is_none_or(|l| l == "pool=runc");
            let items: Vec<Value> = (by_name && by_label).then_some(node).into_iter().collect();
            json_resp(
                200,
                json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
        }
        // The kubelet's summary through the node proxy: what podlife reads a node's load from.
        ("GET", ["api", "v1", "nodes", name, "proxy", "stats", "summary"]) => json_resp(
            200,
            json!({"node": {"nodeName": name, "cpu": {"usageNanoCores": 700_000_000u64}}, "pods": []}),
        ),
        ("GET", ["api", "v1", "nodes", name]) => json_resp(
            200,
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"capacity": {"cpu": "2", "memory": "4Gi"}}}),
        ),
        ("POST", ["api", "v1", "namespaces"]) => {
            let name = body["metadata"]["name"].as_str().unwrap_or("").to_string();
            let mut s = st.lock().unwrap();
            if s.namespace_exists(&name) {
                return status(409, "AlreadyExists", &format!("namespaces \"{name}\" already exists"));
            }
            s.namespace_labels
                .insert(name.clone(), body["metadata"]["labels"].clone());
            let uid = format!("uid-{name}");
            s.namespaces.insert(
                name.clone(),
                Ns {
                    uid: uid.clone(),
                    gone_at: None,
                    labels: body["metadata"]["labels"].clone(),
                    annotations: body["metadata"]["annotations"].clone(),
                    created: Timestamp::now().to_string(),
                },
            );
            let at = Instant::now() + s.service_account_delay.unwrap_or_default();
            s.service_account_at.insert(name.clone(), at);
            let ns = &s.namespaces[&name];
            json_resp(201, ns_object(&name, ns, false))
        }
        (
            "GET",
            [
                "api",
                "v1",
                "namespaces",
                ns,
                kind @ ("serviceaccounts" | "configmaps"),
                name,
            ],
        ) => {
            let s = st.lock().unwrap();
            let ready = match *kind {
                "serviceaccounts" => {
                    *name == "default" && s.service_account_at.get(*ns).is_none_or(|t| *t <= Instant::now())
                }
                _ => *name == "kube-root-ca.crt",
            };
            if s.namespace_exists(ns) && ready {
                json_resp(
                    200,
                    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {"name": name, "namespace": ns}}),
                )
            } else {
                status(404, "NotFound", &format!("{kind} \"{name}\" not found"))
            }
        }
        ("GET", ["api", "v1", "namespaces", name]) => {
            let s = st.lock().unwrap();
            match s.namespaces.get(*name) {
                Some(ns) if s.namespace_exists(name) => json_resp(200, ns_object(name, ns, ns.gone_at.is_some())),
                _ => status(404, "NotFound", &format!("namespaces \"{name}\" not found")),
            }
        }
        ("DELETE", ["api", "v1", "namespaces", name]) => {
            let mut s = st.lock().unwrap();
            let stuck = s.stuck_namespaces;
            if !s.namespace_exists(name) {
                return status(404, "NotFound", &format!("namespaces \"{name}\" not found"));
            }
            let want = body["preconditions"]["uid"].as_str().map(str::to_string);
            let ns = s.namespaces.get_mut(*name).unwrap();
            if let Some(want) = want
                && want != ns.uid
            {
                let msg = format!(
                    "Operation cannot be fulfilled on namespaces \"{name}\": Precondition failed: UID in precondition: {want}, UID in object meta: {}",
                    ns.uid
                );
                s.refused_deletes.push(name.to_string());
                return status(409, "Conflict", &msg);
            }
            if !stuck && ns.gone_at.is_none() {
                ns.gone_at = Some(Instant::now() + Duration::from_millis(200));
            }
            json_resp(200, ns_object(name, ns, true))
        }
        ("GET", ["api", "v1", "namespaces"]) => namespaces(&st, &q, watch).await,
        ("PATCH", ["api", "v1", "namespaces", _, "pods", _]) if content_type.contains("merge-patch") => {
            let mut s = st.lock().unwrap();
            s.merge_patches.push(body.clone());
            s.patch_content_types.push(content_type.to_string());
            drop(s);
            json_resp(
                200,
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": seg[5]}}),
            )
        }
        ("GET", ["apis", "node.k8s.io", "v1", "runtimeclasses", name]) => {
            if *name == "gvisor" {
                json_resp(
                    200,
                    json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": "runsc"}),
                )
            } else {
                status(
                    404,
                    "NotFound",
                    &format!("runtimeclasses.node.k8s.io \"{name}\" not found"),
                )
            }
        }
        ("PATCH", ["api", "v1", "namespaces", ns, "pods", name]) => {
            let mut s = st.lock().unwrap();
            s.applied.insert(name.to_string(), body.clone());
            if s.fail_apply.contains(*name) {
                return status(500, "InternalError", "etcdserver: request timed out");
            }
            let dir = s.recordings.join(name);
            let script = s
                .scripts
                .entry(dir.clone())
                .or_insert_with(|| Arc::new(load_script(&dir)))
                .clone();
            // Where the scheduler (or nodeName) puts it: unpinned pods go to the first node.
            let pinned = body
                .pointer("/spec/nodeSelector/kubernetes.io~1hostname")
                .or_else(|| body.pointer("/spec/nodeName"))
                .and_then(|v| v.as_str())
                .map(str::to_string);
            let node = match &pinned {
                Some(p) => s
                    .nodes
                    .iter()
                    .find(|n| n.labels.get("kubernetes.io/hostname") == Some(p) || &n.name == p),
                None => s.nodes.first(),
            }
            .cloned();
            s.placed
                .push((ns.to_string(), name.to_string(), node.as_ref().map(|n| n.name.clone())));
            if s.outage_window.is_none()
                && let Some((start, len)) = s.outage
            {
                let a = Instant::now() + start;
                s.outage_window = Some((a, a + len));
            }
            if s.version_silent_window.is_none()
                && let Some((start, len)) = s.version_silent
            {
                let a = Instant::now() + start;
                s.version_silent_window = Some((a, a + len));
            }
            if s.watch_break.is_none()
                && let Some(at) = s.break_watches_at
            {
                s.watch_break = Some(Instant::now() + at);
            }
            s.pods.insert(
                (ns.to_string(), name.to_string()),
                PodRun {
                    script,
                    namespace: ns.to_string(),
                    applied: Instant::now(),
                    deleted: None,
                    stretch: node.as_ref().map_or(1.0, |n| n.stretch),
                    node: node.map(|n| n.name),
                    extra: vec![],
                    generation: 1,
                },
            );
            let mut out = body.clone();
            out["metadata"]["uid"] = json!("fake-uid");
            out["metadata"]["resourceVersion"] = json!("1");
            json_resp(200, out)
        }
        (
            "PATCH",
            [
                "api",
                "v1",
                "namespaces",
                ns,
                resource @ ("configmaps" | "secrets" | "services"),
                name,
            ],
        ) => {
            let mut s = st.lock().unwrap();
            s.objects
                .push((ns.to_string(), resource.to_string(), name.to_string(), body.clone()));
            let mut out = body.clone();
            out["metadata"]["uid"] = json!(format!("fake-uid-{resource}-{name}"));
            out["metadata"]["resourceVersion"] = json!("1");
            json_resp(200, out)
        }
        (
            "DELETE",
            [
                "api",
                "v1",
                "namespaces",
                ns,
                resource @ ("configmaps" | "secrets"),
                name,
            ],
        ) => {
            let mut s = st.lock().unwrap();
            let known = s
                .objects
                .iter()
                .any(|(n, r, x, _)| n == ns && r == resource && x == name);
            s.objects
                .push((ns.to_string(), resource.to_string(), name.to_string(), json!("DELETED")));
            if known {
                json_resp(200, json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}))
            } else {
                status(404, "NotFound", &format!("{resource} \"{name}\" not found"))
            }
        }
        (m @ ("PATCH" | "PUT" | "GET"), ["api", "v1", "namespaces", ns, "pods", name, "ephemeralcontainers"]) => {
            let mut s = st.lock().unwrap();
            if m != "GET" {
                s.ephemeral
                    .push((m.to_string(), content_type.to_string(), body.clone()));
            }
            let list = match m {
                // A strategic merge patch merges ephemeral containers by name.
                "PATCH" => body["spec"]["ephemeralContainers"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                "PUT" => {
                    if s.ephemeral_conflicts > 0 {
                        s.ephemeral_conflicts -= 1;
                        return status(
                            409,
                            "Conflict",
                            "Operation cannot be fulfilled on pods: the object has been modified; please apply your changes to the latest version and try again",
                        );
                    }
                    // The whole list is replaced, against the resourceVersion read.
                    if body["metadata"]["resourceVersion"] != json!(format!("{}", 10 + s.ephemeral_containers.len())) {
                        return status(409, "Conflict", "the object has been modified");
                    }
                    s.ephemeral_containers.clear();
                    body["spec"]["ephemeralContainers"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                }
                _ => vec![],
            };
            for c in list {
                let name = c["name"].clone();
                s.ephemeral_containers.retain(|x| x["name"] != name);
                s.ephemeral_containers.push(c);
            }
            json_resp(
                200,
                json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": ns, "resourceVersion": format!("{}", 10 + s.ephemeral_containers.len())},
                    "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], "ephemeralContainers": s.ephemeral_containers}}),
            )
        }
        (m @ ("PATCH" | "PUT" | "GET"), ["api", "v1", "namespaces", ns, "pods", name, "resize"]) => {
            let mut s = st.lock().unwrap();
            let version = |s: &FakeState| format!("{}", 20 + s.resize.len());
            if m != "GET" {
                if let Some(i) = s.resize_answers.iter().position(|(am, _)| *am == m) {
                    let code = s.resize_answers.remove(i).1;
                    s.resize
                        .push((format!("{m} answered {code}"), content_type.to_string(), body.clone()));
                    return match code {
                        409 => status(
                            409,
                            "Conflict",
                            "Operation cannot be fulfilled on pods: the object has been modified; please apply your changes to the latest version and try again",
                        ),
                        c => status(c, "InternalError", "etcdserver: request timed out"),
                    };
                }
                if m == "PUT" && body["metadata"]["resourceVersion"] != json!(version(&s)) {
                    return status(409, "Conflict", "the object has been modified");
                }
                s.resize.push((m.to_string(), content_type.to_string(), body.clone()));
                // A strategic merge patch merges containers by name and resources key by key;
                // an update replaces each container's resources.
                for c in body["spec"]["containers"].as_array().into_iter().flatten() {
                    let Some(n) = c["name"].as_str() else { continue };
                    let cur = s.resized.entry(n.to_string()).or_insert_with(|| json!({}));
                    if m == "PUT" {
                        *cur = c["resources"].clone();
                    } else {
                        for side in ["requests", "limits"] {
                            for (k, v) in c["resources"][side].as_object().into_iter().flatten() {
                                cur[side][k] = v.clone();
                            }
                        }
                    }
                }
            }
            let resources = s.resized.get("main").cloned().unwrap_or_else(|| json!({}));
            json_resp(
                200,
                json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": ns, "resourceVersion": version(&s)},
                    "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "resources": resources}]}}),
            )
        }
        // The pods of a namespace stopped at once at the end of a case: nothing to do for a
        // pod the fake plays from a recording.
        ("DELETE", ["api", "v1", "namespaces", _, "pods"]) => json_resp(
            200,
            json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []}),
        ),
        ("DELETE", ["api", "v1", "namespaces", ns, "pods", name]) => {
            let mut s = st.lock().unwrap();
            s.delete_graces.push(body["gracePeriodSeconds"].as_i64());
            if s.outage_window.is_none()
                && let Some((start, len)) = s.outage_after_delete
            {
                let a = Instant::now() + start;
                s.outage_window = Some((a, a + len));
            }
            match s.pods.get_mut(&(ns.to_string(), name.to_string())) {
                Some(run) => {
                    run.deleted.get_or_insert(Instant::now());
                    let last = run
                        .script
                        .pods
                        .iter()
                        .rfind(|i| !i.after_delete)
                        .map(|i| run.localize(&i.object));
                    json_resp(200, last.unwrap_or(json!({})))
                }
                None => status(404, "NotFound", &format!("pods \"{name}\" not found")),
            }
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods", name]) => {
            let s = st.lock().unwrap();
            match s
                .pods
                .get(&(ns.to_string(), name.to_string()))
                .and_then(|r| r.current(Instant::now()))
            {
                Some(i) => json_resp(200, i.object),
                None => status(404, "NotFound", &format!("pods \"{name}\" not found")),
            }
        }
        // An update: the API server's optimistic concurrency (409 on a stale resourceVersion),
        // its generation (bumped when the spec changed; a client's value ignored), and the fake
        // kubelet's status write of observedGeneration after it.
        ("PUT", ["api", "v1", "namespaces", ns, "pods", name]) => {
            let mut s = st.lock().unwrap();
            s.pod_puts.push(body.clone());
            if s.pod_put_errors > 0 {
                s.pod_put_errors -= 1;
                return status(500, "InternalError", "etcdserver: request timed out");
            }
            if s.pod_put_conflicts > 0 {
                s.pod_put_conflicts -= 1;
                return status(
                    409,
                    "Conflict",
                    "Operation cannot be fulfilled on pods: the object has been modified; please apply your changes to the latest version and try again",
                );
            }
            let lose = s.pod_put_lost_answers > 0;
            if lose {
                s.pod_put_lost_answers -= 1;
            }
            let observes = !s.kubelet_ignores_generation;
            let Some(run) = s.pods.get_mut(&(ns.to_string(), name.to_string())) else {
                return status(404, "NotFound", &format!("pods \"{name}\" not found"));
            };
            let Some(cur) = run.current(Instant::now()) else {
                return status(404, "NotFound", &format!("pods \"{name}\" not found"));
            };
            if body["metadata"]["resourceVersion"] != json!(cur.rv.to_string()) {
                return status(
                    409,
                    "Conflict",
                    "Operation cannot be fulfilled on pods: the object has been modified; please apply your changes to the latest version and try again",
                );
            }
            if body["spec"] != cur.object["spec"] {
                run.generation += 1;
            }
            let mut out = body.clone();
            out["metadata"]["generation"] = json!(run.generation);
            out["status"] = cur.object["status"].clone();
            let rv = run.write(out.clone(), Duration::ZERO);
            out["metadata"]["resourceVersion"] = json!(rv.to_string());
            if observes {
                let mut seen = out.clone();
                seen["status"]["observedGeneration"] = json!(run.generation);
                run.write(seen, Duration::from_millis(50));
            }
            if lose {
                return status(500, "InternalError", "etcdserver: leader changed");
            }
            json_resp(200, out)
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods"]) => items(&st, ns, Kind::Pods, watch, &q).await,
        ("GET", ["api", "v1", "namespaces", ns, "events"]) => items(&st, ns, Kind::Events, watch, &q).await,
        ("GET", ["api", "v1", "namespaces", ns, "pods", name, "log"]) if upgrading.is_some() => {
            let log = logs(&st, ns, name, &q).await;
            let timestamps = q.get("timestamps").is_some_and(|v| v == "true");
            log_websocket(upgrading.take().expect("checked"), log, timestamps).await
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods", name, "log"]) => logs(&st, ns, name, &q).await,
        _ => status(404, "NotFound", &format!("fake: no route for {method} {path}")),
    }
}

fn ns_object(name: &str, ns: &Ns, terminating: bool) -> Value {
    let mut meta = json!({"name": name, "uid": ns.uid, "resourceVersion": "5", "labels": ns.labels});
    if !ns.annotations.is_null() {
        meta["annotations"] = ns.annotations.clone();
    }
    if !ns.created.is_empty() {
        meta["creationTimestamp"] = json!(ns.created);
    }
    if terminating {
        meta["deletionTimestamp"] = json!(Timestamp::now().to_string());
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
        "status": {"phase": if terminating { "Terminating" } else { "Active" }}})
}

/// Whether labels match a selector of `key`, `key=value` terms joined by commas.
fn selector_matches(selector: &str, labels: &Value) -> bool {
    selector
        .split(',')
        .filter(|t| !t.is_empty())
        .all(|term| match term.split_once('=') {
            Some((k, v)) => labels[k].as_str() == Some(v),
            None => labels.get(term).is_some(),
        })
}

async fn namespaces(st: &Arc<Mutex<FakeState>>, q: &BTreeMap<String, String>, watch: bool) -> Response<RespBody> {
    let name = q
        .get("fieldSelector")
        .and_then(|f| f.strip_prefix("metadata.name="))
        .unwrap_or("")
        .to_string();
    fn present(s: &FakeState, name: &str) -> Option<String> {
        s.namespace_exists(name).then(|| s.namespaces[name].uid.clone())
    }
    if !watch {
        let s = st.lock().unwrap();
        let items: Vec<Value> = match q.get("labelSelector") {
            Some(sel) => s
                .namespaces
                .iter()
                .filter(|(n, ns)| s.namespace_exists(n) && selector_matches(sel, &ns.labels))
                .map(|(n, ns)| ns_object(n, ns, ns.gone_at.is_some()))
                .collect(),
            None => present(&s, &name)
                .map(|_| ns_object(&name, &s.namespaces[&name], true))
                .into_iter()
                .collect(),
        };
        return json_resp(
            200,
            json!({"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": "5"}, "items": items}),
        );
    }
    let (tx, resp) = streaming();
    let st = st.clone();
    tokio::spawn(async move {
        loop {
            let uid = present(&st.lock().unwrap(), &name);
            if uid.is_none() {
                let gone = Ns {
                    uid: format!("uid-{name}"),
                    ..Ns::default()
                };
                let ev = json!({"type": "DELETED", "object": ns_object(&name, &gone, true)});
                let _ = tx.unbounded_send(data(format!("{ev}\n")));
                return;
            }
            if tx.is_closed() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    resp
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Pods,
    Events,
}

/// The answer of a status burst or of forbidden events, if one applies to this request.
fn refusal(st: &Arc<Mutex<FakeState>>, ns: &str, kind: Kind) -> Option<Response<RespBody>> {
    let resource = if kind == Kind::Pods { "pods" } else { "events" };
    let mut s = st.lock().unwrap();
    if kind == Kind::Events && s.forbid_events {
        return Some(status(
            403,
            "Forbidden",
            &format!(
                "events is forbidden: User \"podlife\" cannot watch resource \"events\" in API group \"\" in the namespace \"{ns}\""
            ),
        ));
    }
    let now = Instant::now();
    for (r, code, length) in s.watch_status.clone() {
        if r != resource {
            continue;
        }
        let until = *s.burst_until.entry((r, code)).or_insert(now + length);
        if now < until {
            return Some(if code == 429 {
                json_resp(
                    429,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 429,
                        "reason": "TooManyRequests", "message": "Too many requests, please try again later.",
                        "details": {"retryAfterSeconds": 1}}),
                )
            } else {
                status(
                    code,
                    "InternalError",
                    "Internal error occurred: etcdserver: leader changed",
                )
            });
        }
    }
    None
}

async fn items(
    st: &Arc<Mutex<FakeState>>,
    ns: &str,
    kind: Kind,
    watch: bool,
    q: &BTreeMap<String, String>,
) -> Response<RespBody> {
    let list_kind = if kind == Kind::Pods { "PodList" } else { "EventList" };
    if let Some(r) = refusal(st, ns, kind) {
        return r;
    }
    // A watch resumes after the resourceVersion it names ("0" or none: from the start).
    let from_rv: u64 = q.get("resourceVersion").and_then(|v| v.parse().ok()).unwrap_or(0);
    if !watch {
        let delay = match kind {
            Kind::Pods => st.lock().unwrap().pod_list_delay.take(),
            Kind::Events => None,
        };
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let mut s = st.lock().unwrap();
        if delay.is_some() {
            s.requests.push(format!("ANSWERED the delayed list of pods in {ns}"));
        }
        let now = Instant::now();
        let due: Vec<_> = select_for(&s, ns, kind, |d, _| d.is_some_and(|d| d <= now));
        let rv = due.iter().map(|(_, i)| i.rv).max().unwrap_or(1);
        let mut latest: BTreeMap<String, (u64, Value, bool)> = BTreeMap::new();
        for (_, i) in &due {
            let key = i.object["metadata"]["name"].as_str().unwrap_or("").to_string();
            latest.insert(key, (i.rv, i.object.clone(), i.kind == "DELETED"));
        }
        let items: Vec<Value> = latest
            .into_values()
            .filter(|(_, _, gone)| !gone)
            .map(|(_, o, _)| o)
            .collect();
        return json_resp(
            200,
            json!({"apiVersion": "v1", "kind": list_kind, "metadata": {"resourceVersion": rv.to_string()}, "items": items}),
        );
    }
    let limit = if kind == Kind::Pods {
        let mut s = st.lock().unwrap();
        s.pod_watches += 1;
        if s.pod_watches == 1 {
            s.end_first_pod_watch_after
        } else {
            None
        }
    } else {
        None
    };
    let (tx, resp) = streaming();
    let resource = if kind == Kind::Pods { "pods" } else { "events" };
    let gone = {
        let mut s = st.lock().unwrap();
        let after_outage = s.outage_window.is_some_and(|(_, end)| Instant::now() >= end);
        s.gone_after_outage && after_outage && from_rv > 0 && s.gone_sent.insert(resource.to_string())
    };
    if gone {
        let ev = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": format!("too old resource version: {from_rv} (999999)"),
            "reason": "Expired", "code": 410}});
        let _ = tx.unbounded_send(data(format!("{ev}\n")));
        return resp;
    }
    let st = st.clone();
    let ns = ns.to_string();
    let opened = Instant::now();
    let poll = {
        let mut s = st.lock().unwrap();
        s.open_watches += 1;
        s.peak_watches = s.peak_watches.max(s.open_watches);
        s.watch_poll.unwrap_or(Duration::from_millis(20))
    };
    tokio::spawn(async move {
        // Counts the watch closed however the task ends.
        struct Open(Arc<Mutex<FakeState>>);
        impl Drop for Open {
            fn drop(&mut self) {
                if let Ok(mut s) = self.0.lock() {
                    s.open_watches -= 1;
                }
            }
        }
        let _open = Open(st.clone());
        let mut sent: BTreeSet<u64> = BTreeSet::new();
        let mut count = 0usize;
        loop {
            let batch: Vec<Item> = {
                let s = st.lock().unwrap();
                let now = Instant::now();
                let break_now = s.watch_break.is_some_and(|b| opened < b && b <= now);
                if s.outage_active() || break_now {
                    let _ = tx.unbounded_send(broken());
                    return;
                }
                let mut v: Vec<_> = select_for(&s, &ns, kind, |d, rv| {
                    d.is_some_and(|d| d <= now) && !sent.contains(&rv) && rv > from_rv
                })
                .into_iter()
                .map(|(_, i)| i)
                .collect();
                v.sort_by_key(|i| i.rv);
                v
            };
            for i in batch {
                sent.insert(i.rv);
                st.lock().unwrap().streamed.push((resource.to_string(), i.kind.clone()));
                let ev = json!({"type": i.kind, "object": i.object});
                if tx.unbounded_send(data(format!("{ev}\n"))).is_err() {
                    return;
                }
                count += 1;
                if limit.is_some_and(|l| count >= l) {
                    // End the stream: the watcher must resume from the last resourceVersion.
                    return;
                }
            }
            if tx.is_closed() {
                return;
            }
            tokio::time::sleep(poll).await;
        }
    });
    resp
}

/// Like `select` in `items`, for the streaming task (which does not borrow the request).
///
/// Only the items `keep` accepts (by due time and resourceVersion) are copied and localized: a
/// fleet's watches poll often, and most items are not due or already sent.
fn select_for(
    s: &FakeState,
    ns: &str,
    kind: Kind,
    keep: impl Fn(Option<Instant>, u64) -> bool,
) -> Vec<(Option<Instant>, Item)> {
    let mut out = vec![];
    let from = (ns.to_string(), String::new());
    for ((pns, _), run) in s.pods.range(from..) {
        if pns != ns {
            break;
        }
        let extra: &[Item] = if kind == Kind::Pods { &run.extra } else { &[] };
        let list = if kind == Kind::Pods {
            &run.script.pods
        } else {
            &run.script.events
        };
        let lag = if kind == Kind::Pods { s.pod_watch_lag } else { None };
        for i in list.iter().chain(extra) {
            let due = run.due(i.offset, i.after_delete).map(|d| d + lag.unwrap_or_default());
            if !keep(due, i.rv) {
                continue;
            }
            let mut i = i.clone();
            i.object = run.localize(&i.object);
            out.push((due, i));
        }
    }
    out
}

async fn logs(st: &Arc<Mutex<FakeState>>, ns: &str, name: &str, q: &BTreeMap<String, String>) -> Response<RespBody> {
    let container = q.get("container").cloned().unwrap_or_default();
    let follow = q.get("follow").is_some_and(|v| v == "true");
    let previous = q.get("previous").is_some_and(|v| v == "true");
    // Lines at or after `sinceTime` (whole seconds on the wire, as on a real server).
    let since: Option<Timestamp> = q.get("sinceTime").and_then(|t| t.parse().ok());
    let key = (ns.to_string(), name.to_string());
    let delay = {
        let mut s = st.lock().unwrap();
        let n = s.log_requests;
        s.log_requests += 1;
        s.log_request_delays.get(&n).copied()
    };
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    {
        let mut s = st.lock().unwrap();
        if let Some((code, lasting)) = s.log_status {
            let until = *s.log_status_until.get_or_insert_with(|| Instant::now() + lasting);
            if Instant::now() < until {
                return status(code, "InternalError", "fake: log requests fail");
            }
        }
    }
    let (lines, break_after, bad_utf8) = {
        let mut s = st.lock().unwrap();
        if let Some(text) = &s.log_body_error {
            return text_resp(text);
        }
        if s.log_ended.contains(&key) {
            if s.log_gone_as_text {
                return text_resp(&format!(
                    "unable to retrieve container logs for containerd://{name}-{container}\n"
                ));
            }
            return status(404, "NotFound", &format!("pods \"{name}\" not found"));
        }
        let Some(run) = s.pods.get(&key) else {
            return status(404, "NotFound", &format!("pods \"{name}\" not found"));
        };
        let all: Vec<Line> = run.script.logs.get(&container).cloned().unwrap_or_default();
        let now = Instant::now();
        let current = all
            .iter()
            .filter(|l| run.due(l.offset, l.after_delete).is_some_and(|d| d <= now))
            .map(|l| l.instance)
            .max();
        let Some(current) = current else {
            return status(
                400,
                "BadRequest",
                &format!("container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"),
            );
        };
        let instance = if previous { current.saturating_sub(1) } else { current };
        let lines: Vec<Line> = all
            .into_iter()
            .filter(|l| l.instance == instance)
            .map(|l| Line {
                text: run.line_text(&l),
                ..l
            })
            .filter(|l| {
                since.is_none_or(|since| {
                    l.text
                        .split_once(' ')
                        .and_then(|(t, _)| t.parse::<Timestamp>().ok())
                        .is_some_and(|t| t >= since)
                })
            })
            .collect();
        let nth = {
            let n = s.log_follows.entry(container.clone()).or_insert(0);
            if follow {
                *n += 1;
            }
            *n
        };
        let break_after = (follow && s.log_break_mid_line && nth == 1).then_some(3usize);
        (lines, break_after, s.log_invalid_utf8)
    };
    let (tx, resp) = streaming();
    let st = st.clone();
    tokio::spawn(async move {
        for (n, l) in lines.into_iter().enumerate() {
            // Due at its offset from the apply (or from our DELETE, once sent); a follow waits
            // for it, a plain fetch stops at the first line not written yet.
            loop {
                let (due, outage) = {
                    let s = st.lock().unwrap();
                    let due = s.pods.get(&key).and_then(|r| r.due(l.offset, l.after_delete));
                    (due, s.outage_active())
                };
                if outage {
                    let _ = tx.unbounded_send(broken());
                    return;
                }
                match due {
                    Some(d) if d <= Instant::now() => break,
                    _ if !follow => return,
                    _ => {}
                }
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let mut bytes = format!("{}\n", l.text).into_bytes();
            if bad_utf8 && n == 1 {
                let at = l.text.find(' ').map_or(0, |i| i + 1);
                bytes.splice(at..at, [0xFF, 0xFE]);
            }
            if break_after == Some(n) {
                // Half of the line, then the connection drops.
                bytes.truncate(bytes.len() / 2);
                let _ = tx.unbounded_send(data(bytes));
                let _ = tx.unbounded_send(broken());
                return;
            }
            if tx.unbounded_send(data(bytes)).is_err() {
                return;
            }
        }
        // All lines sent (a follow waited for them): the container is done, so is the stream.
        if follow {
            let mut s = st.lock().unwrap();
            if s.log_gone_after_end {
                s.log_ended.insert(key);
            }
        }
    });
    resp
}
