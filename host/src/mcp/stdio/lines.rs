//! Newline-delimited framing, as a `tokio_util` codec any line transport can
//! read through `FramedRead`: lines of at most a given length, an over-long
//! line reported once and skipped up to its newline (reading goes on), and a
//! last line with no newline at the end of input dropped (a client that
//! closes mid-message has sent no message).

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// How much of an over-long line is kept to read its request's `id` from.
pub(crate) const HEAD: usize = 4096;

/// One frame of input.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole line, without its newline.
    Line(Bytes),
    /// A line longer than the limit, with its first [`HEAD`] bytes; its rest
    /// is skipped.
    Oversized(Bytes),
}

/// Splits input at `\n` into lines of at most `max` bytes.
#[derive(Debug)]
pub(crate) struct Lines(AnyDelimiterCodec);

impl Lines {
    /// Lines of at most `max` bytes (their newline not counted).
    pub(crate) fn new(max: usize) -> Self {
        Self(AnyDelimiterCodec::new_with_max_length(
            b"\n".to_vec(),
            Vec::new(),
            max,
        ))
    }
}

impl Decoder for Lines {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        match self.0.decode(buf) {
            Ok(line) => Ok(line.map(Frame::Line)),
            // Not an error of the stream (`FramedRead` ends after one): the
            // codec skips the rest of the line by itself.
            // The line's start is still in the buffer (skipped from the
            // next call on).
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                let line = buf[..].split(|&b| b == b'\n').next().unwrap_or_default();
                let head = Bytes::copy_from_slice(&line[..line.len().min(HEAD)]);
                Ok(Some(Frame::Oversized(head)))
            }
            Err(AnyDelimiterCodecError::Io(err)) => Err(err),
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        let frame = self.decode(buf)?;
        if frame.is_none() {
            // A last line with no newline: not a whole message.
            buf.clear();
        }
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt as _;
    use tokio_util::codec::FramedRead;

    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut read = FramedRead::new(input, Lines::new(max));
        let mut frames = Vec::new();
        while let Some(frame) = read.next().await {
            frames.push(frame.unwrap());
        }
        frames
    }

    fn line(text: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(text.as_bytes()))
    }

    fn oversized(head: &str) -> Frame {
        Frame::Oversized(Bytes::copy_from_slice(head.as_bytes()))
    }

    #[tokio::test]
    async fn lines_are_split_bounded_and_a_cut_last_line_dropped() {
        assert_eq!(
            frames(b"a\n\nbcd\n", 4).await,
            [line("a"), line(""), line("bcd")]
        );
        // Exactly the limit passes; one more is reported once, and reading
        // goes on after its newline.
        assert_eq!(
            frames(b"abcd\nabcdefghij\nok\n", 4).await,
            [line("abcd"), oversized("abcdefghij"), line("ok")]
        );
        assert_eq!(frames(b"ok\ncut", 4).await, [line("ok")]);
        assert_eq!(frames(b"toolongcut", 4).await, [oversized("toolongcut")]);
        // The head kept is bounded.
        let long = vec![b'x'; 3 * HEAD];
        assert_eq!(
            frames(&long, 2 * HEAD).await,
            [Frame::Oversized(Bytes::copy_from_slice(&long[..HEAD]))]
        );
    }
}
