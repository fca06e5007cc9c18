//! `dshkit doctor [--json]`.

use dshkit_env::Environment;
use dshkit_env::doctor::{self, Status};

use crate::exit;
use crate::output::{Color, Output};

pub(crate) async fn run(out: Output) -> u8 {
    let report = doctor::diagnose(&Environment::from_process()).await;
    if out.json {
        out.json(&report);
    } else {
        let mut text = format!(
            "dshkit {} doctor: {}\n",
            report.dshkit_version,
            if report.ok {
                out.paint("ready", Color::Green)
            } else {
                out.paint("not ready", Color::Red)
            }
        );
        for fact in &report.facts {
            let (word, color) = match fact.status {
                Status::Ok => ("ok", Color::Green),
                Status::Warn => ("warn", Color::Yellow),
                Status::Missing => ("missing", Color::Red),
            };
            text.push_str(&format!(
                "  {} {:<13} {}\n",
                out.paint(&format!("{word:<7}"), color),
                fact.id,
                fact.summary
            ));
            if let Some(fix) = &fact.fix {
                text.push_str(&format!(
                    "  {:<7} {:<13} {}\n",
                    "",
                    "",
                    out.paint(&format!("fix: {fix}"), Color::Dim)
                ));
            }
        }
        out.write(&text);
    }
    if report.ok {
        exit::SUCCESS
    } else {
        exit::PROBLEM_FOUND
    }
}
