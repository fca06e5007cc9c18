//! The page's main documents, to tell a superseded starting page from the page
//! itself: a document that answered "not yet" (HTTP 502, 503 or 504, as Nuxt's
//! loading page does while its server starts) and was then replaced by the same
//! URL loaded again is the server's way of saying "wait"; what it did belongs to
//! no page that is judged.

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

    /// A `Page.frameNavigated` of the main frame: the document of `loader` at
    /// `url` committed. Returns the document it supersedes, if it was a "not
    /// yet" answer for the same URL.
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
        };
        let old = self.current.replace(new);
        let old = old.filter(|old| {
            old.loader != loader
                && old.url == url
                && old.status.is_some_and(|s| classify(s) == Answer::NotYet)
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
