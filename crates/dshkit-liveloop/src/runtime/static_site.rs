//! A built-in loopback server for a static site (an `index.html` with no dev
//! script), so such an app needs no Node at all. Serves files under its root only.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{Response, StatusCode, Uri, header};

/// Largest file served (16 MiB); a static preview has no business with more.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A running static server; dropping it stops it.
#[derive(Debug)]
pub struct StaticSite {
    pub port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StaticSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StaticSite {
    /// Serves `root` on `127.0.0.1:port` (`0` picks a free port).
    pub async fn start(root: &Path, port: u16) -> std::io::Result<Self> {
        let root = dshkit_os::fs::canonicalize(root)?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let app = axum::Router::new().fallback(move |uri: Uri| {
            let root = root.clone();
            async move { serve(&root, &uri).await }
        });
        // Nagle off: a file's last partial segment would otherwise wait for the
        // browser's delayed ACK whenever earlier bytes are still unacknowledged.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { port, task })
    }
}

async fn serve(root: &Path, uri: &Uri) -> Response<Body> {
    let Some(path) = resolve(root, uri.path()) else {
        return status(StatusCode::NOT_FOUND);
    };
    match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.len() > MAX_FILE_BYTES => return status(StatusCode::PAYLOAD_TOO_LARGE),
        Ok(_) => {}
        Err(_) => return status(StatusCode::NOT_FOUND),
    }
    match tokio::fs::read(&path).await {
        Ok(bytes) => Response::builder()
            .header(header::CONTENT_TYPE, content_type(&path))
            .header(header::CACHE_CONTROL, "no-store")
            .body(Body::from(bytes))
            .unwrap_or_else(|_| status(StatusCode::INTERNAL_SERVER_ERROR)),
        Err(_) => status(StatusCode::NOT_FOUND),
    }
}

/// The file a request path names, only if it resolves (links included) inside `root`.
fn resolve(root: &Path, request: &str) -> Option<PathBuf> {
    let decoded = percent_decode(request)?;
    let mut path = root.to_path_buf();
    for part in decoded.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." || part.contains('\\') || part.contains('\0') {
            return None;
        }
        path.push(part);
    }
    if path.is_dir() {
        path.push("index.html");
    }
    dshkit_os::fs::resolve_inside(root, &path, dshkit_os::fs::Leaf::MustExist).ok()
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn status(code: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::from(code.canonical_reason().unwrap_or("error")));
    *response.status_mut() = code;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dshkit_os::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("index.html"), "<h1>hi</h1>").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a b.js"), "1").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        dshkit_os::fs::symlink(outside.path().join("secret"), root.join("link")).unwrap();
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(resolve(&root, "/sub/a%20b.js"), Some(root.join("sub/a b.js")));
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/%2e%2e/secret"), None);
        assert_eq!(resolve(&root, "/link"), None, "a link out of the root is refused");
        assert_eq!(resolve(&root, "/missing"), None);
    }
}
