//! Timestamps: forms, detection, zones, the second cache, and parsers
//! that never panic.
use super::*;

const S: u64 = 1_000_000_000;

fn rfc(s: &str) -> u64 {
    parse_rfc3339(s.as_bytes()).unwrap().0
}

#[test]
fn civil_days() {
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    assert_eq!(days_from_civil(1995, 8, 1), 9_343);
}

#[test]
fn rfc3339_forms() {
    let base = 1_714_564_800 * S; // 2024-05-01T12:00:00Z
    assert_eq!(rfc("2024-05-01T12:00:00Z"), base);
    assert_eq!(rfc("2024-05-01t12:00:00z"), base);
    assert_eq!(rfc("2024-05-01 12:00:00"), base);
    assert_eq!(rfc("2024-05-01T12:00:00.5Z"), base + S / 2);
    assert_eq!(rfc("2024-05-01T12:00:00.123456789Z"), base + 123_456_789);
    assert_eq!(rfc("2024-05-01T12:00:00.1234567891Z"), base + 123_456_789);
    assert_eq!(rfc("2024-05-01T14:00:00+02:00"), base);
    assert_eq!(rfc("2024-05-01T07:30:00-0430"), base);
    assert_eq!(rfc("2024-05-01T12:00:00.186641Z"), base + 186_641_000);
    for bad in [
        "2024-13-01T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-05-01",
        "2024-05-01T12:00Z",
        "x",
    ] {
        assert!(parse_rfc3339(bad.as_bytes()).is_err(), "{bad}");
    }
    assert_eq!(rfc("2024-02-29T00:00:00Z"), 1_709_164_800 * S);
    assert_eq!(
        parse_rfc3339(b"1969-12-31T23:59:59Z"),
        Err(TimeError::BeforeEpoch)
    );
}

#[test]
fn epoch_forms_are_exact() {
    let p = |s: &str, u| parse_epoch(s.as_bytes(), u).unwrap().0;
    assert_eq!(p("1663839717.105", S), 1_663_839_717_105_000_000);
    assert_eq!(p("1646861401.5241024", S), 1_646_861_401_524_102_400);
    assert_eq!(p("1433209822425", 1_000_000), 1_433_209_822_425_000_000);
    assert_eq!(p("1700000000123456789", 1), 1_700_000_000_123_456_789);
    assert_eq!(p("1700000000.1234567899", S), 1_700_000_000_123_456_789);
    assert!(parse_epoch(b"-5", S).is_err());
    assert!(parse_epoch(b"12a", S).is_err());
    assert!(parse_epoch(b"99999999999999999999", S).is_err());
}

#[test]
fn clf_forms() {
    let p = |s: &str| parse_clf(s.as_bytes()).unwrap().0;
    assert_eq!(p("10/Oct/2000:13:55:36 -0700"), 971_211_336 * S);
    assert_eq!(p("[10/Oct/2000:13:55:36 -0700]"), 971_211_336 * S);
    assert_eq!(p("10/Oct/2000:20:55:36"), 971_211_336 * S);
    assert_eq!(
        p("06/Feb/2009:12:14:14.655"),
        1_233_922_454 * S + 655_000_000
    );
    assert!(parse_clf(b"10/Foo/2000:13:55:36 -0700").is_err());
}

#[test]
fn detection() {
    let d = |s: &str| TimeFormat::detect(s.as_bytes());
    assert_eq!(d("2024-05-01T12:00:00Z"), Some(TimeFormat::Rfc3339));
    assert_eq!(d("[10/Oct/2000:13:55:36 -0700]"), Some(TimeFormat::Clf));
    assert_eq!(d("807256800"), Some(TimeFormat::Epoch(S)));
    assert_eq!(d("1663839717.105"), Some(TimeFormat::Epoch(S)));
    assert_eq!(d("1433209822425"), Some(TimeFormat::Epoch(1_000_000)));
    assert_eq!(d("1700000000123456"), Some(TimeFormat::Epoch(1_000)));
    assert_eq!(d("1700000000123456789"), Some(TimeFormat::Epoch(1)));
    assert_eq!(d("hello"), None);
    assert_eq!(d("1960-01-01T00:00:00Z"), Some(TimeFormat::Rfc3339));
    assert_eq!(d("2024-13-01T00:00:00Z"), Some(TimeFormat::Rfc3339));
    assert_eq!(d("42"), None);
}

#[test]
fn the_second_cache_reads_the_same_instants() {
    for (format, values) in [
        (
            TimeFormat::Rfc3339,
            &[
                "2024-05-01T12:00:00Z",
                "2024-05-01T12:00:00.5Z",
                "2024-05-01T12:00:00.25+02:00",
                "2024-05-01T12:00:00 +0100",
                "2024-05-01T12:00:00.999999999Z",
                "2024-05-01T12:00:01Z",
                "2024-05-01T12:00:00.1x",
                "2024-05-01T12:00:00.",
                "1970-01-01T00:00:00+01:00",
            ][..],
        ),
        (
            TimeFormat::Clf,
            &[
                "[10/Oct/2000:13:55:36 -0700]",
                "10/Oct/2000:13:55:36.5 -0700",
                "[10/Oct/2000:13:55:36]",
                "10/Oct/2000:13:55:36 +0000",
                "10/Oct/2000:13:55:36 x",
                // Tails repeated, changed, and changed back.
                "10/Oct/2000:13:55:36 -0700",
                "10/Oct/2000:13:55:36 -0700",
                "10/Oct/2000:13:55:36 +0130",
                "10/Oct/2000:13:55:36 -0700",
                "[10/Oct/2000:13:55:36]",
                "10/Oct/2000:13:55:36 -07001",
                "10/Oct/2000:13:55:36.25 -0700",
                "10/Oct/2000:13:55:36.25 -0700",
                "10/Oct/2000:13:55:36.123456789 -0700",
                "10/Oct/2000:13:55:37 -0700",
            ][..],
        ),
    ] {
        let mut p = TimeParser::new(format.clone(), None);
        for v in values {
            assert_eq!(
                p.parse(v.as_bytes()),
                format.parse_value(v.as_bytes()),
                "{v}"
            );
        }
    }
}

#[test]
fn naive_times_are_read_in_the_zone_given() {
    let ny = Zone::parse("America/New_York").unwrap();
    let at = |f: &str, v: &str, z: Option<&Zone>| {
        TimeFormat::parse(f)
            .parse_value_in(v.as_bytes(), z)
            .unwrap()
    };
    // Summer: EDT, UTC−4; winter: EST, UTC−5.
    assert_eq!(
        at("rfc3339", "2024-07-01 12:00:00", Some(&ny)),
        (Nanos(1_719_849_600 * S), true)
    );
    assert_eq!(
        at("rfc3339", "2024-01-01T12:00:00.5", Some(&ny)),
        (Nanos(1_704_128_400 * S + S / 2), true)
    );
    assert_eq!(
        at("clf", "01/Jul/2024:12:00:00", Some(&ny)).0,
        Nanos(1_719_849_600 * S)
    );
    assert_eq!(
        at("%d.%m.%Y %H:%M", "01.07.2024 12:00", Some(&ny)),
        (Nanos(1_719_849_600 * S), true)
    );
    // An explicit offset wins over the zone; epochs are UTC by definition.
    assert_eq!(
        at("rfc3339", "2024-07-01T12:00:00Z", Some(&ny)),
        (Nanos(1_719_835_200 * S), false)
    );
    assert_eq!(
        at("epoch-s", "1719835200", Some(&ny)),
        (Nanos(1_719_835_200 * S), false)
    );
    // Without a zone, naive is UTC (and said to be naive).
    assert_eq!(
        at("rfc3339", "2024-07-01 12:00:00", None),
        (Nanos(1_719_835_200 * S), true)
    );
    // Fixed offsets and names.
    let plus2 = Zone::parse("+02:00").unwrap();
    assert_eq!(
        at("rfc3339", "2024-07-01 14:00:00", Some(&plus2)).0,
        Nanos(1_719_835_200 * S)
    );
    assert!(Zone::parse("-0700").is_ok());
    assert!(Zone::parse("UTC").is_ok());
    let e = Zone::parse("Nowhere/Nope").unwrap_err().to_string();
    assert!(e.contains("unknown time zone 'Nowhere/Nope'"), "{e}");
    // The second cache keeps the zone's offset of its second.
    let mut p = TimeParser::new(TimeFormat::Rfc3339, Some(ny));
    assert_eq!(
        p.parse(b"2024-07-01 12:00:00").unwrap(),
        Nanos(1_719_849_600 * S)
    );
    assert_eq!(
        p.parse(b"2024-07-01 12:00:00.25").unwrap(),
        Nanos(1_719_849_600 * S + S / 4)
    );
    assert!(p.naive_seen);
}

#[test]
fn the_repeated_hour_is_read_in_order_and_the_skipped_one_named() {
    let ny = Zone::parse("America/New_York").unwrap();
    for (format, day) in [
        (TimeFormat::Rfc3339, "2024-11-03 "),
        (TimeFormat::Clf, "03/Nov/2024:"),
    ] {
        let mut p = TimeParser::new(format, Some(ny.clone()));
        // 01:30 and 01:59:59 EDT, then 01:00:30 and 01:30 EST.
        let read: Vec<_> = ["01:30:00", "01:59:59", "01:00:30", "01:30:00"]
            .map(|t| {
                p.parse(format!("{day}{t}").as_bytes())
                    .map(|t| t.0 / S)
                    .unwrap()
            })
            .into();
        assert_eq!(
            read,
            [1_730_611_800, 1_730_613_599, 1_730_613_630, 1_730_615_400]
        );
    }
    for (format, v) in [
        (TimeFormat::Clf, "10/Mar/2024:02:30:00"),
        (TimeFormat::parse("%d.%m.%Y %H:%M"), "10.03.2024 02:30"),
    ] {
        let e = TimeParser::new(format, Some(ny.clone()))
            .parse(v.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("2024-03-10T02:30:00 does not exist in America/New_York"),
            "{e}"
        );
    }
}

#[test]
fn strftime_patterns() {
    let f = TimeFormat::parse("%d.%m.%Y %H:%M:%S");
    assert_eq!(
        f.parse_value(b"01.05.2024 12:00:00").unwrap().0,
        1_714_564_800 * S
    );
    let f = TimeFormat::parse("%Y-%m-%d %H:%M:%S %z");
    assert_eq!(
        f.parse_value(b"2024-05-01 14:00:00 +0200").unwrap().0,
        1_714_564_800 * S
    );
    assert!(f.parse_value(b"yesterday").is_err());
}

#[cfg(test)]
mod fuzz {
    use super::*;

    /// Random near-timestamps never panic any parser (values are the user's data).
    #[test]
    fn parsers_never_panic() {
        const ALPHABET: &[u8] = b"0123456789-:T.+Z /[]tzJanOctx,\x00\xff";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let seeds = [
            "2024-05-01T12:00:00.123456789+02:00",
            "[10/Oct/2000:13:55:36 -0700]",
            "1700000000.123",
        ];
        let formats = [
            TimeFormat::Auto,
            TimeFormat::Rfc3339,
            TimeFormat::Clf,
            TimeFormat::Epoch(1),
            TimeFormat::Epoch(1_000_000_000),
            TimeFormat::Strftime("%Y-%m-%d %H:%M:%S".into()),
        ];
        // Parsers kept across values exercise the second cache too.
        let ny = Zone::parse("America/New_York").unwrap();
        let zones = [None, Some(ny)];
        let mut parsers: Vec<(TimeParser, Option<Zone>)> = formats
            .iter()
            .flat_map(|f| {
                zones
                    .iter()
                    .map(|z| (TimeParser::new(f.clone(), z.clone()), z.clone()))
            })
            .collect();
        for i in 0..30_000 {
            let mut v: Vec<u8> = seeds[i % 3].as_bytes().to_vec();
            for _ in 0..(next() % 4) {
                let at = (next() as usize) % (v.len() + 1);
                match next() % 3 {
                    0 if at < v.len() => {
                        v.remove(at);
                    }
                    1 if at < v.len() => v[at] = ALPHABET[(next() as usize) % ALPHABET.len()],
                    _ => v.insert(at, ALPHABET[(next() as usize) % ALPHABET.len()]),
                }
            }
            let _ = TimeFormat::detect(&v);
            for (p, z) in &mut parsers {
                let fresh = p.format.parse_value_in(&v, z.as_ref()).map(|(t, _)| t);
                assert_eq!(p.parse(&v), fresh, "{:?}", String::from_utf8_lossy(&v));
            }
        }
    }
}
