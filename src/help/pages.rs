//! The hand-written parts of each command's manual: what `-h` and
//! `--help` show after the options, what `drip help` prints, and what the
//! man pages in `man/` are generated from (by `tests/drip/cli/man.rs`). The exit
//! statuses here are the ones docs/exit-status.md lists (a test compares).

/// One example: what it does, and a command that runs from the repository
/// root on the shipped fixtures, exiting with `status`.
pub struct Example {
    pub what: &'static str,
    pub run: &'static str,
    pub status: i32,
}

/// A command's manual, beside what clap knows of its options.
pub struct Page {
    /// `""` for `drip` itself, else the subcommand's name.
    pub command: &'static str,
    /// Paragraphs.
    pub description: &'static [&'static str],
    /// The first three are the ones `-h` shows.
    pub examples: &'static [Example],
    /// (status, when).
    pub exit_status: &'static [(&'static str, &'static str)],
    /// (variable, what it does); empty: the command reads none.
    pub environment: &'static [(&'static str, &'static str)],
    /// (file, what it is).
    pub files: &'static [(&'static str, &'static str)],
    pub see_also: &'static [&'static str],
}

const SHARE_ENV: &[(&str, &str)] = &[
    (
        "DRIP_SHARE",
        "The shared schedule when --share is not given: a state file or a redis:// URL. Empty counts as unset; --share none ignores it.",
    ),
    (
        "DRIP_SHARE_KEY",
        "The shared schedule's name when --share-key is not given.",
    ),
    (
        "XDG_RUNTIME_DIR",
        "Where the per-user state file of --share-key NAME goes (see FILES).",
    ),
    (
        "TMPDIR",
        "Without XDG_RUNTIME_DIR, the folder that holds the private drip-UID folder (default /tmp).",
    ),
];

const SHARE_FILES: &[(&str, &str)] = &[
    (
        "$XDG_RUNTIME_DIR/drip/NAME.share",
        "The state file of the schedule --share-key NAME shares on this host without --share (else $TMPDIR/drip-UID/NAME.share); the folder is made with mode 0700 and refused when another user could open it.",
    ),
    (
        "PATH (--share PATH)",
        "A state file shared by every process given the same PATH, locked with flock(2); not on a network filesystem unless --share-allow-network-fs.",
    ),
];

const NO_ENV: &[(&str, &str)] = &[(
    "(none)",
    "Reads no environment variable of its own: TZ is not read (timestamps without an offset are UTC unless --tz says otherwise), so a run gives the same report on every machine.",
)];

const LOG_EXIT: &[(&str, &str)] = &[
    ("0", "the audit ran and every threshold holds"),
    (
        "1",
        "a threshold (--max-drop-rate, --max-drops, --max-wait, --max-keys-hurt, --max-disagree, and with --compare --max-newly-dropped, --max-keys-newly-hurt; each for every policy, or for one with LABEL=VALUE: --max-drop-rate api=0.5) was crossed, or --fail-untested found a limited location no row matched; one line per crossing on stderr names the policy, the threshold and the measured value (the report is still written)",
    ),
    (
        "2",
        "bad usage or input: one line on stderr says what, where (file and line) and what to do",
    ),
];

const SIZE_EXIT: &[(&str, &str)] = &[
    ("0", "a recommendation exists"),
    (
        "1",
        "nothing in the range meets the targets (a capacity problem, not a limiter setting), or the log is too short to test any point that meets them; stderr says which",
    ),
    (
        "2",
        "bad usage or input (an empty log included): one line on stderr says what, where and what to do",
    ),
];

const PACE_EXIT: &[(&str, &str)] = &[
    (
        "0",
        "input ended and every line was sent, or downstream closed the pipe; with a command, every command succeeded",
    ),
    (
        "1",
        "with a command: one failed for good (after its retries)",
    ),
    (
        "2",
        "bad usage, an I/O error, a shared schedule given up, or a command that cannot be started: one line on stderr says what and what to do",
    ),
    ("3", "--on-full fail and the backlog was full"),
    (
        "130, 143, 129",
        "SIGINT, SIGTERM, SIGHUP: reading stops, the unsent lines go to --rejects when given, the summary is printed",
    ),
];

const GATE_EXIT: &[(&str, &str)] = &[
    ("0", "the slot was taken (no command)"),
    ("N", "with a command: the command's exit status"),
    (
        "2",
        "bad usage, or the shared schedule given up as --on-share-error says",
    ),
    (
        "3",
        "--max-wait would be exceeded (nothing runs; a slot already reserved is left unused)",
    ),
    ("126, 127", "the command cannot be run, or is not found"),
];

const SEE_ALSO: &[&str] = &[
    "drip(1)",
    "drip-pace(1)",
    "drip-audit(1)",
    "drip-size(1)",
    "drip-gate(1)",
    "drip-completions(1)",
    "drip-help(1)",
    "nginx(8)",
    "pv(1)",
    "xargs(1)",
];

/// Every page: `drip` first, then the commands in the order of `drip -h`.
pub const PAGES: &[Page] = &[
    Page {
        command: "",
        description: &[
            "drip paces traffic and sizes rate limits, exactly. `drip pace` sends records (lines of stdin or of files) on at a fixed rate, or runs one command per record at its slot, alone, per key, or sharing one quota with other processes. `drip audit` replays request logs through rate-limit policies, or through an nginx.conf itself, and reports admits, drops and waits; thresholds make it a CI check. `drip size` finds the rate and burst real traffic needs. `drip gate` takes one slot of a shared schedule for cron jobs and shell loops.",
            "Every decision is exact integer arithmetic on nanoseconds and exact rates. `drip help COMMAND` shows a command's manual; the guides are in docs/ of the source tree.",
        ],
        examples: &[
            Example {
                what: "what would three limiter configs do to a day of real traffic?",
                run: "drip audit fixtures/nasa_19950801.tsv --key-column host \\\n    --policies fixtures/policies.txt",
                status: 0,
            },
            Example {
                what: "what limit should I set? (at most 0.1 % dropped)",
                run: "drip size fixtures/nasa_19950801.tsv --key-column host -p nginx \\\n    --max-drop-rate 0.1",
                status: 0,
            },
            Example {
                what: "one command per record at 10/s, at most 4 at once",
                run: "cut -f5 fixtures/nasa_19950801.tsv | sed -n 2,6p \\\n    | drip pace -r 10/s -j 4 -- echo GET",
                status: 0,
            },
        ],
        exit_status: &[
            ("0", "success"),
            (
                "1",
                "a threshold or target was not met (audit, size), or a command failed (pace)",
            ),
            (
                "2",
                "bad usage or input: one line on stderr says what, where and what to do",
            ),
            ("3", "pace and gate: --on-full fail, or gate's --max-wait"),
        ],
        environment: SHARE_ENV,
        files: SHARE_FILES,
        see_also: SEE_ALSO,
    },
    Page {
        command: "pace",
        description: &[
            "Reads records (lines, or NUL-terminated with -0) from the files given, or stdin, and writes them to stdout at --rate, evenly spaced, or at any policy's pace (--policy). Bytes pass through untouched; every line read is written, refused (--on-full drop, into --rejects), or counted as unsent when the run stops early.",
            "With `-- COMMAND`, one command is started per record at its slot instead ('{}' in its arguments is the record, else the record is its last argument), at most --jobs at once; records whose command failed go to --failed, those not started when the run stops to --rejects, so a rerun on either file resumes.",
            "--key, --key-field and --key-json pace each key on its own schedule; --share and --share-key share one schedule with other processes; --control takes live commands from a FIFO; --replay sends lines at their logged times.",
        ],
        examples: &[
            Example {
                what: "send a file's lines at 10 a second",
                run: "drip pace --rate 10/s fixtures/small.csv",
                status: 0,
            },
            Example {
                what: "a command per record, 4 at once; after Ctrl-C, rest.txt holds the rest",
                run: "cut -f5 fixtures/nasa_19950801.tsv | sed -n 2,6p > urls.txt\ndrip pace -r 10/s -j 4 --rejects rest.txt urls.txt -- echo GET",
                status: 0,
            },
            Example {
                what: "each customer on its own 2/s schedule",
                run: "printf '{\"c\":\"acme\"}\\n{\"c\":\"zeta\"}\\n' | drip pace --rate 2/s --key-json c",
                status: 0,
            },
            Example {
                what: "the README's recipe: failures to failed.txt, done records in urls.journal (after Ctrl-C, the same command resumes)",
                run: "cut -f5 fixtures/nasa_19950801.tsv | sed -n 2,6p > urls.txt\ndrip pace --rate 10/s -j 4 --failed failed.txt --journal urls.journal urls.txt -- echo GET",
                status: 0,
            },
            Example {
                what: "per customer, the customer named anywhere in a JSON line",
                run: "printf '{\"customer\":\"acme\",\"id\":1}\\n{\"id\":2,\"customer\":\"zeta\"}\\n' \\\n  | drip pace --rate 2/s --key-json customer",
                status: 0,
            },
            Example {
                what: "share one 5/s quota with every process on this host that names it",
                run: "sed -n 2,4p fixtures/small.csv | drip pace --rate 5/s --share-key api",
                status: 0,
            },
            Example {
                what: "a summary on stderr at the end, as JSON",
                run: "drip pace --rate 100/s --stats=json fixtures/small.csv > /dev/null",
                status: 0,
            },
        ],
        exit_status: PACE_EXIT,
        environment: SHARE_ENV,
        files: &[
            (
                "--rejects FILE, --failed FILE",
                "Records refused or not sent, and records whose command failed, each as it came: a rerun on the file resumes.",
            ),
            (
                "--journal FILE",
                "Which records are done, by position, after a line naming the input: a rerun on the same input with the same FILE skips them. Exact after SIGINT, SIGTERM and SIGHUP; after SIGKILL at most the records in flight run again.",
            ),
            (
                "--control PATH",
                "A FIFO (created if absent, removed at exit) read for live commands: pause DUR, pause, resume, rate R, burst N, stats.",
            ),
            SHARE_FILES[0],
            SHARE_FILES[1],
        ],
        see_also: SEE_ALSO,
    },
    Page {
        command: "audit",
        description: &[
            "Replays timestamped request logs (CSV, nginx and Apache access logs, JSON lines, ALB, ELB, CloudFront and IIS, HAProxy, S3, Squid, Traefik, Envoy; plain or gzip) through rate-limit policies, each row at its logged time, and reports per policy what was admitted, delayed and dropped, the waits, and the keys hurt most.",
            "The policies are specs (-p, repeatable, or a --policies file), or the gateway's config itself: an nginx.conf (--nginx-conf: its limit_req zones, maps and locations, each row routed by its URI), a haproxy.cfg (--haproxy-cfg: its stick-tables, track-sc and deny/tarpit rules, ACLs and use_backend, each row entering the frontend its log line names) or a Traefik dynamic configuration (--traefik-config: the rateLimit middlewares of the router each row's log line names). --verify-column checks the emulation against what the gateway logged ($limit_req_status; HAProxy's termination_state; Traefik's DownstreamStatus).",
            "Thresholds (--max-drop-rate, --max-wait, ...) make the run fail with exit status 1, so an audit is a CI check of a limiter config against real traffic. Reports: a table, JSON, CSV, Markdown or one HTML file (--format), and timeline plots (--plot).",
        ],
        examples: &[
            Example {
                what: "one gcra bucket per client",
                run: "drip audit fixtures/small.csv --key-column client -p gcra:rate=2/s,burst=3",
                status: 0,
            },
            Example {
                what: "what would this nginx.conf do to my traffic?",
                run: "drip audit fixtures/nasa_19950801.log.gz \\\n    --nginx-conf fixtures/nginx/discourse/discourse.conf",
                status: 0,
            },
            Example {
                what: "a CI check: exit 1 when more than 1 % is dropped",
                run: "drip audit fixtures/small.csv -p gcra:rate=1/s --max-drop-rate 1",
                status: 1,
            },
            Example {
                what: "a haproxy.cfg against the log HAProxy wrote, each decision checked",
                run: "drip audit fixtures/haproxy/access.log \\\n    --haproxy-cfg fixtures/haproxy/haproxy.cfg --verify-column termination_state",
                status: 0,
            },
            Example {
                what: "three limiter configs on a real access log, one bucket per client",
                run: "drip audit fixtures/nasa_19950801.tsv --key-column host --policies fixtures/policies.txt",
                status: 0,
            },
            Example {
                what: "the CI check as a Markdown report, with a wait threshold too",
                run: "drip audit fixtures/nasa_19950801.tsv --key-column host --policies fixtures/policies.txt \\\n    --max-drop-rate 1 --max-wait 2s -f markdown > report.md",
                status: 1,
            },
            Example {
                what: "a timeline plot and a self-contained HTML report",
                run: "drip audit fixtures/nasa_19950801.tsv --key-column host --policies fixtures/policies.txt \\\n    --plot timeline.svg -f html > report.html",
                status: 0,
            },
        ],
        exit_status: LOG_EXIT,
        environment: NO_ENV,
        files: &[
            (
                "--policies FILE",
                "Policy specs, one per line; '#' starts a comment.",
            ),
            (
                "--nginx-conf FILE",
                "An nginx.conf read as nginx reads it: its includes, a conf.d fragment, server names, locations, maps and geo.",
            ),
            (
                "--haproxy-cfg FILE",
                "A haproxy.cfg read as HAProxy 2.6 reads it: its frontends, backends and listens, stick-tables, http-request and tcp-request rules, ACLs and backend switching.",
            ),
            (
                "--traefik-config FILE",
                "A Traefik v3 dynamic configuration: the file provider's YAML or TOML, or Middleware and IngressRoute resources; routers, chains and rateLimit middlewares with their sourceCriterion.",
            ),
        ],
        see_also: SEE_ALSO,
    },
    Page {
        command: "gate",
        description: &[
            "Waits for one slot of a schedule shared with other drip processes (pace or gate), then exits 0, or runs the command after '--' in its own place: its exit status, signals and output are the gate's.",
            "On one host --share-key NAME is enough (a private state file); across hosts give every process the same --share redis://HOST/0 (or DRIP_SHARE). Use the same --rate and --burst everywhere on one schedule.",
        ],
        examples: &[
            Example {
                what: "three runs of a command, at most 5 a second between them",
                run: "for i in 1 2 3; do drip gate --rate 5/s --share-key api -- date +%T.%N; done",
                status: 0,
            },
            Example {
                what: "say how long the gate waited",
                run: "drip gate --rate 2/s --share-key api --print-wait",
                status: 0,
            },
            Example {
                what: "give up (exit 3) rather than wait longer than 10 s",
                run: "drip gate --rate 1/min --share-key nightly --max-wait 10s -- echo started",
                status: 0,
            },
        ],
        exit_status: GATE_EXIT,
        environment: SHARE_ENV,
        files: SHARE_FILES,
        see_also: SEE_ALSO,
    },
    Page {
        command: "size",
        description: &[
            "Finds the smallest limit a log's real traffic needs: for the policy given (-p) it sweeps rates (or windows) and bursts over the log, finds the frontier of settings that meet the targets (--max-drop-rate, --max-drops, --max-keys-hurt, and for delaying policies --max-wait, 1 s unless given), and recommends the smallest, with the drops and waits it costs and the config to paste.",
            "Points the log is too short to test are marked and never picked; --per 1h makes the targets hold in every hour, --headroom 1.5 sizes for the same traffic arriving 1.5 times as fast, --current audits the config in force next to the recommendation.",
            "With --nginx-conf instead of -p, each limit_req of the config (zone x location, routed as audit --nginx-conf routes) is sized on the rows it sees, the other limits of the request held as written, and the answer is a table per limit and a unified diff of the config files (rate=, burst= and zone sizes only) that patch -p1 applies; --patch FILE writes it to FILE.",
            "With --haproxy-cfg, each rule refusing above sc_http_req_rate is sized on the rows it applies to (frontends first, each on the rows the sized ones before it pass), outliers left out; the patch changes only the numbers and is checked with haproxy -c. With --replicas N --total RATE, -p's policy is sized per replica: the largest value for which N instances behind --balance let no key through more than RATE.",
        ],
        examples: &[
            Example {
                what: "the nginx limit_req that drops at most 0.1 % of the requests",
                run: "drip size fixtures/nasa_19950801.tsv --key-column host -p nginx \\\n    --max-drop-rate 0.1",
                status: 0,
            },
            Example {
                what: "one global gcra, the target holding in every hour",
                run: "drip size fixtures/nasa_19950801.tsv -p gcra --max-drop-rate 0.1 --per 1h",
                status: 0,
            },
            Example {
                what: "size the limit_req lines of the config you run, as a patch",
                run: "drip size fixtures/nasa_19950801.log.gz --max-drop-rate 0.1 \\\n    --nginx-conf fixtures/nginx/discourse/discourse.conf",
                status: 0,
            },
            Example {
                what: "room for the same traffic arriving twice as fast",
                run: "drip size fixtures/nasa_19950801.tsv -p nginx --max-drop-rate 1 --headroom 2",
                status: 0,
            },
            Example {
                what: "the config in force beside the recommendation, and the frontier drawn",
                run: "drip size fixtures/nasa_19950801.tsv --key-column host -p nginx --max-drop-rate 0.1 \\\n    --current nginx:rate=1r/s,burst=5 --plot frontier.svg",
                status: 0,
            },
        ],
        exit_status: SIZE_EXIT,
        environment: NO_ENV,
        files: &[
            (
                "--exclude-keys FILE",
                "Keys, one per line, left out of the targets (still replayed and reported).",
            ),
            (
                "--patch FILE",
                "With --nginx-conf: the unified diff of the config files, each named by its real path relative to the deepest folder that holds them all (a/ and b/ prefixes): the report prints the command that applies it (cd there, patch -p1 < FILE, nginx -t). '-' writes the patch alone to stdout.",
            ),
        ],
        see_also: SEE_ALSO,
    },
    Page {
        command: "completions",
        description: &[
            "Prints the completion script of every command and flag for bash, zsh, fish, elvish or powershell on stdout, generated from the same definitions as the parser.",
        ],
        examples: &[
            Example {
                what: "bash (needs the bash-completion package)",
                run: "mkdir -p ~/.local/share/bash-completion/completions\ndrip completions bash > ~/.local/share/bash-completion/completions/drip",
                status: 0,
            },
            Example {
                what: "zsh: a directory on $fpath, before compinit in ~/.zshrc",
                run: "mkdir -p ~/.zfunc && drip completions zsh > ~/.zfunc/_drip",
                status: 0,
            },
            Example {
                what: "fish: loaded on first use",
                run: "mkdir -p ~/.config/fish/completions\ndrip completions fish > ~/.config/fish/completions/drip.fish",
                status: 0,
            },
        ],
        exit_status: &[
            ("0", "the script was written"),
            ("2", "an unknown shell, or stdout cannot be written"),
        ],
        environment: &[(
            "(none)",
            "Reads no environment variable; where each shell looks is listed in EXAMPLES.",
        )],
        files: &[(
            "~/.local/share/bash-completion/completions/drip, ~/.zfunc/_drip, ~/.config/fish/completions/drip.fish",
            "Where the scripts usually go.",
        )],
        see_also: SEE_ALSO,
    },
    Page {
        command: "help",
        description: &[
            "Shows the manual of drip (no COMMAND) or of one command. When man(1) is installed and finds the page drip-COMMAND (the pages of man/ copied where man looks, or MANPATH naming a folder that holds man1/), it runs man on it; else it prints the same sections as plain text on stdout: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (as --help shows them), EXAMPLES, EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO.",
        ],
        examples: &[
            Example {
                what: "the manual of drip audit",
                run: "drip help audit",
                status: 0,
            },
            Example {
                what: "every command's exit statuses, without a pager",
                run: "for c in pace audit; do drip help $c | sed -n '/^EXIT/,/^ENV/p'; done",
                status: 0,
            },
            Example {
                what: "drip's own page: the commands, and where to start",
                run: "drip help",
                status: 0,
            },
        ],
        exit_status: &[
            ("0", "the manual was shown"),
            ("2", "an unknown command, or stdout cannot be written"),
            ("N", "man's exit status, when man showed the page"),
        ],
        environment: &[
            ("PATH", "Where man is looked for."),
            (
                "MANPATH, MANPAGER, MANWIDTH",
                "Read by man: where the pages are, the pager, the width.",
            ),
        ],
        files: &[(
            "man/drip.1, man/drip-COMMAND.1",
            "The pages, in the source tree; install them with: install -m 644 man/*.1 /usr/local/share/man/man1/",
        )],
        see_also: SEE_ALSO,
    },
];

/// The page of `command` (`""`: drip's own).
pub fn page(command: &str) -> Option<&'static Page> {
    PAGES.iter().find(|p| p.command == command)
}
