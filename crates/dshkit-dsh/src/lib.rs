//! DSH integration: the `@deepseek-ai/dsh-mcp-client` rows that connect a DSH
//! profile to dshkit ([`row`]), and edits of a profile's `cordis.patch.yml` that
//! never touch anything but dshkit's own block ([`patch`]), and the native DSH
//! plugin written into a profile ([`install`]); Echo's overlay, a separate patch
//! file whose row runs a server through `dshkit echo` ([`overlay`]).

pub mod install;
mod managed_row;
pub mod overlay;
pub mod patch;
pub mod row;
