//! The network policy of a preview: one credential-free loopback origin, checked
//! for every request and every redirect hop before it is sent. Pure logic: DNS is
//! injected so the rules are tested without a network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Url;

/// Resolves a host name to its addresses.
pub trait Resolver: Send + Sync {
    fn resolve(&self, host: &str, port: u16) -> Result<Vec<IpAddr>, String>;
}

/// The system resolver.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
        use std::net::ToSocketAddrs;
        (host, port)
            .to_socket_addrs()
            .map(|addrs| addrs.map(|a| a.ip()).collect())
            .map_err(|e| e.to_string())
    }
}

/// Why a preview URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OriginError {
    #[error("`{0}` is not a valid URL")]
    Invalid(String),
    #[error("preview URLs must be http or https, not `{0}`")]
    Scheme(String),
    #[error("preview URLs must not carry credentials")]
    Credentials,
    #[error("preview URLs must be on loopback (127.0.0.1, localhost or [::1]); `{0}` is not")]
    NotLoopback(String),
}

impl OriginError {
    /// A stable machine-readable code: every refused URL is a `BAD_URL`.
    pub fn code(&self) -> &'static str {
        "BAD_URL"
    }

    /// A URL a preview never loads is refused input.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Refused
    }
}

dshkit_os::classified!(OriginError);

/// The one origin a preview may talk to freely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewOrigin {
    scheme: String,
    host: String,
    port: u16,
}

impl PreviewOrigin {
    /// Validates a preview URL and returns its origin.
    pub fn of(url: &str) -> Result<(Self, Url), OriginError> {
        let parsed = Url::parse(url).map_err(|_| OriginError::Invalid(url.to_owned()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(OriginError::Scheme(parsed.scheme().to_owned()));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(OriginError::Credentials);
        }
        let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
        if !is_loopback_host(&host) {
            return Err(OriginError::NotLoopback(host));
        }
        let port = parsed.port_or_known_default().unwrap_or(80);
        Ok((
            Self {
                scheme: parsed.scheme().to_owned(),
                host,
                port,
            },
            parsed,
        ))
    }

    /// `http://127.0.0.1:5173`
    pub fn as_string(&self) -> String {
        format!("{}://{}:{}", self.scheme, self.host, self.port)
    }

    pub(crate) fn same_origin(&self, url: &Url) -> bool {
        url.scheme() == self.scheme && self.same_host_port(url)
    }

    fn same_host_port(&self, url: &Url) -> bool {
        url.host_str().is_some_and(|h| h.eq_ignore_ascii_case(&self.host))
            && url.port_or_known_default() == Some(self.port)
    }
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// What happens to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Block(BlockReason),
}

/// Why a request was blocked; recorded with the URL.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum BlockReason {
    /// A host outside the preview origin that is not allowlisted.
    ExternalHost { host: String },
    /// An allowlisted host that resolves to a private, loopback, link-local or
    /// reserved address (DNS rebinding).
    PrivateAddress { host: String, address: String },
    /// An allowlisted host that does not resolve.
    Unresolvable { host: String, error: String },
    /// A WebSocket to anywhere but the preview origin.
    CrossOriginWebSocket { url: String },
    /// A URL with user name or password.
    Credentials,
    /// A scheme previews never load (`file:`, `ftp:`, ...).
    Scheme { scheme: String },
    /// Another loopback origin than the preview's.
    OtherLoopbackOrigin { origin: String },
}

impl BlockReason {
    /// The stable id of the rule (as serialised in `rule`).
    pub fn rule(&self) -> &'static str {
        match self {
            Self::ExternalHost { .. } => "external_host",
            Self::PrivateAddress { .. } => "private_address",
            Self::Unresolvable { .. } => "unresolvable",
            Self::CrossOriginWebSocket { .. } => "cross_origin_web_socket",
            Self::Credentials => "credentials",
            Self::Scheme { .. } => "scheme",
            Self::OtherLoopbackOrigin { .. } => "other_loopback_origin",
        }
    }

    /// What the rule saw, in words.
    pub fn describe(&self) -> String {
        match self {
            Self::ExternalHost { host } => {
                format!("{host} is outside the preview's origin and not allowlisted")
            }
            Self::PrivateAddress { host, address } => {
                format!("{host} resolves to the private address {address}")
            }
            Self::Unresolvable { host, error } => format!("{host} does not resolve ({error})"),
            Self::CrossOriginWebSocket { url } => format!("a WebSocket to {url}, not the preview's origin"),
            Self::Credentials => "the URL carries a user name or password".into(),
            Self::Scheme { scheme } => format!("previews never load `{scheme}:` URLs"),
            Self::OtherLoopbackOrigin { origin } => format!("{origin} is another loopback origin"),
        }
    }

    /// How a user would let it through, or why nothing should.
    pub fn fix(&self) -> String {
        match self {
            Self::ExternalHost { host } => format!(
                "if the app really needs {host}, allow it with `dshkit mcp --allow-external-host {host}` (it must resolve to a public address); otherwise make the app stay on its own origin"
            ),
            Self::PrivateAddress { .. } => {
                "none: previews never reach private addresses through a name (DNS rebinding guard); serve the resource from the app's own origin".into()
            }
            Self::Unresolvable { host, .. } => format!("check the name {host}"),
            Self::CrossOriginWebSocket { .. } => "connect WebSockets to the preview's own origin".into(),
            Self::Credentials => "remove the user name and password from the URL".into(),
            Self::Scheme { .. } => "previews load http and https only".into(),
            Self::OtherLoopbackOrigin { origin } => {
                format!("open a separate preview for {origin}; one preview reaches one origin")
            }
        }
    }
}

/// The policy of one preview.
#[derive(Clone)]
pub struct NetworkPolicy {
    pub origin: PreviewOrigin,
    /// External hosts the preview may reach (exact names, lowercase).
    pub allow_hosts: Vec<String>,
    /// Resolves allowlisted hosts (the system resolver unless a test injects one).
    pub resolver: std::sync::Arc<dyn Resolver>,
    /// How long a lookup of an allowlisted host may take before its request is
    /// refused as unresolvable.
    pub dns_timeout: std::time::Duration,
}

/// Default bound of one DNS lookup of an allowlisted host.
pub const DEFAULT_DNS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl std::fmt::Debug for NetworkPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkPolicy")
            .field("origin", &self.origin)
            .field("allow_hosts", &self.allow_hosts)
            .finish_non_exhaustive()
    }
}

impl NetworkPolicy {
    /// Decides one request (an original request or a redirect hop) with the
    /// policy's own resolver.
    pub fn decide(&self, raw_url: &str) -> Decision {
        self.decide_with(raw_url, self.resolver.as_ref())
    }

    /// Decides one request, resolving allowlisted hosts with `resolver`.
    pub fn decide_with(&self, raw_url: &str, resolver: &dyn Resolver) -> Decision {
        match self.precheck(raw_url) {
            Precheck::Decided(decision) => decision,
            Precheck::NeedsDns(query) => {
                let answer = resolver.resolve(&query.host, query.port);
                query.judge(answer)
            }
        }
    }

    /// Decides one request as far as it can without DNS: everything but an
    /// allowlisted external host named by a name, whose addresses decide it
    /// (see [`DnsQuery::judge`]).
    pub(crate) fn precheck(&self, raw_url: &str) -> Precheck {
        let Ok(url) = Url::parse(raw_url) else {
            return Precheck::Decided(Decision::Block(BlockReason::Scheme {
                scheme: "invalid".into(),
            }));
        };
        match url.scheme() {
            "data" | "blob" | "about" => return Precheck::Decided(Decision::Allow),
            "http" | "https" | "ws" | "wss" => {}
            other => {
                return Precheck::Decided(Decision::Block(BlockReason::Scheme {
                    scheme: other.to_owned(),
                }));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Precheck::Decided(Decision::Block(BlockReason::Credentials));
        }
        if matches!(url.scheme(), "ws" | "wss") {
            let paired = if url.scheme() == "ws" { "http" } else { "https" };
            return Precheck::Decided(
                if paired == self.origin.scheme && self.origin.same_host_port(&url) {
                    Decision::Allow
                } else {
                    Decision::Block(BlockReason::CrossOriginWebSocket { url: url.to_string() })
                },
            );
        }
        if self.origin.same_origin(&url) {
            return Precheck::Decided(Decision::Allow);
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if is_loopback_host(&host) {
            return Precheck::Decided(Decision::Block(BlockReason::OtherLoopbackOrigin {
                origin: url.origin().ascii_serialization(),
            }));
        }
        if !self.allow_hosts.iter().any(|h| h == &host) {
            return Precheck::Decided(Decision::Block(BlockReason::ExternalHost { host }));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        match bare.parse::<IpAddr>() {
            Ok(ip) => Precheck::Decided(judge_addresses(host, &[ip])),
            Err(_) => Precheck::NeedsDns(DnsQuery {
                host: bare.to_owned(),
                port,
            }),
        }
    }
}

/// How far a request is decided before any DNS lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Precheck {
    /// Decided without DNS.
    Decided(Decision),
    /// An allowlisted host, named by a name: its addresses decide it.
    NeedsDns(DnsQuery),
}

/// The DNS question an allowlisted host's request waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DnsQuery {
    /// The host name (lowercase).
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl DnsQuery {
    /// Decides the request by the lookup's answer: allowed only when every
    /// address is public (a private one is DNS rebinding); refused as
    /// unresolvable when there is none, or the lookup failed with `error`.
    pub(crate) fn judge(self, resolved: Result<Vec<IpAddr>, String>) -> Decision {
        match resolved {
            Ok(addresses) if !addresses.is_empty() => judge_addresses(self.host, &addresses),
            Ok(_) => Decision::Block(BlockReason::Unresolvable {
                host: self.host,
                error: "no addresses".into(),
            }),
            Err(error) => Decision::Block(BlockReason::Unresolvable {
                host: self.host,
                error,
            }),
        }
    }
}

/// Allows an allowlisted `host` whose addresses are all public.
fn judge_addresses(host: String, addresses: &[IpAddr]) -> Decision {
    match addresses.iter().find(|ip| !is_public(**ip)) {
        Some(private) => Decision::Block(BlockReason::PrivateAddress {
            host,
            address: private.to_string(),
        }),
        None => Decision::Allow,
    }
}

/// Whether an address is globally routable: not private, loopback, link-local,
/// shared (CGNAT), documentation, benchmarking, multicast, broadcast or reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || first == 0x2001 && ip.segments()[1] == 0x0db8 // documentation
        || first == 0x0064 && ip.segments()[1] == 0xff9b) // NAT64
}

#[cfg(test)]
mod tests {
    use super::*;

    struct FakeDns(Vec<(&'static str, Vec<IpAddr>)>);

    impl Resolver for FakeDns {
        fn resolve(&self, host: &str, _port: u16) -> Result<Vec<IpAddr>, String> {
            self.0
                .iter()
                .find(|(h, _)| *h == host)
                .map(|(_, a)| a.clone())
                .ok_or_else(|| "NXDOMAIN".into())
        }
    }

    fn policy(allow: &[&str]) -> NetworkPolicy {
        let (origin, _) = PreviewOrigin::of("http://127.0.0.1:5173/").unwrap();
        NetworkPolicy {
            origin,
            allow_hosts: allow.iter().map(|h| (*h).to_owned()).collect(),
            resolver: std::sync::Arc::new(SystemResolver),
            dns_timeout: DEFAULT_DNS_TIMEOUT,
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn preview_urls_must_be_loopback_http_without_credentials() {
        assert!(PreviewOrigin::of("http://localhost:3000/app").is_ok());
        assert!(PreviewOrigin::of("https://[::1]:8443/").is_ok());
        assert_eq!(
            PreviewOrigin::of("http://example.com/").unwrap_err(),
            OriginError::NotLoopback("example.com".into())
        );
        assert_eq!(
            PreviewOrigin::of("http://u:p@127.0.0.1:1/").unwrap_err(),
            OriginError::Credentials
        );
        assert_eq!(
            PreviewOrigin::of("file:///etc/passwd").unwrap_err(),
            OriginError::Scheme("file".into())
        );
        assert!(matches!(
            PreviewOrigin::of("not a url"),
            Err(OriginError::Invalid(_))
        ));
    }

    #[test]
    fn same_origin_and_local_schemes_pass() {
        let p = policy(&[]);
        let dns = FakeDns(vec![]);
        for url in [
            "http://127.0.0.1:5173/@vite/client",
            "ws://127.0.0.1:5173/hmr",
            "data:text/plain,x",
            "blob:http://127.0.0.1:5173/x",
        ] {
            assert_eq!(p.decide_with(url, &dns), Decision::Allow, "{url}");
        }
    }

    #[test]
    fn everything_else_is_blocked_with_its_reason() {
        let p = policy(&[]);
        let dns = FakeDns(vec![]);
        assert!(matches!(
            p.decide_with("https://cdn.example.com/x.js", &dns),
            Decision::Block(BlockReason::ExternalHost { .. })
        ));
        assert!(matches!(
            p.decide_with("ws://127.0.0.1:9999/", &dns),
            Decision::Block(BlockReason::CrossOriginWebSocket { .. })
        ));
        assert!(matches!(
            p.decide_with("wss://evil.example/", &dns),
            Decision::Block(BlockReason::CrossOriginWebSocket { .. })
        ));
        assert!(matches!(
            p.decide_with("http://127.0.0.1:6000/api", &dns),
            Decision::Block(BlockReason::OtherLoopbackOrigin { .. })
        ));
        assert!(matches!(
            p.decide_with("https://127.0.0.1:5173/", &dns),
            Decision::Block(BlockReason::OtherLoopbackOrigin { .. })
        ));
        assert!(matches!(
            p.decide_with("http://10.0.0.5/", &dns),
            Decision::Block(BlockReason::ExternalHost { .. })
        ));
        assert!(matches!(
            p.decide_with("file:///etc/passwd", &dns),
            Decision::Block(BlockReason::Scheme { .. })
        ));
        assert!(matches!(
            p.decide_with("http://a:b@127.0.0.1:5173/", &dns),
            Decision::Block(BlockReason::Credentials)
        ));
    }

    #[test]
    fn allowlisted_hosts_are_checked_after_resolution() {
        let p = policy(&["fonts.example.com", "rebind.example.com", "gone.example.com"]);
        let dns = FakeDns(vec![
            ("fonts.example.com", vec![ip("93.184.216.34")]),
            (
                "rebind.example.com",
                vec![ip("93.184.216.34"), ip("192.168.1.10")],
            ),
        ]);
        assert_eq!(
            p.decide_with("https://fonts.example.com/a.woff2", &dns),
            Decision::Allow
        );
        assert_eq!(
            p.decide_with("https://rebind.example.com/", &dns),
            Decision::Block(BlockReason::PrivateAddress {
                host: "rebind.example.com".into(),
                address: "192.168.1.10".into()
            })
        );
        assert!(matches!(
            p.decide_with("https://gone.example.com/", &dns),
            Decision::Block(BlockReason::Unresolvable { .. })
        ));
    }

    #[test]
    fn only_an_allowlisted_name_waits_on_dns() {
        let p = policy(&["fonts.example.com", "93.184.216.34"]);
        assert_eq!(
            p.precheck("https://Fonts.Example.com:8443/a.woff2"),
            Precheck::NeedsDns(DnsQuery {
                host: "fonts.example.com".into(),
                port: 8443
            })
        );
        assert_eq!(
            p.precheck("https://93.184.216.34/"),
            Precheck::Decided(Decision::Allow),
            "an allowlisted address is judged without a lookup"
        );
        assert_eq!(
            p.precheck("https://other.example.com/"),
            Precheck::Decided(Decision::Block(BlockReason::ExternalHost {
                host: "other.example.com".into()
            }))
        );
        assert_eq!(
            p.precheck("http://127.0.0.1:5173/x"),
            Precheck::Decided(Decision::Allow)
        );
        let query = DnsQuery {
            host: "fonts.example.com".into(),
            port: 443,
        };
        assert_eq!(
            query.clone().judge(Err("timed out".into())),
            Decision::Block(BlockReason::Unresolvable {
                host: "fonts.example.com".into(),
                error: "timed out".into()
            })
        );
        assert_eq!(
            query.judge(Ok(vec![])),
            Decision::Block(BlockReason::Unresolvable {
                host: "fonts.example.com".into(),
                error: "no addresses".into()
            })
        );
    }

    #[test]
    fn private_and_reserved_addresses_are_not_public() {
        for private in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.0.1",
            "127.0.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "240.0.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public(ip(private)), "{private}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(ip(public)), "{public}");
        }
    }
}
