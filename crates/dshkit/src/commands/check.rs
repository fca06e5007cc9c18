//! `dshkit check`: `plugin_check` for people.

use dshkit_check::{CheckRequest, compact_text};
use dshkit_env::Environment;

use crate::cli::CheckArgs;
use crate::exit::{self, Failure};
use crate::output::Output;

pub(crate) async fn run(args: CheckArgs, out: Output) -> Result<u8, Failure> {
    if args.explain {
        out.write(dshkit_check::PLAYBOOK);
        return Ok(exit::SUCCESS);
    }
    let request = CheckRequest {
        dsh_home: args.dsh_home,
        profile: Some(args.profile),
        target: args.target,
        live: args.live,
        page: args.page,
        sweep: args.sweep,
        kill_stray: args.kill_stray,
        boot_timeout_ms: args.boot_timeout.map(dshkit_env::duration::millis),
        observe_ms: args.observe.map(dshkit_env::duration::millis),
        isolate_home: args.isolate_home,
    };
    let mut options = request
        .options(&Environment::from_process())
        .map_err(Failure::from)?;
    if let Some(age) = args.stray_age {
        options.stray_age = age;
    }
    // Each check as it starts, on stderr: a live boot and page smoke take a while.
    options.progress = dshkit_check::Progress::new(crate::output::progress);
    let home = options.home.clone();
    let report = dshkit_check::run(options).await;
    if let Some(path) = &args.sarif {
        dshkit_check::sarif::write(path, &report, &home)?;
    }
    Ok(out.report(&report, || compact_text(&report), !report.ok))
}
