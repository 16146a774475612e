//! `--stamp`: the release time of a line as a prefix, followed by a tab.
//!
//! The time is the wall clock (UTC) when the write that carries the line is
//! made, truncated to whole microseconds (whole seconds for `http-date`,
//! which has no fraction), so a stamp never shows a time that had not come.

use crate::cli::Stamp;
use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch now (0 for a clock set before 1970).
pub fn wall_now() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Appends the stamp of `unix_nanos` in `format`, and a tab, to `out`.
pub fn write_stamp(out: &mut Vec<u8>, format: Stamp, unix_nanos: i128) {
    let micros = unix_nanos.div_euclid(1_000);
    let text = match format {
        Stamp::Epoch => format!(
            "{}.{:06}",
            micros.div_euclid(1_000_000),
            micros.rem_euclid(1_000_000)
        ),
        Stamp::Rfc3339 | Stamp::HttpDate => {
            let pattern = if format == Stamp::Rfc3339 {
                "%Y-%m-%dT%H:%M:%S.%6fZ"
            } else {
                "%a, %d %b %Y %H:%M:%S GMT"
            };
            match jiff::Timestamp::from_nanosecond(micros * 1_000) {
                Ok(ts) => ts.strftime(pattern).to_string(),
                // Outside jiff's range (years beyond ±9999): the epoch form.
                Err(_) => format!(
                    "{}.{:06}",
                    micros.div_euclid(1_000_000),
                    micros.rem_euclid(1_000_000)
                ),
            }
        }
    };
    out.extend_from_slice(text.as_bytes());
    out.push(b'\t');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(format: Stamp, nanos: i128) -> String {
        let mut v = Vec::new();
        write_stamp(&mut v, format, nanos);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn formats() {
        // 2023-11-14T22:13:20Z is 1_700_000_000 s.
        let t = 1_700_000_000_123_456_789i128;
        assert_eq!(stamp(Stamp::Epoch, t), "1700000000.123456\t");
        assert_eq!(stamp(Stamp::Rfc3339, t), "2023-11-14T22:13:20.123456Z\t");
        assert_eq!(stamp(Stamp::HttpDate, t), "Tue, 14 Nov 2023 22:13:20 GMT\t");
        // Truncated, never rounded up into the next second.
        let edge = 1_700_000_000_999_999_999i128;
        assert_eq!(stamp(Stamp::Rfc3339, edge), "2023-11-14T22:13:20.999999Z\t");
        assert_eq!(stamp(Stamp::Epoch, edge), "1700000000.999999\t");
        assert_eq!(
            stamp(Stamp::HttpDate, edge),
            "Tue, 14 Nov 2023 22:13:20 GMT\t"
        );
        // Single-digit days keep two digits, as IMF-fixdate requires.
        assert_eq!(
            stamp(Stamp::HttpDate, 1_699_000_000_000_000_000),
            "Fri, 03 Nov 2023 08:26:40 GMT\t"
        );
    }
}
