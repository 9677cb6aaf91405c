//! What the exporter records: the opt-in attributes of the semantic conventions, and the model's
//! name.

use std::str::FromStr;

/// Which opt-in attributes are captured. Real instrumentations leave all three off by default
/// (the GenAI conventions' `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` are
/// Opt-In, as are the HTTP conventions' `http.request.header.<key>`): each is a switch here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OtlpCapture {
    /// `gen_ai.tool.call.arguments` on tool spans (the ticket and the amount). Default: **on**:
    /// a tool span without its arguments names no ticket (the conventions have no attribute
    /// for one, and the exporter writes none of its own), so nothing reading the file can
    /// tell whose refund a call was.
    pub arguments: bool,
    /// `gen_ai.tool.call.result` on tool spans that returned a result (the refund id the model
    /// was shown). Default: off.
    pub results: bool,
    /// `http.request.header.idempotency-key` and `http.request.header.content-type` on the
    /// requests to Stripe, and `http.response.header.idempotent-replayed` on a replayed
    /// answer. Default: off.
    pub headers: bool,
}

impl Default for OtlpCapture {
    /// Arguments only.
    fn default() -> Self {
        OtlpCapture {
            arguments: true,
            results: false,
            headers: false,
        }
    }
}

impl OtlpCapture {
    /// Nothing captured.
    pub const NONE: OtlpCapture = OtlpCapture {
        arguments: false,
        results: false,
        headers: false,
    };

    /// Everything captured.
    pub const ALL: OtlpCapture = OtlpCapture {
        arguments: true,
        results: true,
        headers: true,
    };
}

impl FromStr for OtlpCapture {
    type Err = String;

    /// A comma-separated list of `arguments`, `results` and `headers` (what is captured;
    /// the rest is not), or `none`.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut c = OtlpCapture::NONE;
        for word in s.split(',').map(str::trim) {
            match word {
                "arguments" => c.arguments = true,
                "results" => c.results = true,
                "headers" => c.headers = true,
                "none" => {}
                other => {
                    return Err(format!(
                        "unknown capture `{other}`: expected a comma-separated list of \
                         `arguments`, `results` and `headers`, or `none`"
                    ))
                }
            }
        }
        Ok(c)
    }
}

/// The exporter's options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct OtlpOptions {
    /// The opt-in attributes. Default: arguments only.
    pub capture: OtlpCapture,
    /// The model's name, for the `chat` spans (`gen_ai.request.model`, and the span name `chat
    /// MODEL`). Default: none (the simulated model has no name): the spans are named `chat`.
    pub model: Option<String>,
    /// The model's provider (`gen_ai.provider.name`: `anthropic`, `openai`, …). Default: none
    /// (the attribute is left out).
    pub provider: Option<String>,
}

impl OtlpOptions {
    /// Options capturing `capture`, without a model name.
    pub(crate) fn capturing(capture: OtlpCapture) -> Self {
        OtlpOptions {
            capture,
            ..OtlpOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_lists_parse_and_name_what_is_wrong() {
        assert_eq!("arguments".parse(), Ok(OtlpCapture::default()));
        assert_eq!("none".parse(), Ok(OtlpCapture::NONE));
        assert_eq!("results, headers,arguments".parse(), Ok(OtlpCapture::ALL));
        let err = "args".parse::<OtlpCapture>().unwrap_err();
        assert!(err.contains("`args`") && err.contains("`headers`"), "{err}");
    }
}
