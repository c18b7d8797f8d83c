//! Websocket streams opened with the subprotocol a case names: exec over `channel.k8s.io`, which
//! the API server proxies to the kubelet's streaming server unchanged (kube's `connect` always
//! offers `v5.channel.k8s.io`, which the API server translates to SPDY before the kubelet), and
//! the log endpoint's `binary.k8s.io` and `base64.binary.k8s.io`.

use futures::StreamExt;
use http::header::{
    CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::{Message, handshake, protocol::Role};

use super::{CaseApi, describe};

/// An open websocket to the API server.
pub(crate) type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Why an exec or a log read over a stream has no result: it is kept in the step's record
/// (`error`), with the output received until then.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum StreamError {
    #[error("building the request: {0}")]
    Request(String),
    /// The request failed before any stream opened (refused, an error status).
    #[error("{0}")]
    Api(String),
    #[error("the websocket upgrade was answered {status}: {body}")]
    Refused { status: http::StatusCode, body: String },
    #[error("the websocket upgrade's Sec-WebSocket-Accept does not match our key")]
    AcceptKey,
    #[error("the server chose the websocket protocol {chosen:?}, not {offered:?}")]
    Protocol { chosen: String, offered: String },
    #[error("the websocket upgrade failed: {0}")]
    Upgrade(String),
    #[error("the websocket broke: {0}")]
    WebsocketBroke(String),
    /// The exec stream (kube's v5 websocket) failed before its exit status came.
    #[error("the stream broke: {0}")]
    StreamBroke(String),
    #[error("the stream ended without closing")]
    NotClosed,
    #[error("the error stream says: {0}")]
    ErrorStream(String),
    #[error("the stream ended without an exit status")]
    NoStatus,
    #[error("exit status NonZeroExitCode without a readable code: {0:?}")]
    UnreadableCode(Option<String>),
    #[error("exec status {status}: {message}")]
    Status { status: String, message: String },
    #[error("a message that is not base64: {0}")]
    NotBase64(String),
}

/// The most of an error body kept in a message: a `Status` is a few hundred bytes.
const ERROR_BODY_CAP: usize = 4096;

impl CaseApi {
    /// Opens a websocket to `uri` (a path and query) offering only `protocol`, and checks the
    /// server's answer as RFC 6455 says (101, the accept key, the protocol it chose). An answer
    /// other than 101 is an error carrying its status and body (a `Status` naming the cause).
    pub(crate) async fn websocket(&self, uri: &str, protocol: &str) -> Result<Socket, StreamError> {
        let key = handshake::client::generate_key();
        let req = http::Request::get(uri)
            .header(CONNECTION, "Upgrade")
            .header(UPGRADE, "websocket")
            .header(SEC_WEBSOCKET_VERSION, "13")
            .header(SEC_WEBSOCKET_KEY, &key)
            .header(SEC_WEBSOCKET_PROTOCOL, protocol)
            .body(kube::client::Body::from(Vec::new()))
            .map_err(|e| StreamError::Request(e.to_string()))?;
        let res = self
            .client
            .send(req)
            .await
            .map_err(|e| StreamError::Api(describe(&e)))?;
        if res.status() != http::StatusCode::SWITCHING_PROTOCOLS {
            let status = res.status();
            let body = match res.into_body().collect().await {
                Ok(b) => {
                    let b = b.to_bytes();
                    String::from_utf8_lossy(&b[..b.len().min(ERROR_BODY_CAP)]).into_owned()
                }
                Err(e) => format!("(body unreadable: {e})"),
            };
            return Err(StreamError::Refused {
                status,
                body: body.trim().to_string(),
            });
        }
        let h = res.headers();
        let accept = handshake::derive_accept_key(key.as_bytes());
        if h.get(SEC_WEBSOCKET_ACCEPT).and_then(|v| v.to_str().ok()) != Some(accept.as_str()) {
            return Err(StreamError::AcceptKey);
        }
        let chosen = h
            .get(SEC_WEBSOCKET_PROTOCOL)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if chosen != protocol {
            return Err(StreamError::Protocol {
                chosen: chosen.to_string(),
                offered: protocol.to_string(),
            });
        }
        let upgraded = hyper::upgrade::on(res)
            .await
            .map_err(|e| StreamError::Upgrade(e.to_string()))?;
        Ok(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, None).await)
    }
}

/// What an exec over `channel.k8s.io` sent: every binary message starts with its channel (1
/// stdout, 2 stderr, 3 the error stream); the server may open each channel with an empty one.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ChannelOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub error: Vec<u8>,
    /// The server closed the stream (a close frame), rather than the connection breaking.
    pub closed: bool,
}

impl ChannelOutput {
    /// Takes in one message; false once the stream has ended.
    pub(crate) fn take(&mut self, m: Message, keep: &mut dyn FnMut(u8, &[u8])) -> bool {
        match m {
            Message::Binary(b) => {
                if let Some((&channel, data)) = b.split_first() {
                    if channel == 3 {
                        self.error.extend_from_slice(data);
                    }
                    keep(channel, data);
                }
                true
            }
            Message::Close(_) => {
                self.closed = true;
                false
            }
            _ => true,
        }
    }

    /// The exit code the base protocol conveys: none on the error stream is success (the
    /// kubelet writes nothing for a zero exit); a non-zero exit is the status's message only,
    /// "command terminated with non-zero exit code: … exited with N …", from which the code
    /// is read. Anything else on the error stream is the failure it names.
    pub(crate) fn exit_code(&self) -> Result<i32, StreamError> {
        if !self.closed {
            return Err(StreamError::NotClosed);
        }
        if self.error.is_empty() {
            return Ok(0);
        }
        let text = String::from_utf8_lossy(&self.error);
        let code = regex::Regex::new(r"non-zero exit code.*?(?:exited with|exit code|exit status) (\d+)")
            .expect("a valid pattern")
            .captures(&text)
            .and_then(|c| c[1].parse().ok());
        code.ok_or_else(|| StreamError::ErrorStream(text.trim().to_string()))
    }
}

/// Reads a socket until it ends, handing each message to `take`, which answers false at the
/// end of the stream.
pub(crate) async fn read_all(socket: &mut Socket, mut take: impl FnMut(Message) -> bool) -> Result<(), StreamError> {
    while let Some(m) = socket.next().await {
        match m {
            Ok(m) => {
                if !take(m) {
                    return Ok(());
                }
            }
            Err(e) => return Err(StreamError::WebsocketBroke(e.to_string())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(messages: Vec<Message>) -> ChannelOutput {
        let mut out = ChannelOutput::default();
        let mut seen = vec![];
        for m in messages {
            if !out.take(m, &mut |ch, d| seen.push((ch, d.to_vec()))) {
                break;
            }
        }
        out
    }

    fn on(channel: u8, s: &str) -> Message {
        let mut v = vec![channel];
        v.extend_from_slice(s.as_bytes());
        Message::binary(v)
    }

    #[test]
    fn the_base_protocol_conveys_an_exit_code_only_as_the_error_streams_message() {
        let ok = fed(vec![
            on(1, ""),
            on(2, ""),
            on(3, ""),
            on(1, "hi\n"),
            Message::Close(None),
        ]);
        assert_eq!(ok.exit_code(), Ok(0));
        // containerd's exec error, as the kubelet's streaming server writes it for v1.
        let three = fed(vec![
            on(
                3,
                "command terminated with non-zero exit code: command 'sh -c exit 3' exited with 3: ",
            ),
            Message::Close(None),
        ]);
        assert_eq!(three.exit_code(), Ok(3));
        let failed = fed(vec![
            on(
                3,
                "Internal error occurred: error executing command in container: not found",
            ),
            Message::Close(None),
        ]);
        assert!(failed.exit_code().unwrap_err().to_string().contains("not found"));
        // A connection that dropped without a close frame has no result, even with no error.
        assert!(fed(vec![on(1, "hi\n")]).exit_code().is_err());
    }
}
