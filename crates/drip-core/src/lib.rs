//! drip-core: exact rate-limit policies, request-log reading and a
//! deterministic replay of real logs through them: the library under the
//! `drip` command line.
//!
//! Every decision is exact integer arithmetic on nanoseconds ([`time::Nanos`])
//! and exact rates ([`rate::Rate`]), and no policy reads a clock: the caller
//! passes `now` (a log row's time, or a clock reading of its own). The same
//! spec decides the same way in a service, in a test suite and in
//! `drip audit`.
//!
//! The layers, lowest first:
//! - [`policy`]: the rules (GCRA, token bucket, leaky bucket, shaper, fixed
//!   and sliding windows, sliding log, nginx `limit_req`), their specs
//!   (`gcra:rate=10/s,burst=5`) and per-key state.
//! - [`ingest`]: log files to time-ordered rows (CSV, nginx/Apache, JSON
//!   lines, ALB/ELB, W3C, HAProxy, …), with notes ([`notes`]) and progress
//!   handed to the caller, never printed.
//! - [`nginx_conf`]: an nginx.conf read as nginx reads it.
//! - [`haproxy_cfg`], [`traefik_cfg`]: a haproxy.cfg and a Traefik dynamic
//!   configuration read as their gateways read them (YAML and TOML through
//!   [`tree`], whose nodes keep their lines).
//! - [`engine`]: rows × policies → admits, drops, waits, who is hurt; every
//!   decision to a [`engine::replay::DecisionSink`] if asked; outcomes that
//!   merge across replays of disjoint keys ([`engine::merge::Outcome`]).
//!
//! # Deciding requests online
//!
//! A policy from its spec, keyed by the caller's ids, the time passed in:
//!
//! ```
//! use drip_core::policy::Decision;
//! use drip_core::policy::spec::parse_spec;
//! use drip_core::time::Nanos;
//!
//! let ms = |n: u64| Nanos(n * 1_000_000);
//! // Two requests a second per customer, two at once.
//! let mut limit = parse_spec("gcra:rate=2/s,burst=2")?.build();
//! let customer = [Some(42)];
//! assert!(limit.decide(&customer, ms(0), 1).is_admit());
//! assert!(limit.decide(&customer, ms(0), 1).is_admit());
//! // The third at once is refused, and told when it would fit.
//! assert_eq!(
//!     limit.decide(&customer, ms(0), 1),
//!     Decision::Refuse { retry_at: Some(ms(500)) }
//! );
//! assert!(limit.decide(&customer, ms(500), 1).is_admit());
//! // Another customer has a bucket of its own.
//! assert!(limit.decide(&[Some(7)], ms(0), 1).is_admit());
//! # Ok::<(), drip_core::policy::spec::SpecError>(())
//! ```
//!
//! # Replaying rows through several policies
//!
//! ```
//! use drip_core::engine::replayer::Replayer;
//! use drip_core::time::Nanos;
//!
//! let specs = ["nginx:rate=1r/s,burst=2,nodelay", "shaper:rate=1/s,burst=4"];
//! let mut replay = Replayer::new(&specs, 10)?;
//! for i in 0..5 {
//!     // Five requests of one client within 40 ms, and one of another.
//!     replay.push(Nanos(i * 10_000_000), b"10.0.0.1", 1)?;
//! }
//! replay.push(Nanos(50_000_000), b"10.0.0.2", 1)?;
//! let reports = replay.finish()?.reports();
//! // nginx admits 1 + burst of each client at once and rejects the rest.
//! assert_eq!((reports[0].admitted, reports[0].dropped), (4, 2));
//! assert_eq!(reports[0].top_keys[0].key, "10.0.0.1");
//! // The shaper delays instead: nothing dropped, the fifth waits 3.96 s.
//! let shaper = &reports[1];
//! assert_eq!(shaper.dropped, 0);
//! assert_eq!(shaper.wait.unwrap().max_ns, 3_960_000_000);
//! # Ok::<(), drip_core::engine::replayer::ReplayError>(())
//! ```
//!
//! # Replaying rows through an nginx.conf
//!
//! ```
//! use drip_core::engine::replayer::Replayer;
//! use drip_core::nginx_conf::NginxConf;
//! use drip_core::notes::Notes;
//! use drip_core::time::Nanos;
//! use std::path::Path;
//!
//! let conf = NginxConf::from_text(
//!     "http {
//!        limit_req_zone $binary_remote_addr zone=perip:1m rate=1r/s;
//!        server {
//!          listen 80;
//!          location /api/ { limit_req zone=perip burst=1 nodelay; }
//!          location / { }
//!        }
//!      }",
//!     Path::new("nginx.conf"),
//!     Path::new("."),
//! )
//! .map_err(|e| e.to_string())?;
//! let notes = Notes::to(|note| eprintln!("{note}"));
//! let mut replay = Replayer::nginx(conf, "site", &["remote_addr", "uri"], 10, &notes)?;
//! for uri in ["/api/a", "/api/b", "/api/c", "/index.html"] {
//!     replay.push_fields(Nanos(0), &[b"10.0.0.1", uri.as_bytes()], 1)?;
//! }
//! let site = &replay.finish()?.reports()[0];
//! // Two pass /api/ at once (1 + burst), the third is rejected; `/` has
//! // no limit.
//! assert_eq!(site.dropped, 1);
//! let api = &site.nginx.as_ref().unwrap().locations[0];
//! assert_eq!((api.passed, api.rejected), (2, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod engine;
pub mod haproxy_cfg;
pub mod ingest;
pub mod nginx_conf;
pub mod notes;
#[deny(missing_docs)]
pub mod policy;
pub mod quote;
#[deny(missing_docs)]
pub mod rate;
#[doc(hidden)]
pub mod testing;
#[deny(missing_docs)]
pub mod time;
pub mod traefik_cfg;
pub mod tree;
pub mod wait_stats;
