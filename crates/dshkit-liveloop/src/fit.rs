//! Fitting a PNG into a host's bounds before it is sent: hosts limit the pixels
//! per side and the bytes of an image they accept (an MCP host rendering a tool
//! result, DSH's attachment store). A wide image is downscaled, a tall one
//! (a full-page screenshot) is cropped to its top, and what was done is said.
//! The evidence on disk is never changed: only the copy that is sent.

use crate::verify::diff::{DiffError, Rgba};

/// The most an image may take: pixels per side and encoded bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageBounds {
    pub max_width: u32,
    pub max_height: u32,
    pub max_bytes: usize,
}

/// What `dshkit mcp` sends as image content: 1280 px wide (a desktop viewport at
/// scale 1), the top 2000 px of a taller page, and 1 MB.
pub const MCP_IMAGE_BOUNDS: ImageBounds = ImageBounds {
    max_width: 1280,
    max_height: 2000,
    max_bytes: 1_000_000,
};

/// Each further shrink when the encoded image is still above `max_bytes`.
const SHRINK_STEP: f64 = 0.75;
/// Shrinks tried before giving up (0.75^8 ≈ 0.1 of the first size).
const MAX_SHRINKS: usize = 8;

/// A PNG within its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FittedImage {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub original_width: u32,
    pub original_height: u32,
    pub original_bytes: usize,
    /// Rows of the original kept from the top (the original height when not cropped).
    pub kept_rows: u32,
}

impl FittedImage {
    /// Whether the image sent differs from the original.
    pub fn changed(&self) -> bool {
        self.kept_rows != self.original_height || self.width != self.original_width
    }

    /// What was done, for the result text; `None` when the original was sent.
    pub fn note(&self) -> Option<String> {
        if !self.changed() {
            return None;
        }
        let mut parts = Vec::new();
        if self.kept_rows < self.original_height {
            parts.push(format!(
                "cropped to the top {} of {} px",
                self.kept_rows, self.original_height
            ));
        }
        if self.width != self.original_width {
            parts.push(format!(
                "downscaled from {} to {} px wide",
                self.original_width, self.width
            ));
        }
        Some(format!(
            "{} ({}x{}, {} bytes; the saved file is the original {}x{}, {} bytes)",
            parts.join(" and "),
            self.width,
            self.height,
            self.png.len(),
            self.original_width,
            self.original_height,
            self.original_bytes
        ))
    }
}

/// Fits `png` into `bounds`. An image already inside them is returned as is,
/// byte for byte; otherwise it is cropped to `max_height` rows (after scaling)
/// and downscaled by area averaging until its encoding fits `max_bytes`.
pub fn fit_png(png: &[u8], bounds: &ImageBounds) -> Result<FittedImage, DiffError> {
    let (width, height) = png_size(png)?;
    let unchanged = FittedImage {
        png: png.to_vec(),
        width,
        height,
        original_width: width,
        original_height: height,
        original_bytes: png.len(),
        kept_rows: height,
    };
    if width <= bounds.max_width && height <= bounds.max_height && png.len() <= bounds.max_bytes {
        return Ok(unchanged);
    }
    let image = Rgba::from_png(png)?;
    let mut scale = (f64::from(bounds.max_width) / f64::from(width)).min(1.0);
    for _ in 0..=MAX_SHRINKS {
        let out_width = scaled(width, scale);
        // The rows of the original that fill at most `max_height` rows once scaled.
        let kept_rows = if scaled(height, scale) > bounds.max_height {
            rows_filling(bounds.max_height, scale)
        } else {
            height
        };
        let out_height = scaled(kept_rows, scale).min(bounds.max_height);
        let resized = resample(&image, kept_rows, out_width, out_height);
        let encoded = resized.to_png()?;
        if encoded.len() <= bounds.max_bytes {
            return Ok(FittedImage {
                png: encoded,
                width: out_width,
                height: out_height,
                kept_rows,
                ..unchanged
            });
        }
        scale *= SHRINK_STEP;
    }
    Err(DiffError::Encode(format!(
        "a {width}x{height} image does not fit {} bytes even at a tenth of its size",
        bounds.max_bytes
    )))
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a positive length times a scale in (0, 1]"
)]
fn scaled(length: u32, scale: f64) -> u32 {
    ((f64::from(length) * scale).round() as u32).max(1)
}

/// How many source rows make `max_height` rows once scaled by `scale`.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a positive height over a scale in (0, 1]; only reached when the image is taller"
)]
fn rows_filling(max_height: u32, scale: f64) -> u32 {
    ((f64::from(max_height) / scale).floor() as u32).max(1)
}

/// Width and height from the IHDR chunk, without decoding the pixels.
fn png_size(png: &[u8]) -> Result<(u32, u32), DiffError> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if png.len() < 24 || &png[..8] != SIGNATURE || &png[12..16] != b"IHDR" {
        return Err(DiffError::Decode("no PNG header".into()));
    }
    let word = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    Ok((word(16), word(20)))
}

/// The top `rows` rows of `image`, resized to `width`×`height` by area averaging
/// (each output pixel is the mean of the source area it covers): separable, rows
/// first, so the cost is linear in the source pixels.
fn resample(image: &Rgba, rows: u32, width: u32, height: u32) -> Rgba {
    let source_width = image.width as usize;
    let columns = weights(image.width, width);
    let mut horizontal = vec![0f32; rows as usize * width as usize * 4];
    for y in 0..rows as usize {
        let source = &image.pixels[y * source_width * 4..(y + 1) * source_width * 4];
        let target = &mut horizontal[y * width as usize * 4..(y + 1) * width as usize * 4];
        for (x, taps) in columns.iter().enumerate() {
            for &(from, weight) in taps {
                for channel in 0..4 {
                    target[x * 4 + channel] += f32::from(source[from * 4 + channel]) * weight;
                }
            }
        }
    }
    let lines = weights(rows, height);
    let row_len = width as usize * 4;
    let mut pixels = vec![0u8; height as usize * row_len];
    for (y, taps) in lines.iter().enumerate() {
        let mut sum = vec![0f32; row_len];
        for &(from, weight) in taps {
            let source = &horizontal[from * row_len..(from + 1) * row_len];
            for (total, value) in sum.iter_mut().zip(source) {
                *total += value * weight;
            }
        }
        for (out, total) in pixels[y * row_len..(y + 1) * row_len].iter_mut().zip(sum) {
            *out = to_channel(total);
        }
    }
    Rgba {
        width,
        height,
        pixels,
    }
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped to 0..=255 first"
)]
fn to_channel(value: f32) -> u8 {
    value.round().clamp(0.0, 255.0) as u8
}

/// For each of `to` output positions, the source positions it covers among
/// `from` and the share of each (the shares of one output sum to 1).
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "pixel coordinates far below 2^24"
)]
fn weights(from: u32, to: u32) -> Vec<Vec<(usize, f32)>> {
    let ratio = f64::from(from) / f64::from(to);
    (0..to)
        .map(|out| {
            let start = f64::from(out) * ratio;
            let end = (start + ratio).min(f64::from(from));
            let mut taps = Vec::new();
            let mut at = start.floor() as usize;
            while (at as f64) < end {
                let covered = (end.min(at as f64 + 1.0) - start.max(at as f64)).max(0.0);
                if covered > 0.0 {
                    taps.push((at, (covered / (end - start)) as f32));
                }
                at += 1;
            }
            taps
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(width: u32, height: u32, rgba: [u8; 4]) -> Rgba {
        Rgba {
            width,
            height,
            pixels: rgba.repeat((width * height) as usize),
        }
    }

    /// Noise that PNG cannot compress, from a fixed linear congruential sequence.
    fn noise(width: u32, height: u32) -> Rgba {
        let mut state = 0x2545_f491_u32;
        let pixels = (0..width * height * 4)
            .map(|i| {
                if i % 4 == 3 {
                    return 255;
                }
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 24) as u8
            })
            .collect();
        Rgba {
            width,
            height,
            pixels,
        }
    }

    #[test]
    fn an_image_inside_the_bounds_is_sent_byte_for_byte() {
        let png = solid(800, 600, [10, 20, 30, 255]).to_png().unwrap();
        let fitted = fit_png(&png, &MCP_IMAGE_BOUNDS).unwrap();
        assert_eq!(fitted.png, png);
        assert!(!fitted.changed());
        assert_eq!(fitted.note(), None);
    }

    #[test]
    fn a_wide_image_is_downscaled_and_keeps_its_colours() {
        // Left half red, right half blue: averaging keeps each half's colour.
        let mut image = solid(2560, 1600, [255, 0, 0, 255]);
        for y in 0..1600usize {
            for x in 1280..2560usize {
                image.pixels[(y * 2560 + x) * 4..(y * 2560 + x) * 4 + 4].copy_from_slice(&[0, 0, 255, 255]);
            }
        }
        let fitted = fit_png(&image.to_png().unwrap(), &MCP_IMAGE_BOUNDS).unwrap();
        assert_eq!((fitted.width, fitted.height, fitted.kept_rows), (1280, 800, 1600));
        let out = Rgba::from_png(&fitted.png).unwrap();
        assert_eq!(&out.pixels[..4], &[255, 0, 0, 255]);
        let last = out.pixels.len() - 4;
        assert_eq!(&out.pixels[last..], &[0, 0, 255, 255]);
        let note = fitted.note().unwrap();
        assert!(
            note.starts_with("downscaled from 2560 to 1280 px wide (1280x800"),
            "{note}"
        );
    }

    #[test]
    fn a_tall_page_is_cropped_to_its_top_and_said_so() {
        // A full-page screenshot: 1280 wide, 9000 tall; the top 2000 rows are kept.
        let mut image = solid(1280, 9000, [0, 128, 0, 255]);
        image.pixels[..1280 * 4].copy_from_slice(&[7, 7, 7, 255].repeat(1280));
        let fitted = fit_png(&image.to_png().unwrap(), &MCP_IMAGE_BOUNDS).unwrap();
        assert_eq!(
            (fitted.width, fitted.height, fitted.kept_rows),
            (1280, 2000, 2000)
        );
        let out = Rgba::from_png(&fitted.png).unwrap();
        assert_eq!(&out.pixels[..4], &[7, 7, 7, 255], "the top row is the page's top");
        assert!(
            fitted
                .note()
                .unwrap()
                .starts_with("cropped to the top 2000 of 9000 px")
        );
    }

    #[test]
    fn an_image_above_the_byte_bound_is_shrunk_until_it_fits() {
        let png = noise(1000, 1000).to_png().unwrap();
        assert!(png.len() > 1_000_000, "noise does not compress: {}", png.len());
        let fitted = fit_png(&png, &MCP_IMAGE_BOUNDS).unwrap();
        assert!(fitted.png.len() <= 1_000_000, "{}", fitted.png.len());
        assert!(fitted.width < 1000 && fitted.width == fitted.height);
        let tiny = ImageBounds {
            max_bytes: 10,
            ..MCP_IMAGE_BOUNDS
        };
        assert!(
            fit_png(&png, &tiny)
                .unwrap_err()
                .to_string()
                .contains("does not fit 10 bytes")
        );
    }

    #[test]
    fn weights_cover_each_output_exactly_once() {
        for (from, to) in [(2560, 1280), (1000, 750), (7, 3), (5, 5)] {
            let all = weights(from, to);
            assert_eq!(all.len(), to as usize);
            for taps in &all {
                let total: f32 = taps.iter().map(|t| t.1).sum();
                assert!((total - 1.0).abs() < 1e-4, "{from}->{to}: {total}");
            }
        }
    }

    #[test]
    fn what_is_not_a_png_is_refused() {
        assert!(fit_png(b"GIF89a not a png at all", &MCP_IMAGE_BOUNDS).is_err());
    }
}
