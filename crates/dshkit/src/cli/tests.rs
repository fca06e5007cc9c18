//! The examples of every subcommand parse as dshkit's own command lines.

use super::*;

/// A shell line's words: spaces split, quotes group; redirections dropped.
fn words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote) = (Vec::new(), String::new(), None);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, ' ') => words.extend((!word.is_empty()).then(|| std::mem::take(&mut word))),
            (_, c) => word.push(c),
        }
    }
    words.extend((!word.is_empty()).then_some(word));
    match words.iter().position(|w| w == "<" || w == ">") {
        Some(at) => words[..at].to_vec(),
        None => words,
    }
}

#[test]
fn every_example_is_a_command_line_dshkit_accepts() {
    let mut commands = Vec::new();
    let mut pending = String::new();
    let lines = EXAMPLES
        .lines()
        .filter(|l| !l.starts_with(['#', '[']) && !l.trim().is_empty());
    for line in lines {
        pending.push_str(line.trim().trim_end_matches('\\'));
        pending.push(' ');
        if !line.ends_with('\\') {
            commands.push(std::mem::take(&mut pending));
        }
    }
    let mut checked = 0;
    for command in commands.iter().filter(|c| c.starts_with("dshkit ")) {
        let args: Vec<std::ffi::OsString> = words(command).into_iter().map(Into::into).collect();
        if let Err(error) = Cli::parse_args(&args) {
            panic!("{command}: {}", error.render());
        }
        checked += 1;
    }
    assert!(checked >= 90, "{checked} examples");
}
