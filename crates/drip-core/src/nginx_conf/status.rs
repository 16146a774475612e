//! nginx's `$limit_req_status`: what nginx logs for each request.

/// nginx's `$limit_req_status` values; `None` is `-` (no limit applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    None,
    Passed,
    Delayed,
    Rejected,
    DelayedDryRun,
    RejectedDryRun,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Passed,
        Status::Delayed,
        Status::Rejected,
        Status::DelayedDryRun,
        Status::RejectedDryRun,
        Status::None,
    ];

    pub fn text(self) -> &'static str {
        match self {
            Status::None => "-",
            Status::Passed => "PASSED",
            Status::Delayed => "DELAYED",
            Status::Rejected => "REJECTED",
            Status::DelayedDryRun => "DELAYED_DRY_RUN",
            Status::RejectedDryRun => "REJECTED_DRY_RUN",
        }
    }

    /// A logged value; `-` and empty are `None`.
    pub fn parse(text: &[u8]) -> Option<Status> {
        let t = text.trim_ascii();
        Some(match t {
            b"" | b"-" => Status::None,
            _ => *Status::ALL
                .iter()
                .find(|s| s.text().as_bytes().eq_ignore_ascii_case(t))?,
        })
    }
}
