//! Text tables whose columns line up whatever their cells hold (`check`'s rules, `diff`'s
//! metrics): each column is as wide as its widest cell (or its minimum width, which keeps the
//! usual tables as they always looked), counted in characters, not bytes, so
//! `≤ $1000.00` or `×` take one column per character as the terminal shows them (wide East
//! Asian characters, which take two, are not measured apart).

/// How a column's cells sit in its width, and the spaces before it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Column {
    /// Right-aligned (numbers), else left-aligned (names, verdicts).
    pub(crate) right: bool,
    /// Spaces between this column and the one before it (before the first: none).
    pub(crate) gap: usize,
    /// The column's least width, in characters; a wider cell widens the whole column.
    pub(crate) min: usize,
}

/// A left-aligned column `gap` spaces after the one before it, at least `min` characters wide.
pub(crate) const fn left(gap: usize, min: usize) -> Column {
    Column {
        right: false,
        gap,
        min,
    }
}

/// A right-aligned column `gap` spaces after the one before it, at least `min` characters
/// wide.
pub(crate) const fn right(gap: usize, min: usize) -> Column {
    Column {
        right: true,
        gap,
        min,
    }
}

/// `rows` (the header first) as lines, each after `indent`: every cell of a column starts at
/// the same character offset. A row with fewer cells than `columns` ends early; the trailing
/// spaces of a line are dropped (a last column left empty leaves none).
pub(crate) fn table(indent: &str, columns: &[Column], rows: &[Vec<String>]) -> Vec<String> {
    let width = |i: usize| {
        rows.iter()
            .filter_map(|r| r.get(i))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| width(i).max(columns[i].min))
        .collect();
    rows.iter()
        .map(|row| {
            let mut line = indent.to_string();
            for (i, (cell, col)) in row.iter().zip(columns).enumerate() {
                if i > 0 {
                    line.push_str(&" ".repeat(col.gap));
                }
                let pad = " ".repeat(widths[i] - cell.chars().count());
                if col.right {
                    line.push_str(&pad);
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&pad);
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_start_at_the_same_character_offset_whatever_the_cells() {
        let rows = vec![
            vec!["metric".to_string(), "value".into(), "verdict".into()],
            vec![
                "a_long.dotted.metric_name_p99_ms".into(),
                "≤ $1.00".into(),
                "ok".into(),
            ],
            vec!["x".into(), "12345678901".into(), String::new()],
        ];
        let lines = table("  ", &[left(0, 10), right(1, 3), left(2, 0)], &rows);
        assert_eq!(
            lines,
            [
                "  metric                                 value  verdict",
                "  a_long.dotted.metric_name_p99_ms     ≤ $1.00  ok",
                "  x                                12345678901",
            ]
        );
        let short = [vec!["ab".to_string(), "1".into()]];
        assert_eq!(table("", &[left(0, 4), right(1, 3)], &short), ["ab     1"]);
    }
}
