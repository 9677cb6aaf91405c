//! An MCP client around tool execution (`kind: "mcp_client"`, between `model_retry` and
//! `executor`), and the tool server's request idempotency key (`executor.request_idempotency`).
//!
//! The client sends the model's tool call as a JSON-RPC `tools/call` with a request id, the
//! tool server (the executor and the layers below the client) runs it, and the response comes
//! back on a stream. What the protocol makes the client do, each a second run of the tool:
//!
//! - **A broken response stream** (`stream_break_probability`, `stream_break_requests`): the
//!   stream breaks as the response is on its way, after the server ran the tool (the
//!   2026-07-28 specification: "Processing may have completed before cancellation arrives").
//!   The client re-issues the call "as a new request with a new request ID" (its MUST,
//!   SEP-2575; `reissue_on_stream_break`), up to `max_retries` times, at once.
//! - **A request timeout** (`request_timeout`, 60 s as the TypeScript SDK): with
//!   `send_cancelled` the client sends `notifications/cancelled` and the server cancels the
//!   tool run (its future is dropped, the request it sent given up on with the layer's
//!   `cancellation`); without, the run goes on to its end. With `retry_on: ["timeout"]` the
//!   call is sent again with a new id.
//! - **A duplicated call** (`duplicate_send_probability`, `duplicate_send_gap`): a second
//!   `tools/call` with a fresh id a few milliseconds after the first, no failure at all; the
//!   client takes the first copy's answer and the second runs on the server too.
//!
//! With `executor.request_idempotency` (MCP SEP-3182, proposed and closed without being
//! adopted) every request of one tool call carries one idempotency key, and the server answers
//! a key it has seen without running the tool: a call still running is rejected
//! (`idempotency_key_in_progress`), a finished one's result is returned again, other arguments
//! under the key are rejected (`idempotency_key_conflict`). The client reports an in-progress
//! rejection as what it says, an unknown outcome (the request holding the key may still
//! refund), never as a failure: shown as a failure, the model would call the tool again under a
//! new key.
//!
//! Draws: `mcp_stream_break` once per request and `mcp_duplicate_send` once per tool call, each
//! only when its probability is above 0, keyed by (ticket, layer name, model attempt, the tries
//! of the layers above[, request]); re-issues are marked in their [`Via`] like a layer's retry,
//! and a duplicated copy with `NAME.copy`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::around_tool::{AroundTool, ToolCall};
use super::{through, via_ids, Place, Via};
use crate::history::EventKind;
use crate::model::dist;
use crate::model::executor::ToolReply;
use crate::model::world::{Ids, World};
use crate::scenario::{ReportTimeout, RetryLayer, RetryOn};
use crate::sim::{tag, SimTime};

/// The MCP side of a run: the JSON-RPC ids the clients hand out, and the tool server's
/// idempotency records (`executor.request_idempotency`).
pub(crate) struct McpState {
    next_id: Cell<u64>,
    keys: RefCell<BTreeMap<Vec<u64>, KeyRecord>>,
}

impl Default for McpState {
    fn default() -> Self {
        McpState {
            next_id: Cell::new(1),
            keys: RefCell::default(),
        }
    }
}

impl McpState {
    /// The next JSON-RPC request id (from 1, one sequence per run).
    fn next_id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }
}

/// What the tool server holds under one idempotency key.
#[derive(Clone, Debug)]
struct KeyRecord {
    /// The request that first carried the key.
    first_id: u64,
    /// The arguments it came with (the amount, cents).
    args: u64,
    /// `None` while its tool run works; its result and when it finished after.
    done: Option<(ToolReply, SimTime)>,
}

/// The idempotency key one tool call's requests carry, and where its events go.
#[derive(Clone, Debug)]
struct Key {
    /// (ticket, model attempt, the tries of the layers above): one per tool call the
    /// application makes through the client.
    key: Vec<u64>,
    /// The arguments (the amount, cents).
    args: u64,
    /// How long a finished result is kept.
    retention: SimTime,
    ids: Ids,
}

/// How the server answers a key it has seen, or `None` when the tool must run (a new key,
/// or one whose result has passed its retention).
fn answer_from_key(w: &World, k: &Key, id: u64) -> Option<ToolReply> {
    let mut keys = w.mcp.keys.borrow_mut();
    let fresh = match keys.get(&k.key) {
        None => true,
        Some(r) => matches!(r.done, Some((_, at)) if w.now() - at > k.retention),
    };
    if fresh {
        keys.insert(
            k.key.clone(),
            KeyRecord {
                first_id: id,
                args: k.args,
                done: None,
            },
        );
        return None;
    }
    let r = keys.get(&k.key)?.clone();
    drop(keys);
    let (outcome, reply) = if r.args != k.args {
        (
            "conflict",
            ToolReply::rejected("idempotency_key_conflict: the key was used with other arguments"),
        )
    } else {
        match r.done {
            Some((reply, _)) => ("replayed", reply),
            None => ("in_progress", ToolReply::in_progress()),
        }
    };
    w.record(
        k.ids,
        EventKind::McpKeyAnswered {
            request_id: id,
            first_id: r.first_id,
            outcome: outcome.into(),
        },
    );
    Some(reply)
}

/// Forgets a key whose tool run was cancelled before it produced a result (a request timed
/// out with `notifications/cancelled`): SEP-3182 stores results, and a cancelled run has none.
struct ForgetOnDrop(Option<(Rc<World>, Vec<u64>)>);

impl Drop for ForgetOnDrop {
    fn drop(&mut self) {
        if let Some((w, key)) = self.0.take() {
            w.mcp.keys.borrow_mut().remove(&key);
        }
    }
}

/// One `tools/call` `id` at the tool server: answered from its idempotency key when the
/// server has one and has seen it, else the tool runs (`run`) and its result is stored under
/// the key.
async fn serve(
    w: Rc<World>,
    key: Option<Key>,
    id: u64,
    run: Pin<Box<dyn Future<Output = ToolReply>>>,
) -> ToolReply {
    let Some(k) = key else {
        return run.await;
    };
    if let Some(reply) = answer_from_key(&w, &k, id) {
        return reply;
    }
    let mut forget = ForgetOnDrop(Some((w.clone(), k.key.clone())));
    let reply = run.await;
    forget.0 = None;
    if let Some(r) = w.mcp.keys.borrow_mut().get_mut(&k.key) {
        r.done = Some((reply.clone(), w.now()));
    }
    reply
}

/// The model's tool call `req` through the `mcp_client` layer `name` (`cfg`) at `depth` of the
/// layers around tool execution: sent, re-issued and duplicated as the module docs say, each
/// request running the layers below it and the executor.
pub(crate) fn call(
    w: Rc<World>,
    req: ToolCall,
    depth: usize,
    name: String,
    cfg: RetryLayer,
) -> Pin<Box<dyn Future<Output = ToolReply>>> {
    Box::pin(async move {
        let ids = AroundTool::ids(&req);
        let ticket = AroundTool::ticket(&req);
        let attempt = ids.attempt.unwrap_or(0);
        let above = via_ids(AroundTool::via(&req));
        let mut draw_key = vec![tag(&name), u64::from(attempt)];
        draw_key.extend(&above);
        let key = w.cfg.executor.request_idempotency.as_ref().map(|k| Key {
            key: [&[ticket, u64::from(attempt)][..], &above].concat(),
            args: req.amount_cents(),
            retention: SimTime::from_duration(k.retention),
            ids,
        });
        let timeout = SimTime::from_duration(cfg.mcp_request_timeout());
        let mut previous: Option<(u64, &'static str)> = None;
        let mut n = 0u32;
        loop {
            let id = w.mcp.next_id();
            if let Some((previous_id, reason)) = previous {
                w.record(
                    ids,
                    EventKind::McpReissued {
                        layer: name.clone(),
                        request_id: id,
                        previous_id,
                        reason: reason.into(),
                    },
                );
            }
            let mut via: Via = AroundTool::via(&req).clone();
            if n > 0 {
                via.push((name.clone(), n));
            }
            let one = AroundTool::for_try(&w, &req, &cfg, via);
            if n == 0 && duplicates(&w, &cfg, ticket, &draw_key) {
                send_copy(&w, &req, &cfg, &name, depth, key.clone(), id);
            }
            let send = serve(
                w.clone(),
                key.clone(),
                id,
                through::<AroundTool>(w.clone(), one, depth + 1),
            );
            let answer = if cfg.mcp_sends_cancelled() {
                w.sim.timeout(timeout, send).await.ok()
            } else {
                let run = w.spawn_for(ticket, send);
                w.sim.timeout(timeout, run).await.ok()
            };
            let Some(reply) = answer else {
                w.record(
                    ids,
                    EventKind::McpRequestTimeout {
                        layer: name.clone(),
                        request_id: id,
                        after_ns: timeout.as_nanos(),
                        cancelled: cfg.mcp_sends_cancelled(),
                    },
                );
                if n < cfg.retries() && cfg.retries_on(RetryOn::Timeout) {
                    previous = Some((id, "timeout"));
                    n += 1;
                    continue;
                }
                let unknown = cfg.on_timeout == ReportTimeout::Unknown;
                return ToolReply::layer_timeout(timeout, &name, unknown);
            };
            if !breaks(&w, &cfg, ticket, &draw_key, n) {
                return reply;
            }
            w.record(
                ids,
                EventKind::McpStreamBroken {
                    layer: name.clone(),
                    request_id: id,
                },
            );
            if cfg.mcp_reissues() && n < cfg.retries() {
                previous = Some((id, "stream_broken"));
                n += 1;
                continue;
            }
            let unknown = cfg.on_timeout == ReportTimeout::Unknown;
            return ToolReply::stream_broken(id, &name, unknown);
        }
    })
}

/// Whether the response stream of request `n` (0-based) of a tool call breaks: the script
/// names it, or the draw from `mcp_stream_break` (made only with a probability above 0) says
/// so.
fn breaks(w: &World, cfg: &RetryLayer, ticket: u64, key: &[u64], n: u32) -> bool {
    let scripted = cfg
        .stream_break_requests
        .as_ref()
        .is_some_and(|r| r.contains(&(n + 1)));
    let p = cfg.stream_break_probability.unwrap_or(0.0);
    if p <= 0.0 {
        return scripted;
    }
    let mut rng = w.ticket_stream("mcp_stream_break", ticket, &[key, &[u64::from(n)]].concat());
    dist::chance(&mut rng, p) || scripted
}

/// Whether the client sends this tool call twice: one draw from `mcp_duplicate_send`, only
/// with a probability above 0.
fn duplicates(w: &World, cfg: &RetryLayer, ticket: u64, key: &[u64]) -> bool {
    let p = cfg.duplicate_send_probability.unwrap_or(0.0);
    if p <= 0.0 {
        return false;
    }
    let mut rng = w.ticket_stream("mcp_duplicate_send", ticket, key);
    dist::chance(&mut rng, p)
}

/// Sends a copy of the tool call `req` with a fresh request id `duplicate_send_gap` after the
/// original `original_id`, as a task of its own: it runs on the server (the layers below and
/// the executor) to its end, and its answer goes nowhere.
fn send_copy(
    w: &Rc<World>,
    req: &ToolCall,
    cfg: &RetryLayer,
    name: &str,
    depth: usize,
    key: Option<Key>,
    original_id: u64,
) {
    let gap = SimTime::from_duration(cfg.mcp_duplicate_gap());
    let mut via = AroundTool::via(req).clone();
    via.push((format!("{name}.copy"), 1));
    let copy = AroundTool::for_try(w, req, cfg, via);
    let ids = AroundTool::ids(req);
    let (ww, layer) = (w.clone(), name.to_string());
    w.spawn_detached_for_with(AroundTool::ticket(req), move || async move {
        ww.sim.sleep(gap).await;
        let id = ww.mcp.next_id();
        ww.record(
            ids,
            EventKind::McpDuplicateSent {
                layer,
                request_id: id,
                original_id,
                gap_ns: gap.as_nanos(),
            },
        );
        let run = through::<AroundTool>(ww.clone(), copy, depth + 1);
        let _ = serve(ww, key, id, run).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{History, Outcome};
    use crate::sim::Sim;

    fn world() -> Rc<World> {
        let text = r#"{"name":"t","horizon":"1h",
            "arrivals":{"tickets":[{"id":1,"opened_at":"0s","amount_cents":4200,"charge_amount_cents":4200}]},
            "executor":{"request_idempotency":{"retention":"10s"}}}"#;
        let cfg = crate::scenario::load_text(text, "t.json", &[], &[], &Default::default())
            .expect("valid");
        let observer: Rc<RefCell<dyn crate::history::Observer>> =
            Rc::new(RefCell::new(History::default()));
        World::new(Sim::new(), Rc::new(cfg), 1, observer)
    }

    fn key(args: u64) -> Key {
        Key {
            key: vec![1, 0],
            args,
            retention: SimTime::from_duration(std::time::Duration::from_secs(10)),
            ids: Ids::attempt(1, 0),
        }
    }

    /// SEP-3182's three answers: in progress → rejected (reported as unknown), finished → the
    /// stored result, other arguments → rejected (`idempotency_key_conflict`); and a result past
    /// its retention runs the tool again.
    #[test]
    fn a_seen_key_is_rejected_replayed_or_refused_as_sep_3182_proposes() {
        let w = world();
        assert!(
            answer_from_key(&w, &key(4200), 1).is_none(),
            "a new key runs"
        );
        let running = answer_from_key(&w, &key(4200), 2).expect("in progress");
        assert_eq!(running.outcome, Outcome::Info);
        assert!(running.shown.contains("idempotency_key_in_progress"));
        let other = answer_from_key(&w, &key(9900), 3).expect("conflict");
        assert_eq!((other.outcome, other.class), (Outcome::Fail, None));
        assert!(other.shown.contains("idempotency_key_conflict"));

        let done = ToolReply::layer_timeout(SimTime::from_millis(5), "x", false);
        w.mcp
            .keys
            .borrow_mut()
            .get_mut(&key(4200).key)
            .unwrap()
            .done = Some((done.clone(), SimTime::ZERO));
        assert_eq!(
            answer_from_key(&w, &key(4200), 4),
            Some(done),
            "an error replayed too"
        );
        assert_eq!(w.mcp.keys.borrow()[&key(4200).key].first_id, 1);

        // Past the retention (10 s after it finished, at 0), the key is new again.
        w.mcp
            .keys
            .borrow_mut()
            .get_mut(&key(4200).key)
            .unwrap()
            .done = Some((ToolReply::in_progress(), SimTime::ZERO));
        let sim = w.sim.clone();
        let (ww, ran) = (w.clone(), Rc::new(Cell::new(false)));
        let seen = ran.clone();
        sim.spawn_detached(async move {
            ww.sim.sleep(SimTime::from_millis(10_001)).await;
            assert!(answer_from_key(&ww, &key(4200), 5).is_none());
            assert_eq!(ww.mcp.keys.borrow()[&key(4200).key].first_id, 5);
            seen.set(true);
        });
        sim.run();
        assert!(ran.get());
    }
}
