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

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

use super::fields::{amount_value, shown, ticket_value, AMOUNT_TEXT, TICKET_TEXT};
use super::{ExportedRefund, ImportError, ImportOptions, Recording, Source, TicketRef, Warning};

/// Whether `text` looks like a Stripe list of refunds or refund objects: JSON whose first
/// object has `"object": "list"` or `"object": "refund"`.
pub(crate) fn detect(head: &str) -> bool {
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
/// Each error names the file, the line the offending value starts on (a refund's field, else
/// the refund object) and its field path (`data[3].amount`), and shows a number as the file
/// writes it.
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = super::fields::Lines::new(text);
    let list = List {
        name,
        text,
        lines: &lines,
        opts,
    };
    let mut rec = Recording::default();
    let mut skipped: Vec<u64> = Vec::new();
    for next in serde_json::Deserializer::from_str(body).into_iter::<&RawValue>() {
        let doc = next.map_err(|e| {
            ImportError::at(
                name,
                e.line() as u64,
                format!(
                    "not JSON ({}): expected a Stripe list of refunds",
                    super::fields::bare_message(&e)
                ),
            )
        })?;
        if doc.get().starts_with('[') {
            let pages: Vec<&RawValue> = serde_json::from_str(doc.get())
                .map_err(|e| list.not_json(doc, "(document)", &e))?;
            for (i, page) in pages.into_iter().enumerate() {
                list.page(&format!("[{i}]"), page, &mut rec, &mut skipped)?;
            }
        } else {
            list.page("", doc, &mut rec, &mut skipped)?;
        }
    }
    if let Some(&first) = skipped.first() {
        rec.warn(Warning {
            source: Source {
                file: name.to_string(),
                line: first,
            },
            message: format!(
                "{} without a ticket in their metadata (refunds not made for a ticket) skipped",
                super::fields::plural(skipped.len(), "refund", "refunds")
            ),
        });
    }
    rec.refunds
        .sort_by(|a, b| (a.created.at, &a.source).cmp(&(b.created.at, &b.source)));
    Ok(rec)
}

/// One file being read: its name and text (the values below are slices of it, which gives
/// each its line).
struct List<'a> {
    name: &'a str,
    text: &'a str,
    lines: &'a super::fields::Lines,
    opts: &'a ImportOptions,
}

/// An object's fields, each as its text in the file.
type Fields<'a> = BTreeMap<String, &'a RawValue>;

impl<'a> List<'a> {
    /// The line `raw` (a slice of the text) starts on.
    fn line(&self, raw: &RawValue) -> u64 {
        let off = (raw.get().as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize);
        self.lines.line_of(off)
    }

    /// An error about the value `raw` at `path`.
    fn bad(&self, raw: &RawValue, path: &str, message: impl std::fmt::Display) -> ImportError {
        ImportError::at(self.name, self.line(raw), format!("{path}: {message}"))
    }

    fn not_json(&self, raw: &RawValue, path: &str, e: &serde_json::Error) -> ImportError {
        self.bad(raw, path, super::fields::bare_message(e))
    }

    /// The fields of the object `raw` at `path`; `None` when it is not an object.
    fn object(&self, raw: &'a RawValue, path: &str) -> Result<Option<Fields<'a>>, ImportError> {
        if !raw.get().starts_with('{') {
            return Ok(None);
        }
        serde_json::from_str(raw.get())
            .map(Some)
            .map_err(|e| self.not_json(raw, path, &e))
    }

    /// One list page, or one bare refund object, at `path` (empty for a whole document).
    fn page(
        &self,
        path: &str,
        raw: &'a RawValue,
        rec: &mut Recording,
        skipped: &mut Vec<u64>,
    ) -> Result<(), ImportError> {
        let at = if path.is_empty() { "(document)" } else { path };
        let Some(o) = self.object(raw, at)? else {
            return Err(self.bad(
                raw,
                at,
                format!(
                    "expected a Stripe list object or a refund object, got {}",
                    shown_raw(raw)
                ),
            ));
        };
        let object = o.get("object").map(|r| value(r));
        match object.as_ref().and_then(Value::as_str) {
            Some("refund") => {
                let at = if path.is_empty() { "(refund)" } else { path };
                return self.refund(at, raw, &o, rec, skipped);
            }
            Some("list") => {}
            _ => {
                return Err(self.bad(
                    o.get("object").copied().unwrap_or(raw),
                    &join(path, "object"),
                    format!(
                        "expected \"list\" (the body of GET /v1/refunds) or \"refund\", got {}",
                        o.get("object")
                            .map_or_else(|| "nothing".to_string(), |r| shown_raw(r))
                    ),
                ))
            }
        }
        self.list_data(path, raw, &o, rec, skipped)
    }

    /// The `data` array of the list object `o` at `path` (`raw` when it has none): each item a
    /// refund object, added as [`Self::refund`] adds one.
    fn list_data(
        &self,
        path: &str,
        raw: &'a RawValue,
        o: &Fields<'a>,
        rec: &mut Recording,
        skipped: &mut Vec<u64>,
    ) -> Result<(), ImportError> {
        let data_at = join(path, "data");
        let data = o
            .get("data")
            .filter(|d| d.get().starts_with('['))
            .ok_or_else(|| {
                self.bad(
                    o.get("data").copied().unwrap_or(raw),
                    &data_at,
                    "expected the list's array of refund objects",
                )
            })?;
        let items: Vec<&RawValue> =
            serde_json::from_str(data.get()).map_err(|e| self.not_json(data, &data_at, &e))?;
        for (i, r) in items.into_iter().enumerate() {
            let at = format!("{data_at}[{i}]");
            let Some(fields) = self.object(r, &at)? else {
                return Err(self.bad(
                    r,
                    &at,
                    format!("expected a refund object, got {}", shown_raw(r)),
                ));
            };
            self.refund(&at, r, &fields, rec, skipped)?;
        }
        Ok(())
    }

    /// One refund object `raw` at `at`, with its fields `r`: added to `rec`, or its line to
    /// `skipped` when its metadata holds no ticket.
    ///
    /// # Errors
    /// A field does not parse, `object` is not `"refund"`, or a field read is not valid
    /// ([`List::ticket`], [`exported_refund`]); more refunds than an import reads.
    fn refund(
        &self,
        at: &str,
        raw: &RawValue,
        r: &Fields<'a>,
        rec: &mut Recording,
        skipped: &mut Vec<u64>,
    ) -> Result<(), ImportError> {
        let line = self.line(raw);
        // A field's error names the line its value starts on (the refund's, when absent).
        let bad = |field: &str, expected: &str| {
            let got = r.get(field);
            self.bad(
                got.copied().unwrap_or(raw),
                &join(at, field),
                format!(
                    "expected {expected}, got {}",
                    got.map_or_else(|| "nothing".to_string(), |g| shown_raw(g))
                ),
            )
        };
        let values = self.values(at, r)?;
        if values
            .get("object")
            .is_some_and(|o| o.as_str() != Some("refund"))
        {
            return Err(bad("object", "\"refund\""));
        }
        let Some(ticket) = self.ticket(at, r, &values, &bad)? else {
            skipped.push(line);
            return Ok(());
        };
        let source = Source {
            file: self.name.to_string(),
            line,
        };
        rec.refunds
            .push(exported_refund(&values, ticket, source, &bad)?);
        super::check_record_count(self.name, line, "exported refund", rec.refunds.len())
    }

    /// The values of the fields a refund's `r` (at `at`) has among those read, parsed (a value
    /// nested past serde_json's limit is an error here: the slices were only scanned).
    ///
    /// # Errors
    /// A field's text does not parse.
    fn values(&self, at: &str, r: &Fields<'a>) -> Result<Values, ImportError> {
        let mut values = Values::new();
        for k in [
            "object",
            "metadata",
            "id",
            "amount",
            "created",
            "status",
            "charge",
            "payment_intent",
        ] {
            if let Some(raw) = r.get(k) {
                let v = serde_json::from_str(raw.get())
                    .map_err(|e| self.not_json(raw, &join(at, k), &e))?;
                values.insert(k, v);
            }
        }
        Ok(values)
    }

    /// The ticket in a refund's `metadata` (its `values`; `r` and `at` for messages): the
    /// value under the first of the tool's ticket argument names or the common ones present.
    /// `None` without one, or when it is empty.
    ///
    /// # Errors
    /// `metadata` is not an object (`bad`'s error), or the ticket is not a ticket id.
    fn ticket(
        &self,
        at: &str,
        r: &Fields<'a>,
        values: &Values,
        bad: &dyn Fn(&str, &str) -> ImportError,
    ) -> Result<Option<TicketRef>, ImportError> {
        let metadata = match values.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(bad("metadata", "an object of string values")),
        };
        let names = self
            .opts
            .arguments
            .ticket
            .iter()
            .map(String::as_str)
            .chain(super::TICKET_ARGUMENTS);
        let found = metadata.and_then(|m| names.into_iter().find_map(|k| Some((k, m.get(k)?))));
        let Some((key, ticket)) = found.filter(|(_, v)| v.as_str() != Some("")) else {
            return Ok(None);
        };
        match ticket_value(ticket) {
            Some(t) => Ok(Some(t)),
            None => Err(self.bad(
                r["metadata"],
                &join(at, &format!("metadata.{key}")),
                format!("expected {TICKET_TEXT}, got {}", shown(ticket)),
            )),
        }
    }
}

/// A refund's fields read, by name, parsed.
type Values = BTreeMap<&'static str, Value>;

/// The refund of `ticket`, recorded at `source`, from its fields' `values`: its charge is the
/// `charge`'s id, else the `payment_intent`'s (either may be expanded to an object), else
/// empty.
///
/// # Errors
/// `bad(field, expected)` for an `id` that is not a non-empty string, an `amount` that is not
/// integer cents, a `created` that is not Unix seconds, a `status` that is not Stripe's.
fn exported_refund(
    values: &Values,
    ticket: TicketRef,
    source: Source,
    bad: &dyn Fn(&str, &str) -> ImportError,
) -> Result<ExportedRefund, ImportError> {
    let id = match values.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(bad("id", "a refund id (\"re_…\")")),
    };
    let amount_cents = values
        .get("amount")
        .and_then(amount_value)
        .ok_or_else(|| bad("amount", AMOUNT_TEXT))?;
    let created = values
        .get("created")
        .and_then(Value::as_i64)
        .filter(|s| (0..=253_402_300_799).contains(s))
        .and_then(super::fields::within_second)
        .ok_or_else(|| bad("created", "Unix seconds (an integer)"))?;
    let status = values
        .get("status")
        .and_then(Value::as_str)
        .and_then(super::fields::refund_status)
        .ok_or_else(|| bad("status", super::fields::REFUND_STATUS_TEXT))?;
    let id_of = |key: &str| match values.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Object(o)) => o.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    let charge = id_of("charge")
        .or_else(|| id_of("payment_intent"))
        .unwrap_or_default();
    Ok(ExportedRefund {
        id,
        charge,
        amount_cents,
        created,
        status,
        ticket,
        source,
    })
}

/// The value of a field's text (already checked to be JSON; null if it were not).
fn value(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

/// A value as an error shows it: a number as the file writes it (`1e30`, not `1e+30`), others
/// as [`shown`] does; shortened either way.
fn shown_raw(raw: &RawValue) -> String {
    let t = raw.get();
    if t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        super::fields::shortened(t)
    } else {
        shown(&value(raw))
    }
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
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
            .starts_with("1 refund without a ticket"));
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
            err("\n{\"object\": \"list\", \"data\": [{\"id\": \"re_1\", \"amount\": \"42.00\", \"created\": 1, \"status\": \"succeeded\", \"metadata\": {\"ticket\": \"1\"}}]}"),
            "r.json:2: data[0].amount: expected integer cents (a whole number in the currency's \
             smallest unit, like 4200, or its decimal digits as a string, \"4200\"), got \"42.00\""
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

    /// Each refund's own line and path, not the document's first line; numbers as written.
    #[test]
    fn errors_name_the_refunds_line_and_path() {
        let err = |t: &str| read_str(t).unwrap_err().to_string();
        let refund = |n: u32, amount: &str| {
            format!(
                "    {{\"id\": \"re_{n}\", \"object\": \"refund\", \"amount\": {amount}, \
                 \"created\": 1, \"status\": \"succeeded\", \"metadata\": {{\"ticket\": \"1\"}}}}"
            )
        };
        let list = |bad: &str| {
            format!(
                "{{\"object\": \"list\",\n  \"data\": [\n{},\n{},\n{},\n{}\n  ]}}\n",
                refund(1, "4200"),
                refund(2, "\"2500\""),
                refund(3, "100"),
                refund(4, bad)
            )
        };
        let at = "r.json:6: data[3].amount: expected integer cents (a whole number in the \
                  currency's smallest unit, like 4200, or its decimal digits as a string, \
                  \"4200\"), got";
        assert_eq!(err(&list("1e30")), format!("{at} 1e30"));
        assert_eq!(
            err(&list("99999999999999999999")),
            format!("{at} 99999999999999999999")
        );
        assert_eq!(err(&list("-5")), format!("{at} -5"));
        assert_eq!(err(&list("\"25x\"")), format!("{at} \"25x\""));
        // A string of digits is an amount, as in tool arguments.
        let rec = read_str(&list("7")).unwrap();
        let mut got: Vec<(u64, u64)> = rec
            .refunds
            .iter()
            .map(|r| (r.amount_cents, r.source.line))
            .collect();
        got.sort();
        assert_eq!(got, [(7, 6), (100, 5), (2500, 4), (4200, 3)]);
        // A field on a line of its own is named at that line; an array of pages by index.
        let pretty = "[{\"object\": \"list\", \"data\": []},\n {\"object\": \"list\", \"data\": [\n  {\"id\": \"re_1\",\n   \"metadata\": {\"ticket\": \"1\"},\n   \"status\": \"done\"}]}]";
        assert!(
            err(pretty).starts_with("r.json:3: [1].data[0].amount: expected integer cents"),
            "{}",
            err(pretty)
        );
        // A field nested past serde_json's limit is an error, not a refund without metadata.
        let deep = format!(
            "{{\"object\": \"list\", \"data\": [\n{{\"id\": \"re_1\", \"metadata\": {}1{}}}]}}",
            "{\"a\":".repeat(200),
            "}".repeat(200)
        );
        assert!(
            err(&deep)
                .starts_with("r.json:2: data[0].metadata: nested deeper than the nesting limit"),
            "{}",
            err(&deep)
        );
        let status = pretty.replace("\"re_1\",", "\"re_1\", \"amount\": 1, \"created\": 1,");
        assert_eq!(
            err(&status),
            "r.json:5: [1].data[0].status: expected a refund status (pending, requires_action, \
             succeeded, failed or canceled), got \"done\""
        );
    }
}
