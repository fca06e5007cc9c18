//! dshkit's redaction judged by the maintained secret scanners, family by
//! family: secretlint (its recommended preset), detect-secrets and gitleaks each
//! read the generated corpus as written and as `dshkit echo redact` left it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use dshkit_test::Peers;
use dshkit_test::secrets::{Rng, lookalikes, secret_corpus};
use serde_json::{Value, json};

use crate::support::{Home, output};

/// The judges, in the order of the counts below.
const JUDGES: [&str; 3] = ["secretlint", "detect-secrets", "gitleaks"];

/// The fewest corpus samples each judge must catch in clear text: fewer means
/// the judge did not run as it should, not that dshkit did well.
const MIN_CAUGHT_BY_EACH_JUDGE: usize = 15;

/// The file a text is judged in: secretlint reads a service account key only
/// in a `.json` file and an `_authToken` only in an `.npmrc`.
fn file_name(index: usize, part: &str, family: &str) -> String {
    let extension = match family {
        "gcp-service-account" => "json",
        "npmrc-auth-token" => "npmrc",
        _ => "txt",
    };
    format!("{index:03}{part}.{extension}")
}

/// Findings of each judge in each of the files `names` in `dir`, as counts.
fn judge(peers: &Peers, dir: &Path, names: &[String]) -> Vec<[usize; 3]> {
    let mut counts = vec![[0; 3]; names.len()];
    let index = |file: &str| -> usize {
        let name = Path::new(file).file_name().unwrap().to_str().unwrap();
        names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("a finding in {file}"))
    };

    let config = dir.join(".secretlintrc.json");
    std::fs::write(
        &config,
        r#"{"rules":[{"id":"@secretlint/secretlint-rule-preset-recommend"}]}"#,
    )
    .unwrap();
    let lint = output(
        Command::new(peers.node())
            .arg(peers.secretlint())
            .args(names.iter().map(|n| dir.join(n)))
            .arg("--secretlintrc")
            .arg(&config)
            .args(["--format", "json"])
            .current_dir(peers.secretlint_dir()),
    );
    let reports: Value = serde_json::from_slice(&lint.stdout)
        .unwrap_or_else(|e| panic!("secretlint: {e}: {}", String::from_utf8_lossy(&lint.stderr)));
    for report in reports.as_array().unwrap() {
        let found = report["messages"].as_array().map_or(0, Vec::len);
        counts[index(report["filePath"].as_str().unwrap())][0] += found;
    }

    let detect = output(
        Command::new(peers.detect_secrets())
            .arg("scan")
            .args(names)
            .current_dir(dir),
    );
    assert!(
        detect.status.success(),
        "detect-secrets: {}",
        String::from_utf8_lossy(&detect.stderr)
    );
    let found: Value = serde_json::from_slice(&detect.stdout).unwrap();
    for (file, results) in found["results"].as_object().unwrap() {
        counts[index(file)][1] += results.as_array().map_or(0, Vec::len);
    }

    // `--redact`: the report holds no secret either.
    let leaks = output(
        Command::new(peers.gitleaks())
            .arg("dir")
            .arg(dir)
            .args([
                "--no-banner",
                "--redact",
                "--exit-code",
                "0",
                "--log-level",
                "error",
            ])
            .args(["--report-format", "json", "--report-path", "-"]),
    );
    assert!(
        leaks.status.success(),
        "gitleaks: {}",
        String::from_utf8_lossy(&leaks.stderr)
    );
    let findings: Value = serde_json::from_slice(&leaks.stdout)
        .unwrap_or_else(|e| panic!("gitleaks: {e}: {}", String::from_utf8_lossy(&leaks.stderr)));
    for finding in findings.as_array().unwrap() {
        counts[index(finding["File"].as_str().unwrap())][2] += 1;
    }
    counts
}

/// Writes each `(name, text)` into a new folder `dir`.
fn write_files(dir: &Path, files: &[(String, String)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), format!("{text}\n")).unwrap();
    }
}

/// `texts` through `dshkit echo redact`, each as a raw record and as the
/// message of a recorded call: for each, the two redacted.
fn redacted_by_dshkit(home: &Home, texts: &[String]) -> Vec<[String; 2]> {
    let cassette = home.join("c.jsonl");
    let mut lines = vec![
        r#"{"type":"header","formatVersion":1,"recorder":"dshkit","transport":"stdio","era":"2025","redacted":false,"createdAt":1764570000000}"#.to_owned(),
    ];
    for (i, text) in texts.iter().enumerate() {
        let id = i + 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": text}}});
        let answer =
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}});
        lines.push(
            json!({"type": "interaction", "ordinal": id, "request": request, "responses": [answer], "ms": 1})
                .to_string(),
        );
        lines.push(json!({"type": "raw", "line": text}).to_string());
    }
    std::fs::write(&cassette, lines.join("\n") + "\n").unwrap();
    let redact = home.run(["echo", "redact", cassette.to_str().unwrap()]);
    assert!(
        redact.status.success(),
        "{}",
        String::from_utf8_lossy(&redact.stderr)
    );
    let records: Vec<Value> = std::fs::read_to_string(&cassette)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2 * texts.len());
    records
        .chunks(2)
        .map(|pair| {
            let message = &pair[0]["request"]["params"]["arguments"]["message"];
            [&pair[1]["line"], message].map(|text| text.as_str().unwrap().to_owned())
        })
        .collect()
}

/// What the judges find in each text (`(family, text)`) as written, and in
/// what dshkit left of it (`redacted`: as a raw record and as a call's
/// argument, each judged in a file of its own, the findings added up).
fn judge_before_and_after(
    peers: &Peers,
    home: &Home,
    texts: &[(&str, String)],
    redacted: &[[String; 2]],
) -> (Vec<[usize; 3]>, Vec<[usize; 3]>) {
    let before_files: Vec<(String, String)> = texts
        .iter()
        .enumerate()
        .map(|(i, (family, text))| (file_name(i, "", family), text.clone()))
        .collect();
    let after_files: Vec<(String, String)> = texts
        .iter()
        .zip(redacted)
        .enumerate()
        .flat_map(|(i, ((family, _), [raw, call]))| {
            [
                (file_name(i, "-raw", family), raw.clone()),
                (file_name(i, "-call", family), call.clone()),
            ]
        })
        .collect();
    write_files(&home.join("before"), &before_files);
    write_files(&home.join("after"), &after_files);
    let names = |files: &[(String, String)]| files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let before = judge(peers, &home.join("before"), &names(&before_files));
    let after: Vec<[usize; 3]> = judge(peers, &home.join("after"), &names(&after_files))
        .chunks(2)
        .map(|pair| [0, 1, 2].map(|j| pair[0][j] + pair[1][j]))
        .collect();
    (before, after)
}

/// The rules of the placeholders in `text`, in order, each once.
fn placeholder_rules(text: &str) -> Vec<&str> {
    let mut rules = Vec::new();
    for piece in text.split("[REDACTED:").skip(1) {
        let rule = piece.split(':').next().unwrap();
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    rules
}

/// One row of the table: samples, and of them those each judge caught in
/// clear text, those dshkit redacted, what the judges found after, its rules.
#[derive(Default)]
struct Row {
    samples: usize,
    caught: [usize; 3],
    redacted: usize,
    after: usize,
    rules: Vec<String>,
}

#[test]
fn the_peer_scanners_find_nothing_in_what_dshkit_redacted() {
    let peers = Peers::get();
    let home = Home::new();
    let mut rng = Rng::from_env();
    let corpus = secret_corpus(&mut rng);
    let clean = lookalikes(&mut rng);
    let texts: Vec<(&str, String)> = corpus
        .iter()
        .map(|s| (s.family, s.line.clone()))
        .chain(clean.iter().map(|text| ("clean", text.clone())))
        .collect();
    let lines: Vec<String> = texts.iter().map(|(_, text)| text.clone()).collect();
    let redacted = redacted_by_dshkit(&home, &lines);
    let (before, after) = judge_before_and_after(&peers, &home, &texts, &redacted);

    let mut rows: BTreeMap<&str, Row> = BTreeMap::new();
    let mut failures = Vec::new();
    for (i, sample) in corpus.iter().enumerate() {
        let row = rows.entry(sample.family).or_default();
        row.samples += 1;
        for (caught, found) in row.caught.iter_mut().zip(before[i]) {
            *caught += usize::from(found > 0);
        }
        let gone = redacted[i].iter().all(|text| !text.contains(&sample.secret));
        row.redacted += usize::from(gone);
        row.after += after[i].iter().sum::<usize>();
        for rule in redacted[i].iter().flat_map(|text| placeholder_rules(text)) {
            if !row.rules.iter().any(|r| r == rule) {
                row.rules.push(rule.to_owned());
            }
        }
        let caught: Vec<&str> = (0..3).filter(|j| before[i][*j] > 0).map(|j| JUDGES[j]).collect();
        if !gone {
            failures.push(format!(
                "{} (caught by {caught:?}): dshkit left the secret",
                sample.family
            ));
        }
        for (judge, found) in JUDGES.iter().zip(after[i]) {
            if found > 0 {
                failures.push(format!(
                    "{}: {judge} finds {found} in what dshkit left: {:?}",
                    sample.family, redacted[i]
                ));
            }
        }
    }
    let mut table = format!(
        "{:<22} {:>7} {:>10} {:>14} {:>8} {:>7} {:>11}  dshkit rules\n",
        "family", "samples", "secretlint", "detect-secrets", "gitleaks", "dshkit", "found after"
    );
    let line = |name: &str, row: &Row| {
        let of = |n: usize| format!("{n}/{}", row.samples);
        format!(
            "{name:<22} {:>7} {:>10} {:>14} {:>8} {:>7} {:>11}  {}\n",
            row.samples,
            of(row.caught[0]),
            of(row.caught[1]),
            of(row.caught[2]),
            of(row.redacted),
            row.after,
            row.rules.join(" ")
        )
    };
    for (family, row) in &rows {
        table.push_str(&line(family, row));
    }
    // The look-alikes: what each judge flags in them, and what dshkit changed
    // (nothing: it must leave every one as it was).
    let mut looks = Row::default();
    for (i, text) in clean.iter().enumerate() {
        let at = corpus.len() + i;
        looks.samples += 1;
        for (caught, found) in looks.caught.iter_mut().zip(before[at]) {
            *caught += usize::from(found > 0);
        }
        let unchanged = redacted[at].iter().all(|left| left == text);
        looks.redacted += usize::from(!unchanged);
        if !unchanged {
            failures.push(format!("a look-alike was changed: {:?}", redacted[at]));
        }
    }
    table.push_str(&line("(clean look-alikes)", &looks));
    #[expect(clippy::print_stderr, reason = "the family table is the test's report")]
    let () = eprintln!("{table}");

    let caught_by: Vec<usize> = (0..3)
        .map(|j| (0..corpus.len()).filter(|i| before[*i][j] > 0).count())
        .collect();
    for (judge, caught) in JUDGES.iter().zip(&caught_by) {
        assert!(
            *caught >= MIN_CAUGHT_BY_EACH_JUDGE,
            "{judge} caught only {caught} of {} samples in clear text: is it working?",
            corpus.len()
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
