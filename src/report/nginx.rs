//! The config sections of an audit's page: per nginx.conf its locations
//! (per haproxy.cfg its proxies), then the verification against the
//! logged `$limit_req_status` (termination state; per Traefik config its
//! routers, against `DownstreamStatus`). Scripts get each kind
//! of table once for every config, with a leading `policy` column.

use super::page::{Block, Page, Shown, Table};
use super::{
    Column, Human, NginxLocationRow, NginxReport, PolicyReport, Report, VerifyReport, VerifyRow,
    pct,
};

pub const LOCATIONS: &[Column<NginxLocationRow>] = &[
    Column::text("location", |r, _| r.location.clone()),
    Column::text("limit_req", |r, _| r.limits.clone()),
    Column::num("requests", |r, _| r.requests.to_string()),
    Column::num("passed", |r, _| r.passed.to_string()),
    Column::num("delayed", |r, _| r.delayed.to_string()),
    Column::num("rejected", |r, _| r.rejected.to_string()),
    Column::num("no limit", |r, _| r.unlimited.to_string()),
];

/// A haproxy.cfg's proxies: rows that entered each, and how they left it
/// (passed on with a counter tracked, refused by deny or tarpit, passed on
/// with none tracked).
pub const PROXIES: &[Column<NginxLocationRow>] = &[
    Column::text("proxy", |r, _| r.location.clone()),
    Column::text("rules", |r, _| r.limits.clone()),
    Column::num("requests", |r, _| r.requests.to_string()),
    Column::num("passed", |r, _| r.passed.to_string()),
    Column::num("refused", |r, _| r.rejected.to_string()),
    Column::num("untracked", |r, _| r.unlimited.to_string()),
];

/// A Traefik config's routers: rows each received, served at once, served
/// after a wait, refused with 429, or with no rate limit on the way.
pub const ROUTERS: &[Column<NginxLocationRow>] = &[
    Column::text("router", |r, _| r.location.clone()),
    Column::text("rate limits", |r, _| r.limits.clone()),
    Column::num("requests", |r, _| r.requests.to_string()),
    Column::num("passed", |r, _| r.passed.to_string()),
    Column::num("delayed", |r, _| r.delayed.to_string()),
    Column::num("refused", |r, _| r.rejected.to_string()),
    Column::num("no limit", |r, _| r.unlimited.to_string()),
];

/// What a gateway's section calls its parts, and where a policy's report
/// keeps it.
struct Words {
    scopes: &'static str,
    columns: &'static [Column<NginxLocationRow>],
    status: &'static str,
    clock: &'static str,
    reorder: &'static str,
    of: fn(&PolicyReport) -> Option<&NginxReport>,
}

/// The gateways, in the order their sections are shown.
const GATEWAYS: &[Words] = &[
    Words {
        scopes: "locations",
        columns: LOCATIONS,
        status: "$limit_req_status",
        clock: "nginx's clock granularity",
        reorder: "nginx logs a delayed request when it completes",
        of: |p| p.nginx.as_ref(),
    },
    Words {
        scopes: "proxies",
        columns: PROXIES,
        status: "termination state",
        clock: "HAProxy's clock",
        reorder: "HAProxy logs a request when it ends",
        of: |p| p.haproxy.as_ref(),
    },
    Words {
        scopes: "routers",
        columns: ROUTERS,
        status: "DownstreamStatus",
        clock: "Traefik's clock",
        reorder: "Traefik logs a request when it ends",
        of: |p| p.traefik.as_ref(),
    },
];

/// A confusion-table row: drip's status, the logged one, rows.
pub const CONFUSION: &[Column<(String, String, u64)>] = &[
    Column::text("drip", |r, _| r.0.clone()),
    Column::text("logged", |r, _| r.1.clone()),
    Column::num("rows", |r, _| r.2.to_string()),
];

pub const DISAGREEMENTS: &[Column<VerifyRow>] = &[
    Column::text("where", |r, _| r.at.clone()),
    Column::text("drip", |r, _| r.emulated.clone()),
    Column::text("logged", |r, _| r.logged.clone()),
];

/// The verification's figures, for scripts.
const VERIFY: &[Column<VerifyReport>] = &[
    Column::text("verify_column", |v, _| v.column.clone()),
    Column::num("rows", |v, _| v.rows.to_string()),
    Column::num("agreed", |v, _| v.agreed.to_string()),
    Column::num("disagreed", |v, _| v.disagreed.to_string()),
    Column::num("within_clock", |v, _| v.within_clock.to_string()),
    Column::num("reordered", |v, _| v.reordered.to_string()),
    Column::num("agreement_pct", |v, _| v.agreement_pct.to_string()),
];

/// A table for people.
fn table<T>(cols: &[Column<T>], rows: &[T]) -> Block {
    Block::Table(Table::from_columns(cols, rows, Human::Yes))
}

/// Adds a section per config audited, and the tables for scripts.
pub fn add(page: &mut Page, report: &Report) {
    let mut data = Data::default();
    for w in GATEWAYS {
        let configs: Vec<(&str, &NginxReport)> = (report.policies.iter())
            .filter_map(|p| (w.of)(p).map(|n| (p.label.as_str(), n)))
            .collect();
        for (label, n) in &configs {
            add_config(page, label, n, w);
        }
        data.add(page, w, &configs);
    }
    data.push(page);
}

/// One config's locations, notes and verification, for people.
fn add_config(page: &mut Page, label: &str, n: &NginxReport, w: &Words) {
    let heading = format!("{label}: {} of {}", w.scopes, n.config);
    page.add(Shown::ALL, Block::Heading(heading));
    page.add(Shown::ALL, table(w.columns, &n.locations));
    for note in &n.notes {
        page.add(Shown::ALL, Block::Paragraph(format!("note: {note}")));
    }
    let Some(v) = &n.verify else {
        return;
    };
    let mut heading = format!(
        "{label}: {} against column '{}': {} of {} rows agree ({}%)",
        w.status,
        v.column,
        v.agreed,
        v.rows,
        pct(v.agreement_pct),
    );
    if v.reordered > 0 {
        heading.push_str(&format!(
            " ({} in another order of their millisecond: {})",
            v.reordered, w.reorder
        ));
    }
    heading.push_str(&format!(", {} disagree", v.disagreed));
    if v.within_clock > 0 {
        heading.push_str(&format!(
            " ({} within {}: a 1 ms move decides them as logged)",
            v.within_clock, w.clock
        ));
    }
    page.add(Shown::ALL, Block::Heading(heading));
    page.add(Shown::ALL, table(CONFUSION, &v.confusion));
    if !v.first_disagreements.is_empty() {
        let heading = Block::Heading("first disagreements".into());
        page.add(Shown::TEXT | Shown::MARKDOWN, heading);
        let paragraph = Block::Paragraph("First disagreements:".into());
        page.add(Shown::HTML, paragraph);
        page.add(Shown::ALL, table(DISAGREEMENTS, &v.first_disagreements));
    }
}

/// Every config's verifications, confusion tables and first
/// disagreements, for scripts.
#[derive(Default)]
struct Data<'a> {
    verify: Vec<(&'a str, &'a VerifyReport)>,
    confusion: Vec<(&'a str, &'a (String, String, u64))>,
    first: Vec<(&'a str, &'a VerifyRow)>,
}

impl<'a> Data<'a> {
    /// The configs of one gateway: their parts' table now (when there are
    /// rows), their verifications for later.
    fn add(&mut self, page: &mut Page, w: &Words, configs: &[(&'a str, &'a NginxReport)]) {
        let mut scopes = Vec::new();
        for &(label, n) in configs {
            scopes.extend(n.locations.iter().map(|r| (label, r)));
            if let Some(v) = &n.verify {
                self.verify.push((label, v));
                self.confusion
                    .extend(v.confusion.iter().map(|r| (label, r)));
                self.first
                    .extend(v.first_disagreements.iter().map(|r| (label, r)));
            }
        }
        if !scopes.is_empty() {
            page.data.push(Table::tagged(w.columns, &scopes));
        }
    }

    fn push(self, page: &mut Page) {
        if !self.verify.is_empty() {
            page.data.push(Table::tagged(VERIFY, &self.verify));
        }
        if !self.confusion.is_empty() {
            page.data.push(Table::tagged(CONFUSION, &self.confusion));
        }
        if !self.first.is_empty() {
            page.data.push(Table::tagged(DISAGREEMENTS, &self.first));
        }
    }
}
