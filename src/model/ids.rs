//! The ids and keys the model writes: Stripe charge and refund ids, webhook event ids,
//! idempotency keys and business ids.
//!
//! Each is a prefix and decimal numbers written straight into a `String` of the right capacity
//! (digits by [`itoa`]), not through `format!`: a run builds several per ticket, and the
//! formatting machinery cost about as much as the rest of building them. The spellings are
//! those of the incident's systems (Stripe's `ch_`/`re_`/`evt_` prefixes, stripe-node's
//! `stripe-node-retry-` keys) and appear in traces, so they never change; the tests pin them.

/// Appends `n` in decimal to `s`.
fn push_decimal(s: &mut String, n: u64) {
    s.push_str(itoa::Buffer::new().format(n));
}

/// `prefix` followed by `parts` in decimal, separated by `sep`.
fn join(prefix: &str, parts: &[u64], sep: char) -> String {
    let mut s = String::with_capacity(prefix.len() + parts.len() * 21);
    s.push_str(prefix);
    for (i, &p) in parts.iter().enumerate() {
        if i > 0 {
            s.push(sep);
        }
        push_decimal(&mut s, p);
    }
    s
}

/// The Stripe charge id of ticket `ticket`: `ch_{ticket}`. Shared (`Rc<str>`, as a refund's
/// charge is) and written in place, in one allocation.
pub(crate) fn charge(ticket: u64) -> std::rc::Rc<str> {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(ticket);
    // "ch_" + at most 20 digits.
    let mut buf = [0u8; 3 + 20];
    buf[..3].copy_from_slice(b"ch_");
    let end = 3 + digits.len();
    buf[3..end].copy_from_slice(digits.as_bytes());
    std::rc::Rc::from(std::str::from_utf8(&buf[..end]).unwrap_or("ch_"))
}

/// The id of the fake Stripe's `n`-th refund: `re_` and `n` in at least eight digits,
/// zero-padded (`re_00000042`). Shared (`Rc<str>`): a refund's clones share its id, and it is
/// written in place, in one allocation.
pub(crate) fn refund(n: u64) -> std::rc::Rc<str> {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    let pad = 8usize.saturating_sub(digits.len());
    // "re_" + at most 8 zeros of padding + at most 20 digits.
    let mut buf = [b'0'; 3 + 8 + 20];
    buf[..3].copy_from_slice(b"re_");
    let end = 3 + pad + digits.len();
    buf[3 + pad..end].copy_from_slice(digits.as_bytes());
    std::rc::Rc::from(std::str::from_utf8(&buf[..end]).unwrap_or("re_"))
}

/// The key a client that replaces the service's key sets on logical call `call` of ticket
/// `ticket` (`stripe_client.key: replace_per_call`): `client-{ticket}-{call}`.
pub(crate) fn client_key(ticket: u64, call: u64) -> String {
    join("client-", &[ticket, call], '-')
}

/// The webhook event id of ticket `ticket`'s triggering event: `evt_{ticket}`.
pub(crate) fn event(ticket: u64) -> String {
    join("evt_", &[ticket], '_')
}

/// The event id of a second trigger for `ticket` (`deliveries.duplicate_from: other_trigger`):
/// `evt_{ticket}_b`, not the first event's.
pub(crate) fn other_trigger_event(ticket: u64) -> String {
    let mut id = event(ticket);
    id.push_str("_b");
    id
}

/// The idempotency key stripe-node generates for a logical call: `stripe-node-retry-{ticket}-{call}`,
/// or with a new key per network retry `stripe-node-retry-{ticket}-{call}-{try_no}`.
pub(crate) fn sdk_key(ticket: u64, call: u64, try_no: Option<u32>) -> String {
    match try_no {
        None => join("stripe-node-retry-", &[ticket, call], '-'),
        Some(t) => join("stripe-node-retry-", &[ticket, call, u64::from(t)], '-'),
    }
}

/// The refunds service's business id of a refund: per attempt `ref_{ticket}_{call}`, per ticket
/// `ref_{ticket}`.
pub(crate) fn business_id(ticket: u64, call: Option<u64>) -> String {
    match call {
        Some(c) => join("ref_", &[ticket, c], '_'),
        None => join("ref_", &[ticket], '_'),
    }
}

/// The refunds service's idempotency key per attempt: `refund_{ticket}_{call}`.
pub(crate) fn service_key(ticket: u64, call: u64) -> String {
    join("refund_", &[ticket, call], '_')
}

/// The refunds service's idempotency key per ticket: `refund_{ticket}_{nonce}`.
pub(crate) fn service_ticket_key(ticket: u64, nonce: &str) -> String {
    let mut s = join("refund_", &[ticket], '_');
    s.reserve(1 + nonce.len());
    s.push('_');
    s.push_str(nonce);
    s
}

/// A ticket's key nonce: `n` as 16 lowercase hexadecimal digits (`{n:016x}`).
pub(crate) fn nonce(n: u64) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    (0..16)
        .rev()
        .map(|i| char::from(HEX[((n >> (4 * i)) & 0xf) as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spellings, against `format!` of the same pattern, for small, large and extreme ids.
    #[test]
    fn ids_are_spelled_as_format_would() {
        for n in [0, 1, 9, 10, 42, 49_410, 99_999_999, 100_000_000, u64::MAX] {
            let m = n / 3;
            assert_eq!(&*charge(n), format!("ch_{n}"));
            assert_eq!(&*refund(n), format!("re_{n:08}"));
            assert_eq!(event(n), format!("evt_{n}"));
            assert_eq!(sdk_key(n, m, None), format!("stripe-node-retry-{n}-{m}"));
            assert_eq!(
                sdk_key(n, m, Some(7)),
                format!("stripe-node-retry-{n}-{m}-7")
            );
            assert_eq!(business_id(n, Some(m)), format!("ref_{n}_{m}"));
            assert_eq!(business_id(n, None), format!("ref_{n}"));
            assert_eq!(service_key(n, m), format!("refund_{n}_{m}"));
            assert_eq!(nonce(n), format!("{n:016x}"));
            assert_eq!(
                service_ticket_key(n, &nonce(m)),
                format!("refund_{n}_{m:016x}")
            );
        }
    }

    #[test]
    fn pinned_examples() {
        assert_eq!(&*charge(49_410), "ch_49410");
        assert_eq!(&*refund(42), "re_00000042");
        assert_eq!(&*refund(123_456_789), "re_123456789");
        assert_eq!(sdk_key(49_410, 3, Some(1)), "stripe-node-retry-49410-3-1");
        assert_eq!(nonce(0xdead_beef), "00000000deadbeef");
    }
}
