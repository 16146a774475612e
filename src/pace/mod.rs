//! `drip pace`: stdin lines to stdout through a shaper on a monotonic clock.

use crate::cli::PaceArgs;

pub fn run(_args: PaceArgs) -> anyhow::Result<u8> {
    anyhow::bail!("pace is not built yet")
}
