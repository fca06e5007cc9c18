//! XML 1.0 text and attribute values: the five markup characters escaped, and
//! the characters XML 1.0 cannot hold at all (control characters other than
//! tab, line feed and carriage return; U+FFFE and U+FFFF) replaced by U+FFFD,
//! since not even a character reference may name them.

/// What stands for a character XML 1.0 cannot hold.
pub const REPLACEMENT: char = '\u{FFFD}';

/// Whether XML 1.0 allows `c` in a document (its `Char` production).
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `text` as element content: `&`, `<` and `>` escaped, a carriage return
/// kept as a reference (a parser would fold it into a line feed), characters
/// XML cannot hold replaced.
pub fn text(text: &str) -> String {
    escape(text, false)
}

/// `value` as an attribute value between double quotes: the markup characters
/// and both quotes escaped, and tab, line feed and carriage return as
/// references (a parser would turn them into spaces).
pub fn attribute(value: &str) -> String {
    escape(value, true)
}

fn escape(input: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(input.len());
    for c in input.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\r' => out.push_str("&#13;"),
            c if !is_xml_char(c) => out.push(REPLACEMENT),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{attribute, is_xml_char, text};

    #[test]
    fn markup_characters_are_escaped() {
        assert_eq!(
            text("a < b && c > d \"q\" 'a'"),
            "a &lt; b &amp;&amp; c &gt; d \"q\" 'a'"
        );
        assert_eq!(
            attribute("<x a=\"1\" b='2'>&"),
            "&lt;x a=&quot;1&quot; b=&apos;2&apos;&gt;&amp;"
        );
        assert_eq!(text("]]>"), "]]&gt;", "a CDATA end cannot appear");
    }

    #[test]
    fn control_characters_are_replaced_and_whitespace_survives() {
        assert_eq!(
            text("a\u{0}b\u{1b}[31mc\u{7}\u{b}\u{c}d"),
            "a\u{FFFD}b\u{FFFD}[31mc\u{FFFD}\u{FFFD}\u{FFFD}d"
        );
        assert_eq!(text("\u{FFFE}\u{FFFF}"), "\u{FFFD}\u{FFFD}");
        assert_eq!(text("line\nnext\ttab\r\n"), "line\nnext\ttab&#13;\n");
        assert_eq!(attribute("line\nnext\ttab\r"), "line&#10;next&#9;tab&#13;");
        // DEL and the C1 controls are allowed (discouraged) in XML 1.0; emoji
        // beyond the BMP are plain characters.
        assert_eq!(text("\u{7f}\u{85}😀"), "\u{7f}\u{85}😀");
    }

    #[test]
    fn the_xml_char_production() {
        for c in [
            '\t',
            '\n',
            '\r',
            ' ',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFD}',
            '\u{10000}',
            '\u{10FFFF}',
        ] {
            assert!(is_xml_char(c), "{c:?} is allowed");
        }
        for c in ['\u{0}', '\u{8}', '\u{b}', '\u{1f}', '\u{FFFE}', '\u{FFFF}'] {
            assert!(!is_xml_char(c), "{c:?} is not allowed");
        }
    }
}
