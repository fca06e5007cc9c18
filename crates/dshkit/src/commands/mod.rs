//! One module per command.

pub(crate) mod check;
pub(crate) mod devtools;
pub(crate) mod doctor;
pub(crate) mod dsh;
pub(crate) mod echo;
pub(crate) mod liveloop;
pub(crate) mod mcp;
pub(crate) mod settings;
