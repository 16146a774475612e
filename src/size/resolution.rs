//! The log's time resolution. A log of whole seconds (the combined format,
//! epoch seconds) gives every request of a second the same instant, so a
//! page and its images, or ten requests spread over the second, all count
//! as one burst. `size` keeps that reading (the worst case: the log cannot
//! tell how they were spread, and an under-sized limit hurts real
//! clients), and sizes the log a second time with the requests of each
//! logged second spread evenly over it, to show how much of the answer
//! comes from the log's resolution.

use super::{Asked, Input, SizeArgs, pick, read, sweep};
use crate::report::size::{FrontierRow, TimeResolution, outcome};
use anyhow::Result;

const SECOND: u64 = 1_000_000_000;

/// The coarsest of a minute and a second that every instant is a whole
/// number of (`None`: finer, or fewer than two rows).
pub fn coarse_unit(at: &[u64]) -> Option<u64> {
    if at.len() < 2 {
        return None;
    }
    [60 * SECOND, SECOND]
        .into_iter()
        .find(|&u| at.iter().all(|t| t % u == 0))
}

/// The instants with each run of equal ones (`n` rows logged at one
/// instant) spread evenly over the `unit` that follows it: the `i`th at
/// `+ i × unit / n`. Order is kept.
pub fn spread(at: &[u64], unit: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(at.len());
    let mut i = 0;
    while i < at.len() {
        let n = at[i..].iter().take_while(|&&t| t == at[i]).count();
        out.extend((0..n).map(|j| at[i] + (j as u64 * unit) / n as u64));
        i += n;
    }
    out
}

/// With a coarse log: the note, and the pick with each unit's requests
/// spread over it (`recommended`: today's pick). `input.log.at` holds the
/// logged times and is left so.
pub(super) fn check(
    args: &SizeArgs,
    asked: &Asked,
    input: &mut Input,
    goal: &super::goal::Goal,
    recommended: Option<&FrontierRow>,
) -> Result<Option<TimeResolution>> {
    let Some(unit) = coarse_unit(&input.log.at) else {
        return Ok(None);
    };
    let mut at = spread(&input.log.at, unit);
    if let Some(h) = &args.headroom {
        let (num, den) = read::headroom(h)?;
        at = read::compress(&at, num, den);
    }
    let logged = std::mem::replace(&mut input.log.at, at);
    let spread_pick = sweep(args, asked, input, goal)
        .map(|swept| pick::pick(&swept.frontier).map(|i| swept.frontier[i].clone()));
    input.log.at = logged;
    let spread_pick = spread_pick?;
    let name = if unit == SECOND {
        "whole seconds"
    } else {
        "whole minutes"
    };
    let mut note = format!(
        "the log's times are {name}: the requests of one are taken as simultaneous, the worst case, which the recommendation assumes (the log cannot tell how they were spread, and a page and its images do arrive together)"
    );
    match (&spread_pick, recommended) {
        (Some(s), Some(r)) if s.spec == r.spec => {
            note.push_str("; spread evenly over their second instead, the pick is the same")
        }
        (Some(s), _) => note.push_str(&format!(
            "; spread evenly over their {} instead, the pick would be {}: {}",
            if unit == SECOND { "second" } else { "minute" },
            s.spec,
            outcome(s)
        )),
        (None, _) => note.push_str(&format!(
            "; spread evenly over them instead, nothing tried meets {}",
            input.targets.describe()
        )),
    }
    Ok(Some(TimeResolution {
        unit_ns: unit,
        assumed: "simultaneous",
        spread_pick,
        note,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_spreading() {
        assert_eq!(coarse_unit(&[SECOND, 3 * SECOND]), Some(SECOND));
        assert_eq!(coarse_unit(&[60 * SECOND, 120 * SECOND]), Some(60 * SECOND));
        assert_eq!(coarse_unit(&[SECOND, SECOND + 1_000_000]), None);
        assert_eq!(coarse_unit(&[SECOND]), None);
        let at = [
            SECOND,
            SECOND,
            SECOND,
            SECOND,
            2 * SECOND,
            5 * SECOND,
            5 * SECOND,
        ];
        let ms = 1_000_000;
        assert_eq!(
            spread(&at, SECOND),
            [
                SECOND,
                SECOND + 250 * ms,
                SECOND + 500 * ms,
                SECOND + 750 * ms,
                2 * SECOND,
                5 * SECOND,
                5 * SECOND + 500 * ms
            ]
        );
    }
}
