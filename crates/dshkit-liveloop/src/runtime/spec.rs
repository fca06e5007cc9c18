//! A run profile: the detected app's directory, framework and argv, and how it
//! is moved to another port in the framework's own terms.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::RuntimeError;
use crate::detect::{Candidate, Framework, PackageManager};

/// A complete run profile; identical profiles share one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSpec {
    /// Canonical app directory.
    pub dir: PathBuf,
    pub framework: Framework,
    /// `None` for a static site (served by dshkit itself).
    pub package_manager: Option<PackageManager>,
    /// From the detector; empty for a static site (served by dshkit itself).
    pub argv: Vec<String>,
    pub expected_port: Option<u16>,
}

impl RunSpec {
    /// The profile of a detected candidate under the detection's `root`.
    pub fn of(root: &Path, candidate: &Candidate) -> Result<Self, RuntimeError> {
        let dir = dshkit_os::fs::canonicalize(root.join(&candidate.dir)).map_err(|_| {
            RuntimeError::NoDirectory {
                dir: root.join(&candidate.dir),
            }
        })?;
        Ok(Self {
            dir,
            framework: candidate.framework,
            package_manager: candidate.package_manager,
            argv: candidate.argv.clone(),
            expected_port: candidate.expected_port,
        })
    }

    /// The argv and environment that move the server to `port`, in the framework's
    /// own terms (Vite is told to fail rather than drift to another port).
    pub(super) fn on_port(&self, port: u16) -> (Vec<String>, Vec<(String, String)>) {
        let port_text = port.to_string();
        let flags: Vec<String> = match self.framework {
            Framework::ViteReact
            | Framework::ViteVue
            | Framework::ViteSvelte
            | Framework::Vite
            | Framework::SvelteKit
            | Framework::Remix
            | Framework::ReactRouter => vec!["--port".into(), port_text.clone(), "--strictPort".into()],
            Framework::Next => vec!["-p".into(), port_text.clone()],
            Framework::Nuxt | Framework::Astro | Framework::Angular => {
                vec!["--port".into(), port_text.clone()]
            }
            // CRA, generic scripts: the PORT variable below is the convention.
            Framework::CreateReactApp | Framework::Generic | Framework::StaticHtml => Vec::new(),
        };
        let mut argv = self.argv.clone();
        if !flags.is_empty() {
            if self.package_manager == Some(PackageManager::Npm) {
                argv.push("--".into());
            }
            argv.extend(flags);
        }
        (argv, vec![("PORT".into(), port_text)])
    }
}
