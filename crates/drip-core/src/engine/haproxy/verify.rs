//! `--verify-column` for a haproxy.cfg: each row's fate against the
//! termination state HAProxy logged (`PR` denied, `PT` tarpitted, `LR`
//! answered by HAProxy itself, anything else passed). HAProxy logs a
//! request when it ends, so requests of one millisecond on one counter
//! entry may be logged in another order than HAProxy took them: such a
//! group agrees when it has the same fates in any order (`reordered`).

use crate::engine::outcome::{FIRST_DISAGREEMENTS, VerifyReport, VerifyRow};
use std::collections::BTreeMap;

/// What became of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Fate {
    Passed,
    Denied,
    Tarpit,
    Answered,
}

impl Fate {
    pub(super) fn text(self) -> &'static str {
        match self {
            Fate::Passed => "passed",
            Fate::Denied => "denied",
            Fate::Tarpit => "tarpit",
            Fate::Answered => "answered",
        }
    }

    /// The fate a logged termination state (`PR--`, `----`, …) tells.
    pub(super) fn logged(state: &[u8]) -> Fate {
        match state.get(..2) {
            Some(b"PR") => Fate::Denied,
            Some(b"PT") => Fate::Tarpit,
            Some(b"LR") => Fate::Answered,
            _ => Fate::Passed,
        }
    }
}

/// One row waiting for the rest of its millisecond.
struct Pending {
    /// The counter entry it was counted on first (`None`: none).
    group: Option<(usize, u32)>,
    drip: Fate,
    logged: Fate,
    file: u32,
    line: u64,
}

pub(super) struct Verify {
    pub(super) col: usize,
    column: String,
    files: Vec<String>,
    ms: u64,
    pending: Vec<Pending>,
    rows: u64,
    agreed: u64,
    reordered: u64,
    confusion: BTreeMap<(Fate, Fate), u64>,
    first: Vec<VerifyRow>,
}

impl Verify {
    pub(super) fn new(col: usize, column: &str, files: Vec<String>) -> Verify {
        Verify {
            col,
            column: column.to_string(),
            files,
            ms: 0,
            pending: Vec::new(),
            rows: 0,
            agreed: 0,
            reordered: 0,
            confusion: BTreeMap::new(),
            first: Vec::new(),
        }
    }

    /// A row of millisecond `ms`: drip's fate against the logged state.
    pub(super) fn record(
        &mut self,
        ms: u64,
        group: Option<(usize, u32)>,
        drip: Fate,
        logged: &[u8],
        (file, line): (u32, u64),
    ) {
        if ms != self.ms {
            self.flush();
            self.ms = ms;
        }
        self.pending.push(Pending {
            group,
            drip,
            logged: Fate::logged(logged),
            file,
            line,
        });
    }

    /// Compares the rows of the millisecond gone, group by group.
    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let mut done = vec![false; pending.len()];
        for i in 0..pending.len() {
            if done[i] {
                continue;
            }
            let g = pending[i].group;
            let members: Vec<usize> = (i..pending.len())
                .filter(|&j| j == i || (!done[j] && g.is_some() && pending[j].group == g))
                .collect();
            let mut drip: Vec<Fate> = members.iter().map(|&j| pending[j].drip).collect();
            let mut logged: Vec<Fate> = members.iter().map(|&j| pending[j].logged).collect();
            drip.sort();
            logged.sort();
            let same_fates = drip == logged;
            for &j in &members {
                done[j] = true;
                let p = &pending[j];
                self.rows += 1;
                let (d, l) = if same_fates {
                    (p.logged, p.logged)
                } else {
                    (p.drip, p.logged)
                };
                *self.confusion.entry((d, l)).or_default() += 1;
                if d == l {
                    self.agreed += 1;
                    self.reordered += u64::from(p.drip != p.logged);
                } else if self.first.len() < FIRST_DISAGREEMENTS {
                    self.first.push(VerifyRow {
                        at: format!("{}:{}", self.files[p.file as usize], p.line),
                        emulated: d.text().into(),
                        logged: l.text().into(),
                    });
                }
            }
        }
    }

    pub(super) fn report(&mut self) -> VerifyReport {
        self.flush();
        let confusion = (self.confusion.iter())
            .map(|((d, l), n)| (d.text().to_string(), l.text().to_string(), *n))
            .collect();
        let counts = [self.rows, self.agreed, 0, self.reordered];
        VerifyReport::new(
            &self.column,
            counts,
            confusion,
            std::mem::take(&mut self.first),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_millisecond_on_one_entry_agrees_in_any_order() {
        let mut v = Verify::new(0, "termination_state", vec!["a.log".into()]);
        let e = Some((0, 7));
        // Logged: the denied request first (it ended first).
        v.record(5, e, Fate::Passed, b"PR--", (0, 1));
        v.record(5, e, Fate::Denied, b"----", (0, 2));
        // Another entry of the same millisecond does not mix in.
        v.record(5, Some((0, 8)), Fate::Passed, b"PT--", (0, 3));
        v.record(6, None, Fate::Answered, b"LR--", (0, 4));
        let r = v.report();
        assert_eq!((r.rows, r.agreed, r.reordered), (4, 3, 2));
        assert_eq!(r.first_disagreements[0].at, "a.log:3");
        assert_eq!(r.first_disagreements[0].logged, "tarpit");
    }
}
