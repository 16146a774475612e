//! The outliers a sizing left out of its targets (see `size::outliers`),
//! as data and as the table and lines people read.

use super::page::{Block, Page, Shown, Table};
use super::{Column, pct};
use serde::Serialize;

/// The keys found far outside the population, and the rule that found them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outliers {
    /// The rule, in words.
    pub rule: String,
    /// `--keep-outliers`: found and named, but sized for.
    pub kept: bool,
    pub keys: Vec<Outlier>,
}

/// One outlier.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outlier {
    pub key: String,
    pub requests: u64,
    /// Its share of the rows the limit sees, %.
    pub share_pct: f64,
    pub busiest_second: u64,
    pub busiest_minute: u64,
    pub busiest_hour: u64,
    /// The span it is furthest above the population at, in words.
    pub why: String,
    /// How often the recommendation (or the sized config) refuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<u64>,
    /// How often the config as written refuses it (`--nginx-conf`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_as_written: Option<u64>,
}

fn opt(n: Option<u64>) -> String {
    n.map_or(String::new(), |n| n.to_string())
}

/// The outlier columns.
pub const COLUMNS: &[Column<Outlier>] = &[
    Column::text("outlier", |o, _| o.key.clone()),
    Column::num("requests", |o, _| o.requests.to_string()),
    Column::num("share %", |o, _| pct(o.share_pct)),
    Column::num("busiest 1s", |o, _| o.busiest_second.to_string()),
    Column::num("busiest 1m", |o, _| o.busiest_minute.to_string()),
    Column::num("busiest 1h", |o, _| o.busiest_hour.to_string()),
    Column::num("refused", |o, _| opt(o.refused)),
];

/// With `--nginx-conf`: refused as written, then sized.
pub const CONF_COLUMNS: &[Column<Outlier>] = &[
    COLUMNS[0],
    COLUMNS[1],
    COLUMNS[2],
    COLUMNS[3],
    COLUMNS[4],
    COLUMNS[5],
    Column::num("refused as written", |o, _| opt(o.refused_as_written)),
    Column::num("refused sized", |o, _| opt(o.refused)),
];

impl Outliers {
    /// The line above the table: the rule, and what was done with them.
    pub fn heading(&self) -> String {
        let done = if self.kept {
            "kept in the targets (--keep-outliers)"
        } else {
            "left out of the targets (--keep-outliers sizes for them too)"
        };
        format!(
            "outliers, {done}: {} key{}; {}",
            self.keys.len(),
            if self.keys.len() == 1 { "" } else { "s" },
            self.rule
        )
    }

    /// What the pick does to each outlier, in words.
    pub fn verdicts(&self) -> Vec<String> {
        self.keys
            .iter()
            .filter_map(|o| {
                let r = o.refused?;
                let written = match o.refused_as_written {
                    Some(w) => format!(" (as written: {w})"),
                    None => String::new(),
                };
                Some(match r {
                    0 => format!(
                        "{}: {}; never refused{written}: the limit lets it in",
                        o.key, o.why
                    ),
                    n => format!(
                        "{}: {}; refused {n} of its {} requests{written}: the limit doing its job",
                        o.key, o.why, o.requests
                    ),
                })
            })
            .collect()
    }

    /// The heading, the table and the verdicts onto `page`, and the table
    /// for scripts; nothing when there are no outliers.
    pub fn add(&self, page: &mut Page, title: String) {
        if self.keys.is_empty() {
            return;
        }
        let conf = self.keys.iter().any(|o| o.refused_as_written.is_some());
        let cols = if conf { CONF_COLUMNS } else { COLUMNS };
        page.data
            .push(Table::from_columns(cols, &self.keys, super::Human::No));
        page.add(Shown::ALL, Block::Heading(title));
        page.add(Shown::ALL, Block::Paragraph(self.heading()));
        let people = Table::from_columns(cols, &self.keys, super::Human::Yes);
        page.add(Shown::ALL, Block::Table(people));
        page.add(Shown::ALL, Block::List(self.verdicts()));
    }
}
