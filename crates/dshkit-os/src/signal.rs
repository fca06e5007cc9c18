//! A person's request to stop: SIGINT or SIGTERM on Unix; Ctrl-C, Ctrl-Break or
//! the console closing on Windows.

use std::future::Future;

/// Installs the handlers now (so a request right after this returns is not
/// lost) and returns a future that resolves with the request's name.
pub fn stop_requested() -> std::io::Result<impl Future<Output = &'static str> + Send> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            }
        })
    }
    #[cfg(windows)]
    {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
        let mut interrupt = ctrl_c()?;
        let mut pause = ctrl_break()?;
        let mut close = ctrl_close()?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => "Ctrl-C",
                _ = pause.recv() => "Ctrl-Break",
                _ = close.recv() => "console closed",
            }
        })
    }
}
