//! A circuit breaker (`kind: "circuit_breaker"`) around tool execution, between the executor
//! and the service, or after the SDK: Polly v8's `CircuitBreakerStrategy` and resilience4j's
//! `CircuitBreaker`, with one state per layer shared by every request through it in the run
//! ([`World::breaker`]). What a refusal looks like at each place is [`Place::rejected`].
//!
//! - **Closed**: every call is let through; each that ends is recorded in the sampling window
//!   (the calls that ended in the last `sampling_duration`, Polly; or the last `window_calls`
//!   calls, resilience4j) as a failure when its class is in `breaker.failure_on`. When the
//!   window holds at least `minimum_throughput` calls and its failure ratio is at or above
//!   `failure_ratio`, the breaker opens. Polly checks on a failure; resilience4j on every
//!   recorded call.
//! - **Open** for `break_duration`: every call is answered at once with the breaker's own error
//!   (class `circuit-open`; Polly's `BrokenCircuitException`, resilience4j's
//!   `CallNotPermittedException`) and nothing is run below.
//! - **Half-open**: the first call after `break_duration` moves it there (both libraries move
//!   on a call, not on a timer: resilience4j's `automaticTransitionFromOpenToHalfOpenEnabled`
//!   is false). Up to `half_open_calls` probes are let through and others are refused; when
//!   all probes have ended, a failure ratio at or above `failure_ratio` opens it again, a lower
//!   one closes it (Polly: its one probe decides).
//!
//! Each transition starts a new epoch and empties the window; a call's outcome counts only in
//! the epoch it was let through in (a call started closed and ending open is not counted, as
//! both libraries ignore outcomes while open). A call dropped before it ends (a layer above gave
//! up on it) frees its probe slot and counts as nothing. The breaker never retries.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::{through, Place};
use crate::history::EventKind;
use crate::model::world::World;
use crate::scenario::layer_kinds::{BreakerConfig, BreakerWindow};
use crate::scenario::{BreakerDefaults, RetryLayer};
use crate::sim::SimTime;

/// A breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Calls pass and are counted.
    Closed,
    /// Calls are refused until `until`.
    Open {
        /// When the next call is let through half-open.
        until: SimTime,
    },
    /// Probe calls pass; the rest are refused.
    HalfOpen,
}

/// A state change, for the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transition {
    /// Closed or half-open → open, with the failures and calls of the window (or probes) that
    /// opened it.
    Opened {
        /// Failures counted.
        failures: u32,
        /// Calls counted.
        calls: u32,
        /// Until when it stays open.
        until: SimTime,
    },
    /// Open → half-open.
    HalfOpen,
    /// Half-open → closed, after `probes` probes.
    Closed {
        /// Probes that ended.
        probes: u32,
    },
}

/// Whether a call may pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// It passes; its outcome is recorded in `epoch`.
    Permitted {
        /// The epoch the call was let through in.
        epoch: u64,
    },
    /// Refused: open until `until`, or half-open with every probe slot taken (`until` is now).
    Rejected {
        /// When the breaker lets a call through again, at the earliest.
        until: SimTime,
    },
}

/// One breaker's state machine, in virtual time. Pure: the caller passes the time.
#[derive(Debug)]
pub(crate) struct Breaker {
    cfg: BreakerConfig,
    /// resilience4j checks the thresholds on every recorded call; Polly on a failure only.
    check_on_success: bool,
    state: State,
    epoch: u64,
    /// Calls ended in this epoch while closed: (ended at, failed).
    window: VecDeque<(SimTime, bool)>,
    probes_started: u32,
    probes_ended: u32,
    probe_failures: u32,
}

impl Breaker {
    /// A closed breaker with `layer`'s settings.
    pub(crate) fn new(layer: &RetryLayer) -> Self {
        let check_on_success = layer
            .breaker
            .as_ref()
            .is_some_and(|b| b.defaults == BreakerDefaults::Resilience4j);
        Breaker {
            cfg: layer.breaker_config(),
            check_on_success,
            state: State::Closed,
            epoch: 0,
            window: VecDeque::new(),
            probes_started: 0,
            probes_ended: 0,
            probe_failures: 0,
        }
    }

    /// The state now.
    #[cfg(test)]
    pub(crate) fn state(&self) -> State {
        self.state
    }

    fn next_epoch(&mut self, state: State) {
        self.state = state;
        self.epoch += 1;
        self.window.clear();
        self.probes_started = 0;
        self.probes_ended = 0;
        self.probe_failures = 0;
    }

    fn open(&mut self, now: SimTime, failures: u32, calls: u32) -> Transition {
        let until = now + SimTime::from_duration(self.cfg.break_duration);
        self.next_epoch(State::Open { until });
        Transition::Opened {
            failures,
            calls,
            until,
        }
    }

    /// A call arrives at `now`: whether it passes, and the transition it caused (open →
    /// half-open once `break_duration` has passed).
    pub(crate) fn admit(&mut self, now: SimTime) -> (Admit, Option<Transition>) {
        let mut moved = None;
        if let State::Open { until } = self.state {
            if now < until {
                return (Admit::Rejected { until }, None);
            }
            self.next_epoch(State::HalfOpen);
            moved = Some(Transition::HalfOpen);
        }
        if self.state == State::HalfOpen {
            if self.probes_started >= self.cfg.half_open_calls {
                return (Admit::Rejected { until: now }, moved);
            }
            self.probes_started += 1;
        }
        (Admit::Permitted { epoch: self.epoch }, moved)
    }

    /// A call let through in `epoch` ended at `now`, `failed` or not: the transition it caused.
    pub(crate) fn record(&mut self, epoch: u64, now: SimTime, failed: bool) -> Option<Transition> {
        if epoch != self.epoch {
            return None;
        }
        match self.state {
            State::Open { .. } => None,
            State::HalfOpen => {
                self.probes_ended += 1;
                self.probe_failures += u32::from(failed);
                if self.probes_ended < self.cfg.half_open_calls {
                    return None;
                }
                let (failures, calls) = (self.probe_failures, self.probes_ended);
                if f64::from(failures) / f64::from(calls) >= self.cfg.failure_ratio {
                    Some(self.open(now, failures, calls))
                } else {
                    self.next_epoch(State::Closed);
                    Some(Transition::Closed { probes: calls })
                }
            }
            State::Closed => {
                self.window.push_back((now, failed));
                match self.cfg.window {
                    BreakerWindow::Time(d) => {
                        let d = SimTime::from_duration(d);
                        while self.window.front().is_some_and(|(t, _)| *t + d <= now) {
                            self.window.pop_front();
                        }
                    }
                    BreakerWindow::Calls(n) => {
                        while self.window.len() > n as usize {
                            self.window.pop_front();
                        }
                    }
                }
                if !failed && !self.check_on_success {
                    return None;
                }
                let calls = u32::try_from(self.window.len()).unwrap_or(u32::MAX);
                let failures =
                    u32::try_from(self.window.iter().filter(|(_, f)| *f).count()).unwrap_or(0);
                let ratio = f64::from(failures) / f64::from(calls);
                (calls >= self.cfg.minimum_throughput && ratio >= self.cfg.failure_ratio)
                    .then(|| self.open(now, failures, calls))
            }
        }
    }

    /// A call let through in `epoch` was dropped before it ended: its probe slot is free again.
    pub(crate) fn release(&mut self, epoch: u64) {
        if epoch == self.epoch && self.state == State::HalfOpen {
            self.probes_started = self.probes_started.saturating_sub(1);
        }
    }
}

/// A permitted call's slot, released if the call is dropped before it ends.
struct Permit {
    breaker: Rc<RefCell<Breaker>>,
    epoch: u64,
    ended: bool,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.ended {
            self.breaker.borrow_mut().release(self.epoch);
        }
    }
}

fn record(w: &World, ids: crate::model::world::Ids, layer: &str, t: Transition) {
    let kind = match t {
        Transition::Opened {
            failures,
            calls,
            until,
        } => EventKind::BreakerOpened {
            layer: layer.to_string(),
            failures,
            calls,
            open_for_ns: (until - w.now()).as_nanos(),
        },
        Transition::HalfOpen => EventKind::BreakerHalfOpen {
            layer: layer.to_string(),
        },
        Transition::Closed { probes } => EventKind::BreakerClosed {
            layer: layer.to_string(),
            probes,
        },
    };
    w.record(ids, kind);
}

/// `req` through the breaker `name` at `depth` of `P`'s position: refused at once while open
/// ([`Place::rejected`], event `breaker_rejected`), else passed to the layers below once and its
/// outcome recorded; transitions are recorded at the request's ids.
pub(crate) async fn call<P: Place>(
    w: Rc<World>,
    req: P::Req,
    depth: usize,
    name: &str,
    cfg: &RetryLayer,
) -> P::Answer {
    let breaker = w.breaker(name, cfg);
    let ids = P::ids(&req);
    let (admit, moved) = breaker.borrow_mut().admit(w.now());
    if let Some(t) = moved {
        record(&w, ids, name, t);
    }
    let epoch = match admit {
        Admit::Permitted { epoch } => epoch,
        Admit::Rejected { until } => {
            let remaining = until - w.now();
            w.record(
                ids,
                EventKind::BreakerRejected {
                    layer: name.to_string(),
                    open_for_ns: remaining.as_nanos(),
                },
            );
            return P::rejected(name, cfg);
        }
    };
    let mut permit = Permit {
        breaker: breaker.clone(),
        epoch,
        ended: false,
    };
    let one = P::for_try(&w, &req, cfg, P::via(&req).clone());
    let value = through::<P>(w.clone(), one, depth + 1).await;
    permit.ended = true;
    let failed = P::class(&value).is_some_and(|c| cfg.breaker_counts(c));
    let moved = breaker.borrow_mut().record(epoch, w.now(), failed);
    if let Some(t) = moved {
        record(&w, ids, name, t);
    }
    value
}

/// What an open breaker answers, in the words of the library whose defaults it uses: Polly's
/// `BrokenCircuitException` or resilience4j's `CallNotPermittedException`.
pub(crate) fn open_text(name: &str, cfg: &RetryLayer) -> String {
    let r4j = cfg
        .breaker
        .as_ref()
        .is_some_and(|b| b.defaults == BreakerDefaults::Resilience4j);
    if r4j {
        format!("CircuitBreaker '{name}' is OPEN and does not permit further calls")
    } else {
        format!("The circuit is now open and is not allowing calls. ({name})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(json: &str) -> Breaker {
        Breaker::new(&serde_json::from_str(json).unwrap())
    }
    fn s(secs: u64) -> SimTime {
        SimTime::from_secs(secs)
    }
    fn pass(b: &mut Breaker, now: SimTime) -> u64 {
        match b.admit(now).0 {
            Admit::Permitted { epoch } => epoch,
            Admit::Rejected { .. } => panic!("refused at {now}"),
        }
    }

    /// Polly's rule with a small throughput: opens at the failure that brings the window to
    /// `minimum_throughput` calls at ratio ≥ 0.5, stays open exactly `break_duration`, lets one
    /// probe through half-open at the first call after, and its success closes it.
    #[test]
    fn closed_open_half_open_closed_at_exact_times() {
        let mut b = breaker(
            r#"{"kind": "circuit_breaker", "breaker": {"failure_ratio": 0.5, "minimum_throughput": 4, "break_duration": "10s"}}"#,
        );
        let e = pass(&mut b, s(0));
        assert_eq!(b.record(e, s(1), false), None);
        assert_eq!(b.record(e, s(2), true), None);
        assert_eq!(b.record(e, s(3), false), None, "3 calls < 4");
        assert_eq!(
            b.record(e, s(4), true),
            Some(Transition::Opened {
                failures: 2,
                calls: 4,
                until: s(14)
            })
        );
        assert_eq!(b.state(), State::Open { until: s(14) });
        assert_eq!(b.record(e, s(5), true), None, "an older epoch's call");
        let just_before = s(14) - SimTime::from_nanos(1);
        assert_eq!(
            b.admit(just_before),
            (Admit::Rejected { until: s(14) }, None)
        );
        let (probe, moved) = b.admit(s(14));
        assert_eq!(moved, Some(Transition::HalfOpen));
        let Admit::Permitted { epoch } = probe else {
            panic!("the probe is let through")
        };
        assert_eq!(
            b.admit(s(15)),
            (Admit::Rejected { until: s(15) }, None),
            "Polly: one probe at a time"
        );
        assert_eq!(
            b.record(epoch, s(16), false),
            Some(Transition::Closed { probes: 1 })
        );
        assert_eq!(b.state(), State::Closed);
    }

    /// A failed probe opens it again for another `break_duration`; a dropped probe frees its
    /// slot.
    #[test]
    fn a_failed_probe_reopens_and_a_dropped_one_frees_its_slot() {
        let mut b = breaker(
            r#"{"kind": "circuit_breaker", "breaker": {"minimum_throughput": 1, "break_duration": "5s"}}"#,
        );
        let e = pass(&mut b, s(0));
        assert!(
            matches!(b.record(e, s(1), true), Some(Transition::Opened { until, .. }) if until == s(6))
        );
        let dropped = pass(&mut b, s(6));
        b.release(dropped);
        let probe = pass(&mut b, s(7));
        assert_eq!(
            b.record(probe, s(9), true),
            Some(Transition::Opened {
                failures: 1,
                calls: 1,
                until: s(14)
            })
        );
    }

    /// Polly's time window forgets calls that ended `sampling_duration` ago or earlier.
    #[test]
    fn the_time_window_slides() {
        let mut b = breaker(
            r#"{"kind": "circuit_breaker", "breaker": {"failure_ratio": 0.5, "minimum_throughput": 3, "sampling_duration": "10s"}}"#,
        );
        let e = pass(&mut b, s(0));
        b.record(e, s(0), true);
        b.record(e, s(5), true);
        assert_eq!(
            b.record(e, s(10), true).map(|_| ()),
            None,
            "the call at 0 s left"
        );
        assert!(
            b.record(e, s(12), false).is_none(),
            "Polly checks on a failure"
        );
        assert!(matches!(
            b.record(e, s(13), true),
            Some(Transition::Opened {
                failures: 3,
                calls: 4,
                ..
            })
        ));
    }

    /// resilience4j: a count window, 10 probes half-open, and a check on every call (a success
    /// that brings the window to `minimum_throughput` at ratio ≥ 50 % opens it).
    #[test]
    fn resilience4j_counts_calls_and_decides_after_its_probes() {
        let mut b = breaker(
            r#"{"kind": "circuit_breaker", "breaker": {"defaults": "resilience4j", "minimum_throughput": 4, "window_calls": 4}}"#,
        );
        let e = pass(&mut b, s(0));
        b.record(e, s(1), true);
        b.record(e, s(2), true);
        b.record(e, s(3), false);
        assert_eq!(
            b.record(e, s(4), false),
            Some(Transition::Opened {
                failures: 2,
                calls: 4,
                until: s(64)
            }),
            "2 of 4 is 50 %, checked on a success too"
        );
        let probes: Vec<u64> = (0..10).map(|_| pass(&mut b, s(64))).collect();
        assert!(
            matches!(b.admit(s(64)).0, Admit::Rejected { .. }),
            "an 11th call"
        );
        for (i, p) in probes.iter().enumerate() {
            let moved = b.record(*p, s(65), i < 4);
            if i < 9 {
                assert_eq!(moved, None);
            } else {
                assert_eq!(
                    moved,
                    Some(Transition::Closed { probes: 10 }),
                    "4 of 10 < 50 %"
                );
            }
        }
    }
}
