//! Readiness: URL candidates printed by the dev server, the expected port, and an
//! HTTP answer from one of them.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Strips ANSI escape sequences (colours, cursor moves) from a log line.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates end at a final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Loopback URLs with a port in a log line, normalised to `http://127.0.0.1:PORT/…`
/// or `http://localhost:PORT/…`; `0.0.0.0` and `[::]` become `127.0.0.1`.
pub fn urls_in(line: &str) -> Vec<url::Url> {
    let mut found = Vec::new();
    for (start, _) in line.match_indices("http") {
        let rest = &line[start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | ')' | '>' | ','))
            .unwrap_or(rest.len());
        let candidate = rest[..end].trim_end_matches(['.', ';']);
        let Ok(mut url) = url::Url::parse(candidate) else {
            continue;
        };
        if !matches!(url.scheme(), "http" | "https") || url.port().is_none() {
            continue;
        }
        let host = url.host_str().unwrap_or_default().to_owned();
        match host.as_str() {
            "localhost" | "127.0.0.1" | "[::1]" => {}
            "0.0.0.0" | "[::]" => {
                let _ = url.set_host(Some("127.0.0.1"));
            }
            _ => continue,
        }
        if !found.contains(&url) {
            found.push(url);
        }
    }
    found
}

/// What an HTTP answer says about a starting server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Serving: any status below 500 (a 404 is a running server; the
    /// verification judges the content).
    Ready,
    /// "Not yet": 502, 503 or 504, as a dev server answers while it starts
    /// (Nuxt's loading page is a 503) or while the process behind its proxy does.
    NotYet,
    /// Another 5xx: an error of the app's own, or of a start still in progress.
    AppError,
}

/// How readiness takes an answer with `status`.
pub fn classify(status: u16) -> Answer {
    match status {
        502..=504 => Answer::NotYet,
        500.. => Answer::AppError,
        _ => Answer::Ready,
    }
}

/// The HTTP status `url` answers with, or why it does not. A plain HTTP/1.1 GET on
/// loopback; [`classify`] says what the status means for readiness.
pub async fn probe(url: &url::Url, timeout: Duration) -> Result<u16, String> {
    let port = url.port_or_known_default().ok_or("no port")?;
    let host = url.host_str().ok_or("no host")?;
    let address = match host {
        "localhost" => "127.0.0.1".to_owned(),
        "[::1]" => "[::1]".to_owned(),
        other => other.to_owned(),
    };
    if url.scheme() != "http" {
        return Err("only http is probed".into());
    }
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(format!("{address}:{port}"))
            .await
            .map_err(|e| e.to_string())?;
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/html\r\nUser-Agent: dshkit-readiness\r\nConnection: close\r\n\r\n",
            url.path()
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut head = [0u8; 64];
        let mut filled = 0;
        while filled < 12 {
            let n = stream
                .read(&mut head[filled..])
                .await
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the connection closed without an answer".to_owned());
            }
            filled += n;
        }
        let line = String::from_utf8_lossy(&head[..filled]);
        line.strip_prefix("HTTP/1.")
            .and_then(|rest| rest.get(2..5))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| format!("not an HTTP answer: {:?}", line.lines().next().unwrap_or("")))
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .map_err(|_| format!("no answer within {} ms", timeout.as_millis()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starting_servers_unavailable_answers_are_not_yet_and_its_own_errors_are_apart() {
        assert_eq!(classify(200), Answer::Ready);
        assert_eq!(classify(404), Answer::Ready);
        for status in [502, 503, 504] {
            assert_eq!(classify(status), Answer::NotYet, "{status}");
        }
        for status in [500, 501, 505, 599] {
            assert_eq!(classify(status), Answer::AppError, "{status}");
        }
    }

    #[test]
    fn finds_dev_server_urls_in_coloured_logs() {
        let vite = "  \u{1b}[32m➜\u{1b}[39m  \u{1b}[1mLocal\u{1b}[22m:   \u{1b}[36mhttp://localhost:\u{1b}[1m5173\u{1b}[22m/\u{1b}[39m";
        let urls = urls_in(&strip_ansi(vite));
        assert_eq!(urls.len(), 1);
        assert_eq!(urls[0].as_str(), "http://localhost:5173/");
        let next = "   - Local:        http://localhost:3000";
        assert_eq!(urls_in(next)[0].port(), Some(3000));
        let any = "listening on http://0.0.0.0:8080, see http://example.com:80/docs";
        let urls = urls_in(any);
        assert_eq!(urls.len(), 1, "{urls:?}");
        assert_eq!(urls[0].as_str(), "http://127.0.0.1:8080/");
        assert!(urls_in("Network: use --host to expose").is_empty());
    }
}
