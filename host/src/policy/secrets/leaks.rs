//! The leak check: finds the values of a plugin's secrets in what its guest
//! sends, gets back, returns and logs, and masks each with `*`s of the same
//! length (bodies as they stream, headers, text, JSON).

use std::borrow::Cow;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use aho_corasick::{AhoCorasick, MatchKind};
use bytes::{Bytes, BytesMut};
use http::HeaderValue;
use http_body::{Body, Frame, SizeHint};
use serde_json::Value;
use wasmtime_wasi_http::{Error, WasiBody};

use super::{HeaderSecret, Secret};

/// Finds and masks the values of a plugin's secrets. `Debug` shows how many.
/// Cheap to clone (each call's tag holds one).
#[derive(Clone, Default)]
pub(crate) struct LeakCheck {
    values: Arc<[Secret]>,
    finder: Option<Arc<AhoCorasick>>,
    longest: usize,
}

impl PartialEq for LeakCheck {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values
    }
}

impl Eq for LeakCheck {}

impl fmt::Debug for LeakCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LeakCheck({} value(s))", self.values.len())
    }
}

impl LeakCheck {
    pub(super) fn of(secrets: &[HeaderSecret]) -> Self {
        let mut values: Vec<Secret> = secrets
            .iter()
            .flat_map(HeaderSecret::values)
            .filter(|value| !value.is_empty())
            .map(Secret::new)
            .collect();
        values.sort_by(|a, b| a.expose().cmp(b.expose()));
        values.dedup();
        let finder = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(values.iter().map(Secret::expose))
            .ok()
            .filter(|_| !values.is_empty())
            .map(Arc::new);
        let longest = values.iter().map(|v| v.expose().len()).max().unwrap_or(0);
        Self {
            values: values.into(),
            finder,
            longest,
        }
    }

    /// Whether there is nothing to look for.
    pub(crate) fn is_empty(&self) -> bool {
        self.finder.is_none()
    }

    /// Whether `haystack` holds a secret.
    pub(crate) fn found_in(&self, haystack: &[u8]) -> bool {
        self.finder
            .as_ref()
            .is_some_and(|finder| finder.is_match(haystack))
    }

    /// Masks every secret in `bytes` with `*`s; whether there was one.
    pub(crate) fn mask(&self, bytes: &mut [u8]) -> bool {
        let Some(finder) = &self.finder else {
            return false;
        };
        let spans: Vec<_> = finder.find_iter(&*bytes).map(|m| m.range()).collect();
        for span in &spans {
            bytes[span.clone()].fill(b'*');
        }
        !spans.is_empty()
    }

    /// `text` with every secret masked (borrowed when there is none).
    pub(crate) fn masked<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        if !self.found_in(text.as_bytes()) {
            return text;
        }
        let mut owned = text.into_owned();
        self.mask_str(&mut owned);
        Cow::Owned(owned)
    }

    /// Masks every secret in a string (`*` is ASCII, so it stays UTF-8).
    pub(crate) fn mask_str(&self, text: &mut String) -> bool {
        if !self.found_in(text.as_bytes()) {
            return false;
        }
        let mut bytes = std::mem::take(text).into_bytes();
        self.mask(&mut bytes);
        // Whole code points were replaced by ASCII: still UTF-8.
        *text = String::from_utf8_lossy(&bytes).into_owned();
        true
    }

    /// Masks every secret in the strings (keys too) of a JSON value.
    pub(crate) fn mask_json(&self, value: &mut Value) -> bool {
        match value {
            Value::String(text) => self.mask_str(text),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |found, item| self.mask_json(item) | found),
            Value::Object(map) => {
                let mut found = false;
                let entries = std::mem::take(map);
                for (mut key, mut item) in entries {
                    found |= self.mask_str(&mut key);
                    found |= self.mask_json(&mut item);
                    map.insert(key, item);
                }
                found
            }
            _ => false,
        }
    }
}

/// Masks secrets in response headers; whether there was one.
pub(crate) fn mask_headers(leaks: &LeakCheck, headers: &mut http::HeaderMap) -> bool {
    let mut found = false;
    for value in headers.values_mut() {
        if leaks.found_in(value.as_bytes()) {
            let mut bytes = value.as_bytes().to_vec();
            leaks.mask(&mut bytes);
            if let Ok(masked) = HeaderValue::from_bytes(&bytes) {
                *value = masked;
                found = true;
            }
        }
    }
    found
}

/// A body with every secret masked as it streams: it holds back the last
/// `longest - 1` bytes of each frame until the next shows whether they begin
/// a secret, so a secret split across frames is masked too.
pub(crate) struct Masked {
    inner: WasiBody,
    leaks: LeakCheck,
    held: BytesMut,
    /// Called once, on the first secret masked.
    on_leak: Option<Box<dyn FnOnce() + Send>>,
    done: bool,
}

impl Masked {
    /// `inner`, masked by `leaks`; `on_leak` warns of the first secret.
    pub(crate) fn new(
        inner: WasiBody,
        leaks: LeakCheck,
        on_leak: Box<dyn FnOnce() + Send>,
    ) -> Self {
        Self {
            inner,
            leaks,
            held: BytesMut::new(),
            on_leak: Some(on_leak),
            done: false,
        }
    }

    fn masked(&mut self, mut bytes: BytesMut) -> BytesMut {
        if self.leaks.mask(&mut bytes)
            && let Some(warn) = self.on_leak.take()
        {
            warn();
        }
        bytes
    }
}

impl Body for Masked {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        this.held.extend_from_slice(&data);
                        let mut all = std::mem::take(&mut this.held);
                        all = this.masked(all);
                        let keep = this.leaks.longest.saturating_sub(1).min(all.len());
                        this.held = all.split_off(all.len() - keep);
                        if !all.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(all.freeze()))));
                        }
                    }
                    Err(trailers) => {
                        // Trailers end the data: what is held goes first.
                        let held = std::mem::take(&mut this.held);
                        if held.is_empty() {
                            return Poll::Ready(Some(Ok(trailers)));
                        }
                        this.done = true;
                        return Poll::Ready(Some(Ok(Frame::data(held.freeze()))));
                    }
                },
                Poll::Ready(None) => {
                    this.done = true;
                    let held = std::mem::take(&mut this.held);
                    return if held.is_empty() {
                        Poll::Ready(None)
                    } else {
                        Poll::Ready(Some(Ok(Frame::data(held.freeze()))))
                    };
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || (self.held.is_empty() && self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        // Masking keeps the length.
        let mut hint = self.inner.size_hint();
        let held = self.held.len() as u64;
        hint.set_lower(hint.lower() + held);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + held);
        }
        hint
    }
}
