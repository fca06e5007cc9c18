//! Redaction, applied before anything is written or shown. Each secret becomes a
//! stable placeholder `[REDACTED:<rule>:<8 hex of sha256>]`, so the same secret
//! always maps to the same placeholder: a live request carrying the secret still
//! matches its recorded, redacted twin.

use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Keys whose string values are secrets whatever they look like.
pub const SECRET_KEY_PATTERN: &str = r"(?i)(token|secret|passw(or)?d|api[_-]?key|authorization|credential|cookie|private[_-]?key|session[_-]?id)";
/// Shortest environment variable value redacted by name (shorter ones are too
/// likely to appear by chance).
pub const MIN_ENV_SECRET_CHARS: usize = 8;

/// A pattern rule: its name and the regex. The secret is capture group 1 when the
/// regex has one, else the whole match.
#[derive(Clone)]
struct Rule {
    name: String,
    regex: Regex,
}

/// The redactor. Cloning is cheap (compiled regexes are shared).
#[derive(Clone)]
pub struct Redactor {
    rules: Vec<Rule>,
    secret_keys: Regex,
    /// (name, value) of environment variables to redact literally.
    literals: Vec<(String, String)>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field(
                "rules",
                &self.rules.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            )
            .field("literals", &self.literals.len())
            .finish_non_exhaustive()
    }
}

/// The built-in rules, most specific first.
const BUILT_IN: &[(&str, &str)] = &[
    ("bearer", r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})"),
    (
        "url-credentials",
        r"(?i)\b[a-z][a-z0-9+.-]*://([^/\s:@]+:[^/\s@]+)@",
    ),
    (
        "jwt",
        r"\b(eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,})",
    ),
    (
        "github",
        r"\b((?:gh[pousr]_[A-Za-z0-9]{36,})|(?:github_pat_[A-Za-z0-9_]{22,}))",
    ),
    ("anthropic", r"\b(sk-ant-[A-Za-z0-9_-]{20,})"),
    ("deepseek", r"\b(sk-[a-f0-9]{32})\b"),
    ("openai", r"\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"),
    ("slack", r"\b(xox[abposr]-[A-Za-z0-9-]{10,})"),
    ("aws", r"\b((?:AKIA|ASIA)[A-Z0-9]{16})\b"),
    ("google", r"\b(AIza[0-9A-Za-z_-]{35})"),
];

/// The placeholder for `secret` under `rule`.
pub fn placeholder(rule: &str, secret: &str) -> String {
    let digest = hex::encode(Sha256::digest(secret.as_bytes()));
    format!("[REDACTED:{rule}:{}]", &digest[..8])
}

fn is_placeholder(text: &str) -> bool {
    text.starts_with("[REDACTED:") && text.ends_with(']')
}

impl Redactor {
    /// The built-in rules, the secret-looking keys, the values of the environment
    /// variables named in `env_names` (plus every variable whose name looks secret),
    /// and the `custom` regexes.
    pub fn new(env_names: &[String], custom: &[String]) -> Result<Self, regex::Error> {
        let mut rules: Vec<Rule> = BUILT_IN
            .iter()
            .map(|(name, pattern)| Rule {
                name: (*name).to_owned(),
                regex: Regex::new(pattern).expect("built-in patterns compile"),
            })
            .collect();
        for (i, pattern) in custom.iter().enumerate() {
            rules.push(Rule {
                name: format!("custom-{}", i + 1),
                regex: Regex::new(pattern)?,
            });
        }
        let secret_keys = Regex::new(SECRET_KEY_PATTERN).expect("compiles");
        let mut literals: Vec<(String, String)> = std::env::vars()
            .filter(|(name, value)| {
                (env_names.contains(name) || secret_keys.is_match(name) || name.ends_with("_KEY"))
                    && value.chars().count() >= MIN_ENV_SECRET_CHARS
            })
            .collect();
        // Longest first, so a value containing another is replaced whole.
        literals.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        Ok(Self {
            rules,
            secret_keys,
            literals,
        })
    }

    /// Redacts every secret in `text`.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (name, value) in &self.literals {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), &placeholder(&format!("env-{name}"), value));
            }
        }
        for rule in &self.rules {
            if !rule.regex.is_match(&out) {
                continue;
            }
            out = rule
                .regex
                .replace_all(&out, |caps: &regex::Captures<'_>| {
                    let whole = caps.get(0).expect("group 0").as_str();
                    match caps.get(1) {
                        Some(secret) if !is_placeholder(secret.as_str()) => {
                            whole.replace(secret.as_str(), &placeholder(&rule.name, secret.as_str()))
                        }
                        Some(_) => whole.to_owned(),
                        None => placeholder(&rule.name, whole),
                    }
                })
                .into_owned();
        }
        out
    }

    /// Redacts a JSON value in place: every string, and whole values under
    /// secret-looking keys.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                let redacted = self.text(s);
                if redacted != *s {
                    *s = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    match v {
                        Value::String(s)
                            if self.secret_keys.is_match(key) && !s.is_empty() && !is_placeholder(s) =>
                        {
                            *s = placeholder("secret-key", s);
                        }
                        _ => self.value(v),
                    }
                }
            }
            _ => {}
        }
    }

    /// The secrets left in `text`: (rule, a short excerpt) for each.
    pub fn scan(&self, text: &str) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for (name, value) in &self.literals {
            if text.contains(value.as_str()) {
                found.push((format!("env-{name}"), excerpt(value)));
            }
        }
        for rule in &self.rules {
            for caps in rule.regex.captures_iter(text) {
                let secret = caps.get(1).or_else(|| caps.get(0)).expect("group 0").as_str();
                if !is_placeholder(secret) && !secret.contains("[REDACTED:") {
                    found.push((rule.name.clone(), excerpt(secret)));
                }
            }
        }
        // Values under secret-looking keys, when the text is JSON lines.
        for line in text.lines() {
            if let Ok(value) = serde_json::from_str::<Value>(line) {
                self.scan_keys(&value, &mut found);
            }
        }
        found
    }

    fn scan_keys(&self, value: &Value, found: &mut Vec<(String, String)>) {
        match value {
            Value::Array(items) => items.iter().for_each(|v| self.scan_keys(v, found)),
            Value::Object(map) => {
                for (key, v) in map {
                    match v {
                        Value::String(s)
                            if self.secret_keys.is_match(key) && !s.is_empty() && !is_placeholder(s) =>
                        {
                            found.push((format!("secret-key {key}"), excerpt(s)));
                        }
                        _ => self.scan_keys(v, found),
                    }
                }
            }
            _ => {}
        }
    }
}

/// The first and last characters of a secret, never the whole.
fn excerpt(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= 8 {
        return "…".into();
    }
    format!(
        "{}…{}",
        chars[..4].iter().collect::<String>(),
        chars[chars.len() - 2..].iter().collect::<String>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One secret of every supported shape.
    pub(crate) const CORPUS: &[(&str, &str)] = &[
        ("bearer", "Authorization: Bearer abcdefghijklmnop1234"),
        (
            "url-credentials",
            "postgres://admin:hunter2hunter2@db.internal:5432/app",
        ),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("github", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12"),
        ("github", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
        ("anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"),
        ("deepseek", "sk-0123456789abcdef0123456789abcdef"),
        ("openai", "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        ("slack", "xoxb-1234567890-0987654321-abcdefghij"),
        ("aws", "AKIAIOSFODNN7EXAMPLE"),
        ("google", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ];

    fn secret_of(text: &str) -> &str {
        text.rsplit([' ', '/']).find(|p| p.len() > 12).unwrap_or(text)
    }

    #[test]
    fn every_supported_shape_is_replaced_by_a_stable_placeholder() {
        let redactor = Redactor::new(&[], &[]).unwrap();
        for (rule, text) in CORPUS {
            let out = redactor.text(text);
            assert!(out.contains(&format!("[REDACTED:{rule}:")), "{rule}: {out}");
            assert_eq!(out, redactor.text(text), "stable");
            assert!(
                redactor.scan(&out).is_empty(),
                "{rule}: {:?}",
                redactor.scan(&out)
            );
            assert!(!redactor.scan(text).is_empty(), "{rule} is found by scan");
            let _ = secret_of(text);
        }
        assert!(
            !redactor
                .text("postgres://admin:hunter2hunter2@db")
                .contains("hunter2")
        );
    }

    #[test]
    fn values_under_secret_keys_env_values_and_custom_patterns_are_redacted() {
        // SAFETY of the test: a unique variable name, read only by this test.
        let redactor = Redactor::new(&[], &[r"tenant-[0-9]{6}".into()]).unwrap();
        let mut value = json!({
            "headers": {"X-Api-Key": "plain-value-123", "cookie": "sid=abc"},
            "nested": [{"password": "p4ss"}, {"note": "call tenant-123456 now"}],
            "count": 3
        });
        redactor.value(&mut value);
        let text = value.to_string();
        for gone in ["plain-value-123", "sid=abc", "p4ss", "tenant-123456"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(value["count"], 3);
        assert!(text.contains("[REDACTED:custom-1:"));
        assert!(redactor.scan(&text).is_empty());
    }
}
