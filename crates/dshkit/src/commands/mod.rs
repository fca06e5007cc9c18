//! One module per command.

use std::path::Path;

pub(crate) mod check;
pub(crate) mod devtools;
pub(crate) mod doctor;
pub(crate) mod dsh;
pub(crate) mod echo;
pub(crate) mod liveloop;
pub(crate) mod mcp;
pub(crate) mod report;
pub(crate) mod settings;

/// Writes `bytes` to `file` (0600) through a temporary file and a rename.
pub(crate) fn write_private(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temp = dir.join(format!(
        ".{}.tmp-{}",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    let mut handle = dshkit_os::fs::private_file(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
    )
    .open(&temp)?;
    handle.write_all(bytes)?;
    handle.sync_all()?;
    std::fs::rename(&temp, file)
}

/// `dshkit completions SHELL`: the completion script, or (no shell) the man
/// page, both made by clap's own generators from the one command definition.
pub(crate) fn completions(
    shell: Option<clap_complete::Shell>,
    out: crate::output::Output,
) -> Result<u8, crate::exit::Failure> {
    let mut command = crate::cli::Cli::command();
    let mut text = Vec::new();
    match shell {
        Some(shell) => clap_complete::generate(shell, &mut command, "dshkit", &mut text),
        None => clap_mangen::Man::new(command)
            .render(&mut text)
            .map_err(crate::exit::Failure::runtime)?,
    }
    out.write(&String::from_utf8_lossy(&text));
    Ok(crate::exit::SUCCESS)
}
