//! A streaming call over MCP: its parts gathered into the final result, and
//! reported on the way in progress notifications when the client asked.

use std::time::Duration;

use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};

use crate::error::CallError;
use crate::mcp::convert::stream_result;
use crate::tool::ToolStream;
use crate::tool::{Collector, Part};

/// Pulls a stream to its end, reporting it in progress notifications when the
/// client of `request` asked for progress (at most one per `interval`; see the
/// module docs; a task, polled instead, has no request here); the result holds
/// the whole output. (The call's observers are told by the stream itself when
/// it ends.)
pub(super) async fn pump(
    mut stream: ToolStream,
    tool: &str,
    request: Option<&RequestContext<RoleServer>>,
    interval: Duration,
    result_text: bool,
) -> Result<CallToolResult, CallError> {
    let mut progress = request.and_then(|request| {
        let token = request.meta.get_progress_token()?;
        Some(Progress::new(token, interval, request.peer.clone()))
    });
    let mut parts = Collector::new();
    loop {
        let next = match progress.as_ref().and_then(Progress::due) {
            Some(due) => tokio::select! {
                biased;
                part = stream.next() => part,
                () = tokio::time::sleep_until(due) => {
                    if let Some(progress) = &mut progress {
                        progress.flush(tool).await;
                    }
                    continue;
                }
            },
            None => stream.next().await,
        };
        let Some(part) = next else { break };
        let part = match part {
            Ok(part) => part,
            Err(err) => return Err(err),
        };
        if let Some(progress) = &mut progress {
            progress.add(&part);
            if progress
                .due()
                .is_some_and(|due| due <= tokio::time::Instant::now())
            {
                progress.flush(tool).await;
            }
        }
        parts.push(part);
    }
    // What is still pending goes out before the result.
    if let Some(progress) = &mut progress {
        progress.flush(tool).await;
    }
    let usage = stream.usage();
    let output = parts.finish(stream.call_id(), usage);
    Ok(stream_result(output, result_text))
}

/// The progress of one streaming call: chunks not yet reported are merged
/// until the next notification may go.
struct Progress {
    token: rmcp::model::ProgressToken,
    interval: Duration,
    /// Whom to tell.
    peer: Peer<RoleServer>,
    /// Chunks so far.
    count: u32,
    /// The text of the chunks not yet reported, and how many there are.
    pending: String,
    unsent: u32,
    last_sent: Option<tokio::time::Instant>,
}

impl Progress {
    fn new(token: rmcp::model::ProgressToken, interval: Duration, peer: Peer<RoleServer>) -> Self {
        Self {
            token,
            interval,
            peer,
            count: 0,
            pending: String::new(),
            unsent: 0,
            last_sent: None,
        }
    }

    fn add(&mut self, part: &Part) {
        self.count = self.count.saturating_add(1);
        self.unsent += 1;
        let message = progress_message(part);
        if !matches!(part, Part::Text(_))
            && !self.pending.is_empty()
            && !self.pending.ends_with('\n')
        {
            self.pending.push('\n');
        }
        self.pending.push_str(&message);
    }

    /// When the pending chunks may be reported; `None` when there are none.
    fn due(&self) -> Option<tokio::time::Instant> {
        if self.unsent == 0 {
            return None;
        }
        Some(match self.last_sent {
            Some(at) => at + self.interval,
            None => tokio::time::Instant::now(),
        })
    }

    async fn flush(&mut self, tool: &str) {
        if self.unsent == 0 {
            return;
        }
        let message = std::mem::take(&mut self.pending);
        self.unsent = 0;
        self.last_sent = Some(tokio::time::Instant::now());
        let progress = ProgressNotificationParam::new(self.token.clone(), f64::from(self.count))
            .with_message(message);
        if let Err(err) = self.peer.notify_progress(progress).await {
            tracing::debug!(%tool, %err, "could not send a progress notification");
        }
    }
}

fn progress_message(part: &Part) -> String {
    match part {
        Part::Text(text) => text.clone(),
        Part::Json(value) => value.to_string(),
        Part::Blob {
            mime_type, data, ..
        } => format!("{mime_type}, {} bytes", data.len()),
    }
}
