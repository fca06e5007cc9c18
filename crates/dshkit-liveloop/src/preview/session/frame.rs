//! Live frames: a small JPEG of the page as it is now, for a person watching a
//! preview (a host's live view). A frame is taken only when asked for, so a
//! preview nobody watches costs nothing; each is bounded in size, and numbered
//! per session so a viewer can tell how many were taken.

use std::sync::atomic::Ordering;

use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::PreviewSession;
use crate::preview::error::PreviewError;

/// Widest frame, in image pixels: wider viewports are scaled down to it.
pub const FRAME_MAX_WIDTH: u32 = 800;
/// Largest frame, in bytes (a busy 800x500 page is about 60 KB at the quality used).
pub const MAX_FRAME_BYTES: usize = 512 * 1024;
/// JPEG quality of a frame.
const FRAME_QUALITY: u32 = 60;

/// The page as it is now.
#[derive(Debug, Clone)]
pub struct Frame {
    pub jpeg: Vec<u8>,
    /// The first 16 hex digits of the JPEG's SHA-256: equal frames, equal ids.
    pub id: String,
    pub width: u32,
    pub height: u32,
    /// How many frames this session has taken, this one included.
    pub seq: u64,
    /// The page's URL and title, from the browser's history (no page script).
    pub url: String,
    pub title: String,
    /// Whether the history has a page before and after this one.
    pub can_go_back: bool,
    pub can_go_forward: bool,
}

impl PreviewSession {
    /// A frame of the visible part of the page, scaled to [`FRAME_MAX_WIDTH`].
    /// It waits for no operation of the session (a person may watch a
    /// verification run) and counts as a use of the preview.
    pub async fn frame(&self) -> Result<Frame, PreviewError> {
        self.touch();
        let metrics = self.page.call("Page.getLayoutMetrics", json!({})).await?;
        let visual = &metrics["cssVisualViewport"];
        let (vw, vh, device_scale, _) = self.viewport().metrics();
        let width = visual["clientWidth"].as_f64().unwrap_or(f64::from(vw)).max(1.0);
        let height = visual["clientHeight"].as_f64().unwrap_or(f64::from(vh)).max(1.0);
        // The image's pixels per CSS pixel: the device's, times the page's zoom
        // (a phone shows a page without a viewport tag zoomed out).
        let zoom = visual["zoom"].as_f64().filter(|z| *z > 0.0).unwrap_or(1.0);
        let scale = (f64::from(FRAME_MAX_WIDTH) / (width * f64::from(device_scale) * zoom)).min(1.0);
        let params = json!({
            "format": "jpeg",
            "quality": FRAME_QUALITY,
            "optimizeForSpeed": true,
            "clip": {
                "x": visual["pageX"].as_f64().unwrap_or(0.0),
                "y": visual["pageY"].as_f64().unwrap_or(0.0),
                "width": width,
                "height": height,
                "scale": scale,
            },
        });
        let reply = self.capture(&params).await?;
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(reply["data"].as_str().unwrap_or_default())
            .map_err(|e| PreviewError::Interaction(format!("frame data is not base64: {e}")))?;
        if !jpeg.starts_with(&[0xFF, 0xD8]) {
            return Err(PreviewError::Interaction("the browser returned no JPEG".into()));
        }
        if jpeg.len() > MAX_FRAME_BYTES {
            return Err(PreviewError::Interaction(format!(
                "the frame is {} bytes, above the limit of {MAX_FRAME_BYTES}",
                jpeg.len()
            )));
        }
        let history = self.page.call("Page.getNavigationHistory", json!({})).await?;
        let current = history["currentIndex"].as_u64().unwrap_or(0);
        let entries = history["entries"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let index = usize::try_from(current).unwrap_or(0);
        let entry = entries.get(index);
        let text = |key: &str| entry.and_then(|e| e[key].as_str()).unwrap_or_default().to_owned();
        // The page starts on about:blank; that entry is not part of the preview.
        let can_go_back = index
            .checked_sub(1)
            .and_then(|i| entries.get(i))
            .is_some_and(|e| e["url"] != "about:blank");
        let (width, height) = jpeg_size(&jpeg)
            .ok_or_else(|| PreviewError::Interaction("the browser's JPEG names no size".into()))?;
        Ok(Frame {
            id: hex::encode(&Sha256::digest(&jpeg)[..8]),
            jpeg,
            width,
            height,
            seq: self.frames.fetch_add(1, Ordering::Relaxed) + 1,
            url: text("url"),
            title: text("title"),
            can_go_back,
            can_go_forward: index + 1 < entries.len(),
        })
    }
}

/// A JPEG's width and height, from its frame header (`SOFn`).
fn jpeg_size(jpeg: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    while at + 9 < jpeg.len() {
        if jpeg[at] != 0xFF {
            return None;
        }
        let marker = jpeg[at + 1];
        let length = usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
        // Every SOF but the huffman table (C4), JPG (C8) and arithmetic coding (CC) markers.
        if (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker) {
            let height = u16::from_be_bytes([jpeg[at + 5], jpeg[at + 6]]);
            let width = u16::from_be_bytes([jpeg[at + 7], jpeg[at + 8]]);
            return Some((u32::from(width), u32::from(height)));
        }
        at += 2 + length;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::jpeg_size;

    #[test]
    fn a_jpegs_size_is_read_from_its_frame_header() {
        // SOI, an APP0 segment of 4 bytes, then SOF0 of a 640x480 image.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0xE0, 0x02,
            0x80, 0x03,
        ];
        assert_eq!(jpeg_size(&jpeg), Some((640, 480)));
        assert_eq!(jpeg_size(&jpeg[..10]), None, "cut before the header");
        assert_eq!(
            jpeg_size(&[0xFF, 0xD8, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]),
            None,
            "no marker"
        );
    }
}
