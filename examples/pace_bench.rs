//! Benchmark harness for `drip pace`, with `pv -qlL` measured in the same run.
//!
//! Feeds N numbered lines into the pacer (all at once, Poisson arrivals at
//! 80% of the rate, or one line, an idle pause and then the rest at once),
//! timestamps every output line as it is read, and reports against the
//! ideal shaper schedule: deviation p99 and max, the shortest gap, the most
//! lines in any 1/rate window, end drift, achieved rate, the pacer's CPU
//! time, and lost, duplicated or reordered lines. Each case runs `--reps`
//! times; the table shows medians.
//!
//! ```sh
//! cargo build --release && cargo run --release --example pace_bench -- [--reps 3] [--secs 5] [--quick] [--no-pv]
//! ```
//!
//! The ideal schedule of line k is `max(arrival_k, ideal_{k−1} + T)`, with
//! arrivals shifted so that line 0's ideal is its observed output time. A
//! line's time is when the harness read it; lines read in one `read` share
//! a time, as they came in one write.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Input {
    AllAtOnce,
    Poisson,
    IdleThenBurst,
}

impl Input {
    fn name(self) -> &'static str {
        match self {
            Input::AllAtOnce => "all at once",
            Input::Poisson => "Poisson 80%",
            Input::IdleThenBurst => "idle, then burst",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Drip,
    Pv,
}

/// One run's measurements (times in ms).
#[derive(Clone, Debug, Default)]
struct Run {
    p99: f64,
    max: f64,
    min_gap: f64,
    max_in_window: usize,
    drift: f64,
    /// Achieved rate as a fraction of the target (all-at-once only).
    rate_ratio: Option<f64>,
    cpu_ms: f64,
    /// CPU time as a share of one core over the run's wall time, %.
    cpu_pct: f64,
    lost: usize,
    dup: usize,
    reordered: usize,
    lines: usize,
}

struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        // xorshift64*: plenty for arrival jitter.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// CPU time (user + system) of all waited-for children so far, ms.
fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Puts the calling thread (the harness's output reader) in the real-time
/// FIFO class when permitted, so its timestamps are not delayed by the
/// pacer and the feeder competing for two cores. Silent when not allowed.
fn realtime_priority() {
    // SAFETY: plain syscall on the calling thread with a valid struct.
    unsafe {
        let p = libc::sched_param { sched_priority: 10 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn run_once(drip: &str, tool: Tool, rate: u64, n: usize, input: Input, seed: u64) -> Run {
    let t_ns = 1e9 / rate as f64;
    let mut cmd = match tool {
        Tool::Drip => {
            let mut c = Command::new(drip);
            c.args(["pace", "--no-progress", "--rate", &format!("{rate}/s")]);
            c
        }
        Tool::Pv => {
            let mut c = Command::new("pv");
            c.args(["-qlL", &rate.to_string()]);
            c
        }
    };
    let cpu_before = children_cpu_ms();
    let spawned = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the pacer");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // With timed input, let the pacer start up first so its start-up is
    // not taken for lateness. (pv banks this idle time; that is pv.)
    if input != Input::AllAtOnce {
        thread::sleep(Duration::from_millis(300));
    }
    let start = Instant::now();
    // Arrival offsets (ns from start) of each line, decided up front.
    let mut arrivals = vec![0f64; n];
    match input {
        Input::AllAtOnce => {}
        Input::Poisson => {
            let mut rng = Rng(seed | 1);
            let mean = t_ns / 0.8;
            let mut t = 0.0;
            for a in arrivals.iter_mut() {
                *a = t;
                t += -mean * rng.next_f64().ln();
            }
        }
        Input::IdleThenBurst => {
            // One line, then 5 intervals (at least 0.5 s) idle, then the rest.
            let idle = (5.0 * t_ns).max(5e8);
            for a in arrivals.iter_mut().skip(1) {
                *a = idle;
            }
        }
    }
    // The feeder returns when each line was actually written: a late
    // feeder must not be taken for a late pacer.
    let feed_at = arrivals;
    let feeder = thread::spawn(move || {
        let mut fed = vec![0f64; n];
        let mut buf = Vec::new();
        let mut i = 0;
        while i < n {
            // Everything due now goes in one write.
            let now = start.elapsed().as_nanos() as f64;
            if feed_at[i] > now {
                thread::sleep(Duration::from_nanos((feed_at[i] - now) as u64));
                continue;
            }
            buf.clear();
            let first = i;
            while i < n && feed_at[i] <= now {
                writeln!(buf, "{:09}", i + 1).unwrap();
                i += 1;
            }
            let at = start.elapsed().as_nanos() as f64;
            for f in &mut fed[first..i] {
                *f = at;
            }
            if stdin.write_all(&buf).is_err() {
                break;
            }
        }
        fed
    });
    realtime_priority();
    let mut times: Vec<f64> = Vec::with_capacity(n);
    let mut nums: Vec<usize> = Vec::with_capacity(n);
    let mut buf = vec![0u8; 1 << 16];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let got = stdout.read(&mut buf).expect("read the pacer's output");
        if got == 0 {
            break;
        }
        let at = start.elapsed().as_nanos() as f64;
        for &b in &buf[..got] {
            if b == b'\n' {
                let num = std::str::from_utf8(&partial)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
                nums.push(num);
                times.push(at);
                partial.clear();
            } else {
                partial.push(b);
            }
        }
    }
    child.wait().expect("wait for the pacer");
    let arrivals = feeder.join().unwrap();
    let cpu_ms = children_cpu_ms() - cpu_before;
    let wall_ms = spawned.elapsed().as_secs_f64() * 1e3;

    // Lost, duplicated, reordered.
    let mut seen = vec![0u32; n + 2];
    let mut reordered = 0;
    for (i, &k) in nums.iter().enumerate() {
        seen[k.min(n + 1)] += 1;
        if i > 0 && k < nums[i - 1] {
            reordered += 1;
        }
    }
    let lost = (1..=n).filter(|&k| seen[k] == 0).count();
    let dup = seen.iter().map(|&c| c.saturating_sub(1) as usize).sum();

    // Deviation from the ideal schedule of the lines as they came out.
    let m = times.len();
    let mut run = Run {
        cpu_ms,
        cpu_pct: cpu_ms * 100.0 / wall_ms,
        lost,
        dup,
        reordered,
        lines: m,
        ..Run::default()
    };
    if m < 2 {
        return run;
    }
    let shift = times[0] - arrivals[nums[0].clamp(1, n) - 1];
    let mut ideal = times[0];
    let mut devs = Vec::with_capacity(m);
    for i in 0..m {
        let arr = arrivals[nums[i].clamp(1, n) - 1] + shift;
        if i > 0 {
            ideal = arr.max(ideal + t_ns);
        }
        devs.push((times[i] - ideal).abs() / 1e6);
    }
    run.drift = (times[m - 1] - ideal) / 1e6;
    devs.sort_by(f64::total_cmp);
    run.p99 = quantile(&devs, 0.99);
    run.max = *devs.last().unwrap();
    run.min_gap = times
        .windows(2)
        .map(|w| (w[1] - w[0]) / 1e6)
        .fold(f64::INFINITY, f64::min);
    let mut j = 0;
    for i in 0..m {
        while times[i] - times[j] >= t_ns {
            j += 1;
        }
        run.max_in_window = run.max_in_window.max(i - j + 1);
    }
    if input == Input::AllAtOnce {
        let achieved = (m - 1) as f64 * 1e9 / (times[m - 1] - times[0]);
        run.rate_ratio = Some(achieved / rate as f64);
    }
    run
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Medians over runs (lost/dup/reordered: the worst).
fn summarise(runs: &[Run]) -> Run {
    let med = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
    Run {
        p99: med(|r| r.p99),
        max: med(|r| r.max),
        min_gap: med(|r| r.min_gap),
        max_in_window: median(runs.iter().map(|r| r.max_in_window as f64).collect()) as usize,
        drift: med(|r| r.drift),
        rate_ratio: runs[0]
            .rate_ratio
            .map(|_| median(runs.iter().filter_map(|r| r.rate_ratio).collect())),
        cpu_ms: med(|r| r.cpu_ms),
        cpu_pct: med(|r| r.cpu_pct),
        lost: runs.iter().map(|r| r.lost).max().unwrap_or(0),
        dup: runs.iter().map(|r| r.dup).max().unwrap_or(0),
        reordered: runs.iter().map(|r| r.reordered).max().unwrap_or(0),
        lines: runs.iter().map(|r| r.lines).min().unwrap_or(0),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.parse::<f64>().expect("a number"))
    };
    let reps = opt("--reps").unwrap_or(3.0) as usize;
    let secs = opt("--secs").unwrap_or(5.0);
    let quick = args.iter().any(|a| a == "--quick");
    let with_pv = !args.iter().any(|a| a == "--no-pv")
        && Command::new("pv").arg("--version").output().is_ok();
    let exe = std::env::current_exe().unwrap();
    let drip = exe
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("drip"))
        .unwrap();
    assert!(
        drip.exists(),
        "build the binary first: cargo build --release"
    );
    let drip = drip.to_str().unwrap().to_string();

    let mut cases: Vec<(u64, Input)> = Vec::new();
    let slow: &[u64] = if quick {
        &[10, 1000]
    } else {
        &[1, 10, 100, 1000]
    };
    for &rate in slow {
        for input in [Input::AllAtOnce, Input::Poisson, Input::IdleThenBurst] {
            cases.push((rate, input));
        }
    }
    cases.push((10_000, Input::AllAtOnce));
    cases.push((100_000, Input::AllAtOnce));

    let mut tools = vec![Tool::Drip];
    if with_pv {
        tools.push(Tool::Pv);
    }
    println!(
        "| rate/s | input | lines | tool | dev p99 ms | dev max ms | min gap ms | max lines per 1/rate | end drift ms | achieved rate | CPU ms per 1000 lines | CPU % of a core | lost/dup/reordered |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (rate, input) in cases {
        let n = ((rate as f64 * secs) as usize + 1).max(11);
        for &tool in &tools {
            let runs: Vec<Run> = (0..reps)
                .map(|r| run_once(&drip, tool, rate, n, input, 0x9e37_79b9 + r as u64))
                .collect();
            let s = summarise(&runs);
            let rate_text = s
                .rate_ratio
                .map_or("-".to_string(), |r| format!("{:+.3}%", (r - 1.0) * 100.0));
            println!(
                "| {rate} | {} | {n} | {} | {:.3} | {:.3} | {:.3} | {} | {:+.3} | {rate_text} | {:.1} | {:.1} | {}/{}/{} |",
                input.name(),
                match tool {
                    Tool::Drip => "drip",
                    Tool::Pv => "pv",
                },
                s.p99,
                s.max,
                s.min_gap,
                s.max_in_window,
                s.drift,
                s.cpu_ms * 1000.0 / n as f64,
                s.cpu_pct,
                s.lost,
                s.dup,
                s.reordered,
            );
        }
    }
}
