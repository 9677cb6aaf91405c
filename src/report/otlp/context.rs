//! What every span of a run shares: the clock that turns virtual time into Unix time, the ids'
//! inputs, the tool's argument names, the ticket ids as recorded, and the options.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use super::arguments::ToolArguments;
use super::options::OtlpOptions;
use crate::scenario::Scenario;

/// The run-wide inputs of the exporter.
#[derive(Clone, Debug)]
pub(super) struct Context {
    /// Unix time of virtual time 0, ns: the scenario's `clock_origin`, else the epoch.
    pub origin_ns: u64,
    /// The scenario's name (an input of the trace ids).
    pub scenario: String,
    /// The run's seed (an input of the trace ids).
    pub seed: u64,
    /// The refund tool's ticket and amount arguments.
    pub arguments: ToolArguments,
    /// The tickets' recorded ids, for an imported scenario (`replay.ticket_labels`).
    pub labels: BTreeMap<u64, String>,
    /// What to capture.
    pub options: OtlpOptions,
}

impl Context {
    /// The context of a run of `sc` under `seed`.
    pub(super) fn new(sc: &Scenario, seed: u64, options: &OtlpOptions) -> Context {
        Context {
            origin_ns: origin_unix_ns(sc),
            scenario: sc.name.clone(),
            seed,
            arguments: ToolArguments::of(sc),
            labels: sc
                .replay
                .as_ref()
                .map(|r| r.ticket_labels.clone())
                .unwrap_or_default(),
            options: options.clone(),
        }
    }

    /// Virtual time `t` (ns since the scenario's start) as Unix time, ns.
    pub(super) fn unix(&self, t: u64) -> u64 {
        self.origin_ns.saturating_add(t)
    }

    /// Ticket `ticket`'s id as the tool's argument writes it: its recorded text in an
    /// imported scenario, else its number.
    pub(super) fn ticket_text(&self, ticket: u64) -> String {
        self.labels
            .get(&ticket)
            .cloned()
            .unwrap_or_else(|| ticket.to_string())
    }
}

/// Unix time of the scenario's virtual time 0, ns: its `clock_origin` (RFC 3339, validated
/// when the scenario loaded), or 0 (1970-01-01T00:00:00Z) without one.
pub fn origin_unix_ns(sc: &Scenario) -> u64 {
    sc.clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
        .unwrap_or(0)
}
