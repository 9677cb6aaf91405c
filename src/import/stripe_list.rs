//! Reader of the `stripe-list` input format: the provider's own list of refunds as Stripe's API
//! returns it, the ground truth of which refunds exist (as the `refunds-csv` export is).
//!
//! The body of `GET /v1/refunds` (Stripe API reference, "List all refunds"): a list object
//! `{"object": "list", "data": [refund, …], "has_more": …, "url": "/v1/refunds"}` whose `data`
//! holds refund objects (Stripe API reference, "The Refund object"): `id` (`re_…`), `object`
//! `"refund"`, `amount` (integer, the smallest currency unit), `charge` (a charge id, or null),
//! `payment_intent` (an id, or null), `created` (Unix seconds), `status` (`pending`,
//! `requires_action`, `succeeded`, `failed`, `canceled`), `metadata` (string keys and values).
//! A file may hold one list, several pages one per line (as a script paging with
//! `starting_after` writes them), a JSON array of pages, or bare refund objects one per line.
//! With `expand[]=data.charge` the charge is an object; its `id` is read.
//!
//! The ticket is the refund's `metadata` value under the first of the tool's ticket argument
//! names ([`super::ImportOptions::arguments`]) or `ticket`, `ticket_id`, `ticketId` present. A
//! refund without one (a dashboard refund for something else) is skipped, with one warning for
//! all such refunds. `created` to the second is read as the middle of that second, ± 0.5 s.

use serde_json::Value;

use super::fields::{quoted, shown, ticket_value, TICKET_TEXT};
use super::{ExportedRefund, ImportError, ImportOptions, Recording, Source, Warning};

/// The refund statuses Stripe documents.
const STATUSES: [&str; 5] = [
    "pending",
    "requires_action",
    "succeeded",
    "failed",
    "canceled",
];

/// Whether `text` looks like a Stripe list of refunds or refund objects: JSON whose first
/// object has `"object": "list"` or `"object": "refund"`.
pub fn detect(head: &str) -> bool {
    let compact: String = head
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(8192)
        .collect();
    compact.contains("\"object\":\"list\"") || compact.contains("\"object\":\"refund\"")
}

/// Reads `text`, the content of file `name`.
///
/// # Errors
/// The text is not JSON; a list has no `data` array; a refund lacks `id`, `amount`, `created`
/// or `status`, or one of them has the wrong type; a ticket in its metadata is not a ticket id.
/// Each error names the file, the line the refund starts on and its field path
/// (`data[3].amount`).
pub fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = super::fields::Lines::new(text);
    let mut rec = Recording::default();
    let mut skipped: Vec<u64> = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let start = stream.byte_offset();
        let Some(next) = stream.next() else { break };
        let v = next.map_err(|e| {
            ImportError::at(
                name,
                e.line() as u64,
                format!(
                    "not JSON ({}): expected a Stripe list of refunds",
                    super::fields::bare_message(&e)
                ),
            )
        })?;
        // The line of the value's first character (after the whitespace before it).
        let skip_ws = text[start..].len() - text[start..].trim_start().len();
        let line = lines.line_of(start + skip_ws);
        let pages: Vec<(String, &Value)> = match &v {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("[{i}]"), p))
                .collect(),
            other => vec![(String::new(), other)],
        };
        for (path, page) in pages {
            read_page(name, line, &path, page, opts, &mut rec, &mut skipped)?;
        }
    }
    if let Some(&first) = skipped.first() {
        rec.warn(Warning {
            source: Source {
                file: name.to_string(),
                line: first,
            },
            message: format!(
                "{} refund(s) without a ticket in their metadata (refunds not made for a ticket) skipped",
                skipped.len()
            ),
        });
    }
    rec.refunds
        .sort_by(|a, b| (a.created.at, &a.source).cmp(&(b.created.at, &b.source)));
    Ok(rec)
}

/// One list page, or one bare refund object, at `path` of the value starting on `line`.
fn read_page(
    name: &str,
    line: u64,
    path: &str,
    v: &Value,
    opts: &ImportOptions,
    rec: &mut Recording,
    skipped: &mut Vec<u64>,
) -> Result<(), ImportError> {
    let bad = |at: &str, message: String| ImportError::at(name, line, format!("{at}: {message}"));
    let Value::Object(o) = v else {
        return Err(bad(
            if path.is_empty() { "(document)" } else { path },
            format!(
                "expected a Stripe list object or a refund object, got {}",
                shown(v)
            ),
        ));
    };
    match o.get("object").and_then(Value::as_str) {
        Some("refund") => {
            let at = if path.is_empty() { "(refund)" } else { path };
            return refund(name, line, at, o, opts, rec, skipped);
        }
        Some("list") => {}
        other => {
            return Err(bad(
                &join(path, "object"),
                format!(
                    "expected \"list\" (the body of GET /v1/refunds) or \"refund\", got {}",
                    other.map_or_else(|| "nothing".to_string(), quoted)
                ),
            ))
        }
    }
    let Some(Value::Array(data)) = o.get("data") else {
        return Err(bad(
            &join(path, "data"),
            "expected the list's array of refund objects".to_string(),
        ));
    };
    for (i, r) in data.iter().enumerate() {
        let at = join(path, &format!("data[{i}]"));
        let Value::Object(r) = r else {
            return Err(bad(
                &at,
                format!("expected a refund object, got {}", shown(r)),
            ));
        };
        refund(name, line, &at, r, opts, rec, skipped)?;
    }
    Ok(())
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// One refund object at `at`.
fn refund(
    name: &str,
    line: u64,
    at: &str,
    r: &serde_json::Map<String, Value>,
    opts: &ImportOptions,
    rec: &mut Recording,
    skipped: &mut Vec<u64>,
) -> Result<(), ImportError> {
    let bad = |field: &str, expected: &str, got: Option<&Value>| {
        ImportError::at(
            name,
            line,
            format!(
                "{}: expected {expected}, got {}",
                join(at, field),
                got.map_or_else(|| "nothing".to_string(), shown)
            ),
        )
    };
    if let Some(obj) = r.get("object").filter(|o| o.as_str() != Some("refund")) {
        return Err(bad("object", "\"refund\"", Some(obj)));
    }
    let metadata = match r.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => return Err(bad("metadata", "an object of string values", Some(other))),
    };
    let names = opts
        .arguments
        .ticket
        .iter()
        .map(String::as_str)
        .chain(super::TICKET_ARGUMENTS);
    let found = metadata.and_then(|m| names.into_iter().find_map(|k| Some((k, m.get(k)?))));
    let Some((key, ticket)) = found.filter(|(_, v)| v.as_str() != Some("")) else {
        skipped.push(line);
        return Ok(());
    };
    let ticket = ticket_value(ticket)
        .ok_or_else(|| bad(&format!("metadata.{key}"), TICKET_TEXT, Some(ticket)))?;
    let id = match r.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        other => return Err(bad("id", "a refund id (\"re_…\")", other)),
    };
    let amount_cents = r
        .get("amount")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("amount", "integer cents", r.get("amount")))?;
    let created = r
        .get("created")
        .and_then(Value::as_i64)
        .filter(|s| (0..=253_402_300_799).contains(s))
        .ok_or_else(|| bad("created", "Unix seconds (an integer)", r.get("created")))?;
    let created = super::fields::within_second(created)
        .ok_or_else(|| bad("created", "Unix seconds (an integer)", r.get("created")))?;
    let status = r
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
        .filter(|s| STATUSES.contains(&s.as_str()))
        .ok_or_else(|| {
            bad(
                "status",
                "a refund status (pending, requires_action, succeeded, failed or canceled)",
                r.get("status"),
            )
        })?;
    let id_of = |key: &str| match r.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Object(o)) => o.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    let charge = id_of("charge")
        .or_else(|| id_of("payment_intent"))
        .unwrap_or_default();
    rec.refunds.push(ExportedRefund {
        id,
        charge,
        amount_cents,
        created,
        status,
        ticket,
        source: Source {
            file: name.to_string(),
            line,
        },
    });
    super::check_record_count(name, line, "exported refund", rec.refunds.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str) -> Result<Recording, ImportError> {
        read("r.json", text, &ImportOptions::default())
    }

    const LIST: &str = r#"{
  "object": "list",
  "url": "/v1/refunds",
  "has_more": false,
  "data": [
    {"id": "re_A2", "object": "refund", "amount": 4200, "charge": "ch_01", "created": 1741341609,
     "currency": "usd", "metadata": {"ticket_id": "T-100001"}, "payment_intent": "pi_01",
     "reason": "requested_by_customer", "status": "succeeded"},
    {"id": "re_Z9", "object": "refund", "amount": 999, "charge": {"id": "ch_99", "object": "charge"},
     "created": 1741343400, "currency": "usd", "metadata": {}, "payment_intent": null,
     "reason": null, "status": "succeeded"},
    {"id": "re_B1", "object": "refund", "amount": 1999, "charge": null, "created": 1741341900,
     "currency": "usd", "metadata": {"ticket": "48213"}, "payment_intent": "pi_02",
     "reason": null, "status": "pending"}
  ]
}"#;

    #[test]
    fn a_list_gives_its_refunds_with_their_tickets() {
        assert!(detect(LIST));
        let rec = read_str(LIST).unwrap();
        let got: Vec<_> = rec
            .refunds
            .iter()
            .map(|r| {
                (
                    r.id.as_str(),
                    r.ticket.as_str(),
                    r.amount_cents,
                    r.charge.as_str(),
                    r.status.as_str(),
                    r.created.at,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "re_A2",
                    "T-100001",
                    4200,
                    "ch_01",
                    "succeeded",
                    1_741_341_609_500_000_000
                ),
                (
                    "re_B1",
                    "48213",
                    1999,
                    "pi_02",
                    "pending",
                    1_741_341_900_500_000_000
                ),
            ]
        );
        assert_eq!(rec.warnings.len(), 1);
        assert!(rec.warnings[0]
            .message
            .starts_with("1 refund(s) without a ticket"));
    }

    #[test]
    fn pages_one_per_line_and_bare_refunds_read_too() {
        let one_line = LIST.replace('\n', " ");
        let two = format!("{one_line}\n{one_line}\n");
        assert_eq!(read_str(&two).unwrap().refunds.len(), 4);
        let bare = r#"{"id": "re_1", "object": "refund", "amount": 5, "created": 1, "status": "succeeded", "metadata": {"ticketId": 7}}"#;
        let rec = read_str(bare).unwrap();
        assert_eq!(rec.refunds[0].ticket.as_str(), "7");
        assert_eq!(read_str(&format!("[{one_line}]")).unwrap().refunds.len(), 2);
    }

    #[test]
    fn bad_refunds_name_the_line_and_the_field() {
        let err = |t: &str| read_str(t).unwrap_err().to_string();
        assert_eq!(
            err("\n{\"object\": \"list\", \"data\": [{\"id\": \"re_1\", \"amount\": \"42\", \"created\": 1, \"status\": \"succeeded\", \"metadata\": {\"ticket\": \"1\"}}]}"),
            "r.json:2: data[0].amount: expected integer cents, got \"42\""
        );
        assert_eq!(
            err("{\"object\": \"charge\"}"),
            "r.json:1: object: expected \"list\" (the body of GET /v1/refunds) or \"refund\", got \"charge\""
        );
        assert_eq!(
            err("{\"object\": \"list\"}"),
            "r.json:1: data: expected the list's array of refund objects"
        );
        assert_eq!(
            err("{\"object\": \"list\", \"data\": [{\"id\": \"re_1\", \"amount\": 1, \"created\": 1, \"status\": \"done\", \"metadata\": {\"ticket\": \"1\"}}]}"),
            "r.json:1: data[0].status: expected a refund status (pending, requires_action, succeeded, failed or canceled), got \"done\""
        );
        assert!(err("{\"object\": ").starts_with("r.json:1: not JSON"));
    }
}
