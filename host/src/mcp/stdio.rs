//! The stdio transport: newline-delimited JSON-RPC on a byte stream pair.
//!
//! rmcp's own line transport drops what it cannot parse, so a client that sent
//! a bad line waits forever for an answer. This one checks every line before
//! rmcp sees it and answers each request it cannot hand on itself, as JSON-RPC
//! 2.0 asks (id `null` where the id cannot be read):
//!
//! | line | answer |
//! | --- | --- |
//! | not JSON | −32700 parse error, id `null` |
//! | JSON nested deeper than 128 levels | −32600, with the id when it can be read |
//! | longer than [`MAX_LINE`] | −32600, with the id when the line's first 4 KiB hold it before any long member, else `null` (the rest of the line is skipped) |
//! | a batch (array) | one −32600 per request in it (MCP has no batches since 2025-06-18) |
//! | not an object, no or a non-string `method`, a bad `jsonrpc` or `id` | −32600 |
//! | `params` not an object, or of the wrong shape for a known method | −32602 |
//!
//! Notifications are never answered, as JSON-RPC asks: a bad one is logged and
//! dropped. Responses (to the server's own requests) that do not parse are
//! dropped too, so two peers cannot echo errors at each other forever.
//!
//! Every request it hands on carries a [`Hangup`] that end of input (or a
//! read error) cancels: that stops the session's running calls at once
//! instead of letting rmcp wait for them.

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetExtensions, JsonRpcMessage, JsonRpcRequest,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;

use futures_util::StreamExt as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use inline::Inline;
use lines::{Frame, Lines};
use output::Output;

use super::request::{invalid_params_message, is_known_method, params_problem};
use super::session::Session;
use super::transport::Hangup;

/// The longest line read (one JSON-RPC message), like rmcp's own limit.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// What became of one line.
#[derive(Debug)]
enum Verdict {
    /// A message for rmcp.
    Deliver(Box<ClientJsonRpcMessage>),
    /// Answered here: this JSON goes back to the client.
    Answer(Value),
    /// Nothing to do (an empty line, a bad notification or response).
    Skip,
}

/// A line transport that answers what rmcp would leave unanswered.
pub(crate) struct StdioTransport<R> {
    /// The client's lines (`lines.rs`).
    read: FramedRead<R, Lines>,
    out: Option<Arc<Output>>,
    closed: CancellationToken,
    /// Runs the session's `tools/call`s as they are read (see `inline.rs`).
    inline: Option<Inline>,
}

impl<R: AsyncRead + Send + Unpin> StdioTransport<R> {
    /// A transport over `read` and `write`, and the writer's task: it ends
    /// once the transport is closed or dropped, after writing what is queued.
    pub(crate) fn new<W>(
        read: R,
        write: W,
        closed: CancellationToken,
    ) -> (Self, tokio::task::JoinHandle<()>)
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (out, writer) = Output::start(Box::new(write));
        let transport = Self {
            read: FramedRead::new(read, Lines::new(MAX_LINE)),
            out: Some(out),
            closed,
            inline: None,
        };
        (transport, writer)
    }

    /// Runs `session`'s plain `tools/call`s on the reading task instead of
    /// through rmcp's session loop, which serves `session` too.
    pub(crate) fn calling(mut self, session: Session) -> Self {
        self.inline = self
            .out
            .as_ref()
            .map(|out| Inline::new(session, Arc::clone(out)));
        self
    }
}

impl<R> Drop for StdioTransport<R> {
    fn drop(&mut self) {
        if let Some(out) = self.out.take() {
            out.close();
        }
    }
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for StdioTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Encoded and written here, in rmcp's session loop, so messages go
        // out in the order they are sent, and most at once.
        let out = self.out.clone();
        let sent = match &out {
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the transport is closed",
            )),
            Some(out) => out.send(&item),
        };
        async move {
            sent?;
            if let Some(out) = out {
                out.room().await;
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // Cancel-safe: a partial line stays buffered for the next call.
            let verdict = match self.read.next().await {
                Some(Ok(Frame::Line(line))) => check_line(&line),
                Some(Ok(Frame::Oversized(head))) => {
                    tracing::warn!(
                        limit = MAX_LINE,
                        "an MCP message longer than the limit was skipped"
                    );
                    Verdict::Answer(error(
                        id_in_head(&head),
                        -32600,
                        format!(
                            "Invalid Request: the message is longer than {} MiB",
                            MAX_LINE >> 20
                        ),
                    ))
                }
                None => {
                    tracing::debug!("the MCP client closed its end");
                    self.closed.cancel();
                    return None;
                }
                Some(Err(err)) => {
                    tracing::warn!(%err, "cannot read from the MCP client");
                    self.closed.cancel();
                    return None;
                }
            };
            match verdict {
                Verdict::Deliver(mut message) => {
                    if let JsonRpcMessage::Request(request) = &mut *message {
                        request.request.extensions_mut().insert(Hangup::new(
                            self.closed.clone(),
                            "the client closed its end",
                        ));
                    }
                    let Some(inline) = &self.inline else {
                        return Some(*message);
                    };
                    let more = !self.read.read_buffer().is_empty();
                    if let Some(message) = inline.handle(*message, more) {
                        return Some(message);
                    }
                    // Run here: its answer may be queued behind a client
                    // that does not read; read no more until it does.
                    self.out.as_ref()?.room().await;
                }
                Verdict::Answer(answer) => {
                    let out = self.out.as_ref()?;
                    // Written before the next line is read; a client that
                    // reads nothing is held back here.
                    out.send(&answer).ok()?;
                    out.room().await;
                }
                Verdict::Skip => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // rmcp has let its own calls answer; now the ones run here.
        if let Some(inline) = &self.inline {
            inline.finish().await;
        }
        if let Some(out) = self.out.take() {
            out.close();
        }
        Ok(())
    }
}

/// A JSON-RPC error response.
fn error(id: Value, code: i32, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What to do with one line (its newline included or not).
fn check_line(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(items)) => batch(&items),
        Ok(Value::Object(map)) => check_message(map),
        Ok(_) => Verdict::Answer(error(
            Value::Null,
            -32600,
            "Invalid Request: a JSON-RPC message is an object".to_owned(),
        )),
        Err(err) => {
            // Valid JSON nested too deep for serde_json (128 levels) still has
            // a readable envelope: `IgnoredAny` skips values without recursing.
            #[derive(Deserialize)]
            struct Envelope {
                id: Option<Value>,
                method: Option<Value>,
            }
            match serde_json::from_slice::<Envelope>(line) {
                Ok(Envelope {
                    id: None,
                    method: Some(_),
                }) => {
                    tracing::info!(%err, "dropped an MCP notification nested too deep");
                    Verdict::Skip
                }
                Ok(envelope) => Verdict::Answer(error(
                    answerable_id(envelope.id.as_ref()),
                    -32600,
                    format!("Invalid Request: the message is nested too deep ({err})"),
                )),
                Err(_) => {
                    Verdict::Answer(error(Value::Null, -32700, format!("Parse error: {err}")))
                }
            }
        }
    }
}

/// The id to answer with: the request's when it is a string or a number.
fn answerable_id(id: Option<&Value>) -> Value {
    match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// The `id` of the request an over-long line begins, when the line's first
/// bytes hold it as a top-level member before any long one (as clients write
/// `{"jsonrpc":"2.0","id":7,"method":…`), so the client can match the
/// refusal to its request; else `null`.
fn id_in_head(head: &[u8]) -> Value {
    let mut rest = head.trim_ascii_start();
    let Some(after) = rest.strip_prefix(b"{") else {
        return Value::Null;
    };
    rest = after;
    // Each member: a key, a colon and a value that is whole in the head.
    loop {
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<Value>();
        let Some(Ok(Value::String(key))) = values.next() else {
            return Value::Null;
        };
        rest = rest[values.byte_offset()..].trim_ascii_start();
        let Some(after) = rest.strip_prefix(b":") else {
            return Value::Null;
        };
        let mut values = serde_json::Deserializer::from_slice(after).into_iter::<Value>();
        let Some(Ok(value)) = values.next() else {
            return Value::Null;
        };
        rest = after[values.byte_offset()..].trim_ascii_start();
        if key == "id" {
            // Whole only if something follows it (`"id":12` may be 123 cut).
            return if rest.starts_with(b",") || rest.starts_with(b"}") {
                answerable_id(Some(&value))
            } else {
                Value::Null
            };
        }
        let Some(after) = rest.strip_prefix(b",") else {
            return Value::Null;
        };
        rest = after;
    }
}

/// A batch: MCP removed JSON-RPC batching (2025-06-18), so every request in
/// it is refused, by id; notifications in it are dropped.
fn batch(items: &[Value]) -> Verdict {
    const WHY: &str =
        "Invalid Request: batches are not supported; send each message on its own line";
    if items.is_empty() {
        return Verdict::Answer(error(Value::Null, -32600, WHY.to_owned()));
    }
    let answers: Vec<Value> = items
        .iter()
        .filter(|item| {
            // A notification (a method, no id) is never answered.
            !(item.get("method").is_some_and(Value::is_string) && item.get("id").is_none())
        })
        .map(|item| error(answerable_id(item.get("id")), -32600, WHY.to_owned()))
        .collect();
    if answers.is_empty() {
        tracing::info!("dropped a batch of MCP notifications");
        Verdict::Skip
    } else {
        Verdict::Answer(Value::Array(answers))
    }
}

/// Checks one message object against JSON-RPC 2.0 and MCP.
fn check_message(mut map: Map<String, Value>) -> Verdict {
    let invalid = |id: Value, why: &str| {
        Verdict::Answer(error(id, -32600, format!("Invalid Request: {why}")))
    };
    let id = match map.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        // A peer's error about a message it could not read (id `null`).
        Some(Value::Null) if !map.contains_key("method") && is_response(&map) => {
            tracing::debug!("dropped an MCP error response without an id");
            return Verdict::Skip;
        }
        Some(_) => return invalid(Value::Null, "`id` must be a string or a number"),
    };
    if id
        .as_ref()
        .is_some_and(|id| id.is_number() && id.as_i64().is_none())
    {
        return invalid(id.unwrap_or_default(), "a numeric `id` must be an integer");
    }
    let answer_id = id.clone().unwrap_or(Value::Null);
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return if id.is_none() && !map.contains_key("method") && is_response(&map) {
            Verdict::Skip
        } else {
            invalid(answer_id, "`jsonrpc` must be \"2.0\"")
        };
    }
    let method = match map.get("method") {
        Some(Value::String(method)) => method.clone(),
        Some(_) => return invalid(answer_id, "`method` must be a string"),
        None if id.is_some() && is_response(&map) => return deliver_response(map),
        None if is_response(&map) => {
            tracing::debug!("dropped an MCP error response without an id");
            return Verdict::Skip;
        }
        None => return invalid(answer_id, "no `method`"),
    };
    let params_error = match map.get("params") {
        None | Some(Value::Object(_)) => None,
        Some(_) => Some("`params` must be an object".to_owned()),
    };
    let Some(id) = id else {
        // A notification: never answered.
        if let Some(why) = &params_error {
            tracing::info!(%method, "dropped an MCP notification: {why}");
            return Verdict::Skip;
        }
        return match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(map)) {
            Ok(message) => Verdict::Deliver(Box::new(message)),
            Err(err) => {
                tracing::info!(%method, %err, "dropped an MCP notification");
                Verdict::Skip
            }
        };
    };
    let invalid_params = |why: String| {
        Verdict::Answer(error(
            id.clone(),
            -32602,
            invalid_params_message(&method, &why),
        ))
    };
    if let Some(why) = params_error {
        return invalid_params(why);
    }
    if method == "tools/call" {
        match super::request::call_request(&id, &mut map) {
            Some(Ok((id, call))) => {
                let message = JsonRpcMessage::request(ClientRequest::CallToolRequest(call), id);
                return Verdict::Deliver(Box::new(message));
            }
            Some(Err(why)) => return invalid_params(why),
            None => {}
        }
    }
    // A known method's misfit params: answered here as the session's
    // `on_custom_request` would, since before the handshake (a bad
    // `initialize`) rmcp's handler never sees the request.
    match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(map)) {
        Ok(JsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::CustomRequest(custom),
            ..
        })) if is_known_method(&method) => invalid_params(params_problem(&method, custom.params)),
        Ok(message) => Verdict::Deliver(Box::new(message)),
        Err(err) => invalid_params(err.to_string()),
    }
}

/// Whether a message without `method` looks like a response.
fn is_response(map: &Map<String, Value>) -> bool {
    map.contains_key("result") || map.contains_key("error")
}

/// A response to one of the server's requests, handed on if it parses.
fn deliver_response(map: Map<String, Value>) -> Verdict {
    match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(map)) {
        Ok(message) => Verdict::Deliver(Box::new(message)),
        Err(err) => {
            tracing::info!(%err, "dropped an MCP response that does not parse");
            Verdict::Skip
        }
    }
}

pub(crate) type Reader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
pub(crate) type Writer = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// This process's stdin and stdout for serving. tokio's `stdin()` and
/// `stdout()` do every read and write on the blocking thread pool, two thread
/// hand-offs per message (half the time of a trivial call's round trip went to
/// switching threads); a pipe is registered with the reactor instead.
pub(crate) fn stdio() -> (Reader, Writer) {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        use tokio::net::unix::pipe;
        let stdin = std::io::stdin().as_fd().try_clone_to_owned();
        let read: Reader = match stdin.and_then(pipe::Receiver::from_owned_fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        };
        let stdout = std::io::stdout().as_fd().try_clone_to_owned();
        let write: Writer = match stdout.and_then(pipe::Sender::from_owned_fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        };
        (read, write)
    }
    #[cfg(not(unix))]
    {
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    }
}

mod inline;
mod lines;
mod output;
#[cfg(test)]
mod tests;
