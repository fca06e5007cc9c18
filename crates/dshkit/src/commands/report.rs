//! `dshkit report`: writes the index of past verification reports in the
//! evidence root (`<root>/verify/index.html`) and prints its path, or with
//! `--json` the list it wrote; `--open` then opens it in the person's browser.

use anyhow::anyhow;
use dshkit_env::resolve::{Flags, SettingsFile};
use dshkit_liveloop::verify::evidence::VERIFY_DIR;
use dshkit_liveloop::verify::index;

use crate::cli::ReportArgs;
use crate::exit::{self, Failure};
use crate::output::Output;

pub(crate) fn run(args: &ReportArgs, out: Output) -> Result<u8, Failure> {
    let resolved = crate::config::resolve(Flags::default(), SettingsFile::Read)?;
    let root = resolved
        .evidence_root
        .ok_or_else(|| Failure::refused(anyhow!(crate::config::NO_EVIDENCE_ROOT)))?;
    let index = index::write(&root.join(VERIFY_DIR)).map_err(Failure::from)?;
    if out.json {
        out.json(&index);
    } else {
        out.write(&index::text(&index));
    }
    if args.open {
        let opener = dshkit_os::open::in_browser(&index.path).map_err(|e| Failure::refused(anyhow!(e)))?;
        crate::output::progress(&format!("opened {} with {opener}", index.path.display()));
    }
    Ok(exit::SUCCESS)
}
