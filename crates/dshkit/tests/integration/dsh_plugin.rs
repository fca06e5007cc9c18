//! The native DSH plugin (`dshkit dsh install`) in a real DSH: its tools are DSH's
//! own (no `mcp__` prefix), a verification's screenshot becomes a DSH attachment,
//! a dev-server start needs the user's approval, and nothing is left running.

use dshkit_test::{FakeModel, Peers, wait_for};

use crate::support::{
    Home, PAGE, assert_no_process_left, copy_hello_app, describe, dsh_command, dsh_turn, dsh_turn_in,
    headless_home, install, installed_home, model_verifying, output, processes_of, profile_home, serve_html,
    serve_page, stdout_json, the_model_gets_the_binarys_guidance_and_skills, tool_answer, verify_arguments,
    web_home,
};

#[test]
fn a_dsh_agent_turn_verifies_through_the_native_tool_and_the_screenshot_is_attached() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");

    let app = serve_page();
    let model = model_verifying(&app);
    let stdout = dsh_turn(&peers, home.path(), None, &model, "Verify the app.");

    let offered: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    for tool in [
        "liveloop_verify",
        "liveloop_runtime",
        "plugin_check",
        "liveloop_browser",
    ] {
        assert!(
            offered.iter().any(|n| n == tool),
            "{tool} is not offered natively: {offered:?}"
        );
    }
    assert!(
        !offered.iter().any(|n| n.starts_with("mcp__dshkit__")),
        "the tools are not doubled through MCP: {offered:?}"
    );
    assert!(
        !offered.iter().any(|n| n.starts_with("cordis_")),
        "the DevTools tools are offered only with the collector: {offered:?}"
    );
    the_model_gets_the_binarys_guidance_and_skills(home.path(), &model.turn_requests()[0], false);
    let answer = tool_answer(&stdout);
    assert!(answer.contains("VERIFIED"), "{answer}");
    // The default model reads text only: it gets the attachment id, not the image.
    let attachment = answer
        .split("attached: screenshot ")
        .nth(1)
        .and_then(|rest| rest.split([' ', ',', '\n']).next())
        .unwrap_or_else(|| panic!("no attachment id in the answer:\n{answer}"));
    assert!(attachment.starts_with("sha256:"), "{answer}");
    assert!(answer.contains("this model reads text only"), "{answer}");
    // DSH's attachment store holds the screenshot itself, byte for byte.
    let digest = attachment.trim_start_matches("sha256:");
    let bucket = dsh_home.join("attachments/v1/objects").join(&digest[..2]);
    let stored = std::fs::read_dir(&bucket)
        .unwrap_or_else(|e| panic!("no attachment bucket {}: {e}", bucket.display()))
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(digest))
        .unwrap_or_else(|| panic!("attachment {digest} is not stored under {}", bucket.display()));
    let screenshot = answer
        .split("screenshot: ")
        .nth(1)
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("no screenshot path in the answer:\n{answer}"));
    assert_eq!(
        std::fs::read(stored.path()).unwrap(),
        std::fs::read(screenshot).unwrap(),
        "the attachment is the verification's screenshot"
    );
    let last = model.turn_requests().last().cloned().unwrap();
    assert!(
        !last.to_string().contains("image_url"),
        "a text-only model never receives an image block"
    );
    assert_no_process_left(&dsh_home);
}

#[test]
fn ten_verifications_in_one_dsh_conversation_all_get_their_verdicts_and_the_model_never_picks_the_owner() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");
    let app = serve_page();
    // The model names an owner in every call (another one each time); the plugin
    // drops it and sets the conversation's, so all ten verifications share one
    // preview, and a listing under yet another owner still shows the
    // conversation's own previews.
    let mut calls: Vec<(&str, serde_json::Value)> = (0..10)
        .map(|n| {
            let mut arguments = verify_arguments(&app);
            arguments["owner"] = serde_json::json!(format!("model-owner-{n}"));
            ("liveloop_verify", arguments)
        })
        .collect();
    calls.push((
        "liveloop_browser",
        serde_json::json!({"operation": "list", "owner": "model-owner-list"}),
    ));
    let model = FakeModel::sequence(&calls, false);
    let stdout = dsh_turn(&peers, home.path(), None, &model, "Verify the app ten times.");

    let requests = model.requests();
    let offered = requests
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .filter(|t| {
            matches!(
                t["function"]["name"].as_str(),
                Some("liveloop_verify" | "liveloop_browser")
            )
        })
        .collect::<Vec<_>>();
    assert!(!offered.is_empty());
    for tool in &offered {
        assert!(
            tool["function"]["parameters"]["properties"]
                .get("owner")
                .is_none(),
            "the model is not offered an owner: {tool}"
        );
    }
    let last = requests.last().unwrap();
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(results.len(), 11, "{results:#?}");
    let mut previews = std::collections::BTreeSet::new();
    for (n, result) in results[..10].iter().enumerate() {
        assert!(result.contains("VERIFIED"), "verification {}: {result}", n + 1);
        let preview = result
            .split("preview session: ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("no preview session in verification {}: {result}", n + 1));
        previews.insert(preview.to_owned());
    }
    assert_eq!(
        previews.len(),
        1,
        "one preview served the conversation: {previews:?}"
    );
    let listed = tool_answer(&stdout);
    let preview = previews.first().unwrap();
    assert!(
        listed.contains(preview.as_str()),
        "the conversation's preview is listed: {listed}"
    );
    assert_no_process_left(&dsh_home);
}

#[test]
fn a_model_that_accepts_images_receives_the_screenshot() {
    use base64::Engine as _;
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "headless");
    // The default model, declared image-capable in the provider's catalog.
    let overlay = home.path().join("vision.patch.yml");
    std::fs::write(
        &overlay,
        "- id: llm-deepseek\n  config:\n    models:\n      - id: deepseek-v4-flash\n        name: DeepSeek-V4-Flash\n        inputModalities: [text, image]\n",
    )
    .unwrap();
    // A page far taller than DSH's 2000 px per side, verified as a full page: the
    // attachment is its top, fitted, and the agent is told so.
    let app = serve_html(format!(
        "{PAGE}<div style=\"height: 9000px; background: linear-gradient(#fff, #36c)\"></div>"
    ));
    let mut arguments = verify_arguments(&app);
    arguments["fullPage"] = serde_json::json!(true);
    let model = FakeModel::start("liveloop_verify", &arguments);
    let stdout = dsh_turn(&peers, home.path(), Some(&overlay), &model, "Verify the app.");
    let answer = tool_answer(&stdout);
    assert!(answer.contains("attached: screenshot sha256:"), "{answer}");
    assert!(!answer.contains("reads text only"), "{answer}");
    assert!(
        answer.contains("image 1: screenshot, cropped to the top 2000 of"),
        "{answer}"
    );
    let last = model.turn_requests().last().cloned().unwrap().to_string();
    let data = last
        .split("data:image/png;base64,")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| {
            panic!(
                "the model request after the tool call carries the PNG: {}",
                &last[..last.len().min(2000)]
            )
        });
    let png = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
    let image = dshkit_liveloop::verify::diff::Rgba::from_png(&png).unwrap();
    assert_eq!(
        (image.width, image.height),
        (1280, 2000),
        "the image the model got is fitted"
    );
}

#[test]
fn a_headless_dev_server_start_is_refused_without_approval() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");
    // A workspace with a real app the model would like to start.
    let workspace = tempfile::tempdir().unwrap();
    copy_hello_app(workspace.path());
    // The model tries to approve its own start.
    let model = FakeModel::start(
        "liveloop_runtime",
        &serde_json::json!({ "operation": "start", "confirm": true }),
    );
    let stdout = dsh_turn_in(
        &peers,
        home.path(),
        Some(workspace.path()),
        None,
        &model,
        "Start the app.",
    );
    let answer = tool_answer(&stdout);
    assert!(
        answer.contains("did not start the dev server") && answer.contains("no one can approve it"),
        "{answer}"
    );
    // The model is never offered a way to approve itself.
    let runtime = model
        .requests()
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .find(|t| t["function"]["name"] == "liveloop_runtime")
        .expect("liveloop_runtime is offered");
    assert!(
        runtime["function"]["parameters"]["properties"]
            .get("confirm")
            .is_none(),
        "{runtime}"
    );
    // Nor told to pass one: DSH shows the description the binary gives hosts.
    let described = describe(home.path());
    let hosted = described["host"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "liveloop_runtime")
        .unwrap();
    assert_eq!(runtime["function"]["description"], hosted["description"]);
    assert!(
        !runtime["function"]["description"]
            .as_str()
            .unwrap()
            .contains("confirm"),
        "{runtime}"
    );
    assert!(
        dshkit_test::processes_mentioning(&workspace.path().display().to_string()).is_empty(),
        "nothing runs in the workspace"
    );
    assert_no_process_left(&dsh_home);
}

#[test]
fn install_proves_the_boot_and_uninstall_leaves_a_profile_that_boots() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let profile = dsh_home.join("profiles/web");
    let patch = profile.join("cordis.patch.yml");
    let original = std::fs::read_to_string(&patch).unwrap();

    let installed = install(home.path(), &dsh_home, "web", &["--json"]);
    let report = stdout_json(&installed);
    assert_eq!(installed.status.code(), Some(0), "{report}");
    assert_eq!(report["installed"], true);
    assert_eq!(report["bootProof"]["status"], "pass", "{report}");
    // The row runs the plugin's own binary, not the build directory's.
    let binary = std::path::PathBuf::from(report["install"]["binary"].as_str().unwrap());
    assert!(binary.starts_with(profile.join("plugins/dshkit")), "{report}");
    assert!(binary.is_file(), "{report}");
    // DSH itself composes the plugin row into the tree it boots.
    let dumped = output(dsh_command(&peers, home.path()).args(["--profile", "web", "--dump-config"]));
    let tree = String::from_utf8_lossy(&dumped.stdout);
    assert!(
        tree.contains("'@local/dshkit'")
            || tree.contains("\"@local/dshkit\"")
            || tree.contains("@local/dshkit"),
        "{tree}"
    );

    // Evidence written meanwhile is never touched by uninstall.
    let evidence = home.path().join(".local/state/dshkit/evidence/keep.json");
    std::fs::create_dir_all(evidence.parent().unwrap()).unwrap();
    std::fs::write(&evidence, "{}").unwrap();
    let removed = output(
        home.dshkit()
            .args(["dsh", "uninstall", "--profile", "web", "--dsh-home"])
            .arg(&dsh_home),
    );
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&patch).unwrap(),
        original,
        "the patch file is as before"
    );
    assert!(!profile.join("plugins/dshkit").exists());
    assert!(
        profile
            .join("node_modules/@local/dshkit")
            .symlink_metadata()
            .is_err()
    );
    assert!(evidence.is_file(), "evidence is kept");
    let check = output(
        home.dshkit()
            .env("PATH", peers.path_var())
            .args(["check", "--live", "--json", "--dsh-home"])
            .arg(&dsh_home),
    );
    let check = stdout_json(&check);
    assert_eq!(check["ok"], true, "the uninstalled profile boots: {check}");
}

#[test]
fn an_install_into_a_headless_profile_is_proven_by_one_turn_and_kept() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let installed = install(home.path(), &dsh_home, "headless", &["--json"]);
    let report = stdout_json(&installed);
    assert_eq!(installed.status.code(), Some(0), "{report}");
    assert_eq!(report["installed"], true, "{report}");
    assert_eq!(report["bootProof"]["status"], "pass", "{report}");
    assert!(
        report["bootProof"]["detail"]
            .as_str()
            .unwrap()
            .contains("a headless turn loaded the plugin tree"),
        "{report}"
    );
    assert!(
        dsh_home
            .join("profiles/headless/plugins/dshkit/index.js")
            .is_file()
    );
    assert_no_process_left(&dsh_home);
}

#[test]
fn a_plugin_beside_a_binary_of_another_release_says_so_at_every_boot() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "web");
    let manifest = dsh_home.join("profiles/web/plugins/dshkit/package.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let version = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(text.contains(&version), "{text}");
    std::fs::write(&manifest, text.replace(&version, "\"version\": \"0.0.1\"")).unwrap();

    let check = output(
        home.dshkit()
            .env("PATH", peers.path_var())
            .args(["check", "--live", "--json", "--dsh-home"])
            .arg(&dsh_home),
    );
    let check = stdout_json(&check);
    let boot = check["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "live_boot")
        .unwrap();
    assert_eq!(boot["status"], "warn", "{check}");
    let said = boot["evidence"].to_string();
    assert!(
        said.contains(&format!(
            "this plugin is 0.0.1 and its binary {} is {}",
            dsh_home.join("profiles/web/plugins/dshkit/bin/dshkit").display(),
            env!("CARGO_PKG_VERSION")
        )),
        "{check}"
    );
}

#[test]
fn a_from_source_install_keeps_working_after_its_build_directory_is_moved_away() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    // A build directory of its own, so moving it away touches no other test.
    let build = tempfile::tempdir().unwrap();
    let release = build.path().join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    let binary = release.join("dshkit");
    std::fs::copy(crate::support::dshkit(), &binary).unwrap();
    let mut command = std::process::Command::new(&binary);
    crate::support::isolate(&mut command, home.path());
    let installed = output(
        command
            .env("PATH", peers.path_var())
            .args(["--json", "dsh", "install", "--profile", "headless", "--dsh-home"])
            .arg(&dsh_home),
    );
    let report = stdout_json(&installed);
    assert_eq!(report["bootProof"]["status"], "pass", "{report}");
    let moved = build.path().join("target-moved-away");
    std::fs::rename(build.path().join("target"), &moved).unwrap();
    assert!(!binary.exists());

    let app = serve_page();
    let model = model_verifying(&app);
    let stdout = dsh_turn(&peers, home.path(), None, &model, "Verify the app.");
    let answer = tool_answer(&stdout);
    assert!(answer.contains("VERIFIED"), "{answer}");
    let patch = std::fs::read_to_string(dsh_home.join("profiles/headless/cordis.patch.yml")).unwrap();
    assert!(
        !patch.contains(&build.path().display().to_string()),
        "the row names nothing in the build directory: {patch}"
    );
}

#[test]
fn an_install_into_a_profile_that_does_not_boot_is_rolled_back() {
    let peers = Peers::get();
    for kind in ["web", "headless"] {
        let (home, dsh_home) = profile_home(&peers, kind);
        let profile = dsh_home.join("profiles").join(kind);
        // The user's own broken plugin: the profile would not boot with or without dshkit.
        let broken = profile.join("plugins/broken");
        std::fs::create_dir_all(&broken).unwrap();
        std::fs::write(
            broken.join("package.json"),
            r#"{"name":"@local/broken","type":"module","main":"index.js"}"#,
        )
        .unwrap();
        std::fs::write(
            broken.join("index.js"),
            "export const name = 'broken';\nexport function apply() {\n",
        )
        .unwrap();
        let patch = profile.join("cordis.patch.yml");
        std::fs::write(
            &patch,
            "- insert:\n    - id: broken\n      name: '@local/broken'\n",
        )
        .unwrap();
        let before = std::fs::read_to_string(&patch).unwrap();

        let installed = install(home.path(), &dsh_home, kind, &["--json"]);
        assert_eq!(
            installed.status.code(),
            Some(1),
            "{kind}: {}",
            String::from_utf8_lossy(&installed.stdout)
        );
        let report = stdout_json(&installed);
        assert_eq!(report["installed"], false, "{kind}: {report}");
        assert!(
            report["reason"].as_str().unwrap().contains("does not pass"),
            "{kind}: {report}"
        );
        assert_eq!(
            std::fs::read_to_string(&patch).unwrap(),
            before,
            "{kind}: the patch file is exactly as before"
        );
        assert!(
            !profile.join("plugins/dshkit").exists(),
            "{kind}: the unused plugin files are removed"
        );
        assert!(
            broken.join("index.js").is_file(),
            "{kind}: the user's files are kept"
        );
    }
}

#[test]
fn a_killed_sidecar_is_restarted_by_the_next_call() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");
    // Two doctor calls in one turn; the model waits after the first result.
    let model = FakeModel::scripted("dshkit_doctor", &serde_json::json!({}), 2, true);
    std::thread::scope(|scope| {
        let turn = scope.spawn(|| dsh_turn(&peers, home.path(), None, &model, "Run the doctor twice."));
        let sidecar = wait_for(std::time::Duration::from_mins(1), || {
            let answered = model
                .requests()
                .iter()
                .any(|r| r.to_string().contains("\"role\":\"tool\""));
            let sidecars: Vec<u32> = processes_of(&dsh_home)
                .iter()
                .filter(|p| p.contains("mcp --stdio"))
                .filter_map(|p| p.split(':').next()?.parse().ok())
                .collect();
            match sidecars[..] {
                [pid] if answered => Ok(pid),
                _ => Err("the first call never completed".to_owned()),
            }
        });
        // Kill it between the two calls, then let the model call again.
        assert!(dshkit_os::process::Identity::of(sidecar).unwrap().kill());
        model.release();
        model.release();
        let stdout = turn.join().unwrap();
        let answer = tool_answer(&stdout);
        assert!(
            answer.contains("dshkit doctor:"),
            "the second call was answered: {answer}"
        );
    });
    assert_no_process_left(&dsh_home);
}

/// The host section of `dshkit mcp --describe`: what the plugin takes over for
/// each tool, the descriptions DSH shows, the guidance and the skills. A
/// description the plugin shows as the server lists it reads `(as listed)`; a
/// skill's text is its file, checked whole here and shortened in the snapshot.
#[test]
fn the_binary_describes_the_host_seams_guidance_and_skills_the_plugin_interprets() {
    let home = Home::new();
    let described = describe(home.path());
    let mut host = described["host"].clone();
    let listed: std::collections::HashMap<String, serde_json::Value> = described["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["description"].clone()))
        .collect();
    let tools = host["tools"].as_array_mut().unwrap();
    assert_eq!(tools.len(), listed.len(), "every listed tool has its entry");
    for tool in tools {
        let name = tool["name"].as_str().unwrap().to_owned();
        if tool["description"] == listed[&name] {
            tool["description"] = "(as listed)".into();
        }
    }
    let file = |path: &str| {
        let text = std::fs::read_to_string(dshkit_test::workspace_root().join(path)).unwrap();
        let (_, body) = text.split_once("\n---\n").unwrap();
        body.trim_start().to_owned()
    };
    for skill in host["skills"].as_array_mut().unwrap() {
        let expected = match skill["name"].as_str().unwrap() {
            "live-loop" => file("skills/live-loop/SKILL.md"),
            "dsh-runtime-debugging" => file("skills/dsh-runtime-debugging/SKILL.md"),
            "plugin-fault-diagnosis" => dshkit_check::PLAYBOOK.to_owned(),
            other => panic!("a skill with no known source: {other}"),
        };
        assert_eq!(skill["text"], expected.as_str(), "{}", skill["name"]);
        skill["text"] = format!("({} lines)", expected.lines().count()).into();
    }
    assert_eq!(
        std::path::Path::new(host["devtoolsDir"].as_str().unwrap()),
        home.path().join(".dsh").join("dshkit-devtools"),
        "the registry the plugin's collector registers in, resolved by the binary"
    );
    host["devtoolsDir"] = "(HOME)/.dsh/dshkit-devtools".into();
    assert_eq!(
        std::path::Path::new(host["stateDir"].as_str().unwrap()),
        home.path().join(".dsh").join("dshkit-plugin"),
        "where the plugin keeps its views' state, resolved by the binary"
    );
    host["stateDir"] = "(HOME)/.dsh/dshkit-plugin".into();
    insta::assert_json_snapshot!(host);
}

#[test]
fn a_collector_that_cannot_start_fails_the_install_only_when_told_to() {
    let peers = Peers::get();
    let (home, dsh_home) = profile_home(&peers, "headless");
    // The collector's registry directory cannot be made: a file holds its name.
    std::fs::create_dir_all(&dsh_home).unwrap();
    std::fs::write(dsh_home.join("dshkit-devtools"), "not a directory").unwrap();
    let patch = dsh_home.join("profiles/headless/cordis.patch.yml");
    let before = std::fs::read(&patch).ok();

    let strict = install(
        home.path(),
        &dsh_home,
        "headless",
        &["--json", "--devtools", "--fail-on-startup-error"],
    );
    let report = stdout_json(&strict);
    assert_eq!(strict.status.code(), Some(1), "{report}");
    assert_eq!(report["installed"], false, "the boot proof failed: {report}");
    assert_eq!(std::fs::read(&patch).ok(), before, "rolled back");

    // By default the failure is reported, and LiveLoop and the checks go on.
    let lenient = install(home.path(), &dsh_home, "headless", &["--json", "--devtools"]);
    let report = stdout_json(&lenient);
    assert_eq!(lenient.status.code(), Some(0), "{report}");
    assert_eq!(report["installed"], true, "{report}");
    let row = std::fs::read_to_string(&patch).unwrap();
    assert!(!row.contains("failOnStartupError"), "{row}");
}

/// What the plugin's own `devtoolsSettings` (the code DSH runs) makes of a row's
/// config: `{settings}` or `{error}`, one per config given.
fn plugin_reads(configs: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let peers = Peers::get();
    let script = "const [module, configs] = process.argv.slice(1);\
        const { devtoolsSettings } = await import(module);\
        console.log(JSON.stringify(JSON.parse(configs).map((config) => {\
          try { return { settings: devtoolsSettings(config) }; } catch (error) { return { error: error.message }; }\
        })));";
    let read = output(
        std::process::Command::new(peers.node())
            .args(["--input-type=module", "-e", script])
            .arg(dshkit_test::workspace_root().join("packages/dsh-plugin/devtools.js"))
            .arg(serde_json::Value::from(configs.to_vec()).to_string()),
    );
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    serde_json::from_slice(&read.stdout).unwrap()
}

/// The row `dshkit dsh install` writes is read by the plugin as asked (the
/// design's keys: `devtools.mcp.enabled`, `listen`, `experiments.enabled`,
/// `failOnStartupError`); the endpoint is off unless asked for; a row of the
/// release before is still read as then and named deprecated; an unknown key or
/// a token in the row is refused by its name.
#[test]
fn the_plugin_reads_the_devtools_settings_dshkit_writes_and_refuses_what_it_does_not_know() {
    let peers = Peers::get();
    let (home, dsh_home) = profile_home(&peers, "headless");
    let row_after = |extra: &[&str]| -> serde_json::Value {
        let installed = install(
            home.path(),
            &dsh_home,
            "headless",
            &[&["--json", "--no-boot-check"], extra].concat(),
        );
        assert!(
            installed.status.success(),
            "{}",
            String::from_utf8_lossy(&installed.stderr)
        );
        let patch = std::fs::read_to_string(dsh_home.join("profiles/headless/cordis.patch.yml")).unwrap();
        let rows: serde_json::Value = yaml_serde::from_str(&patch).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .flat_map(|layer| layer["insert"].as_array().cloned().unwrap_or_default())
            .find(|row| row["id"] == "dshkit")
            .unwrap_or_else(|| panic!("no dshkit row in {patch}"))["config"]
            .clone()
    };
    let observing = row_after(&["--devtools"]);
    let everything = row_after(&[
        "--devtools-experiments",
        "--devtools-endpoint",
        "127.0.0.1:43999",
        "--fail-on-startup-error",
    ]);
    let default_address = row_after(&["--devtools", "--devtools-endpoint", "on"]);
    let without = row_after(&[]);
    let legacy = serde_json::json!({"devtools": true, "devtoolsExperiments": true});
    let legacy_off = serde_json::json!({"devtools": true, "devtoolsEndpoint": false});
    let unknown = serde_json::json!({"devtools": {"mcp": {"enabeld": true}}});
    let token = serde_json::json!({"devtools": {"mcp": {"enabled": true, "token": "a-secret-token-value"}}});
    let read = plugin_reads(&[
        observing,
        everything,
        default_address,
        without,
        legacy,
        legacy_off,
        unknown,
        token,
    ]);
    let settings = |i: usize| &read[i]["settings"];
    assert_eq!(
        settings(0),
        &serde_json::json!({"collector": true, "experiments": false, "failOnStartupError": false, "endpoint": null, "deprecated": []}),
        "--devtools alone: the collector, no endpoint"
    );
    assert_eq!(
        settings(1),
        &serde_json::json!({"collector": true, "experiments": true, "failOnStartupError": true, "endpoint": "127.0.0.1:43999", "deprecated": []})
    );
    assert_eq!(settings(2)["endpoint"], "127.0.0.1:43127");
    assert_eq!(settings(3)["collector"], false);
    assert_eq!(
        settings(4),
        &serde_json::json!({"collector": true, "experiments": true, "failOnStartupError": false, "endpoint": "127.0.0.1:43127", "deprecated": ["devtools: true", "devtoolsExperiments"]}),
        "a row of the release before is read as then"
    );
    assert_eq!(settings(5)["endpoint"], serde_json::Value::Null);
    let refused = |i: usize| {
        read[i]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("accepted: {}", read[i]))
            .to_owned()
    };
    assert!(
        refused(6).contains("devtools.mcp.enabeld is not a DevTools setting"),
        "{}",
        refused(6)
    );
    let token = refused(7);
    assert!(token.contains("devtools.mcp.token is not read"), "{token}");
    assert!(
        !token.contains("a-secret-token-value"),
        "the refusal never shows the token: {token}"
    );
}
