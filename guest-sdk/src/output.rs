//! What a tool returns: [`Output`], its [`Part`]s, and streams of [`Chunks`].

use serde::Serialize;

use crate::ToolError;

/// The broad kind of media a binary [`Part`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaKind {
    /// An image (`image/png`, `image/jpeg`, ...).
    Image,
    /// Sound (`audio/wav`, ...).
    Audio,
    /// Video (`video/mp4`, ...).
    Video,
    /// Any other file.
    File,
}

/// Bytes with a media type: the content of an image, audio, video or file [`Part`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The broad kind of media.
    pub kind: MediaKind,
    /// The MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// A file name suggestion, if the tool has one.
    pub name: Option<String>,
    /// The bytes.
    pub data: Vec<u8>,
}

/// One part of a multimodal [`Output`], or one chunk of a stream.
///
/// Build parts with [`Part::text`], [`Part::json`], [`Part::image`], [`Part::audio`],
/// [`Part::video`] and [`Part::file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part(pub(crate) PartRepr);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PartRepr {
    Text(String),
    Json(String),
    Blob(Blob),
    /// A value that failed to serialize; reported as a failure when the part is sent,
    /// so that building parts stays infallible.
    Unserializable(String),
}

impl Part {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Self(PartRepr::Text(text.into()))
    }

    /// A JSON value. If `value` cannot be serialized, the call fails with
    /// [`ToolError::Failed`] when the part is returned.
    pub fn json(value: impl Serialize) -> Self {
        Self(match serde_json::to_string(&value) {
            Ok(json) => PartRepr::Json(json),
            Err(err) => PartRepr::Unserializable(err.to_string()),
        })
    }

    /// Bytes of the given kind and MIME type.
    pub fn blob(
        kind: MediaKind,
        mime_type: impl Into<String>,
        name: Option<String>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        Self(PartRepr::Blob(Blob {
            kind,
            mime_type: mime_type.into(),
            name,
            data: data.into(),
        }))
    }

    /// An image, e.g. `Part::image("image/png", bytes)`.
    pub fn image(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::blob(MediaKind::Image, mime_type, None, data)
    }

    /// Sound, e.g. `Part::audio("audio/wav", bytes)`.
    pub fn audio(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::blob(MediaKind::Audio, mime_type, None, data)
    }

    /// Video, e.g. `Part::video("video/mp4", bytes)`.
    pub fn video(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::blob(MediaKind::Video, mime_type, None, data)
    }

    /// Any other file, with an optional file name suggestion.
    pub fn file(
        mime_type: impl Into<String>,
        name: Option<String>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        Self::blob(MediaKind::File, mime_type, name, data)
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.0 {
            PartRepr::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The JSON text, if this is a JSON part.
    pub fn as_json(&self) -> Option<&str> {
        match &self.0 {
            PartRepr::Json(json) => Some(json),
            _ => None,
        }
    }

    /// The bytes and their media type, if this is an image, audio, video or file part.
    pub fn as_blob(&self) -> Option<&Blob> {
        match &self.0 {
            PartRepr::Blob(blob) => Some(blob),
            _ => None,
        }
    }
}

/// The result of a tool: a JSON value, multimodal parts, or both.
///
/// A tool whose [`Tool::Output`](crate::Tool::Output) is any `T: Serialize` does
/// not need this type; return an `Output` for images, audio, files or mixed parts.
/// Where both JSON and parts are given the caller sees both; the parts are the
/// richer form.
///
/// ```
/// use toolhost_guest::{Output, Part};
/// let out = Output::text("a red dot").with_part(Part::image("image/png", vec![0x89, b'P']));
/// assert_eq!(out.parts().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct Output {
    /// `Err` holds a serialization failure, reported when the output is returned.
    json: Option<Result<String, String>>,
    parts: Vec<Part>,
}

impl Output {
    /// An empty output: no JSON, no parts.
    pub fn new() -> Self {
        Self::default()
    }

    /// A JSON result. A value that is not an object is wrapped by the host as
    /// `{"result": <value>}`. If `value` cannot be serialized, the call fails with
    /// [`ToolError::Failed`].
    pub fn json(value: impl Serialize) -> Self {
        Self::new().with_json(value)
    }

    /// A result of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_part(Part::text(text))
    }

    /// Sets (replaces) the JSON result.
    pub fn with_json(mut self, value: impl Serialize) -> Self {
        self.json = Some(serde_json::to_string(&value).map_err(|err| err.to_string()));
        self
    }

    /// Appends a part.
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// Appends several parts.
    pub fn with_parts(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        self.parts.extend(parts);
        self
    }

    /// The JSON result as JSON text, if one was set and it serialized.
    pub fn json_text(&self) -> Option<&str> {
        self.json.as_ref().and_then(|json| json.as_deref().ok())
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Splits into JSON text and parts, turning serialization failures into errors.
    pub(crate) fn into_checked(self) -> Result<(Option<String>, Vec<Part>), ToolError> {
        let json = self
            .json
            .transpose()
            .map_err(|err| ToolError::failed(format!("the result is not valid JSON: {err}")))?;
        for part in &self.parts {
            if let PartRepr::Unserializable(err) = &part.0 {
                return Err(ToolError::failed(format!(
                    "a JSON part of the result failed to serialize: {err}"
                )));
            }
        }
        Ok((json, self.parts))
    }

    /// Collects a stream: adjacent text chunks are merged into one text part, and
    /// if every chunk was text, the JSON result is the concatenated text as a
    /// JSON string. The first error ends the collection.
    pub(crate) fn collect(chunks: Chunks) -> Result<Self, ToolError> {
        let mut parts: Vec<Part> = Vec::new();
        let mut all_text = true;
        for chunk in chunks {
            let chunk = chunk?;
            match (parts.last_mut(), chunk.0) {
                (Some(Part(PartRepr::Text(last))), PartRepr::Text(text)) => last.push_str(&text),
                (_, repr) => {
                    all_text &= matches!(repr, PartRepr::Text(_));
                    parts.push(Part(repr));
                }
            }
        }
        let mut out = Self::new();
        if all_text {
            let text: String = parts.iter().filter_map(Part::as_text).collect();
            out = out.with_json(text);
        }
        Ok(out.with_parts(parts))
    }

    /// The output as a stream: the JSON (if any) as one JSON chunk, then the parts.
    pub(crate) fn into_chunks(self) -> Result<Chunks, ToolError> {
        let (json, parts) = self.into_checked()?;
        let json = json.map(|json| Part(PartRepr::Json(json)));
        Ok(Box::new(json.into_iter().chain(parts).map(Ok)))
    }
}

/// What a [`Tool`](crate::Tool) may return: any `T: Serialize` (sent as its JSON)
/// or an [`Output`] (JSON and/or multimodal parts).
pub trait IntoOutput {
    /// Converts the value into an [`Output`].
    ///
    /// # Errors
    ///
    /// [`ToolError::Failed`] if the value cannot be serialized.
    fn into_output(self) -> Result<Output, ToolError>;
}

impl<T: Serialize> IntoOutput for T {
    fn into_output(self) -> Result<Output, ToolError> {
        let json = serde_json::to_string(&self)
            .map_err(|err| ToolError::failed(format!("the result is not valid JSON: {err}")))?;
        Ok(Output {
            json: Some(Ok(json)),
            parts: Vec::new(),
        })
    }
}

impl IntoOutput for Output {
    fn into_output(self) -> Result<Output, ToolError> {
        Ok(self)
    }
}

/// The chunks of a [`StreamingTool`](crate::StreamingTool), pulled one at a time
/// by the host. The first `Err` ends the stream with that error.
pub type Chunks = Box<dyn Iterator<Item = Result<Part, ToolError>>>;

/// Something that can be a chunk of a stream: a [`Part`] or a `Result<Part, ToolError>`.
pub trait IntoChunk {
    /// Converts the value into a chunk.
    fn into_chunk(self) -> Result<Part, ToolError>;
}

impl IntoChunk for Part {
    fn into_chunk(self) -> Result<Part, ToolError> {
        Ok(self)
    }
}

impl IntoChunk for Result<Part, ToolError> {
    fn into_chunk(self) -> Result<Part, ToolError> {
        self
    }
}

/// Turns any iterator of [`Part`]s (or of `Result<Part, ToolError>`) into [`Chunks`].
///
/// The iterator runs lazily: each chunk is computed when the host asks for it.
///
/// ```
/// use toolhost_guest::{Part, chunks};
/// let stream = chunks((1..=3).rev().map(|i| Part::text(format!("{i}\n"))));
/// assert_eq!(stream.count(), 3);
/// ```
pub fn chunks<I>(iter: I) -> Chunks
where
    I: IntoIterator,
    I::Item: IntoChunk + 'static,
    I::IntoIter: 'static,
{
    Box::new(iter.into_iter().map(IntoChunk::into_chunk))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::{Chunks, IntoOutput, MediaKind, Output, Part, chunks};
    use crate::ToolError;

    #[test]
    fn a_serializable_value_is_json_without_parts() {
        let out = 42_i64.into_output().expect("serializes");
        assert_eq!(out.json_text(), Some("42"));
        assert!(out.parts().is_empty());
        let out = json!({"a": [1, 2]}).into_output().expect("serializes");
        assert_eq!(out.json_text(), Some(r#"{"a":[1,2]}"#));
        let out = "hi".into_output().expect("serializes");
        assert_eq!(out.json_text(), Some(r#""hi""#));
    }

    #[test]
    fn an_output_passes_through() {
        let out = Output::json(json!({"ok": true}))
            .with_part(Part::text("caption"))
            .with_part(Part::image("image/png", [1_u8, 2]))
            .with_part(Part::file(
                "text/csv",
                Some("a.csv".into()),
                b"a,b".to_vec(),
            ));
        let out = out.into_output().expect("an output is an output");
        assert_eq!(out.json_text(), Some(r#"{"ok":true}"#));
        assert_eq!(out.parts()[0].as_text(), Some("caption"));
        let image = out.parts()[1].as_blob().expect("a blob");
        assert_eq!(
            (image.kind, image.mime_type.as_str()),
            (MediaKind::Image, "image/png")
        );
        let file = out.parts()[2].as_blob().expect("a blob");
        assert_eq!(file.name.as_deref(), Some("a.csv"));
        assert_eq!(Output::text("t").parts(), &[Part::text("t")]);
        assert_eq!(Output::text("t").json_text(), None);
        assert_eq!(
            Part::audio("audio/wav", []).as_blob().map(|b| b.kind),
            Some(MediaKind::Audio)
        );
        assert_eq!(
            Part::video("video/mp4", []).as_blob().map(|b| b.kind),
            Some(MediaKind::Video)
        );
        assert_eq!(Part::json([1, 2]).as_json(), Some("[1,2]"));
    }

    #[test]
    fn unserializable_values_fail_when_returned() {
        // JSON object keys must be strings.
        let map = BTreeMap::from([((1, 2), 3)]);
        assert!(matches!(
            map.clone().into_output(),
            Err(ToolError::Failed(_))
        ));
        assert!(matches!(
            Output::json(map.clone()).into_checked(),
            Err(ToolError::Failed(_))
        ));
        let out = Output::text("fine").with_part(Part::json(map));
        assert!(matches!(out.into_checked(), Err(ToolError::Failed(_))));
    }

    #[test]
    fn collecting_merges_adjacent_text_and_sets_json_if_all_text() {
        let stream = chunks(["3\n", "2\n", "1\n"].map(Part::text));
        let out = Output::collect(stream).expect("no errors");
        assert_eq!(out.parts(), &[Part::text("3\n2\n1\n")]);
        assert_eq!(out.json_text(), Some(r#""3\n2\n1\n""#));
    }

    #[test]
    fn collecting_mixed_chunks_keeps_their_order_without_json() {
        let stream = chunks([
            Part::text("a"),
            Part::text("b"),
            Part::json(1),
            Part::text("c"),
            Part::image("image/png", [0_u8]),
        ]);
        let out = Output::collect(stream).expect("no errors");
        assert_eq!(
            out.parts(),
            &[
                Part::text("ab"),
                Part::json(1),
                Part::text("c"),
                Part::image("image/png", [0_u8]),
            ]
        );
        assert_eq!(out.json_text(), None);
    }

    #[test]
    fn collecting_stops_at_the_first_error() {
        let stream = chunks([
            Ok(Part::text("a")),
            Err(ToolError::failed("boom")),
            Ok(Part::text("never")),
        ]);
        assert_eq!(Output::collect(stream), Err(ToolError::failed("boom")));
    }

    #[test]
    fn an_output_as_chunks_is_json_then_parts() {
        let out = Output::json(json!({"n": 1})).with_part(Part::text("x"));
        let chunks: Vec<_> = out.into_chunks().expect("serializes").collect();
        assert_eq!(
            chunks,
            [Ok(Part::json(json!({"n": 1}))), Ok(Part::text("x"))]
        );
        let empty: Chunks = Output::new().into_chunks().expect("empty");
        assert_eq!(empty.count(), 0);
    }
}
