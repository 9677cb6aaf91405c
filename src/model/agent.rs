//! The LLM agent: reads a ticket, calls the refund tool, reads the tool result, applies the retry
//! rule from its system prompt, and escalates when it will not retry.

use std::rc::Rc;

use super::dist;
use super::executor::{call_tool, tool_is_idempotent, ToolReply};
use super::humans::escalate;
use super::layers::around_tool;
use super::layers::{self, Via};
use super::ticket::Delivery;
use super::world::{Ids, World};
use crate::history::{Decision, EventKind, Outcome, Text};
use crate::scenario::{
    AppliesTo, Cancellation, Checkpoint, Position, ReportTimeout, RetryLayer, RetryOn,
};
use crate::sim::{tag, SimTime, StreamRng};

// The ticket lives in `ticket`, below everyone who handles it; its old path stays.
pub(crate) use super::ticket::Ticket;

/// Whether the rule lets the model retry the agent's tool: `any_tool`, or `idempotent_tools` and
/// the tool's annotations say `readOnlyHint || idempotentHint`.
pub(crate) fn retry_eligible(w: &World) -> bool {
    match w.cfg.agent.retry.applies_to {
        AppliesTo::AnyTool => true,
        AppliesTo::IdempotentTools => tool_is_idempotent(w),
    }
}

/// Opens ticket `t`: its charge at Stripe, and `ticket_opened`.
pub(crate) fn open_ticket(w: &World, t: &Ticket) {
    w.stripe
        .borrow_mut()
        .add_charge(&w.charge_of(t.id), t.charge_amount_cents);
    w.record(
        Ids::ticket(t.id),
        EventKind::TicketOpened {
            amount_cents: t.amount_cents,
            charge_amount_cents: t.charge_amount_cents,
            phase: t.phase.clone(),
        },
    );
}

/// One agent run on a ticket, started by delivery `d` of its triggering event. The first
/// delivery opens the ticket (its charge, `ticket_opened`); a duplicate delivery's run is a
/// second, concurrent handler for the same ticket, with attempts from
/// [`Delivery::attempt_base`] and its own agent stream.
pub(crate) async fn handle_delivery(w: Rc<World>, t: Ticket, d: Delivery) {
    if d.opens {
        open_ticket(&w, &t);
    }
    if d.traced {
        w.record(
            Ids::ticket(t.id),
            EventKind::Delivered {
                event_id: super::ticket::delivered_event_id(t.id, &d),
                duplicate: d.index > 0,
                delivery_id: None,
                receive: None,
                reason: d
                    .other_trigger
                    .then_some(crate::history::RedeliveryReason::OtherTrigger),
            },
        );
    }
    let mut rng = w.ticket_stream("agent", t.id, &d.stream_ids());
    let mut turn = TurnState {
        attempt: d.attempt_base(),
        amount: t.amount_cents,
        awaiting_result: false,
        steps: Vec::new(),
        checkpoint: Checkpoint::None,
    };
    let run = w
        .layers_at(Position::AboveModel)
        .first()
        .map(|(n, l)| (n.to_string(), (*l).clone()));
    let Some((name, layer)) = run else {
        let end = run_turn(
            &w,
            &t,
            &mut rng,
            &mut turn,
            &Via::new(),
            None,
            Cancellation::None,
        )
        .await;
        return finish(&w, &t, end, &d).await;
    };
    turn.checkpoint = layer.checkpoint;
    let mut turns = Turns {
        w: &w,
        t: &t,
        rng,
        turn,
        layer: &layer,
        name: &name,
        stream_ids: d.stream_ids(),
    };
    let end = layers::retry(
        &w,
        layers::Layer {
            name: &name,
            cfg: &layer,
        },
        t.id,
        &Via::new(),
        &mut turns,
    )
    .await;
    finish(&w, &t, end, &d).await
}

/// A run-level retry layer's inner service: one agent turn (the model's thinking and its tool
/// calls). A failure the layer's `retry_on` names is raised out of the turn, except on its last
/// try; a timed-out turn is dropped, its tool call's work given up with the layer's
/// `cancellation`, and the next turn continues the model's attempt count.
struct Turns<'a> {
    w: &'a Rc<World>,
    t: &'a Ticket,
    rng: StreamRng,
    turn: TurnState,
    layer: &'a RetryLayer,
    name: &'a str,
    stream_ids: Vec<u64>,
}

impl layers::Inner for Turns<'_> {
    type Answer = TurnEnd;

    async fn try_once(&mut self, n: u32, via: Via) -> layers::TryEnd<TurnEnd> {
        // On its last try the run layer raises nothing: the failure goes to the model as usual.
        let raising = (n < self.layer.all_retries()).then_some(self.layer);
        let end = run_turn(
            self.w,
            self.t,
            &mut self.rng,
            &mut self.turn,
            &via,
            raising,
            self.layer.cancellation,
        )
        .await;
        let class = match &end {
            TurnEnd::Raised { class, .. } => Some(*class),
            _ => None,
        };
        layers::TryEnd::Answered { value: end, class }
    }

    fn ids(&self) -> Ids {
        Ids::attempt(self.t.id, self.turn.attempt)
    }

    fn backoff_key(&self, n: u32) -> Vec<u64> {
        [&[tag(self.name), u64::from(n)][..], &self.stream_ids].concat()
    }

    fn try_timed_out(&mut self, _n: u32) {
        if std::mem::take(&mut self.turn.awaiting_result) {
            // The dropped turn's tool call never answered the model: the run's timeout is its
            // result (a failure, or an unknown outcome with `on_timeout: unknown`).
            let after_ns = self
                .layer
                .per_try_timeout
                .map_or(0, |d| d.as_nanos() as u64);
            let unknown = self.layer.on_timeout == ReportTimeout::Unknown;
            self.w.record(
                self.ids(),
                EventKind::ToolResult {
                    outcome: if unknown {
                        Outcome::Info
                    } else {
                        Outcome::Fail
                    },
                    shown: format!(
                        "{{ error: \"agent run timed out after {}ms ({})\" }}",
                        after_ns / 1_000_000,
                        self.name
                    ),
                    refund_id: None,
                },
            );
        }
    }

    fn retrying(&mut self, _n: u32) {
        self.turn.attempt += 1;
    }

    fn timed_out(&mut self, _after: SimTime) -> TurnEnd {
        TurnEnd::RunTimedOut {
            after: self.layer.per_try_timeout.unwrap_or_default(),
            unknown: self.layer.on_timeout == ReportTimeout::Unknown,
            name: self.name.to_string(),
        }
    }
}

/// What carries over from one agent turn to the next: the model's attempt counter (unique per
/// ticket across turns) and the amount it asks for (argument drift persists).
struct TurnState {
    attempt: u32,
    amount: u64,
    /// A tool call of `attempt` is out and its result not yet recorded (when a run-level
    /// timeout drops the turn, the run records that call's result itself).
    awaiting_result: bool,
    /// The checkpoint of each step (a call's index within its turn) across turns, kept only
    /// under a run-level retry's `checkpoint`.
    steps: Vec<Step>,
    /// The run-level retry's `checkpoint` (`none` without one).
    checkpoint: Checkpoint,
}

/// A step's checkpoint (durable execution): started by model attempt `.0` (`u32::MAX`: not
/// started, or failed and to be run again), or its successful result once it came back.
#[derive(Clone)]
enum Step {
    Started(u32),
    Completed(u32, ToolReply),
}

/// How one agent turn ended.
enum TurnEnd {
    /// A tool call succeeded.
    Done,
    /// The model gave up after `reply` (shown at `ids`): it escalates.
    GaveUp { ids: Ids, reply: ToolReply },
    /// A run-level retry layer raised the tool's failure (class `class`) out of the turn instead
    /// of showing it to the model.
    Raised {
        ids: Ids,
        reply: ToolReply,
        class: RetryOn,
    },
    /// The model's LLM call failed after the tool succeeded, and no run-level retry replays
    /// the turn: the run fails and is escalated, refund done.
    LlmFailed { ids: Ids },
    /// The run layer's last try timed out: escalated as a failure, or as an unknown outcome with
    /// `on_timeout: unknown`.
    RunTimedOut {
        after: std::time::Duration,
        unknown: bool,
        name: String,
    },
}

/// Ends a ticket's handling after its last turn: escalates when the model gave up (or when the
/// last try of a run-level retry raised or timed out; a timed-out turn's escalation says so).
async fn finish(w: &Rc<World>, t: &Ticket, end: TurnEnd, d: &Delivery) {
    let (ids, outcome, shown) = match end {
        TurnEnd::Done => return,
        TurnEnd::LlmFailed { ids } => {
            // The model never read the result: the framework escalates the failed run.
            let reason =
                "{ error: \"agent run failed: the LLM call after the tool result errored\" }";
            return escalate(w, t, ids, reason.to_string()).await;
        }
        TurnEnd::GaveUp { ids, reply } | TurnEnd::Raised { ids, reply, .. } => {
            (ids, reply.outcome, reply.shown)
        }
        TurnEnd::RunTimedOut {
            after,
            unknown,
            name,
        } => (
            Ids::ticket(t.id),
            if unknown {
                Outcome::Info
            } else {
                Outcome::Fail
            },
            format!(
                "{{ error: \"agent run timed out after {}ms ({name})\" }}",
                after.as_millis()
            ),
        ),
    };
    let text = match outcome {
        Outcome::Info => "The refund's outcome is unknown. Escalating to a human.",
        _ => "The refund could not be completed. Escalating to a human.",
    };
    w.record(
        ids,
        EventKind::ModelDecision {
            decision: Decision::Escalate,
            text: text.into(),
        },
    );
    if d.assign_human() {
        escalate(w, t, ids, shown).await;
    } else {
        // The ticket is already with a human (the other delivery's run escalated it first).
        w.record(ids, EventKind::Escalation { reason: shown });
    }
}

/// Whether the model's LLM call reading turn `attempt`'s successful tool result fails
/// (`agent.llm_error_after_tool`), from the attempt's own stream; no draw at probability 0, so
/// no other draw moves.
fn llm_fails_after_tool(w: &World, ticket: u64, attempt: u32) -> bool {
    let p = w.cfg.agent.llm_error_after_tool;
    if p <= 0.0 {
        return false;
    }
    let mut rng = w.ticket_stream("llm_error", ticket, &[u64::from(attempt)]);
    dist::chance(&mut rng, p)
}

/// The recorded think time before `ticket`'s tool call `attempt` (`replay` section), which
/// replaces the drawn one (drawn all the same, so no other draw moves).
fn replayed_think(w: &World, ticket: u64, attempt: u32) -> Option<SimTime> {
    let replay = w.cfg.replay.as_ref()?;
    match replay.call(ticket, attempt) {
        Some(call) => Some(SimTime::from_duration(call.think)),
        // No such call recorded: the decision after the last one (to give up), if recorded.
        None => attempt
            .checked_sub(1)
            .and_then(|a| replay.call(ticket, a)?.think_after)
            .map(SimTime::from_duration),
    }
}

/// The recorded time from the model's decision to `ticket`'s tool call `attempt` (`replay`
/// section, `call_after`), which replaces `agent.call_overhead` for that call.
fn replayed_call_after(w: &World, ticket: u64, attempt: u32) -> Option<SimTime> {
    let call = w.cfg.replay.as_ref()?.call(ticket, attempt)?;
    call.call_after.map(SimTime::from_duration)
}

/// One agent turn: think, call the tool (through the layers below), read the result, apply the
/// model's retry rule (its `max_retries` counts within the turn). `run` is the run-level retry
/// layer above the model, if any: a failure its `retry_on` names is raised out of the turn
/// instead of being shown to the model (the framework re-raises the tool error). `cancel` is
/// what giving up on the turn's tool calls cancels (the run layer's `cancellation`). The model's
/// retries run the one retry loop ([`layers::retry_loop`]): [`ModelCalls`] under
/// [`ModelRetryRule`].
async fn run_turn(
    w: &Rc<World>,
    t: &Ticket,
    rng: &mut StreamRng,
    turn: &mut TurnState,
    via: &Via,
    run: Option<&RetryLayer>,
    cancel: Cancellation,
) -> TurnEnd {
    let think = w.latencies.think_time.draw(rng);
    w.sim
        .sleep(replayed_think(w, t.id, turn.attempt).unwrap_or(think))
        .await;
    let mut calls = ModelCalls {
        w,
        t,
        rng,
        turn,
        via,
        run,
        cancel,
    };
    match layers::retry_loop(w, &mut ModelRetryRule, &mut calls).await {
        ModelStep::End(end) => end,
        ModelStep::Failed { ids, reply, .. } => TurnEnd::GaveUp { ids, reply },
    }
}

/// How one of the model's tool calls ended for its retry rule: the turn is over, or the tool
/// failed (shown at `ids`) and the model, having thought, may retry; its draws for the decision
/// are made whatever is decided.
enum ModelStep {
    End(TurnEnd),
    Failed {
        ids: Ids,
        reply: ToolReply,
        complies: bool,
        drifts: bool,
    },
}

/// The model's tool calls in one turn: each try is a call (through the framework layers and
/// the executor), its result shown to the model, and the model's thinking about it.
struct ModelCalls<'a> {
    w: &'a Rc<World>,
    t: &'a Ticket,
    rng: &'a mut StreamRng,
    turn: &'a mut TurnState,
    via: &'a Via,
    run: Option<&'a RetryLayer>,
    cancel: Cancellation,
}

impl layers::Inner for ModelCalls<'_> {
    type Answer = ModelStep;

    async fn try_once(&mut self, n: u32, _via: Via) -> layers::TryEnd<ModelStep> {
        let step = self.call_and_think(n).await;
        layers::TryEnd::Answered {
            value: step,
            class: None,
        }
    }
}

impl ModelCalls<'_> {
    /// The turn's tool call through the framework layers and the executor. Without framework
    /// layers the call goes straight to the executor (what `call_via` does then too), without
    /// boxing a future per call.
    async fn call(&mut self) -> ToolReply {
        let (w, t, turn) = (self.w, self.t, &*self.turn);
        if w.layers_at(Position::AroundTool).is_empty() {
            call_tool(
                w.clone(),
                t.id,
                turn.attempt,
                turn.amount,
                self.via.clone(),
                self.cancel,
            )
            .await
        } else {
            around_tool::call_via(
                w.clone(),
                t.id,
                turn.attempt,
                turn.amount,
                self.via.clone(),
                self.cancel,
            )
            .await
        }
    }

    /// One tool call of the turn, its result shown to the model, and (after a failure) the
    /// model's thinking before it decides.
    async fn call_and_think(&mut self, n: u32) -> ModelStep {
        let (w, t, turn) = (self.w, self.t, &mut *self.turn);
        let cfg = &w.cfg.agent;
        let overhead = SimTime::from_duration(cfg.call_overhead);
        w.sim
            .sleep(replayed_call_after(w, t.id, turn.attempt).unwrap_or(overhead))
            .await;
        let ids = Ids::attempt(t.id, turn.attempt);
        w.record(
            ids,
            EventKind::ToolCall {
                tool: cfg.tool.clone(),
                amount_cents: turn.amount,
            },
        );
        turn.awaiting_result = true;
        let checkpoint = turn.checkpoint;
        let reply = match checkpointed(w, ids, turn, n, checkpoint) {
            Some(reply) => reply,
            None => {
                let reply = self.call().await;
                if checkpoint != Checkpoint::None {
                    let turn = &mut *self.turn;
                    // A result that came back is checkpointed; a failure is run again.
                    turn.steps[n as usize] = if reply.outcome == Outcome::Ok {
                        Step::Completed(turn.attempt, reply.clone())
                    } else {
                        Step::Started(u32::MAX)
                    };
                }
                reply
            }
        };
        let (w, turn) = (self.w, &mut *self.turn);
        turn.awaiting_result = false;
        if reply.outcome == Outcome::Ok {
            return ModelStep::End(succeeded(w, ids, reply, self.run));
        }
        w.record(
            ids,
            EventKind::ToolResult {
                outcome: reply.outcome,
                shown: reply.shown.clone(),
                refund_id: reply.refund_id.clone(),
            },
        );
        if let (Some(layer), Outcome::Fail, Some(class)) = (self.run, reply.outcome, reply.class) {
            if layer.retries_on(class) {
                return ModelStep::End(TurnEnd::Raised { ids, reply, class });
            }
        }
        // Draws in a fixed order per decision, whatever is decided.
        let think = w.latencies.think_time.draw(self.rng);
        let complies = dist::chance(self.rng, cfg.retry.compliance);
        let drifts = dist::chance(self.rng, cfg.retry.amount_drift_probability);
        w.sim
            .sleep(replayed_think(w, t.id, turn.attempt + 1).unwrap_or(think))
            .await;
        ModelStep::Failed {
            ids,
            reply,
            complies,
            drifts,
        }
    }
}

/// Step `n` of a turn under a run-level retry's `checkpoint`: the answer from an earlier turn's
/// checkpoint (a completed step replays its result; under `at_most_once_per_retry` a step that
/// started and never completed answers `StepInterruptedError`), or `None` to run the call, the
/// step then marked started by this attempt. AWS Lambda durable functions' replay rule.
fn checkpointed(
    w: &World,
    ids: Ids,
    turn: &mut TurnState,
    n: u32,
    checkpoint: Checkpoint,
) -> Option<ToolReply> {
    if checkpoint == Checkpoint::None {
        return None;
    }
    let at = n as usize;
    if turn.steps.len() <= at {
        turn.steps.resize(at + 1, Step::Started(u32::MAX));
    }
    match &turn.steps[at] {
        Step::Completed(from, reply) => {
            w.record(
                ids,
                EventKind::StepReplayed {
                    step: n,
                    from_attempt: *from,
                },
            );
            return Some(reply.clone());
        }
        Step::Started(from)
            if *from != u32::MAX && checkpoint == Checkpoint::AtMostOncePerRetry =>
        {
            w.record(
                ids,
                EventKind::StepInterrupted {
                    step: n,
                    from_attempt: *from,
                },
            );
            return Some(ToolReply::interrupted());
        }
        Step::Started(_) => {}
    }
    turn.steps[at] = Step::Started(turn.attempt);
    None
}

/// A successful tool call shown to the model: the turn is done, unless the model's LLM call
/// reading it fails (`agent.llm_error_after_tool`); a run-level layer whose `retry_on` names
/// `llm-error` raises that out of the turn.
fn succeeded(w: &World, ids: Ids, reply: ToolReply, run: Option<&RetryLayer>) -> TurnEnd {
    let llm_error = llm_fails_after_tool(w, ids.ticket.unwrap_or(0), ids.attempt.unwrap_or(0));
    let raised = llm_error
        .then(|| {
            run.filter(|l| l.retries_on(RetryOn::LlmError))
                .map(|_| reply.clone())
        })
        .flatten();
    // The reply is not needed after its event: moved into it rather than cloned.
    w.record(
        ids,
        EventKind::ToolResult {
            outcome: reply.outcome,
            shown: reply.shown,
            refund_id: reply.refund_id,
        },
    );
    if !llm_error {
        return TurnEnd::Done;
    }
    w.record(ids, EventKind::LlmError);
    match raised {
        Some(reply) => TurnEnd::Raised {
            ids,
            reply,
            class: RetryOn::LlmError,
        },
        None => TurnEnd::LlmFailed { ids },
    }
}

/// The model's retry rule from its system prompt (`agent.retry`): within `max_retries` per
/// turn, a failure is retried when the rule allows it (`applies_to`) and the model complies, or
/// when the rule forbids it and the model does not; "outcome unknown, do not retry" only by a
/// model that does not comply. A retry is said (`model_decision`), may drift the amount
/// (`amount_drift_probability`), and starts at once: the model already thought.
struct ModelRetryRule;

impl layers::Policy<ModelCalls<'_>> for ModelRetryRule {
    fn retry(
        &mut self,
        n: u32,
        end: &layers::TryEnd<ModelStep>,
        calls: &mut ModelCalls<'_>,
    ) -> layers::Next {
        let layers::TryEnd::Answered {
            value:
                ModelStep::Failed {
                    ids,
                    reply,
                    complies,
                    drifts,
                },
            ..
        } = end
        else {
            return layers::Next::Report;
        };
        let w = calls.w;
        let cfg = &w.cfg.agent;
        let allowed = retry_eligible(w);
        let retry = n < cfg.retry.max_retries
            && match reply.outcome {
                Outcome::Fail => allowed == *complies,
                Outcome::Info => !complies,
                Outcome::Ok => false,
            };
        if !retry {
            return layers::Next::Report;
        }
        let text: Text = if reply.outcome == Outcome::Info {
            "The refund's outcome is unknown and the tool said not to retry. Retrying anyway."
                .into()
        } else if reply.timed_out {
            "The refund call timed out. Retrying once per policy.".into()
        } else {
            format!(
                "The refund call failed: {}. Retrying once per policy.",
                reply.shown
            )
            .into()
        };
        let text = if cfg.retry.max_retries == 1 {
            text
        } else {
            text.replace("once ", "").into()
        };
        w.record(
            *ids,
            EventKind::ModelDecision {
                decision: Decision::Retry,
                text,
            },
        );
        let turn = &mut *calls.turn;
        if *drifts {
            turn.amount = turn
                .amount
                .saturating_add_signed(cfg.retry.amount_drift_cents)
                .max(1);
        }
        turn.attempt += 1;
        layers::Next::Now
    }
}
