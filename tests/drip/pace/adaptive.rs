//! `--adaptive` against a real HTTP server on loopback that admits `N`
//! requests per sliding second and answers the rest 429 with
//! `Retry-After: 1`, as an API does. The commands are a wrapper (curl in
//! sh) that turns a 429 into exit status 75 and writes the `Retry-After`
//! pause to `$DRIP_CONTROL`.

use crate::common::{Drip, Scratch, summary, timed_alone};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What the server answered: when, and whether it admitted.
type Answers = Arc<Mutex<Vec<(Instant, bool)>>>;

/// Starts the server on a free loopback port; returns its URL.
fn api(per_second: usize) -> (String, Answers) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let answers: Answers = Arc::default();
    let log = Arc::clone(&answers);
    thread::spawn(move || {
        let mut admitted: VecDeque<Instant> = VecDeque::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let now = Instant::now();
            while admitted
                .front()
                .is_some_and(|&t| now.duration_since(t) >= Duration::from_secs(1))
            {
                admitted.pop_front();
            }
            let ok = admitted.len() < per_second;
            if ok {
                admitted.push_back(now);
            }
            log.lock().unwrap().push((now, ok));
            let reply: &[u8] = if ok {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            } else {
                b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            };
            let _ = stream.write_all(reply);
        }
    });
    (url, answers)
}

/// The wrapper (curl in sh): 0 on success, 75 on a 429 (after writing
/// its Retry-After as a pause to `$DRIP_CONTROL`), 1 otherwise.
const WRAPPER: &str = r#"out=$(curl -s -o /dev/null -D - -w 'CODE %{http_code}' "$1")
code=${out##*CODE }
[ "$code" = 200 ] && exit 0
[ "$code" = 429 ] || exit 1
after=$(printf '%s\n' "$out" | tr -d '\r' | sed -n 's/^[Rr]etry-[Aa]fter: *//p')
[ -n "$DRIP_CONTROL" ] && echo "pause ${after:-1}s" > "$DRIP_CONTROL"
exit 75
"#;

/// At --rate 80/s against a limit of 20/s, 300 requests finish with few
/// 429s and, from first to last request less the pauses the API asked
/// for, within 20 % of the limit; the wrapper's pauses reach drip.
#[test]
fn adaptive_pacing_finds_the_limit_from_the_429s() {
    let _alone = timed_alone();
    let tmp = Scratch::new();
    let wrapper = tmp.join("call.sh");
    std::fs::write(&wrapper, WRAPPER).unwrap();
    let (url, answers) = api(20);
    let records: String = (0..300).map(|i| format!("{url}{i}\n")).collect();
    let out = Drip::pace()
        .args(["--rate", "80/s", "--adaptive", "--throttle-on", "75"])
        .args([
            "--retry",
            "20",
            "--retry-on",
            "75",
            "--retry-delay",
            "100ms",
        ])
        .args(["--stats=json", "--", "sh"])
        .arg(&wrapper)
        .stdin(records)
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let answers = answers.lock().unwrap();
    let ok: Vec<Instant> = answers.iter().filter(|a| a.1).map(|a| a.0).collect();
    let refused = answers.len() - ok.len();
    assert_eq!(ok.len(), 300, "{err}");
    let span = answers.last().unwrap().0.duration_since(answers[0].0);
    let s = summary(&out.stderr);
    // The rate is judged over the time drip chose to send: the pauses the
    // API asked for (Retry-After, one per throttle that reached the
    // wrapper) are the API's, and how many there are depends on how the
    // host's load jitters the requests' arrival.
    let paused = Duration::from_secs_f64(s["paused_ms"].as_f64().unwrap() / 1e3);
    let sending = span.saturating_sub(paused);
    let rate = 299.0 / sending.as_secs_f64();
    eprintln!("429s {refused}, {rate:.2}/s over {sending:?} ({paused:?} paused)");
    assert!(refused <= 20, "{refused} answers 429: {err}");
    assert!(rate >= 16.0, "{rate:.2}/s against a limit of 20/s: {err}");
    assert!(s["adaptive"]["throttles"].as_u64().unwrap() >= 1, "{s}");
    assert!(
        s["pauses"].as_u64().unwrap() >= 1,
        "the wrapper's pause was not honoured: {s}"
    );
    // One line per throttle and per pause episode, each saying why.
    let throttled = err
        .lines()
        .filter(|l| l.starts_with("drip: throttled (a command exited 75"))
        .count();
    assert_eq!(
        throttled as u64,
        s["adaptive"]["throttles"].as_u64().unwrap(),
        "{err}"
    );
    assert!(
        err.contains("drip: paused for 1s: a control command"),
        "{err}"
    );
}
