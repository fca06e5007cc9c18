//! The page's main documents, to tell a superseded starting page from the page
//! itself. A document replaced by the same URL loaded again is superseded when
//! the dev server had said it was not the page yet:
//! - it answered "not yet" (HTTP 502, 503 or 504, as Nuxt's loading page does
//!   while its server starts);
//! - or the dev server answered one of its modules "outdated" (Vite's HTTP 504
//!   `Outdated Optimize Dep` when it re-optimises the dependencies a first load
//!   discovered, `Outdated Request` when it restarts), and reloads the page.
//!
//! What a superseded document did belongs to no page that is judged.

use std::collections::VecDeque;

use crate::runtime::ready::{Answer, classify};

/// Main-frame document responses remembered until their document commits.
const MAX_PENDING_DOCUMENTS: usize = 8;
/// Superseded documents remembered, so what they still report is dropped.
const MAX_SUPERSEDED: usize = 16;

/// A committed main document.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Document {
    loader: String,
    url: String,
    status: Option<u16>,
    /// The dev server answered one of its modules "outdated": a reload follows.
    stale: bool,
}

/// The reason phrases with which a dev server answers a module request of a
/// page it is about to reload (Vite's, with HTTP 504).
const OUTDATED_MODULE_ANSWERS: [&str; 2] = ["Outdated Optimize Dep", "Outdated Request"];

/// Whether a subresource's answer says its page is outdated and will be
/// reloaded by the dev server (not that the module is broken: Vite's
/// `Optimize Deps Processing Error` is a failure like any other).
pub(crate) fn is_outdated_module_answer(status: u64, status_text: &str) -> bool {
    status == 504 && OUTDATED_MODULE_ANSWERS.contains(&status_text.trim())
}

/// The main frame's documents as their events arrive.
#[derive(Debug, Default)]
pub(crate) struct MainDocuments {
    /// The main frame, once a navigation named it.
    frame: Option<String>,
    current: Option<Document>,
    /// Document responses (loader, status) not yet committed.
    responses: VecDeque<(String, u16)>,
    superseded: VecDeque<String>,
}

/// A document superseded by the same URL loaded again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Superseded {
    /// Its loader: the requests it made carry it.
    pub(crate) loader: String,
    /// The status of the document that replaced it.
    pub(crate) successor_status: Option<u16>,
}

impl MainDocuments {
    /// A `Network.responseReceived` of type `Document`.
    pub(crate) fn response(&mut self, frame: &str, loader: &str, status: u16) {
        if self.frame.as_deref().is_some_and(|main| main != frame) {
            return; // an iframe's document
        }
        if self.responses.len() >= MAX_PENDING_DOCUMENTS {
            self.responses.pop_front();
        }
        self.responses.push_back((loader.to_owned(), status));
    }

    /// A module of the document of `loader` was answered "outdated"
    /// ([`is_outdated_module_answer`]).
    pub(crate) fn outdated(&mut self, loader: &str) {
        if let Some(current) = self.current.as_mut().filter(|c| c.loader == loader) {
            current.stale = true;
        }
    }

    /// Whether the current document waits for the reload its dev server
    /// announced by answering one of its modules "outdated".
    pub(crate) fn awaiting_reload(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.stale)
    }

    /// A `Page.frameNavigated` of the main frame: the document of `loader` at
    /// `url` committed. Returns the document it supersedes, if it was a "not
    /// yet" answer for the same URL or had a module answered "outdated".
    pub(crate) fn committed(&mut self, frame: &str, loader: &str, url: &str) -> Option<Superseded> {
        self.frame = Some(frame.to_owned());
        let status = self
            .responses
            .iter()
            .rev()
            .find(|(l, _)| l == loader)
            .map(|(_, status)| *status);
        self.responses.retain(|(l, _)| l != loader);
        let new = Document {
            loader: loader.to_owned(),
            url: url.to_owned(),
            status,
            stale: false,
        };
        let old = self.current.replace(new);
        let old = old.filter(|old| {
            old.loader != loader
                && old.url == url
                && (old.stale || old.status.is_some_and(|s| classify(s) == Answer::NotYet))
        })?;
        if self.superseded.len() >= MAX_SUPERSEDED {
            self.superseded.pop_front();
        }
        self.superseded.push_back(old.loader.clone());
        Some(Superseded {
            loader: old.loader,
            successor_status: status,
        })
    }

    /// Whether what a request of `loader` reports belongs to a superseded page.
    pub(crate) fn is_superseded(&self, loader: Option<&str>) -> bool {
        loader.is_some_and(|loader| self.superseded.iter().any(|l| l == loader))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_not_yet_page_reloaded_at_the_same_url_is_superseded() {
        let mut documents = MainDocuments::default();
        documents.response("main", "L1", 503);
        assert_eq!(documents.committed("main", "L1", "http://x/"), None);
        documents.response("main", "L2", 200);
        assert_eq!(
            documents.committed("main", "L2", "http://x/"),
            Some(Superseded {
                loader: "L1".into(),
                successor_status: Some(200)
            })
        );
        assert!(documents.is_superseded(Some("L1")));
        assert!(!documents.is_superseded(Some("L2")));
    }

    #[test]
    fn a_page_whose_module_was_answered_outdated_is_superseded_by_its_reload() {
        let mut documents = MainDocuments::default();
        documents.response("main", "L1", 200);
        documents.committed("main", "L1", "http://x/a?q=1");
        assert!(!documents.awaiting_reload());
        // Another loader's answer (a document already gone) marks nothing.
        documents.outdated("L0");
        assert!(!documents.awaiting_reload());
        documents.outdated("L1");
        assert!(documents.awaiting_reload());
        documents.response("main", "L2", 200);
        assert_eq!(
            documents.committed("main", "L2", "http://x/a?q=1"),
            Some(Superseded {
                loader: "L1".into(),
                successor_status: Some(200)
            })
        );
        assert!(!documents.awaiting_reload(), "the reload came");
        assert!(documents.is_superseded(Some("L1")));
        // Outdated, then moved elsewhere: not the reload, its failures stay.
        documents.outdated("L2");
        documents.response("main", "L3", 200);
        assert_eq!(documents.committed("main", "L3", "http://x/b"), None);
    }

    #[test]
    fn only_the_dev_servers_outdated_answers_announce_a_reload() {
        assert!(is_outdated_module_answer(504, "Outdated Optimize Dep"));
        assert!(is_outdated_module_answer(504, "Outdated Request"));
        // A module the server could not build, or another status: a failure.
        assert!(!is_outdated_module_answer(504, "Optimize Deps Processing Error"));
        assert!(!is_outdated_module_answer(504, "Gateway Timeout"));
        assert!(!is_outdated_module_answer(500, "Outdated Optimize Dep"));
    }

    #[test]
    fn an_error_page_or_a_move_elsewhere_is_never_superseded() {
        // The app's own error, reloaded: it is the page, and counts.
        let mut documents = MainDocuments::default();
        documents.response("main", "L1", 500);
        documents.committed("main", "L1", "http://x/");
        documents.response("main", "L2", 200);
        assert_eq!(documents.committed("main", "L2", "http://x/"), None);
        // A "not yet" page that moves to another URL: its failures stay.
        let mut documents = MainDocuments::default();
        documents.response("main", "L1", 503);
        documents.committed("main", "L1", "http://x/");
        documents.response("main", "L2", 200);
        assert_eq!(documents.committed("main", "L2", "http://x/elsewhere"), None);
        // An iframe's 503 is not the main document's.
        let mut documents = MainDocuments::default();
        documents.response("main", "L1", 200);
        documents.committed("main", "L1", "http://x/");
        documents.response("frame-2", "L9", 503);
        documents.response("main", "L2", 200);
        assert_eq!(documents.committed("main", "L2", "http://x/"), None);
    }
}
