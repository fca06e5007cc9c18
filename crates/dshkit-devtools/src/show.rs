//! What `dshkit devtools targets|snapshot|event|fiber` show, one workflow over
//! either [`Route`]: the same text and the same JSON through the endpoint and on
//! the collector's socket, the route named in one field (`route`).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::agent::{AgentError, EVENT, FIBER, SECTIONS, SNAPSHOT};
use crate::route::{Route, object};
use crate::text;
use crate::topology::{Event, Fiber, Listener};

/// What a command shows: its text, and its JSON (`--json`).
pub type Shown = (String, Value);

/// Items the CLI asks for a page at a time: a page of 100 fibers with their
/// effect labels could pass the endpoint's 64 KiB bound on a result.
pub const CLI_PAGE: usize = 50;

/// The way a command reached its targets: `{"endpoint": URL}` or
/// `{"registry": DIR}` (the collector's socket, found in that registry).
#[derive(Debug, Clone)]
pub enum Via {
    Endpoint(String),
    Socket(PathBuf),
}

impl Via {
    pub fn json(&self) -> Value {
        match self {
            Self::Endpoint(url) => json!({"endpoint": url}),
            Self::Socket(registry) => json!({"registry": registry}),
        }
    }
}

/// A step of a command that failed on either route: an answer it cannot use
/// as it is, or the file it was asked to write.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CommandFailed(pub String);

/// `{route, targets}`, and a line per target (or why there is none).
pub fn targets(via: &Via, targets: &[Value]) -> Shown {
    let text = if targets.is_empty() {
        match via {
            Via::Endpoint(url) => format!(
                "no debug targets behind the DevTools endpoint {url}: no live DSH runs the dshkit plugin with the collector\n"
            ),
            Via::Socket(registry) => format!(
                "no debug targets in {}: no live DSH runs the dshkit plugin with the collector (`dshkit dsh install --devtools`)\n",
                registry.display()
            ),
        }
    } else {
        targets
            .iter()
            .map(|t| {
                text::target_line(
                    t["id"].as_str().unwrap_or_default(),
                    t["label"].as_str().unwrap_or_default(),
                    &t["pid"],
                    t["problem"].as_str(),
                )
            })
            .collect()
    };
    (text, json!({"route": via.json(), "targets": targets}))
}

/// Every item of the catalog at `key` of `tool`'s answer, page by page; a page
/// the endpoint had to cut to fit its bound is refused, never read as whole.
/// `limit` items a page.
pub(crate) async fn all_pages<R: Route>(
    route: &mut R,
    tool: &str,
    (rest, limit): (&Map<String, Value>, usize),
    key: &str,
) -> Result<Vec<Value>, R::Error>
where
    R::Error: From<CommandFailed>,
{
    let mut items = Vec::new();
    let mut arguments = rest.clone();
    arguments.insert("limit".to_owned(), json!(limit));
    loop {
        let page = route.call(tool, arguments.clone()).await?;
        if page.get("truncatedBytes").is_some() {
            return Err(CommandFailed(format!(
                "a page of {key} was cut to fit the DevTools endpoint's bound on a result"
            ))
            .into());
        }
        let catalog = &page[key];
        items.extend(catalog["items"].as_array().cloned().unwrap_or_default());
        match catalog["nextCursor"].as_str() {
            Some(cursor) => {
                arguments.insert("cursor".to_owned(), json!(cursor));
            }
            None => return Ok(items),
        }
    }
}

/// The snapshot's sections (`summary`, `events`, `fibers`, `dispatches`,
/// `profiler`, `candidates`; each catalog read whole) of `target`, with the
/// route; its text, the counts and every candidate.
pub async fn snapshot<R: Route>(route: &mut R, via: &Via, target: &str) -> Result<Shown, R::Error>
where
    R::Error: From<CommandFailed>,
{
    let mut value = object(json!({"route": via.json(), "target": target}));
    let objects = route
        .call(SNAPSHOT, object(json!({"sections": ["summary", "profiler"]})))
        .await?;
    for section in SECTIONS {
        let shown = match section {
            "summary" | "profiler" => objects[section].clone(),
            catalog => Value::Array(
                all_pages(
                    route,
                    SNAPSHOT,
                    (&object(json!({"sections": [catalog]})), CLI_PAGE),
                    catalog,
                )
                .await?,
            ),
        };
        value.insert(section.to_owned(), shown);
    }
    let summary = &value["summary"];
    let count = |key: &str| usize::try_from(summary[key].as_u64().unwrap_or_default()).unwrap_or(usize::MAX);
    let text = text::counts_text(
        target,
        [
            count("fibers"),
            count("events"),
            count("services"),
            count("entries"),
        ],
        value["candidates"].as_array().map_or(&[][..], Vec::as_slice),
    );
    Ok((text, Value::Object(value)))
}

fn parse<T: serde::de::DeserializeOwned>(items: Vec<Value>) -> Result<Vec<T>, CommandFailed> {
    items
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .map_err(|e| CommandFailed(format!("an item the command cannot read: {e}")))
}

/// One event's listeners in dispatch order (`dshkit devtools event`).
pub async fn event<R: Route>(route: &mut R, name: &str) -> Result<Shown, R::Error>
where
    R::Error: From<CommandFailed>,
{
    let listeners = all_pages(
        route,
        EVENT,
        (&object(json!({"name": name})), CLI_PAGE),
        "listeners",
    )
    .await?;
    let event = Event {
        name: name.to_owned(),
        listeners: parse::<Listener>(listeners)?,
    };
    Ok((text::event_text(&event), json!(event)))
}

/// Fibers by uid or name (`dshkit devtools fiber`).
pub async fn fibers<R: Route>(route: &mut R, uid: Option<i64>, name: Option<&str>) -> Result<Shown, R::Error>
where
    R::Error: From<CommandFailed>,
{
    let mut rest = Map::new();
    if let Some(uid) = uid {
        rest.insert("uid".to_owned(), json!(uid));
    }
    if let Some(name) = name {
        rest.insert("name".to_owned(), json!(name));
    }
    let fibers = parse::<Fiber>(all_pages(route, FIBER, (&rest, CLI_PAGE), "fibers").await?)?;
    Ok((text::fibers_text(&fibers), json!(fibers)))
}

impl From<CommandFailed> for AgentError {
    fn from(failed: CommandFailed) -> Self {
        Self::Refused(failed.0)
    }
}
