//! Text on a plot: what may be drawn, how wide it is, and how a line is
//! made to fit its room (wrapped at spaces, or shortened with `…` and
//! "and N more" so nothing runs off the edge).
//!
//! Widths are those of DejaVu Sans, the widest of the sans-serif fonts a
//! viewer falls back to (Liberation Sans, Arial and Helvetica are
//! narrower), so a line that fits here fits in them too.

/// Advance widths of ASCII `' '..='~'` in DejaVu Sans, in thousandths of
/// an em (read from the font's `hmtx` table).
const ASCII_WIDTH: [u16; 95] = [
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632,
    575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685,
    611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579,
    278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
];

/// Characters outside ASCII count as one em: no letter or symbol of
/// DejaVu Sans is wider, and wide East Asian characters are one em.
const OTHER_WIDTH: u16 = 1000;

/// `s` as text to draw: control and invisible characters shown as
/// `\u{1b}` or `\n` (plotters escapes `<`, `&` and quotes itself).
pub(super) fn svg_text(s: &str) -> String {
    super::super::page::one_line(s)
}

/// Width in pixels of `s` drawn at plotters' font size `px`: the height
/// of a line, 1.24 em (the SVG says `font-size` `px / 1.24`).
pub(super) fn width(s: &str, px: u32) -> f64 {
    width_at_em(s, em(px))
}

/// Width in pixels of `s` in a font of `em` pixels (an SVG `font-size`).
pub fn width_at_em(s: &str, em: f64) -> f64 {
    let milli: u64 = s.chars().map(|c| u64::from(char_width(c))).sum();
    milli as f64 * em / 1000.0
}

/// The em, in pixels, of plotters' font size `px`.
fn em(px: u32) -> f64 {
    f64::from(px) / 1.24
}

fn char_width(c: char) -> u16 {
    match c {
        ' '..='~' => ASCII_WIDTH[c as usize - ' ' as usize],
        _ => OTHER_WIDTH,
    }
}

/// `s` whole when it fits in `room` pixels at `px`, else cut where it
/// still fits with `…` after it.
pub(super) fn shorten(s: &str, px: u32, room: f64) -> String {
    if width(s, px) <= room {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let kept = fitting(&chars, px, room - width("…", px));
    let mut out = chars[..kept]
        .iter()
        .collect::<String>()
        .trim_end()
        .to_string();
    out.push('…');
    out
}

/// `s` in lines that fit `room` pixels at `px`, each cut after the last
/// space or comma that lets it fit (past its first third), else where it
/// stops fitting. Nothing is left out: the lines joined are `s` less the
/// spaces at the cuts.
pub(super) fn wrap(s: &str, px: u32, room: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest: Vec<char> = s.chars().collect();
    loop {
        let fits = fitting(&rest, px, room);
        if fits == rest.len() {
            break;
        }
        let cut = rest[..fits]
            .iter()
            .rposition(|c| *c == ' ' || *c == ',')
            .filter(|&i| i + 1 > fits / 3)
            .map_or(fits.max(1), |i| i + 1);
        let line: String = rest[..cut].iter().collect();
        lines.push(line.trim_end().to_string());
        rest.drain(..cut);
        while rest.first() == Some(&' ') {
            rest.remove(0);
        }
    }
    lines.push(rest.into_iter().collect());
    lines
}

/// How many of `chars`, from the first, fit in `room` pixels at `px`.
fn fitting(chars: &[char], px: u32, room: f64) -> usize {
    let mut used = 0.0;
    for (i, c) in chars.iter().enumerate() {
        used += f64::from(char_width(*c)) * em(px) / 1000.0;
        if used > room {
            return i;
        }
    }
    chars.len()
}

/// A title naming input files, `{lead}: {files}, {tail}`, that fits `room`
/// pixels at `px`: the files as given; else by their file names; else the
/// first few and "and N more files". Names are shown as [`svg_text`] does.
pub fn with_files(lead: &str, files: &[String], tail: &str, px: u32, room: f64) -> String {
    let say = |names: &str| svg_text(&format!("{lead}: {names}, {tail}"));
    let whole = say(&files.join(", "));
    if width(&whole, px) <= room {
        return whole;
    }
    let names: Vec<&str> = files.iter().map(|f| file_name(f)).collect();
    let short = say(&names.join(", "));
    if width(&short, px) <= room || names.len() < 2 {
        return shorten(&short, px, room);
    }
    for shown in (1..names.len()).rev() {
        let more = names.len() - shown;
        let text = say(&format!(
            "{} and {more} more files",
            names[..shown].join(", ")
        ));
        if width(&text, px) <= room {
            return text;
        }
    }
    let text = say(&format!("{} files", names.len()));
    shorten(&text, px, room)
}

/// The last part of a path (`-` and names without a folder as they are).
fn file_name(path: &str) -> &str {
    path.rsplit('/').find(|p| !p.is_empty()).unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_dejavu_sans() {
        assert_eq!(width_at_em("m", 1000.0), 974.0);
        assert_eq!(width_at_em("il", 1000.0), 556.0);
        assert_eq!(width_at_em("—", 10.0), 10.0);
        assert_eq!(width("—", 124), 100.0);
        assert_eq!(width("", 16), 0.0);
    }

    #[test]
    fn shorten_keeps_what_fits_and_says_it_was_cut() {
        assert_eq!(shorten("short", 16, 500.0), "short");
        let cut = shorten(&"word ".repeat(60), 16, 300.0);
        assert!(cut.ends_with('…'), "{cut}");
        assert!(width(&cut, 16) <= 300.0, "{cut}");
        assert!(cut.len() > 30, "{cut}");
    }

    #[test]
    fn wrap_cuts_at_a_space_or_comma_and_loses_nothing() {
        assert_eq!(wrap("sent", 12, 272.0), ["sent"]);
        let spec = "recommended: nginx:rate=5r/s,burst=4,delay=2,key=$binary_remote_addr";
        let lines = wrap(spec, 12, 272.0);
        assert!(lines.len() > 1, "{lines:?}");
        assert!(lines.iter().all(|l| width(l, 12) <= 272.0), "{lines:?}");
        assert!(lines[0].ends_with(','), "{lines:?}");
        let squeezed = |s: &str| s.replace(' ', "");
        assert_eq!(squeezed(&lines.concat()), squeezed(spec));
        let wide = "m".repeat(80);
        let lines = wrap(&wide, 12, 272.0);
        assert!(lines.iter().all(|l| width(l, 12) <= 272.0), "{lines:?}");
        assert_eq!(lines.concat(), wide);
    }

    #[test]
    fn a_title_with_many_files_names_the_first_and_counts_the_rest() {
        let files: Vec<String> = (1..=30)
            .map(|i| format!("/var/log/nginx/archive/access.log.{i}"))
            .collect();
        assert_eq!(
            with_files("drip audit", &files[..2], "10 rows", 20, 1168.0),
            "drip audit: /var/log/nginx/archive/access.log.1, \
             /var/log/nginx/archive/access.log.2, 10 rows"
        );
        let t = with_files("drip audit", &files[..4], "10 rows", 20, 1168.0);
        assert!(
            t.starts_with("drip audit: access.log.1, access.log.2"),
            "{t}"
        );
        let t = with_files("drip audit", &files, "10 rows", 20, 1168.0);
        assert!(
            t.contains("and ") && t.ends_with(" more files, 10 rows"),
            "{t}"
        );
        assert!(width(&t, 20) <= 1168.0, "{t}");
        let one = ["x".repeat(300)];
        let t = with_files("drip audit", &one, "10 rows", 20, 1168.0);
        assert!(t.ends_with('…') && width(&t, 20) <= 1168.0, "{t}");
    }
}
