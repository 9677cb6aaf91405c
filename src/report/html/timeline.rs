//! A run's timelines over virtual time, computed online from the event stream: per time bucket,
//! tickets opened, executor timeouts, the pool's queue as ticket requests found it, tool-call
//! latency percentiles and new duplicate-refund tickets.
//!
//! Memory is bounded whatever the horizon: at most [`MAX_BUCKETS`] buckets (when a run drains
//! past them, the width doubles and neighbouring buckets merge), each with a small latency
//! histogram, plus the refunds of open tickets (dropped when a ticket closes).

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::refunds::TicketRefunds;
use crate::history::{Decision, Event, EventKind, Observer};
use crate::sim::SimTime;

/// Most buckets a [`Timeline`] holds.
pub(crate) const MAX_BUCKETS: usize = 480;

/// Buckets the horizon is cut into, at most, by [`bucket_width`].
pub(crate) const TARGET_BUCKETS: u64 = 120;

/// Bucket widths [`bucket_width`] picks from, seconds.
const NICE_WIDTHS_S: &[u64] = &[
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
];

/// Significant digits of each bucket's latency histogram (1 % precision).
const BUCKET_SIGFIGS: u8 = 2;

/// The smallest width of [`NICE_WIDTHS_S`] that cuts `horizon` into at most
/// [`TARGET_BUCKETS`] buckets: 1 minute for the incident's 2 hours; 1 day beyond 120 days.
pub(crate) fn bucket_width(horizon: Duration) -> SimTime {
    let s = NICE_WIDTHS_S
        .iter()
        .copied()
        .find(|w| horizon.as_secs().div_ceil(*w) <= TARGET_BUCKETS)
        .unwrap_or(86_400);
    SimTime::from_secs(s)
}

/// Tool-call latencies in one bucket, µs: an HDR histogram (allocated with the first value)
/// and the exact maximum.
#[derive(Clone, Debug, Default)]
struct Latencies {
    h: Option<Histogram<u32>>,
    max_us: u64,
}

impl Latencies {
    fn record(&mut self, ns: u64) {
        let us = ns / 1000;
        let h = self.h.get_or_insert_with(|| {
            let mut h = Histogram::new(BUCKET_SIGFIGS).expect("2 significant digits is valid");
            h.auto(true);
            h
        });
        // `record` grows the auto-resizing histogram; only a value beyond any range saturates.
        if h.record(us).is_err() {
            h.saturating_record(us);
        }
        self.max_us = self.max_us.max(us);
    }

    fn merge(&mut self, other: Latencies) {
        self.max_us = self.max_us.max(other.max_us);
        match (&mut self.h, other.h) {
            (Some(a), Some(b)) => {
                // Both auto-resize: adding cannot fail on range.
                let _ = a.add(&b);
            }
            (None, b) => self.h = b,
            (Some(_), None) => {}
        }
    }

    fn quantile_ms(&self, q: f64) -> Option<f64> {
        let h = self.h.as_ref().filter(|h| !h.is_empty())?;
        Some(h.value_at_quantile(q).min(self.max_us) as f64 / 1e3)
    }
}

/// What one bucket counts while the run goes on.
#[derive(Clone, Debug, Default)]
struct Bucket {
    tickets_opened: u64,
    executor_timeouts: u64,
    retries: u64,
    pool_waits: u64,
    queue_depth_sum: u64,
    queue_depth_max: u32,
    latency: Latencies,
    duplicates: u64,
}

impl Bucket {
    fn merge(&mut self, o: Bucket) {
        self.tickets_opened += o.tickets_opened;
        self.executor_timeouts += o.executor_timeouts;
        self.retries += o.retries;
        self.pool_waits += o.pool_waits;
        self.queue_depth_sum += o.queue_depth_sum;
        self.queue_depth_max = self.queue_depth_max.max(o.queue_depth_max);
        self.latency.merge(o.latency);
        self.duplicates += o.duplicates;
    }
}

/// The online consumer: feed it the run's events ([`Observer`]), then [`Timeline::finish`].
#[derive(Debug)]
pub struct Timeline {
    width: SimTime,
    buckets: Vec<Bucket>,
    /// Refunds of open tickets that have one.
    open: BTreeMap<u64, TicketRefunds>,
}

impl Timeline {
    /// An empty timeline with buckets [`bucket_width`]`(horizon)` wide.
    pub fn new(horizon: Duration) -> Timeline {
        Timeline {
            width: bucket_width(horizon),
            buckets: Vec::new(),
            open: BTreeMap::new(),
        }
    }

    /// The bucket holding instant `t`, made (and the width doubled) as needed.
    fn at(&mut self, t: SimTime) -> &mut Bucket {
        let mut i = t.as_nanos() / self.width.as_nanos();
        while i >= MAX_BUCKETS as u64 {
            self.coarsen();
            i = t.as_nanos() / self.width.as_nanos();
        }
        let i = i as usize;
        if self.buckets.len() <= i {
            self.buckets.resize_with(i + 1, Bucket::default);
        }
        &mut self.buckets[i]
    }

    /// Doubles the width: buckets 2k and 2k+1 become bucket k.
    fn coarsen(&mut self) {
        self.width = SimTime::from_nanos(self.width.as_nanos().saturating_mul(2));
        let old = std::mem::take(&mut self.buckets);
        for (i, b) in old.into_iter().enumerate() {
            if i % 2 == 0 {
                self.buckets.push(b);
            } else if let Some(last) = self.buckets.last_mut() {
                last.merge(b);
            }
        }
    }

    /// Counts one event in its bucket.
    pub fn record(&mut self, e: &Event) {
        if let (Some(t), true) = (e.ticket, TicketRefunds::counts(e)) {
            self.open.entry(t).or_default().record(e);
        }
        match &e.kind {
            EventKind::TicketOpened { .. } => self.at(e.t_ns).tickets_opened += 1,
            EventKind::ExecutorTimeout { .. } => self.at(e.t_ns).executor_timeouts += 1,
            EventKind::ModelDecision {
                decision: Decision::Retry,
                ..
            } => self.at(e.t_ns).retries += 1,
            EventKind::PoolWait { queue_depth } => {
                let b = self.at(e.t_ns);
                b.pool_waits += 1;
                b.queue_depth_sum += u64::from(*queue_depth);
                b.queue_depth_max = b.queue_depth_max.max(*queue_depth);
            }
            EventKind::ServiceResponse { latency_ns, .. } => {
                self.at(e.t_ns).latency.record(*latency_ns);
            }
            _ => {}
        }
    }

    /// Ticket `id` closed: a duplicate is counted in the bucket of its second refund.
    pub fn close(&mut self, id: u64) {
        if let Some(r) = self.open.remove(&id) {
            if let Some(t) = r.duplicate_at() {
                self.at(t).duplicates += 1;
            }
        }
    }

    /// Closes the tickets still open and summarises every bucket, from time 0 to the last
    /// bucket with an event.
    pub fn finish(mut self) -> Series {
        for id in self.open.keys().copied().collect::<Vec<_>>() {
            self.close(id);
        }
        let mut cumulative = 0;
        let width = self.width;
        let buckets = self
            .buckets
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                cumulative += b.duplicates;
                BucketSummary {
                    start: SimTime::from_nanos(width.as_nanos().saturating_mul(i as u64)),
                    tickets_opened: b.tickets_opened,
                    executor_timeouts: b.executor_timeouts,
                    retries: b.retries,
                    pool_waits: b.pool_waits,
                    queue_depth_max: b.queue_depth_max,
                    queue_depth_mean: (b.pool_waits > 0)
                        .then(|| b.queue_depth_sum as f64 / b.pool_waits as f64),
                    responses: b.latency.h.as_ref().map_or(0, |h| h.len()),
                    latency_p50_ms: b.latency.quantile_ms(0.50),
                    latency_p99_ms: b.latency.quantile_ms(0.99),
                    latency_max_ms: b.latency.h.is_some().then(|| b.latency.max_us as f64 / 1e3),
                    duplicates: b.duplicates,
                    duplicates_cumulative: cumulative,
                }
            })
            .collect();
        Series { width, buckets }
    }
}

impl Observer for Timeline {
    fn event(&mut self, e: Event) {
        self.record(&e);
    }
    fn ticket_closed(&mut self, id: u64) {
        self.close(id);
    }
}

/// A finished [`Timeline`]: equal-width buckets from time 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Width of every bucket.
    pub width: SimTime,
    /// The buckets, in time order.
    pub buckets: Vec<BucketSummary>,
}

/// One bucket `[start, start + width)` of a [`Series`].
#[derive(Clone, Debug, PartialEq)]
pub struct BucketSummary {
    /// Its start, virtual time.
    pub start: SimTime,
    /// Tickets opened.
    pub tickets_opened: u64,
    /// Executor timeouts.
    pub executor_timeouts: u64,
    /// Model retries.
    pub retries: u64,
    /// Ticket requests that began waiting for a pool connection.
    pub pool_waits: u64,
    /// The deepest queue one of them found: waiters in line (ticket and background requests)
    /// counting itself, as the trace's `pool_wait.queue_depth`. 0 without requests.
    pub queue_depth_max: u32,
    /// The mean queue depth they found; `None` without requests.
    pub queue_depth_mean: Option<f64>,
    /// Refunds-service responses (the service response time sample, late ones included).
    pub responses: u64,
    /// Their latency's median, ms (1 % precision); `None` without responses.
    pub latency_p50_ms: Option<f64>,
    /// Their latency's 99th percentile, ms (1 % precision); `None` without responses.
    pub latency_p99_ms: Option<f64>,
    /// Their latency's maximum, ms (exact to the µs); `None` without responses.
    pub latency_max_ms: Option<f64>,
    /// Tickets that became duplicates here: their second money-moving refund was created in
    /// this bucket.
    pub duplicates: u64,
    /// Duplicate tickets up to the end of this bucket.
    pub duplicates_cumulative: u64,
}

impl Series {
    /// Duplicate-refund tickets over the whole run (the last cumulative count).
    pub fn duplicates(&self) -> u64 {
        self.buckets.last().map_or(0, |b| b.duplicates_cumulative)
    }

    /// The end of the last bucket.
    pub fn end(&self) -> SimTime {
        SimTime::from_nanos(
            self.width
                .as_nanos()
                .saturating_mul(self.buckets.len() as u64),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Caller, EventKind, RefundStatus};

    fn ev(t_s: u64, ticket: Option<u64>, kind: EventKind) -> Event {
        Event {
            t_ns: SimTime::from_secs(t_s),
            ticket,
            attempt: Some(0),
            call: None,
            kind,
        }
    }

    fn refund(t_s: u64, ticket: u64) -> Event {
        ev(
            t_s,
            Some(ticket),
            EventKind::RefundCreated {
                refund_id: format!("re_{t_s}"),
                amount_cents: 100,
                status: RefundStatus::Succeeded,
                moves_money: true,
                by: Caller::Service,
            },
        )
    }

    fn response(t_s: u64, latency_ms: u64) -> Event {
        ev(
            t_s,
            Some(1),
            EventKind::ServiceResponse {
                ok: true,
                refund_id: None,
                error: None,
                late: false,
                latency_ns: latency_ms * 1_000_000,
            },
        )
    }

    #[test]
    fn widths_are_round_and_cut_the_horizon_into_at_most_120() {
        let w = |s| bucket_width(Duration::from_secs(s)).as_nanos() / 1_000_000_000;
        assert_eq!(w(7200), 60, "the incident's 2 h: per minute");
        assert_eq!(w(600), 5);
        assert_eq!(w(7201), 120);
        assert_eq!(w(30 * 86_400), 21_600);
        assert_eq!(w(0), 1);
    }

    #[test]
    fn buckets_count_latency_queue_and_duplicates_where_they_happen() {
        let mut tl = Timeline::new(Duration::from_secs(7200));
        for (t, ms) in [(5, 100), (10, 200), (20, 300), (30, 9000)] {
            tl.record(&response(t, ms));
        }
        tl.record(&ev(61, Some(2), EventKind::PoolWait { queue_depth: 4 }));
        tl.record(&ev(62, Some(3), EventKind::PoolWait { queue_depth: 2 }));
        // Ticket 7: refunds at 90 s and 200 s, a duplicate since 200 s (bucket 3).
        tl.record(&refund(90, 7));
        tl.record(&refund(200, 7));
        tl.close(7);
        // Ticket 8: one refund; ticket 9: two, still open at the end.
        tl.record(&refund(100, 8));
        tl.record(&refund(130, 9));
        tl.record(&refund(250, 9));
        let s = tl.finish();
        assert_eq!(s.width, SimTime::from_secs(60));
        assert_eq!(s.buckets.len(), 5);
        let b0 = &s.buckets[0];
        assert_eq!(b0.responses, 4);
        assert_eq!(b0.latency_max_ms, Some(9000.0));
        assert_eq!(b0.latency_p99_ms, Some(9000.0));
        let p50 = b0.latency_p50_ms.unwrap();
        assert!((199.0..=202.0).contains(&p50), "{p50}");
        assert_eq!(b0.queue_depth_mean, None);
        let b1 = &s.buckets[1];
        assert_eq!((b1.pool_waits, b1.queue_depth_max), (2, 4));
        assert_eq!(b1.queue_depth_mean, Some(3.0));
        assert_eq!(b1.latency_p50_ms, None);
        let dups: Vec<u64> = s.buckets.iter().map(|b| b.duplicates).collect();
        assert_eq!(dups, [0, 0, 0, 1, 1]);
        assert_eq!(s.duplicates(), 2);
        assert_eq!(s.buckets[4].start, SimTime::from_secs(240));
    }

    #[test]
    fn a_failed_settlement_undoes_a_duplicate() {
        let mut tl = Timeline::new(Duration::from_secs(600));
        tl.record(&refund(1, 7));
        tl.record(&refund(2, 7));
        tl.record(&ev(
            3,
            Some(7),
            EventKind::RefundSettled {
                refund_id: "re_2".into(),
                amount_cents: 100,
                created_ns: 2_000_000_000,
                status: RefundStatus::Failed,
                moves_money: false,
            },
        ));
        tl.close(7);
        assert_eq!(tl.finish().duplicates(), 0);
    }

    #[test]
    fn memory_is_bounded_however_long_the_run() {
        // A 2-hour horizon (1-minute buckets) whose events go on for 100 days.
        let mut tl = Timeline::new(Duration::from_secs(7200));
        let days = 100;
        for h in 0..days * 24 {
            tl.record(&response(h * 3600, 100 + h));
            tl.record(&ev(
                h * 3600,
                Some(h),
                EventKind::PoolWait { queue_depth: 1 },
            ));
            assert!(tl.buckets.len() <= MAX_BUCKETS);
        }
        let s = tl.finish();
        assert!(s.buckets.len() <= MAX_BUCKETS, "{}", s.buckets.len());
        assert!(s.end() > SimTime::from_secs(days * 86_400 - 3600));
        let n: u64 = s.buckets.iter().map(|b| b.responses).sum();
        let waits: u64 = s.buckets.iter().map(|b| b.pool_waits).sum();
        assert_eq!((n, waits), (days * 24, days * 24), "merging loses nothing");
        let max = s
            .buckets
            .iter()
            .filter_map(|b| b.latency_max_ms)
            .fold(0.0, f64::max);
        assert_eq!(max, (100 + days * 24 - 1) as f64);
    }
}
