//! `refundsim new`: a starting scenario from a tool definition, asking nothing.
//!
//! Reads a tool file in any shape `lint` reads, or an OpenAI function tool ([`read`]), picks the
//! money-moving tool, names its effect, and writes a scenario that spells out every section a
//! reader has to decide on, each with a `$comment` saying what it is and what to change: a few
//! explicit tickets, the agent and its retry rule, the tool as given, the executor, the service,
//! the provider, humans and reconciliation switched off, the stack of layers and the `expect`
//! bounds. It invents no incident (no background load, no humans, no faults) and takes the safe
//! settings `refundsim lint` asks for (a per-ticket key, a status probe after a timeout, model
//! retries only for idempotent tools), so `lint` finds no error and `check` holds; the comments
//! say what the incident had instead. The same file and flags always give the same bytes.

mod ordered;
mod read;
mod write;

use std::path::Path;

pub use write::infer_effect;

/// What `new` was asked for besides the tool file.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct NewOptions {
    /// `--tool`: the tool to model, by name. Default: the one tool not marked `readOnlyHint`.
    pub tool: Option<String>,
    /// `--effect`: the effect's noun. Default: inferred from the tool's name
    /// ([`infer_effect`]).
    pub effect: Option<String>,
    /// `--operation`: the provider operation (`POST /v1/payment_intents`). Default: none
    /// written (the effect's own, see [`crate::scenario::Effect::new`]).
    pub operation: Option<String>,
}

impl NewOptions {
    /// Options with every field at its default.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Why `new` wrote nothing (exit 2).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NewError {
    /// The tool file could not be read, or is over the input limit.
    #[error("{0}")]
    Read(String),
    /// The tool file's content is not what was expected: where and what.
    #[error("{file}{}: {}{message}", at.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default(), if path.is_empty() { String::new() } else { format!("{path}: ") })]
    Input {
        /// The file, as given.
        file: String,
        /// Line and column (1-based), where known.
        at: Option<(usize, usize)>,
        /// Dot-separated JSON path (empty: the whole document).
        path: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A flag's value is not usable.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag (`--tool`, `--effect`, `--operation`).
        flag: &'static str,
        /// What is wrong and what was expected.
        message: String,
    },
    /// The scenario written would not load (a tool field the scenario format refuses).
    #[error("{file}: the starting scenario would not load: {message}")]
    Scenario {
        /// The tool file.
        file: String,
        /// The loader's error.
        message: String,
    },
}

/// A starting scenario: its text and the tool it models.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Starter {
    /// The scenario file's text (pretty JSON, a trailing newline).
    pub text: String,
    /// The tool's name.
    pub tool: String,
    /// The effect's noun written as the tool's `effect`.
    pub effect: String,
}

/// The starting scenario for the tool file at `path`.
///
/// # Errors
/// [`NewError`]: the file cannot be read or is not tool definitions (named with the JSON path
/// and line), the tool to model is ambiguous or missing (the names are listed), a flag's value
/// is invalid, or the scenario written would not load.
pub fn new_scenario(path: &Path, opts: &NewOptions) -> Result<Starter, NewError> {
    let file = path.display().to_string();
    let text = read::read_text(path, &file)?;
    let src = read::Source {
        file: &file,
        text: &text,
    };
    let tools = read::tools_in(&src)?;
    let tool = pick(&src, &tools, opts.tool.as_deref())?;
    let effect = match &opts.effect {
        Some(e) => {
            let e = e.trim();
            if !crate::scenario::effect::valid_noun(e) {
                return Err(NewError::Flag {
                    flag: "--effect",
                    message: format!(
                        "invalid value {e:?}: expected a singular noun of lower-case letters \
                         (words separated by one space or `-`, at most {} characters), e.g. one \
                         of {}",
                        crate::scenario::effect::MAX_NOUN_CHARS,
                        known_effects()
                    ),
                });
            }
            e.to_string()
        }
        None => infer_effect(&tool.name),
    };
    if let Some(op) = &opts.operation {
        if op.trim().is_empty() || op.len() > 200 || op.chars().any(char::is_control) {
            return Err(NewError::Flag {
                flag: "--operation",
                message: format!(
                    "invalid value {op:?}: expected one line of at most 200 characters naming \
                     the provider operation, e.g. \"POST /v1/payment_intents\""
                ),
            });
        }
    }
    let text = write::scenario_text(&file, tool, &effect, opts.operation.as_deref());
    crate::scenario::load_text(
        &text,
        "the starting scenario",
        &[],
        &[],
        &crate::scenario::RunBudget::default(),
    )
    .map_err(|e| NewError::Scenario {
        file: file.clone(),
        message: e.to_string(),
    })?;
    Ok(Starter {
        text,
        tool: tool.name.clone(),
        effect,
    })
}

fn known_effects() -> String {
    crate::scenario::effect::KNOWN_EFFECTS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tool to model: `--tool`'s, else the only one not marked `readOnlyHint: true`.
fn pick<'t>(
    src: &read::Source,
    tools: &'t [read::FoundTool],
    wanted: Option<&str>,
) -> Result<&'t read::FoundTool, NewError> {
    let names = || {
        let names: Vec<String> = tools
            .iter()
            .map(|t| {
                if t.read_only {
                    format!("{} (readOnlyHint)", t.name)
                } else {
                    t.name.clone()
                }
            })
            .collect();
        // A long list is cut: the first 20 names and how many more.
        match names.len().checked_sub(20) {
            Some(more) if more > 0 => format!("{}, … and {more} more", names[..20].join(", ")),
            _ => names.join(", "),
        }
    };
    if let Some(name) = wanted {
        return tools
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| NewError::Flag {
                flag: "--tool",
                message: format!(
                    "no tool named {name:?} in {}; its tools: {}",
                    src.file,
                    names()
                ),
            });
    }
    let mut mutating = tools.iter().filter(|t| !t.read_only);
    match (mutating.next(), mutating.next()) {
        (Some(t), None) => Ok(t),
        (None, _) => Err(src.error(
            "",
            format!(
                "every tool is marked readOnlyHint, so none moves money; name the one to model \
                 with --tool NAME: {}",
                names()
            ),
        )),
        (Some(_), Some(_)) => Err(src.error(
            "",
            format!(
                "{} tools could move money (not readOnlyHint); name the one to model with \
                 --tool NAME: {}",
                tools.iter().filter(|t| !t.read_only).count(),
                names()
            ),
        )),
    }
}
