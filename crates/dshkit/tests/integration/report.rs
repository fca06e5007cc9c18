//! `dshkit report`: the index of past verification reports in the evidence
//! root, written after every verification and by the command, listing each
//! report with its verdict and working links, and a damaged one by its reason.

use std::path::{Path, PathBuf};

use dshkit_test::{Fixture, FixtureServer};
use serde_json::Value;

use crate::support::{Home, stdout_json};

/// A page that passes its check at `/`, and one at `/broken` that throws.
fn app() -> FixtureServer {
    FixtureServer::start(vec![
        (
            "/",
            Fixture::Html("<!doctype html><title>Home</title><h1>Home page</h1>".into()),
        ),
        (
            "/broken",
            Fixture::Html(
                "<!doctype html><title>Broken</title><h1>Broken</h1><script>throw new Error('broken on purpose')</script>"
                    .into(),
            ),
        ),
    ])
}

/// `dshkit verify URL --expect-text TEXT --json` in `home`: its report.
fn verify(home: &Home, url: &str, text: &str, code: i32) -> Value {
    let out = home.run(["verify", url, "--expect-text", text, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout_json(&out)
}

/// Every `href` of `html`.
fn links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

/// The index's row of report `id` (from its `<tr>` to its `</tr>`).
fn row<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("data-id=\"{id}\""))
        .unwrap_or_else(|| panic!("no row for {id} in {html}"));
    let end = html[start..].find("</tr>").unwrap() + start;
    &html[start..end]
}

#[test]
fn the_index_lists_each_report_with_its_verdict_and_links_and_names_a_damaged_one() {
    let app = app();
    let home = Home::new();
    let verified = verify(&home, &app.url("/"), "Home page", 0);
    let failed = verify(&home, &app.url("/broken"), "Broken", 1);
    assert_eq!(verified["verdict"], "VERIFIED", "{verified:#}");
    assert_eq!(failed["verdict"], "FAILED", "{failed:#}");
    let report_dir = |report: &Value| PathBuf::from(report["reportPath"].as_str().unwrap());
    let root = report_dir(&verified)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned();

    // Each verification keeps the index current by itself.
    let after_verify = std::fs::read_to_string(root.join("index.html")).unwrap();
    for report in [&verified, &failed] {
        assert!(
            after_verify.contains(report["id"].as_str().unwrap()),
            "{after_verify}"
        );
    }

    // A report damaged on disk, in a session of its own, newest of all.
    let damaged_dir = root.join("pv-damaged");
    std::fs::create_dir_all(&damaged_dir).unwrap();
    let damaged = damaged_dir.join("verify-99999999999999.json");
    std::fs::write(&damaged, "{\"formatVersion\": 1, \"verdict\": ").unwrap();

    let out = home.run(["report"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let index_path = PathBuf::from(text.lines().next().unwrap());
    assert_eq!(index_path, root.join("index.html"), "{text}");
    assert!(text.contains("3 report(s), 1 damaged"), "{text}");
    assert!(text.contains(&damaged.display().to_string()), "{text}");

    let html = std::fs::read_to_string(&index_path).unwrap();
    for (report, verdict) in [(&verified, "VERIFIED"), (&failed, "FAILED")] {
        let id = report["id"].as_str().unwrap();
        let row = row(&html, id);
        assert!(row.contains(&format!(">{verdict}</span>")), "{row}");
        assert!(row.contains(report["requestedUrl"].as_str().unwrap()), "{row}");
        let targets: Vec<PathBuf> = links(row).iter().map(|l| root.join(l)).collect();
        assert_eq!(
            targets,
            [
                PathBuf::from(report["htmlPath"].as_str().unwrap()),
                report_dir(report)
            ],
            "{row}"
        );
    }
    let damaged_row = row(&html, "verify-99999999999999");
    assert!(
        damaged_row.contains("DAMAGED") && damaged_row.contains("not JSON"),
        "{damaged_row}"
    );
    // Newest first: the damaged one, the failed one, the verified one.
    let order: Vec<usize> = [
        "verify-99999999999999",
        failed["id"].as_str().unwrap(),
        verified["id"].as_str().unwrap(),
    ]
    .iter()
    .map(|id| html.find(&format!("data-id=\"{id}\"")).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    for link in links(&html) {
        assert!(root.join(&link).is_file(), "{link} resolves to a file");
    }

    // --json: the same list.
    let listed = stdout_json(&home.run(["report", "--json"]));
    assert_eq!(listed["path"], index_path.to_str().unwrap());
    assert_eq!(
        (listed["total"].as_u64(), listed["damaged"].as_u64()),
        (Some(3), Some(1))
    );
    let reports = listed["reports"].as_array().unwrap();
    let ids: Vec<_> = reports.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "verify-99999999999999",
            failed["id"].as_str().unwrap(),
            verified["id"].as_str().unwrap()
        ]
    );
    assert!(
        reports[0]["damaged"].as_str().unwrap().starts_with("not JSON"),
        "{listed:#}"
    );
    assert_eq!(reports[0]["jsonPath"], damaged.to_str().unwrap());
    for (listed, report) in reports[1..].iter().zip([&failed, &verified]) {
        assert_eq!(listed["verdict"], report["verdict"]);
        assert_eq!(listed["url"], report["requestedUrl"]);
        assert_eq!(listed["htmlPath"], report["htmlPath"]);
        assert_eq!(listed["jsonPath"], report["reportPath"]);
        assert_eq!(listed["createdAtMs"], report["createdAtMs"]);
        assert!(listed.get("damaged").is_none(), "{listed:#}");
    }
    assert!(Path::new(reports[1]["htmlPath"].as_str().unwrap()).is_file());
}

#[test]
fn an_evidence_root_without_reports_gets_an_empty_index() {
    let home = Home::new();
    let listed = stdout_json(&home.run(["report", "--json"]));
    assert_eq!(listed["total"], 0, "{listed:#}");
    let html = std::fs::read_to_string(listed["path"].as_str().unwrap()).unwrap();
    assert!(
        html.contains("No verification has written a report here yet."),
        "{html}"
    );
}

#[cfg(unix)]
#[test]
fn report_open_hands_the_index_to_the_persons_browser_and_says_when_it_could_not() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = Home::new();
    // A browser command of the person's: it notes what it was asked to open.
    let opened = home.join("opened.txt");
    let browser = home.join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = crate::support::output(home.dshkit().env("BROWSER", &browser).args(["report", "--open"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let index = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.ends_with("index.html"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no index path printed: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), index, "{stderr}");
    assert!(stderr.contains(&format!("opened {index} with")), "{stderr}");

    // A browser that fails is said, with what to do.
    let failed = crate::support::output(home.dshkit().env("BROWSER", "false").args(["report", "--open"]));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("false {index} exited with")), "{stderr}");
    assert!(stderr.contains("yourself"), "{stderr}");
}
