//! Places one closed ticket's spans on tracks and writes them as begin/end pairs.
//!
//! A thread track shows only properly nested slices, so the spans are arranged as a forest:
//! a tool call holds its executor timeouts and, when it fits, its request; a request holds its
//! pool waits, its Stripe calls and, when it answered late, a `late response` mark at its end.
//! A request that outlives its tool call (a zombie) or overlaps another span cannot nest and
//! gets a track of its own: top-level spans go on the ticket's lowest free track, so a ticket
//! with no overlap has one track. Point events go in the deepest span that contains them on
//! the track of the span they belong to.
//!
//! Flow arrows start at an executor timeout and end at the retry (the first later request of
//! the same agent run: model, framework or executor retry) and at the late response.

use super::json::{metadata, Args, Line};
use super::ticket::{Mark, Owner, Request, Slice, TicketEvents, ToolCall};
use super::TICKETS_PID;
use crate::model::deliveries::DUPLICATE_ATTEMPT_BASE;
use crate::model::humans::HUMAN_ATTEMPT_BASE;

/// The name (and category) of the arrow from a timeout to the retry.
pub(crate) const RETRY_FLOW: &str = "retry";
/// The name (and category) of the arrow from a timeout to the late response.
pub(crate) const LATE_FLOW: &str = "late response";

/// A span placed in the forest.
struct Node {
    name: String,
    cat: &'static str,
    start: u64,
    end: u64,
    args: Args,
    /// Nested spans, by start (then end).
    children: Vec<usize>,
    /// Point events directly inside (indices into the ticket's marks), by time.
    marks: Vec<usize>,
    /// Arrows starting here: (id, name).
    flows_out: Vec<(u64, &'static str)>,
    /// Arrows ending here: (id, name).
    flows_in: Vec<(u64, &'static str)>,
}

impl Node {
    fn of(s: Slice, start: u64, end: u64) -> Node {
        Node {
            name: s.name,
            cat: s.cat,
            start,
            end,
            args: s.args,
            children: Vec::new(),
            marks: Vec::new(),
            flows_out: Vec::new(),
            flows_in: Vec::new(),
        }
    }
}

/// A timeout node and what its arrows need.
struct TimeoutNode {
    node: usize,
    call: Option<u64>,
    fired: u64,
    attempt: u32,
}

/// A request node and what arrows and marks need.
struct RequestNode {
    node: usize,
    call: u64,
    attempt: Option<u32>,
    start: u64,
    late_mark: Option<usize>,
}

/// The forest of one ticket.
#[derive(Default)]
struct Forest {
    nodes: Vec<Node>,
    /// Top-level nodes in placement order (by start).
    roots: Vec<usize>,
}

impl Forest {
    fn add(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// Nests `child` in `parent` if it lies inside it and overlaps none of its children.
    fn try_nest(&mut self, parent: usize, child: usize) -> bool {
        let (s, e) = (self.nodes[child].start, self.nodes[child].end);
        let p = &self.nodes[parent];
        let fits = p.start <= s
            && e <= p.end
            && p.children.iter().all(|&c| {
                let c = &self.nodes[c];
                e <= c.start || c.end <= s
            });
        if fits {
            self.push_child(parent, child);
        }
        fits
    }

    fn push_child(&mut self, parent: usize, child: usize) {
        self.nodes[parent].children.push(child);
        let mut kids = std::mem::take(&mut self.nodes[parent].children);
        kids.sort_by_key(|&c| (self.nodes[c].start, self.nodes[c].end));
        self.nodes[parent].children = kids;
    }

    /// Nests slice `s` in `parent` after a sibling that ended at `after`, ns: moved to start
    /// no earlier than `after` and to lie inside the parent (a track shows only properly
    /// nested slices). The child's node.
    fn nest_after(&mut self, parent: usize, after: u64, s: Slice) -> usize {
        let (lo, hi) = (self.nodes[parent].start, self.nodes[parent].end);
        let (start, end) = clamp(s.start.max(after), s.end.unwrap_or(s.start), lo, hi);
        let child = self.add(Node::of(s, start, end));
        self.push_child(parent, child);
        child
    }

    /// The deepest node among `among` (and below) that contains `ts`.
    fn deepest(&self, among: &[usize], ts: u64) -> Option<usize> {
        let n = *among
            .iter()
            .find(|&&n| self.nodes[n].start <= ts && ts <= self.nodes[n].end)?;
        Some(self.deepest(&self.nodes[n].children, ts).unwrap_or(n))
    }
}

/// `[start, end]` moved inside `[lo, hi]`.
fn clamp(start: u64, end: u64, lo: u64, hi: u64) -> (u64, u64) {
    let s = start.clamp(lo, hi.max(lo));
    (s, end.clamp(s, hi.max(s)))
}

/// Which agent run an attempt number belongs to: the first delivery's, a human's re-runs, or
/// a duplicate delivery's.
fn run_of(attempt: u32) -> u8 {
    if attempt >= DUPLICATE_ATTEMPT_BASE {
        2
    } else if attempt >= HUMAN_ATTEMPT_BASE {
        1
    } else {
        0
    }
}

/// Counters shared by every ticket of the file, so ids and tracks never repeat.
pub(super) struct Ids {
    /// Next thread id.
    pub next_tid: u32,
    /// Next flow id.
    pub next_flow: u64,
}

impl Ids {
    /// A new thread id.
    pub(super) fn tid(&mut self) -> u32 {
        let t = self.next_tid;
        self.next_tid = self.next_tid.saturating_add(1);
        t
    }
    fn flow(&mut self) -> u64 {
        self.next_flow += 1;
        self.next_flow
    }
}

/// Builds the forest of a closed ticket.
struct Builder {
    f: Forest,
    tool_calls: Vec<(u32, usize)>,
    timeouts: Vec<TimeoutNode>,
    requests: Vec<RequestNode>,
    manual: Vec<usize>,
}

impl Builder {
    /// The forest of ticket `t` (whatever it left open closed first): its tool calls with
    /// their timeouts, its requests with their parts (nested in their tool call when they
    /// fit), and its dashboard refunds; the roots by start.
    fn new(t: &mut TicketEvents) -> Builder {
        t.close_all();
        let mut b = Builder {
            f: Forest::default(),
            tool_calls: Vec::new(),
            timeouts: Vec::new(),
            requests: Vec::new(),
            manual: Vec::new(),
        };
        for tc in std::mem::take(&mut t.tool_calls) {
            b.add_tool_call(tc);
        }
        for r in std::mem::take(&mut t.requests) {
            b.add_request(r);
        }
        for m in std::mem::take(&mut t.manual) {
            let (s, e) = (m.start, m.end.unwrap_or(m.start));
            let node = b.f.add(Node::of(m, s, e));
            b.manual.push(node);
            b.f.roots.push(node);
        }
        let Forest { nodes, roots } = &mut b.f;
        roots.sort_by_key(|&n| nodes[n].start);
        b
    }

    /// A tool call as a root, its executor timeouts nested inside it one after another.
    fn add_tool_call(&mut self, tc: ToolCall) {
        let (s, e) = (tc.slice.start, tc.slice.end.unwrap_or(tc.slice.start));
        let node = self.f.add(Node::of(tc.slice, s, e));
        let mut prev = s;
        for to in tc.timeouts {
            let fired = to.slice.end.unwrap_or(to.slice.start);
            let child = self.f.nest_after(node, prev, to.slice);
            prev = self.f.nodes[child].end;
            self.timeouts.push(TimeoutNode {
                node: child,
                call: to.call,
                fired,
                attempt: tc.attempt,
            });
        }
        self.tool_calls.push((tc.attempt, node));
        self.f.roots.push(node);
    }

    /// A request with its pool waits and Stripe calls nested inside it one after another, and
    /// a `late response` mark at its end when it answered late. It goes inside the latest tool
    /// call of its attempt that started before it when it fits there, else it is a root.
    fn add_request(&mut self, r: Request) {
        let (s, e) = (r.slice.start, r.slice.end.unwrap_or(r.slice.start));
        let node = self.f.add(Node::of(r.slice, s, e));
        let mut prev = s;
        for p in r.parts {
            let child = self.f.nest_after(node, prev, p);
            prev = self.f.nodes[child].end;
        }
        let late_mark = r.late.then(|| {
            let mark = Slice {
                name: LATE_FLOW.into(),
                cat: "service",
                start: e,
                end: Some(e),
                args: Args::default().u("call", r.call),
            };
            let m = self.f.add(Node::of(mark, e, e));
            self.f.push_child(node, m);
            m
        });
        let parent = r.attempt.and_then(|a| {
            self.tool_calls
                .iter()
                .rev()
                .find(|&&(at, n)| at == a && self.f.nodes[n].start <= s)
                .map(|&(_, n)| n)
        });
        if !parent.is_some_and(|p| self.f.try_nest(p, node)) {
            self.f.roots.push(node);
        }
        self.requests.push(RequestNode {
            node,
            call: r.call,
            attempt: r.attempt,
            start: s,
            late_mark,
        });
    }

    /// Draws the arrows of every timeout; ids from `ids`.
    fn flows(&mut self, ids: &mut Ids) {
        for to in &self.timeouts {
            let retry = self
                .requests
                .iter()
                .filter(|r| {
                    Some(r.call) != to.call
                        && r.start >= to.fired
                        && r.attempt.is_some_and(|a| run_of(a) == run_of(to.attempt))
                })
                .min_by_key(|r| (r.start, r.call));
            if let Some(r) = retry {
                let id = ids.flow();
                self.f.nodes[to.node].flows_out.push((id, RETRY_FLOW));
                self.f.nodes[r.node].flows_in.push((id, RETRY_FLOW));
            }
            let late = self
                .requests
                .iter()
                .find(|r| Some(r.call) == to.call)
                .and_then(|r| r.late_mark);
            if let Some(m) = late {
                let id = ids.flow();
                self.f.nodes[to.node].flows_out.push((id, LATE_FLOW));
                self.f.nodes[m].flows_in.push((id, LATE_FLOW));
            }
        }
    }

    /// The node a point event belongs to, if any.
    fn owner_node(&self, m: &Mark) -> Option<usize> {
        match m.owner {
            Owner::Ticket => None,
            Owner::Call(c) => self.requests.iter().find(|r| r.call == c).map(|r| r.node),
            Owner::Attempt(a) => self
                .tool_calls
                .iter()
                .rev()
                .find(|&&(at, n)| at == a && self.f.nodes[n].start <= m.ts)
                .or_else(|| self.tool_calls.iter().find(|&&(at, _)| at == a))
                .map(|&(_, n)| n),
            Owner::Manual(i) => self.manual.get(i).copied(),
        }
    }
}

/// A ticket laid out: its tracks' metadata and events, ready to write.
pub(super) struct Laid {
    /// `M` events naming and ordering the ticket's tracks.
    pub metadata: Vec<String>,
    /// The events, by time (a track's own order kept on ties).
    pub events: Vec<String>,
}

/// Lays out and writes ticket `t`: its tracks get thread ids and its arrows flow ids from `ids`.
pub(super) fn lay_out(mut t: TicketEvents, ids: &mut Ids) -> Laid {
    let mut b = Builder::new(&mut t);
    b.flows(ids);
    let (lane_roots, lane_of) = lanes_of_roots(&b.f);
    let lanes = lane_roots.len();
    // Point events into the deepest span containing them on their owner's track.
    let mut lane_marks: Vec<Vec<usize>> = vec![Vec::new(); lanes];
    for (i, m) in t.marks.iter().enumerate() {
        let lane = b.owner_node(m).map_or(0, |n| lane_of[n]);
        match b.f.deepest(&lane_roots[lane], m.ts) {
            Some(n) => b.f.nodes[n].marks.push(i),
            None => lane_marks[lane].push(i),
        }
    }
    let mut metadata_lines = Vec::new();
    let mut lines: Vec<(u64, String)> = Vec::new();
    for lane in 0..lanes {
        let tid = ids.tid();
        metadata_lines.extend(track_metadata(&t, lane, tid));
        let w = Writer {
            f: &b.f,
            marks: &t.marks,
            tid,
        };
        w.level(&lane_roots[lane], &lane_marks[lane], &mut lines);
    }
    // Stable: each track's events keep their order on equal times.
    lines.sort_by_key(|(ts, _)| *ts);
    Laid {
        metadata: metadata_lines,
        events: lines.into_iter().map(|(_, l)| l).collect(),
    }
}

/// Puts each top-level span of `f` on the lowest track (lane) free at its start: the roots of
/// each lane (at least one lane, maybe empty), and the lane of every node.
fn lanes_of_roots(f: &Forest) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut lane_end: Vec<u64> = Vec::new();
    let mut lane_of_root = Vec::new();
    for &n in &f.roots {
        let (s, e) = (f.nodes[n].start, f.nodes[n].end);
        let lane = match lane_end.iter().position(|&end| end <= s) {
            Some(l) => l,
            None => {
                lane_end.push(0);
                lane_end.len() - 1
            }
        };
        lane_end[lane] = e;
        lane_of_root.push(lane);
    }
    let lanes = lane_end.len().max(1);
    let mut lane_roots: Vec<Vec<usize>> = vec![Vec::new(); lanes];
    let mut lane_of = vec![0usize; f.nodes.len()];
    for (&n, &lane) in f.roots.iter().zip(&lane_of_root) {
        lane_roots[lane].push(n);
        mark_lane(f, n, lane, &mut lane_of);
    }
    (lane_roots, lane_of)
}

/// The `M` events that name ticket `t`'s track `lane` (0-based; thread `tid`) and sort it
/// after the tracks of tickets seen before it.
fn track_metadata(t: &TicketEvents, lane: usize, tid: u32) -> [String; 2] {
    let name = if lane == 0 {
        format!("ticket {}", t.id)
    } else {
        format!("ticket {} ({})", t.id, lane + 1)
    };
    let sort = t.ordinal.saturating_mul(1000).saturating_add(lane as u64);
    [
        metadata(
            TICKETS_PID,
            Some(tid),
            "thread_name",
            &Args::default().s("name", name),
        ),
        metadata(
            TICKETS_PID,
            Some(tid),
            "thread_sort_index",
            &Args::default().u("sort_index", sort),
        ),
    ]
}

/// Puts node `n` and everything nested in it on track `lane`.
fn mark_lane(f: &Forest, n: usize, lane: usize, lane_of: &mut [usize]) {
    lane_of[n] = lane;
    for &c in &f.nodes[n].children {
        mark_lane(f, c, lane, lane_of);
    }
}

/// Writes the nodes of one track depth-first: begin, arrows, what is inside, end.
struct Writer<'a> {
    f: &'a Forest,
    marks: &'a [Mark],
    tid: u32,
}

impl Writer<'_> {
    /// Spans `nodes` and point events `marks` of one level (no mark lies inside one of the
    /// spans), merged by time, marks first on ties.
    fn level(&self, nodes: &[usize], marks: &[usize], out: &mut Vec<(u64, String)>) {
        let (mut i, mut j) = (0, 0);
        while i < nodes.len() || j < marks.len() {
            let take_mark = j < marks.len()
                && (i == nodes.len() || self.marks[marks[j]].ts <= self.f.nodes[nodes[i]].start);
            if take_mark {
                self.mark(&self.marks[marks[j]], out);
                j += 1;
            } else {
                self.node(nodes[i], out);
                i += 1;
            }
        }
    }

    fn node(&self, n: usize, out: &mut Vec<(u64, String)>) {
        let node = &self.f.nodes[n];
        let line = Line::new('B', TICKETS_PID, self.tid)
            .ts(node.start)
            .name(&node.name)
            .cat(node.cat)
            .args(&node.args)
            .done();
        out.push((node.start, line));
        for &(id, name) in &node.flows_out {
            out.push((node.start, self.flow('s', id, name, node.start)));
        }
        for &(id, name) in &node.flows_in {
            out.push((node.start, self.flow('f', id, name, node.start)));
        }
        self.level(&node.children, &node.marks, out);
        let end = Line::new('E', TICKETS_PID, self.tid).ts(node.end).done();
        out.push((node.end, end));
    }

    /// A flow event bound to the slice just begun at `ts` (`bp: e` on the end, so both ends
    /// bind to the enclosing slice).
    fn flow(&self, ph: char, id: u64, name: &str, ts: u64) -> String {
        let l = Line::new(ph, TICKETS_PID, self.tid)
            .ts(ts)
            .name(name)
            .cat(name)
            .raw("id", &id.to_string());
        if ph == 'f' {
            l.raw("bp", "\"e\"").done()
        } else {
            l.done()
        }
    }

    fn mark(&self, m: &Mark, out: &mut Vec<(u64, String)>) {
        let line = Line::new('i', TICKETS_PID, self.tid)
            .ts(m.ts)
            .name(&m.name)
            .cat(m.cat)
            .raw("s", "\"t\"")
            .args(&m.args)
            .done();
        out.push((m.ts, line));
    }
}
