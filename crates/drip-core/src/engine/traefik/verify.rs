//! `--verify-column` for a Traefik config: each row's fate against the
//! status Traefik logged (`DownstreamStatus`): 429 is a refusal, anything
//! else a request the limits let through.

use crate::engine::outcome::{FIRST_DISAGREEMENTS, VerifyReport, VerifyRow};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Fate {
    Passed,
    Delayed,
    Refused,
}

impl Fate {
    fn text(self) -> &'static str {
        match self {
            Fate::Passed => "passed",
            Fate::Delayed => "delayed",
            Fate::Refused => "refused (429)",
        }
    }
}

pub(super) struct Verify {
    pub(super) col: usize,
    column: String,
    files: Vec<String>,
    rows: u64,
    agreed: u64,
    confusion: BTreeMap<(Fate, bool), u64>,
    first: Vec<VerifyRow>,
}

impl Verify {
    pub(super) fn new(col: usize, column: &str, files: Vec<String>) -> Verify {
        Verify {
            col,
            column: column.to_string(),
            files,
            rows: 0,
            agreed: 0,
            confusion: BTreeMap::new(),
            first: Vec::new(),
        }
    }

    /// A row: drip's fate against the logged status.
    pub(super) fn record(&mut self, drip: Fate, logged: &[u8], (file, line): (u32, u64)) {
        let refused = logged.trim_ascii() == b"429";
        self.rows += 1;
        *self.confusion.entry((drip, refused)).or_default() += 1;
        if (drip == Fate::Refused) == refused {
            self.agreed += 1;
        } else if self.first.len() < FIRST_DISAGREEMENTS {
            self.first.push(VerifyRow {
                at: format!("{}:{line}", self.files[file as usize]),
                emulated: drip.text().into(),
                logged: String::from_utf8_lossy(logged).into_owned(),
            });
        }
    }

    pub(super) fn report(&mut self) -> VerifyReport {
        let confusion = (self.confusion.iter())
            .map(|((d, r), n)| {
                let logged = if *r { "429" } else { "other" };
                (d.text().to_string(), logged.to_string(), *n)
            })
            .collect();
        let counts = [self.rows, self.agreed, 0, 0];
        VerifyReport::new(
            &self.column,
            counts,
            confusion,
            std::mem::take(&mut self.first),
        )
    }
}
