//! `probe_watches`: a `kube::Client` over another that reports its watch requests (when the
//! latest was sent, how many were answered 2xx), so a stream built on kube-runtime's `watcher`
//! learns when its watch is back: after an error the watcher restarts the watch silently and
//! yields nothing until the watched object next changes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use http_body_util::BodyExt;
use http_body_util::combinators::MapErr;
use jiff::Timestamp;
use kube::Client;
use kube::client::Body;
use tokio::sync::watch;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The real client's response body, its errors unwrapped (see `unwrap_body_error`).
type ProbedBody = MapErr<Body, fn(kube::Error) -> BoxError>;

/// kube's client wraps a body's error as `Error::Service`, and would wrap it again on the way out
/// of the probed client ("ServiceError: ServiceError: connection reset by peer"): hand the
/// original back, so an error reads the same with the probe as without.
fn unwrap_body_error(e: kube::Error) -> BoxError {
    match e {
        kube::Error::Service(inner) => inner,
        other => Box::new(other),
    }
}

/// What the watch requests (`watch=true`) sent through a probed client have done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WatchRequests {
    /// When the latest one was sent. A watcher sends one only once its previous watch ended, so
    /// that watch delivered until about then.
    pub sent: Option<Timestamp>,
    /// How many were answered 2xx: the server streams again. Receivers are notified only of
    /// these answers, not of the requests sent.
    pub answered: u64,
}

/// Forwards every request to the real client; notes the watch requests on the way.
struct Probe {
    inner: Client,
    requests: Arc<watch::Sender<WatchRequests>>,
}

impl tower_service::Service<Request<Body>> for Probe {
    type Response = Response<ProbedBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ProbedBody>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The real client queues requests itself (kube's client is a buffered service).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let watch = req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true"));
        let inner = self.inner.clone();
        let requests = self.requests.clone();
        Box::pin(async move {
            if watch {
                requests.send_if_modified(|r| {
                    r.sent = Some(Timestamp::now());
                    false
                });
            }
            // The error goes back as it came: kube's client unboxes its own errors, so callers
            // see the same `kube::Error` as without the probe.
            let resp = inner.send(req).await.map_err(|e| -> BoxError { Box::new(e) })?;
            if watch && resp.status().is_success() {
                requests.send_modify(|r| r.answered += 1);
            }
            Ok(resp.map(|b| b.map_err(unwrap_body_error as fn(kube::Error) -> BoxError)))
        })
    }
}

/// A client that sends every request through `client` and reports the watch requests among
/// them on the returned receiver. Give each watched source its own: the reports are then that
/// source's watches only.
pub fn probe_watches(client: Client) -> (Client, watch::Receiver<WatchRequests>) {
    let (tx, rx) = watch::channel(WatchRequests::default());
    let namespace = client.default_namespace().to_string();
    let probe = Probe {
        inner: client,
        requests: Arc::new(tx),
    };
    (Client::new(probe, namespace), rx)
}
