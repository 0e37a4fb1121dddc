//! Logging over MCP (2025-11-25): `logging/setLevel`, and the messages a
//! called guest logs (the contract's `log` import) sent to the session's
//! client as `notifications/message` at or above the level it set. They
//! still reach the host's log; the client gets them only once it asked.
//!
//! Bounds: a call sends at most [`MAX_PER_CALL`] messages, through a queue
//! of [`QUEUE`]; what does not fit is dropped and counted, and the call's
//! last notification says how many were dropped. Each message is already cut
//! to the host's bound and has every configured secret masked.
//!
//! 2026-07-28 deprecates logging (SEP-2577) and has no session to keep a
//! level in: `logging/setLevel` is "method not found" there.

#![expect(
    deprecated,
    reason = "rmcp marks MCP logging deprecated (SEP-2577); 2025-11-25 clients still use it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ServerCapabilities, SetLevelRequestMethod,
    SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use super::Feature;
use crate::mcp::revision::Revision;
use crate::mcp::session::Session;
use crate::mcp::session::settings;
use crate::tool::{LogLevel, LogSink};
use crate::toolset::Context;

/// The most messages one call sends its client.
const MAX_PER_CALL: u32 = 100;

/// How many of a call's messages may wait for the client.
const QUEUE: usize = 32;

/// Logging is always offered (2025-11-25 clients).
pub(in crate::mcp) struct Logging;

impl Feature for Logging {
    fn advertise(&self, capabilities: &mut ServerCapabilities) {
        capabilities.logging = Some(Default::default());
    }
}

/// The level a session's client set (0: none yet, so nothing is sent).
#[derive(Debug, Default)]
pub(in crate::mcp) struct SessionLevel(AtomicU8);

impl SessionLevel {
    /// The lowest level sent, if the client set one.
    fn get(&self) -> Option<LoggingLevel> {
        level_of(self.0.load(Ordering::Relaxed))
    }
}

/// `logging/setLevel`: from now on the session's calls send their guests'
/// messages at `level` and above (on every replica that serves it).
pub(in crate::mcp) async fn set_level(
    session: &Session,
    request: SetLevelRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    if Revision::of(context).call_is_its_invocation() {
        return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
    }
    session
        .log_level()
        .0
        .store(rank(request.level), Ordering::Relaxed);
    let Ok(Value::String(level)) = serde_json::to_value(request.level) else {
        return Ok(());
    };
    let setting = crate::state::sessions::Setting::LogLevel(&level);
    crate::mcp::session::settings::share(session, context, setting).await
}

/// The level another replica's copy of the session keeps (`settings`), if
/// it is one.
pub(in crate::mcp) fn restore(session: &Session, level: &str) {
    if let Ok(level) = serde_json::from_value::<LoggingLevel>(Value::String(level.to_owned())) {
        session.log_level().0.store(rank(level), Ordering::Relaxed);
    }
}

/// `cx`, with a sink sending its guest's messages to the client of `request`
/// when the session's client set a level.
pub(in crate::mcp) fn attach(
    session: &Session,
    request: &RequestContext<RoleServer>,
    cx: Context,
    tool: &str,
) -> Context {
    let Some(threshold) = session.log_level().get() else {
        return cx;
    };
    let (queue, mut waiting) = tokio::sync::mpsc::channel::<LoggingMessageNotificationParam>(QUEUE);
    let dropped = Arc::new(AtomicU32::new(0));
    let sent = AtomicU32::new(0);
    let logger = tool.to_owned();
    let counted = Arc::clone(&dropped);
    let sink = LogSink::new(move |level, message| {
        let level = mcp_level(level);
        if rank(level) < rank(threshold) {
            return;
        }
        let message =
            LoggingMessageNotificationParam::new(level, Value::String(message.to_owned()))
                .with_logger(logger.clone());
        if sent.fetch_add(1, Ordering::Relaxed) >= MAX_PER_CALL || queue.try_send(message).is_err()
        {
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    let peer = request.peer.clone();
    let logger = tool.to_owned();
    // In a fleet, through the bus to whichever replica holds the session's
    // `GET` stream, where messages that belong to no request go.
    let relay = settings::log_relay(session, request);
    let send = move |message: LoggingMessageNotificationParam| {
        let (peer, relay) = (peer.clone(), relay.clone());
        async move {
            if let Some(relay) = &relay
                && relay_line(relay, &message).await
            {
                return true;
            }
            peer.notify_logging_message(message).await.is_ok()
        }
    };
    // Ends when the call's sink is gone (its instance dropped or rearmed).
    tokio::spawn(async move {
        while let Some(message) = waiting.recv().await {
            if !send(message).await {
                return;
            }
        }
        let dropped = dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            let message = LoggingMessageNotificationParam::new(
                LoggingLevel::Warning,
                Value::String(format!(
                    "{dropped} log message(s) of this call were dropped (at most {MAX_PER_CALL} per call are sent)"
                )),
            );
            send(message.with_logger(logger)).await;
        }
    });
    cx.with_log_sink(sink)
}

/// The contract's level as MCP's (trace is debug).
fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Trace | LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warn => LoggingLevel::Warning,
        _ => LoggingLevel::Error,
    }
}

/// MCP's levels in order of severity, from 1 (0 is "not set").
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

fn level_of(rank: u8) -> Option<LoggingLevel> {
    Some(match rank {
        1 => LoggingLevel::Debug,
        2 => LoggingLevel::Info,
        3 => LoggingLevel::Notice,
        4 => LoggingLevel::Warning,
        5 => LoggingLevel::Error,
        6 => LoggingLevel::Critical,
        7 => LoggingLevel::Alert,
        8 => LoggingLevel::Emergency,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_keep_their_order_and_round_trip() {
        let all = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        for (i, level) in all.into_iter().enumerate() {
            assert_eq!(usize::from(rank(level)), i + 1);
            assert_eq!(level_of(rank(level)), Some(level));
        }
        assert_eq!(level_of(0), None);
        assert!(rank(mcp_level(LogLevel::Warn)) > rank(mcp_level(LogLevel::Info)));
        assert_eq!(mcp_level(LogLevel::Trace), LoggingLevel::Debug);
    }
}

/// A call's log message on the bus ([`settings::LOGS`]).
#[derive(serde::Serialize, serde::Deserialize)]
pub(in crate::mcp) struct LogLine {
    /// The session's public name.
    pub(in crate::mcp) session: String,
    message: LoggingMessageNotificationParam,
}

/// Publishes a call's log message for every replica's copy of its session
/// (this one's too): false if it could not, when the caller sends it itself.
async fn relay_line(
    (store, session): &(crate::state::StateStore, String),
    message: &LoggingMessageNotificationParam,
) -> bool {
    let line = LogLine {
        session: session.clone(),
        message: message.clone(),
    };
    let Ok(payload) = serde_json::to_string(&line) else {
        return false;
    };
    store
        .publish(settings::LOGS, &payload)
        .await
        .is_ok_and(|heard| heard > 0)
}

/// Sends a log message heard on the bus to this copy's client.
pub(in crate::mcp) async fn send_line(peer: &rmcp::Peer<RoleServer>, line: LogLine) {
    let _ = peer.notify_logging_message(line.message).await;
}
