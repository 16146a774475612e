//! What the three meters share: token bucket, leaky bucket and GCRA are
//! one rule (tests pin the equivalence) held three ways, each configured
//! by a rate and a size of at least 1 (`burst`, or the leaky bucket's
//! `capacity`). [`meter!`] writes, for each, its type of those two
//! parameters and everything the table needs of it: parsing, what reports
//! need (it admits or refuses at once and holds at most `size` units), how
//! `size` sweeps it, the most it lets through within a span (a full
//! bucket, then the rate), and a shared schedule (one number at the rate).
//! Each module keeps its own state and decision.

/// A meter type `$name` (written `$text` in specs) of a rate and a size
/// parameter `$size`; `paces`: `pace` spaces lines at its rate.
macro_rules! meter {
    ($(#[$doc:meta])* $name:ident, $text:literal, $size:ident, paces: $paces:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            rate: $crate::rate::Rate,
            $size: u64,
        }

        impl $name {
            #[doc = concat!(
                "The meter at `rate` with a `", stringify!($size),
                "` of at least 1: it holds at most that many units."
            )]
            pub fn new(rate: $crate::rate::Rate, $size: std::num::NonZeroU64) -> $name {
                $name {
                    rate,
                    $size: $size.get(),
                }
            }
        }

        impl $crate::policy::rule::Listed for $name {
            const NAME: &'static str = $text;
            const PARAMS: &'static [&'static str] = &["rate", stringify!($size)];
            const SIZING: $crate::policy::rule::Sizing =
                $crate::policy::rule::Sizing::rates(stringify!($size));

            fn parse(
                p: &mut $crate::policy::rule::Params<'_>,
            ) -> Result<Self, $crate::policy::rule::ParamError> {
                let rate = p.rate()?;
                Ok($name::new(rate, p.positive(stringify!($size), Some(1))?))
            }

            fn info(&self) -> $crate::policy::rule::Info {
                $crate::policy::rule::Info::bounded(self.$size)
            }

            fn resized(
                &self,
                at: $crate::policy::rule::AxisPoint,
                size: u64,
            ) -> Result<Self, $crate::policy::rule::ParamError> {
                let rate = $crate::policy::rule::rate_point(Self::NAME, at)?;
                let size = $crate::policy::rule::positive(stringify!($size), size)?;
                Ok($name::new(rate, size))
            }

            /// A full bucket, then ⌊rate · h⌋ refilled.
            fn worst_within(&self, h: $crate::time::Nanos) -> u64 {
                let refill = $crate::policy::rule::refill_within(self.rate, h);
                $crate::policy::rule::saturate(u128::from(self.$size) + refill)
            }

            fn shared(&self) -> Option<$crate::policy::rule::Shared> {
                Some($crate::policy::rule::Shared::meter(self.rate, self.$size))
            }

            fn pace_rate(&self) -> Option<$crate::rate::Rate> {
                $paces.then_some(self.rate)
            }
        }
    };
}

pub(super) use meter;
