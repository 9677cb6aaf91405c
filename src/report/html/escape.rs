//! Text as the page writes it: HTML-escaped strings and numbers as `run --json` prints them.
//! A leaf that `page` and `sweep_section` share.

use std::borrow::Cow;

use serde_json::Value;

/// `s` escaped for HTML text and double-quoted attribute values (`& < > " '`).
pub(super) fn esc(s: &str) -> Cow<'_, str> {
    html_escape::encode_quoted_attribute(s)
}

/// A number as `run --json` prints it (`null` for NaN).
pub(super) fn num(v: f64) -> String {
    Value::from(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;y&#x27;"
        );
    }
}
