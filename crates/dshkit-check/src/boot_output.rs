//! What a booting DSH writes on stderr, kept bounded: its first lines, and its
//! first error block, the part a person acts on.
//!
//! When DSH stops, Node prints the uncaught error: a source excerpt (the
//! throwing line and a caret), then the block: `Error: dsh: plugin tree failed
//! to load: …`, the lines of its message, and its stack. The inspected `cause`
//! chain that follows (`{ [cause]: … }`) repeats the message and is left out.

/// Most stderr lines kept from a boot, from its start.
pub const MAX_STDERR_LINES: usize = 40;
/// Most lines kept of the first error block.
pub const MAX_ERROR_BLOCK_LINES: usize = 20;
/// Stderr lines of a healthy boot that are not warnings about the plugin tree:
/// Node's notices of experimental features and its hint on how to trace them.
pub const STDERR_NOISE: &[&str] = &["ExperimentalWarning:", "(Use `node --trace-warnings"];

/// Where the first error block stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Block {
    #[default]
    NotSeen,
    /// In the message lines, before the stack.
    Message,
    /// In the stack (`at …` lines).
    Stack,
    Done,
}

/// A boot's stderr, bounded.
#[derive(Debug, Clone, Default)]
pub struct BootStderr {
    first: Vec<String>,
    block: Vec<String>,
    state: Block,
    /// The block had more lines than [`MAX_ERROR_BLOCK_LINES`].
    block_cut: bool,
    lines: usize,
    noise: usize,
}

impl BootStderr {
    /// Takes one line (without its newline). Blank lines and `boot_url` lines
    /// are counted as neither lines nor noise.
    pub fn push(&mut self, line: &str, is_url: bool) {
        let line = line.trim_end();
        self.follow_block(line);
        if line.trim().is_empty() || is_url {
            return;
        }
        if STDERR_NOISE.iter().any(|noise| line.contains(noise)) {
            self.noise += 1;
            return;
        }
        self.lines += 1;
        if self.first.len() < MAX_STDERR_LINES {
            self.first.push(line.to_owned());
        }
    }

    fn follow_block(&mut self, line: &str) {
        let trimmed = line.trim_start();
        let is_stack = trimmed.starts_with("at ");
        match self.state {
            Block::NotSeen if is_error_header(line) => self.state = Block::Message,
            Block::Done | Block::NotSeen => return,
            _ if trimmed.is_empty() || line.starts_with("Node.js v") => {
                self.state = Block::Done;
                return;
            }
            Block::Message if is_stack => self.state = Block::Stack,
            Block::Stack if !is_stack => {
                self.state = Block::Done;
                return;
            }
            _ => {}
        }
        // `at … {` opens the inspected properties: the stack ends there.
        let (line, last) = match line.strip_suffix(" {") {
            Some(stack_end) if is_stack => (stack_end, true),
            _ => (line, false),
        };
        if self.block.len() < MAX_ERROR_BLOCK_LINES {
            self.block.push(line.to_owned());
        } else {
            self.block_cut = true;
        }
        if last {
            self.state = Block::Done;
        }
    }

    /// The first [`MAX_STDERR_LINES`] lines that are not noise.
    pub fn first_lines(&self) -> &[String] {
        &self.first
    }

    /// The first error block, at most [`MAX_ERROR_BLOCK_LINES`] lines; empty when
    /// DSH printed none.
    pub fn error_block(&self) -> &[String] {
        &self.block
    }

    /// Whether the error block had more lines than it keeps.
    pub fn error_block_cut(&self) -> bool {
        self.block_cut
    }

    /// Lines that are not noise, kept or not.
    pub fn line_count(&self) -> usize {
        self.lines
    }

    /// Lines of known Node noise.
    pub fn noise_count(&self) -> usize {
        self.noise
    }

    /// What a failed boot shows: the error block when there is one, else the
    /// first lines; and a note of how much of stderr that is.
    pub fn failure_evidence(&self) -> (Vec<String>, String) {
        if self.block.is_empty() {
            let note = if self.lines > self.first.len() {
                format!(
                    "the first {} of its {} stderr line(s)",
                    self.first.len(),
                    self.lines
                )
            } else {
                format!("its {} stderr line(s)", self.lines)
            };
            return (self.first.clone(), note);
        }
        let cut = if self.block_cut {
            format!(", cut at {MAX_ERROR_BLOCK_LINES}")
        } else {
            String::new()
        };
        (
            self.block.clone(),
            format!(
                "its first error block, {} of its {} stderr line(s){cut}",
                self.block.len(),
                self.lines
            ),
        )
    }
}

/// A line that starts an error as Node prints it (`Error: …`, `TypeError: …`,
/// `Error [ERR_MODULE_NOT_FOUND]: …`, `YAMLException: …`), or DSH's own
/// labelled diagnostic (`dsh: …`).
fn is_error_header(line: &str) -> bool {
    if line.starts_with("dsh: ") {
        return true;
    }
    let Some((head, _)) = line.split_once(": ") else {
        return false;
    };
    let name = head
        .strip_suffix(']')
        .and_then(|h| h.rsplit_once(" ["))
        .map_or(head, |(name, code)| {
            if code
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                name
            } else {
                head
            }
        });
    (name.ends_with("Error") || name.ends_with("Exception"))
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the real DSH (0.1.0-rc.8 on Node 22) prints when a plugin's
    /// `apply` throws, shortened in the middle of the cause chain.
    const APPLY_THROWS: &str = "file:///t/node_modules/@deepseek-ai/dsh-app-boot/lib/index.js:1187
\t\tthrow new Error(`${binName}: ${stage}: ${detail}${stack}`, { cause });
\t\t      ^

Error: dsh: plugin tree failed to load: failed to apply loader entry include (cordis:include): failed to apply loader entry p (@local/p): thrower refuses to start
Error: thrower refuses to start
    at new apply (file:///h/dsh/profiles/t/plugins/p/index.js:2:33)
    at Fiber.execute (file:///t/node_modules/@deepseek-ai/cordis/lib/index.js:1067:24)
    at async file:///t/node_modules/@deepseek-ai/dsh/lib/bin.js:133:3 {
  [cause]: Error: failed to apply loader entry include (cordis:include): failed to apply loader entry p (@local/p): thrower refuses to start
      at updateError (file:///t/node_modules/@deepseek-ai/cordis-plugin-loader/lib/index.js:299:9)
  }
}

Node.js v22.23.3
";

    fn read(text: &str) -> BootStderr {
        let mut stderr = BootStderr::default();
        for line in text.lines() {
            stderr.push(line, false);
        }
        stderr
    }

    #[test]
    fn the_error_block_is_the_message_and_its_stack_without_the_cause_chain() {
        let stderr = read(APPLY_THROWS);
        assert_eq!(
            stderr.error_block(),
            [
                "Error: dsh: plugin tree failed to load: failed to apply loader entry include (cordis:include): failed to apply loader entry p (@local/p): thrower refuses to start",
                "Error: thrower refuses to start",
                "    at new apply (file:///h/dsh/profiles/t/plugins/p/index.js:2:33)",
                "    at Fiber.execute (file:///t/node_modules/@deepseek-ai/cordis/lib/index.js:1067:24)",
                "    at async file:///t/node_modules/@deepseek-ai/dsh/lib/bin.js:133:3",
            ]
        );
        let (evidence, note) = stderr.failure_evidence();
        assert_eq!(evidence, stderr.error_block());
        assert!(note.starts_with("its first error block, 5 of its "), "{note}");
    }

    #[test]
    fn an_aggregate_message_keeps_its_lines_before_the_stack() {
        let stderr = read(
            "Error: dsh: plugin tree failed to load: client-modules: 1 client package failed to compose:\n  other failures:\n    - client-modules: @local/p dsh.client.platform must be a string\nAggregateError: client-modules: 1 client package failed to compose:\n    at new ClientModuleRegistry (file:///x.js:1:1)\n\nNode.js v22.23.3\n",
        );
        assert_eq!(stderr.error_block().len(), 5);
        assert!(stderr.error_block()[2].contains("dsh.client.platform must be a string"));
    }

    #[test]
    fn the_block_is_bounded_and_says_so() {
        let mut text = "TypeError [ERR_X]: boom\n".to_owned();
        for i in 0..100 {
            text.push_str(&format!("    at f{i} (file:///x.js:{i}:1)\n"));
        }
        let stderr = read(&text);
        assert_eq!(stderr.error_block().len(), MAX_ERROR_BLOCK_LINES);
        assert!(stderr.failure_evidence().1.ends_with(", cut at 20"));
    }

    #[test]
    fn without_an_error_the_first_lines_are_the_evidence_and_noise_is_counted() {
        let stderr = read(
            "(node:1) ExperimentalWarning: Type Stripping is an experimental feature\n(Use `node --trace-warnings ...` to show where the warning was created)\nsomething odd\n",
        );
        assert!(stderr.error_block().is_empty());
        assert_eq!(stderr.noise_count(), 2);
        assert_eq!(stderr.failure_evidence().0, ["something odd"]);
    }

    #[test]
    fn error_headers_are_recognised_as_node_prints_them() {
        for header in [
            "Error: x",
            "TypeError: x",
            "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'x'",
            "YAMLException: bad indentation",
            "dsh: fatal load failure: x",
        ] {
            assert!(is_error_header(header), "{header}");
        }
        for line in [
            "    at f (x.js:1:1)",
            "  [cause]: Error: x",
            "Warning: something",
            "(node:1) [DEP0128] DeprecationWarning: x",
        ] {
            assert!(!is_error_header(line), "{line}");
        }
    }
}
