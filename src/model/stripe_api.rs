//! Stripe over the wire: the server side of one `POST /v1/refunds` as a task of its own (Stripe
//! keeps executing when a client gives up), and the fault and latency draws that drive it.

use std::rc::Rc;

use rand::Rng;

use super::dist;
use super::stripe::{Begin, CommitFault, Delivered, RefundStatus, StripeRequest};
use super::world::{Ids, World};
use crate::history::EventKind;
use crate::scenario::{Faults, RequestKey};
use crate::sim::{SimTime, StreamRng};

/// Round trip of a request Stripe answers without executing (429, 409, 400, replay): 30 ms.
pub(crate) const REJECT_LATENCY: SimTime = SimTime::from_millis(30);

pub(crate) use crate::history::Caller;

/// The draws for one Stripe request, taken in a fixed order from its own stream so that the
/// same (ticket, attempt, try) sees the same latency and faults under every policy.
///
/// When the engine drives discrete draws ([`crate::sim::Sim::pick`] answers: exhaustive
/// exploration), two of them become choices instead, each a decision of the schedule: the
/// latency among `stripe.latency_choices` (when non-empty), then the request's fault among the
/// outcomes its fault draws can produce ([`fault_options`]). The stream's uniforms are drawn all
/// the same, so every later draw of the stream stays where it was; in a normal run nothing
/// changes.
struct Draws {
    latency: SimTime,
    lock_timeout: bool,
    fault: CommitFault,
    status: RefundStatus,
}

/// What a request's fault draws decide, as one outcome: a 429 `lock_timeout` comes before
/// anything runs (so it leaves no commit fault to apply), and a 500 after commit wins over a
/// lost response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    LockTimeout,
    Error500,
    ResponseLost,
}

/// The fault outcomes a request's draws can produce, "no fault" first, then
/// `faults.lock_timeout`, `faults.error_500_after_commit` and `faults.response_lost_after_commit`
/// in the order they are drawn: the alternatives of exhaustive mode's fault decision. A fault of
/// probability 0 is never an alternative (with every fault at 0 there is one outcome and no
/// decision, so a world without faults has the schedules it had before faults were
/// enumerated); a fault of probability 1 leaves out the outcomes it rules out ("no fault", and
/// the faults drawn after it).
fn fault_options(f: &Faults) -> FaultOptions {
    let mut all = [Fault::None; 4];
    let mut end = 1;
    let mut reachable = true;
    for (p, fault) in [
        (f.lock_timeout, Fault::LockTimeout),
        (f.error_500_after_commit, Fault::Error500),
        (f.response_lost_after_commit, Fault::ResponseLost),
    ] {
        if reachable && p > 0.0 {
            all[end] = fault;
            end += 1;
        }
        reachable &= p < 1.0;
    }
    let start = if reachable { 0 } else { 1 };
    FaultOptions { all, start, end }
}

/// Up to four [`Fault`]s without allocating (this runs for every Stripe request).
struct FaultOptions {
    all: [Fault; 4],
    start: usize,
    end: usize,
}

impl FaultOptions {
    fn as_slice(&self) -> &[Fault] {
        &self.all[self.start..self.end]
    }
}

fn draw(w: &World, rng: &mut StreamRng, key: &RequestKey) -> Draws {
    let f = &w.cfg.stripe.faults;
    let mut base = w.latencies.stripe.draw_for(rng, key);
    let choices = &w.cfg.stripe.latency_choices;
    if !choices.is_empty() {
        let drawn = rng.random_range(0..choices.len());
        let k = w.sim.pick(choices.len()).unwrap_or(drawn);
        base = SimTime::from_duration(choices[k]);
    }
    let spike = dist::chance(rng, f.latency_spike);
    let lock_timeout = dist::chance(rng, f.lock_timeout);
    let e500 = dist::chance(rng, f.error_500_after_commit);
    let lost = dist::chance(rng, f.response_lost_after_commit);
    let pending = dist::chance(rng, f.refund_pending);
    let failed = dist::chance(rng, f.refund_failed);
    let latency = if spike {
        SimTime::from_nanos((base.as_nanos() as f64 * f.latency_spike_factor) as u64)
    } else {
        base
    };
    let drawn = if lock_timeout {
        Fault::LockTimeout
    } else if e500 {
        Fault::Error500
    } else if lost {
        Fault::ResponseLost
    } else {
        Fault::None
    };
    let options = fault_options(f);
    let options = options.as_slice();
    let chosen = w.sim.pick(options.len()).map_or(drawn, |k| options[k]);
    let (lock_timeout, fault) = match chosen {
        Fault::None => (false, CommitFault::None),
        Fault::LockTimeout => (true, CommitFault::None),
        Fault::Error500 => (false, CommitFault::Error500),
        Fault::ResponseLost => (false, CommitFault::ResponseLost),
    };
    let status = if failed {
        RefundStatus::Failed
    } else if pending {
        RefundStatus::Pending
    } else {
        RefundStatus::Succeeded
    };
    let drawn = Draws {
        latency,
        lock_timeout,
        fault,
        status,
    };
    match w.cfg.replay.as_ref().and_then(|r| r.requests.get(key)) {
        Some(recorded) => replayed(recorded),
        None => drawn,
    }
}

/// A recorded request's latency and answer (`replay.requests`), replacing its draws (drawn all
/// the same, so no other draw moves): a 2xx commits; an error or a lost answer commits (as
/// Stripe's 500 after commit or a reset after commit) when the recording says a refund was
/// created for it, and otherwise fails before anything is created.
fn replayed(r: &crate::scenario::RecordedRequest) -> Draws {
    let fault = match (r.status, r.commits) {
        (Some(s), _) if (200..300).contains(&s) => CommitFault::None,
        (Some(_), true) => CommitFault::Error500,
        (Some(s), false) => CommitFault::FailsWith(s),
        (None, true) => CommitFault::ResponseLost,
        (None, false) => CommitFault::LostBeforeCommit,
    };
    Draws {
        latency: SimTime::from_duration(r.latency),
        lock_timeout: false,
        fault,
        status: RefundStatus::Succeeded,
    }
}

/// Stripe's side of one request: admission (rate limit, validation, idempotency), then the
/// execution latency, then the commit. Records `refund_created` when a refund comes into being.
/// Returns what the client receives. `key` names the request for a `script` latency.
/// Whether the service's HTTP try `entity` of ticket `ticket` fails to connect
/// (`stripe.faults.connect_failure`): drawn from its own stream (`connect`), and only when the
/// probability is above 0, so no other draw moves.
pub(crate) fn connect_fails(w: &World, ticket: u64, entity: &[u64]) -> bool {
    let p = w.cfg.stripe.faults.connect_failure;
    p > 0.0 && dist::chance(&mut w.ticket_stream("connect", ticket, entity), p)
}

pub(crate) async fn serve(
    w: Rc<World>,
    req: StripeRequest,
    ids: Ids,
    caller: Caller,
    mut rng: StreamRng,
    key: RequestKey,
) -> Delivered {
    let d = draw(&w, &mut rng, &key);
    serve_drawn(w, req, ids, caller, rng, key, d).await
}

/// [`serve`] for a refund a replay makes as recorded outside the agent (a human's dashboard
/// refund the provider's list shows, `replay.tickets[].outside_refunds`): no draw, no latency,
/// no fault: created the instant it is asked for, under Stripe's rules (a charge that cannot
/// hold it refuses it, 400).
pub(crate) async fn serve_recorded_outside(
    w: Rc<World>,
    req: StripeRequest,
    ids: Ids,
    rng: StreamRng,
    key: RequestKey,
) -> Delivered {
    let d = Draws {
        latency: SimTime::ZERO,
        lock_timeout: false,
        fault: CommitFault::None,
        status: RefundStatus::Succeeded,
    };
    serve_drawn(w, req, ids, Caller::Human, rng, key, d).await
}

async fn serve_drawn(
    w: Rc<World>,
    req: StripeRequest,
    ids: Ids,
    caller: Caller,
    mut rng: StreamRng,
    key: RequestKey,
    d: Draws,
) -> Delivered {
    let mut fault = d.fault;
    let in_recording = w.cfg.replay.as_ref().and_then(|r| r.requests.get(&key));
    // The recording wins where it knows what was sent: a request whose Idempotency-Key it does
    // not state took the scenario's key, an assumption the rules may overrule.
    let recorded = in_recording.filter(|r| w.recording_wins && r.idempotency_key.is_some());
    let begun = match recorded {
        None => w.stripe.borrow_mut().begin(w.now(), req, d.lock_timeout),
        Some(rec) => {
            let again = req.clone();
            let begun = w.stripe.borrow_mut().begin(w.now(), req, d.lock_timeout);
            as_recorded(&w, ids, &key, rec, begun, again, &mut fault)
        }
    };
    match begun {
        Begin::Respond(r) => {
            // A recorded request (an idempotent replay, a 409, a 400) is answered in its
            // recorded latency, as every recorded instant is.
            w.sim
                .sleep(if in_recording.is_some() {
                    d.latency
                } else {
                    REJECT_LATENCY
                })
                .await;
            Delivered::Response(r)
        }
        Begin::Execute(token) => {
            w.sim.sleep(d.latency).await;
            let (delivered, created) = {
                let mut stripe = w.stripe.borrow_mut();
                let delivered = stripe.commit(w.now(), token, d.status, fault);
                (delivered, stripe.take_created())
            };
            if let Some(mut r) = created {
                let settles = r.status == RefundStatus::Pending;
                // `requires_action` (provider.settle.requires_action_probability): drawn from the
                // request's stream after its own draws, and only when asked for.
                if let Some(settle) = w.cfg.provider.settle.as_ref().filter(|_| settles) {
                    if settle.requires_action_probability > 0.0
                        && dist::uniform(&mut rng, 0.0, 1.0) < settle.requires_action_probability
                    {
                        let moved = w.stripe.borrow_mut().settle(
                            &r.charge,
                            &r.id,
                            RefundStatus::RequiresAction,
                        );
                        if let Some(m) = moved {
                            r = m;
                        }
                    }
                }
                w.record(
                    ids,
                    EventKind::RefundCreated {
                        refund_id: String::from(&*r.id),
                        amount_cents: r.amount_cents,
                        status: r.status,
                        moves_money: r.status.moves_money(),
                        by: caller,
                    },
                );
                if let Some(settle) = w.cfg.provider.settle.as_ref().filter(|_| settles) {
                    // Drawn after the request's own draws, from its stream: nothing else moves.
                    let u = dist::uniform(&mut rng, 0.0, 1.0);
                    let status = if u < settle.fails_probability {
                        RefundStatus::Failed
                    } else if u < settle.fails_probability + settle.canceled_probability {
                        RefundStatus::Canceled
                    } else {
                        RefundStatus::Succeeded
                    };
                    let after = SimTime::from_duration(settle.after);
                    let ticket = r.origin.ticket;
                    let ww = w.clone();
                    w.spawn_detached_for_with(ticket, move || {
                        settle_later(ww, ids, r, status, after)
                    });
                }
            }
            delivered
        }
    }
}

/// In an exact replay, the recording's answer over Stripe's rules where they disagree
/// (`begun` is what the rules decided for `req`): a request the recording has create a refund
/// executes even where the rules answer without executing (an idempotent replay, a 409, a
/// 429); a recorded answer that made nothing replaces the rules' other answer; a recorded 2xx
/// that returned an earlier request's refund answers with it (`fault` becomes
/// [`CommitFault::AnswersExisting`]) where the rules would make a new one. Each disagreement
/// is recorded as [`EventKind::RecordingDisagrees`], a finding about the recording.
fn as_recorded(
    w: &World,
    ids: Ids,
    key: &RequestKey,
    rec: &crate::scenario::RecordedRequest,
    begun: Begin,
    req: StripeRequest,
    fault: &mut CommitFault,
) -> Begin {
    let ok = rec.status.is_some_and(|s| (200..300).contains(&s));
    match begun {
        Begin::Respond(r) => {
            let agrees = !rec.commits && rec.status == Some(r.status);
            if agrees {
                return Begin::Respond(r);
            }
            w.record(
                ids,
                EventKind::RecordingDisagrees {
                    request: key.to_string(),
                    recorded: recorded_answer(rec),
                    rules: rules_answer(&r),
                },
            );
            if ok && !rec.commits {
                *fault = CommitFault::AnswersExisting;
            }
            Begin::Execute(w.stripe.borrow_mut().begin_as_recorded(w.now(), req))
        }
        Begin::Execute(token) if ok && !rec.commits => {
            let rules = match &req.idempotency_key {
                Some(_) => "a new refund (no earlier request with this Idempotency-Key)",
                None => "a new refund (no Idempotency-Key sent)",
            };
            w.record(
                ids,
                EventKind::RecordingDisagrees {
                    request: key.to_string(),
                    recorded: recorded_answer(rec),
                    rules: rules.to_string(),
                },
            );
            *fault = CommitFault::AnswersExisting;
            Begin::Execute(token)
        }
        b => b,
    }
}

/// What a recorded request's answer was, in words.
fn recorded_answer(rec: &crate::scenario::RecordedRequest) -> String {
    let ok = rec.status.is_some_and(|s| (200..300).contains(&s));
    match (rec.status, rec.commits) {
        (Some(s), true) if ok => format!("{s} with a new refund"),
        (Some(s), true) => format!("{s}, and the provider lists a refund it made"),
        (Some(s), false) if ok => format!("{s} returning an earlier request's refund"),
        (Some(s), false) => format!("{s}, nothing made"),
        (None, true) => "no answer, and the provider lists a refund it made".to_string(),
        (None, false) => "no answer, nothing made".to_string(),
    }
}

/// What Stripe's rules answered without executing, in words.
fn rules_answer(r: &super::stripe::Response) -> String {
    if r.idempotent_replayed {
        return format!(
            "{} as an idempotent replay of the first request with this Idempotency-Key \
             (Stripe keeps a key 24 h)",
            r.status
        );
    }
    match r.error_code() {
        Some(code) => format!("{} {code}", r.status),
        None => r.status.to_string(),
    }
}

/// A pending (or `requires_action`) refund reaching `status` after `after` (`provider.settle`): Stripe's
/// `refund.updated` / `refund.failed`. Records `refund_settled`.
async fn settle_later(
    w: Rc<World>,
    ids: Ids,
    r: super::stripe::Refund,
    status: RefundStatus,
    after: SimTime,
) {
    w.sim.sleep(after).await;
    let settled = w.stripe.borrow_mut().settle(&r.charge, &r.id, status);
    if let Some(s) = settled {
        w.record(
            ids,
            EventKind::RefundSettled {
                refund_id: String::from(&*s.id),
                amount_cents: s.amount_cents,
                created_ns: s.created.as_nanos(),
                status: s.status,
                moves_money: s.status.moves_money(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each recorded answer in words, by its status and whether it made a refund: a 2xx made a
    /// new refund or returned an earlier one; an error or a lost answer made one only where the
    /// provider lists it.
    #[test]
    fn recorded_answers_say_what_the_recording_shows() {
        let rec = |status: Option<u16>, commits: bool| crate::scenario::RecordedRequest {
            reach_provider: std::time::Duration::ZERO,
            latency: std::time::Duration::ZERO,
            status,
            commits,
            idempotency_key: Some(None),
        };
        let said = |status, commits| recorded_answer(&rec(status, commits));
        assert_eq!(said(Some(200), true), "200 with a new refund");
        assert_eq!(
            said(Some(500), true),
            "500, and the provider lists a refund it made"
        );
        assert_eq!(
            said(Some(201), false),
            "201 returning an earlier request's refund"
        );
        assert_eq!(said(Some(409), false), "409, nothing made");
        assert_eq!(
            said(None, true),
            "no answer, and the provider lists a refund it made"
        );
        assert_eq!(said(None, false), "no answer, nothing made");
    }

    fn faults(lock: f64, e500: f64, lost: f64) -> Faults {
        Faults {
            lock_timeout: lock,
            error_500_after_commit: e500,
            response_lost_after_commit: lost,
            ..Faults::default()
        }
    }

    fn fault_options_of(f: &Faults) -> Vec<Fault> {
        fault_options(f).as_slice().to_vec()
    }

    #[test]
    fn fault_options_are_the_outcomes_the_draws_can_produce() {
        use Fault::*;
        assert_eq!(fault_options_of(&faults(0.0, 0.0, 0.0)), [None]);
        assert_eq!(
            fault_options_of(&faults(0.0, 0.0, 0.3)),
            [None, ResponseLost]
        );
        assert_eq!(
            fault_options_of(&faults(0.1, 0.2, 0.3)),
            [None, LockTimeout, Error500, ResponseLost]
        );
        assert_eq!(fault_options_of(&faults(0.0, 0.0, 1.0)), [ResponseLost]);
        assert_eq!(fault_options_of(&faults(0.0, 1.0, 0.5)), [Error500]);
        assert_eq!(
            fault_options_of(&faults(0.2, 1.0, 0.5)),
            [LockTimeout, Error500]
        );
        assert_eq!(fault_options_of(&faults(1.0, 1.0, 1.0)), [LockTimeout]);
    }
}
