//! The `replay` section: a recorded incident, replayed exactly (written by `refundsim import`).
//!
//! With a `replay` section, a run takes from the recording, per request, what the recording
//! knows, and simulates the rest from the scenario's other sections:
//!
//! | replayed (from `replay`) | simulated (from the scenario) |
//! |---|---|
//! | ticket arrivals (`arrivals.tickets`, written by `import`) | the executor's timeout and probe, the model's retry rule |
//! | the model's think time before each recorded tool call | think times of calls that were never recorded |
//! | per recorded request: the time to reach the provider (pool wait and overhead), replacing the pool | the pool, with background load, once `refunds_service.pool_size` differs from `pool_size` (a pool-size counterfactual) |
//! | the provider's latency and status, whether it created a refund, the idempotency key sent | unrecorded requests: `reach_provider` and `stripe.latency` (fitted by `import`); Stripe's idempotency rules on every request |
//!
//! Times are virtual times: durations since `clock_origin`.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::latency::{LatencyDist, RequestKey};
use super::modes::KeyMode;

/// A recorded incident to replay (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Replay {
    /// The files the recording was imported from, for reports. Default: none.
    #[serde(default)]
    pub sources: Vec<String>,
    /// The recorded text of tickets whose id was not a number (`"T-100001"`), by the numeric id
    /// `import` gave them (its trailing digits when free): stories and comparisons print the
    /// text. Default: none (every recorded id was a number).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ticket_labels: BTreeMap<u64, String>,
    /// The pool size the recording was made with. Recorded requests take their recorded time
    /// to reach the provider, and neither the pool nor the background load is simulated: the
    /// recorded waits for a connection stand for the traffic that filled the pool. Another
    /// `refunds_service.pool_size` (a pool counterfactual) keeps that traffic: each recorded
    /// wait is scaled by Erlang C's ratio of mean waits at the new and the recorded size, with
    /// the offered load calibrated so that the recorded size gives the recorded mean wait
    /// (see [`Replay::pool_calibration`]).
    pub pool_size: u32,
    /// The refunds service's `idempotency_key` mode the recording was imported with. While
    /// `refunds_service.idempotency_key` equals it, each recorded request carries its recorded
    /// `Idempotency-Key` (or none, when recorded absent); another mode (a policy's) replaces the
    /// recorded keys, and the comparison says so. Absent (files imported before this field):
    /// recorded keys are always sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_mode: Option<KeyMode>,
    /// The time to reach the provider of a request that was never recorded (a retry that did
    /// not happen), while the pool is replayed: fitted to the recorded ones by `import`.
    pub reach_provider: LatencyDist,
    /// Recorded provider requests by `"TICKET/ATTEMPT/TRY"` (see
    /// [`RequestKey`]). Default: none.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RecordedRequest>")]
    pub requests: BTreeMap<RequestKey, RecordedRequest>,
    /// Recorded tickets by id: their tool calls and refunds, replayed and compared.
    /// Default: none.
    #[serde(default)]
    pub tickets: BTreeMap<u64, RecordedTicket>,
    /// Whether the recording holds what the humans did: the provider's list of refunds and
    /// the service's provider requests were both imported, so each ticket's refunds that no
    /// request of the service made (`tickets[].outside_refunds`, possibly none) are the whole
    /// of what humans did for it. Then a run that escalates a recorded ticket whose recording
    /// escalated it too (its last recorded result failed) replays those refunds instead of
    /// simulating a human (see `tickets[].outside_refunds`). Default: false (humans are
    /// simulated from the scenario's `humans`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_refunds_recorded: bool,
}

/// One recorded provider request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// Time from the refunds service receiving the call to the request reaching the provider:
    /// the service's overhead and its pool wait. Replaces them while the pool is replayed.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub reach_provider: Duration,
    /// The provider's latency: from the request reaching it to its answer.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub latency: Duration,
    /// The HTTP status answered; `null` when no answer came (connection lost).
    pub status: Option<u16>,
    /// Whether the request created a refund: a 2xx did, unless it returned an earlier
    /// request's refund (Stripe's replay of a saved answer); a 5xx or a lost answer did only
    /// when the refund export lists a refund for it. In an exact replay this wins over
    /// Stripe's rules (see [`Replay::replayed_as_recorded`]).
    pub commits: bool,
    /// The `Idempotency-Key` header sent: absent when the recording does not say (the
    /// scenario's `refunds_service.idempotency_key` decides), `null` when none was sent.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub idempotency_key: Option<Option<String>>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// One recorded ticket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RecordedTicket {
    /// Its tool calls, one per model attempt, in order.
    pub calls: Vec<RecordedCall>,
    /// Refunds the ticket got: from the refund export when one was imported, else the distinct
    /// refund ids in tool results and service responses.
    pub refunds: u32,
    /// Where `refunds` was counted: `"refund export"` or `"tool results"`.
    pub refunds_from: String,
    /// Refunds of the ticket in the provider's list that no provider request of the refunds
    /// service made: made outside the agent (a human's dashboard refund), counted in `refunds`.
    /// With `replay.outside_refunds_recorded`, a run that escalates the ticket (when its
    /// recording did) makes them at their recorded instants, or at the escalation if that is
    /// later, instead of simulating a human; a run that does not escalate it makes none.
    /// Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_refunds: Vec<OutsideRefund>,
}

impl RecordedTicket {
    /// Whether the recording shows the model giving up on the ticket (an escalation): its last
    /// recorded call's result failed or timed out.
    pub fn gave_up(&self) -> bool {
        self.calls
            .last()
            .and_then(|c| c.result.as_deref())
            .is_some_and(|r| r != "ok")
    }
}

/// A refund made outside the agent, as the provider's list records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OutsideRefund {
    /// The refund's id in the provider's list.
    pub id: String,
    /// When it was created (the list's `created`; a whole second is read as its middle).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub at: Duration,
    /// Its amount, cents.
    pub amount_cents: u64,
}

impl OutsideRefund {
    /// An outside refund `id` of `amount_cents` created at `at`.
    pub fn new(id: impl Into<String>, at: Duration, amount_cents: u64) -> Self {
        OutsideRefund {
            id: id.into(),
            at,
            amount_cents,
        }
    }
}

/// One recorded tool call (one model attempt) and what followed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RecordedCall {
    /// The model's think time before this call: after reading the ticket for the first call,
    /// after the previous result for a retry. Replayed.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub think: Duration,
    /// The model's think time after this call's failed result when no later call was recorded
    /// (its decision to give up), replayed; absent otherwise.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub think_after: Option<Duration>,
    /// When the call reached the executor.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub at: Duration,
    /// When the model got the result; absent when not recorded.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub result_at: Option<Duration>,
    /// The result: `"ok"`, `"fail"` or `"timeout"`; absent when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// When the model decided after a failed result; absent when not recorded.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub decision_at: Option<Duration>,
    /// When the refunds service answered this call (after the result for a late response);
    /// absent when not recorded.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub response_at: Option<Duration>,
    /// How far `response_at` may be off: half the range of a log's redacted digits
    /// (`19.9xx`). Default: 0.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Duration::is_zero"
    )]
    #[schemars(with = "Option<String>")]
    pub response_tolerance: Duration,
    /// The refunds service's time from the provider's answer to its own answer (its ledger
    /// write and response), replayed for this call. Default: 0.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Duration::is_zero"
    )]
    #[schemars(with = "Option<String>")]
    pub respond_after: Duration,
    /// The time from the service's answer to the executor receiving it, replayed for this call
    /// (inside the executor's timeout). Default: 0.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Duration::is_zero"
    )]
    #[schemars(with = "Option<String>")]
    pub return_after: Duration,
    /// The time from the model's recorded decision (after the previous call's failed result) to
    /// this call reaching the executor, replayed in place of `agent.call_overhead`, so that the
    /// decision and the call are both at their recorded instants. Absent when the decision was
    /// not recorded (then `think` puts the call at its instant, and the decision falls
    /// `agent.call_overhead` before it).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub call_after: Option<Duration>,
    /// Where the call was recorded (`FILE:LINE`).
    #[serde(default)]
    pub source: String,
}

impl Replay {
    /// Whether a run with these settings replays the recording exactly, so that recorded
    /// answers win over the fake provider's rules: the refunds service's
    /// `idempotency_key` mode is the one the recording was imported with (or the recording
    /// does not say), and `pool_size` is the recorded one. A policy that changes either is a
    /// counterfactual, where Stripe's rules decide (see [`crate::replay::replaced_facts`]).
    pub fn replayed_as_recorded(&self, key_mode: KeyMode, pool_size: u32) -> bool {
        self.key_mode.is_none_or(|m| m == key_mode) && self.pool_size == pool_size
    }

    /// The ticket's id as recorded: its label (`T-100001`), else its number.
    pub fn ticket_text(&self, ticket: u64) -> String {
        self.ticket_labels
            .get(&ticket)
            .cloned()
            .unwrap_or_else(|| ticket.to_string())
    }

    /// The calibration behind a pool counterfactual, from the recorded requests (SDK try 0):
    /// the time to reach the provider without waiting (`baseline`: the smaller of the fastest
    /// recorded one and the service's `overhead`), the mean recorded wait for a connection
    /// (each request's time to reach the provider less the baseline), the mean time a request
    /// holds its connection (recorded provider latency plus `overhead`), and the offered load
    /// in Erlangs that makes an M/M/c queue of the recorded pool size wait that mean (Erlang C:
    /// `Wq = C(c, a) · h / (c − a)`, solved for `a` by bisection). `None` when no request is
    /// recorded.
    pub fn pool_calibration(&self, overhead: Duration) -> Option<PoolCalibration> {
        let tried: Vec<&RecordedRequest> = self
            .requests
            .iter()
            .filter(|(k, _)| k.attempt.is_some() && k.try_no == 0)
            .map(|(_, r)| r)
            .collect();
        let fastest = tried.iter().map(|r| r.reach_provider).min()?;
        let baseline = fastest.min(overhead);
        let n = tried.len() as f64;
        let mean_wait_s = tried
            .iter()
            .map(|r| (r.reach_provider - baseline).as_secs_f64())
            .sum::<f64>()
            / n;
        let hold_s = tried
            .iter()
            .map(|r| (r.latency + overhead).as_secs_f64())
            .sum::<f64>()
            / n;
        let c = self.pool_size;
        let hold_s = hold_s.max(1e-6);
        let wq = |a: f64| mean_wait(c, a, hold_s);
        let (mut lo, mut hi) = (0.0_f64, f64::from(c));
        if mean_wait_s > 0.0 {
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if wq(mid) < mean_wait_s {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        Some(PoolCalibration {
            baseline,
            mean_wait_s,
            hold_s,
            offered_load: if mean_wait_s > 0.0 {
                0.5 * (lo + hi)
            } else {
                0.0
            },
        })
    }

    /// The factor each recorded wait for a connection is scaled by under a pool of `pool_size`
    /// (1 at the recorded size; see [`Replay::pool_calibration`]).
    ///
    /// # Errors
    /// `pool_size` connections cannot carry the calibrated offered load (`a ≥ pool_size`): the
    /// queue grows without bound, and the message says so with the numbers.
    pub fn wait_scale(&self, pool_size: u32, overhead: Duration) -> Result<f64, String> {
        if pool_size == self.pool_size {
            return Ok(1.0);
        }
        let Some(cal) = self.pool_calibration(overhead) else {
            return Ok(1.0);
        };
        if cal.mean_wait_s <= 0.0 {
            return Ok(1.0);
        }
        if cal.offered_load >= f64::from(pool_size) {
            return Err(format!(
                "expected more than {:.2} connections: the recording's waits for a connection \
                 (mean {:.3} s at its pool of {}, each request holding one for {:.3} s) are an \
                 offered load of {:.2} Erlangs, which {} cannot carry (the queue grows without \
                 bound)",
                cal.offered_load,
                cal.mean_wait_s,
                self.pool_size,
                cal.hold_s,
                cal.offered_load,
                crate::text::plural(pool_size as usize, "connection", "connections")
            ));
        }
        Ok(mean_wait(pool_size, cal.offered_load, cal.hold_s) / cal.mean_wait_s)
    }

    /// The recorded call of `ticket`'s model attempt `attempt`.
    pub fn call(&self, ticket: u64, attempt: u32) -> Option<&RecordedCall> {
        self.tickets.get(&ticket)?.calls.get(attempt as usize)
    }
}

/// Mean wait in an M/M/c queue, seconds: `C(c, a) · h / (c − a)`; infinite for `a ≥ c`.
fn mean_wait(c: u32, a: f64, hold_s: f64) -> f64 {
    if a >= f64::from(c) {
        return f64::INFINITY;
    }
    crate::erlang::erlang_c(c, a) * hold_s / (f64::from(c) - a)
}

/// What a pool counterfactual of a recording is calibrated from (see
/// [`Replay::pool_calibration`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolCalibration {
    /// The time to reach the provider without waiting for a connection.
    pub baseline: Duration,
    /// The mean recorded wait for a connection, seconds.
    pub mean_wait_s: f64,
    /// The mean time a request holds a connection, seconds.
    pub hold_s: f64,
    /// The offered load, Erlangs, that gives the recorded pool size the recorded mean wait.
    pub offered_load: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two recorded requests: one waited 9.3 s for a connection, one 0.84 s; each held it
    /// 0.4 s at the provider.
    fn recorded(pool_size: u32) -> Replay {
        let r = |reach_ms: u64| RecordedRequest {
            reach_provider: Duration::from_millis(reach_ms),
            latency: Duration::from_millis(380),
            status: Some(200),
            commits: true,
            idempotency_key: None,
        };
        Replay {
            sources: Vec::new(),
            ticket_labels: BTreeMap::new(),
            pool_size,
            key_mode: None,
            reach_provider: LatencyDist::constant(Duration::from_millis(1)),
            requests: [
                (RequestKey::service(7, 0, 0), r(9_320)),
                (RequestKey::service(7, 1, 0), r(860)),
            ]
            .into_iter()
            .collect(),
            tickets: BTreeMap::new(),
            outside_refunds_recorded: false,
        }
    }

    #[test]
    fn the_offered_load_gives_the_recorded_mean_wait_and_the_scale_is_erlang_cs_ratio() {
        let overhead = Duration::from_millis(20);
        let r = recorded(3);
        let cal = r.pool_calibration(overhead).unwrap();
        assert_eq!(cal.baseline, overhead);
        assert!((cal.mean_wait_s - 5.07).abs() < 1e-9, "{cal:?}");
        assert!((cal.hold_s - 0.4).abs() < 1e-9, "{cal:?}");
        assert!((mean_wait(3, cal.offered_load, cal.hold_s) - cal.mean_wait_s).abs() < 1e-6);
        assert_eq!(r.wait_scale(3, overhead), Ok(1.0));
        for q in [4, 6, 12] {
            let want = mean_wait(q, cal.offered_load, cal.hold_s) / cal.mean_wait_s;
            let got = r.wait_scale(q, overhead).unwrap();
            assert!(
                (got - want).abs() < 1e-12 && got < 1.0,
                "{q}: {got} vs {want}"
            );
        }
        // Bigger pools wait less.
        assert!(r.wait_scale(4, overhead).unwrap() > r.wait_scale(5, overhead).unwrap());
        let err = r.wait_scale(2, overhead).unwrap_err();
        assert!(err.contains("which 2 connections cannot carry"), "{err}");
    }
}
