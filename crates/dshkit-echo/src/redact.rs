//! Redaction, applied before anything is written or shown. Each secret becomes a
//! stable placeholder `[REDACTED:<rule>:<8 hex of sha256>]`, so the same secret
//! always maps to the same placeholder: a live request carrying the secret still
//! matches its recorded, redacted twin.
//!
//! The rules are written from the public token formats: every family of
//! detect-secrets' and secretlint's default sets, the AI providers and the clouds
//! and service tokens `gitleaks` names, plus structural rules (private-key blocks,
//! credentials in URLs and headers, connection strings, secret-named
//! assignments). A keyword prefilter (one Aho-Corasick pass) decides which rules
//! can match at all, so clean text costs one scan, not one per rule.
//!
//! Before any rule runs, the paths of the roots it was given (the working
//! directory, the home) become their tokens (see [`crate::paths`]): a path is
//! never a secret. The rules never look into a placeholder or a token (see
//! [`crate::opaque`]), so redacting twice gives what redacting once gave.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

mod entropy;
mod rules;
mod sieve;

use self::sieve::WordSieve;
pub use crate::env_secrets::{MIN_ENV_SECRET_CHARS, name_looks_secret, value_looks_secret};
use crate::opaque::{self, Parts};
use crate::paths::PathRoots;
pub use entropy::{MIN_RANDOM_SECRET_CHARS, MIN_SECRET_ENTROPY_BITS};
pub use rules::{BUILT_IN, HIGH_ENTROPY, HIGH_ENTROPY_KEY_WORDS, SECRET_KEY_WORDS};

/// Shortest text a rule can find a secret in: shorter strings are left as they are
/// (custom rules excepted).
const MIN_SECRET_TEXT: usize = 8;
/// Shortest text the rules without keywords run on.
const MIN_UNCONDITIONAL_TEXT: usize = 50;
/// Most passes of redaction over one text (see [`Redactor::redact`]): each
/// pass that changes something turns readable text into placeholders and
/// tokens, and a pass after the second has never been seen to find more.
const MAX_PASSES: usize = 4;

/// A pattern rule: its stable id, the keywords one of which the text must contain
/// (none: always run) and the regex. The secret is capture group 1 when the regex
/// has one, else the whole match. A built-in regex is compiled the first time
/// its keywords are met (most texts meet few), once for every clone.
#[derive(Clone)]
struct Rule {
    id: String,
    keywords: &'static [&'static str],
    pattern: &'static str,
    regex: Arc<OnceLock<Regex>>,
}

impl Rule {
    fn regex(&self) -> &Regex {
        self.regex
            .get_or_init(|| Regex::new(self.pattern).expect("built-in patterns compile"))
    }

    /// Whether `secret`, which the rule found in `whole`, is one: not a
    /// reference, not the working directory, and random where the rule asks.
    fn takes(&self, whole: &str, secret: &str) -> bool {
        !is_reference(secret)
            && !is_working_directory(whole, secret)
            && (self.id != HIGH_ENTROPY || entropy::looks_random(secret))
    }
}

/// The redactor. Cloning is cheap (compiled regexes are shared).
#[derive(Clone)]
pub struct Redactor {
    rules: Vec<Rule>,
    /// The keywords of every rule, for the prefilter: lowercase ones match in any
    /// case, those with a capital letter (`AKIA`, `SK`) exactly.
    any_case: AhoCorasick,
    exact_case: AhoCorasick,
    /// For each keyword of each automaton, the rules it enables (a bitset).
    any_case_rules: Vec<u128>,
    exact_case_rules: Vec<u128>,
    /// Words whose presence in a JSON key makes its value a secret.
    secret_key_words: AhoCorasick,
    /// Words whose presence in a JSON key makes a random value a secret.
    high_entropy_key_words: AhoCorasick,
    /// Rules without keywords (and custom rules past the 128th): they always run.
    unconditional: u128,
    /// Custom rules past the 128th, run on every text.
    overflow: Vec<usize>,
    /// The custom rules among the first 128: they run on every text.
    custom: u128,
    /// (name, value) of environment variables to redact literally.
    literals: Vec<(String, String)>,
    /// The words [`Self::clears_json_text`] looks for in any case, and the
    /// keywords with a capital letter, kept to build its first look again
    /// for other roots.
    clear_any_case_words: Vec<&'static str>,
    exact_case_words: Vec<&'static str>,
    /// Paths normalised to their tokens before any rule runs.
    paths: PathRoots,
    /// For [`Self::clears_json_text`]: every word that makes some string or key
    /// worth a closer look, in two automata as the keywords are (the keywords
    /// in any case with the secret-key words, `auth` and `pwd`; the keywords
    /// with a capital letter with the literal secrets, exactly).
    clear_any_case: AhoCorasick,
    clear_exact_case: AhoCorasick,
    /// A first look before those automata.
    clear_sieve: WordSieve,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.rule_ids())
            .field("literals", &self.literals.len())
            .finish_non_exhaustive()
    }
}

/// Values an assignment rule leaves alone: no secret, only a reference to one.
fn is_reference(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "true" | "false" | "null" | "none" | "undefined" | "required" | "optional" | "string" | "redacted"
    ) || value.starts_with("${")
        || value.starts_with("$(")
        || value.starts_with("{{")
        || value.starts_with('$') && value[1..].chars().all(|c| c.is_ascii_uppercase() || c == '_')
        || value
            .chars()
            .all(|c| c == '*' || c == 'x' || c == 'X' || c == '.')
        || value.starts_with("process.env")
        || value.starts_with("os.environ")
}

/// The placeholder for `secret` under `rule`.
pub fn placeholder(rule: &str, secret: &str) -> String {
    let digest = hex::encode(Sha256::digest(secret.as_bytes()));
    format!("[REDACTED:{rule}:{}]", &digest[..8])
}

/// Whether `secret`, found by an assignment rule in `whole`, is the shell's
/// working directory: a path assigned to `PWD` (`PWD=/home/ana/app`), which
/// the rules would otherwise take for a password (`MYSQL_PWD` is one).
fn is_working_directory(whole: &str, secret: &str) -> bool {
    let Some(at) = whole.find(secret) else {
        return false;
    };
    let name = whole[..at]
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '=' | ':' | '"' | '\''))
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    name.eq_ignore_ascii_case("pwd") && crate::env_secrets::is_path(secret)
}

/// Whether `text` is nothing but placeholders (and white space): already redacted.
fn is_redacted(text: &str) -> bool {
    let mut rest = text.trim();
    while let Some(start) = rest.find("[REDACTED:") {
        if !rest[..start].trim().is_empty() {
            return false;
        }
        let Some(end) = rest[start..].find(']') else {
            return false;
        };
        rest = rest[start + end + 1..].trim_start();
    }
    rest.trim().is_empty() && text.contains("[REDACTED:")
}

/// One secret `scan` found: the rule, where (1-based line and column), and a
/// hint that is never the secret (its first characters when they are a public
/// prefix, and its length).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub rule: String,
    pub line: usize,
    pub column: usize,
    pub hint: String,
}

impl Redactor {
    /// The built-in rules, the secret-looking keys, the values of the environment
    /// variables named in `env_names` (plus every variable whose name and value
    /// look secret, see [`crate::env_secrets`]), and the `custom` regexes.
    pub fn new(env_names: &[String], custom: &[String]) -> Result<Self, regex::Error> {
        Self::with_environment(env_names, custom, std::env::vars())
    }

    /// [`Self::new`] with the environment `variables` (name, value) instead
    /// of this process's.
    pub fn with_environment(
        env_names: &[String],
        custom: &[String],
        variables: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, regex::Error> {
        let mut rules: Vec<Rule> = BUILT_IN
            .iter()
            .map(|(id, keywords, pattern)| Rule {
                id: (*id).to_owned(),
                keywords,
                pattern,
                regex: Arc::default(),
            })
            .collect();
        for (i, pattern) in custom.iter().enumerate() {
            rules.push(Rule {
                id: format!("custom-{}", i + 1),
                keywords: &[],
                pattern: "",
                regex: Arc::new(OnceLock::from(Regex::new(pattern)?)),
            });
        }
        let (mut any_case, mut any_case_rules): (Vec<&'static str>, Vec<u128>) = (Vec::new(), Vec::new());
        let (mut exact_case, mut exact_case_rules): (Vec<&'static str>, Vec<u128>) = (Vec::new(), Vec::new());
        let mut unconditional = 0u128;
        let mut overflow = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if index >= 128 {
                overflow.push(index);
                continue;
            }
            let bit = 1u128 << index;
            if rule.keywords.is_empty() && !rule.id.starts_with("custom-") {
                unconditional |= bit;
            }
            for &keyword in rule.keywords {
                let (words, masks) = if keyword.chars().any(|c| c.is_ascii_uppercase()) {
                    (&mut exact_case, &mut exact_case_rules)
                } else {
                    (&mut any_case, &mut any_case_rules)
                };
                match words.iter().position(|k| *k == keyword) {
                    Some(at) => masks[at] |= bit,
                    None => {
                        words.push(keyword);
                        masks.push(bit);
                    }
                }
            }
        }
        let custom = rules
            .iter()
            .enumerate()
            .filter(|(i, r)| *i < 128 && r.id.starts_with("custom-"))
            .fold(0u128, |bits, (i, _)| bits | 1u128 << i);
        let automaton = |words: &[&str], any_case: bool| {
            AhoCorasick::builder()
                .ascii_case_insensitive(any_case)
                .build(words)
                .expect("the keywords build an automaton")
        };
        // A variable named with --redact-env is taken at its word; any other
        // must be named like a secret and hold a value that looks like one.
        let mut literals: Vec<(String, String)> = variables
            .into_iter()
            .filter(|(name, value)| {
                if env_names.contains(name) {
                    value.chars().count() >= MIN_ENV_SECRET_CHARS
                } else {
                    name_looks_secret(name) && value_looks_secret(value)
                }
            })
            .collect();
        // Longest first, so a value containing another is replaced whole.
        literals.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        let clear_any_case: Vec<&'static str> = any_case
            .iter()
            .copied()
            .chain(SECRET_KEY_WORDS.iter().copied())
            .chain(["auth", "pwd"])
            .collect();
        let mut redactor = Self {
            clear_sieve: WordSieve::new(&[], &[]),
            clear_any_case: automaton(&clear_any_case, true),
            clear_exact_case: automaton(&[], false),
            rules,
            any_case: automaton(&any_case, true),
            exact_case: automaton(&exact_case, false),
            any_case_rules,
            exact_case_rules,
            secret_key_words: automaton(SECRET_KEY_WORDS, true),
            high_entropy_key_words: automaton(HIGH_ENTROPY_KEY_WORDS, true),
            unconditional,
            overflow,
            custom,
            literals,
            clear_any_case_words: clear_any_case,
            exact_case_words: exact_case,
            paths: PathRoots::none(),
        };
        redactor.build_clearing();
        Ok(redactor)
    }

    /// The same redactor, normalising the paths of `paths` to their tokens
    /// before any rule runs.
    #[must_use]
    pub fn with_paths(mut self, paths: PathRoots) -> Self {
        self.set_paths(paths);
        self
    }

    /// Normalises the paths of `paths` (and no others) from now on.
    pub fn set_paths(&mut self, paths: PathRoots) {
        self.paths = paths;
        self.build_clearing();
    }

    /// The roots whose paths this redactor normalises.
    pub fn paths(&self) -> &PathRoots {
        &self.paths
    }

    /// The first look and the automata of [`Self::clears_json_text`]: the
    /// words in any case, and exactly the keywords with a capital letter, the
    /// secrets of the environment and the paths of the roots.
    fn build_clearing(&mut self) {
        let exact_case: Vec<&str> = self
            .exact_case_words
            .iter()
            .copied()
            .chain(self.literals.iter().map(|(_, value)| value.as_str()))
            .chain(self.paths.spellings())
            .collect();
        self.clear_sieve = WordSieve::new(&self.clear_any_case_words, &exact_case);
        self.clear_exact_case = AhoCorasick::builder()
            .build(&exact_case)
            .expect("the words build an automaton");
    }

    /// The ids of the rules, built-in first.
    pub fn rule_ids(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.id.as_str()).collect()
    }

    /// The rules that can match `text` (a bitset in rule order): those whose
    /// keyword it contains, and those without keywords.
    fn candidates(&self, text: &str) -> u128 {
        // The rules without keywords need a long text (the built-in one, a Discord
        // bot token, is 59 characters at least).
        let mut hit = self.custom;
        if text.len() >= MIN_UNCONDITIONAL_TEXT {
            hit |= self.unconditional;
        }
        // Most text holds no keyword: a prefiltered search says so fastest.
        for (automaton, masks) in [
            (&self.any_case, &self.any_case_rules),
            (&self.exact_case, &self.exact_case_rules),
        ] {
            if automaton.is_match(text) {
                for found in automaton.find_overlapping_iter(text) {
                    hit |= masks[found.pattern().as_usize()];
                }
            }
        }
        hit
    }

    /// Whether [`Self::value`] would change `value`; it only reads.
    pub fn touches(&self, value: &Value) -> bool {
        match value {
            Value::String(s) => matches!(self.redact(s), Cow::Owned(redacted) if redacted != *s),
            Value::Array(items) => items.iter().any(|v| self.touches(v)),
            Value::Object(map) => map.iter().any(|(key, v)| self.touches_under(key, v)),
            _ => false,
        }
    }

    /// Whether [`Self::value`] would change the JSON `text`, read without
    /// building its tree (text that is not JSON counts as changed).
    pub fn touches_json(&self, text: &str) -> bool {
        self.touches_json_under(None, text)
    }

    /// [`Self::touches_json`] for the value of the member `key`.
    pub(crate) fn touches_json_under(&self, key: Option<&str>, text: &str) -> bool {
        self.touches_seed(key).json(text)
    }

    /// Reads a JSON value (the member `key`'s) from a deserializer into whether
    /// [`Self::value`] would change it, as [`Self::touches_json`] does.
    pub(crate) fn touches_seed<'r, 'k>(&'r self, key: Option<&'k str>) -> Touches<'r, 'k> {
        Touches::new(Some(self), key)
    }

    /// Whether [`Self::touches_json`] is sure to say no for the JSON `text`,
    /// decided from its raw bytes at once rather than string by string; `false`
    /// means only that each string needs the closer look. It holds when the
    /// text has no escape (so each string's bytes stand in it as they read), no
    /// keyword of any rule, no word that makes a key secret, no secret from the
    /// environment, no string long enough for the rules without keywords, and
    /// the redactor has no custom rule (those run on every string).
    pub(crate) fn clears_json_text(&self, text: &[u8]) -> bool {
        if self.custom != 0 || !self.overflow.is_empty() {
            return false;
        }
        let sifted = self.clear_sieve.sift(text);
        !sifted.escape
            && (self.unconditional == 0 || sifted.longest_string < MIN_UNCONDITIONAL_TEXT)
            && !(sifted.may_hold_word
                && (self.clear_any_case.is_match(text) || self.clear_exact_case.is_match(text)))
    }

    /// Whether [`Self::value`] would change the string `value` of the member `key`.
    pub(crate) fn touches_string(&self, key: Option<&str>, value: &str) -> bool {
        self.touches_seed(key).string(value)
    }

    /// Whether [`Self::value`] would change `value`, the member `key`'s.
    pub(crate) fn touches_under(&self, key: &str, value: &Value) -> bool {
        match value {
            Value::String(s) => self.touches_string(Some(key), s),
            _ => self.touches(value),
        }
    }

    /// What the string `value` under `key` is replaced with whole, if it is:
    /// when `key` names a secret (or sounds secret and `value` looks random)
    /// and `value` (its paths normalised) is neither empty, a placeholder nor a
    /// reference, nor a path under `pwd` (the working directory).
    fn hidden_under_key(&self, key: &str, value: &str) -> Option<String> {
        let secret_key = self.is_secret_key(key);
        // The length first: most values are too short to look random, and
        // this runs for every string under a key.
        let may_be_random =
            value.len() >= MIN_RANDOM_SECRET_CHARS && self.high_entropy_key_words.is_match(key);
        if !(secret_key || may_be_random) || value.is_empty() {
            return None;
        }
        let value = self.paths.normalise(value);
        if !secret_key && !entropy::looks_random(&value) {
            return None;
        }
        let working_directory = key.eq_ignore_ascii_case("pwd") && crate::env_secrets::is_path(&value);
        let kept = is_redacted(&value) || is_reference(&value) || working_directory;
        let rule = if secret_key { "secret-key" } else { HIGH_ENTROPY };
        (!kept).then(|| placeholder(rule, &value))
    }

    /// Whether a JSON key names a secret (`token`, `password`, `api_key`, …).
    fn is_secret_key(&self, key: &str) -> bool {
        key.eq_ignore_ascii_case("auth")
            || key.eq_ignore_ascii_case("pwd")
            || self.secret_key_words.is_match(key)
    }

    /// The indexes of the rules in `bits`, then the overflow rules.
    fn rules_in(&self, bits: u128) -> impl Iterator<Item = usize> + '_ {
        (0..self.rules.len().min(128))
            .filter(move |i| bits & (1u128 << i) != 0)
            .chain(self.overflow.iter().copied())
    }

    /// Redacts every secret in `text`.
    pub fn text(&self, text: &str) -> String {
        self.redact(text).into_owned()
    }

    /// Redacts every secret in `text`, its paths normalised first; borrows it
    /// when nothing changed.
    ///
    /// Only the stretches between placeholders and tokens are read. Each
    /// pass normalises the paths, then replaces the environment's secrets,
    /// then runs the rules in order, each on what the ones before it left. A
    /// placeholder cuts the text, and a stretch that now starts where a secret
    /// ended may hold what the text around it did not (a path, or a URL's
    /// credentials glued to a token: `sq0csp-…https://user:pass@host`), so a
    /// pass that changed something is followed by another: a second
    /// redaction finds nothing the first left.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let paths = !self.paths.is_empty() && self.paths.spellings().any(|path| text.contains(path));
        let short = text.len() < MIN_SECRET_TEXT && self.custom == 0 && self.overflow.is_empty();
        if short && !paths {
            return Cow::Borrowed(text);
        }
        let quiet = !paths
            && !opaque::any(text)
            && !self
                .literals
                .iter()
                .any(|(_, value)| text.contains(value.as_str()))
            && self.candidates(text) == 0
            && self.overflow.is_empty();
        if quiet {
            return Cow::Borrowed(text);
        }
        let mut parts = Parts::of(text);
        let mut changed = false;
        for _ in 0..MAX_PASSES {
            let mut pass_changed = parts.rewrite(|part, out| match self.paths.normalise(part) {
                Cow::Owned(normalised) => {
                    out.append(&normalised);
                    true
                }
                Cow::Borrowed(_) => false,
            });
            if !short {
                pass_changed |= self.redact_secrets(&mut parts);
            }
            changed |= pass_changed;
            if !pass_changed {
                break;
            }
        }
        if changed {
            Cow::Owned(parts.join())
        } else {
            Cow::Borrowed(text)
        }
    }

    /// One pass of the environment's secrets and the rules over the readable
    /// `parts`; whether it replaced anything.
    fn redact_secrets(&self, parts: &mut Parts) -> bool {
        let mut changed = false;
        for (name, value) in &self.literals {
            changed |= parts.rewrite(|part, out| {
                if !part.contains(value.as_str()) {
                    return false;
                }
                for (index, piece) in part.split(value.as_str()).enumerate() {
                    if index > 0 {
                        out.opaque(&placeholder(&format!("env-{name}"), value));
                    }
                    out.text(piece);
                }
                true
            });
        }
        let candidates = parts.texts().fold(0, |bits, part| bits | self.candidates(part));
        for index in self.rules_in(candidates) {
            let rule = &self.rules[index];
            changed |= parts.rewrite(|part, out| Self::apply_rule(rule, part, out));
        }
        changed
    }

    /// Adds `part` to `out` with each secret `rule` finds in it replaced by its
    /// placeholder; false (and nothing added) when it finds none.
    fn apply_rule(rule: &Rule, part: &str, out: &mut Parts) -> bool {
        if !rule.regex().is_match(part) {
            return false;
        }
        let mut changed = false;
        let mut last = 0;
        for caps in rule.regex().captures_iter(part) {
            let whole = caps.get(0).expect("group 0");
            let secret = (1..caps.len()).find_map(|g| caps.get(g)).unwrap_or(whole);
            if !rule.takes(whole.as_str(), secret.as_str()) {
                continue;
            }
            let value = secret.as_str();
            out.text(&part[last..secret.start()]);
            out.opaque(&placeholder(&rule.id, value));
            last = secret.end();
            changed = true;
        }
        if changed {
            out.text(&part[last..]);
        }
        changed
    }

    /// Redacts a JSON value in place: every string, and whole values under
    /// secret-looking keys. Returns whether anything changed.
    pub fn value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.redact(s) {
                Cow::Owned(redacted) if redacted != *s => {
                    *s = redacted;
                    true
                }
                _ => false,
            },
            Value::Array(items) => items.iter_mut().fold(false, |changed, v| self.value(v) | changed),
            Value::Object(map) => {
                let mut changed = false;
                for (key, v) in map.iter_mut() {
                    match v {
                        Value::String(s) => match self.hidden_under_key(key, s) {
                            Some(hidden) => {
                                *s = hidden;
                                changed = true;
                            }
                            None => changed |= self.value(v),
                        },
                        _ => changed |= self.value(v),
                    }
                }
                changed
            }
            _ => false,
        }
    }

    /// The secrets left in `text`, each with its rule and place, never the secret.
    pub fn scan(&self, text: &str) -> Vec<Finding> {
        let mut found = Vec::new();
        let at = |offset: usize| {
            let before = &text[..offset];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
            (line, column)
        };
        // Only the stretches between placeholders and tokens are read, as
        // redaction reads them.
        for (start, stretch) in opaque::stretches(text) {
            for (name, value) in &self.literals {
                for (offset, _) in stretch.match_indices(value.as_str()) {
                    let (line, column) = at(start + offset);
                    found.push(Finding {
                        rule: format!("env-{name}"),
                        line,
                        column,
                        hint: hint(value),
                    });
                }
            }
            for index in self.rules_in(self.candidates(stretch)) {
                let rule = &self.rules[index];
                for caps in rule.regex().captures_iter(stretch) {
                    let whole = caps.get(0).expect("group 0");
                    let secret = (1..caps.len()).find_map(|g| caps.get(g)).unwrap_or(whole);
                    let value = secret.as_str();
                    if !rule.takes(whole.as_str(), value) {
                        continue;
                    }
                    let (line, column) = at(start + secret.start());
                    found.push(Finding {
                        rule: rule.id.clone(),
                        line,
                        column,
                        hint: hint(value),
                    });
                }
            }
        }
        // Values under secret-looking keys, when the text is JSON lines.
        for (number, line) in text.lines().enumerate() {
            if let Ok(value) = serde_json::from_str::<Value>(line) {
                self.scan_keys(&value, number + 1, &mut found);
            }
        }
        found.sort_by_key(|f| (f.line, f.column));
        found
    }

    fn scan_keys(&self, value: &Value, line: usize, found: &mut Vec<Finding>) {
        match value {
            Value::Array(items) => items.iter().for_each(|v| self.scan_keys(v, line, found)),
            Value::Object(map) => {
                for (key, v) in map {
                    match v {
                        Value::String(s) if self.hidden_under_key(key, s).is_some() => {
                            found.push(Finding {
                                rule: format!("secret-key {key}"),
                                line,
                                column: 0,
                                hint: hint(s),
                            });
                        }
                        _ => self.scan_keys(v, line, found),
                    }
                }
            }
            _ => {}
        }
    }
}

/// What a finding may show of a secret: its length, and its first characters
/// only when they are a public prefix (`ghp_`, `sk-ant-`, `AKIA`).
fn hint(secret: &str) -> String {
    const PUBLIC_PREFIXES: &[&str] = &[
        "ghp_",
        "gho_",
        "ghs_",
        "ghu_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "sk-ant-",
        "sk-proj-",
        "sk-",
        "AKIA",
        "ASIA",
        "xoxb-",
        "xoxp-",
        "npm_",
        "hf_",
        "gsk_",
        "-----BEGIN",
    ];
    let length = secret.chars().count();
    match PUBLIC_PREFIXES.iter().find(|p| secret.starts_with(**p)) {
        Some(prefix) => format!("{prefix}… ({length} chars)"),
        None => format!("({length} chars)"),
    }
}

/// Reads one JSON value for [`Redactor::touches_json`]: whether a string in
/// it would be redacted, `key` being the member it is the value of. Without a
/// redactor it only reads the value, as strictly (each number read as one).
#[derive(Clone, Copy)]
pub(crate) struct Touches<'r, 'k> {
    redactor: Option<&'r Redactor>,
    key: Option<&'k str>,
}

impl<'r, 'k> Touches<'r, 'k> {
    pub(crate) fn new(redactor: Option<&'r Redactor>, key: Option<&'k str>) -> Self {
        Self { redactor, key }
    }

    /// Whether the string `value` would be redacted.
    pub(crate) fn string(&self, value: &str) -> bool {
        self.redactor.is_some_and(|redactor| {
            self.key
                .is_some_and(|key| redactor.hidden_under_key(key, value).is_some())
                || matches!(redactor.redact(value), Cow::Owned(redacted) if redacted != value)
        })
    }

    /// Whether the JSON `text` would be redacted; text that does not read as
    /// JSON (a tree's JSON: a number out of range counts) counts as touched.
    pub(crate) fn json(self, text: &str) -> bool {
        let mut reader = serde_json::Deserializer::from_str(text);
        serde::de::DeserializeSeed::deserialize(self, &mut reader).unwrap_or(true)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Touches<'_, '_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Touches<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E>(self, value: &str) -> Result<bool, E> {
        Ok(self.string(value))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<bool, A::Error> {
        let mut touched = false;
        while let Some(item) = items.next_element_seed(Touches::new(self.redactor, None))? {
            touched |= item;
        }
        Ok(touched)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut members: A) -> Result<bool, A::Error> {
        let mut touched = false;
        while let Some(MemberName(key)) = members.next_key()? {
            touched |= members.next_value_seed(Touches::new(self.redactor, Some(&key)))?;
        }
        Ok(touched)
    }
}

/// A member name, borrowed from the text unless it holds an escape.
struct MemberName<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for MemberName<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> serde::de::Visitor<'de> for Name {
            type Value = MemberName<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<MemberName<'de>, E> {
                Ok(MemberName(Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<MemberName<'de>, E> {
                Ok(MemberName(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_built_in_pattern_compiles_though_each_is_compiled_only_when_needed() {
        let redactor = Redactor::new(&[], &[]).unwrap();
        for rule in &redactor.rules {
            assert!(
                rule.regex.get().is_none(),
                "{} compiled before any text met it",
                rule.id
            );
            let _ = rule.regex();
        }
        assert!(
            Redactor::new(&[], &["(unclosed".into()]).is_err(),
            "a bad custom pattern is refused at once"
        );
    }

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
        ("aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
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
        assert!(redactor.touches(&value));
        assert!(redactor.value(&mut value));
        assert!(!redactor.touches(&value), "a redacted value stays as it is");
        let text = value.to_string();
        for gone in ["plain-value-123", "sid=abc", "p4ss", "tenant-123456"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(value["count"], 3);
        assert!(text.contains("[REDACTED:custom-1:"));
        assert!(redactor.scan(&text).is_empty());
    }
}

#[cfg(test)]
mod corpus_tests;

#[cfg(test)]
mod never_twice_tests;
