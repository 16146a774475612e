//! The one list of policies.
//!
//! A policy is its module (the rule, its parameters with their defaults,
//! validation and the example in its errors, and what reports need to know
//! about it, all through [`Listed`]) plus one line in the `policies!` table
//! at the end of this file. The table generates [`PolicyConfig`] (one
//! validated policy of any kind), the list of names, the dispatch from a
//! name to its parser, and [`PolicyConfig::with`], the one place where a
//! policy of any kind becomes a policy of its own type, so that loops over
//! requests are compiled per policy.
//!
//! Adding a policy therefore touches: its module (the rule, `impl Listed`
//! with what `size`, sharing and `pace` need of it, and `impl Prefetch`
//! for its state, declared beside the others in the policy module), its
//! line in the table below, and the README's table of policies. Nothing
//! else matches on the list: stores, audit's replay, size's sweeps and
//! probes, sharing and pace go through [`PolicyConfig`]'s methods. Only
//! places that need one kind by nature match on a variant (nginx
//! directives need nginx).

use super::fixed_window::FixedWindow;
use super::gcra::Gcra;
use super::haproxy::HaproxyRate;
use super::leaky_bucket::LeakyBucket;
use super::nginx::NginxLimitReq;
use super::rule::{AxisPoint, ParamError, Params, Shared, Sizing};
pub use super::rule::{Info, LevelKind, Listed};
use super::shaper::Shaper;
use super::sliding_log::SlidingLog;
use super::sliding_window::SlidingWindow;
use super::token_bucket::TokenBucket;
use super::traefik::TraefikRate;
use crate::rate::Rate;
use crate::time::Nanos;

/// Work done with a policy as its own type (see [`PolicyConfig::with`]).
pub trait WithPolicy {
    /// What the work returns.
    type Out;
    /// Does the work with `policy`.
    fn run<P: Listed>(self, policy: &P) -> Self::Out;
}

/// Work done with several policies of one kind as their own type (see
/// [`PolicyConfig::with_all`]).
pub trait WithPolicies {
    /// What the work returns.
    type Out;
    /// Does the work with `policies`.
    fn run<P: Listed>(self, policies: &[P]) -> Self::Out;
}

impl PolicyConfig {
    /// The policy when it is nginx's `limit_req` (whose directives only
    /// it can be written as).
    pub fn nginx(&self) -> Option<NginxLimitReq> {
        match self {
            PolicyConfig::Nginx(n) => Some(*n),
            _ => None,
        }
    }
}

macro_rules! policies {
    ($($(#[$attr:meta])* $variant:ident($ty:ty)),* $(,)?) => {
        /// One validated policy, of any kind.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum PolicyConfig {
            $(
                #[doc = concat!("A validated [`", stringify!($ty), "`].")]
                $(#[$attr])* $variant($ty),
            )*
        }

        /// The policy names, as written in specs.
        pub const POLICY_NAMES: &[&str] = &[$($(#[$attr])* <$ty as Listed>::NAME,)*];

        impl PolicyConfig {
            /// Runs `work` with the policy as its own type.
            pub fn with<W: WithPolicy>(&self, work: W) -> W::Out {
                match self {
                    $($(#[$attr])* PolicyConfig::$variant(p) => work.run(p),)*
                }
            }
        }

        impl PolicyConfig {
            /// Runs `work` with `configs`, all of one kind (at least one),
            /// as their own type.
            pub fn with_all<W: WithPolicies>(configs: &[PolicyConfig], work: W) -> W::Out {
                match configs[0] {
                    $($(#[$attr])* PolicyConfig::$variant(_) => {
                        let policies: Vec<$ty> = configs
                            .iter()
                            .map(|c| match c {
                                PolicyConfig::$variant(p) => *p,
                                #[allow(unreachable_patterns)]
                                _ => panic!("policies of one kind"),
                            })
                            .collect();
                        work.run(&policies)
                    })*
                }
            }

            /// What reports and drivers need of the policy.
            pub fn info(&self) -> Info {
                match self {
                    $($(#[$attr])* PolicyConfig::$variant(p) => p.info(),)*
                }
            }

            /// The policy at another axis point and size (see
            /// [`Listed::resized`]).
            pub fn resized(&self, at: AxisPoint, size: u64) -> Result<PolicyConfig, ParamError> {
                match self {
                    $($(#[$attr])* PolicyConfig::$variant(p) => p.resized(at, size).map(PolicyConfig::$variant),)*
                }
            }

            /// The most requests let through within any span of `h`.
            pub fn worst_within(&self, h: Nanos) -> u64 {
                match self {
                    $($(#[$attr])* PolicyConfig::$variant(p) => p.worst_within(h),)*
                }
            }

            /// How a shared schedule keeps the policy, if it can.
            pub fn shared(&self) -> Option<Shared> {
                match self {
                    $($(#[$attr])* PolicyConfig::$variant(p) => p.shared(),)*
                }
            }

            /// The rate `pace` spaces lines at under the policy, if any.
            pub fn pace_rate(&self) -> Option<Rate> {
                match self {
                    $($(#[$attr])* PolicyConfig::$variant(p) => p.pace_rate(),)*
                }
            }
        }

        /// Policy `name` as listed, and how `size` sweeps it; `None` for an
        /// unknown name.
        pub fn sizing_of(name: &str) -> Option<(&'static str, Sizing)> {
            $($(#[$attr])* if name == <$ty as Listed>::NAME {
                return Some((<$ty as Listed>::NAME, <$ty as Listed>::SIZING));
            })*
            None
        }

        /// The parameters of policy `name` (empty for an unknown name).
        pub(super) fn params_of(name: &str) -> &'static [&'static str] {
            $($(#[$attr])* if name == <$ty as Listed>::NAME {
                return <$ty as Listed>::PARAMS;
            })*
            &[]
        }

        /// Parses the parameters of policy `name`; `None` for an unknown name.
        pub(super) fn parse_config(
            name: &str,
            params: &mut Params<'_>,
        ) -> Option<Result<PolicyConfig, ParamError>> {
            $($(#[$attr])* if name == <$ty as Listed>::NAME {
                return Some(<$ty as Listed>::parse(params).map(PolicyConfig::$variant));
            })*
            None
        }
    };
}

policies! {
    TokenBucket(TokenBucket),
    LeakyBucket(LeakyBucket),
    Gcra(Gcra),
    Shaper(Shaper),
    FixedWindow(FixedWindow),
    SlidingWindow(SlidingWindow),
    SlidingLog(SlidingLog),
    Nginx(NginxLimitReq),
    Haproxy(HaproxyRate),
    Traefik(TraefikRate),
}
