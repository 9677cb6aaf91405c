//! `kind: hedge`: a hedge (Polly v8's `HedgingStrategyOptions`: `MaxHedgedAttempts` 1, `Delay`
//! 2 s, `ShouldHandle` every exception; gRPC's `hedgingPolicy`: `maxAttempts` ≤ 5 counting the
//! first, `hedgingDelay`, `nonFatalStatusCodes`; Envoy's `hedge_on_per_try_timeout`, where the
//! per-try timeout is the hedging delay). 1 hedged try sent 2 s after the first if that one has
//! not answered, every failure non-fatal (it sends the next try at once). A hedge has no backoff:
//! its wait is `hedging_delay` ([`HEDGING_DELAY`]), which the backoff fields below stand for
//! where the stack's spans read them (a constant 2 s).
//!
//! Every failure non-fatal is Polly's generic `ShouldHandle` read broadly. .NET's HTTP hedging
//! (`HttpHedgingStrategyOptions`) handles only 408, 429, 500 and above and connection
//! exceptions, so there a loser's quick 409 is reported while the first try still executes; a
//! scenario writes that as `retry_on: ["5xx", "429", "reset", "connect-failure", "timeout"]`.

use std::time::Duration;

use super::retry::ALL_RETRY_ON;
use super::KindDefaults;

/// Polly v8's `HedgingStrategyOptions.Delay`: 2 s.
pub(crate) const HEDGING_DELAY: Duration = Duration::from_secs(2);

/// gRPC's cap on `hedgingPolicy.maxAttempts` (5, the first try included): at most 4 hedged
/// tries beside the first.
pub(crate) const MAX_HEDGED_TRIES: u32 = 4;

/// See the module docs.
pub(super) const DEFAULTS: KindDefaults = KindDefaults {
    name: "hedge",
    above_model: false,
    network_proxy: true,
    tool_filter: false,
    circuit_breaker: false,
    tool_client: false,
    hedges: true,
    max_retries: 1,
    retry_on: &ALL_RETRY_ON,
    base: HEDGING_DELAY,
    max_delay: |base| base,
};
