//! The bus in Redis: `PUBLISH` on the shared connection, and one pub/sub
//! connection per subscription, remade when Redis drops it.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::mpsc;

use super::Redis;
use crate::state::StateError;
use crate::state::bus::BusMessage;

/// How long a subscription waits before it is remade.
const RESUBSCRIBE: Duration = Duration::from_millis(200);

impl Redis {
    fn channel(&self, name: &str) -> String {
        format!("{}bus:{name}", self.prefix)
    }

    pub(crate) async fn publish(&self, channel: &str, payload: &str) -> Result<u64, StateError> {
        let (channel, payload) = (self.channel(channel), payload.to_owned());
        self.run("publish", |mut c| async move {
            ::redis::cmd("PUBLISH")
                .arg(channel)
                .arg(payload)
                .query_async(&mut c)
                .await
        })
        .await
    }

    /// `PUBSUB NUMSUB` of `channel`: how many subscribers hear it.
    pub(crate) async fn listeners(&self, channel: &str) -> Result<u64, StateError> {
        let channel = self.channel(channel);
        let counts: HashMap<String, u64> = self
            .run("pubsub numsub", |mut c| async move {
                ::redis::cmd("PUBSUB")
                    .arg("NUMSUB")
                    .arg(channel)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(counts.into_values().sum())
    }

    /// Subscribes to `channels` on a task of its own, which sends what
    /// arrives to `sender` until it is closed.
    pub(crate) fn subscribe(&self, channels: Vec<String>, sender: mpsc::Sender<BusMessage>) {
        let client = self.client.clone();
        let limit = self.timeout;
        let prefix = self.channel("");
        let channels: Vec<String> = channels.iter().map(|c| self.channel(c)).collect();
        tokio::spawn(async move {
            // Only the first failure in a row is a warning: Redis away for
            // an hour must not write a line every 200 ms.
            let mut failing = false;
            loop {
                let subscribed = async {
                    let mut pubsub = client.get_async_pubsub().await?;
                    for channel in &channels {
                        pubsub.subscribe(channel).await?;
                    }
                    Ok::<_, ::redis::RedisError>(pubsub)
                };
                let outcome = tokio::select! {
                    () = sender.closed() => return,
                    outcome = tokio::time::timeout(limit, subscribed) => outcome,
                };
                match outcome {
                    Ok(Ok(pubsub)) => {
                        if failing {
                            tracing::info!("subscribed to the state store's bus again");
                        }
                        failing = false;
                        let mut messages = pubsub.into_on_message();
                        loop {
                            let message = tokio::select! {
                                () = sender.closed() => return,
                                message = messages.next() => message,
                            };
                            let Some(message) = message else { break };
                            let Ok(payload) = message.get_payload::<String>() else {
                                continue;
                            };
                            let name = message.get_channel_name();
                            let channel = name.strip_prefix(&prefix).unwrap_or(name).to_owned();
                            if sender.send(BusMessage { channel, payload }).await.is_err() {
                                return;
                            }
                        }
                        tracing::warn!(
                            "the state store dropped the bus's subscription; remaking it"
                        );
                    }
                    Ok(Err(error)) if !failing => {
                        tracing::warn!(%error, "could not subscribe to the state store's bus; trying again every {RESUBSCRIBE:?}");
                        failing = true;
                    }
                    Err(_elapsed) if !failing => {
                        tracing::warn!(
                            "the state store did not answer a subscription within {limit:?}; trying again every {RESUBSCRIBE:?}"
                        );
                        failing = true;
                    }
                    Ok(Err(_)) | Err(_) => {}
                }
                tokio::select! {
                    () = sender.closed() => return,
                    () = tokio::time::sleep(RESUBSCRIBE) => {}
                }
            }
        });
    }
}
