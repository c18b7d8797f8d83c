//! `exec` steps: a command run in a container over the API server's websocket, and the exit
//! code its final status carries.

use std::sync::Arc;
use std::time::Duration;

use super::{CaseApi, ClusterError, describe};

/// The exit code an exec's final status carries: `Success` is 0, `Failure` with reason
/// `NonZeroExitCode` carries it as the `ExitCode` cause (the kubelet's streaming server writes
/// it so); anything else (no status, another failure) is an error, with its message.
pub fn exec_status(s: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>) -> Result<i32, String> {
    let Some(s) = s else {
        return Err("the stream ended without an exit status".into());
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
            .ok_or_else(|| format!("exit status NonZeroExitCode without a readable code: {:?}", s.message)),
        other => Err(format!(
            "exec status {}: {}",
            other.unwrap_or("(none)"),
            s.message.as_deref().unwrap_or("(no message)")
        )),
    }
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
        use tokio::io::AsyncReadExt;
        self.count();
        *self.last_sent.lock().unwrap_or_else(|p| p.into_inner()) = Some(jiff::Timestamp::now());
        let mut out = crate::observe::ExecResult {
            container: container.to_string(),
            command: command.to_vec(),
            protocol: (!protocol.is_default()).then(|| protocol.as_str().to_string()),
            ..Default::default()
        };
        let ap = kube::api::AttachParams::default()
            .container(container)
            .stdin(false)
            .stdout(true)
            .stderr(true);
        // Output as received, kept when the exec is cut short (it is evidence, not a result).
        type Buf = Arc<std::sync::Mutex<(Vec<u8>, bool)>>;
        let (so, se): (Buf, Buf) = (Arc::default(), Arc::default());
        fn keep(buf: &Buf, bytes: &[u8]) {
            let mut b = buf.lock().unwrap_or_else(|p| p.into_inner());
            let room = crate::observe::EXEC_OUTPUT_CAP.saturating_sub(b.0.len());
            if bytes.len() > room {
                b.1 = true;
            }
            b.0.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        async fn drain(r: &mut Option<impl tokio::io::AsyncRead + Unpin>, buf: &Buf) {
            let Some(r) = r else { return };
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = r.read(&mut chunk).await {
                keep(buf, &chunk[..n]);
            }
        }
        // What is still buffered once the stream's task has ended. A task that ended in an error
        // drops its writers without closing them, so a read would wait forever: only what is
        // ready is read.
        fn rest(r: &mut Option<impl tokio::io::AsyncRead + Unpin>, buf: &Buf) {
            use futures::FutureExt;
            let Some(r) = r else { return };
            let mut chunk = [0u8; 4096];
            while let Some(Ok(n @ 1..)) = r.read(&mut chunk).now_or_never() {
                keep(buf, &chunk[..n]);
            }
        }
        let pods = self.pods();
        let kube_ws = async {
            let mut p = pods.exec(pod, command.to_vec(), &ap).await.map_err(|e| describe(&e))?;
            let status = p.take_status();
            let (mut out_r, mut err_r) = (p.stdout(), p.stderr());
            // Output is read while waiting for the exit status, which ends the exec; the status
            // future also ends (empty) when the stream ends without one.
            let status = {
                let reading = async {
                    tokio::join!(drain(&mut out_r, &so), drain(&mut err_r, &se));
                    std::future::pending::<()>().await
                };
                tokio::select! {
                    s = async { match status { Some(s) => s.await, None => None } } => s,
                    _ = reading => None,
                }
            };
            let joined = p.join().await;
            rest(&mut out_r, &so);
            rest(&mut err_r, &se);
            match exec_status(status.as_ref()) {
                // The status arrived; a stream error after it loses nothing judged.
                Ok(code) => Ok(code),
                Err(why) => Err(match joined {
                    Err(e) => format!("the stream broke: {e}"),
                    Ok(()) => why,
                }),
            }
        };
        let channel = async {
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
                1 => keep(&so, data),
                2 => keep(&se, data),
                _ => {}
            };
            super::websocket::read_all(&mut socket, |m| got.take(m, &mut streams)).await?;
            got.exit_code()
        };
        let run = async {
            match protocol {
                crate::suite::ExecProtocol::V5 => kube_ws.await,
                crate::suite::ExecProtocol::Channel => channel.await,
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
            Ok(Err(e)) => Some(e),
            Ok(Ok(code)) => {
                out.exit_code = Some(code);
                None
            }
        };
        for (buf, text) in [(&so, &mut out.stdout), (&se, &mut out.stderr)] {
            let b = buf.lock().unwrap_or_else(|p| p.into_inner());
            *text = String::from_utf8_lossy(&b.0).into_owned();
            out.truncated |= b.1;
        }
        Ok(out)
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
    pub async fn fetch_log(
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
        let mut bad: Option<String> = None;
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
                                bad = Some(format!("a message that is not base64: {e}"));
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
            Ok(Err(e)) => Some(e),
            Ok(Ok(())) => bad,
        };
        out.stdout = String::from_utf8_lossy(&bytes).into_owned();
        Ok(out)
    }
}
