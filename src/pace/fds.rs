//! Open files for the commands: each running command holds two pipes
//! (and a pidfd when there is room), so `-j` is bounded by the open-file
//! limit. The soft limit is raised toward the hard one as far as `-j`
//! needs, no further (the commands inherit it, and some programs slow
//! down or misbehave with a huge one), and a `-j` beyond what that allows
//! runs fewer at once, with one note, instead of ending the run at the
//! first EMFILE.

/// Descriptors kept for the rest of the run (inputs, outputs, the journal,
/// the relay's own).
const MARGIN: u64 = 64;

/// The open-file limits, soft and hard.
fn limits() -> Option<libc::rlimit> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) fills the struct it is given.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim)
}

/// The soft open-file limit (`None`: unknown).
pub(super) fn soft_limit() -> Option<u64> {
    limits().map(|l| l.rlim_cur)
}

/// Raises the soft open-file limit as far as `jobs` commands need (two
/// pipes and a pidfd each, beside [`MARGIN`]), the hard limit at most;
/// returns the soft limit in force (`None`: unknown).
pub(super) fn raise_for(jobs: usize) -> Option<u64> {
    let mut lim = limits()?;
    let need = MARGIN.saturating_add((jobs as u64).saturating_mul(3));
    if lim.rlim_cur < need {
        let raised = libc::rlimit {
            rlim_cur: need.min(lim.rlim_max),
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit(2) reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = raised.rlim_cur;
        }
    }
    Some(lim.rlim_cur)
}

/// How many of `jobs` commands fit under `limit` open files (at least one).
pub(super) fn jobs_that_fit(jobs: usize, limit: u64) -> usize {
    let fit = limit.saturating_sub(MARGIN) / 2;
    jobs.min(usize::try_from(fit).unwrap_or(usize::MAX)).max(1)
}

/// Whether `e` says the process (or system) is out of descriptors.
pub(super) fn out_of_files(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
            .is_some_and(|n| n == libc::EMFILE || n == libc::ENFILE)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_descriptors_a_command_beside_the_margin() {
        assert_eq!(jobs_that_fit(64, 1024), 64);
        assert_eq!(jobs_that_fit(500, 1024), 480);
        assert_eq!(jobs_that_fit(500, 10), 1);
        assert!(out_of_files(&anyhow::Error::from(
            std::io::Error::from_raw_os_error(libc::EMFILE)
        )));
        assert!(!out_of_files(&anyhow::anyhow!("other")));
    }
}
