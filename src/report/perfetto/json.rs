//! One Trace Event Format object per line, written by hand so that every number is an integer
//! or a fixed decimal: timestamps are microseconds with the nanoseconds as three decimals
//! (`2896982314.047`), which Perfetto reads exactly (it parses `ts` as text), and no value ever
//! goes through a float.

use std::fmt::Write as _;

/// A value of a slice's `args`: integers and text only (no floats, so no float noise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Val {
    /// An integer (ids, cents, nanoseconds, counts).
    U(u64),
    /// Text.
    S(String),
    /// A flag.
    B(bool),
}

/// A slice's `args`, written in the order they were added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Args(pub(super) Vec<(&'static str, Val)>);

impl Args {
    /// Adds an integer.
    pub(super) fn u(mut self, key: &'static str, v: u64) -> Self {
        self.0.push((key, Val::U(v)));
        self
    }
    /// Adds text.
    pub(super) fn s(mut self, key: &'static str, v: impl Into<String>) -> Self {
        self.0.push((key, Val::S(v.into())));
        self
    }
    /// Adds a flag.
    pub(super) fn b(mut self, key: &'static str, v: bool) -> Self {
        self.0.push((key, Val::B(v)));
        self
    }
    /// Adds text when there is some.
    pub(super) fn opt(self, key: &'static str, v: Option<&str>) -> Self {
        match v {
            Some(v) => self.s(key, v),
            None => self,
        }
    }
    /// Appends `other`'s entries.
    pub(super) fn extend(&mut self, other: Args) {
        self.0.extend(other.0);
    }
}

/// `ns` nanoseconds as microseconds with three decimals: `1234567` → `1234.567`.
pub(super) fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// `ns` nanoseconds as milliseconds with three decimals, for names: `8000000000` → `8000`,
/// `7655988376` → `7655.988`.
pub(super) fn millis(ns: u64) -> String {
    let (ms, frac) = (ns / 1_000_000, (ns % 1_000_000) / 1000);
    if frac == 0 {
        ms.to_string()
    } else {
        format!("{ms}.{frac:03}")
    }
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    // Serializing a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// One trace event being written: `{"ph":…,"pid":…,"tid":…` then the fields added, then `}`.
pub(super) struct Line(String);

impl Line {
    /// An event of phase `ph` on thread `tid` of process `pid`.
    pub(super) fn new(ph: char, pid: u32, tid: u32) -> Line {
        Line(format!("{{\"ph\":\"{ph}\",\"pid\":{pid},\"tid\":{tid}"))
    }
    /// `"ts"`, from virtual nanoseconds.
    pub(super) fn ts(mut self, ns: u64) -> Line {
        let _ = write!(self.0, ",\"ts\":{}", micros(ns));
        self
    }
    /// `"name"`.
    pub(super) fn name(mut self, name: &str) -> Line {
        let _ = write!(self.0, ",\"name\":{}", quoted(name));
        self
    }
    /// `"cat"`.
    pub(super) fn cat(mut self, cat: &str) -> Line {
        let _ = write!(self.0, ",\"cat\":{}", quoted(cat));
        self
    }
    /// A field whose value is already JSON (`"id"`, `"bp"`, `"s"`).
    pub(super) fn raw(mut self, key: &str, json: &str) -> Line {
        let _ = write!(self.0, ",\"{key}\":{json}");
        self
    }
    /// `"args"` (left out when empty).
    pub(super) fn args(mut self, args: &Args) -> Line {
        if args.0.is_empty() {
            return self;
        }
        self.0.push_str(",\"args\":{");
        for (i, (k, v)) in args.0.iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            let _ = write!(self.0, "{}:", quoted(k));
            match v {
                Val::U(n) => {
                    let _ = write!(self.0, "{n}");
                }
                Val::S(s) => self.0.push_str(&quoted(s)),
                Val::B(b) => {
                    let _ = write!(self.0, "{b}");
                }
            }
        }
        self.0.push('}');
        self
    }
    /// The finished object.
    pub(super) fn done(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// A metadata event (`ph` `M`) naming or ordering a process (`tid` 0 is left out) or thread.
pub(super) fn metadata(pid: u32, tid: Option<u32>, what: &str, args: &Args) -> String {
    let mut l = Line(format!("{{\"ph\":\"M\",\"pid\":{pid}"));
    if let Some(tid) = tid {
        let _ = write!(l.0, ",\"tid\":{tid}");
    }
    l.ts(0).name(what).args(args).done()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_integers_or_fixed_decimals() {
        assert_eq!(micros(2_896_982_314_047), "2896982314.047");
        assert_eq!(micros(5), "0.005");
        assert_eq!(micros(u64::MAX), "18446744073709551.615");
        assert_eq!(millis(8_000_000_000), "8000");
        assert_eq!(millis(7_655_988_376), "7655.988");
        let line = Line::new('B', 2, 101)
            .ts(1_500)
            .name("tool call \"0\"")
            .cat("agent")
            .args(&Args::default().u("amount_cents", 4200).b("late", true))
            .done();
        assert_eq!(
            line,
            r#"{"ph":"B","pid":2,"tid":101,"ts":1.500,"name":"tool call \"0\"","cat":"agent","args":{"amount_cents":4200,"late":true}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["args"]["amount_cents"], 4200);
        assert_eq!(
            metadata(1, None, "process_name", &Args::default().s("name", "pool")),
            r#"{"ph":"M","pid":1,"ts":0.000,"name":"process_name","args":{"name":"pool"}}"#
        );
    }
}
