//! dshkit installed the way users install it: the `cargo xtask dist` tarballs
//! published to a real npm registry on loopback (Verdaccio, proxying the
//! configured registry for everything else), then `dsh plugin add dshkit` with
//! pnpm into real DSH profiles, and `npm install -g dshkit`. The installed
//! plugin runs the binary of its platform package, never one from this
//! repository's build directory.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dshkit_test::{ANSWER_PREFIX, ChildGuard, FakeModel, Peers, spawn_guarded, workspace_root};

use crate::support::{
    assert_no_process_left, dsh_command, dsh_turn, free_port, output, serve_page, verify_arguments,
};

/// The tarballs and the manifest `cargo xtask dist` writes.
fn dist_dir() -> PathBuf {
    workspace_root().join("target/dist/npm")
}

/// The packages of the last `cargo xtask dist`: (name, tarball), or a failure
/// that names the command which makes them.
fn dist_packages() -> Vec<(String, PathBuf)> {
    let manifest = dist_dir().join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| {
        panic!(
            "no npm packages at {} ({e}): run `cargo xtask dist linux-x64-gnu` first (`cargo xtask test` runs it)",
            manifest.display()
        )
    });
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        manifest["version"],
        env!("CARGO_PKG_VERSION"),
        "the packages are of another version: run `cargo xtask dist linux-x64-gnu` again"
    );
    let packages: Vec<(String, PathBuf)> = manifest["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                dist_dir().join(p["file"].as_str().unwrap()),
            )
        })
        .collect();
    for needed in ["dshkit", "@dshkit/linux-x64-gnu"] {
        assert!(
            packages.iter().any(|(name, _)| name == needed),
            "the dist has no {needed}: run `cargo xtask dist linux-x64-gnu`"
        );
    }
    packages
}

/// A Verdaccio on a loopback port, its storage in a temp dir, proxying the
/// configured registry for every package but dshkit's own.
struct Registry {
    url: String,
    token: String,
    _server: ChildGuard,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start(peers: &Peers) -> Self {
        let verdaccio = peers.dir.join("registry/node_modules/verdaccio/bin/verdaccio");
        assert!(
            verdaccio.is_file(),
            "{} is missing: run `cargo xtask setup`",
            verdaccio.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let upstream = output(Command::new("npm").args(["config", "get", "registry"]));
        let upstream = String::from_utf8_lossy(&upstream.stdout).trim().to_owned();
        let config = dir.path().join("config.yaml");
        // A publish sends the tarball base64-encoded in its body: a platform
        // package of 8 MB is over verdaccio's default 10 MB limit. npmjs.org
        // takes far larger packages, so the limit is raised to be like it.
        std::fs::write(
            &config,
            format!(
                "storage: {storage}\n\
                 max_body_size: 100mb\n\
                 uplinks:\n  upstream:\n    url: {upstream}\n\
                 auth:\n  htpasswd:\n    file: {htpasswd}\n    max_users: 10\n\
                 packages:\n\
                 \x20 'dshkit':\n    access: $all\n    publish: $authenticated\n\
                 \x20 '@dshkit/*':\n    access: $all\n    publish: $authenticated\n\
                 \x20 '**':\n    access: $all\n    proxy: upstream\n\
                 log: {{ type: stdout, format: pretty, level: warn }}\n",
                storage = dir.path().join("storage").display(),
                htpasswd = dir.path().join("htpasswd").display(),
            ),
        )
        .unwrap();
        let port = free_port();
        let server = spawn_guarded(
            Command::new(peers.node())
                .arg(&verdaccio)
                .arg("--config")
                .arg(&config)
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .env("HOME", dir.path()),
        );
        let deadline = Instant::now() + Duration::from_mins(1);
        while http_get(port, "/-/ping").is_none() {
            assert!(Instant::now() < deadline, "Verdaccio did not answer on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        // A user to publish as (npm refuses to publish without a token).
        let added = output(Command::new(peers.node()).arg("-e").arg(format!(
            "fetch('http://127.0.0.1:{port}/-/user/org.couchdb.user:dist', {{method: 'PUT', \
             headers: {{'content-type': 'application/json'}}, \
             body: JSON.stringify({{name: 'dist', password: 'dist-password'}})}})\
             .then(r => r.json()).then(j => console.log(j.token))"
        )));
        let token = String::from_utf8_lossy(&added.stdout).trim().to_owned();
        assert!(
            !token.is_empty() && token != "undefined",
            "no token from Verdaccio: {}",
            String::from_utf8_lossy(&added.stderr)
        );
        Self {
            url: format!("http://127.0.0.1:{port}/"),
            token,
            _server: server,
            _dir: dir,
        }
    }

    /// npm or pnpm pointed at this registry, with `home` as HOME (its caches and
    /// global store), Node 22 and pnpm first on PATH.
    fn client(&self, peers: &Peers, program: &Path, home: &Path) -> Command {
        std::fs::write(
            home.join(".npmrc"),
            format!(
                "registry={}\n{}:_authToken={}\n",
                self.url,
                self.url.trim_start_matches("http:"),
                self.token
            ),
        )
        .unwrap();
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", path_with_pnpm(peers))
            .env("HOME", home)
            .env("npm_config_registry", &self.url)
            .env("pnpm_config_registry", &self.url)
            .env("npm_config_cache", home.join(".npm-cache"))
            .env("npm_config_store_dir", home.join(".pnpm-store"))
            .env("npm_config_update_notifier", "false")
            .env("DSH_TELEMETRY_DISABLED", "1");
        command
    }

    fn publish(&self, peers: &Peers, home: &Path, tarball: &Path) {
        let published = output(
            self.client(peers, Path::new("npm"), home)
                .args(["publish", "--loglevel=error"])
                .arg(tarball)
                .current_dir(home),
        );
        assert!(
            published.status.success(),
            "npm publish {}: {}",
            tarball.display(),
            String::from_utf8_lossy(&published.stderr)
        );
    }
}

/// `PATH` with Node 22, `dsh` and the harness's pnpm first.
fn path_with_pnpm(peers: &Peers) -> std::ffi::OsString {
    let pnpm = peers.dir.join("pnpm/node_modules/.bin");
    std::env::join_paths(std::iter::once(pnpm).chain(std::env::split_paths(&peers.path_var()))).unwrap()
}

/// One plain HTTP/1.1 GET on loopback: the status and the body, or None when
/// nothing answers.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Some((status, body))
}

/// `dsh plugin --profile PROFILE ARGS...` through the registry; returns its output.
fn dsh_plugin(
    registry: &Registry,
    peers: &Peers,
    home: &Path,
    profile: &str,
    args: &[&str],
) -> std::process::Output {
    let out = output(
        registry
            .client(peers, &peers.dsh(), home)
            .env("DSH_HOME", home.join("dsh"))
            .args(["plugin", "--profile", profile])
            .args(args)
            .current_dir(home),
    );
    assert!(
        out.status.success(),
        "dsh plugin --profile {profile} {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every file under `dir` (links not followed) whose text names `needle`.
fn files_naming(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            found.extend(files_naming(&path, needle));
        } else if kind.is_file()
            && std::fs::read(&path)
                .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(path);
        }
    }
    found
}

/// `dsh web` on a free port; returns it and its port.
fn dsh_web(peers: &Peers, home: &Path) -> (ChildGuard, u16) {
    let mut command = dsh_command(peers, home);
    command
        .args(["web", "--port", "0", "--no-open"])
        .current_dir(home);
    let mut web = spawn_guarded(&mut command);
    let line = dshkit_test::read_ready_line(&mut web, "dsh web: ", Duration::from_mins(1));
    let port = line
        .rsplit(':')
        .next()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    (web, port)
}

#[test]
fn dshkit_installs_from_a_registry_as_a_dsh_plugin_and_as_a_global_command() {
    let peers = Peers::get();
    let packages = dist_packages();
    let registry = Registry::start(&peers);
    let home = tempfile::tempdir().unwrap();
    for (_, tarball) in &packages {
        registry.publish(&peers, home.path(), tarball);
    }
    let repo_target = workspace_root().join("target");
    let repo_target = repo_target.to_string_lossy().into_owned();

    web_profile_add(&registry, &peers, home.path(), &repo_target);
    agent_turn(&registry, &peers, home.path());
    web_profile_remove(&registry, &peers, home.path());
    global_install(&registry, &peers, home.path());
}

/// (a) and (d): the web profile with dshkit as a layer boots, serves the client half, and names nothing in the build directory.
#[expect(clippy::print_stderr, reason = "the install time is a figure the docs report")]
fn web_profile_add(registry: &Registry, peers: &Peers, home: &Path, repo_target: &str) {
    let dsh_home = home.join("dsh");
    // (a) The web profile: DSH boots with dshkit as a layer and serves its client half.
    let made = output(dsh_command(peers, home).args(["web", "--dump-default-config"]));
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let started = Instant::now();
    dsh_plugin(registry, peers, home, "web", &["add", "dshkit"]);
    eprintln!(
        "packaging: `dsh plugin --profile web add dshkit` took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let profile = dsh_home.join("profiles/web");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(profile.join("package.json")).unwrap()).unwrap();
    let bundles = &manifest["dsh"]["profile"]["bundles"];
    assert!(
        bundles.as_array().unwrap().iter().any(|b| b == "dshkit"),
        "dshkit joined the layer stack: {manifest:#}"
    );
    let binary = profile.join("node_modules/@dshkit/linux-x64-gnu/bin/dshkit");
    assert!(binary.is_file(), "the platform package holds the binary");
    let dumped = output(dsh_command(peers, home).args(["--profile", "web", "--dump-config"]));
    assert!(
        dumped.status.success(),
        "{}",
        String::from_utf8_lossy(&dumped.stderr)
    );
    let tree = String::from_utf8_lossy(&dumped.stdout).into_owned();
    assert!(
        tree.contains("dshkit"),
        "the composed tree has the dshkit row:\n{tree}"
    );
    assert!(
        !tree.contains(repo_target),
        "the composed config points into {repo_target}:\n{tree}"
    );
    {
        let (_web, port) = dsh_web(peers, home);
        let (status, body) = http_get(port, "/plugins/dshkit/client.js").expect("dsh web answers");
        assert_eq!(status, 200, "the client half is served: {body}");
        assert!(body.contains("__ModuleLoader__.load"), "{body}");
        // (d) While DSH runs: the installed profile names nothing in the build directory.
        let pointing = files_naming(&profile, repo_target);
        assert!(
            pointing.is_empty(),
            "installed files point into {repo_target}: {pointing:#?}"
        );
    }
}

/// A real agent turn through the plugin installed the same way (headless: DSH runs one task and prints its answer).
fn agent_turn(registry: &Registry, peers: &Peers, home: &Path) {
    let dsh_home = home.join("dsh");
    // A real agent turn through the installed plugin (headless, where DSH runs one
    // task and prints its answer), installed the same way.
    let made = output(dsh_command(peers, home).args(["--profile", "headless", "--dump-default-config"]));
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    dsh_plugin(registry, peers, home, "headless", &["add", "dshkit"]);
    let app = serve_page();
    let model = FakeModel::start("liveloop_verify", &verify_arguments(&app));
    let stdout = dsh_turn(peers, home, None, &model, "Verify the app.");
    let answer = stdout
        .split(ANSWER_PREFIX)
        .nth(1)
        .unwrap_or_else(|| panic!("no tool result in the answer:\n{stdout}"));
    assert!(answer.starts_with("VERIFIED "), "{answer}");
    let attachment = answer
        .split("attached: screenshot ")
        .nth(1)
        .and_then(|rest| rest.split([' ', ',', '\n']).next())
        .unwrap_or_else(|| panic!("no attachment in the answer:\n{answer}"));
    let digest = attachment.trim_start_matches("sha256:");
    let bucket = dsh_home.join("attachments/v1/objects").join(&digest[..2]);
    assert!(
        std::fs::read_dir(&bucket).is_ok_and(
            |mut d| d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with(digest)))
        ),
        "the screenshot {attachment} is saved in DSH's attachment store"
    );
    assert_no_process_left(&dsh_home);
}

/// (b) Removed: the profile boots clean, with no dshkit layer left.
fn web_profile_remove(registry: &Registry, peers: &Peers, home: &Path) {
    let profile = home.join("dsh/profiles/web");
    // (b) Removed: the profile boots clean, with no dshkit layer left.
    dsh_plugin(registry, peers, home, "web", &["remove", "dshkit"]);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(profile.join("package.json")).unwrap()).unwrap();
    assert!(
        !manifest.to_string().contains("dshkit"),
        "no dshkit layer is left: {manifest:#}"
    );
    assert!(!profile.join("node_modules/dshkit").exists());
    let dumped = output(dsh_command(peers, home).args(["--profile", "web", "--dump-config"]));
    assert!(
        dumped.status.success(),
        "{}",
        String::from_utf8_lossy(&dumped.stderr)
    );
    assert!(!String::from_utf8_lossy(&dumped.stdout).contains("dshkit"));
    {
        let (_web, port) = dsh_web(peers, home);
        let (status, _) = http_get(port, "/").expect("dsh web answers");
        assert_eq!(status, 200);
    }
}

/// (c) The global command from the same registry: its `dshkit doctor` runs.
fn global_install(registry: &Registry, peers: &Peers, home: &Path) {
    // (c) The global command from the same registry.
    let prefix = home.join("global");
    let installed = output(
        registry
            .client(peers, Path::new("npm"), home)
            .args(["install", "-g", "dshkit", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .current_dir(home),
    );
    assert!(
        installed.status.success(),
        "npm install -g dshkit: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let doctor = output(
        registry
            .client(peers, &prefix.join("bin/dshkit"), home)
            .args(["doctor", "--json"]),
    );
    let report = crate::support::stdout_json(&doctor);
    assert!(report["facts"].is_array(), "{report:#}");
    // The completions and the man page ship with it; npm links the man page.
    let package = prefix.join("lib/node_modules/dshkit");
    let bash = std::fs::read_to_string(package.join("share/completions/dshkit.bash")).unwrap_or_default();
    assert!(
        bash.contains("_dshkit()"),
        "the bash completion ships: {bash:.200}"
    );
    let man = std::fs::read_to_string(prefix.join("share/man/man1/dshkit.1")).unwrap_or_default();
    assert!(
        man.contains(".TH dshkit 1"),
        "npm linked the man page: {man:.200}"
    );
    assert!(
        matches!(doctor.status.code(), Some(0 | 1)),
        "doctor ran to its verdict: {:?}\n{}",
        doctor.status,
        String::from_utf8_lossy(&doctor.stderr)
    );
}
