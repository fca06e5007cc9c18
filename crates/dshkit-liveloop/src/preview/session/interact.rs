//! Interaction: an [`Action`] on an element named by a ref from the last snapshot
//! (or by role and name), sent as browser input, then settled.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::settle::{DEFAULT_SETTLE_DEADLINE, Mark};
use super::{PreviewSession, Target};
use crate::preview::error::PreviewError;
use crate::preview::policy::OriginError;
use crate::preview::snapshot::{Snapshot, parse_ref, text_includes_expression};

/// Longest text `fill`/`type` accept (characters).
pub const MAX_INPUT_CHARS: usize = 10_000;

/// The longest a wait may last.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// How many times an action by role and name looks its element up again in a
/// fresh snapshot when the page changed since the last one.
const ROLE_NAME_REREADS: usize = 2;

/// Where Chromium puts a document whose load failed at the network level.
const CHROMIUM_ERROR_PAGE: &str = "chrome-error://";

/// An interaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Click(Target),
    Fill(Target, String),
    Type(Target, String),
    Press(String),
    Select(Target, String),
    Hover(Target),
    Scroll {
        target: Option<Target>,
        delta_y: i32,
    },
    Navigate(String),
    Reload,
    Back,
    Forward,
    /// Waits until the page text contains `text` and/or its URL contains `url`,
    /// at most `timeout` (capped at [`MAX_WAIT`]).
    WaitFor {
        text: Option<String>,
        url: Option<String>,
        timeout: Duration,
    },
}

impl Action {
    /// Whether the first thing the action does in the page is a script (finding
    /// or focusing its element), before any input event.
    fn starts_with_page_script(&self) -> bool {
        matches!(
            self,
            Self::Click(_) | Self::Hover(_) | Self::Fill(..) | Self::Type(..) | Self::Select(..)
        )
    }

    /// Whether the action names its element by role and name.
    fn targets_role_name(&self) -> bool {
        let target = match self {
            Self::Click(target)
            | Self::Hover(target)
            | Self::Fill(target, _)
            | Self::Type(target, _)
            | Self::Select(target, _) => Some(target),
            Self::Scroll { target, .. } => target.as_ref(),
            Self::Press(_)
            | Self::Navigate(_)
            | Self::Reload
            | Self::Back
            | Self::Forward
            | Self::WaitFor { .. } => None,
        };
        matches!(target, Some(Target::RoleName { .. }))
    }
}

/// The JavaScript expression for the live element behind `reference` (from the
/// snapshot's registry), or `null` once it left the document.
fn element_js(reference: &str) -> String {
    // Only refs that passed `parse_ref` get here; quoting keeps any other text inert.
    let quoted = serde_json::to_string(reference).expect("a string serializes");
    format!(
        "((r) => {{ const w = globalThis[Symbol.for('dshkit.refs')]?.get(r); const el = w && w.deref(); return el && el.isConnected ? el : null; }})({quoted})"
    )
}

impl PreviewSession {
    /// The ref an interaction acts on, checked against the current generation.
    fn resolve(&self, target: &Target) -> Result<String, PreviewError> {
        let shared = self.shared.lock().expect("lock");
        match target {
            Target::Ref(reference) => {
                let (generation, _) =
                    parse_ref(reference).ok_or_else(|| PreviewError::BadRef(reference.clone()))?;
                if generation != shared.generation {
                    return Err(PreviewError::StaleElementRef {
                        reference: reference.clone(),
                        given: generation,
                        current: shared.generation,
                    });
                }
                Ok(reference.clone())
            }
            Target::RoleName { role, name } => {
                let found = shared
                    .last
                    .as_ref()
                    .map(|s| s.find(role, name))
                    .unwrap_or_default();
                match found.as_slice() {
                    [] => Err(PreviewError::ElementNotFound {
                        role: role.clone(),
                        name: name.clone(),
                    }),
                    [one] => Ok(one.reference.clone().expect("find returns nodes with refs")),
                    many => Err(PreviewError::AmbiguousElement {
                        role: role.clone(),
                        name: name.clone(),
                        count: many.len(),
                        refs: many
                            .iter()
                            .filter_map(|n| n.reference.clone())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }),
                }
            }
        }
    }

    /// Scrolls the element into view and returns its centre, or a stale-ref error
    /// when the page no longer has it.
    async fn element_center(&self, reference: &str) -> Result<(f64, f64), PreviewError> {
        let element = element_js(reference);
        let value = self
            .evaluate(&format!(
                "(() => {{ const e = {element}; if (!e) return null; \
                 e.scrollIntoView({{block: 'center', inline: 'center'}}); const r = e.getBoundingClientRect(); \
                 return {{x: r.left + r.width / 2, y: r.top + r.height / 2}}; }})()"
            ))
            .await?;
        match (value["x"].as_f64(), value["y"].as_f64()) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(PreviewError::DetachedElementRef(reference.to_owned())),
        }
    }

    async fn mouse(&self, kind: &str, x: f64, y: f64, extra: Value) -> Result<(), PreviewError> {
        let mut params = json!({ "type": kind, "x": x, "y": y });
        if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            params.extend(extra.clone());
        }
        self.page.call("Input.dispatchMouseEvent", params).await?;
        Ok(())
    }

    /// Runs one interaction, serialised with the others, then settles and returns a
    /// fresh snapshot.
    pub async fn interact(&self, action: Action) -> Result<Snapshot, PreviewError> {
        let _serial = self.operation.lock().await;
        self.touch();
        let before = *self.loads.borrow();
        // The snapshot taken as the action settled, when there is one.
        let settled_snapshot = match action {
            Action::Navigate(url) => {
                let target = url::Url::parse(&self.origin())
                    .and_then(|base| base.join(&url))
                    .map_err(|_| PreviewError::BadUrl(OriginError::Invalid(url.clone())))?;
                self.goto(target.as_str()).await?
            }
            Action::Reload => {
                let (requests, failures) = self.observe(|o| (o.request_mark(), o.network.pushed()));
                self.page.call("Page.reload", json!({})).await?;
                let settled = self.wait_loaded(before, requests).await?;
                Some(self.refuse_error_page(settled, failures).await?)
            }
            Action::Back => {
                let failures = self.observe(|o| o.network.pushed());
                let settled = self.back(before).await?;
                Some(self.refuse_error_page(settled, failures).await?)
            }
            Action::Forward => {
                let failures = self.observe(|o| o.network.pushed());
                let settled = self.forward(before).await?;
                Some(self.refuse_error_page(settled, failures).await?)
            }
            Action::WaitFor { text, url, timeout } => {
                self.wait_for(text.as_deref(), url.as_deref(), timeout).await?;
                None
            }
            other => {
                // A role+name target is looked up in the last snapshot: take one if
                // there is none yet (there are no refs to retire then).
                if self.shared.lock().expect("lock").last.is_none() {
                    self.snapshot_now().await?;
                }
                // A role+name names whatever element has them now. When the page
                // re-rendered since the last snapshot (the element was replaced, or
                // has only just appeared), it is looked up again in a fresh one. No
                // input was sent then: each failure is found before the first event.
                let mut rereads = ROLE_NAME_REREADS;
                let mark = loop {
                    match self.mark_and_act(other.clone()).await {
                        Err(PreviewError::DetachedElementRef(_) | PreviewError::ElementNotFound { .. })
                            if rereads > 0 && other.targets_role_name() =>
                        {
                            rereads -= 1;
                            self.snapshot_now().await?;
                        }
                        acted => break acted?,
                    }
                };
                // A click may start a navigation: its document request holds the
                // settle, and then its load is awaited.
                let settled = self.settle(mark, DEFAULT_SETTLE_DEADLINE, true).await;
                if *self.loads.borrow() > before || settled.loading {
                    self.wait_loaded(before, mark.requests).await.ok().flatten()
                } else {
                    settled.snapshot
                }
            }
        };
        match settled_snapshot {
            Some(snapshot) => Ok(snapshot),
            None => self.snapshot_now().await,
        }
    }

    /// The page a reload or a step back loaded, unless Chromium shows its own error
    /// page there (the server did not answer): that load failed, and says so, with
    /// the document request's error seen since `failures` (a network mark).
    async fn refuse_error_page(
        &self,
        settled: Option<Snapshot>,
        failures: u64,
    ) -> Result<Snapshot, PreviewError> {
        let snapshot = match settled {
            Some(snapshot) => snapshot,
            None => self.snapshot_now().await?,
        };
        if !snapshot.url.starts_with(CHROMIUM_ERROR_PAGE) {
            return Ok(snapshot);
        }
        let failed = self.observe(|o| {
            o.network
                .since(failures)
                .filter(|e| e.resource_type.as_deref() == Some("Document"))
                .find_map(|e| e.error.clone().map(|error| (e.url.clone(), error)))
        });
        let (url, error) = match failed {
            Some(failed) => failed,
            None => {
                let history = self.page.call("Page.getNavigationHistory", json!({})).await?;
                let current = usize::try_from(history["currentIndex"].as_u64().unwrap_or(0)).unwrap_or(0);
                let url = history["entries"][current]["url"].as_str().unwrap_or("the page");
                (
                    url.to_owned(),
                    "the server did not answer (Chromium showed its error page)".to_owned(),
                )
            }
        };
        Err(PreviewError::NavigationFailed { url, error })
    }

    /// Marks the action's start and runs it.
    async fn mark_and_act(&self, action: Action) -> Result<Mark, PreviewError> {
        if action.starts_with_page_script() {
            // The action's first page command is a script, which the page runs
            // after the mark's (one session's scripts run in order): the two are
            // sent together.
            let (mark, ()) = futures::future::try_join(
                async { Ok::<_, PreviewError>(self.mark().await) },
                self.act(action),
            )
            .await?;
            Ok(mark)
        } else {
            let mark = self.mark().await;
            self.act(action).await?;
            Ok(mark)
        }
    }

    async fn wait_for(
        &self,
        text: Option<&str>,
        url: Option<&str>,
        timeout: Duration,
    ) -> Result<(), PreviewError> {
        if text.is_none() && url.is_none() {
            return Err(PreviewError::Interaction(
                "a wait needs `text`, `url` or both".into(),
            ));
        }
        let url_holds = url.map_or_else(
            || "true".to_owned(),
            |u| {
                let quoted = serde_json::to_string(u).expect("a string serializes");
                format!("location.href.includes({quoted})")
            },
        );
        let text_holds = text.map_or_else(|| "true".to_owned(), text_includes_expression);
        let expression = format!("({url_holds}) && ({text_holds})");
        let timeout = timeout.min(MAX_WAIT);
        let started = Instant::now();
        loop {
            if self.evaluate(&expression).await?.as_bool() == Some(true) {
                return Ok(());
            }
            if started.elapsed() >= timeout {
                let what = match (text, url) {
                    (Some(t), None) => format!("text {t:?}"),
                    (None, Some(u)) => format!("URL containing {u:?}"),
                    (Some(t), Some(u)) => format!("text {t:?} at a URL containing {u:?}"),
                    (None, None) => unreachable!("checked above"),
                };
                return Err(PreviewError::Timeout {
                    what,
                    ms: started.elapsed().as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The in-page actions (everything but navigation).
    async fn act(&self, action: Action) -> Result<(), PreviewError> {
        match action {
            Action::Click(target) => {
                let (x, y) = self.element_center(&self.resolve(&target)?).await?;
                // Sent together: the browser dispatches one page's input in order.
                futures::future::try_join3(
                    self.mouse("mouseMoved", x, y, json!({})),
                    self.mouse("mousePressed", x, y, json!({ "button": "left", "clickCount": 1 })),
                    self.mouse(
                        "mouseReleased",
                        x,
                        y,
                        json!({ "button": "left", "clickCount": 1 }),
                    ),
                )
                .await?;
            }
            Action::Hover(target) => {
                let (x, y) = self.element_center(&self.resolve(&target)?).await?;
                self.mouse("mouseMoved", x, y, json!({})).await?;
            }
            Action::Fill(_, text) | Action::Type(_, text) if text.chars().count() > MAX_INPUT_CHARS => {
                return Err(PreviewError::Interaction(format!(
                    "text longer than {MAX_INPUT_CHARS} characters"
                )));
            }
            Action::Fill(target, text) => {
                self.focus(&self.resolve(&target)?, true).await?;
                if text.is_empty() {
                    self.key("Backspace").await?;
                } else {
                    self.page
                        .call("Input.insertText", json!({ "text": text }))
                        .await?;
                }
            }
            Action::Type(target, text) => {
                self.focus(&self.resolve(&target)?, false).await?;
                self.page
                    .call("Input.insertText", json!({ "text": text }))
                    .await?;
            }
            Action::Press(key) => self.key(&key).await?,
            Action::Select(target, option) => self.select(&self.resolve(&target)?, &option).await?,
            Action::Scroll { target, delta_y } => {
                let (x, y) = match target {
                    Some(target) => self.element_center(&self.resolve(&target)?).await?,
                    None => {
                        let (width, height, _, _) = self.viewport().metrics();
                        (f64::from(width) / 2.0, f64::from(height) / 2.0)
                    }
                };
                self.mouse("mouseWheel", x, y, json!({ "deltaX": 0, "deltaY": delta_y }))
                    .await?;
            }
            Action::Navigate(_)
            | Action::Reload
            | Action::Back
            | Action::Forward
            | Action::WaitFor { .. } => {
                unreachable!("handled by interact")
            }
        }
        Ok(())
    }

    async fn select(&self, reference: &str, option: &str) -> Result<(), PreviewError> {
        let option = serde_json::to_string(option).expect("a string serializes");
        let element = element_js(reference);
        let chosen = self
            .evaluate(&format!(
                "(() => {{ const e = {element}; if (!e) return 'detached'; \
                 if (e.tagName !== 'SELECT') return 'not a select element'; const want = {option}; \
                 const o = [...e.options].find(o => o.value === want || o.label.trim() === want); if (!o) return 'no option ' + want; \
                 e.value = o.value; e.dispatchEvent(new Event('input', {{bubbles: true}})); \
                 e.dispatchEvent(new Event('change', {{bubbles: true}})); return 'ok'; }})()"
            ))
            .await?;
        match chosen.as_str() {
            Some("ok") => Ok(()),
            Some("detached") => Err(PreviewError::DetachedElementRef(reference.to_owned())),
            other => Err(PreviewError::Interaction(
                other.unwrap_or("select failed").to_owned(),
            )),
        }
    }

    async fn focus(&self, reference: &str, select_all: bool) -> Result<(), PreviewError> {
        let element = element_js(reference);
        let focused = self
            .evaluate(&format!(
                "(() => {{ const e = {element}; if (!e) return 'detached'; \
                 e.scrollIntoView({{block: 'center'}}); e.focus(); let a = document.activeElement; \
                 while (a && a !== e && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; \
                 if (a !== e) return e.isConnected ? 'unfocused' : 'detached'; \
                 if ({select_all}) {{ if (typeof e.select === 'function') e.select(); \
                 else if (e.isContentEditable) document.execCommand('selectAll'); }} return 'focused'; }})()"
            ))
            .await?;
        match focused.as_str() {
            Some("focused") => Ok(()),
            Some("unfocused") => Err(PreviewError::Interaction(format!(
                "element `{reference}` did not take the focus, so nothing was typed: a modal dialog may cover it, \
                 or it is disabled or cannot be edited; take a new snapshot"
            ))),
            _ => Err(PreviewError::DetachedElementRef(reference.to_owned())),
        }
    }

    async fn key(&self, key: &str) -> Result<(), PreviewError> {
        let (code, key_code, text) = match key {
            "Enter" => ("Enter", 13, Some("\r")),
            "Tab" => ("Tab", 9, None),
            "Escape" => ("Escape", 27, None),
            "Backspace" => ("Backspace", 8, None),
            "Delete" => ("Delete", 46, None),
            "ArrowUp" => ("ArrowUp", 38, None),
            "ArrowDown" => ("ArrowDown", 40, None),
            "ArrowLeft" => ("ArrowLeft", 37, None),
            "ArrowRight" => ("ArrowRight", 39, None),
            "Home" => ("Home", 36, None),
            "End" => ("End", 35, None),
            "PageUp" => ("PageUp", 33, None),
            "PageDown" => ("PageDown", 34, None),
            " " | "Space" => ("Space", 32, Some(" ")),
            other => {
                return Err(PreviewError::Interaction(format!(
                    "unsupported key `{other}`; use Enter, Tab, Escape, Backspace, Delete, arrows, Home, End, PageUp, PageDown or Space"
                )));
            }
        };
        let key_name = if key == "Space" { " " } else { key };
        let mut down =
            json!({ "type": "keyDown", "key": key_name, "code": code, "windowsVirtualKeyCode": key_code });
        if let Some(text) = text {
            down["text"] = json!(text);
        }
        self.page.call("Input.dispatchKeyEvent", down).await?;
        self.page
            .call(
                "Input.dispatchKeyEvent",
                json!({ "type": "keyUp", "key": key_name, "code": code, "windowsVirtualKeyCode": key_code }),
            )
            .await?;
        Ok(())
    }
}
