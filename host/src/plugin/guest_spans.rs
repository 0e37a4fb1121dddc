//! `toolhost:trace/spans@0.1.0` (`wit/trace/trace.wit`): the spans and events
//! a guest adds to its call's trace, beneath the call's `toolhost.guest`
//! span (the guest's run). Any component may import it, whatever contract
//! it speaks.
//!
//! Bounded per call: at most [`MAX_RECORDS_PER_CALL`] spans and events
//! together, names cut to [`MAX_NAME_BYTES`], at most [`MAX_ATTRIBUTES`]
//! attributes each (keys cut to [`MAX_KEY_BYTES`], values to
//! [`MAX_VALUE_BYTES`]); what is dropped is counted on the `toolhost.guest`
//! span (`toolhost.guest.dropped`). With telemetry off the guest span is
//! disabled, and each function returns at once. Nothing here traps.

use tracing::Span;
use wasmtime::component::{HasSelf, Linker};

use super::state::PluginState;
use crate::spans::{TARGET, cut};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/trace",
        world: "toolhost:trace/guest",
        imports: { default: trappable },
    });
}

use bindings::toolhost::trace::spans::{Attribute, Host};

/// The most spans and events one call may record, together.
pub const MAX_RECORDS_PER_CALL: u32 = 64;
/// The longest span or event name kept; longer ones are cut.
pub const MAX_NAME_BYTES: usize = 128;
/// The most attributes one span or event keeps; the rest are dropped.
pub const MAX_ATTRIBUTES: usize = 16;
/// The longest attribute key kept; longer ones are cut.
pub const MAX_KEY_BYTES: usize = 128;
/// The longest attribute value kept; longer ones are cut.
pub const MAX_VALUE_BYTES: usize = 1024;

/// What a call's guest recorded: its spans still open (innermost last),
/// and how many records it made and had dropped.
#[derive(Default)]
pub(crate) struct GuestSpans {
    open: Vec<(u32, Span)>,
    made: u32,
    dropped: u64,
}

impl GuestSpans {
    /// Ends the spans still open and starts counting anew: a call's end, or
    /// an idle instance's next call.
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }

    /// The span a new record goes under: the innermost open one, else the
    /// call's guest span (the current one: guest spans are never entered).
    fn parent(&self) -> Span {
        self.open
            .last()
            .map_or_else(Span::current, |(_, span)| span.clone())
    }

    /// Whether one more record fits; if not, counts it as dropped.
    fn admit(&mut self) -> bool {
        if self.made < MAX_RECORDS_PER_CALL {
            self.made += 1;
            return true;
        }
        self.dropped += 1;
        false
    }

    /// Ends the guest's run (`guest`, its `toolhost.guest` span), recording
    /// on it what the guest had dropped, if anything: once, at the end (each
    /// record of a field would be an attribute more on the span).
    pub(crate) fn close(&self, guest: Span) {
        if self.dropped > 0 {
            // An i64: the OpenTelemetry bridge records a u64 as text.
            let dropped = i64::try_from(self.dropped).unwrap_or(i64::MAX);
            guest.record("toolhost.guest.dropped", dropped);
        }
    }

    /// The attributes as kept (at most [`MAX_ATTRIBUTES`], each cut); those
    /// beyond are counted as dropped.
    fn kept(&mut self, attributes: Vec<Attribute>) -> Vec<(String, String)> {
        let over = attributes.len().saturating_sub(MAX_ATTRIBUTES);
        self.dropped += over as u64;
        attributes
            .into_iter()
            .take(MAX_ATTRIBUTES)
            .map(|a| (cut(a.key, MAX_KEY_BYTES), cut(a.value, MAX_VALUE_BYTES)))
            .collect()
    }
}

impl Host for PluginState {
    fn event(&mut self, name: String, attributes: Vec<Attribute>) -> wasmtime::Result<()> {
        let spans = &mut self.guest_spans;
        let parent = spans.parent();
        if parent.is_disabled() || !spans.admit() {
            return Ok(());
        }
        let attributes = spans.kept(attributes);
        export::event(&parent, cut(name, MAX_NAME_BYTES), attributes);
        Ok(())
    }

    fn begin(&mut self, name: String, attributes: Vec<Attribute>) -> wasmtime::Result<u32> {
        let spans = &mut self.guest_spans;
        let parent = spans.parent();
        if parent.is_disabled() || !spans.admit() {
            return Ok(0);
        }
        let attributes = spans.kept(attributes);
        let span = tracing::info_span!(
            target: TARGET,
            parent: &parent,
            "guest span",
            otel.name = %cut(name, MAX_NAME_BYTES),
        );
        export::attributes(&span, attributes);
        // Handles count from 1 (0 is "dropped"): the records made so far.
        let handle = spans.made;
        spans.open.push((handle, span));
        Ok(handle)
    }

    fn end(&mut self, span: u32) -> wasmtime::Result<()> {
        let open = &mut self.guest_spans.open;
        if let Some(at) = open.iter().position(|(handle, _)| *handle == span) {
            // Dropping a span ends it (and those opened inside it).
            open.truncate(at);
        }
        Ok(())
    }
}

/// Adds the `toolhost:trace/spans` import to a plugin linker.
pub(super) fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    bindings::Guest::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}

/// Attributes and events with keys the guest names: the OpenTelemetry
/// bridge's, where the export is built (feature `mcp`).
#[cfg(feature = "mcp")]
mod export {
    use opentelemetry::KeyValue;
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    pub(super) fn event(span: &Span, name: String, attributes: Vec<(String, String)>) {
        let attributes = attributes
            .into_iter()
            .map(|(key, value)| KeyValue::new(key, value))
            .collect();
        span.add_event(name, attributes);
    }

    pub(super) fn attributes(span: &Span, attributes: Vec<(String, String)>) {
        for (key, value) in attributes {
            span.set_attribute(key, value);
        }
    }
}

/// Without the OpenTelemetry bridge: the spans alone, named.
#[cfg(not(feature = "mcp"))]
mod export {
    use tracing::Span;

    pub(super) fn event(span: &Span, name: String, _attributes: Vec<(String, String)>) {
        tracing::info!(target: crate::spans::TARGET, parent: span, guest_event = %name);
    }

    pub(super) fn attributes(_span: &Span, _attributes: Vec<(String, String)>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_are_cut_on_a_character_boundary() {
        assert_eq!(cut("short".into(), 8), "short");
        assert_eq!(cut("ééééé".into(), 5), "éé…");
        let mut spans = GuestSpans::default();
        let many = (0..20)
            .map(|n| Attribute {
                key: format!("k{n}"),
                value: "v".repeat(2000),
            })
            .collect();
        let kept = spans.kept(many);
        assert_eq!(kept.len(), MAX_ATTRIBUTES);
        assert_eq!(spans.dropped, 4);
        assert!(
            kept.iter()
                .all(|(_, v)| v.len() <= MAX_VALUE_BYTES + '…'.len_utf8())
        );
    }

    #[test]
    fn at_most_so_many_records_are_admitted() {
        let mut spans = GuestSpans::default();
        let admitted = (0..100).filter(|_| spans.admit()).count();
        assert_eq!(admitted, MAX_RECORDS_PER_CALL as usize);
        assert_eq!(spans.dropped, 100 - u64::from(MAX_RECORDS_PER_CALL));
    }
}
