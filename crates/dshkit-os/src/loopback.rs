//! The names an HTTP server on loopback answers to. Any web page can send a
//! request to a loopback port, and a DNS name its author controls can resolve to
//! 127.0.0.1 (DNS rebinding); such a request carries that page's Host or Origin.
//! A request is served only when its Host is one of the server's names and its
//! Origin, if it has one (browsers send it), is `http://` and one of them.

/// Why a request was refused.
pub type Refusal = &'static str;

/// The Host and Origin values a server accepts.
#[derive(Debug, Clone)]
pub struct LoopbackNames {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl LoopbackNames {
    /// `127.0.0.1:PORT`, `localhost:PORT` and `[::1]:PORT`, then `extra_hosts`
    /// (`name:port`); as origins, `http://` and each of those hosts, then
    /// `extra_origins`. Names compare in any case; a trailing `/` on an extra
    /// origin is dropped.
    pub fn new(
        port: u16,
        extra_hosts: impl IntoIterator<Item = String>,
        extra_origins: impl IntoIterator<Item = String>,
    ) -> Self {
        let mut hosts: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|name| format!("{name}:{port}"))
            .collect();
        hosts.extend(extra_hosts.into_iter().map(|host| host.to_ascii_lowercase()));
        let mut origins: Vec<String> = hosts.iter().map(|host| format!("http://{host}")).collect();
        origins.extend(
            extra_origins
                .into_iter()
                .map(|origin| origin.trim_end_matches('/').to_ascii_lowercase()),
        );
        Self { hosts, origins }
    }

    /// Whether a request with these `Host` and `Origin` header values is served.
    ///
    /// # Errors
    ///
    /// The reason, to log or answer with a 403.
    pub fn check(&self, host: Option<&[u8]>, origin: Option<&[u8]>) -> Result<(), Refusal> {
        let host = host.ok_or("missing Host header")?;
        if !self
            .hosts
            .iter()
            .any(|name| name.as_bytes().eq_ignore_ascii_case(host))
        {
            return Err("Host header is not an address of this server (DNS rebinding protection)");
        }
        if let Some(origin) = origin {
            if std::str::from_utf8(origin).is_err() {
                return Err("unreadable Origin header");
            }
            if !self
                .origins
                .iter()
                .any(|name| name.as_bytes().eq_ignore_ascii_case(origin))
            {
                return Err("Origin is not allowed (DNS rebinding protection)");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_servers_names_are_served_as_host_and_origin() {
        let names = LoopbackNames::new(
            4100,
            ["Box.local:4100".to_owned()],
            ["https://app.example/".to_owned()],
        );
        let check = |host: Option<&str>, origin: Option<&str>| {
            names.check(host.map(str::as_bytes), origin.map(str::as_bytes))
        };
        for host in ["127.0.0.1:4100", "LOCALHOST:4100", "[::1]:4100", "box.local:4100"] {
            assert_eq!(check(Some(host), None), Ok(()), "{host}");
        }
        for host in [
            "127.0.0.1:4101",
            "127.0.0.1",
            "evil.example:4100",
            "localhost:41000",
            "",
        ] {
            assert!(check(Some(host), None).is_err(), "{host}");
        }
        assert_eq!(check(None, None), Err("missing Host header"));
        let host = Some("127.0.0.1:4100");
        for origin in [
            "http://127.0.0.1:4100",
            "http://localhost:4100",
            "https://app.example",
            "HTTP://BOX.LOCAL:4100",
        ] {
            assert_eq!(check(host, Some(origin)), Ok(()), "{origin}");
        }
        for origin in [
            "http://evil.example",
            "https://127.0.0.1:4100",
            "http://127.0.0.1:4101",
            "null",
            "",
        ] {
            assert_eq!(
                check(host, Some(origin)),
                Err("Origin is not allowed (DNS rebinding protection)"),
                "{origin}"
            );
        }
        assert_eq!(
            names.check(host.map(str::as_bytes), Some(b"http://\xff")),
            Err("unreadable Origin header")
        );
    }
}
