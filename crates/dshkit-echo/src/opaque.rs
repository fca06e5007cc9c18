//! What redaction never looks into: a placeholder it wrote
//! (`[REDACTED:github:1a2b3c4d]`) and a path token (`{{dshkit:cwd}}`). The
//! rules run on the stretches of text between them, each on its own, so no rule
//! matches inside one or across one, and redacting twice gives what redacting
//! once gave.

use std::ops::Range;

use crate::paths::{Root, TOKEN_START};

const PLACEHOLDER_START: &str = "[REDACTED:";
/// Longest rule id a placeholder holds (`env-` and a variable's name).
const MAX_RULE_ID: usize = 128;
/// The hex digits of a placeholder's digest.
const DIGEST_DIGITS: usize = 8;

/// Whether `text` holds a placeholder or a path token.
pub(crate) fn any(text: &str) -> bool {
    next(text, 0).is_some()
}

/// The first placeholder or path token that starts at or after `from`.
pub(crate) fn next(text: &str, from: usize) -> Option<Range<usize>> {
    let mut at = from;
    loop {
        let rest = text.get(at..)?;
        let placeholder = rest.find(PLACEHOLDER_START);
        let token = rest.find(TOKEN_START);
        let start = at + placeholder.into_iter().chain(token).min()?;
        if let Some(len) = placeholder_len(&text[start..]).or_else(|| token_len(&text[start..])) {
            return Some(start..start + len);
        }
        at = start + 1;
    }
}

/// The stretches of `text` between its placeholders and path tokens, with
/// where each starts: what the rules may read.
pub(crate) fn stretches(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at <= text.len() {
            let span = next(text, at);
            let end = span.as_ref().map_or(text.len(), |span| span.start);
            let stretch = (at, &text[at..end]);
            at = span.map_or(text.len() + 1, |span| span.end);
            if !stretch.1.is_empty() {
                return Some(stretch);
            }
        }
        None
    })
}

/// The length of the placeholder `text` starts with: `[REDACTED:`, a rule id
/// (no white space, colon or bracket), `:`, eight lowercase hex digits, `]`.
fn placeholder_len(text: &str) -> Option<usize> {
    let rest = text.strip_prefix(PLACEHOLDER_START)?;
    let id_len = rest.find(':')?;
    let id = &rest[..id_len];
    if id.is_empty()
        || id.len() > MAX_RULE_ID
        || id.chars().any(|c| c.is_whitespace() || matches!(c, '[' | ']'))
    {
        return None;
    }
    let digest = rest[id_len + 1..].get(..=DIGEST_DIGITS)?;
    let (hex, close) = digest.split_at(DIGEST_DIGITS);
    (close == "]" && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then_some(PLACEHOLDER_START.len() + id_len + 1 + DIGEST_DIGITS + 1)
}

/// The length of the path token `text` starts with.
fn token_len(text: &str) -> Option<usize> {
    Root::ALL
        .into_iter()
        .map(Root::token)
        .find(|token| text.starts_with(token))
        .map(str::len)
}

/// A text cut into what the rules may read and what they may not.
pub(crate) struct Parts {
    parts: Vec<(String, bool)>,
}

impl Parts {
    /// `text`, cut at its placeholders and path tokens.
    pub(crate) fn of(text: &str) -> Self {
        let mut parts = Self { parts: Vec::new() };
        parts.append(text);
        parts
    }

    /// Adds readable text (joined to readable text before it).
    pub(crate) fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some((last, false)) => last.push_str(text),
            _ => self.parts.push((text.to_owned(), false)),
        }
    }

    /// Adds `text`, cut at its placeholders and path tokens.
    pub(crate) fn append(&mut self, text: &str) {
        let mut at = 0;
        while let Some(span) = next(text, at) {
            self.text(&text[at..span.start]);
            self.opaque(&text[span.clone()]);
            at = span.end;
        }
        self.text(&text[at..]);
    }

    /// Adds a placeholder or token: never read by a rule.
    pub(crate) fn opaque(&mut self, text: &str) {
        self.parts.push((text.to_owned(), true));
    }

    /// The readable parts.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.parts
            .iter()
            .filter(|(_, opaque)| !opaque)
            .map(|(text, _)| text.as_str())
    }

    /// Rewrites each readable part with `rewrite`, which adds the part's new
    /// text to the [`Parts`] it is given and returns true, or returns false to
    /// keep the part as it is. Returns whether any part was rewritten.
    pub(crate) fn rewrite(&mut self, mut rewrite: impl FnMut(&str, &mut Parts) -> bool) -> bool {
        let mut out = Self { parts: Vec::new() };
        let mut changed = false;
        for (text, opaque) in std::mem::take(&mut self.parts) {
            if opaque {
                out.opaque(&text);
            } else if rewrite(&text, &mut out) {
                changed = true;
            } else {
                out.text(&text);
            }
        }
        *self = out;
        changed
    }

    pub(crate) fn join(self) -> String {
        self.parts.into_iter().map(|(text, _)| text).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_tokens_are_found_by_their_whole_grammar() {
        let text = "a [REDACTED:github:0123abcd] b {{dshkit:cwd}}/c [REDACTED:env-PWD:[REDACTED:secret-assignment:c870089a]] [REDACTED:x:0123ABCD] [REDACTED::01234567] {{dshkit:other}}";
        let spans: Vec<&str> = std::iter::successors(next(text, 0), |span| next(text, span.end))
            .map(|span| &text[span])
            .collect();
        assert_eq!(
            spans,
            [
                "[REDACTED:github:0123abcd]",
                "{{dshkit:cwd}}",
                "[REDACTED:secret-assignment:c870089a]",
            ],
            "a nested or malformed one is text around a whole one"
        );
        assert_eq!(next("[REDACTED:env-GITHUB_TOKEN:89abcdef]", 0), Some(0..36));
        assert!(!any("[REDACTED:rule:0123abc]"));
        let stretches: Vec<(usize, &str)> = stretches("x[REDACTED:a:00000000]y{{dshkit:home}}").collect();
        assert_eq!(stretches, [(0, "x"), (22, "y")]);
    }

    #[test]
    fn parts_join_back_to_the_text_and_rewrite_only_what_is_readable() {
        let text = "token=[REDACTED:secret-assignment:0123abcd] in {{dshkit:cwd}}/a";
        let mut parts = Parts::of(text);
        assert_eq!(parts.texts().collect::<Vec<_>>(), ["token=", " in ", "/a"]);
        let changed = parts.rewrite(|part, out| {
            out.text(&part.to_uppercase());
            true
        });
        assert!(changed);
        assert_eq!(
            parts.join(),
            "TOKEN=[REDACTED:secret-assignment:0123abcd] IN {{dshkit:cwd}}/A"
        );
    }
}
