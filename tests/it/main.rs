//! The integration tests as one crate: one binary to compile and link instead of one per file
//! (the first `cargo test` builds much faster). Each module is a former `tests/NAME.rs`; run one
//! with `cargo test --test it NAME::`, e.g. `cargo test --test it prop_safety::holds`.

mod common;

mod bounded_inputs;
mod circuit_breaker;
mod cli;
mod determinism;
mod docs_match;
mod explore_cli;
mod explore_minimal;
mod fuzz_import;
mod fuzz_inputs;
mod gate_check;
mod gate_defaults;
mod gate_diff;
mod gate_lint;
mod hedge;
mod html_report;
mod import_counterfactual;
mod import_inputs;
mod import_readers;
mod import_replay;
mod import_spec;
mod import_standard;
mod incident;
mod invariants;
mod latency_script;
mod lint_fixes;
mod mcp_client;
mod new;
mod otlp_export;
mod perfetto;
mod pinned_outcomes;
mod probe;
mod prop_breakers;
mod prop_deliveries;
mod prop_exhaustive;
mod prop_format_equivalence;
mod prop_hedges;
mod prop_holes;
mod prop_mcp_client;
mod prop_providers;
mod prop_round_trip;
mod prop_safety;
mod prop_time_limits;
mod queueing;
mod recipes;
mod recording_wins;
mod retry_layers;
mod run_budget;
mod streaming;
mod summary_causes;
mod sweep;
mod trace_digest;
mod worlds;
