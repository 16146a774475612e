//! `size --haproxy-cfg`'s report: per rate limit of the config, today's
//! limit and the sized one, what each refuses, and the patch.

use super::page::{Block, Page, Shown, Table, Verdict};
use super::{Column, Human, pct};
use serde::Serialize;

/// What `size --haproxy-cfg` found.
#[derive(Clone, Debug, Serialize)]
pub struct SizedCfg {
    pub config: String,
    pub limits: Vec<LimitRow>,
    /// The unified diff (none: nothing changes).
    pub patch: Option<String>,
    /// What `haproxy -c` said of the patched config.
    pub checked: String,
}

/// One rule refusing above a request rate.
#[derive(Clone, Debug, Serialize)]
pub struct LimitRow {
    pub proxy: String,
    pub line: usize,
    pub rule: String,
    pub today: u64,
    /// The limit the patch writes (today's when kept).
    pub sized: u64,
    /// The smallest limit that meets the targets.
    pub needed: u64,
    /// Rows the rule applies to that the targets count.
    pub rows: u64,
    /// Rows that entered its proxy.
    pub entered: u64,
    pub refused_today: u64,
    pub refused: u64,
    pub keys_hurt: u64,
    /// The sized limit meets the targets.
    pub meets: bool,
    pub notes: Vec<String>,
}

const LIMITS: &[Column<LimitRow>] = &[
    Column::text("proxy", |r, _| r.proxy.clone()),
    Column::num("line", |r, _| r.line.to_string()),
    Column::num("today", |r, _| r.today.to_string()),
    Column::num("sized", |r, _| r.sized.to_string()),
    Column::num("needed", |r, _| r.needed.to_string()),
    Column::num("rows", |r, _| r.rows.to_string()),
    Column::num("refused_today", |r, _| r.refused_today.to_string()),
    Column::num("refused", |r, _| r.refused.to_string()),
    Column::num("refused_pct", |r, h| {
        let p = match r.rows {
            0 => 0.0,
            n => r.refused as f64 * 100.0 / n as f64,
        };
        match h {
            Human::Yes => pct(p),
            Human::No => p.to_string(),
        }
    }),
    Column::num("keys_hurt", |r, _| r.keys_hurt.to_string()),
    Column::text("meets", |r, _| if r.meets { "yes" } else { "no" }.into()),
];

/// The report as a page.
pub fn page(s: &SizedCfg) -> Page<'_> {
    let mut page = Page::new(format!("drip size --haproxy-cfg {}", s.config), s);
    page.add(
        Shown::ALL,
        Block::Heading(format!("rate limits of {}", s.config)),
    );
    page.add(
        Shown::ALL,
        Block::Table(Table::from_columns(LIMITS, &s.limits, Human::Yes)),
    );
    for l in &s.limits {
        page.add(
            Shown::ALL,
            Block::Paragraph(format!("line {}: {} {}", l.line, l.proxy, l.rule)),
        );
        for n in &l.notes {
            page.add(
                Shown::ALL,
                Block::Paragraph(format!("  line {}: {n}", l.line)),
            );
        }
    }
    match &s.patch {
        Some(p) => {
            page.add(Shown::ALL, Block::Heading(format!("patch ({})", s.checked)));
            page.add(
                Shown::ALL,
                Block::Pre(p.lines().map(str::to_string).collect()),
            );
        }
        None => page.add(
            Shown::ALL,
            Block::Paragraph("no limit changes: no patch".into()),
        ),
    }
    page.data
        .push(Table::from_columns(LIMITS, &s.limits, Human::No));
    let missed = s.limits.iter().filter(|l| !l.meets).count();
    page.verdict = Some(Verdict {
        pass: missed == 0,
        line: match missed {
            0 => format!("{} rate limits sized", s.limits.len()),
            n => format!("{n} rate limits kept as written miss their targets"),
        },
        details: Vec::new(),
    });
    page
}
