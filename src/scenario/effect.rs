//! What the agent's money-moving tool does in the world, in the words its outputs use: the
//! effect's noun (`refund`, `charge`, `payout`, …), its plural, and the provider operation that
//! makes one (`POST /v1/refunds`). Declared on the tool (`tools[].effect`, `tools[].operation`);
//! a scenario that declares neither is the incident's refund tool, and every output reads as
//! before.

/// The effects refundsim knows by name, each with the provider operation it defaults to: the
/// Stripe API's create endpoints for refunds, payments (a PaymentIntent), payouts and transfers
/// (docs.stripe.com/api), and a generic endpoint for an order or a message.
pub const KNOWN_EFFECTS: [(&str, &str); 6] = [
    ("refund", "POST /v1/refunds"),
    ("charge", "POST /v1/payment_intents"),
    ("payout", "POST /v1/payouts"),
    ("transfer", "POST /v1/transfers"),
    ("order", "POST /orders"),
    ("message", "POST /messages"),
];

/// The effect-neutral names of the report's refund metrics, beside today's names, which stay:
/// `expect` bounds, `diff --tolerance`, `sweep --require` and `--json` accept and print both.
pub const METRIC_ALIASES: [(&str, &str); 7] = [
    ("duplicate_refund_tickets", "duplicate_effect_tickets"),
    ("extra_refunds", "extra_effects"),
    ("over_refund_cents", "over_effect_cents"),
    ("lost_refunds", "lost_effects"),
    ("refunds_created", "effects_created"),
    ("refunds_failed_after_200", "effects_failed_after_200"),
    ("manual_refunds", "manual_effects"),
];

/// The effect-neutral names of the invariants that name refunds, beside today's names.
pub const INVARIANT_ALIASES: [(&str, &str); 3] = [
    (
        "at_most_one_refund_per_ticket",
        "at_most_one_effect_per_ticket",
    ),
    ("no_over_refund", "no_over_effect"),
    ("no_lost_refund", "no_lost_effect"),
];

/// The name a metric is stored under: today's refund name for an effect-neutral alias
/// ([`METRIC_ALIASES`]), else `name` itself.
pub fn canonical_metric(name: &str) -> &str {
    METRIC_ALIASES
        .iter()
        .find(|(_, neutral)| *neutral == name)
        .map_or(name, |(refund, _)| refund)
}

/// The effect-neutral alias of a refund metric or invariant name, if it has one.
pub fn neutral_name(name: &str) -> Option<&'static str> {
    METRIC_ALIASES
        .iter()
        .chain(INVARIANT_ALIASES.iter())
        .find(|(refund, _)| *refund == name)
        .map(|(_, neutral)| *neutral)
}

/// The longest free noun, in characters.
pub const MAX_NOUN_CHARS: usize = 32;

/// The effect of the agent's tool, resolved from the scenario: what every story line, lint
/// message, report and text label calls it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The tool's name (`issue_refund`, `charge_card`).
    pub tool: String,
    /// The effect's noun, singular (`refund`, `charge`, or a free noun like `gift card`).
    pub noun: String,
    /// Its plural (`refunds`, `charges`, `gift cards`).
    pub plural: String,
    /// The provider operation that makes one (`POST /v1/refunds`).
    pub operation: String,
}

impl Effect {
    /// The incident's: `issue_refund`, a refund, `POST /v1/refunds`.
    pub fn refund() -> Self {
        Effect::new("issue_refund", None, None)
    }

    /// The effect of tool `tool` declaring `effect` (default `refund`) and `operation` (default
    /// the effect's own, [`KNOWN_EFFECTS`], or `POST /{plural}` for a free noun).
    pub fn new(tool: &str, effect: Option<&str>, operation: Option<&str>) -> Self {
        let noun = effect.unwrap_or("refund").trim().to_string();
        let plural = plural(&noun);
        let operation = match operation {
            Some(op) => op.to_string(),
            None => KNOWN_EFFECTS.iter().find(|(n, _)| *n == noun).map_or_else(
                || format!("POST /{}", plural.replace(' ', "_")),
                |(_, op)| op.to_string(),
            ),
        };
        Effect {
            tool: tool.to_string(),
            noun,
            plural,
            operation,
        }
    }

    /// The effect's verb forms: (past participle, gerund), e.g. (`charged`, `charging`), for
    /// the outputs' `refunded` and `refunding`. A free noun is `made` / `making`.
    pub fn verb_forms(&self) -> (String, String) {
        let (past, ing) = match self.noun.as_str() {
            "refund" => ("refunded", "refunding"),
            "charge" => ("charged", "charging"),
            "payout" => ("paid out", "paying out"),
            "transfer" => ("transferred", "transferring"),
            "order" => ("placed", "placing"),
            "message" => ("sent", "sending"),
            _ => ("made", "making"),
        };
        (past.to_string(), ing.to_string())
    }

    /// The prefix of the provider's object ids (`re_` for a Stripe refund, `pi_` for a
    /// PaymentIntent, `po_` for a payout, `tr_` for a transfer; `or_`, `msg_`, or `obj_` for
    /// others).
    pub fn id_prefix(&self) -> &'static str {
        match self.noun.as_str() {
            "refund" => "re_",
            "charge" => "pi_",
            "payout" => "po_",
            "transfer" => "tr_",
            "order" => "or_",
            "message" => "msg_",
            _ => "obj_",
        }
    }

    /// `text` in this effect's words: for a refund, `text` unchanged; otherwise every refund
    /// word an output uses is rewritten — the provider operation (`POST /v1/refunds`), the
    /// service (`refunds-service`, the `refunds_service` section, now `service`), metric and
    /// invariant names (their neutral aliases, [`METRIC_ALIASES`], [`INVARIANT_ALIASES`]), object
    /// ids (`re_00000001` → `pi_00000001`), `refund_id`, `refunded`/`refunding` (the effect's
    /// verb forms), and the noun in the singular and plural. The command name `refundsim` is
    /// kept. Applied where a scenario's text output is rendered: run and check summaries, stories,
    /// lint findings, the HTML report, Perfetto slices.
    pub fn say(&self, text: &str) -> String {
        if self.is_refund() {
            return text.to_string();
        }
        if text.contains('\n') {
            return text
                .split('\n')
                .map(|l| self.say_line(l))
                .collect::<Vec<_>>()
                .join("\n");
        }
        self.say_line(text)
    }

    /// One line of [`Effect::say`], its value column kept where a table put it (a summary row
    /// `  orders created        6` stays aligned with `  tickets               3`).
    fn say_line(&self, line: &str) -> String {
        let provider_words = !self.is_stripe_operation() && line.contains("tripe");
        if !line.contains("efund") && !provider_words {
            return line.to_string();
        }
        keep_column(line, self.translate(line))
    }

    fn translate(&self, text: &str) -> String {
        const KEEP: &str = "\u{1}";
        // File names are kept as written: a replay command must still name its file.
        let (protected, files) = protect_file_names(text);
        const TOOL: &str = "\u{4}";
        let mut t = protected.replace("refundsim", KEEP);
        // The tool's own name is kept as written (even one that says refund).
        if self.tool.contains("efund") {
            t = t.replace(self.tool.as_str(), TOOL);
        }
        t = drop_charge_of_ticket(&t);
        let (past, ing) = self.verb_forms();
        let snake = |s: &str| s.replace([' ', '-'], "_");
        let mut pairs: Vec<(String, String)> = vec![
            ("POST /v1/refunds".into(), self.operation.clone()),
            (
                "refunds-service".into(),
                format!("{}-service", self.plural.replace(' ', "-")),
            ),
            // The provider's settings by their `provider.` spelling.
            (
                "stripe.idempotency_key_retention".into(),
                "provider.idempotency_key_retention".into(),
            ),
            ("refunds_service".into(), "service".into()),
            ("issue_refund".into(), self.tool.clone()),
            // Fields named after refunds, by their other spelling (`--set` takes either).
            ("work_after_refund".into(), "work_after_effect".into()),
            ("refund_pending".into(), "effect_pending".into()),
            ("refund_failed".into(), "effect_failed".into()),
            ("manual_refund_via".into(), "manual_effect_via".into()),
        ];
        for (refund, neutral) in METRIC_ALIASES.iter().chain(INVARIANT_ALIASES.iter()) {
            pairs.push(((*refund).into(), (*neutral).into()));
        }
        pairs.extend([
            ("refund_id".into(), format!("{}_id", snake(&self.noun))),
            // Labels join the noun with a hyphen (`duplicate-gift-card tickets`).
            (
                "duplicate-refund".into(),
                format!("duplicate-{}", self.noun_hyphenated()),
            ),
            (
                "over-refund".into(),
                format!("over-{}", self.noun_hyphenated()),
            ),
            // The charge a refund is taken from is not what another effect is made on.
            (
                "the charge's refunds".into(),
                format!("the ticket's {}", self.plural),
            ),
            ("Refunded".into(), capitalize(&past)),
            ("refunded".into(), past),
            ("Refunding".into(), capitalize(&ing)),
            ("refunding".into(), ing),
            ("A refund".into(), capitalize(&self.a_noun())),
            ("a refund".into(), self.a_noun()),
            ("Refunds".into(), capitalize(&self.plural)),
            ("refunds".into(), self.plural.clone()),
            ("Refund".into(), self.noun_capitalized()),
            ("refund".into(), self.noun.clone()),
        ]);
        if !self.is_stripe_operation() {
            // Not a Stripe endpoint: the provider is named as such.
            pairs.extend([
                (
                    "the Stripe dashboard".into(),
                    "the provider's dashboard".into(),
                ),
                ("Stripe's".into(), "the provider's".into()),
                ("stripe: ".into(), "provider: ".into()),
                ("Stripe".into(), "the provider".into()),
                ("stripe ".into(), "provider ".into()),
            ]);
        }
        for (from, to) in &pairs {
            if !t.contains(from.as_str()) {
                continue;
            }
            t = if from.starts_with("a ") || from.starts_with("A ") {
                replace_at_word_start(&t, from, to)
            } else {
                t.replace(from.as_str(), to)
            };
        }
        if self.id_prefix() != "re_" {
            t = replace_ids(&t, self.id_prefix());
        }
        let mut t = t.replace(KEEP, "refundsim").replace(TOOL, &self.tool);
        for (i, f) in files.iter().enumerate().rev() {
            t = t.replace(&format!("\u{2}{i}\u{3}"), f);
        }
        t
    }

    /// Whether the operation is a Stripe API endpoint (`… /v1/…`); otherwise the outputs call
    /// the provider "the provider" rather than Stripe.
    pub fn is_stripe_operation(&self) -> bool {
        self.operation.contains(" /v1/")
    }

    /// Whether this is a refund (every output then reads exactly as it always has).
    pub fn is_refund(&self) -> bool {
        self.noun == "refund"
    }

    /// The noun with its first letter upper-case (`Charge`).
    pub fn noun_capitalized(&self) -> String {
        capitalize(&self.noun)
    }

    /// The noun with `-` for spaces, for labels such as `duplicate-charge tickets`.
    pub fn noun_hyphenated(&self) -> String {
        self.noun.replace(' ', "-")
    }

    /// `a`/`an` and the noun (`a charge`, `an order`).
    pub fn a_noun(&self) -> String {
        let an = self
            .noun
            .chars()
            .next()
            .is_some_and(|c| "aeiou".contains(c.to_ascii_lowercase()));
        format!("{} {}", if an { "an" } else { "a" }, self.noun)
    }
}

/// `text` with each `from` that starts a word replaced by `to`: the article pairs (`a refund`)
/// must not match inside a word (`extra refunds` is `extra orders`, not `extran orders`).
fn replace_at_word_start(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let in_word = rest[..i]
            .chars()
            .next_back()
            .or_else(|| out.chars().next_back())
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..i]);
        out.push_str(if in_word { from } else { to });
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether `noun` is a noun the outputs can use: 1 to [`MAX_NOUN_CHARS`] characters of
/// lower-case ASCII letters, with single spaces or hyphens between words.
pub fn valid_noun(noun: &str) -> bool {
    !noun.is_empty()
        && noun.chars().count() <= MAX_NOUN_CHARS
        && noun
            .split([' ', '-'])
            .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()))
}

/// The English plural of a lower-case noun: `-es` after s, x, z, ch, sh; `-ies` after a
/// consonant and y; `-s` otherwise. Only the last word changes (`gift card` → `gift cards`).
pub fn plural(noun: &str) -> String {
    let ends = |s: &str| noun.ends_with(s);
    if ends("s") || ends("x") || ends("z") || ends("ch") || ends("sh") {
        format!("{noun}es")
    } else if ends("y")
        && !noun
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| "aeiou".contains(c))
    {
        format!("{}ies", &noun[..noun.len() - 1])
    } else {
        format!("{noun}s")
    }
}

/// `said` (a translation of `line`) with its value column where `line` had it: for a row
/// `  LABEL  VALUE` (two leading spaces, a label, two or more spaces), the spaces after the
/// label are set so that the value starts at `line`'s column again (at least two).
fn keep_column(line: &str, said: String) -> String {
    fn column(l: &str) -> Option<(usize, usize)> {
        let body = l.strip_prefix("  ")?;
        if body.starts_with(' ') {
            return None;
        }
        let chars: Vec<char> = l.chars().collect();
        let mut i = 2;
        while i + 1 < chars.len() {
            if chars[i] == ' ' && chars[i + 1] == ' ' {
                let label_end = i;
                let mut j = i;
                while j < chars.len() && chars[j] == ' ' {
                    j += 1;
                }
                return (j < chars.len()).then_some((label_end, j));
            }
            i += 1;
        }
        None
    }
    let (Some((_, value_at)), Some((label_end, new_value_at))) = (column(line), column(&said))
    else {
        return said;
    };
    if new_value_at == value_at {
        return said;
    }
    let chars: Vec<char> = said.chars().collect();
    let label: String = chars[..label_end].iter().collect();
    let value: String = chars[new_value_at..].iter().collect();
    let pad = value_at.saturating_sub(label_end).max(2);
    format!("{label}{}{value}", " ".repeat(pad))
}

/// The story's `approved refund $A of a $B charge` as `approved refund $A`: outside a refund
/// the ticket's charge is not what the effect applies to.
fn drop_charge_of_ticket(text: &str) -> String {
    const HEAD: &str = "approved refund ";
    let Some(at) = text.find(HEAD) else {
        return text.to_string();
    };
    let rest = &text[at + HEAD.len()..];
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let line = &rest[..line_end];
    match (line.find(" of a "), line.ends_with(" charge")) {
        (Some(of), true) => format!(
            "{}{HEAD}{}{}",
            &text[..at],
            &line[..of],
            drop_charge_of_ticket(&rest[line_end..])
        ),
        _ => format!("{}{HEAD}{}", &text[..at], drop_charge_of_ticket(rest)),
    }
}

/// `text` with each file name that mentions a refund (a run of characters other than white
/// space and quotes, ending in a known extension) replaced by `\u{2}N\u{3}`, and the names.
fn protect_file_names(text: &str) -> (String, Vec<String>) {
    const EXTENSIONS: [&str; 6] = [".json", ".jsonl", ".html", ".csv", ".xml", ".md"];
    let stop = |c: char| c.is_whitespace() || "'\"`=,()[]{}".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut files = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest.find(|c: char| !stop(c)).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(stop).unwrap_or(rest.len());
        let token = &rest[..end];
        let is_file = token.contains("efund")
            && EXTENSIONS
                .iter()
                .any(|x| token.trim_end_matches([':', '.', ';']).ends_with(x));
        if is_file {
            out.push_str(&format!("\u{2}{}\u{3}", files.len()));
            files.push(token.to_string());
        } else {
            out.push_str(token);
        }
        rest = &rest[end..];
    }
    (out, files)
}

/// `re_` followed by digits, at a word start, with `prefix` instead.
fn replace_ids(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("re_") {
        let before_ok = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
        let digits = rest[i + 3..].starts_with(|c: char| c.is_ascii_digit());
        out.push_str(&rest[..i]);
        out.push_str(if before_ok && digits { prefix } else { "re_" });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_effects_take_their_operations() {
        let c = Effect::new("charge_card", Some("charge"), None);
        assert_eq!(
            (c.plural.as_str(), c.operation.as_str()),
            ("charges", "POST /v1/payment_intents")
        );
        assert_eq!(Effect::refund().operation, "POST /v1/refunds");
        assert!(Effect::refund().is_refund());
        assert!(!c.is_refund());
        let free = Effect::new("issue_gift_card", Some("gift card"), None);
        assert_eq!(
            (free.plural.as_str(), free.operation.as_str()),
            ("gift cards", "POST /gift_cards")
        );
        let own = Effect::new("place_order", Some("order"), Some("POST /v2/orders"));
        assert_eq!(own.operation, "POST /v2/orders");
        assert_eq!(own.a_noun(), "an order");
        assert_eq!(c.a_noun(), "a charge");
    }

    #[test]
    fn say_rewrites_every_refund_word_but_the_command() {
        let c = Effect::new("charge_card", Some("charge"), None);
        let text = "refundsim run x: stripe: POST /v1/refunds for call #1 → 200 created re_00000001; \
                    refunds-service: refund re_00000002 refunded twice; duplicate_refund_tickets 1; \
                    invariant at_most_one_refund_per_ticket; A refund, Refunds; --set refunds_service.pool_size=3; more_00000001";
        let said = c.say(text);
        assert_eq!(
            said,
            "refundsim run x: stripe: POST /v1/payment_intents for call #1 → 200 created pi_00000001; \
             charges-service: charge pi_00000002 charged twice; duplicate_effect_tickets 1; \
             invariant at_most_one_effect_per_ticket; A charge, Charges; --set service.pool_size=3; more_00000001"
        );
        assert!(!said.replace("refundsim", "").contains("efund"));
        assert_eq!(Effect::refund().say(text), text);
        let o = Effect::new("place_order", Some("order"), None);
        assert_eq!(o.say("a refund was refunded"), "an order was placed");
        assert_eq!(
            o.say("stripe: POST /v1/refunds → 200; checked the Stripe dashboard; Stripe's 200; stripe latency; stripe.faults.refund_pending"),
            "provider: POST /orders → 200; checked the provider's dashboard; the provider's 200; provider latency; stripe.faults.effect_pending"
        );
        assert_eq!(
            c.say("stripe: x"),
            "stripe: x",
            "a Stripe endpoint keeps Stripe"
        );
        assert_eq!(
            o.say("  refunds created     6\n  tickets             3"),
            "  orders created      6\n  tickets             3"
        );
        assert_eq!(
            o.say("  stripe latency    p50 1 ms"),
            "  provider latency  p50 1 ms"
        );
        assert_eq!(
            o.say("extra refunds 3; a refund; over-refund"),
            "extra orders 3; an order; over-order"
        );
        assert_eq!(o.say("A refund, data refund"), "An order, data order");
        let g = Effect::new("issue_gift_card", Some("gift card"), None);
        assert_eq!(
            g.say("duplicate-refund tickets; over-refund; look the charge's refunds up"),
            "duplicate-gift-card tickets; over-gift-card; look the ticket's gift cards up"
        );
        assert_eq!(
            o.say("refundsim run my_refunds.json --seed 1: a refund"),
            "refundsim run my_refunds.json --seed 1: an order"
        );
        assert_eq!(
            c.say("00:00:00.300  ticket opened (recorded): approved refund $25.00 of a $1000.00 charge\nnext"),
            "00:00:00.300  ticket opened (recorded): approved charge $25.00\nnext"
        );
        assert_eq!(
            canonical_metric("duplicate_effect_tickets"),
            "duplicate_refund_tickets"
        );
        assert_eq!(canonical_metric("tickets"), "tickets");
        assert_eq!(neutral_name("no_lost_refund"), Some("no_lost_effect"));
    }

    #[test]
    fn plurals_and_nouns() {
        for (n, p) in [
            ("refund", "refunds"),
            ("batch", "batches"),
            ("delivery", "deliveries"),
            ("payday", "paydays"),
            ("box", "boxes"),
        ] {
            assert_eq!(plural(n), p);
        }
        assert!(valid_noun("gift card"));
        assert!(valid_noun("top-up"));
        assert!(!valid_noun("Gift"));
        assert!(!valid_noun("two  spaces"));
        assert!(!valid_noun(""));
        assert!(!valid_noun(&"a".repeat(33)));
    }
}
