//! Verification: the engine ([`engine::verify`]) over a preview session, with the
//! visual diff, the evidence store, the source fingerprint and the strict verdict.

pub mod diff;
pub mod engine;
pub mod evidence;
pub mod fingerprint;
pub mod html;
pub mod index;
pub mod junit;
mod report;
mod request;
pub mod verdict;

pub use engine::{
    Assertion, ReferenceSpec, Report, Step, VerifyContext, VerifyError, VerifyRequest, page_url,
    unverified_without_browser, verify,
};
pub use verdict::{Judgement, Verdict};
