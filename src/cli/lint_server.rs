//! `refundsim lint --mcp-server "COMMAND [ARGS]"`: the MCP client half. Starts the server as a
//! child process speaking MCP over stdio (rmcp's `TokioChildProcess`), sends `initialize`,
//! reads every page of `tools/list`, and hands what it read to the library
//! ([`refundsim::lint::lint_server`]).
//!
//! Every step (`initialize`, each page) is bounded by `--mcp-timeout` (30 s by default). Any
//! failure — the command not found, a server that exits or closes its output before answering,
//! output that is not MCP, no answer in time, a `nextCursor` seen before — is one line naming
//! the server command, exit 2. The child is killed on every path out: a clean close shuts its
//! stdin, then SIGTERM, then SIGKILL (rmcp's graceful shutdown); otherwise dropping the
//! transport kills it (`kill_on_drop`).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use refundsim::error::CliError;
use refundsim::lint::ServerListing;
use rmcp::model::{ClientConfig, Implementation, PaginatedRequestParams, ProtocolVersion};
use rmcp::service::ServiceExt;
use rmcp::transport::TokioChildProcess;
use tokio::io::AsyncBufReadExt;

/// More pages than this is taken for a server that never ends its list.
const MAX_PAGES: usize = 10_000;

/// How many of the server's last stderr lines a failure quotes (the last one only).
const STDERR_KEPT: usize = 20;

/// Starts `command` (split as a POSIX shell would, without a shell), initialises, and reads
/// every tool of every `tools/list` page, each step within `step`.
///
/// # Errors
/// [`CliError::Input`], one line naming the command: it cannot be split or started, the server
/// exits or sends something that is not MCP before answering, a step takes longer than `step`,
/// or the pages loop.
pub(crate) fn read_server(command: &str, step: Duration) -> anyhow::Result<ServerListing> {
    let words = match shlex::split(command) {
        Some(w) if !w.is_empty() => w,
        Some(_) => {
            return Err(CliError::Input(
                "--mcp-server: empty command; expected the command that starts an MCP server \
                 over stdio, e.g. --mcp-server \"npx -y @modelcontextprotocol/server-everything\""
                    .into(),
            )
            .into())
        }
        None => {
            return Err(CliError::Input(format!(
                "--mcp-server `{command}`: unbalanced quotes or a trailing backslash; expected \
                 COMMAND [ARGS] quoted as a POSIX shell would"
            ))
            .into())
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Input(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(read(command, &words, step));
    // Whatever is left (the child's kill after an error) runs before the runtime goes.
    runtime.shutdown_timeout(Duration::from_secs(5));
    result.map_err(|message| CliError::Input(format!("MCP server `{command}`: {message}")).into())
}

/// The server's last stderr lines, kept as they come.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<Vec<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() == STDERR_KEPT {
                v.remove(0);
            }
            v.push(line);
        }
    }

    /// `; its stderr's last line: "…"`, or nothing.
    fn said(&self) -> String {
        let last = self
            .0
            .lock()
            .ok()
            .and_then(|v| v.iter().rev().find(|l| !l.trim().is_empty()).cloned());
        match last {
            Some(l) => {
                let l: String = l.trim().chars().take(300).collect();
                format!("; its stderr's last line: {l:?}")
            }
            None => String::new(),
        }
    }
}

/// Kills the server's process group when dropped: a server started through a wrapper (`sh -c`,
/// `npx`) leaves its own children behind when only the wrapper is killed.
struct GroupKill(Option<u32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: `kill` takes plain integers and has no memory effects; the group is the
            // one the child leads (`process_group(0)`), and an ESRCH (already gone) is fine.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

async fn read(command: &str, words: &[String], step: Duration) -> Result<ServerListing, String> {
    let mut cmd = tokio::process::Command::new(&words[0]);
    cmd.args(&words[1..]).kill_on_drop(true);
    // Its own process group, so that [`GroupKill`] reaches whatever it starts.
    #[cfg(unix)]
    cmd.process_group(0);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("cannot start `{}`: command not found", words[0])
            }
            _ => format!("cannot start `{}`: {e}", words[0]),
        })?;
    let _group = GroupKill(transport.id());
    let tail = StderrTail::default();
    if let Some(stderr) = stderr {
        let tail = tail.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tail.push(line);
            }
        });
    }
    let mut info = ClientConfig::default();
    info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    info.client_info = Implementation::new("refundsim", env!("CARGO_PKG_VERSION"));
    let secs = humantime::format_duration(step);
    let client = match tokio::time::timeout(step, info.serve(transport)).await {
        Err(_) => {
            return Err(format!(
                "no answer to initialize within {secs} (--mcp-timeout); expected an MCP server \
                 speaking JSON-RPC on its stdin and stdout{}",
                tail.said()
            ))
        }
        Ok(Err(e)) => {
            // Give the stderr reader a moment to take the dying server's last words.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Err(format!(
                "did not complete initialize ({e}): it exited, closed its output or answered \
                 something other than MCP{}",
                tail.said()
            ));
        }
        Ok(Ok(c)) => c,
    };
    let peer = client.peer_info();
    let server = peer.as_ref().and_then(|p| p.server_info.clone());
    let mut listing = ServerListing {
        command: command.to_string(),
        name: server.as_ref().map(|s| s.name.clone()).unwrap_or_default(),
        version: server
            .as_ref()
            .map(|s| s.version.clone())
            .unwrap_or_default(),
        protocol_version: peer
            .as_ref()
            .map(|p| p.protocol_version.to_string())
            .unwrap_or_default(),
        pages: 0,
        tools: Vec::new(),
    };
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let page = listing.pages + 1;
        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
        let result = match tokio::time::timeout(step, client.list_tools(Some(params))).await {
            Err(_) => {
                return Err(format!(
                    "no answer to tools/list (page {page}) within {secs} (--mcp-timeout){}",
                    tail.said()
                ))
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "tools/list (page {page}) failed: {e}{}",
                    tail.said()
                ))
            }
            Ok(Ok(r)) => r,
        };
        listing.pages = page;
        for t in &result.tools {
            listing.tools.push(serde_json::to_value(t).map_err(|e| {
                format!("tools/list (page {page}): a tool does not serialize: {e}")
            })?);
        }
        match result.next_cursor {
            None => break,
            Some(next) => {
                if !seen.insert(next.clone()) {
                    return Err(format!(
                        "tools/list page {page} gave nextCursor {next:?}, which an earlier page \
                         gave too; expected a new cursor each page (the list would never end)"
                    ));
                }
                if page >= MAX_PAGES {
                    return Err(format!(
                        "tools/list gave a nextCursor on each of {MAX_PAGES} pages; expected the \
                         list to end"
                    ));
                }
                cursor = Some(next);
            }
        }
    }
    // A clean close: stdin shut, then SIGTERM, then SIGKILL; bounded, and the drop kills anyway.
    let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
    Ok(listing)
}
