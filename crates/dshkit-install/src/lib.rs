//! The dshkit plugin put into a DSH profile, and taken out again.
//!
//! [`install`] writes the plugin and its patch row ([`dshkit_dsh::install`]),
//! then proves the profile still boots with Startup Check's live boot
//! ([`dshkit_check::run`]); when the boot is not proven it restores the patch file
//! as it was, removes the files nothing loads any more, and says why. It lives
//! apart from `dshkit-dsh` because `dshkit-check` already depends on that crate.
//! [`uninstall`] removes what an install wrote. Both results render as the text
//! and JSON the CLI prints.

use std::path::{Path, PathBuf};

use dshkit_check::{Check, CheckRequest, Report, Status};
use dshkit_dsh::install::{self as files, InstallReport, PluginRow, UninstallReport};
use dshkit_dsh::patch::{Outcome, PatchError};
use dshkit_env::{Environment, dsh};
use serde_json::{Value, json};

/// What to install, and where.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    /// The DSH home (absolute).
    pub home: PathBuf,
    pub profile: String,
    /// Skip the boot proof.
    pub no_boot_check: bool,
    /// The row the plugin is loaded with (its binary, DevTools settings).
    pub row: PluginRow,
}

impl InstallRequest {
    /// The profile's directory inside the home.
    pub fn profile_dir(&self) -> PathBuf {
        dsh::profile_dir(&self.home, &self.profile)
    }
}

/// Why an install or an uninstall did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    #[error(transparent)]
    Files(#[from] files::InstallError),
    #[error(transparent)]
    Check(#[from] dshkit_check::RequestError),
}

impl InstallError {
    /// A stable machine-readable code: the file edit's or the request's own.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Files(e) => e.code(),
            Self::Check(e) => e.code(),
        }
    }

    /// The class of the file edit's or the request's error: an I/O failure is
    /// a runtime failure, the rest is refused.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        match self {
            Self::Files(e) => e.class(),
            Self::Check(e) => e.class(),
        }
    }

    /// Whether the failure happened at run time (I/O) rather than being refused
    /// (a missing profile, a foreign plugin, an unusable patch file).
    pub fn is_runtime(&self) -> bool {
        matches!(
            self,
            Self::Files(files::InstallError::Io { .. } | files::InstallError::Patch(PatchError::Io { .. }))
        )
    }
}

dshkit_os::classified!(InstallError);

/// What an install ended with.
#[derive(Debug)]
pub enum Installed {
    /// The plugin is installed; with the live boot's check unless it was skipped.
    Done {
        report: Box<InstallReport>,
        proof: Option<Check>,
    },
    /// The boot was not proven: the install was rolled back, for this reason.
    RolledBack { why: String, check: Report },
}

impl Installed {
    /// Whether the plugin stays installed.
    pub fn installed(&self) -> bool {
        matches!(self, Self::Done { .. })
    }

    /// The JSON the CLI prints.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Done { report, proof } => {
                json!({ "installed": true, "install": report, "bootProof": proof })
            }
            Self::RolledBack { why, check } => json!({ "installed": false, "reason": why, "check": check }),
        }
    }

    /// The text the CLI prints.
    pub fn text(&self, request: &InstallRequest) -> String {
        let (report, proof) = match self {
            Self::RolledBack { why, check } => {
                let mut text = format!(
                    "dshkit dsh install: rolled back ({}: the patch file is as it was): {why}\n",
                    request.profile_dir().display()
                );
                text.push_str(&dshkit_check::compact_text(check));
                return text;
            }
            Self::Done { report, proof } => (report, proof),
        };
        let mut text = format!(
            "{}: the dshkit plugin {} (its binary {}, from {})\n",
            report.plugin_dir.display(),
            if report.files_changed {
                "written"
            } else {
                "already current"
            },
            report.binary.display(),
            request.row.binary.display()
        );
        text.push_str(&format!(
            "{}: {}\n",
            report.patch.path.display(),
            match report.patch.outcome {
                Outcome::Created => "created with the plugin row",
                Outcome::Added => "plugin row added",
                Outcome::Updated => "dshkit's block now holds the plugin row (a connect row is replaced)",
                Outcome::Unchanged | Outcome::Removed => "already installed; nothing changed",
            }
        ));
        if let Some(backup) = &report.patch.backup {
            text.push_str(&format!("backup of the previous file: {}\n", backup.display()));
        }
        match proof {
            Some(boot) => text.push_str(&format!("boot proven: {}\n", boot.detail)),
            None => text.push_str("boot not proven (--no-boot-check)\n"),
        }
        text.push_str(&format!(
            "Restart the `{}` profile: the model sees liveloop_verify, plugin_check and the other tools natively.\n",
            request.profile
        ));
        text
    }
}

/// Installs the plugin, then (unless skipped) proves the profile still boots,
/// telling `progress` when the proof starts; rolls back when it is not proven.
pub async fn install(
    request: &InstallRequest,
    env: &Environment,
    progress: impl Fn(&str),
) -> Result<Installed, InstallError> {
    let profile_dir = request.profile_dir();
    let report = files::install(&profile_dir, &request.row)?;
    if request.no_boot_check {
        return Ok(Installed::Done {
            report: Box::new(report),
            proof: None,
        });
    }
    progress(&format!(
        "proving the `{}` profile still boots (dshkit check --live) ...",
        request.profile
    ));
    let options = CheckRequest {
        dsh_home: Some(request.home.clone()),
        profile: Some(request.profile.clone()),
        live: true,
        ..CheckRequest::default()
    }
    .options(env)?;
    let check = dshkit_check::run(options).await;
    let boot = check.check("live_boot").cloned();
    if let Some(boot) = boot.clone().filter(|b| check.ok && b.status == Status::Pass) {
        return Ok(Installed::Done {
            report: Box::new(report),
            proof: Some(boot),
        });
    }
    roll_back(&profile_dir, &report)?;
    let why = match &boot {
        Some(b) if b.status == Status::NotTested => format!(
            "the boot could not be tried here: {} (pass --no-boot-check to install without the proof)",
            b.detail
        ),
        _ => "the profile does not pass `dshkit check --live` with the plugin".to_owned(),
    };
    Ok(Installed::RolledBack { why, check })
}

/// Restores the patch file as it was before `report`'s install; the files nothing
/// loads any more go too, an earlier install's stay.
fn roll_back(profile_dir: &Path, report: &InstallReport) -> Result<(), files::InstallError> {
    files::restore(profile_dir, report.previous_patch.as_deref())?;
    if !report
        .previous_patch
        .as_deref()
        .is_some_and(|p| p.contains(files::PLUGIN_PACKAGE))
    {
        files::remove_files(profile_dir)?;
    }
    Ok(())
}

/// Removes what an install wrote into `profile` of `home`; evidence is kept.
pub fn uninstall(home: &Path, profile: &str) -> Result<UninstallReport, InstallError> {
    Ok(files::uninstall(&dsh::profile_dir(home, profile))?)
}

/// The text the CLI prints for an uninstall.
pub fn uninstall_text(report: &UninstallReport) -> String {
    let mut text = String::new();
    for path in &report.removed {
        text.push_str(&format!("removed {}\n", path.display()));
    }
    text.push_str(&format!(
        "{}: {}\n",
        report.patch.path.display(),
        match report.patch.outcome {
            Outcome::Removed => "dshkit's block removed",
            _ => "had no dshkit block; unchanged",
        }
    ));
    text.push_str("Evidence (reports, screenshots) is kept.\n");
    text
}
