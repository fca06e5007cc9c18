//! A browser: launched by us or reached at an existing endpoint. Contexts and
//! pages are created through the browser target; pages are driven through
//! flattened sessions.

use serde_json::{Value, json};

use crate::connection::{Connection, Event};
use crate::endpoint::Endpoint;
use crate::error::CdpError;
use crate::launch::{BrowserProcess, LaunchOptions, launch};

/// Where the browser came from.
#[derive(Debug)]
enum Origin {
    Launched(BrowserProcess),
    Connected,
}

/// A browser and the connection to it. It derefs to its [`Contexts`], the part
/// that makes contexts and pages.
#[derive(Debug)]
pub struct Browser {
    contexts: Contexts,
    origin: Origin,
    product: String,
}

impl std::ops::Deref for Browser {
    type Target = Contexts;

    fn deref(&self) -> &Contexts {
        &self.contexts
    }
}

/// Makes and disposes a browser's contexts and pages. Cheap to clone, so a
/// context can be prepared without holding the [`Browser`].
#[derive(Debug, Clone)]
pub struct Contexts {
    connection: Connection,
}

impl Browser {
    /// Launches Chromium and connects to it.
    pub async fn launch(options: &LaunchOptions) -> Result<Self, CdpError> {
        let process = launch(options).await?;
        let connection = Connection::connect(&process.ws_url).await?;
        Self::finish(connection, Origin::Launched(process)).await
    }

    /// Connects to a browser WebSocket endpoint (`ws://…/devtools/browser/…`).
    pub async fn connect_ws(ws_url: &str) -> Result<Self, CdpError> {
        Self::connect(&Endpoint::new(ws_url)).await
    }

    /// Connects to a browser's HTTP debugging endpoint (`http://host:port`), as
    /// remote browser pools expose it, by reading `/json/version`.
    pub async fn connect_http(base_url: &str) -> Result<Self, CdpError> {
        Self::connect(&Endpoint::new(base_url)).await
    }

    /// Connects to `endpoint`: its WebSocket, or the one its HTTP endpoint's
    /// `/json/version` names; the token goes with both requests, and the
    /// admission deadline bounds each (see [`Connection::connect_to`]).
    pub async fn connect(endpoint: &Endpoint) -> Result<Self, CdpError> {
        if endpoint.is_websocket() {
            let connection = Connection::connect_to(endpoint).await?;
            return Self::finish(connection, Origin::Connected).await;
        }
        let url = format!("{}/json/version", endpoint.url().trim_end_matches('/'));
        let error = |reason: String| CdpError::Connect {
            url: endpoint.at(&url).shown(),
            reason: endpoint.redact(&reason),
        };
        let client = reqwest::Client::builder()
            .timeout(endpoint.admit_deadline())
            .build()
            .map_err(|e| error(e.to_string()))?;
        let mut request = client.get(&url);
        if let Some(token) = endpoint.token().map_err(error)? {
            request = request.bearer_auth(token.expose());
        }
        let response = request.send().await.map_err(|e| error(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.bytes().await.unwrap_or_default();
            return Err(CdpError::Refused {
                endpoint: endpoint.at(&url).shown(),
                status: status.as_u16(),
                reason: crate::endpoint::refusal_reason(endpoint, status.as_u16(), Some(&body)),
            });
        }
        let version: Value = response.json().await.map_err(|e| error(e.to_string()))?;
        let ws = version["webSocketDebuggerUrl"]
            .as_str()
            .ok_or_else(|| error("no webSocketDebuggerUrl in /json/version".into()))?;
        let connection = Connection::connect_to(&endpoint.at(ws)).await?;
        Self::finish(connection, Origin::Connected).await
    }

    /// Closes the connection: a browser we connected to ends what it held for
    /// it (a pool frees the browser it gave this connection).
    pub fn close(&self) {
        self.contexts.connection.close();
    }

    async fn finish(connection: Connection, origin: Origin) -> Result<Self, CdpError> {
        let version = connection.call("Browser.getVersion", json!({}), None).await?;
        let product = version["product"].as_str().unwrap_or("unknown").to_owned();
        Ok(Self {
            contexts: Contexts { connection },
            origin,
            product,
        })
    }

    pub fn connection(&self) -> &Connection {
        &self.contexts.connection
    }

    /// `HeadlessChrome/156.0.8078.114` and the like.
    pub fn product(&self) -> &str {
        &self.product
    }

    /// The launched process, when we launched it.
    pub fn process(&self) -> Option<&BrowserProcess> {
        match &self.origin {
            Origin::Launched(process) => Some(process),
            Origin::Connected => None,
        }
    }

    /// Whether the browser can still take commands.
    pub fn is_alive(&mut self) -> bool {
        let running = match &mut self.origin {
            Origin::Launched(process) => process.is_running(),
            Origin::Connected => true,
        };
        running && !self.contexts.connection.is_closed()
    }

    /// A handle on this browser's contexts that outlives a borrow of it.
    pub fn contexts(&self) -> Contexts {
        self.contexts.clone()
    }
}

impl Contexts {
    /// A fresh, isolated browser context (its own cookies, storage and cache).
    pub async fn create_context(&self) -> Result<String, CdpError> {
        self.create_context_with_proxy(None).await
    }

    /// A fresh context whose every connection, loopback included, goes through
    /// the HTTP proxy at `proxy` (`http://127.0.0.1:PORT`) when given.
    pub async fn create_context_with_proxy(&self, proxy: Option<&str>) -> Result<String, CdpError> {
        let mut params = json!({ "disposeOnDetach": true });
        if let Some(proxy) = proxy {
            // `<-loopback>` removes Chromium's implicit bypass of loopback hosts.
            params["proxyServer"] = json!(proxy);
            params["proxyBypassList"] = json!("<-loopback>");
        }
        let reply = self
            .connection
            .call("Target.createBrowserContext", params, None)
            .await?;
        string_field(&reply, "browserContextId", "Target.createBrowserContext")
    }

    /// Closes a context and every page in it.
    pub async fn dispose_context(&self, context_id: &str) -> Result<(), CdpError> {
        self.connection
            .call(
                "Target.disposeBrowserContext",
                json!({ "browserContextId": context_id }),
                None,
            )
            .await?;
        Ok(())
    }

    /// A guard that disposes `context_id` when dropped, until it is disarmed: a
    /// context whose setup is abandoned midway (its task cancelled by a client)
    /// does not outlive the task.
    pub fn guard_context(&self, context_id: &str) -> ContextGuard {
        ContextGuard {
            connection: self.connection.clone(),
            context_id: Some(context_id.to_owned()),
        }
    }

    /// Opens `about:blank` in `context_id` and attaches a flattened session to it.
    /// Events of the page are routed to the returned [`Page`]'s receiver from the
    /// first one on.
    pub async fn create_page(&self, context_id: &str) -> Result<Page, CdpError> {
        let reply = self
            .connection
            .call(
                "Target.createTarget",
                json!({ "url": "about:blank", "browserContextId": context_id }),
                None,
            )
            .await?;
        let target_id = string_field(&reply, "targetId", "Target.createTarget")?;
        let reply = self
            .connection
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
                None,
            )
            .await?;
        let session_id = string_field(&reply, "sessionId", "Target.attachToTarget")?;
        let events = self.connection.subscribe(Some(&session_id));
        Ok(Page {
            connection: self.connection.clone(),
            target_id,
            session_id,
            events,
        })
    }
}

fn string_field(reply: &Value, field: &str, method: &str) -> Result<String, CdpError> {
    reply[field]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| CdpError::Unexpected {
            method: method.to_owned(),
            detail: format!("no {field} in {reply}"),
        })
}

/// A page target with its flattened session.
#[derive(Debug)]
pub struct Page {
    connection: Connection,
    pub target_id: String,
    pub session_id: String,
    /// Every event of this page, in order.
    pub events: tokio::sync::mpsc::Receiver<Event>,
}

impl Page {
    /// Sends a command to this page's session.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.connection.call(method, params, Some(&self.session_id)).await
    }

    /// A handle that can send commands to this page from another task, also
    /// with a time limit of their own.
    pub fn commands(&self) -> PageCommands {
        PageCommands {
            connection: self.connection.clone(),
            session_id: self.session_id.clone(),
        }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        self.connection.unsubscribe(Some(&self.session_id));
    }
}

/// Disposes its browser context on drop unless [`ContextGuard::disarm`]ed.
#[derive(Debug)]
#[must_use = "dropping the guard disposes the context at once"]
pub struct ContextGuard {
    connection: Connection,
    context_id: Option<String>,
}

impl ContextGuard {
    /// Keeps the context: its owner now disposes it.
    pub fn disarm(mut self) {
        self.context_id = None;
    }
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        let Some(context_id) = self.context_id.take() else {
            return;
        };
        // Drop cannot wait: the dispose is sent from a task of its own.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let connection = self.connection.clone();
        runtime.spawn(async move {
            let params = json!({ "browserContextId": context_id });
            if let Err(e) = connection
                .call("Target.disposeBrowserContext", params, None)
                .await
            {
                tracing::debug!(%e, "disposing an abandoned browser context failed");
            }
        });
    }
}

/// Sends commands to a page's session; cheap to clone.
#[derive(Debug, Clone)]
pub struct PageCommands {
    connection: Connection,
    session_id: String,
}

impl PageCommands {
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.connection.call(method, params, Some(&self.session_id)).await
    }

    /// Sends a command with its own time limit.
    pub async fn call_with_timeout(
        &self,
        method: &str,
        params: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, CdpError> {
        self.connection
            .call_with_timeout(method, params, Some(&self.session_id), timeout)
            .await
    }

    /// Commands to another session of the same connection (a target attached
    /// under this page), without its events.
    #[must_use]
    pub fn of_session(&self, session_id: &str) -> PageCommands {
        PageCommands {
            connection: self.connection.clone(),
            session_id: session_id.to_owned(),
        }
    }

    /// A target the browser attached under this page (`Target.attachedToTarget`,
    /// flattened: a worker, an iframe of its own), with its events from now on.
    /// Subscribe before the target runs (`waitForDebuggerOnStart`) to miss none.
    pub fn attached(&self, session_id: &str) -> AttachedTarget {
        AttachedTarget {
            events: self.connection.subscribe(Some(session_id)),
            commands: self.of_session(session_id),
        }
    }
}

/// A target attached under a page, and its events; its events stop being routed
/// when it is dropped.
#[derive(Debug)]
pub struct AttachedTarget {
    pub commands: PageCommands,
    pub events: tokio::sync::mpsc::Receiver<Event>,
}

impl Drop for AttachedTarget {
    fn drop(&mut self) {
        self.commands
            .connection
            .unsubscribe(Some(&self.commands.session_id));
    }
}
