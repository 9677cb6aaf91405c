//! Python literals as agent frameworks write them into traces: `str()` of a dict.
//!
//! Python agent frameworks record a tool's arguments or result with `str(value)`, which for a
//! dict is its `repr`: `{'refund_id': 're_A2', 'status': 'succeeded'}` (single quotes,
//! `True`/`False`/`None`). The OpenAI Agents SDK writes a function tool's output so
//! (`FunctionSpanData.output = str(output)`), and LangChain's tracer records a tool run's input
//! as `{"input": str(tool_input)}`. [`parse`] reads such a literal into JSON: dicts, lists,
//! tuples (as arrays), strings in either quote with their escapes, integers, floats, `True`,
//! `False`, `None`. Anything else (a `datetime(...)`, a set, an object's repr) is `None`.

use serde_json::{Map, Number, Value};

/// How deep literals may nest: deeper ones are refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

/// The Python literal `text` as JSON, `None` when it is not one (see the module docs).
pub(crate) fn parse(text: &str) -> Option<Value> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => self.dict(depth),
            b'[' => self.seq(b']', depth),
            b'(' => self.seq(b')', depth),
            b'\'' | b'"' => self.string().map(Value::String),
            b'-' | b'+' | b'0'..=b'9' | b'.' => self.number(),
            _ => self.word(),
        }
    }

    fn dict(&mut self, depth: usize) -> Option<Value> {
        self.i += 1;
        let mut map = Map::new();
        if self.eat(b'}') {
            return Some(Value::Object(map));
        }
        loop {
            self.ws();
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => if b { "True" } else { "False" }.to_string(),
                Value::Null => "None".to_string(),
                _ => return None,
            };
            if !self.eat(b':') {
                return None;
            }
            let v = self.value(depth + 1)?;
            map.insert(key, v);
            if self.eat(b',') {
                if self.eat(b'}') {
                    return Some(Value::Object(map));
                }
                continue;
            }
            return self.eat(b'}').then_some(Value::Object(map));
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> Option<Value> {
        self.i += 1;
        let mut items = Vec::new();
        if self.eat(close) {
            return Some(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.eat(b',') {
                if self.eat(close) {
                    return Some(Value::Array(items));
                }
                continue;
            }
            return self.eat(close).then_some(Value::Array(items));
        }
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.s[self.i];
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while self
                .s
                .get(self.i)
                .is_some_and(|&b| b != quote && b != b'\\')
            {
                self.i += 1;
            }
            out.push_str(self.text.get(start..self.i)?);
            match *self.s.get(self.i)? {
                b'\\' => {
                    self.i += 1;
                    let c = *self.s.get(self.i)?;
                    self.i += 1;
                    match c {
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'r' => out.push('\r'),
                        b'0' => out.push('\0'),
                        b'\\' | b'\'' | b'"' => out.push(c as char),
                        b'x' => out.push(self.hex(2)?),
                        b'u' => out.push(self.hex(4)?),
                        b'U' => out.push(self.hex(8)?),
                        _ => {
                            // Python keeps an unknown escape as written.
                            out.push('\\');
                            self.i -= 1;
                        }
                    }
                }
                _ => {
                    self.i += 1;
                    return Some(out);
                }
            }
        }
    }

    fn hex(&mut self, n: usize) -> Option<char> {
        let digits = self.text.get(self.i..self.i + n)?;
        self.i += n;
        char::from_u32(u32::from_str_radix(digits, 16).ok()?)
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.' | b'_'))
        {
            self.i += 1;
        }
        let t: String = self.text[start..self.i]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let t = t.strip_prefix('+').unwrap_or(&t);
        if let Ok(i) = t.parse::<i64>() {
            return Some(Value::from(i));
        }
        if let Ok(u) = t.parse::<u64>() {
            return Some(Value::from(u));
        }
        let f: f64 = t.parse().ok()?;
        Number::from_f64(f).map(Value::Number)
    }

    fn word(&mut self) -> Option<Value> {
        for (w, v) in [
            ("True", Value::Bool(true)),
            ("False", Value::Bool(false)),
            ("None", Value::Null),
        ] {
            if self.text[self.i..].starts_with(w) {
                self.i += w.len();
                return Some(v);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_dicts_repr_reads_as_json() {
        assert_eq!(
            parse("{'refund_id': 're_A2', 'status': 'succeeded'}"),
            Some(json!({"refund_id": "re_A2", "status": "succeeded"}))
        );
        assert_eq!(
            parse(
                r#"{'ticket_id': "T-1's", 'amount_cents': 4200, 'ok': True, 'x': None, 'f': -1.5, 'l': [1, (2, 3)], }"#
            ),
            Some(
                json!({"ticket_id": "T-1's", "amount_cents": 4200, "ok": true, "x": null, "f": -1.5, "l": [1, [2, 3]]})
            )
        );
        assert_eq!(parse(r"'a\'b\n\x41é'"), Some(json!("a'b\nAé")));
        assert_eq!(parse("{}"), Some(json!({})));
    }

    #[test]
    fn other_text_is_not_a_literal() {
        for bad in [
            "",
            "Tool 'issue_refund' timed out after 8 seconds.",
            "{'a': datetime(2025, 1, 1)}",
            "{'a': 1",
            "{'a' 1}",
            "'unterminated",
            "{1, 2}",
            "[1] 2",
            &"[".repeat(200),
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
