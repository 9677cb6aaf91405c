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
