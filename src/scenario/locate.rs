//! Locating a path in JSON text: the byte offset, line and column of the value at a dotted path
//! in the original file, so errors can point at it.

pub(super) fn json_pointer(segs: &[String]) -> String {
    segs.iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

pub(crate) fn offset_to_line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (line, offset - line_start + 1)
}

/// Byte offset of the value at `path` in the JSON `text` (numeric segments index arrays), if the
/// text spells it out.
pub(crate) fn locate(text: &str, path: &[String]) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    for seg in path {
        match *b.get(i)? {
            b'{' => i = find_key(text, i + 1, seg)?,
            b'[' => {
                let idx: usize = seg.parse().ok()?;
                i = skip_ws(b, i + 1);
                for _ in 0..idx {
                    if *b.get(i)? == b']' {
                        return None;
                    }
                    i = skip_ws(b, skip_value(b, i)?);
                    if *b.get(i)? != b',' {
                        return None;
                    }
                    i = skip_ws(b, i + 1);
                }
                if *b.get(i)? == b']' {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(i)
}

/// From just inside an object's `{`, the offset of the value of member `key`.
fn find_key(text: &str, mut i: usize, key: &str) -> Option<usize> {
    let b = text.as_bytes();
    loop {
        i = skip_ws(b, i);
        if *b.get(i)? != b'"' {
            return None;
        }
        let end = skip_string(b, i)?;
        let name: String = serde_json::from_str(text.get(i..end)?).ok()?;
        i = skip_ws(b, end);
        if *b.get(i)? != b':' {
            return None;
        }
        i = skip_ws(b, i + 1);
        if name == key {
            return Some(i);
        }
        i = skip_ws(b, skip_value(b, i)?);
        if *b.get(i)? != b',' {
            return None;
        }
        i += 1;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// From an opening quote, the offset just past the closing quote.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match *b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// From the start of a value, the offset just past it.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match *b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !b[i].is_ascii_whitespace()
            {
                i += 1;
            }
            Some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_finds_values() {
        let text = "{\"a\": {\"b\\\"\": [1, {\"c\": \"x,]}\"}, [2, 3]], \"d\": 4}, \"e\": true}";
        let seg = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = |p: &[&str]| locate(text, &seg(p)).map(|i| &text[i..i + 1]);
        assert_eq!(at(&["a", "d"]), Some("4"));
        assert_eq!(at(&["a", "b\"", "1", "c"]), Some("\""));
        assert_eq!(at(&["a", "b\"", "2", "1"]), Some("3"));
        assert_eq!(at(&["e"]), Some("t"));
        assert_eq!(at(&["a", "b\"", "3"]), None);
        assert_eq!(at(&["z"]), None);
        assert_eq!(offset_to_line_col("ab\ncd", 4), (2, 2));
    }
}
