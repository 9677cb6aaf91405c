//! One ticket's trace while the ticket is open: the spans started and not yet ended, and the
//! ids that link the later ones to them. A span is written once it ends; one that never ends
//! (a run that stopped with work in flight) is never exported, as with a real SDK.

use super::agent::{chat_span, tool_span, OpenChat, OpenTool, ToolOutcome};
use super::context::Context;
use super::ids::{span_id, trace_id};
use super::service::{client_span, server_span, OpenClient, OpenServer, StripeAnswer};
use super::wire::{Span, SpanId, TraceId};
use crate::history::{Event, EventKind, Outcome};

/// Which resource a finished span belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    /// `support-agent`: tool calls and the model's decisions.
    Agent,
    /// `refunds-service`: its handling of calls and its requests to Stripe.
    Service,
}

/// The open spans of one ticket's trace.
#[derive(Debug)]
pub(super) struct TicketSpans {
    ticket: u64,
    trace: TraceId,
    /// Spans started so far (the next span's ordinal).
    started: u64,
    tools: Vec<OpenTool>,
    /// Every tool span's id by attempt, ended or not: a request's parent.
    tool_ids: Vec<(u32, SpanId)>,
    chats: Vec<OpenChat>,
    servers: Vec<OpenServer>,
    clients: Vec<OpenClient>,
}

impl TicketSpans {
    /// The trace of ticket `ticket`.
    pub(super) fn new(ctx: &Context, ticket: u64) -> TicketSpans {
        TicketSpans {
            ticket,
            trace: trace_id(&ctx.scenario, ctx.seed, ticket),
            started: 0,
            tools: Vec::new(),
            tool_ids: Vec::new(),
            chats: Vec::new(),
            servers: Vec::new(),
            clients: Vec::new(),
        }
    }

    /// Takes in one of the ticket's events; returns the span it ended, if any.
    pub(super) fn record(&mut self, ctx: &Context, e: &Event) -> Option<(Side, Span)> {
        let t = e.t_ns.as_nanos();
        match &e.kind {
            EventKind::ToolCall { .. }
            | EventKind::ExecutorTimeout { .. }
            | EventKind::ToolResult { .. }
            | EventKind::ModelDecision { .. } => Some((Side::Agent, self.agent_event(ctx, e, t)?)),
            _ => Some((Side::Service, self.service_event(ctx, e, t)?)),
        }
    }

    /// The agent's side of event `e` at `t` (ns): a tool call starts its `execute_tool` span
    /// and the executor's timeout marks it; its result ends it (and, when not ok, starts the
    /// `chat` span of the model reading it), which the model's decision ends. The span it
    /// ended, if any.
    fn agent_event(&mut self, ctx: &Context, e: &Event, t: u64) -> Option<Span> {
        let attempt = e.attempt;
        match &e.kind {
            EventKind::ToolCall { tool, amount_cents } => {
                let attempt = attempt.unwrap_or(0);
                let id = self.next_id();
                self.tool_ids.push((attempt, id));
                self.tools.push(OpenTool {
                    attempt,
                    id,
                    start: t,
                    tool: tool.clone(),
                    amount_cents: *amount_cents,
                    timed_out: false,
                });
                None
            }
            EventKind::ExecutorTimeout { .. } => {
                if let Some(tc) = find(&mut self.tools, |c| Some(c.attempt) == attempt) {
                    tc.timed_out = true;
                }
                None
            }
            EventKind::ToolResult { outcome, shown, .. } => {
                let call = take(&mut self.tools, |c| Some(c.attempt) == attempt)?;
                if *outcome != Outcome::Ok {
                    let id = self.next_id();
                    self.chats.push(OpenChat {
                        attempt: call.attempt,
                        id,
                        start: t,
                    });
                }
                let result = ToolOutcome {
                    outcome: *outcome,
                    shown,
                    at: t,
                };
                Some(tool_span(ctx, &self.trace, self.ticket, &call, &result))
            }
            EventKind::ModelDecision { .. } => {
                let chat = take(&mut self.chats, |c| Some(c.attempt) == attempt)?;
                Some(chat_span(ctx, &self.trace, &chat, t))
            }
            _ => None,
        }
    }

    /// The refunds service's side of event `e` at `t` (ns): a request starts its SERVER span,
    /// which a pool timeout, a dropped request or a crash marks and the service's response
    /// ends; a request to Stripe starts a CLIENT span, which Stripe's answer ends. The span it
    /// ended, if any.
    fn service_event(&mut self, ctx: &Context, e: &Event, t: u64) -> Option<Span> {
        match &e.kind {
            EventKind::ServiceRequest { .. } => {
                self.service_request(e, t);
                None
            }
            EventKind::PoolTimeout { .. } => {
                self.mark(e.call, |s| s.pool_timeout = true);
                None
            }
            EventKind::RequestDropped => {
                self.mark(e.call, |s| s.dropped = true);
                None
            }
            EventKind::ServiceCrash { .. } => {
                self.mark(e.call, |s| s.crashed = true);
                None
            }
            EventKind::StripeRequest {
                idempotency_key,
                sdk_try,
                via,
                ..
            } => {
                self.stripe_request(e.call, t, idempotency_key, *sdk_try, via);
                None
            }
            EventKind::StripeResponse {
                status,
                outcome,
                via,
                ..
            } => {
                let call = e.call?;
                if let Some(s) = find(&mut self.servers, |s| s.call == call) {
                    s.last_stripe = Some(*status);
                }
                let req = take(&mut self.clients, |c| c.call == call && c.via == *via)?;
                let answer = StripeAnswer {
                    status: *status,
                    outcome: *outcome,
                    at: t,
                };
                Some(client_span(ctx, &self.trace, &req, &answer))
            }
            EventKind::ServiceResponse { ok, error, .. } => {
                let call = e.call?;
                let req = take(&mut self.servers, |s| s.call == call)?;
                Some(server_span(
                    ctx,
                    &self.trace,
                    &req,
                    *ok,
                    t,
                    error.as_deref(),
                ))
            }
            _ => None,
        }
    }

    /// A request reaches the service: a SERVER span, the child of its tool call's span.
    fn service_request(&mut self, e: &Event, t: u64) {
        let Some(call) = e.call else {
            return;
        };
        let parent = e.attempt.and_then(|a| {
            self.tool_ids
                .iter()
                .rev()
                .find(|(at, _)| *at == a)
                .map(|(_, id)| *id)
        });
        let id = self.next_id();
        self.servers.push(OpenServer {
            call,
            id,
            parent,
            start: t,
            last_stripe: None,
            pool_timeout: false,
            dropped: false,
            crashed: false,
        });
        // The executor's timeout counts for the request it was waiting on: a new request
        // (an executor retry) starts the wait again.
        if let Some(tc) = find(&mut self.tools, |c| Some(c.attempt) == e.attempt) {
            tc.timed_out = false;
        }
    }

    /// The service sends a request to Stripe: a CLIENT span, the child of the SERVER span. A
    /// request outside any service request (a human's dashboard refund) is not the
    /// service's, and is not traced.
    fn stripe_request(
        &mut self,
        call: Option<u64>,
        t: u64,
        key: &Option<String>,
        sdk_try: u32,
        via: &std::collections::BTreeMap<String, u32>,
    ) {
        let Some(call) = call else {
            return;
        };
        let Some(parent) = self
            .servers
            .iter()
            .rev()
            .find(|s| s.call == call)
            .map(|s| s.id)
        else {
            return;
        };
        let id = self.next_id();
        self.clients.push(OpenClient {
            call,
            id,
            parent,
            start: t,
            sdk_try,
            key: key.clone(),
            via: via.clone(),
        });
    }

    /// Applies `f` to the open SERVER span of `call`.
    fn mark(&mut self, call: Option<u64>, f: impl FnOnce(&mut OpenServer)) {
        if let Some(s) = call.and_then(|c| find(&mut self.servers, |s| s.call == c)) {
            f(s);
        }
    }

    fn next_id(&mut self) -> SpanId {
        let id = span_id(&self.trace, self.started);
        self.started += 1;
        id
    }
}

/// The latest open span that `pick` selects.
fn find<T>(open: &mut [T], pick: impl Fn(&T) -> bool) -> Option<&mut T> {
    open.iter_mut().rev().find(|x| pick(x))
}

/// Removes and returns the latest open span that `pick` selects.
fn take<T>(open: &mut Vec<T>, pick: impl Fn(&T) -> bool) -> Option<T> {
    let i = open.iter().rposition(pick)?;
    Some(open.remove(i))
}
