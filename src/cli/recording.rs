//! The recorded inputs `import` and `replay` read, and how they become the library's
//! [`refundsim::import::ImportInputs`].

use std::path::PathBuf;

#[derive(clap::Args)]
pub(crate) struct RecordingArgs {
    /// Recorded inputs: OTLP/JSON traces, tool-call logs, JSON lines, LangSmith runs, Langfuse
    /// observations, OpenAI Agents SDK trace exports, refund exports (CSV, or Stripe's list);
    /// several combine (e.g. a trace and the provider's refund export).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The format of every FILE [default: detected per file from its content].
    #[arg(long, value_enum)]
    format: Option<refundsim::import::Format>,
    /// Scenario supplying what the recording lacks: policy, pool, distributions, background
    /// load [default: the built-in defaults].
    #[arg(long, value_name = "SCENARIO")]
    base: Option<PathBuf>,
    /// The date (YYYY-MM-DD, UTC) of a log's times of day [default: the base's clock_origin
    /// date, else 1970-01-01].
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
    /// The refund tool's name in the recording [default: the base scenario's agent.tool,
    /// issue_refund].
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// The tool-call argument holding the ticket id (a string or an integer) [default: the
    /// tool definition's argument, else ticket, ticket_id or ticketId].
    #[arg(long, value_name = "NAME")]
    ticket_field: Option<String>,
    /// The tool-call argument holding the amount in cents [default: the tool definition's
    /// argument, else amount, amount_cents or amountCents].
    #[arg(long, value_name = "NAME")]
    amount_field: Option<String>,
    /// Tool definitions naming the refund tool's arguments: an MCP tools/list result, MCP,
    /// Anthropic or OpenAI function definitions [default: the base scenario's tools].
    #[arg(long, value_name = "FILE")]
    tool_definition: Option<PathBuf>,
    /// A refund-export column name: `id=`, `charge=`, `amount=`, `created=`, `status=` or
    /// `ticket=` followed by the column's name in the CSV header; repeatable.
    #[arg(long = "csv-column", value_name = "FIELD=COLUMN")]
    csv_columns: Vec<String>,
    /// The text of a tool result that says the call timed out, where a timeout is not an
    /// error (the OpenAI Agents SDK's default): `*` for any text, `{seconds}` for the timeout
    /// in seconds, which the recording then states [default: "Tool '*' timed out after
    /// {seconds} seconds."].
    #[arg(long, value_name = "PATTERN")]
    timeout_output: Option<String>,
}

impl RecordingArgs {
    pub fn inputs(
        &self,
        budget: refundsim::scenario::RunBudget,
    ) -> Result<refundsim::import::ImportInputs, refundsim::error::CliError> {
        use refundsim::error::CliError;
        let mut options = refundsim::import::ImportOptions {
            date: self.date.clone(),
            ..Default::default()
        };
        if let Some(p) = &self.timeout_output {
            options.timeout_output = p.clone();
        }
        for c in &self.csv_columns {
            let bad = || {
                CliError::Input(format!(
                    "--csv-column {c}: expected FIELD=COLUMN with FIELD one of id, charge, amount, created, status, ticket"
                ))
            };
            let (field, column) = c.split_once('=').ok_or_else(bad)?;
            if column.is_empty() {
                return Err(bad());
            }
            let cols = &mut options.csv_columns;
            let slot = match field {
                "id" => &mut cols.id,
                "charge" => &mut cols.charge,
                "amount" => &mut cols.amount,
                "created" => &mut cols.created,
                "status" => &mut cols.status,
                "ticket" => &mut cols.ticket,
                _ => return Err(bad()),
            };
            *slot = column.to_string();
        }
        Ok(refundsim::import::ImportInputs {
            files: self.files.clone(),
            format: self.format,
            base: self.base.clone(),
            options,
            tool: self.tool.clone(),
            ticket_field: self.ticket_field.clone(),
            amount_field: self.amount_field.clone(),
            tool_definition: self.tool_definition.clone(),
            budget,
        })
    }
}
