//! Fitting the plain-text report to a terminal: the width to fit
//! (`$COLUMNS`, else the terminal's, else 80; none with `--wide`), prose
//! wrapped at spaces, and a table too wide for it cut into groups of
//! columns, each repeating the first (the row's name), or, when even two
//! columns do not fit, shown a record per row. Nothing is left out:
//! every cell of the wide table is in the fitted one. Widths count
//! characters, after escaping ([`page::one_line`](super::page::one_line)).

use std::io::IsTerminal;

/// The narrowest width fitted: below it a line is given 20 columns.
const NARROWEST: usize = 20;

/// The width the report fits, or `None` (`wide`): every line as long as
/// it is.
pub fn width(wide: bool) -> Option<usize> {
    if wide {
        return None;
    }
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    Some(columns.or_else(terminal).unwrap_or(80).max(NARROWEST))
}

/// The columns of the terminal standard output is, if it is one.
fn terminal() -> Option<usize> {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ writes one winsize into the struct it is given.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// `line` in lines of at most `width` characters, broken at spaces; the
/// lines after the first are indented two more than it is. A word longer
/// than a line is cut.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    if line.chars().count() <= width {
        return vec![line.to_string()];
    }
    let lead = (line.len() - line.trim_start_matches(' ').len()).min(width / 2);
    let next = " ".repeat((lead + 2).min(width / 2));
    let mut out = Vec::new();
    let mut current = " ".repeat(lead);
    let mut has_word = false;
    for word in line[lead..].split(' ').filter(|w| !w.is_empty()) {
        let room = width - current.chars().count();
        let len = word.chars().count();
        if has_word && len < room {
            current.push(' ');
            current.push_str(word);
            continue;
        }
        if has_word {
            out.push(std::mem::replace(&mut current, next.clone()));
        }
        let mut rest: Vec<char> = word.chars().collect();
        loop {
            let room = width - current.chars().count();
            if rest.len() <= room {
                current.extend(rest);
                break;
            }
            current.extend(rest.drain(..room));
            out.push(std::mem::replace(&mut current, next.clone()));
        }
        has_word = true;
    }
    out.push(current);
    out
}

/// Columns of `widths` (two spaces apart) in groups that each fit
/// `width`, each starting with column 0, as few groups as fit and as even
/// as they can be (the narrowest width that needs no more of them);
/// `None` when column 0 and any other do not fit together (a record per
/// row then).
pub fn groups(widths: &[usize], width: usize) -> Option<Vec<Vec<usize>>> {
    let total: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    if total <= width || widths.len() < 2 {
        return Some(vec![(0..widths.len()).collect()]);
    }
    let fewest = greedy(widths, width)?.len();
    let (mut lo, mut hi) = (1, width);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match greedy(widths, mid) {
            Some(g) if g.len() == fewest => hi = mid,
            _ => lo = mid + 1,
        }
    }
    greedy(widths, hi)
}

/// Columns taken in order into each group while they fit `width`.
fn greedy(widths: &[usize], width: usize) -> Option<Vec<Vec<usize>>> {
    let mut groups = Vec::new();
    let mut group = vec![0];
    let mut used = widths[0];
    for (i, &w) in widths.iter().enumerate().skip(1) {
        if used + 2 + w <= width {
            group.push(i);
            used += 2 + w;
            continue;
        }
        if group.len() == 1 || widths[0] + 2 + w > width {
            return None;
        }
        groups.push(std::mem::replace(&mut group, vec![0, i]));
        used = widths[0] + 2 + w;
    }
    groups.push(group);
    Some(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_at_spaces_with_its_indent() {
        assert_eq!(wrap("short", 10), vec!["short"]);
        assert_eq!(
            wrap("  one two three four", 12),
            vec!["  one two", "    three", "    four"]
        );
        let cut = wrap("a abcdefghijklmnop", 8);
        assert_eq!(cut, vec!["a", "  abcdef", "  ghijkl", "  mnop"]);
        for w in [20, 33, 80] {
            let text = "word ".repeat(50) + &"x".repeat(100);
            let lines = wrap(&text, w);
            assert!(lines.iter().all(|l| l.chars().count() <= w), "{lines:?}");
            let back: String = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join("");
            assert_eq!(back.replace(' ', ""), text.replace(' ', ""));
        }
    }

    #[test]
    fn columns_are_grouped_behind_the_first() {
        assert_eq!(groups(&[5, 5, 5], 80), Some(vec![vec![0, 1, 2]]));
        assert_eq!(
            groups(&[10, 20, 20, 20, 20], 54),
            Some(vec![vec![0, 1, 2], vec![0, 3, 4]])
        );
        assert_eq!(groups(&[10, 20, 60], 54), None);
        // Even groups, not a full one and a last column alone.
        assert_eq!(
            groups(&[10, 10, 10, 10, 10, 10], 58),
            Some(vec![vec![0, 1, 2, 3], vec![0, 4, 5]])
        );
        assert_eq!(groups(&[60, 20], 54), None);
    }
}
