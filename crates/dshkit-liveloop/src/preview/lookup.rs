//! The policy's DNS, bounded: the one lookup of an allowlisted host runs on a
//! blocking thread, and one that does not answer within the policy's
//! `dns_timeout` refuses its request. What the answer means is the policy's
//! ([`DnsQuery::judge`]); the session and the proxy both decide through here.

use std::net::IpAddr;
use std::sync::Arc;

use super::policy::{Decision, DnsQuery, NetworkPolicy, Precheck};

/// Decides a navigation target or a proxied connection: at once unless it needs
/// DNS, which is bounded.
pub(super) async fn decide(policy: &NetworkPolicy, url: &str) -> Decision {
    match policy.precheck(url) {
        Precheck::Decided(decision) => decision,
        Precheck::NeedsDns(query) => decide_after(policy, query).await,
    }
}

/// Decides a request that waits on `query`, by its bounded answer.
pub(super) async fn decide_after(policy: &NetworkPolicy, query: DnsQuery) -> Decision {
    let resolved = resolve(policy, &query.host, query.port).await;
    query.judge(resolved)
}

/// Resolves `host` with the policy's resolver on a blocking thread, bounded by
/// its `dns_timeout`.
pub(super) async fn resolve(policy: &NetworkPolicy, host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    let resolver = Arc::clone(&policy.resolver);
    let host = host.to_owned();
    let timeout = policy.dns_timeout;
    let lookup = tokio::task::spawn_blocking(move || resolver.resolve(&host, port));
    match tokio::time::timeout(timeout, lookup).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err("the resolver task failed".to_owned()),
        Err(_) => Err(format!("DNS did not answer within {} ms", timeout.as_millis())),
    }
}
