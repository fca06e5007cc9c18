//! Paths that name the same place on every machine but are spelled differently
//! on each: the working directory a cassette was recorded in and the home
//! directory. A recording writes them as tokens (`{{dshkit:cwd}}/notes.txt`), so
//! a cassette matches and answers the same from any directory; replay and
//! verify put this machine's paths back where the tokens stand. They are never
//! secrets and never become a secret's placeholder: the redactor normalises
//! them before any rule runs, and its rules never look inside a token.
//!
//! A path is recognised only where it stands whole: nothing that can be part of
//! a file name before it, and after it the end of the text, a separator, or
//! something no name goes on with (`/tmp/rec` is found in `/tmp/rec/a.txt`,
//! `"/tmp/rec"` and `/tmp/rec.`, never in `/tmp/records` or `/x/tmp/rec`).

use std::borrow::Cow;
use std::path::Path;

use serde_json::Value;

/// A place whose path differs between machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// The working directory of the recording (of the replay, of the verification).
    Cwd,
    /// The home directory (`HOME`).
    Home,
}

impl Root {
    pub const ALL: [Self; 2] = [Self::Cwd, Self::Home];

    /// The name a cassette header lists it under.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cwd => "cwd",
            Self::Home => "home",
        }
    }

    /// What stands for it in a cassette.
    pub fn token(self) -> &'static str {
        match self {
            Self::Cwd => "{{dshkit:cwd}}",
            Self::Home => "{{dshkit:home}}",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|root| root.name() == name)
    }
}

/// The text every token starts with.
pub(crate) const TOKEN_START: &str = "{{dshkit:";

/// The paths of the roots on one machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathRoots {
    /// Every spelling of each root (as given, and resolved through links),
    /// longest first: a root inside another (the working directory in the home)
    /// is found before the one around it.
    forms: Vec<(String, Root)>,
    /// The path that replaces each root's token here: its first spelling.
    here: Vec<(Root, String)>,
}

impl PathRoots {
    /// No roots: nothing is normalised or expanded (cassettes recorded before
    /// format 2, and what is not a recording).
    pub fn none() -> Self {
        Self::default()
    }

    /// The roots at `cwd` and `home`, each under its spellings. A relative path,
    /// the filesystem's root and an empty path are no root (they would match
    /// far too much).
    pub fn new(cwd: Option<&Path>, home: Option<&Path>) -> Self {
        let mut roots = Self::none();
        roots.add(Root::Cwd, cwd, None);
        roots.add(Root::Home, home, None);
        roots
    }

    /// This process's roots: its working directory (also as `PWD` spells it,
    /// when that is the same directory through a link) and `HOME` (on Windows,
    /// `USERPROFILE`).
    pub fn here() -> Self {
        let cwd = std::env::current_dir().ok();
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(std::path::PathBuf::from);
        let pwd = std::env::var_os("PWD").map(std::path::PathBuf::from);
        let mut roots = Self::none();
        roots.add(Root::Cwd, cwd.as_deref(), pwd.as_deref());
        roots.add(Root::Home, home.as_deref(), None);
        roots
    }

    fn add(&mut self, root: Root, path: Option<&Path>, alias: Option<&Path>) {
        let Some(path) = path.filter(|p| p.is_absolute()) else {
            return;
        };
        let resolved = dshkit_os::fs::canonicalize(path).ok();
        let alias = alias.filter(|alias| {
            alias.is_absolute()
                && resolved.is_some()
                && dshkit_os::fs::canonicalize(alias).ok().as_deref() == resolved.as_deref()
        });
        let mut spellings = vec![path.to_path_buf()];
        spellings.extend(resolved);
        spellings.extend(alias.map(Path::to_path_buf));
        for spelling in spellings {
            let Some(text) = spelling.to_str().map(trim_separators) else {
                continue;
            };
            if text.is_empty() || self.forms.iter().any(|(form, _)| form == text) {
                continue;
            }
            if !self.here.iter().any(|(known, _)| *known == root) {
                self.here.push((root, text.to_owned()));
            }
            self.forms.push((text.to_owned(), root));
        }
        // Longest first; the working directory before the home at one length.
        self.forms
            .sort_by(|(a, ra), (b, rb)| b.len().cmp(&a.len()).then((*ra as u8).cmp(&(*rb as u8))));
    }

    /// Only the roots named in `names` (a cassette header's `paths`).
    #[must_use]
    pub fn only(&self, names: &[String]) -> Self {
        let kept = |root: &Root| names.iter().any(|name| name == root.name());
        Self {
            forms: self.forms.iter().filter(|(_, r)| kept(r)).cloned().collect(),
            here: self.here.iter().filter(|(r, _)| kept(r)).cloned().collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// The names of the roots known here, for a cassette header.
    pub fn names(&self) -> Vec<String> {
        Root::ALL
            .into_iter()
            .filter(|root| self.here.iter().any(|(known, _)| known == root))
            .map(|root| root.name().to_owned())
            .collect()
    }

    /// Every spelling of every root: text that holds none of them needs no
    /// normalising.
    pub(crate) fn spellings(&self) -> impl Iterator<Item = &str> {
        self.forms.iter().map(|(form, _)| form.as_str())
    }

    /// `text` with each root's path, where it stands whole, replaced by the
    /// root's token.
    pub fn normalise<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (form, root) in &self.forms {
            if !out.contains(form.as_str()) {
                continue;
            }
            let mut replaced = String::with_capacity(out.len());
            let mut rest_start = 0;
            for (at, _) in out.match_indices(form.as_str()) {
                if at < rest_start || !stands_whole(&out, at, at + form.len()) {
                    continue;
                }
                replaced.push_str(&out[rest_start..at]);
                replaced.push_str(root.token());
                rest_start = at + form.len();
            }
            if rest_start > 0 {
                replaced.push_str(&out[rest_start..]);
                out = Cow::Owned(replaced);
            }
        }
        out
    }

    /// `text` with each token of a root known here replaced by its path here;
    /// a token of a root unknown here stays.
    pub fn expand<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !text.contains(TOKEN_START) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_owned();
        for (root, path) in &self.here {
            out = out.replace(root.token(), path);
        }
        if out == text {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(out)
        }
    }

    /// [`Self::expand`] on JSON text: each path goes in escaped as a JSON
    /// string's content (a token holds nothing JSON escapes, so it stands in
    /// the text as it reads).
    pub fn expand_json_text<'a>(&self, text: &'a [u8]) -> Cow<'a, [u8]> {
        if self.here.is_empty() {
            return Cow::Borrowed(text);
        }
        let Ok(as_str) = std::str::from_utf8(text) else {
            return Cow::Borrowed(text);
        };
        if !as_str.contains(TOKEN_START) {
            return Cow::Borrowed(text);
        }
        let mut out = as_str.to_owned();
        for (root, path) in &self.here {
            let escaped = serde_json::to_string(path).expect("a string serializes");
            out = out.replace(root.token(), &escaped[1..escaped.len() - 1]);
        }
        Cow::Owned(out.into_bytes())
    }

    /// [`Self::expand`] on every string (and member name) of `value`.
    pub fn expand_value(&self, value: &mut Value) {
        if self.here.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Cow::Owned(expanded) = self.expand(s) {
                    *s = expanded;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.expand_value(item)),
            Value::Object(map) => {
                if map.keys().any(|key| key.contains(TOKEN_START)) {
                    let members = std::mem::take(map);
                    for (key, mut member) in members {
                        self.expand_value(&mut member);
                        map.insert(self.expand(&key).into_owned(), member);
                    }
                } else {
                    map.values_mut().for_each(|member| self.expand_value(member));
                }
            }
            _ => {}
        }
    }
}

/// A path without the separators it ends with (`/tmp/rec/` is `/tmp/rec`);
/// the filesystem's root becomes empty (no root).
fn trim_separators(path: &str) -> &str {
    path.trim_end_matches(['/', '\\'])
}

/// Whether a character may be part of a file name next to a path: letters and
/// digits of any script and the punctuation names are commonly made of.
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '~' | '@' | '+' | '%' | '=' | '.')
}

/// Whether `text[start..end]` stands whole: no name character before it, and
/// after it the end, a separator, or a character that ends a name (a `.` ends
/// one only before the end or white space, as a sentence's full stop does).
fn stands_whole(text: &str, start: usize, end: usize) -> bool {
    if text[..start].chars().next_back().is_some_and(is_name_char) {
        return false;
    }
    let mut after = text[end..].chars();
    match after.next() {
        None | Some('/' | '\\') => true,
        Some('.') => after.next().is_none_or(|c| !is_name_char(c)),
        Some(c) => !is_name_char(c),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // Most cases are spelled as Unix paths (what they pin, where a path stands
    // whole, holds for every spelling); Windows spellings have their own test.

    #[cfg_attr(windows, allow(dead_code))]
    fn roots(cwd: &str, home: &str) -> PathRoots {
        PathRoots::new(Some(Path::new(cwd)), Some(Path::new(home)))
    }

    #[test]
    #[cfg(unix)]
    fn a_root_is_replaced_where_it_stands_whole_and_nowhere_else() {
        let roots = roots("/tmp/rec-1", "/home/ana");
        let cases = [
            ("/tmp/rec-1", "{{dshkit:cwd}}"),
            ("/tmp/rec-1/notes.txt", "{{dshkit:cwd}}/notes.txt"),
            (
                "Allowed directories:\n/tmp/rec-1",
                "Allowed directories:\n{{dshkit:cwd}}",
            ),
            ("wrote to /tmp/rec-1.", "wrote to {{dshkit:cwd}}."),
            (
                "[FILE] /tmp/rec-1/a, /tmp/rec-1/b",
                "[FILE] {{dshkit:cwd}}/a, {{dshkit:cwd}}/b",
            ),
            ("file:///tmp/rec-1/x", "file://{{dshkit:cwd}}/x"),
            ("(/tmp/rec-1)", "({{dshkit:cwd}})"),
            ("/home/ana/.config", "{{dshkit:home}}/.config"),
            // Not the same place, or not a path of it.
            ("/tmp/rec-10", "/tmp/rec-10"),
            ("/tmp/rec-1.bak", "/tmp/rec-1.bak"),
            ("/x/tmp/rec-1", "/x/tmp/rec-1"),
            ("./tmp/rec-1", "./tmp/rec-1"),
            ("/home/anabel", "/home/anabel"),
        ];
        for (text, expected) in cases {
            assert_eq!(roots.normalise(text), expected, "{text}");
        }
        assert!(matches!(roots.normalise("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    #[cfg(unix)]
    fn the_working_directory_inside_the_home_is_found_before_the_home() {
        let roots = roots("/home/ana/project", "/home/ana");
        assert_eq!(
            roots.normalise("/home/ana/project/src and /home/ana/.npmrc"),
            "{{dshkit:cwd}}/src and {{dshkit:home}}/.npmrc"
        );
        // The same directory for both: the working directory names it.
        let same = PathRoots::new(Some(Path::new("/home/ana")), Some(Path::new("/home/ana")));
        assert_eq!(same.normalise("/home/ana/x"), "{{dshkit:cwd}}/x");
    }

    #[test]
    fn no_root_is_made_of_the_filesystem_root_or_a_relative_path() {
        let roots = PathRoots::new(Some(Path::new("/")), Some(Path::new("relative/home")));
        assert!(roots.is_empty());
        assert_eq!(
            roots.normalise("/etc/passwd relative/home"),
            "/etc/passwd relative/home"
        );
        assert!(roots.names().is_empty());
    }

    #[test]
    #[cfg(unix)]
    fn tokens_expand_to_the_paths_here_and_back() {
        let recorded = roots("/tmp/rec-1", "/home/ana");
        let here = roots("/srv/ci/work dir", "/root");
        let text = "/tmp/rec-1/a.txt in /home/ana";
        let normalised = recorded.normalise(text);
        assert_eq!(normalised, "{{dshkit:cwd}}/a.txt in {{dshkit:home}}");
        let expanded = here.expand(&normalised);
        assert_eq!(expanded, "/srv/ci/work dir/a.txt in /root");
        assert_eq!(here.normalise(&expanded), normalised, "round trip");
        // A root the cassette did not record stays a token.
        let cwd_only = here.only(&["cwd".into()]);
        assert_eq!(
            cwd_only.expand(&normalised),
            "/srv/ci/work dir/a.txt in {{dshkit:home}}"
        );
        assert_eq!(cwd_only.names(), ["cwd"]);
    }

    #[test]
    #[cfg(unix)]
    fn json_text_and_trees_expand_with_the_path_escaped() {
        let here = PathRoots::new(Some(Path::new("/srv/a \"q\" \\b")), None);
        let text = br#"{"result":{"text":"{{dshkit:cwd}}/x","{{dshkit:cwd}}":1}}"#;
        let expanded = here.expand_json_text(text);
        let value: Value = serde_json::from_slice(&expanded).expect("still JSON");
        assert_eq!(value["result"]["text"], "/srv/a \"q\" \\b/x");
        let mut tree = serde_json::from_slice::<Value>(text).unwrap();
        here.expand_value(&mut tree);
        assert_eq!(tree, value);
        assert_eq!(
            tree["result"]["/srv/a \"q\" \\b"],
            json!(1),
            "member names expand too"
        );
        assert!(matches!(
            here.expand_json_text(br#"{"a":"/srv"}"#),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    #[cfg(unix)]
    fn a_directory_is_known_under_the_path_its_links_resolve_to() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        dshkit_os::fs::symlink(&real, &link).unwrap();
        let roots = PathRoots::new(Some(&link), None);
        let real = dshkit_os::fs::canonicalize(&real).unwrap();
        let real = real.to_str().unwrap();
        assert_eq!(roots.normalise(&format!("{real}/f")), "{{dshkit:cwd}}/f");
        let link = link.to_str().unwrap();
        assert_eq!(roots.normalise(&format!("{link}/f")), "{{dshkit:cwd}}/f");
        assert_eq!(
            roots.expand("{{dshkit:cwd}}"),
            link,
            "expands to the path as given"
        );
    }

    #[test]
    #[cfg(windows)]
    fn windows_paths_become_tokens_and_expand_back_escaped_in_json() {
        let roots = PathRoots::new(
            Some(Path::new(r"C:\Users\ana\project")),
            Some(Path::new(r"C:\Users\ana")),
        );
        assert_eq!(roots.names(), ["cwd", "home"]);
        let cases = [
            (r"C:\Users\ana\project\src\a.ts", r"{{dshkit:cwd}}\src\a.ts"),
            (r"C:\Users\ana\.npmrc", r"{{dshkit:home}}\.npmrc"),
            (r"in C:\Users\ana\project.", r"in {{dshkit:cwd}}."),
            (r"C:\Users\anabel\x", r"C:\Users\anabel\x"),
            (r"D:\Users\ana\project", r"D:\Users\ana\project"),
        ];
        for (text, expected) in cases {
            assert_eq!(roots.normalise(text), expected, "{text}");
        }
        // In JSON text the path goes back escaped, and reads as it was.
        let text = br#"{"path":"{{dshkit:cwd}}\\notes.txt"}"#;
        let expanded = roots.expand_json_text(text);
        let value: Value = serde_json::from_slice(&expanded).expect("still JSON");
        assert_eq!(value["path"], r"C:\Users\ana\project\notes.txt");
        let mut tree = json!({"path": r"C:\Users\ana\project\notes.txt"});
        let normalised = roots.normalise(tree["path"].as_str().unwrap()).into_owned();
        tree["path"] = Value::String(normalised);
        roots.expand_value(&mut tree);
        assert_eq!(tree, value);
    }
}
