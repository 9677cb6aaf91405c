//! Trace, span and tool-call ids, derived from the run rather than drawn: the same scenario
//! and seed give the same ids, and no random stream of the simulation is touched (a run with
//! `--otlp` is the run without it).
//!
//! Each id is the leading bytes of a SHA-256 over a label and the parts it depends on. The
//! W3C Trace Context (and OTLP) ask for ids that are not all zeros: an all-zero digest prefix
//! (one chance in 2^64 or more) gets its last byte set to 1.

use sha2::{Digest, Sha256};

use super::wire::{hex, SpanId, TraceId};

/// The trace of ticket `ticket` (one trace per ticket) in a run of scenario `scenario` under
/// `seed`: two runs of one scenario and seed share their trace ids, two scenarios or seeds do
/// not.
pub(super) fn trace_id(scenario: &str, seed: u64, ticket: u64) -> TraceId {
    let d = digest(&[
        b"trace",
        scenario.as_bytes(),
        &seed.to_be_bytes(),
        &ticket.to_be_bytes(),
    ]);
    non_zero(d)
}

/// The `n`-th span (0, 1, … in the order the ticket's spans start) of trace `trace`.
pub(super) fn span_id(trace: &TraceId, n: u64) -> SpanId {
    non_zero(digest(&[b"span", trace, &n.to_be_bytes()]))
}

/// A tool call id in the shape models give them (`call_` and 24 hex digits), for the tool call
/// whose span is `span`.
pub(crate) fn tool_call_id(span: &SpanId) -> String {
    let d: [u8; 12] = digest(&[b"tool_call", span]);
    format!("call_{}", hex(&d))
}

/// The first `N` bytes of SHA-256 over `parts`, each preceded by its length (so no two lists of
/// parts hash the same bytes).
fn digest<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    let full = h.finalize();
    let mut out = [0u8; N];
    out.copy_from_slice(&full[..N]);
    out
}

fn non_zero<const N: usize>(mut id: [u8; N]) -> [u8; N] {
    if id.iter().all(|&b| b == 0) {
        id[N - 1] = 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_a_function_of_scenario_seed_ticket_and_order() {
        let t = trace_id("carrier-outage", 157, 47500);
        assert_eq!(t, trace_id("carrier-outage", 157, 47500));
        assert_ne!(t, trace_id("carrier-outage", 158, 47500));
        assert_ne!(t, trace_id("carrier-outage", 157, 47501));
        assert_ne!(t, trace_id("carrier-outagf", 157, 47500));
        assert_ne!(span_id(&t, 0), span_id(&t, 1));
        let call = tool_call_id(&span_id(&t, 0));
        assert!(call.starts_with("call_") && call.len() == 5 + 24, "{call}");
        // Pinned: a change of derivation changes every exported file.
        assert_eq!(hex(&trace_id("s", 1, 1)).len(), 32);
        assert_eq!(non_zero([0u8; 8]), [0, 0, 0, 0, 0, 0, 0, 1]);
    }
}
