//! Each subcommand's examples, added to its help (and the man page).

/// Each subcommand's examples, shown at the end of its `--help` (and in the man
/// page): `[path]` opens a subcommand, `#` lines say what the next command does.
pub(super) const EXAMPLES: &str = include_str!("../examples.txt");

/// The lines of EXAMPLES under `[path]`.
fn examples_of(path: &str) -> Vec<&'static str> {
    let header = format!("[{path}]");
    EXAMPLES
        .lines()
        .skip_while(|line| *line != header)
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter(|line| !line.trim().is_empty())
        .collect()
}

/// `command` with each subcommand's examples at the end of its help, down the tree.
pub(super) fn with_examples(command: clap::Command, path: &str) -> clap::Command {
    let names: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    let mut command = command;
    for name in names {
        let sub_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        command = command.mut_subcommand(&name, |sub| {
            let examples = examples_of(&sub_path);
            let sub = if examples.is_empty() {
                sub
            } else {
                sub.after_help(format!("Examples:\n  {}", examples.join("\n  ")))
            };
            with_examples(sub, &sub_path)
        });
    }
    command
}
