//! `qr_code`: a QR code of a text, as a PNG image.

use qrcode::{Color, EcLevel, QrCode, Version, types::QrError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Error;

/// Largest image side produced, in pixels.
pub const MAX_SIDE: u32 = 4096;

/// How much damage a QR code survives (and how much it can hold: higher
/// levels hold less).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCorrection {
    /// Recovers about 7% damage; holds the most data (up to 2953 bytes).
    Low,
    /// Recovers about 15% damage (the default).
    #[default]
    Medium,
    /// Recovers about 25% damage.
    Quartile,
    /// Recovers about 30% damage; holds the least data (up to 1273 bytes).
    High,
}

impl ErrorCorrection {
    fn level(self) -> EcLevel {
        match self {
            ErrorCorrection::Low => EcLevel::L,
            ErrorCorrection::Medium => EcLevel::M,
            ErrorCorrection::Quartile => EcLevel::Q,
            ErrorCorrection::High => EcLevel::H,
        }
    }

    /// Most bytes a version-40 code holds at this level (byte mode).
    fn capacity(self) -> usize {
        match self {
            ErrorCorrection::Low => 2953,
            ErrorCorrection::Medium => 2331,
            ErrorCorrection::Quartile => 1663,
            ErrorCorrection::High => 1273,
        }
    }
}

/// Makes a QR code of a text (a URL, contact data, Wi-Fi credentials, any
/// text) and returns it as a black-on-white PNG image.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QrArgs {
    /// The text to encode.
    pub text: String,
    /// Error correction level (default `medium`).
    #[serde(default)]
    pub error_correction: ErrorCorrection,
    /// Pixels per QR module (square), default 8.
    #[schemars(range(min = 1, max = 32))]
    pub module_size: Option<u32>,
    /// Width of the white border in modules, default 4 (the standard's minimum).
    #[schemars(range(min = 0, max = 16))]
    pub quiet_zone: Option<u32>,
}

/// What the image shows, besides the image itself.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QrInfo {
    /// The QR version (1 to 40): the code is 17 + 4 × version modules wide.
    pub version: i16,
    /// The error correction level used.
    pub error_correction: ErrorCorrection,
    /// Modules per side, without the quiet zone.
    pub modules: usize,
    /// Image width and height in pixels.
    pub size_px: u32,
    /// The PNG's size in bytes.
    pub png_bytes: usize,
    /// The image's MIME type.
    pub mime_type: &'static str,
}

/// A rendered QR code.
#[derive(Debug)]
pub struct Rendered {
    /// What it is.
    pub info: QrInfo,
    /// The PNG file.
    pub png: Vec<u8>,
}

/// Runs `qr_code`.
pub fn render(args: &QrArgs) -> Result<Rendered, Error> {
    let module_size = args.module_size.unwrap_or(8);
    let quiet_zone = args.quiet_zone.unwrap_or(4);
    if !(1..=32).contains(&module_size) {
        return Err(Error::InvalidArguments(
            "module_size must be from 1 to 32".into(),
        ));
    }
    if quiet_zone > 16 {
        return Err(Error::InvalidArguments(
            "quiet_zone must be from 0 to 16".into(),
        ));
    }
    if args.text.is_empty() {
        return Err(Error::InvalidArguments(
            "text is empty; give the text to encode".into(),
        ));
    }
    let ec = args.error_correction;
    let code = QrCode::with_error_correction_level(args.text.as_bytes(), ec.level()).map_err(|e| match e {
        QrError::DataTooLong => Error::InvalidArguments(format!(
            "text is {} bytes, more than a QR code holds at error_correction {} (about {} bytes); shorten it or use a lower error_correction",
            args.text.len(),
            serde_json::to_string(&ec).unwrap_or_default(),
            ec.capacity()
        )),
        e => Error::Failed(format!("could not encode the QR code: {e}")),
    })?;
    let modules = code.width();
    let version = match code.version() {
        Version::Normal(v) | Version::Micro(v) => v,
    };
    let side_modules = u32::try_from(modules)
        .unwrap_or(u32::MAX)
        .saturating_add(2 * quiet_zone);
    let side = side_modules.saturating_mul(module_size);
    if side > MAX_SIDE {
        return Err(Error::InvalidArguments(format!(
            "the image would be {side}×{side} pixels, more than {MAX_SIDE}; use a smaller module_size (at most {})",
            MAX_SIDE / side_modules
        )));
    }
    let png = encode_png(
        &code.to_colors(),
        modules,
        quiet_zone as usize,
        module_size as usize,
        side,
    )
    .map_err(|e| Error::Failed(format!("could not encode the PNG: {e}")))?;
    Ok(Rendered {
        info: QrInfo {
            version,
            error_correction: ec,
            modules,
            size_px: side,
            png_bytes: png.len(),
            mime_type: "image/png",
        },
        png,
    })
}

/// A 1-bit grayscale PNG of `colors` (row-major, `modules` wide), each module
/// `scale` pixels square, with `quiet` light modules around it.
fn encode_png(
    colors: &[Color],
    modules: usize,
    quiet: usize,
    scale: usize,
    side: u32,
) -> Result<Vec<u8>, png::EncodingError> {
    let side_px = side as usize;
    let row_bytes = side_px.div_ceil(8);
    let mut pixels = vec![0xffu8; row_bytes * side_px];
    for (i, color) in colors.iter().enumerate() {
        if *color != Color::Dark {
            continue;
        }
        let (mx, my) = (i % modules + quiet, i / modules + quiet);
        for y in my * scale..(my + 1) * scale {
            let row = &mut pixels[y * row_bytes..(y + 1) * row_bytes];
            for x in mx * scale..(mx + 1) * scale {
                row[x / 8] &= !(0x80 >> (x % 8));
            }
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&pixels)?;
    writer.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> QrArgs {
        QrArgs {
            text: text.into(),
            error_correction: ErrorCorrection::Medium,
            module_size: None,
            quiet_zone: None,
        }
    }

    fn be32(bytes: &[u8]) -> u32 {
        u32::from_be_bytes(bytes.try_into().unwrap())
    }

    #[test]
    fn renders_a_png_of_the_right_size() {
        let out = render(&args("https://example.com")).unwrap();
        // 19 bytes at level M fit version 2: 25 modules, + 2×4 quiet, × 8 px.
        assert_eq!(out.info.version, 2);
        assert_eq!(out.info.modules, 25);
        assert_eq!(out.info.size_px, 264);
        let png = &out.png;
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(be32(&png[16..20]), 264);
        assert_eq!(be32(&png[20..24]), 264);
        assert_eq!((png[24], png[25]), (1, 0), "1-bit grayscale");
        assert_eq!(out.info.png_bytes, png.len());
        assert!(png.ends_with(b"IEND\xae\x42\x60\x82"));
    }

    #[test]
    fn pixels_decode_back_to_the_modules() {
        let mut a = args("hi");
        a.module_size = Some(3);
        a.quiet_zone = Some(1);
        let out = render(&a).unwrap();
        let mut reader = png::Decoder::new(std::io::Cursor::new(out.png))
            .read_info()
            .unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let frame = reader.next_frame(&mut buf).unwrap();
        assert_eq!((frame.width, frame.height), (69, 69));
        let code = QrCode::with_error_correction_level("hi", EcLevel::M).unwrap();
        let colors = code.to_colors();
        let pixel = |x: usize, y: usize| buf[y * frame.line_size + x / 8] & (0x80 >> (x % 8)) == 0;
        // The border is light; each module's centre pixel has the module's colour.
        assert!(!pixel(0, 0) && !pixel(68, 68));
        for (i, c) in colors.iter().enumerate() {
            let (x, y) = ((i % 21 + 1) * 3 + 1, (i / 21 + 1) * 3 + 1);
            assert_eq!(pixel(x, y), *c == Color::Dark, "module {i}");
        }
    }

    #[test]
    fn too_long_or_too_big_is_invalid_arguments() {
        let mut a = args(&"x".repeat(2000));
        a.error_correction = ErrorCorrection::High;
        let err = render(&a).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArguments(m) if m.contains("\"high\"") && m.contains("1273")),
            "{err:?}"
        );
        a.error_correction = ErrorCorrection::Low;
        a.module_size = Some(32);
        let err = render(&a).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArguments(m) if m.contains("smaller module_size")),
            "{err:?}"
        );
        assert!(render(&args("")).is_err());
    }
}
