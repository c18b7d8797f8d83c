//! `exec` steps: a command run in a container over the API server's websocket, and the exit
//! code its final status carries.

use std::time::Duration;

use super::websocket::StreamError;
use super::{CaseApi, ClusterError, describe};

/// The exit code an exec's final status carries: `Success` is 0, `Failure` with reason
/// `NonZeroExitCode` carries it as the `ExitCode` cause (the kubelet's streaming server writes
/// it so); anything else (no status, another failure) is an error, with its message.
pub fn exec_status(s: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>) -> Result<i32, StreamError> {
    let Some(s) = s else {
        return Err(StreamError::NoStatus);
    };
    match s.status.as_deref() {
        Some("Success") => Ok(0),
        _ if s.reason.as_deref() == Some("NonZeroExitCode") => s
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|c| c.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message.as_deref())
            .and_then(|m| m.trim().parse::<i32>().ok())
            .ok_or_else(|| StreamError::UnreadableCode(s.message.clone())),
        other => Err(StreamError::Status {
            status: other.unwrap_or("(none)").to_string(),
            message: s.message.as_deref().unwrap_or("(no message)").to_string(),
        }),
    }
}

/// One output stream of an exec as received, up to the cap (and whether more came): kept when
/// the exec is cut short, since it is evidence, not a result.
#[derive(Default)]
struct Captured(std::sync::Mutex<(Vec<u8>, bool)>);

impl Captured {
    fn keep(&self, bytes: &[u8]) {
        let mut b = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let room = crate::observe::EXEC_OUTPUT_CAP.saturating_sub(b.0.len());
        if bytes.len() > room {
            b.1 = true;
        }
        b.0.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Reads `r` to its end.
    async fn drain(&self, r: &mut Option<impl tokio::io::AsyncRead + Unpin>) {
        use tokio::io::AsyncReadExt;
        let Some(r) = r else { return };
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = r.read(&mut chunk).await {
            self.keep(&chunk[..n]);
        }
    }

    /// What is still buffered once the stream's task has ended. A task that ended in an error
    /// drops its writers without closing them, so a read would wait forever: only what is
    /// ready is read.
    fn rest(&self, r: &mut Option<impl tokio::io::AsyncRead + Unpin>) {
        use futures::FutureExt;
        use tokio::io::AsyncReadExt;
        let Some(r) = r else { return };
        let mut chunk = [0u8; 4096];
        while let Some(Ok(n @ 1..)) = r.read(&mut chunk).now_or_never() {
            self.keep(&chunk[..n]);
        }
    }

    /// The text received, and whether some was cut.
    fn text(&self) -> (String, bool) {
        let b = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (String::from_utf8_lossy(&b.0).into_owned(), b.1)
    }
}

/// What one exec received on stdout and stderr.
#[derive(Default)]
struct ExecOutput {
    stdout: Captured,
    stderr: Captured,
}

impl CaseApi {
    /// Runs `command` in a container of the pod through the `exec` subresource (a websocket to
    /// the API server, which streams from the kubelet), bounded by `timeout`. Never retried: a
    /// command is not known to be idempotent. Whatever goes wrong (an error status before the
    /// stream opens, a stream broken before the exit status, no exit status in time) is in the
    /// result's `error`, with the output received until then; only cancellation is an `Err`.
    pub async fn exec(
        &self,
        pod: &str,
        container: &str,
        command: &[String],
        protocol: crate::suite::ExecProtocol,
        timeout: Duration,
    ) -> Result<crate::observe::ExecResult, ClusterError> {
        self.count();
        *self.last_sent.lock().unwrap_or_else(|p| p.into_inner()) = Some(jiff::Timestamp::now());
        let mut out = crate::observe::ExecResult {
            container: container.to_string(),
            command: command.to_vec(),
            protocol: (!protocol.is_default()).then(|| protocol.as_str().to_string()),
            ..Default::default()
        };
        let received = ExecOutput::default();
        let run = async {
            match protocol {
                crate::suite::ExecProtocol::V5 => self.exec_v5(pod, container, command, &received).await,
                crate::suite::ExecProtocol::Channel => {
                    self.exec_channel(pod, container, command, protocol, &received).await
                }
            }
        };
        let r = tokio::select! {
            r = tokio::time::timeout(timeout, run) => r,
            _ = self.cancelled() => return Err(ClusterError::Interrupted),
        };
        out.error = match r {
            Err(_) => Some(format!(
                "no exit status within {} (the step's timeout)",
                crate::util::fmt_secs(timeout.as_secs_f64())
            )),
            Ok(Err(e)) => Some(e.to_string()),
            Ok(Ok(code)) => {
                out.exit_code = Some(code);
                None
            }
        };
        let ((stdout, cut_out), (stderr, cut_err)) = (received.stdout.text(), received.stderr.text());
        (out.stdout, out.stderr, out.truncated) = (stdout, stderr, cut_out || cut_err);
        Ok(out)
    }

    /// An exec over kube's websocket (`v5.channel.k8s.io`), its output into `received`.
    async fn exec_v5(
        &self,
        pod: &str,
        container: &str,
        command: &[String],
        received: &ExecOutput,
    ) -> Result<i32, StreamError> {
        let ap = kube::api::AttachParams::default()
            .container(container)
            .stdin(false)
            .stdout(true)
            .stderr(true);
        let mut p = self
            .pods()
            .exec(pod, command.to_vec(), &ap)
            .await
            .map_err(|e| StreamError::Api(describe(&e)))?;
        let status = p.take_status();
        let (mut out_r, mut err_r) = (p.stdout(), p.stderr());
        // Output is read while waiting for the exit status, which ends the exec; the status
        // future also ends (empty) when the stream ends without one.
        let status = {
            let reading = async {
                tokio::join!(received.stdout.drain(&mut out_r), received.stderr.drain(&mut err_r));
                std::future::pending::<()>().await
            };
            tokio::select! {
                s = async { match status { Some(s) => s.await, None => None } } => s,
                _ = reading => None,
            }
        };
        let joined = p.join().await;
        received.stdout.rest(&mut out_r);
        received.stderr.rest(&mut err_r);
        match exec_status(status.as_ref()) {
            // The status arrived; a stream error after it loses nothing judged.
            Ok(code) => Ok(code),
            Err(why) => Err(match joined {
                Err(e) => StreamError::StreamBroke(e.to_string()),
                Ok(()) => why,
            }),
        }
    }

    /// An exec over a websocket of `protocol` (`channel.k8s.io`), its output into `received`.
    async fn exec_channel(
        &self,
        pod: &str,
        container: &str,
        command: &[String],
        protocol: crate::suite::ExecProtocol,
        received: &ExecOutput,
    ) -> Result<i32, StreamError> {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("container", container);
        for c in command {
            q.append_pair("command", c);
        }
        q.append_pair("stdout", "true").append_pair("stderr", "true");
        let uri = format!("/api/v1/namespaces/{}/pods/{pod}/exec?{}", self.namespace, q.finish());
        let mut socket = self.websocket(&uri, protocol.as_str()).await?;
        let mut got = super::websocket::ChannelOutput::default();
        let mut streams = |channel: u8, data: &[u8]| match channel {
            1 => received.stdout.keep(data),
            2 => received.stderr.keep(data),
            _ => {}
        };
        super::websocket::read_all(&mut socket, |m| got.take(m, &mut streams)).await?;
        got.exit_code()
    }
}

impl CaseApi {
    /// Returns when the run is cancelled (never without a cancel signal).
    async fn cancelled(&self) {
        match self.cancel.clone() {
            Some(mut rx) => {
                let _ = rx.wait_for(|v| *v).await;
            }
            None => std::future::pending::<()>().await,
        }
    }

    /// Reads a container's log once through the `log` endpoint over a websocket of `protocol`
    /// (the API server streams from the kubelet), bounded by `timeout`: the bytes as received
    /// are the result's stdout. Like `exec`, whatever goes wrong is in the result's `error`
    /// with what was received until then; only cancellation is an `Err`.
    pub(crate) async fn fetch_log(
        &self,
        pod: &str,
        container: &str,
        protocol: crate::suite::LogProtocol,
        timeout: Duration,
    ) -> Result<crate::observe::ExecResult, ClusterError> {
        use base64::Engine;
        use tokio_tungstenite::tungstenite::Message;
        self.count();
        *self.last_sent.lock().unwrap_or_else(|p| p.into_inner()) = Some(jiff::Timestamp::now());
        let mut out = crate::observe::ExecResult {
            container: container.to_string(),
            protocol: Some(protocol.as_str().to_string()),
            ..Default::default()
        };
        let mut bytes: Vec<u8> = vec![];
        let mut bad: Option<StreamError> = None;
        let read = async {
            let q = form_urlencoded::Serializer::new(String::new())
                .append_pair("container", container)
                .finish();
            let uri = format!("/api/v1/namespaces/{}/pods/{pod}/log?{q}", self.namespace);
            let mut socket = self.websocket(&uri, protocol.as_str()).await?;
            super::websocket::read_all(&mut socket, |m| {
                let data = match (protocol, m) {
                    (_, Message::Close(_)) => return false,
                    (crate::suite::LogProtocol::Binary, Message::Binary(b)) => b.to_vec(),
                    (crate::suite::LogProtocol::Base64, Message::Text(t)) => {
                        match base64::engine::general_purpose::STANDARD.decode(t.as_str().trim()) {
                            Ok(b) => b,
                            Err(e) => {
                                bad = Some(StreamError::NotBase64(e.to_string()));
                                return false;
                            }
                        }
                    }
                    _ => return true,
                };
                let room = crate::observe::EXEC_OUTPUT_CAP.saturating_sub(bytes.len());
                out.truncated |= data.len() > room;
                bytes.extend_from_slice(&data[..data.len().min(room)]);
                true
            })
            .await
        };
        let r = tokio::select! {
            r = tokio::time::timeout(timeout, read) => r,
            _ = self.cancelled() => return Err(ClusterError::Interrupted),
        };
        out.error = match r {
            Err(_) => Some(format!(
                "the log was still streaming after {} (the step's timeout)",
                crate::util::fmt_secs(timeout.as_secs_f64())
            )),
            Ok(Err(e)) => Some(e.to_string()),
            Ok(Ok(())) => bad.map(|e| e.to_string()),
        };
        out.stdout = String::from_utf8_lossy(&bytes).into_owned();
        Ok(out)
    }
}
