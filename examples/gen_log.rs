//! Writes a synthetic access log for the audit benchmark: seeded, so every
//! run writes the same bytes.
//!
//! `cargo run --release --example gen_log -- ROWS OUT.csv [csv|combined|ndjson]`
//!
//! The same rows in each form: CSV columns `ts,client,path,status,bytes`;
//! `combined` access-log lines (`c000042 - - [01/May/2024:00:00:00 +0000]
//! "GET /api/v1/items/7 HTTP/1.1" 200 5123 "-" "bench/1.0"`, times to the
//! second as CLF writes them); or JSON lines in Caddy's shape
//! (`{"ts":1714521600.123,"request":{"remote_ip":"c000042",...},...}`).
//!
//! CSV: RFC 3339 UTC timestamps with
//! milliseconds over one day; ~300k clients drawn from a Zipf law (s = 1.1);
//! bursts (a client sends 20–400 requests within a second about every 2,000
//! rows); 0.5% of rows written up to 2 s late (slightly out of order).

use std::io::{BufWriter, Write};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const CLIENTS: usize = 300_000;
const DAY_MS: u64 = 86_400_000;
const START_S: u64 = 1_714_521_600; // 2024-05-01T00:00:00Z

fn civil(secs: u64) -> (u64, u64, u64, u64, u64, u64) {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Days since 1970 → (y, m, d), for the dates this generator writes.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y as u64,
        m as u64,
        d as u64,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (rows, out, form): (u64, &str, &str) = match args.as_slice() {
        [_, n, out] => (n.parse().expect("ROWS is a number"), out, "csv"),
        [_, n, out, f] if ["csv", "combined", "ndjson"].contains(&f.as_str()) => {
            (n.parse().expect("ROWS is a number"), out, f)
        }
        _ => {
            eprintln!("usage: gen_log ROWS OUT [csv|combined|ndjson]");
            std::process::exit(2);
        }
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut rng = Rng(0xd1e5_5eed);
    // Zipf CDF over client ranks.
    let mut cdf = Vec::with_capacity(CLIENTS);
    let mut sum = 0.0;
    for k in 1..=CLIENTS {
        sum += 1.0 / (k as f64).powf(1.1);
        cdf.push(sum);
    }
    let pick = |u: f64| cdf.partition_point(|&c| c < u * sum);
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(out).expect("create OUT"));
    if form == "csv" {
        writeln!(w, "ts,client,path,status,bytes").unwrap();
    }
    let step = DAY_MS as f64 / rows as f64;
    let mut burst_left = 0u32;
    let mut burst_len = 0u32;
    let mut burst_client = 0usize;
    let mut burst_at = 0u64;
    for i in 0..rows {
        let mut at = (i as f64 * step) as u64;
        let client = if burst_left > 0 {
            // The burst's rows spread evenly over one second, in order.
            burst_left -= 1;
            at = burst_at + u64::from(burst_len - burst_left) * 1000 / u64::from(burst_len + 1);
            burst_client
        } else if rng.next().is_multiple_of(2000) {
            burst_len = 20 + (rng.next() % 380) as u32;
            burst_left = burst_len;
            burst_client = pick(rng.unit());
            burst_at = at;
            burst_client
        } else {
            pick(rng.unit())
        };
        if rng.next().is_multiple_of(200) {
            at = at.saturating_sub(rng.next() % 2000);
        }
        let ms = START_S * 1000 + at;
        let (y, mo, d, h, mi, s) = civil(ms / 1000);
        let path = rng.next() % 50_000;
        let status = if rng.next().is_multiple_of(50) {
            404
        } else {
            200
        };
        let bytes = rng.next() % 100_000;
        match form {
            "combined" => writeln!(
                w,
                "c{client:06} - - [{d:02}/{}/{y:04}:{h:02}:{mi:02}:{s:02} +0000] \"GET /api/v1/items/{path} HTTP/1.1\" {status} {bytes} \"-\" \"bench/1.0\"",
                MONTHS[mo as usize - 1]
            ),
            "ndjson" => writeln!(
                w,
                "{{\"level\":\"info\",\"ts\":{}.{:03},\"logger\":\"http.log.access\",\"request\":{{\"remote_ip\":\"c{client:06}\",\"method\":\"GET\",\"uri\":\"/api/v1/items/{path}\"}},\"status\":{status},\"size\":{bytes}}}",
                ms / 1000,
                ms % 1000
            ),
            _ => writeln!(
                w,
                "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z,c{client:06},/api/v1/items/{path},{status},{bytes}",
                ms % 1000
            ),
        }
        .unwrap();
    }
    w.flush().unwrap();
}
