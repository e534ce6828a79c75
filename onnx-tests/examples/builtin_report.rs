//! Runs every case that Burn can import alone with Burn's built-in lowering and with
//! burn-dml-ops-onnx's overrides, on `Device::default()` (or Flex with `--flex`), and prints
//! which give the recorded answer: the record behind `benches/README.md`'s table of Burn's
//! built-ins. Exits non-zero only where an override is wrong.

use std::panic::{AssertUnwindSafe, catch_unwind};

use burn::tensor::{Device, TensorData};
use burn_dml_ops_onnx_tests::{BUILTIN, CASES, Inputs, Recorded, compare};

fn main() {
    let device = if std::env::args().any(|arg| arg == "--flex") {
        Device::flex()
    } else {
        Device::default()
    };
    println!("device: {device:?}");
    let (mut wrong, mut overrides_wrong) = (0, 0);
    for case in CASES {
        let recorded = Recorded::load(case.name);
        let Some(inputs) = recorded.inputs(&device) else {
            println!("{:<48} left out (64-bit values)", case.name);
            continue;
        };
        let ours = outcome(&inputs, &recorded, case.run);
        let builtin = BUILTIN
            .iter()
            .find(|builtin| builtin.name == case.name)
            .map_or("cannot import".to_string(), |builtin| {
                outcome(&inputs, &recorded, builtin.run)
            });
        if builtin != "right" {
            wrong += 1;
        }
        if ours != "right" {
            overrides_wrong += 1;
        }
        println!(
            "{:<48} built-ins: {builtin:<40} overrides: {ours}",
            case.name
        );
    }
    println!(
        "{wrong} of {} cases wrong or failing with Burn's built-ins, {overrides_wrong} with the \
         overrides",
        CASES.len()
    );
    if overrides_wrong > 0 {
        std::process::exit(1);
    }
}

/// "right", "wrong: ..." or "panics: ..." for one run.
fn outcome(inputs: &Inputs, recorded: &Recorded, run: fn(&Inputs) -> Vec<TensorData>) -> String {
    match catch_unwind(AssertUnwindSafe(|| run(inputs))) {
        Ok(outputs) => match compare(&outputs, &recorded.outputs) {
            Ok(()) => "right".to_string(),
            Err(_) => "wrong".to_string(),
        },
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let first = message.lines().next().unwrap_or_default();
            format!("panics: {}", first.chars().take(60).collect::<String>())
        }
    }
}
