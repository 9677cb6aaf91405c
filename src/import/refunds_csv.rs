//! Reader of the `refunds-csv` input format: the provider's refund export (Stripe's
//! `GET /v1/refunds` flattened to CSV, or its dashboard's export), the ground truth of what was
//! refunded.
//!
//! Columns are found by name in the header row (matched without regard to case or surrounding
//! spaces), by [`CsvColumns`]: when a column keeps its default name, these are looked for too,
//! in order:
//!
//! | column | default | also |
//! |---|---|---|
//! | id | `id` | |
//! | charge | `charge` | `payment_intent` (a row's first non-empty one) |
//! | amount | `amount` | |
//! | created | `created` | `created (utc)` (the dashboard's) |
//! | status | `status` | |
//! | ticket | `metadata.ticket` | `ticket (metadata)`, `metadata.ticket_id`, … (below) |
//!
//! The ticket's alternatives: `ticket (metadata)`, `metadata.ticket_id`, `ticket_id (metadata)`
//! (the dashboard's metadata columns), `metadata[ticket]`, `metadata[ticket_id]`.
//!
//! Values: `amount` in integer cents (`4200`), or a decimal amount in major units when it has a
//! `.` (`42.00`, as the dashboard writes; at most two decimals: currencies with cents);
//! `created` in Unix seconds, RFC 3339, or `YYYY-MM-DD HH:MM:SS` (UTC, as the dashboard
//! writes); a time to the second is taken as the middle of its second, ± 0.5 s (Stripe
//! records seconds); `status` one of Stripe's refund statuses (any case). A row with an empty
//! ticket (a refund not made for a ticket) is skipped, with one warning for all such rows.
//! Other columns are ignored.

use super::fields::{parse_utc, quoted};
use super::Warning;
use super::{CsvColumns, ExportedRefund, ImportError, ImportOptions, Instant, Recording, Source};

/// The header's position of each column.
struct Columns {
    id: usize,
    charge: Vec<usize>,
    amount: usize,
    created: usize,
    status: usize,
    ticket: usize,
    /// The name each column was found under, for messages: id, charge, amount, created,
    /// status, ticket.
    names: [String; 6],
}

/// Reads `text`, the content of file `name`.
///
/// # Errors
/// A required column is missing from the header; a row has another number of fields than the
/// header; an empty id or charge, an amount, time, status or ticket that does not parse. The
/// error names the file, the row's line and the column.
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    read_from(name, text.as_bytes(), opts)
}

/// [`read`] from a reader, row by row (a file is streamed, not loaded whole); a UTF-8 byte
/// order mark at the start is the caller's to skip.
///
/// # Errors
/// As [`read`], and the reader's own errors.
pub(crate) fn read_from(
    name: &str,
    input: impl std::io::Read,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(input);
    let header = reader
        .headers()
        .map_err(|e| csv_error(name, &e))?
        .iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    let cols = columns(name, &header, &opts.csv_columns)?;
    let mut rec = Recording::default();
    let mut no_ticket: Vec<u64> = Vec::new();
    for row in reader.records() {
        let row = row.map_err(|e| csv_error(name, &e))?;
        let line = row.position().map_or(0, |p| p.line());
        match refund(name, line, &row, &cols)? {
            Some(r) => {
                rec.refunds.push(r);
                super::check_record_count(name, line, "exported refund", rec.refunds.len())?;
            }
            None => no_ticket.push(line),
        }
    }
    if let Some(&first) = no_ticket.first() {
        rec.warn(Warning {
            source: Source {
                file: name.to_string(),
                line: first,
            },
            message: format!(
                "{} with an empty `{}` (refunds not made for a ticket) skipped",
                super::fields::plural(no_ticket.len(), "row", "rows"),
                cols.names[5]
            ),
        });
    }
    rec.refunds
        .sort_by(|a, b| (a.created.at, &a.source).cmp(&(b.created.at, &b.source)));
    Ok(rec)
}

/// Finds the configured columns (and, for default names, their alternatives) in `header`.
///
/// # Errors
/// The header is empty or names a column twice ([`check_header`]); a column is missing.
fn columns(name: &str, header: &[String], want: &CsvColumns) -> Result<Columns, ImportError> {
    let defaults = CsvColumns::default();
    check_header(name, header)?;
    let h = Header { name, header };
    let id = h.one("refund id", &candidates(&want.id, &defaults.id, &[]))?;
    let charge_names = candidates(&want.charge, &defaults.charge, &["payment_intent"]);
    let charge = h.find_all(&charge_names);
    if charge.is_empty() {
        h.one("charge", &charge_names)?;
    }
    let amount = h.one("amount", &candidates(&want.amount, &defaults.amount, &[]))?;
    let created = h.one(
        "created",
        &candidates(&want.created, &defaults.created, &["created (utc)"]),
    )?;
    let status = h.one("status", &candidates(&want.status, &defaults.status, &[]))?;
    let ticket = h.one(
        "ticket",
        &candidates(
            &want.ticket,
            &defaults.ticket,
            &[
                "ticket (metadata)",
                "metadata.ticket_id",
                "ticket_id (metadata)",
                "metadata[ticket]",
                "metadata[ticket_id]",
            ],
        ),
    )?;
    Ok(Columns {
        id: id.0,
        charge: charge.iter().map(|c| c.0).collect(),
        amount: amount.0,
        created: created.0,
        status: status.0,
        ticket: ticket.0,
        names: [
            id.1,
            charge[0].1.clone(),
            amount.1,
            created.1,
            status.1,
            ticket.1,
        ],
    })
}

/// The header has a name, and no name twice (a repeated column name would make the row's
/// value depend on which copy is read).
///
/// # Errors
/// The header is empty, or names a column twice (without regard to case or spaces).
fn check_header(name: &str, header: &[String]) -> Result<(), ImportError> {
    if header.iter().all(|h| h.trim().is_empty()) {
        return Err(ImportError::at(
            name,
            1,
            "no header: expected a first line of column names with at least id, charge, \
             amount, created, status and the ticket's metadata column",
        ));
    }
    for (i, h) in header.iter().enumerate() {
        if let Some(j) = header[..i]
            .iter()
            .position(|e| e.trim().eq_ignore_ascii_case(h.trim()))
        {
            return Err(ImportError::at(
                name,
                1,
                format!(
                    "column {} `{}` repeats column {}: expected each column name once",
                    i + 1,
                    h.trim(),
                    j + 1
                ),
            ));
        }
    }
    Ok(())
}

/// The names a column is looked for under, in order: its `configured` name, and when that is
/// its `default` name, the alternatives `also`.
fn candidates<'n>(configured: &'n str, default: &str, also: &[&'n str]) -> Vec<&'n str> {
    let mut names = vec![configured];
    if configured == default {
        names.extend_from_slice(also);
    }
    names
}

/// The header row of file `name`, to find columns in.
struct Header<'a> {
    name: &'a str,
    header: &'a [String],
}

impl Header<'_> {
    /// Where each of `names` is in the header (without regard to case or spaces), with the
    /// name as the header writes it; in the order of `names`, those found.
    fn find_all(&self, names: &[&str]) -> Vec<(usize, String)> {
        names
            .iter()
            .filter_map(|n| {
                self.header
                    .iter()
                    .position(|h| h.trim().eq_ignore_ascii_case(n))
                    .map(|i| (i, self.header[i].trim().to_string()))
            })
            .collect()
    }

    /// The first of `names` in the header ([`Header::find_all`]): the `what` column.
    ///
    /// # Errors
    /// None is: the error names those looked for and the header's.
    fn one(&self, what: &str, names: &[&str]) -> Result<(usize, String), ImportError> {
        if let Some(f) = self.find_all(names).into_iter().next() {
            return Ok(f);
        }
        let looked: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        Err(ImportError::at(
            self.name,
            1,
            format!(
                "no {what} column: looked for {}; the header has {}",
                looked.join(", "),
                self.header
                    .iter()
                    .map(|h| format!("`{h}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ))
    }
}

/// One row as a refund; `None` when its ticket is empty.
fn refund(
    name: &str,
    line: u64,
    row: &csv::StringRecord,
    c: &Columns,
) -> Result<Option<ExportedRefund>, ImportError> {
    let get = |i: usize| row.get(i).unwrap_or("");
    let bad = |col: usize, expected: &str, got: &str| {
        column_error(name, line, &c.names[col], expected, got)
    };
    let ticket_text = get(c.ticket);
    if ticket_text.is_empty() {
        return Ok(None);
    }
    let ticket = super::fields::ticket_text(ticket_text)
        .ok_or_else(|| bad(5, super::fields::TICKET_TEXT, ticket_text))?;
    let id = get(c.id);
    if id.is_empty() {
        return Err(bad(0, "a refund id (`re_…`)", id));
    }
    let charge = c.charge.iter().map(|&i| get(i)).find(|v| !v.is_empty());
    let charge = charge.ok_or_else(|| bad(1, "a charge or payment intent id", ""))?;
    let amount = get(c.amount);
    let amount_cents = cents(amount).ok_or_else(|| {
        bad(
            2,
            "integer cents (4200) or a decimal amount in major units (42.00)",
            amount,
        )
    })?;
    let created_text = get(c.created);
    let created = created(created_text).ok_or_else(|| {
        bad(
            3,
            "Unix seconds, an RFC 3339 time or \"YYYY-MM-DD HH:MM:SS\" (UTC)",
            created_text,
        )
    })?;
    let status_text = get(c.status);
    let status = super::fields::refund_status(status_text)
        .ok_or_else(|| bad(4, super::fields::REFUND_STATUS_TEXT, status_text))?;
    Ok(Some(ExportedRefund {
        id: id.to_string(),
        charge: charge.to_string(),
        amount_cents,
        created,
        status,
        ticket,
        source: Source {
            file: name.to_string(),
            line,
        },
    }))
}

/// The error for a cell of column `column` at `line` that is not what it should be.
fn column_error(name: &str, line: u64, column: &str, expected: &str, got: &str) -> ImportError {
    ImportError::at(
        name,
        line,
        format!(
            "column `{column}`: expected {expected}, got {}",
            quoted(got)
        ),
    )
}

/// A non-empty string of ASCII digits as a number.
fn digits(s: &str) -> Option<u64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `4200` → 4200 cents; `42.00`, `42.5`, `42.` → cents of major units.
fn cents(s: &str) -> Option<u64> {
    match s.split_once('.') {
        None => digits(s),
        Some((major, minor)) if minor.len() <= 2 && minor.bytes().all(|b| b.is_ascii_digit()) => {
            let minor = format!("{minor:0<2}").parse::<u64>().ok()?;
            digits(major)?.checked_mul(100)?.checked_add(minor)
        }
        Some(_) => None,
    }
}

/// A creation time: Unix seconds or a text time; to the second → the middle of that second.
fn created(s: &str) -> Option<Instant> {
    if let Some(secs) = digits(s) {
        return super::fields::within_second(i64::try_from(secs).ok()?);
    }
    let at = parse_utc(s)?;
    let whole_second = !s.trim_end_matches(['Z', 'z']).contains('.');
    if whole_second {
        super::fields::within_second(at.div_euclid(1_000_000_000))
    } else {
        Some(Instant::exact(at))
    }
}

fn csv_error(name: &str, e: &csv::Error) -> ImportError {
    let line = e.position().map_or(0, |p| p.line());
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "{len} field{} where the header has {expected_len}",
            if *len == 1 { "" } else { "s" }
        ),
        _ => e.to_string(),
    };
    ImportError::at(name, line, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-05-14T16:41:18Z, Unix seconds.
    const S: i64 = 1_715_704_878;

    fn read_str(text: &str) -> Result<Recording, ImportError> {
        read("r.csv", text, &ImportOptions::default())
    }

    fn err(text: &str) -> String {
        read_str(text).unwrap_err().to_string()
    }

    fn mid(secs: i64) -> Instant {
        Instant {
            at: secs * 1_000_000_000 + 500_000_000,
            tolerance_ns: 500_000_000,
        }
    }

    #[test]
    fn reads_api_style_rows_sorted_by_creation() {
        let text = "id,object,amount,charge,created,currency,metadata.ticket,status\n\
                    re_B,refund,4200,ch_1,1715704879,usd,48213,succeeded\n\
                    re_A,refund,4200,ch_1,1715704878,usd,48213,succeeded\n\
                    re_C,refund,100,ch_2,1715704000,usd,,succeeded\n";
        let rec = read_str(text).unwrap();
        let got: Vec<_> = rec
            .refunds
            .iter()
            .map(|r| (r.id.as_str(), r.created, r.source.line))
            .collect();
        assert_eq!(got, [("re_A", mid(S), 3), ("re_B", mid(S + 1), 2)]);
        assert_eq!(
            rec.refunds[0],
            ExportedRefund {
                id: "re_A".into(),
                charge: "ch_1".into(),
                amount_cents: 4200,
                created: mid(S),
                status: "succeeded".into(),
                ticket: 48213.into(),
                source: Source {
                    file: "r.csv".into(),
                    line: 3
                },
            }
        );
        assert_eq!(rec.warnings.len(), 1);
        assert_eq!(rec.warnings[0].source.line, 4);
        assert!(rec.warnings[0]
            .message
            .starts_with("1 row with an empty `metadata.ticket`"));
    }

    #[test]
    fn reads_dashboard_style_rows() {
        let text = "\u{feff}\"id\",\"Amount\",\"Created (UTC)\",\"Payment Intent\",\"charge\",\
                    \"payment_intent\",\"Status\",\"ticket_id (metadata)\"\n\
                    re_A,42.00,2024-05-14 16:41:18,x,,pi_9,Succeeded,48213\n\
                    re_B,42.5,2024-05-14T16:41:18.250Z,x,ch_9,,pending,7\n";
        let rec = read_str(text).unwrap();
        let got: Vec<_> = rec
            .refunds
            .iter()
            .map(|r| {
                (
                    r.amount_cents,
                    r.created,
                    r.charge.as_str(),
                    r.status.as_str(),
                    r.ticket.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    4250,
                    Instant::exact(S * 1_000_000_000 + 250_000_000),
                    "ch_9",
                    "pending",
                    "7"
                ),
                // to the second: the middle of 16:41:18, after 16:41:18.250
                (4200, mid(S), "pi_9", "succeeded", "48213"),
            ]
        );
    }

    #[test]
    fn configured_columns_replace_the_defaults() {
        let opts = ImportOptions {
            csv_columns: CsvColumns {
                ticket: "metadata.case".into(),
                ..CsvColumns::default()
            },
            ..ImportOptions::default()
        };
        let text = "id,charge,amount,created,status,metadata.case,metadata.ticket\n\
                    re_A,ch_1,1,1,failed,5,6\n";
        let rec = read("r.csv", text, &opts).unwrap();
        assert_eq!(rec.refunds[0].ticket, 5);
        let text = "id,charge,amount,created,status,ticket_id (metadata)\nre_A,ch_1,1,1,failed,5\n";
        assert_eq!(
            read("r.csv", text, &opts).unwrap_err().to_string(),
            "r.csv:1: no ticket column: looked for `metadata.case`; the header has `id`, \
             `charge`, `amount`, `created`, `status`, `ticket_id (metadata)`"
        );
    }

    #[test]
    fn bad_values_name_line_and_column() {
        let head = "id,charge,amount,created,status,metadata.ticket\n";
        let ok = "re_A,ch_1,4200,1715704878,succeeded,48213\n";
        let row = |r: &str| err(&format!("{head}{ok}{r}\n"));
        assert_eq!(
            row("re_B,ch_1,4200.001,1715704878,succeeded,48213"),
            "r.csv:3: column `amount`: expected integer cents (4200) or a decimal amount in \
             major units (42.00), got \"4200.001\""
        );
        assert_eq!(
            row("re_B,ch_1,-5,1715704878,succeeded,48213"),
            "r.csv:3: column `amount`: expected integer cents (4200) or a decimal amount in \
             major units (42.00), got \"-5\""
        );
        assert_eq!(
            row("re_B,ch_1,4200,yesterday,succeeded,48213"),
            "r.csv:3: column `created`: expected Unix seconds, an RFC 3339 time or \
             \"YYYY-MM-DD HH:MM:SS\" (UTC), got \"yesterday\""
        );
        assert_eq!(
            row("re_B,ch_1,4200,1715704878,refunded,48213"),
            "r.csv:3: column `status`: expected a refund status (pending, requires_action, \
             succeeded, failed or canceled), got \"refunded\""
        );
        // A string ticket id is a ticket id; one over 200 characters is not.
        let long = "T".repeat(201);
        assert_eq!(
            row(&format!("re_B,ch_1,4200,1715704878,succeeded,{long}")),
            format!(
                "r.csv:3: column `metadata.ticket`: expected a ticket id (a non-negative \
                 integer, or a string like \"T-100000\" of at most 200 characters), got \"{}\"… \
                 (201 characters)",
                "T".repeat(48)
            )
        );
        assert_eq!(
            row("re_B,,4200,1715704878,succeeded,48213"),
            "r.csv:3: column `charge`: expected a charge or payment intent id, got \"\""
        );
        assert_eq!(
            row("re_B,ch_1,4200,1715704878"),
            "r.csv:3: 4 fields where the header has 6"
        );
        assert_eq!(
            err("id,amount\nre_A,1\n"),
            "r.csv:1: no charge column: looked for `charge`, `payment_intent`; the header has \
             `id`, `amount`"
        );
    }

    #[test]
    fn amounts_and_times() {
        assert_eq!(
            ["0", "4200", "42.00", "42.5", "42.", "0.07"].map(cents),
            [
                Some(0),
                Some(4200),
                Some(4200),
                Some(4250),
                Some(4200),
                Some(7)
            ]
        );
        assert_eq!(["", ".5x", "1,200.00", "$4", "1e3"].map(cents), [None; 5]);
        assert_eq!(created("2024-05-14T16:41:18Z"), Some(mid(S)));
        assert_eq!(created(&S.to_string()), Some(mid(S)));
    }
}
