//! Detection: which web app(s) a workspace holds, how to run each, and how sure we
//! are. A bounded walk that never follows a link out of the workspace; run
//! profiles are argv vectors, never shell strings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;
use serde::Serialize;
use serde_json::Value;

/// Deepest directory level visited below the workspace root.
pub const MAX_DEPTH: usize = 6;
/// Most directories visited.
pub const MAX_DIRS: usize = 5000;
/// Directories never entered.
pub const PRUNED: &[&str] = &[
    "node_modules",
    ".git",
    ".hg",
    ".svn",
    "dist",
    "build",
    "out",
    ".next",
    ".nuxt",
    ".output",
    ".svelte-kit",
    ".astro",
    ".turbo",
    ".cache",
    "coverage",
    "target",
    ".vercel",
    ".netlify",
];

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    #[error("workspace {0} does not exist or is not a directory")]
    NoWorkspace(PathBuf),
    #[error("{cwd} is not inside the workspace {root} (after resolving links)")]
    OutsideWorkspace { cwd: PathBuf, root: PathBuf },
}

impl DetectError {
    /// A stable code for programs: both are a workspace that cannot be used.
    pub fn code(&self) -> &'static str {
        "NO_WORKSPACE"
    }

    /// A workspace that is missing or does not hold the directory is refused.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Refused
    }
}

/// A JavaScript package manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PackageManager {
    Npm,
    Pnpm,
    Yarn,
    Bun,
}

impl PackageManager {
    fn program(self) -> &'static str {
        match self {
            Self::Npm => "npm",
            Self::Pnpm => "pnpm",
            Self::Yarn => "yarn",
            Self::Bun => "bun",
        }
    }

    /// The argv that runs `script`.
    pub fn run_script(self, script: &str) -> Vec<String> {
        vec![self.program().into(), "run".into(), script.into()]
    }

    /// The name as people write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Npm => "npm",
            Self::Pnpm => "pnpm",
            Self::Yarn => "Yarn",
            Self::Bun => "Bun",
        }
    }
}

impl std::fmt::Display for PackageManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A framework LiveLoop knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framework {
    ViteReact,
    ViteVue,
    ViteSvelte,
    Vite,
    Next,
    Nuxt,
    SvelteKit,
    Astro,
    Remix,
    ReactRouter,
    Angular,
    CreateReactApp,
    StaticHtml,
    /// Only a generic `dev` or `start` script.
    Generic,
}

impl Framework {
    /// The name as people write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::ViteReact => "Vite + React",
            Self::ViteVue => "Vite + Vue",
            Self::ViteSvelte => "Vite + Svelte",
            Self::Vite => "Vite",
            Self::Next => "Next.js",
            Self::Nuxt => "Nuxt",
            Self::SvelteKit => "SvelteKit",
            Self::Astro => "Astro",
            Self::Remix => "Remix",
            Self::ReactRouter => "React Router",
            Self::Angular => "Angular",
            Self::CreateReactApp => "Create React App",
            Self::StaticHtml => "a static site",
            Self::Generic => "a dev script",
        }
    }

    /// The port the framework's dev server listens on by default.
    pub fn default_port(self) -> Option<u16> {
        match self {
            Self::ViteReact
            | Self::ViteVue
            | Self::ViteSvelte
            | Self::Vite
            | Self::SvelteKit
            | Self::Remix
            | Self::ReactRouter => Some(5173),
            Self::Next | Self::Nuxt | Self::CreateReactApp => Some(3000),
            Self::Astro => Some(4321),
            Self::Angular => Some(4200),
            Self::StaticHtml | Self::Generic => None,
        }
    }
}

impl std::fmt::Display for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One app found, with its run profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The app directory, relative to the workspace root (`.` for the root).
    pub dir: PathBuf,
    pub framework: Framework,
    /// `None` for a static site, which dshkit serves itself.
    pub package_manager: Option<PackageManager>,
    /// Why this package manager: `packageManager field`, `pnpm-lock.yaml`, ...
    pub package_manager_source: String,
    /// Scripts a person could run, by name.
    pub scripts: BTreeMap<String, String>,
    /// The run profile: an argv, never a shell string. Empty for a static page.
    pub argv: Vec<String>,
    pub expected_port: Option<u16>,
    /// 0..=100.
    pub confidence: u8,
    pub reasons: Vec<String>,
}

/// The result of a detection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Detection {
    pub root: PathBuf,
    /// Best first.
    pub candidates: Vec<Candidate>,
    /// The top candidates are in different directories with the same score: the
    /// caller must choose; nothing is guessed.
    pub ambiguous: bool,
    /// Workspace declarations found (npm/yarn/bun `workspaces`, `pnpm-workspace.yaml`).
    pub workspaces: Vec<String>,
    pub diagnostics: Vec<String>,
    pub dirs_visited: usize,
    /// The walk hit [`MAX_DIRS`].
    pub truncated: bool,
}

/// Candidates a [`ChooseError`] lists.
pub const MAX_LISTED_CHOICES: usize = 10;

/// A candidate as a refusal lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    pub dir: PathBuf,
    pub framework: Framework,
    pub confidence: u8,
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, confidence {})",
            self.dir.display(),
            self.framework,
            self.confidence
        )
    }
}

/// Why [`Detection::choose`] picked no app. Each surface adds how to choose in
/// its own spelling (the CLI's `--app DIR`, MCP's `app`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChooseError {
    #[error("no web app found (no package.json with a dev/start script or known framework, no index.html)")]
    NoApp,
    #[error("no app in {}; found: {}", wanted.display(), list(candidates))]
    NotFound {
        wanted: PathBuf,
        candidates: Vec<Choice>,
    },
    #[error(
        "ambiguous workspace: more than one app is equally likely and none is guessed; candidates: {}",
        list(candidates)
    )]
    Ambiguous { candidates: Vec<Choice> },
}

impl ChooseError {
    /// A stable code for programs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoApp => "NO_APP",
            Self::NotFound { .. } => "NO_SUCH_APP",
            Self::Ambiguous { .. } => "AMBIGUOUS_APP",
        }
    }

    /// An app that cannot be chosen is refused until the caller names one.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Refused
    }

    /// The apps to choose from (at most [`MAX_LISTED_CHOICES`]), best first.
    pub fn candidates(&self) -> &[Choice] {
        match self {
            Self::NoApp => &[],
            Self::NotFound { candidates, .. } | Self::Ambiguous { candidates } => candidates,
        }
    }
}

dshkit_os::classified!(DetectError, ChooseError);

fn list(choices: &[Choice]) -> String {
    if choices.is_empty() {
        return "none".to_owned();
    }
    choices
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Detection {
    /// The app to run: the one in directory `app` (relative to the root) when given,
    /// else the top candidate unless the detection is ambiguous. The error lists
    /// what to choose from.
    pub fn choose(&self, app: Option<&Path>) -> Result<&Candidate, ChooseError> {
        let candidates = || {
            self.candidates
                .iter()
                .take(MAX_LISTED_CHOICES)
                .map(|c| Choice {
                    dir: c.dir.clone(),
                    framework: c.framework,
                    confidence: c.confidence,
                })
                .collect()
        };
        if let Some(app) = app {
            let wanted = if app.as_os_str().is_empty() {
                Path::new(".")
            } else {
                app
            };
            return self
                .candidates
                .iter()
                .find(|c| c.dir == wanted)
                .ok_or_else(|| ChooseError::NotFound {
                    wanted: wanted.to_owned(),
                    candidates: candidates(),
                });
        }
        if self.ambiguous {
            return Err(ChooseError::Ambiguous {
                candidates: candidates(),
            });
        }
        self.candidates.first().ok_or(ChooseError::NoApp)
    }
}

/// Detects the apps under `root`; `cwd`, when given, must resolve inside it.
pub fn detect(root: &Path, cwd: Option<&Path>) -> Result<Detection, DetectError> {
    let real_root =
        dshkit_os::fs::canonicalize(root).map_err(|_| DetectError::NoWorkspace(root.to_owned()))?;
    if !real_root.is_dir() {
        return Err(DetectError::NoWorkspace(root.to_owned()));
    }
    if let Some(cwd) = cwd {
        let real_cwd = dshkit_os::fs::canonicalize(cwd).map_err(|_| DetectError::OutsideWorkspace {
            cwd: cwd.to_owned(),
            root: real_root.clone(),
        })?;
        if !real_cwd.starts_with(&real_root) {
            return Err(DetectError::OutsideWorkspace {
                cwd: real_cwd,
                root: real_root,
            });
        }
    }
    let mut detection = Detection {
        root: real_root.clone(),
        candidates: Vec::new(),
        ambiguous: false,
        workspaces: Vec::new(),
        diagnostics: Vec::new(),
        dirs_visited: 0,
        truncated: false,
    };
    let root_manager = manager_of(&real_root, None);
    let mut stack = vec![(real_root.clone(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        if detection.dirs_visited >= MAX_DIRS {
            detection.truncated = true;
            detection
                .diagnostics
                .push(format!("stopped after {MAX_DIRS} directories"));
            break;
        }
        detection.dirs_visited += 1;
        inspect(&real_root, &dir, root_manager.as_ref(), &mut detection);
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| !PRUNED.contains(&n) && !n.starts_with('.'))
            })
            .map(|e| e.path())
            .collect();
        children.sort();
        for child in children.into_iter().rev() {
            stack.push((child, depth + 1));
        }
    }
    rank(&mut detection);
    Ok(detection)
}

/// The package manager of `dir`: the `packageManager` field, then a lockfile,
/// then the workspace root's, then npm.
fn manager_of(dir: &Path, manifest: Option<&Value>) -> Option<(PackageManager, String)> {
    if let Some(field) = manifest.and_then(|m| m["packageManager"].as_str()) {
        let name = field.split('@').next().unwrap_or("");
        let manager = match name {
            "pnpm" => Some(PackageManager::Pnpm),
            "yarn" => Some(PackageManager::Yarn),
            "bun" => Some(PackageManager::Bun),
            "npm" => Some(PackageManager::Npm),
            _ => None,
        };
        if let Some(manager) = manager {
            return Some((manager, format!("packageManager field ({field})")));
        }
    }
    for (file, manager) in [
        ("pnpm-lock.yaml", PackageManager::Pnpm),
        ("yarn.lock", PackageManager::Yarn),
        ("bun.lockb", PackageManager::Bun),
        ("bun.lock", PackageManager::Bun),
        ("package-lock.json", PackageManager::Npm),
    ] {
        if dir.join(file).is_file() {
            return Some((manager, file.to_owned()));
        }
    }
    None
}

fn deps(manifest: &Value) -> BTreeMap<String, String> {
    ["dependencies", "devDependencies"]
        .iter()
        .filter_map(|k| manifest[*k].as_object())
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
        .collect()
}

/// The framework of a package, from its dependencies (strong) or config files (weak).
fn framework_of(dir: &Path, deps: &BTreeMap<String, String>) -> Option<(Framework, bool, String)> {
    let has = |name: &str| deps.contains_key(name);
    let config = |stem: &str| {
        ["js", "mjs", "cjs", "ts", "mts"]
            .iter()
            .any(|ext| dir.join(format!("{stem}.{ext}")).is_file())
    };
    let by_dep = if has("next") {
        Some((Framework::Next, "next"))
    } else if has("nuxt") {
        Some((Framework::Nuxt, "nuxt"))
    } else if has("@sveltejs/kit") {
        Some((Framework::SvelteKit, "@sveltejs/kit"))
    } else if has("astro") {
        Some((Framework::Astro, "astro"))
    } else if has("@remix-run/dev") {
        Some((Framework::Remix, "@remix-run/dev"))
    } else if has("@react-router/dev") {
        Some((Framework::ReactRouter, "@react-router/dev"))
    } else if has("@angular/core") {
        Some((Framework::Angular, "@angular/core"))
    } else if has("react-scripts") {
        Some((Framework::CreateReactApp, "react-scripts"))
    } else if has("vite") {
        if has("@vitejs/plugin-react") || has("@vitejs/plugin-react-swc") || has("react") {
            Some((Framework::ViteReact, "vite + react"))
        } else if has("@vitejs/plugin-vue") || has("vue") {
            Some((Framework::ViteVue, "vite + vue"))
        } else if has("@sveltejs/vite-plugin-svelte") || has("svelte") {
            Some((Framework::ViteSvelte, "vite + svelte"))
        } else {
            Some((Framework::Vite, "vite"))
        }
    } else {
        None
    };
    if let Some((framework, dep)) = by_dep {
        return Some((framework, true, format!("dependency {dep}")));
    }
    let by_config = [
        ("next.config", Framework::Next),
        ("nuxt.config", Framework::Nuxt),
        ("svelte.config", Framework::SvelteKit),
        ("astro.config", Framework::Astro),
        ("vite.config", Framework::Vite),
    ]
    .into_iter()
    .find(|(stem, _)| config(stem));
    if let Some((stem, framework)) = by_config {
        return Some((framework, false, format!("config file {stem}.*")));
    }
    if dir.join("angular.json").is_file() {
        return Some((Framework::Angular, false, "angular.json".into()));
    }
    None
}

fn inspect(
    root: &Path,
    dir: &Path,
    root_manager: Option<&(PackageManager, String)>,
    detection: &mut Detection,
) {
    let relative = dir.strip_prefix(root).map_or_else(
        |_| PathBuf::from("."),
        |r| {
            if r.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                r.to_owned()
            }
        },
    );
    let manifest_path = dir.join("package.json");
    let manifest: Option<Value> = match std::fs::read_to_string(&manifest_path) {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(e) => {
                detection.diagnostics.push(format!(
                    "{}: package.json is not valid JSON: {e}",
                    relative.display()
                ));
                return;
            }
        },
        Err(_) => None,
    };
    if dir.join("pnpm-workspace.yaml").is_file() {
        detection
            .workspaces
            .push(format!("{}/pnpm-workspace.yaml", relative.display()));
    }
    let Some(manifest) = manifest else {
        if dir.join("index.html").is_file() && relative == Path::new(".") {
            detection.candidates.push(static_page(relative));
        }
        return;
    };
    if let Some(workspaces) = manifest.get("workspaces") {
        detection.workspaces.push(format!(
            "{}/package.json workspaces: {workspaces}",
            relative.display()
        ));
    }
    let scripts: BTreeMap<String, String> = manifest["scripts"]
        .as_object()
        .map(|s| {
            s.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let (package_manager, package_manager_source) = manager_of(dir, Some(&manifest))
        .or_else(|| {
            root_manager
                .cloned()
                .map(|(m, s)| (m, format!("{s} at the workspace root")))
        })
        .unwrap_or((PackageManager::Npm, "default (no lockfile)".into()));
    let deps = deps(&manifest);
    let framework = framework_of(dir, &deps);
    let script = ["dev", "start", "serve"]
        .into_iter()
        .find(|s| scripts.contains_key(*s));
    let (framework, strong, why) = match (framework, script) {
        (Some(found), _) => found,
        (None, Some(script)) => (Framework::Generic, false, format!("a `{script}` script")),
        (None, None) => return,
    };
    let mut reasons = vec![why];
    let mut confidence: u8 = if strong { 60 } else { 35 };
    let argv = match script {
        Some(script) => {
            reasons.push(format!("runs the user's `{script}` script: {}", scripts[script]));
            confidence += 30;
            package_manager.run_script(script)
        }
        None => {
            reasons.push("no dev/start script: the framework's own command would be needed".into());
            Vec::new()
        }
    };
    if framework == Framework::Generic {
        confidence = confidence.min(50);
    }
    let expected_port = framework.default_port();
    detection.candidates.push(Candidate {
        dir: relative,
        framework,
        package_manager: Some(package_manager),
        package_manager_source,
        scripts,
        argv,
        expected_port,
        confidence,
        reasons,
    });
}

/// A page with no package, served as static HTML.
fn static_page(dir: PathBuf) -> Candidate {
    Candidate {
        dir,
        framework: Framework::StaticHtml,
        package_manager: None,
        package_manager_source: "none needed: dshkit serves the files itself".into(),
        scripts: BTreeMap::new(),
        argv: Vec::new(),
        expected_port: None,
        confidence: 40,
        reasons: vec!["index.html without a package.json: a static page".into()],
    }
}

/// Best first; marks the result ambiguous when the two best are in different
/// directories with equal confidence.
fn rank(detection: &mut Detection) {
    detection
        .candidates
        .sort_by(|a, b| b.confidence.cmp(&a.confidence).then_with(|| a.dir.cmp(&b.dir)));
    if let [first, second, ..] = detection.candidates.as_slice()
        && first.confidence == second.confidence
        && first.dir != second.dir
    {
        let message = format!(
            "ambiguous: {} and {} are equally likely; choose one explicitly",
            first.dir.display(),
            second.dir.display()
        );
        detection.ambiguous = true;
        detection.diagnostics.push(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn package(root: &Path, dir: &str, manifest: &Value) {
        write(root, &format!("{dir}/package.json"), &manifest.to_string());
    }

    #[test]
    fn a_vite_react_app_with_a_dev_script_and_pnpm_is_detected_with_an_argv() {
        let ws = tempfile::tempdir().unwrap();
        package(
            ws.path(),
            ".",
            &json!({"scripts": {"dev": "vite"}, "devDependencies": {"vite": "^7", "@vitejs/plugin-react": "^5"}, "dependencies": {"react": "^19"}}),
        );
        write(ws.path(), "pnpm-lock.yaml", "lockfileVersion: 9\n");
        let found = detect(ws.path(), None).unwrap();
        let top = &found.candidates[0];
        assert_eq!(top.framework, Framework::ViteReact);
        assert_eq!(top.package_manager, Some(PackageManager::Pnpm));
        assert_eq!(top.argv, ["pnpm", "run", "dev"]);
        assert_eq!(top.expected_port, Some(5173));
        assert_eq!(top.confidence, 90);
        assert!(!found.ambiguous);
    }

    #[test]
    fn the_package_manager_field_beats_a_lockfile() {
        let ws = tempfile::tempdir().unwrap();
        package(
            ws.path(),
            ".",
            &json!({"packageManager": "yarn@4.1.0", "scripts": {"dev": "next dev"}, "dependencies": {"next": "15"}}),
        );
        write(ws.path(), "package-lock.json", "{}");
        let top = &detect(ws.path(), None).unwrap().candidates[0];
        assert_eq!(
            (top.framework, top.package_manager),
            (Framework::Next, Some(PackageManager::Yarn))
        );
        assert_eq!(top.argv, ["yarn", "run", "dev"]);
    }

    #[test]
    fn a_dependency_match_beats_a_config_only_match() {
        let ws = tempfile::tempdir().unwrap();
        package(
            ws.path(),
            "apps/web",
            &json!({"scripts": {"dev": "astro dev"}, "dependencies": {"astro": "5"}}),
        );
        package(
            ws.path(),
            "apps/old",
            &json!({"scripts": {"dev": "node server.js"}}),
        );
        write(ws.path(), "apps/old/vite.config.js", "export default {}");
        let found = detect(ws.path(), None).unwrap();
        assert_eq!(found.candidates[0].dir, Path::new("apps/web"));
        assert_eq!(found.candidates[0].framework, Framework::Astro);
        assert!(found.candidates[0].confidence > found.candidates[1].confidence);
        assert!(!found.ambiguous);
    }

    #[test]
    fn a_monorepo_with_two_equal_apps_is_ambiguous() {
        let ws = tempfile::tempdir().unwrap();
        package(
            ws.path(),
            ".",
            &json!({"private": true, "workspaces": ["apps/*"]}),
        );
        for app in ["apps/admin", "apps/shop"] {
            package(
                ws.path(),
                app,
                &json!({"scripts": {"dev": "vite"}, "devDependencies": {"vite": "7", "vue": "3"}}),
            );
        }
        let found = detect(ws.path(), None).unwrap();
        assert!(found.ambiguous, "{found:#?}");
        assert_eq!(found.candidates.len(), 2);
        let refused = found.choose(None).unwrap_err();
        assert_eq!(refused.code(), "AMBIGUOUS_APP");
        assert_eq!(
            refused.to_string(),
            "ambiguous workspace: more than one app is equally likely and none is guessed; candidates: apps/admin (Vite + Vue, confidence 90), apps/shop (Vite + Vue, confidence 90)"
        );
        assert_eq!(
            found.choose(Some(Path::new("apps/shop"))).unwrap().dir,
            Path::new("apps/shop")
        );
        assert!(found.diagnostics.iter().any(|d| d.contains("ambiguous")));
        assert_eq!(found.workspaces.len(), 1);
    }

    #[test]
    fn pruned_folders_are_not_walked_and_links_out_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        package(
            ws.path(),
            "node_modules/next",
            &json!({"scripts": {"dev": "x"}, "dependencies": {"next": "1"}}),
        );
        write(ws.path(), "index.html", "<h1>hi</h1>");
        let found = detect(ws.path(), None).unwrap();
        assert_eq!(found.candidates.len(), 1);
        assert_eq!(found.candidates[0].framework, Framework::StaticHtml);
        let outside = tempfile::tempdir().unwrap();
        dshkit_os::fs::symlink(outside.path(), ws.path().join("escape")).unwrap();
        let err = detect(ws.path(), Some(&ws.path().join("escape"))).unwrap_err();
        assert!(matches!(err, DetectError::OutsideWorkspace { .. }), "{err}");
        assert!(detect(&ws.path().join("missing"), None).is_err());
    }

    #[test]
    fn a_broken_package_json_is_a_diagnostic_not_a_crash() {
        let ws = tempfile::tempdir().unwrap();
        write(ws.path(), "package.json", "{ not json");
        let found = detect(ws.path(), None).unwrap();
        assert!(found.candidates.is_empty());
        assert!(found.diagnostics[0].contains("not valid JSON"));
    }

    #[test]
    fn each_refusal_has_its_code_and_is_refused() {
        let table = [
            (ChooseError::NoApp, "NO_APP"),
            (
                ChooseError::NotFound {
                    wanted: "apps/x".into(),
                    candidates: Vec::new(),
                },
                "NO_SUCH_APP",
            ),
            (
                ChooseError::Ambiguous {
                    candidates: Vec::new(),
                },
                "AMBIGUOUS_APP",
            ),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), ErrorClass::Refused, "{error}");
        }
        for error in [
            DetectError::NoWorkspace("/nowhere".into()),
            DetectError::OutsideWorkspace {
                cwd: "/elsewhere".into(),
                root: "/ws".into(),
            },
        ] {
            assert_eq!(error.code(), "NO_WORKSPACE", "{error}");
            assert_eq!(error.class(), ErrorClass::Refused, "{error}");
        }
    }
}
