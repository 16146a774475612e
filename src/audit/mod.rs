//! `drip audit`: replay request logs through policies in one pass.

use crate::cli::AuditArgs;

pub fn run(_args: AuditArgs) -> anyhow::Result<u8> {
    anyhow::bail!("audit is not built yet")
}
