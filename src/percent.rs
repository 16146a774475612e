//! A percentage from 0 to 100 held exactly: `0.5` is 5/1000, never a float,
//! so a threshold compares with a count the way it was written.

/// A percentage from 0 to 100, as the exact fraction `num / den` of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Percent {
    num: u128,
    den: u128,
}

impl Percent {
    /// Parses `PCT` or `PCT%`: digits with at most nine decimals, from 0 to
    /// 100 (`5`, `0.25`, `100%`); `None` for anything else.
    pub fn parse(text: &str) -> Option<Percent> {
        let s = text.trim();
        let s = s.strip_suffix('%').unwrap_or(s);
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.is_empty() && frac.is_empty() || frac.len() > 9 {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let num: u128 = format!("{int}{frac}").parse().ok()?;
        let den = 100 * 10u128.pow(frac.len() as u32);
        (num <= den).then_some(Percent { num, den })
    }

    /// True for 0 %: nothing is allowed.
    pub fn is_zero(self) -> bool {
        self.num == 0
    }

    /// Whether `part` of `whole` is more than this percentage, exactly:
    /// `part / whole > num / den`.
    pub fn exceeded_by(self, part: u64, whole: u64) -> bool {
        u128::from(part) * self.den > self.num * u128::from(whole)
    }
}

#[cfg(test)]
mod tests {
    use super::Percent;

    #[test]
    fn percentages_parse_exactly() {
        let f = |t: &str| Percent::parse(t).map(|p| (p.num, p.den));
        assert_eq!(f("5"), Some((5, 100)));
        assert_eq!(f("0.5"), Some((5, 1000)));
        assert_eq!(f(" 12.25% "), Some((1225, 10000)));
        assert_eq!(f("100"), Some((100, 100)));
        assert_eq!(f(".5"), Some((5, 1000)));
        assert_eq!(f("5."), Some((5, 100)));
        assert_eq!(f("0.000000001"), Some((1, 100_000_000_000)));
        for bad in [
            "",
            "%",
            ".",
            "100.1",
            "101",
            "-1",
            "1e2",
            "0.0000000001",
            "x",
        ] {
            assert_eq!(f(bad), None, "{bad}");
        }
    }

    #[test]
    fn exceeded_compares_the_fractions_exactly() {
        let half = Percent::parse("0.5").unwrap();
        assert!(!half.exceeded_by(5, 1000));
        assert!(half.exceeded_by(6, 1000));
        assert!(!half.exceeded_by(0, 0));
        let none = Percent::parse("0").unwrap();
        assert!(!none.exceeded_by(0, 10));
        assert!(none.exceeded_by(1, u64::MAX));
        let all = Percent::parse("100").unwrap();
        assert!(!all.exceeded_by(u64::MAX, u64::MAX));
    }
}
