//! Reference / Current / Diff: a pixel comparison in the manner of pixelmatch
//! (perceptual YIQ colour distance, anti-aliased pixels detected and not counted),
//! with a diff image kept as evidence.

use dshkit_os::error::ErrorClass;

/// Per-pixel colour distance threshold (0..1); pixelmatch's default.
pub const DEFAULT_PIXEL_THRESHOLD: f64 = 0.1;
/// Largest mismatch ratio (differing pixels / all pixels) that still passes:
/// 0.01 %, about 100 pixels of a 1280×800 viewport; anti-aliasing never counts.
pub const DEFAULT_MAX_MISMATCH_RATIO: f64 = 0.0001;
/// Largest image compared (pixels): 16384 × 4096.
pub const MAX_PIXELS: usize = 16384 * 4096;

/// An RGBA8 image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    #[error("not a PNG image: {0}")]
    Decode(String),
    #[error("failed to encode the diff PNG: {0}")]
    Encode(String),
    #[error("the images differ in size: reference {0}x{1}, current {2}x{3}")]
    SizeMismatch(u32, u32, u32, u32),
    #[error("the image is larger than {MAX_PIXELS} pixels")]
    TooLarge,
}

impl DiffError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Decode(_) => "NOT_A_PNG",
            Self::Encode(_) => "DIFF_ENCODE_FAILED",
            Self::SizeMismatch(..) => "SIZE_MISMATCH",
            Self::TooLarge => "IMAGE_TOO_LARGE",
        }
    }

    /// An image that cannot be compared is refused; failing to encode the diff
    /// is a runtime failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Encode(_) => ErrorClass::Runtime,
            Self::Decode(_) | Self::SizeMismatch(..) | Self::TooLarge => ErrorClass::Refused,
        }
    }
}

dshkit_os::classified!(DiffError);

impl Rgba {
    /// Decodes a PNG (any colour type, 8 or 16 bits) to RGBA8.
    pub fn from_png(bytes: &[u8]) -> Result<Self, DiffError> {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder
            .set_transformations(png::Transformations::normalize_to_color8() | png::Transformations::ALPHA);
        let mut reader = decoder
            .read_info()
            .map_err(|e| DiffError::Decode(e.to_string()))?;
        let (width, height) = (reader.info().width, reader.info().height);
        if (width as usize).saturating_mul(height as usize) > MAX_PIXELS {
            return Err(DiffError::TooLarge);
        }
        let mut buffer = vec![0; reader.output_buffer_size().ok_or(DiffError::TooLarge)?];
        let frame = reader
            .next_frame(&mut buffer)
            .map_err(|e| DiffError::Decode(e.to_string()))?;
        buffer.truncate(frame.buffer_size());
        let pixels = match frame.color_type {
            png::ColorType::Rgba => buffer,
            png::ColorType::GrayscaleAlpha => {
                buffer.chunks(2).flat_map(|c| [c[0], c[0], c[0], c[1]]).collect()
            }
            other => return Err(DiffError::Decode(format!("unexpected colour type {other:?}"))),
        };
        Ok(Self {
            width,
            height,
            pixels,
        })
    }

    /// Encodes as an RGBA PNG.
    pub fn to_png(&self) -> Result<Vec<u8>, DiffError> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder
            .write_header()
            .map_err(|e| DiffError::Encode(e.to_string()))?;
        writer
            .write_image_data(&self.pixels)
            .map_err(|e| DiffError::Encode(e.to_string()))?;
        writer.finish().map_err(|e| DiffError::Encode(e.to_string()))?;
        Ok(out)
    }
}

/// The outcome of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub differing_pixels: usize,
    pub anti_aliased_pixels: usize,
    pub total_pixels: usize,
    pub mismatch_ratio: f64,
    pub passed: bool,
    /// Red where pixels differ, yellow where they differ only by anti-aliasing,
    /// over a faded copy of the reference.
    pub diff: Rgba,
}

/// Compares two images of the same size.
pub fn compare(
    reference: &Rgba,
    current: &Rgba,
    pixel_threshold: f64,
    max_mismatch_ratio: f64,
) -> Result<Comparison, DiffError> {
    if (reference.width, reference.height) != (current.width, current.height) {
        return Err(DiffError::SizeMismatch(
            reference.width,
            reference.height,
            current.width,
            current.height,
        ));
    }
    let (width, height) = (reference.width as usize, reference.height as usize);
    // 35215 is the largest possible YIQ squared distance.
    let max_delta = 35215.0 * pixel_threshold * pixel_threshold;
    let mut diff = vec![0u8; width * height * 4];
    let (mut differing, mut anti_aliased) = (0usize, 0usize);
    for y in 0..height {
        for x in 0..width {
            let pos = (y * width + x) * 4;
            let delta = color_delta(&reference.pixels, &current.pixels, pos, pos, false);
            let out = &mut diff[pos..pos + 4];
            if delta.abs() > max_delta {
                if antialiased(&reference.pixels, x, y, width, height, &current.pixels)
                    || antialiased(&current.pixels, x, y, width, height, &reference.pixels)
                {
                    anti_aliased += 1;
                    out.copy_from_slice(&[255, 255, 0, 255]);
                } else {
                    differing += 1;
                    out.copy_from_slice(&[255, 0, 0, 255]);
                }
            } else {
                let gray = faded_gray(&reference.pixels, pos);
                out.copy_from_slice(&[gray, gray, gray, 255]);
            }
        }
    }
    let total = width * height;
    #[expect(clippy::cast_precision_loss, reason = "a ratio of pixel counts")]
    let ratio = if total == 0 {
        0.0
    } else {
        differing as f64 / total as f64
    };
    Ok(Comparison {
        differing_pixels: differing,
        anti_aliased_pixels: anti_aliased,
        total_pixels: total,
        mismatch_ratio: ratio,
        passed: ratio <= max_mismatch_ratio,
        diff: Rgba {
            width: reference.width,
            height: reference.height,
            pixels: diff,
        },
    })
}

#[expect(
    clippy::many_single_char_names,
    reason = "the colour formulas read as in the literature"
)]
fn faded_gray(pixels: &[u8], pos: usize) -> u8 {
    let (r, g, b, a) = rgba(pixels, pos);
    let y = rgb2y(blend(r, a), blend(g, a), blend(b, a));
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to 0..=255"
    )]
    let gray = (255.0 + (y - 255.0) * 0.1).clamp(0.0, 255.0) as u8;
    gray
}

fn rgba(pixels: &[u8], pos: usize) -> (f64, f64, f64, f64) {
    (
        f64::from(pixels[pos]),
        f64::from(pixels[pos + 1]),
        f64::from(pixels[pos + 2]),
        f64::from(pixels[pos + 3]),
    )
}

/// Blends a channel over white by its alpha.
fn blend(channel: f64, alpha: f64) -> f64 {
    255.0 + (channel - 255.0) * alpha / 255.0
}

fn rgb2y(r: f64, g: f64, b: f64) -> f64 {
    r * 0.298_895_31 + g * 0.586_622_47 + b * 0.114_482_23
}

fn rgb2i(r: f64, g: f64, b: f64) -> f64 {
    r * 0.595_977_99 - g * 0.274_176_1 - b * 0.321_801_89
}

fn rgb2q(r: f64, g: f64, b: f64) -> f64 {
    r * 0.211_470_17 - g * 0.522_617_56 + b * 0.311_147_39
}

/// Squared YIQ distance (signed by brightness), or the brightness delta alone.
#[expect(
    clippy::many_single_char_names,
    reason = "the colour formulas read as in the literature"
)]
fn color_delta(a: &[u8], b: &[u8], k: usize, m: usize, y_only: bool) -> f64 {
    let (r1, g1, b1, a1) = rgba(a, k);
    let (r2, g2, b2, a2) = rgba(b, m);
    if (r1, g1, b1, a1) == (r2, g2, b2, a2) {
        return 0.0;
    }
    let (r1, g1, b1) = (blend(r1, a1), blend(g1, a1), blend(b1, a1));
    let (r2, g2, b2) = (blend(r2, a2), blend(g2, a2), blend(b2, a2));
    let y = rgb2y(r1, g1, b1) - rgb2y(r2, g2, b2);
    if y_only {
        return y;
    }
    let i = rgb2i(r1, g1, b1) - rgb2i(r2, g2, b2);
    let q = rgb2q(r1, g1, b1) - rgb2q(r2, g2, b2);
    let delta = 0.5053 * y * y + 0.299 * i * i + 0.1957 * q * q;
    if y > 0.0 { -delta } else { delta }
}

/// Whether the pixel at (x, y) of `img` is likely anti-aliasing: it sits between
/// a darkest and a brightest neighbour, one of which has many identical siblings
/// in both images (pixelmatch's rule, after Vyšniauskas 2009).
fn antialiased(img: &[u8], x1: usize, y1: usize, width: usize, height: usize, other: &[u8]) -> bool {
    let x0 = x1.saturating_sub(1);
    let y0 = y1.saturating_sub(1);
    let x2 = (x1 + 1).min(width - 1);
    let y2 = (y1 + 1).min(height - 1);
    let pos = (y1 * width + x1) * 4;
    let mut zeroes = usize::from(x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2);
    let (mut min, mut max) = (0.0f64, 0.0f64);
    let (mut min_x, mut min_y, mut max_x, mut max_y) = (0, 0, 0, 0);
    for x in x0..=x2 {
        for y in y0..=y2 {
            if x == x1 && y == y1 {
                continue;
            }
            let delta = color_delta(img, img, pos, (y * width + x) * 4, true);
            if delta == 0.0 {
                zeroes += 1;
                if zeroes > 2 {
                    return false;
                }
            } else if delta < min {
                min = delta;
                (min_x, min_y) = (x, y);
            } else if delta > max {
                max = delta;
                (max_x, max_y) = (x, y);
            }
        }
    }
    if min == 0.0 || max == 0.0 {
        return false;
    }
    (has_many_siblings(img, min_x, min_y, width, height)
        && has_many_siblings(other, min_x, min_y, width, height))
        || (has_many_siblings(img, max_x, max_y, width, height)
            && has_many_siblings(other, max_x, max_y, width, height))
}

fn has_many_siblings(img: &[u8], x1: usize, y1: usize, width: usize, height: usize) -> bool {
    let x0 = x1.saturating_sub(1);
    let y0 = y1.saturating_sub(1);
    let x2 = (x1 + 1).min(width - 1);
    let y2 = (y1 + 1).min(height - 1);
    let pos = (y1 * width + x1) * 4;
    let mut zeroes = usize::from(x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2);
    for x in x0..=x2 {
        for y in y0..=y2 {
            if x == x1 && y == y1 {
                continue;
            }
            let other = (y * width + x) * 4;
            if img[pos..pos + 4] == img[other..other + 4] {
                zeroes += 1;
            }
            if zeroes > 2 {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_class() {
        dshkit_os::error::assert_classified([
            (DiffError::Decode("x".into()), "NOT_A_PNG", ErrorClass::Refused),
            (
                DiffError::Encode("x".into()),
                "DIFF_ENCODE_FAILED",
                ErrorClass::Runtime,
            ),
            (
                DiffError::SizeMismatch(1, 2, 3, 4),
                "SIZE_MISMATCH",
                ErrorClass::Refused,
            ),
            (DiffError::TooLarge, "IMAGE_TOO_LARGE", ErrorClass::Refused),
        ]);
    }

    fn solid(width: u32, height: u32, rgba: [u8; 4]) -> Rgba {
        Rgba {
            width,
            height,
            pixels: rgba.repeat((width * height) as usize),
        }
    }

    fn paint(image: &mut Rgba, x: u32, y: u32, rgba: [u8; 4]) {
        let pos = ((y * image.width + x) * 4) as usize;
        image.pixels[pos..pos + 4].copy_from_slice(&rgba);
    }

    #[test]
    fn identical_images_pass_with_no_difference() {
        let a = solid(40, 30, [255, 255, 255, 255]);
        let result = compare(
            &a,
            &a.clone(),
            DEFAULT_PIXEL_THRESHOLD,
            DEFAULT_MAX_MISMATCH_RATIO,
        )
        .unwrap();
        assert_eq!((result.differing_pixels, result.anti_aliased_pixels), (0, 0));
        assert!(result.passed);
    }

    #[test]
    fn a_changed_block_fails_and_is_red_in_the_diff() {
        let a = solid(40, 30, [255, 255, 255, 255]);
        let mut b = a.clone();
        for x in 10..20 {
            for y in 10..20 {
                paint(&mut b, x, y, [0, 0, 0, 255]);
            }
        }
        let result = compare(&a, &b, DEFAULT_PIXEL_THRESHOLD, DEFAULT_MAX_MISMATCH_RATIO).unwrap();
        assert_eq!(result.differing_pixels, 100);
        assert!(!result.passed);
        let pos = ((15 * 40 + 15) * 4) as usize;
        assert_eq!(&result.diff.pixels[pos..pos + 4], &[255, 0, 0, 255]);
    }

    #[test]
    fn a_slightly_shaded_edge_pixel_counts_as_anti_aliasing() {
        // A dark vertical bar on white; the current image softens one edge pixel
        // to a mid grey, as text rendering does.
        let mut a = solid(20, 20, [255, 255, 255, 255]);
        for y in 0..20 {
            for x in 8..12 {
                paint(&mut a, x, y, [0, 0, 0, 255]);
            }
        }
        let mut b = a.clone();
        paint(&mut b, 12, 10, [128, 128, 128, 255]);
        let result = compare(&a, &b, DEFAULT_PIXEL_THRESHOLD, 0.0).unwrap();
        assert_eq!(result.differing_pixels, 0, "{result:?}");
        assert_eq!(result.anti_aliased_pixels, 1);
        assert!(result.passed);
    }

    #[test]
    fn png_round_trips_and_sizes_must_match() {
        let a = solid(7, 5, [10, 20, 30, 255]);
        let back = Rgba::from_png(&a.to_png().unwrap()).unwrap();
        assert_eq!(back, a);
        let err = compare(&a, &solid(5, 7, [0, 0, 0, 255]), 0.1, 0.0).unwrap_err();
        assert!(matches!(err, DiffError::SizeMismatch(7, 5, 5, 7)));
        assert!(Rgba::from_png(b"not a png").is_err());
    }
}
